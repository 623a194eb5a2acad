use super::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn at(secs: u64, micros: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(secs, micros * 1000)
}

#[test]
fn timestamps_are_rfc3339_utc_with_microseconds() {
    let cases = [
        (1_795_613_246, 827_480, "2026-11-25T13:27:26.827480Z"),
        (951_782_400, 1, "2000-02-29T00:00:00.000001Z"),
        (0, 0, "1970-01-01T00:00:00.000000Z"),
        (4_107_628_799, 999_999, "2100-03-01T23:59:59.999999Z"),
    ];
    for (secs, micros, want) in cases {
        let mut s = String::new();
        timestamp(&mut s, at(secs, micros));
        assert_eq!(s, want);
    }
}

/// A sink tracing-subscriber writes to.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// tracing-subscriber's timer, stopped at the time the direct format is given.
struct Stopped;

impl tracing_subscriber::fmt::time::FormatTime for Stopped {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        w.write_str("2026-11-25T13:27:26.827480Z")
    }
}

/// The line tracing-subscriber's `fmt` layer writes for the same decision.
fn through_tracing(format: Format, level: tracing::Level, d: &Decision) -> String {
    let out = Captured::default();
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_timer(Stopped)
        .with_writer(out.clone());
    match format {
        Format::Text => {
            tracing::subscriber::with_default(builder.finish(), || via_tracing(level, d))
        }
        Format::Json => {
            tracing::subscriber::with_default(builder.json().finish(), || via_tracing(level, d))
        }
    }
    let bytes = out.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_direct_line_is_the_one_tracing_writes() {
    let rules = [
        RuleId::new("hard-anti-affinity"),
        RuleId::new("topology-spread"),
    ];
    let decisions = [
        Decision {
            uid: "143c8016-4b7d-4d9b-9b60-2ce5aac74125",
            namespace: "demo",
            name: "web",
            operation: "CREATE",
            endpoint: Endpoint::Validate,
            rules: &rules,
            verdict: "denied",
            allowed: false,
            micros: 243,
        },
        Decision {
            uid: "",
            namespace: "",
            name: "",
            operation: "UPDATE",
            endpoint: Endpoint::Mutate,
            rules: &[],
            verdict: "allowed",
            allowed: true,
            micros: 0,
        },
        // What a request may carry in its names is escaped as tracing escapes it.
        Decision {
            uid: "a\"b",
            namespace: "ns\\x",
            name: "tab\there é",
            operation: "CREATE",
            endpoint: Endpoint::Mutate,
            rules: &rules[..1],
            verdict: "patched",
            allowed: true,
            micros: u64::MAX,
        },
    ];
    let mut compared = 0;
    for d in &decisions {
        for format in [Format::Text, Format::Json] {
            for level in [tracing::Level::INFO, tracing::Level::DEBUG] {
                let mut direct = String::new();
                format_line(&mut direct, format, at(1_795_613_246, 827_480), level, d);
                assert_eq!(
                    direct,
                    through_tracing(format, level, d),
                    "{format:?} {level}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 12);
}
