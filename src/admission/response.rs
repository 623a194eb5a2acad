//! The response AdmissionReview, written straight from the verdict: messages and warnings are
//! formatted into the output as they are escaped, with no string built for them on the way (a
//! denial's message, causes and warnings cost about as much again as reading the request when
//! built as strings and serialized through serde).
//!
//! The layout is kube-core's `AdmissionResponse` (`uid`, `allowed`, `status`, `patch`,
//! `patchType`, `warnings`), with `patch` in base64 as the API defines it (Go's `[]byte`).

use std::fmt::{self, Write as _};

use super::API_VERSION;
use crate::k8s::json_text::{escape, string};
use crate::rules::{self, Verdict};

/// The whole response body.
pub(super) fn encode(uid: &str, verdict: Option<&Verdict>) -> Vec<u8> {
    // A denial or a patch with its warnings fits without growing (an allow takes ~150 bytes).
    let mut out = String::with_capacity(2048);
    out.push_str("{\"apiVersion\":\"");
    out.push_str(API_VERSION);
    out.push_str("\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    string(&mut out, uid);
    let denied = verdict.is_some_and(|v| !v.allowed());
    out.push_str(if denied {
        ",\"allowed\":false,\"status\":"
    } else {
        ",\"allowed\":true,\"status\":"
    });
    match verdict {
        Some(v) if denied => status(&mut out, v),
        _ => out.push_str("{}"),
    }
    if let Some(v) = verdict {
        if !v.patches.is_empty() {
            let ops = patch_ops(&v.patches);
            // Base64 needs no escaping. base64-simd picks its SIMD at run time: a sixth of
            // the base64 crate's instructions on a patch.
            out.push_str(",\"patch\":\"");
            base64_simd::STANDARD.encode_append(&ops, &mut out);
            out.push_str("\",\"patchType\":\"JSONPatch\"");
        }
        if v.has_warnings() {
            out.push_str(",\"warnings\":[");
            let mut first = true;
            v.each_warning(|w| {
                if !first {
                    out.push(',');
                }
                first = false;
                quoted(&mut out, |e| e.write_fmt(w));
            });
            out.push(']');
        }
    }
    out.push_str("}}");
    out.into_bytes()
}

/// A denial's `metav1.Status`: every error in the message (as
/// [`Verdict::write_denial_message`] words it), one `details.causes` entry each.
fn status(out: &mut String, v: &Verdict) {
    // Each error's path and body are escaped once, as the message and its cause both carry
    // them: escaping goes character by character, so escaped parts join to the escaped whole.
    let mut esc = String::with_capacity(512);
    let mut parts = Vec::with_capacity(1);
    for f in v.denials() {
        let start = esc.len();
        let _ = write!(Escaped(&mut esc), "{}", f.error.path);
        let mid = esc.len();
        let _ = f.error.write_body(&mut Escaped(&mut esc));
        parts.push((start..mid, mid..esc.len(), f.error.kind.cause()));
    }
    out.push_str("{\"status\":\"Failure\",\"code\":403,\"message\":\"");
    let several = parts.len() > 1;
    if several {
        out.push('[');
    }
    for (i, (path, body, _)) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&esc[path.clone()]);
        out.push_str(": ");
        out.push_str(&esc[body.clone()]);
    }
    if several {
        out.push(']');
    }
    out.push_str("\",\"reason\":\"Forbidden\",\"details\":{\"causes\":[");
    for (i, (path, body, cause)) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"reason\":\"");
        out.push_str(cause);
        out.push_str("\",\"message\":\"");
        out.push_str(&esc[body]);
        out.push_str("\",\"field\":\"");
        out.push_str(&esc[path]);
        out.push_str("\"}");
    }
    out.push_str("]}}");
}

/// Every patch operation of a verdict, in order, as the JSON array json-patch would write:
/// `{"op":"add","path":...,"value":...}` each, the values already JSON.
fn patch_ops(patches: &[rules::Patch]) -> String {
    let mut out = String::with_capacity(1024);
    out.push('[');
    for (i, op) in patches.iter().flat_map(|p| &p.ops).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"op\":\"add\",\"path\":");
        string(&mut out, op.path.json_pointer().as_str());
        out.push_str(",\"value\":");
        out.push_str(&op.value);
        out.push('}');
    }
    out.push(']');
    out
}

/// A JSON string of what `write` formats. Formatting into a `String` cannot fail.
fn quoted(out: &mut String, write: impl FnOnce(&mut Escaped) -> fmt::Result) {
    out.push('"');
    let _ = write(&mut Escaped(out));
    out.push('"');
}

/// Writes what is formatted into it as the inside of a JSON string.
struct Escaped<'a>(&'a mut String);

impl fmt::Write for Escaped<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        escape(self.0, s);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
