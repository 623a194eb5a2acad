//! The decision log line, written directly in the format tracing-subscriber's `fmt` layer gives
//! it (text without colors, or JSON), into the same batched writer.
//!
//! Through tracing, one line cost about 15,000 instructions (its field visitors, `Debug` padding
//! and timestamp formatting), as much as reading the whole review; this writes the same bytes
//! in about a tenth of that. RUST_LOG still decides whether a line is written, by target and
//! level (a directive on field names no longer selects these lines), and colored text (a
//! terminal) still goes through tracing.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::admission::Endpoint;
use crate::k8s::json_text;
use crate::rules::RuleId;

/// The logger's format, as `--log-format` and the terminal chose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

type Write = Box<dyn Fn(&[u8]) + Send + Sync>;

struct Sink {
    format: Format,
    write: Write,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Sends decision lines to `write` in `format`; without it they go through tracing.
pub fn install(format: Format, write: Write) {
    let _ = SINK.set(Sink { format, write });
}

/// One admission decision, as the server logs it.
pub struct Decision<'a> {
    pub uid: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// CREATE, UPDATE, ...: a fixed name, written quoted as its `Debug` would be.
    pub operation: &'static str,
    pub endpoint: Endpoint,
    pub rules: &'a [RuleId],
    /// allowed, denied, ...: a fixed name, written quoted as its `Debug` would be.
    pub verdict: &'static str,
    pub allowed: bool,
    pub micros: u64,
}

/// Where tracing would log the line: the server module, as the `tracing` macros there do.
pub const TARGET: &str = "placement_guard::server";

/// Logs one decision at `level` (INFO, or DEBUG for a plain allow) if RUST_LOG lets it through:
/// directly when a sink is installed, through tracing otherwise.
pub fn log(level: tracing::Level, d: &Decision) {
    let on = if level == tracing::Level::DEBUG {
        tracing::enabled!(target: TARGET, tracing::Level::DEBUG)
    } else {
        tracing::enabled!(target: TARGET, tracing::Level::INFO)
    };
    if !on {
        return;
    }
    match SINK.get() {
        Some(sink) => {
            let mut line = String::with_capacity(320);
            format_line(&mut line, sink.format, SystemTime::now(), level, d);
            (sink.write)(line.as_bytes());
        }
        None => via_tracing(level, d),
    }
}

/// The decision as a tracing event: colored output, tests, and the reference for the direct
/// format.
fn via_tracing(level: tracing::Level, d: &Decision) {
    macro_rules! decision {
        ($level:ident) => {
            tracing::event!(
                target: TARGET,
                tracing::Level::$level,
                uid = %d.uid,
                namespace = %d.namespace,
                name = %d.name,
                operation = d.operation,
                endpoint = ?d.endpoint,
                rules = %Rules(d.rules),
                verdict = d.verdict,
                allowed = d.allowed,
                micros = d.micros,
                "admission decision"
            )
        };
    }
    if level == tracing::Level::DEBUG {
        decision!(DEBUG);
    } else {
        decision!(INFO);
    }
}

/// Rule ids joined by commas.
struct Rules<'a>(&'a [RuleId]);

impl std::fmt::Display for Rules<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_rules(f, self.0)
    }
}

/// Rule ids joined by commas, into any writer (the direct lines write into their `String`).
fn write_rules<W: std::fmt::Write + ?Sized>(w: &mut W, rules: &[RuleId]) -> std::fmt::Result {
    for (i, r) in rules.iter().enumerate() {
        if i > 0 {
            w.write_str(",")?;
        }
        w.write_str(r.as_str())?;
    }
    Ok(())
}

fn format_line(
    out: &mut String,
    format: Format,
    now: SystemTime,
    level: tracing::Level,
    d: &Decision,
) {
    let endpoint = match d.endpoint {
        Endpoint::Validate => "Validate",
        Endpoint::Mutate => "Mutate",
    };
    match format {
        Format::Text => {
            // `{timestamp} {level:>5} {target}: {message} {fields}`; `%` fields as Display,
            // `&str` fields and `?` fields as Debug.
            // Pushed piece by piece: `write!` with its arguments cost as much again.
            timestamp(out, now);
            out.push(' ');
            out.push_str(padded(level));
            out.push(' ');
            out.push_str(TARGET);
            out.push_str(": admission decision uid=");
            out.push_str(d.uid);
            out.push_str(" namespace=");
            out.push_str(d.namespace);
            out.push_str(" name=");
            out.push_str(d.name);
            // `operation` and `verdict` are fixed identifiers: their `Debug` is the quoted name.
            out.push_str(" operation=\"");
            out.push_str(d.operation);
            out.push_str("\" endpoint=");
            out.push_str(endpoint);
            out.push_str(" rules=");
            let _ = write_rules(out, d.rules);
            out.push_str(" verdict=\"");
            out.push_str(d.verdict);
            out.push_str("\" allowed=");
            out.push_str(if d.allowed { "true" } else { "false" });
            out.push_str(" micros=");
            out.push_str(itoa::Buffer::new().format(d.micros));
            out.push('\n');
        }
        Format::Json => {
            out.push_str("{\"timestamp\":\"");
            timestamp(out, now);
            let _ = write!(
                out,
                "\",\"level\":\"{}\",\"fields\":{{\"message\":\"admission decision\",\"uid\":",
                level.as_str()
            );
            json_text::string(out, d.uid);
            out.push_str(",\"namespace\":");
            json_text::string(out, d.namespace);
            out.push_str(",\"name\":");
            json_text::string(out, d.name);
            let _ = write!(
                out,
                ",\"operation\":\"{}\",\"endpoint\":\"{endpoint}\",\"rules\":\"",
                d.operation
            );
            let _ = write_rules(out, d.rules);
            let _ = writeln!(
                out,
                "\",\"verdict\":\"{}\",\"allowed\":{},\"micros\":{}}},\"target\":\"{TARGET}\"}}",
                d.verdict, d.allowed, d.micros
            );
        }
    }
}

/// The level right-aligned in five columns (`{:>5}`).
fn padded(level: tracing::Level) -> &'static str {
    match level {
        tracing::Level::TRACE => "TRACE",
        tracing::Level::DEBUG => "DEBUG",
        tracing::Level::INFO => " INFO",
        tracing::Level::WARN => " WARN",
        tracing::Level::ERROR => "ERROR",
    }
}

/// RFC 3339 in UTC with microseconds, as tracing-subscriber's `SystemTime` timer writes it.
/// The date and time to the second are formatted once a second per thread (through `fmt` they
/// cost a decision line two fifths of its instructions); the microseconds every time.
fn timestamp(out: &mut String, now: SystemTime) {
    thread_local! {
        static SECOND: std::cell::RefCell<(u64, String)> =
            const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    SECOND.with_borrow_mut(|(at, text)| {
        if *at != secs {
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (y, m, d) = civil_from_days(days as i64);
            text.clear();
            let _ = write!(
                text,
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                rem / 3600,
                rem / 60 % 60,
                rem % 60,
            );
            *at = secs;
        }
        out.push_str(text);
    });
    let micros = since.subsec_micros();
    let mut digits = *b".000000Z";
    let mut n = micros;
    for d in digits[1..7].iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.push_str(std::str::from_utf8(&digits).unwrap_or(".000000Z"));
}

/// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day count from
/// 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests;
