//! The response AdmissionReview, written straight from the verdict: messages and warnings are
//! formatted into the output as they are escaped, with no string built for them on the way (a
//! denial's message, causes and warnings cost about as much again as reading the request when
//! built as strings and serialized through serde).
//!
//! The layout is kube-core's `AdmissionResponse` (`uid`, `allowed`, `status`, `patch`,
//! `patchType`, `warnings`), with `patch` in base64 as the API defines it (Go's `[]byte`).

use std::fmt::{self, Write as _};

use base64::Engine;

use super::API_VERSION;
use crate::rules::{self, Verdict};

/// The whole response body.
pub(super) fn encode(uid: &str, verdict: Option<&Verdict>) -> Result<Vec<u8>, serde_json::Error> {
    // A denial or a patch with its warnings fits without growing (an allow takes ~150 bytes).
    let mut out = Vec::with_capacity(2048);
    out.extend_from_slice(b"{\"apiVersion\":\"");
    out.extend_from_slice(API_VERSION.as_bytes());
    out.extend_from_slice(b"\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    string(&mut out, uid);
    let denied = verdict.is_some_and(|v| !v.allowed());
    out.extend_from_slice(if denied {
        b",\"allowed\":false,\"status\":"
    } else {
        b",\"allowed\":true,\"status\":"
    });
    match verdict {
        Some(v) if denied => status(&mut out, v),
        _ => out.extend_from_slice(b"{}"),
    }
    if let Some(v) = verdict {
        if !v.patches.is_empty() {
            let ops = patch_ops(&v.patches);
            // Base64 needs no escaping.
            out.extend_from_slice(b",\"patch\":\"");
            let at = out.len();
            out.resize(at + ops.len().div_ceil(3) * 4, 0);
            let n = base64::engine::general_purpose::STANDARD
                .encode_slice(&ops, &mut out[at..])
                .map_err(serde::ser::Error::custom)?;
            out.truncate(at + n);
            out.extend_from_slice(b"\",\"patchType\":\"JSONPatch\"");
        }
        if v.has_warnings() {
            out.extend_from_slice(b",\"warnings\":[");
            let mut first = true;
            v.each_warning(|w| {
                if !first {
                    out.push(b',');
                }
                first = false;
                quoted(&mut out, |e| e.write_fmt(w));
            });
            out.push(b']');
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// A denial's `metav1.Status`: every error in the message, one `details.causes` entry each.
fn status(out: &mut Vec<u8>, v: &Verdict) {
    out.extend_from_slice(b"{\"status\":\"Failure\",\"code\":403,\"message\":");
    quoted(out, |e| v.write_denial_message(e).map(|_| ()));
    out.extend_from_slice(b",\"reason\":\"Forbidden\",\"details\":{\"causes\":[");
    for (i, f) in v.denials().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"reason\":\"");
        out.extend_from_slice(f.error.kind.cause().as_bytes());
        out.extend_from_slice(b"\",\"message\":");
        quoted(out, |e| f.error.write_body(e));
        out.extend_from_slice(b",\"field\":");
        quoted(out, |e| write!(e, "{}", f.error.path));
        out.push(b'}');
    }
    out.extend_from_slice(b"]}}");
}

/// Every patch operation of a verdict, in order, as the JSON array json-patch would write:
/// `{"op":"add","path":...,"value":...}` each, the values already JSON.
fn patch_ops(patches: &[rules::Patch]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    out.push(b'[');
    for (i, op) in patches.iter().flat_map(|p| &p.ops).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"op\":\"add\",\"path\":");
        string(&mut out, op.path.json_pointer().as_str());
        out.extend_from_slice(b",\"value\":");
        out.extend_from_slice(op.value.get().as_bytes());
        out.push(b'}');
    }
    out.push(b']');
    out
}

/// A JSON string of what `write` formats. Formatting into a `Vec` cannot fail.
fn quoted(out: &mut Vec<u8>, write: impl FnOnce(&mut Escaped) -> fmt::Result) {
    out.push(b'"');
    let _ = write(&mut Escaped(out));
    out.push(b'"');
}

/// A JSON string.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    escape(out, s);
    out.push(b'"');
}

/// Writes what is formatted into it as the inside of a JSON string.
struct Escaped<'a>(&'a mut Vec<u8>);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape(self.0, s);
        Ok(())
    }
}

/// The inside of a JSON string, escaped as serde_json escapes it; runs that need no escape are
/// found sixteen bytes at a time and copied whole.
fn escape(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    let mut at = 0;
    while let Some(stop) = crate::k8s::ondemand::string_stop(b, at) {
        out.extend_from_slice(&b[at..stop]);
        let c = b[stop];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 0xf)],
            ]),
        }
        at = stop + 1;
    }
    out.extend_from_slice(&b[at..]);
}

#[cfg(test)]
mod tests;
