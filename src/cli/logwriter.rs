//! The log writer: admission workers append formatted lines to a shared buffer and a writer
//! thread writes it out every few milliseconds, or as soon as [`SOON`] bytes are waiting. A
//! channel with a thread woken per line (as tracing-appender's) costs a context switch per
//! logged decision, about as much as the review; here a busy second of decisions wakes the
//! writer a few hundred times. Nothing is dropped: a worker that finds the buffer full waits
//! until it has been written.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long the writer thread gathers lines after the first before writing them.
const INTERVAL: Duration = Duration::from_millis(20);
/// Past this much the writer is woken before the interval is over, so that the two buffers stay
/// in the workers' cache: a whole interval of denials at full load (some 350 KB) did not, and
/// appending a line stalled on the cache misses of its stores (about half of what a decision
/// line cost the server).
const SOON: usize = 64 << 10;
/// Past this much unwritten, loggers wait for the writer.
const FULL: usize = 1 << 20;

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    buf: Mutex<Buffer>,
    /// The writer waits on it for a first line or a close; loggers on `drained` when full.
    wake: Condvar,
    drained: Condvar,
}

/// The loggers' end (`MakeWriter`), cheap to clone.
#[derive(Clone)]
pub struct BatchWriter(Arc<Shared>);

/// Writes what is left and stops the writer thread when dropped.
pub struct Guard {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A writer in front of `out`, and the guard that flushes it at the end.
pub fn batch<W: Write + Send + 'static>(out: W) -> (BatchWriter, Guard) {
    batch_every(out, INTERVAL)
}

fn batch_every<W: Write + Send + 'static>(mut out: W, interval: Duration) -> (BatchWriter, Guard) {
    let shared = Arc::new(Shared::default());
    let s = shared.clone();
    let thread = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || {
            // The loggers fill one buffer while the other is written: a buffer handed back
            // keeps its capacity, so lines are not copied again as it grows, and its pages are
            // not faulted in afresh, every interval.
            let mut spare = Vec::new();
            loop {
                // Idle until a first line, then gather for a moment (or until SOON bytes) and
                // write all at once.
                let closed = {
                    let Ok(mut b) = s.buf.lock() else { return };
                    while b.bytes.is_empty() && !b.closed {
                        b = match s.wake.wait(b) {
                            Ok(b) => b,
                            Err(_) => return,
                        };
                    }
                    b = match s
                        .wake
                        .wait_timeout_while(b, interval, |b| b.bytes.len() < SOON && !b.closed)
                    {
                        Ok((b, _)) => b,
                        Err(_) => return,
                    };
                    std::mem::swap(&mut b.bytes, &mut spare);
                    b.closed
                };
                s.drained.notify_all();
                // A log that cannot be written is not worth failing a request for.
                let _ = out.write_all(&spare);
                let _ = out.flush();
                spare.clear();
                if closed {
                    return;
                }
            }
        })
        .ok();
    (BatchWriter(shared.clone()), Guard { shared, thread })
}

impl BatchWriter {
    /// Appends a whole line (or several).
    pub fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let mut b = self
            .0
            .buf
            .lock()
            .map_err(|_| std::io::Error::other("the log writer failed"))?;
        while b.bytes.len() >= FULL && !b.closed {
            b = self
                .0
                .drained
                .wait(b)
                .map_err(|_| std::io::Error::other("the log writer failed"))?;
        }
        let before = b.bytes.len();
        b.bytes.extend_from_slice(line);
        let wake = before == 0 || (before < SOON && b.bytes.len() >= SOON);
        drop(b);
        if wake {
            self.0.wake.notify_one();
        }
        Ok(())
    }
}

impl Write for BatchWriter {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.append(line)?;
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchWriter {
    type Writer = BatchWriter;
    fn make_writer(&'a self) -> BatchWriter {
        self.clone()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(mut b) = self.shared.buf.lock() {
            b.closed = true;
        }
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test can read while the writer owns it.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Lines from many threads all arrive whole, each thread's in its order, more than the
    /// buffer holds included, and what is left is written when the guard goes.
    #[test]
    fn every_line_arrives_whole_and_in_order() {
        let sink = Sink::default();
        let (w, guard) = batch(sink.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut w = w.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        w.write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let mut next = [0; 4];
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let (t, i): (usize, usize) = (parts[1].parse().unwrap(), parts[3].parse().unwrap());
            assert_eq!(i, next[t], "{line}");
            next[t] += 1;
        }
        assert_eq!(next, [20_000; 4]);
    }

    /// A batch of SOON bytes is written without waiting for the interval (here an hour), and
    /// what is left below it when the guard goes.
    #[test]
    fn a_full_batch_is_written_before_the_interval_is_over() {
        let sink = Sink::default();
        let (mut w, guard) = batch_every(sink.clone(), Duration::from_secs(3600));
        let line = [b'x'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        for i in 0..SOON / line.len() + 1 {
            w.write_all(&line).unwrap();
            if i == 0 {
                // The writer is waiting out its interval when the batch fills, as under load.
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while sink.0.lock().unwrap().len() < SOON && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let written = sink.0.lock().unwrap().len();
        assert!(
            written >= SOON,
            "{written} bytes written before the interval"
        );
        w.write_all(b"last\n").unwrap();
        drop(guard);
        let text = sink.0.lock().unwrap().clone();
        assert_eq!(text.len(), (SOON / line.len() + 1) * line.len() + 5);
        assert!(text.ends_with(b"last\n"));
    }
}
