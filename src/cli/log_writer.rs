//! The server's log lines are written by a thread of their own. A request
//! that logs never waits on stderr (a slow journald, a full pipe), and the
//! lines of a burst leave in a few large writes instead of one each.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting to be written; beyond this a line is dropped (and the
/// drop reported in the log) rather than making a request wait.
const QUEUE_LINES: usize = 8192;
/// How long the end of the process waits for the last lines to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

enum Message {
    Line(Vec<u8>),
    /// Answered once everything sent before it is written.
    Flush(SyncSender<()>),
}

/// Hands each formatted line to the log thread.
#[derive(Clone)]
pub struct LogWriter {
    sender: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

/// Writes out what is queued when dropped, at the end of the process.
pub struct LogGuard {
    sender: SyncSender<Message>,
}

/// Starts the log thread, writing to stderr.
pub fn start() -> io::Result<(LogWriter, LogGuard)> {
    start_to(io::stderr(), QUEUE_LINES)
}

fn start_to(
    out: impl Write + Send + 'static,
    queue_lines: usize,
) -> io::Result<(LogWriter, LogGuard)> {
    let (sender, receiver) = mpsc::sync_channel(queue_lines);
    let dropped = Arc::new(AtomicU64::new(0));
    let counted = dropped.clone();
    std::thread::Builder::new()
        .name("pillbox-log".into())
        .spawn(move || write_lines(out, &receiver, &counted))?;
    Ok((
        LogWriter {
            sender: sender.clone(),
            dropped,
        },
        LogGuard { sender },
    ))
}

/// Writes lines as they come, flushing whenever the queue is empty.
fn write_lines(out: impl Write, receiver: &Receiver<Message>, dropped: &AtomicU64) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    while let Ok(first) = receiver.recv() {
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Line(line) => {
                    let _ = out.write_all(&line);
                }
                Message::Flush(done) => {
                    flush(&mut out, dropped);
                    let _ = done.send(());
                }
            }
            next = receiver.try_recv().ok();
        }
        flush(&mut out, dropped);
    }
}

/// Writes out what is buffered, after a line saying how many were dropped
/// since the last flush, if any.
fn flush(out: &mut impl Write, dropped: &AtomicU64) {
    let lost = dropped.swap(0, Ordering::Relaxed);
    if lost > 0 {
        let _ = writeln!(
            out,
            "pillbox: {lost} log lines were dropped: the log output could not keep up"
        );
    }
    let _ = out.flush();
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.sender.try_send(Message::Line(buf.to_vec())) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The log thread is gone: write in place rather than lose it.
            Err(TrySendError::Disconnected(_)) => return io::stderr().write(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        self.clone()
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let (done, written) = mpsc::sync_channel(1);
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = written.recv_timeout(FLUSH_WAIT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What the log thread wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl Write for Written {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Written {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn every_line_queued_before_the_guard_drops_is_written_in_order() {
        let written = Written::default();
        let (mut writer, guard) = start_to(written.clone(), QUEUE_LINES).unwrap();
        let lines: Vec<String> = (0..500).map(|n| format!("line {n}\n")).collect();
        for line in &lines {
            writer.write_all(line.as_bytes()).unwrap();
        }
        drop(guard);
        assert_eq!(written.text(), lines.concat());
    }

    #[test]
    fn lines_beyond_a_full_queue_are_dropped_and_the_drop_is_logged() {
        // A writer that blocks until released keeps the log thread busy.
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        struct Gated(Arc<Mutex<()>>, Written);
        impl Write for Gated {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let _open = self.0.lock().unwrap();
                self.1.write(buf)
            }
            fn flush(&mut self) -> io::Result<()> {
                let _open = self.0.lock().unwrap();
                Ok(())
            }
        }
        let written = Written::default();
        let (mut writer, guard) = start_to(Gated(gate.clone(), written.clone()), 4).unwrap();
        for n in 0..50 {
            writer.write_all(format!("line {n}\n").as_bytes()).unwrap();
        }
        drop(held);
        drop(guard);
        let text = written.text();
        assert!(text.starts_with("line 0\n"), "{text}");
        assert!(text.contains("log lines were dropped"), "{text}");
        assert!(text.lines().count() < 50, "{text}");
    }
}
