//! The server's log lines are written by a thread of their own. A request
//! that logs never waits on stderr (a slow journald, a full pipe), and the
//! lines of a burst leave in a few large writes instead of one each.
//!
//! Lines are appended to one shared buffer, and the log thread is woken
//! only when it sleeps on an empty one: lines that come while it writes
//! are taken together by its next write. So a busy server does not
//! allocate per line (which, through a channel, cost about 6% of a point
//! read's runtime time), and a line reaches the log as soon as the thread
//! can write it.
//!
//! Only while more than [`BUSY_LINES_PER_SECOND`] lines come does the
//! thread pause for [`GATHER`] after each write: the lines of a busy
//! second then leave in a hundred writes instead of one write and one
//! wake of the thread each (together about a tenth of a point read's
//! time). The pace is judged both over the last second and from the
//! lines of each write against the time since the one before, so that a
//! server busy again after a quiet spell gathers from its first lines,
//! not only once two thousand of them have each woken the thread. A line
//! at any lesser pace, such as a person's or a test's requests one after
//! another, is written at once.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

/// Bytes of lines waiting to be written; a line that would pass it is
/// dropped (and the drop reported in the log) rather than making a request
/// wait.
const QUEUE_BYTES: usize = 1024 * 1024;
/// A buffer this large is kept for the next lines; a larger one, left by a
/// burst, is freed.
const KEPT_BUFFER: usize = 64 * 1024;
/// Above this pace the log thread gathers lines between writes.
const BUSY_LINES_PER_SECOND: u64 = 2000;
/// The log thread's pause after a write while busy.
const GATHER: Duration = Duration::from_millis(10);

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Held while a batch is taken and written, so batches leave in order.
    out: Mutex<io::BufWriter<Box<dyn Write + Send>>>,
    limit: usize,
}

#[derive(Default)]
struct Pending {
    lines: Vec<u8>,
    /// Lines in `lines`.
    count: u64,
    /// Lines dropped since the last write.
    dropped: u64,
    /// The log thread waits for `wake`: the next line must wake it.
    asleep: bool,
    /// The guard has written everything out: the thread ends, and later
    /// lines are written in place.
    closed: bool,
}

/// Appends each formatted line for the log thread.
#[derive(Clone)]
pub struct LogWriter {
    shared: Arc<Shared>,
}

/// Writes out what is queued when dropped, at the end of the process.
pub struct LogGuard {
    shared: Arc<Shared>,
}

/// Starts the log thread, writing to stderr.
pub fn start() -> io::Result<(LogWriter, LogGuard)> {
    start_to(io::stderr(), QUEUE_BYTES)
}

fn start_to(
    out: impl Write + Send + 'static,
    queue_bytes: usize,
) -> io::Result<(LogWriter, LogGuard)> {
    let shared = Arc::new(Shared {
        pending: Mutex::new(Pending::default()),
        wake: Condvar::new(),
        out: Mutex::new(io::BufWriter::with_capacity(
            KEPT_BUFFER,
            Box::new(out) as Box<dyn Write + Send>,
        )),
        limit: queue_bytes,
    });
    let running = shared.clone();
    std::thread::Builder::new()
        .name("pillbox-log".into())
        .spawn(move || run(&running))?;
    Ok((
        LogWriter {
            shared: shared.clone(),
        },
        LogGuard { shared },
    ))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sleeps until there are lines, and writes them.
fn run(shared: &Shared) {
    let mut pace = Pace::new(Instant::now());
    loop {
        {
            let mut pending = lock(&shared.pending);
            while pending.lines.is_empty() && pending.dropped == 0 && !pending.closed {
                pending.asleep = true;
                pending = shared.wake.wait(pending).unwrap_or_else(|e| e.into_inner());
            }
            if pending.closed {
                return;
            }
        }
        let written = shared.write_out();
        if pace.busy(written, Instant::now()) {
            // Not marked asleep: the lines pushed meanwhile wake nobody.
            std::thread::sleep(GATHER);
        }
    }
}

/// Lines written in the current second and the one before, which tell
/// whether the log is busy.
struct Pace {
    started: Instant,
    current: u64,
    previous: u64,
    /// When the last lines were written.
    last: Instant,
}

impl Pace {
    fn new(now: Instant) -> Pace {
        Pace {
            started: now,
            current: 0,
            previous: 0,
            last: now,
        }
    }

    /// Counts `lines` written at `now`; true while the pace is above
    /// [`BUSY_LINES_PER_SECOND`] in this second or the last, or these
    /// lines came faster than that since the last write.
    fn busy(&mut self, lines: u64, now: Instant) -> bool {
        let since_last = now.saturating_duration_since(std::mem::replace(&mut self.last, now));
        let fast = u128::from(lines) * 1_000_000
            > u128::from(BUSY_LINES_PER_SECOND) * since_last.as_micros();
        let elapsed = now.saturating_duration_since(self.started);
        if elapsed >= Duration::from_secs(2) {
            self.previous = 0;
            self.current = 0;
            self.started = now;
        } else if elapsed >= Duration::from_secs(1) {
            self.previous = std::mem::take(&mut self.current);
            self.started += Duration::from_secs(1);
        }
        self.current += lines;
        fast || self.current.max(self.previous) > BUSY_LINES_PER_SECOND
    }
}

impl Shared {
    fn push(&self, line: &[u8]) {
        let mut pending = lock(&self.pending);
        if pending.closed {
            drop(pending);
            let _ = io::stderr().write_all(line);
            return;
        }
        if pending.lines.len() + line.len() > self.limit {
            pending.dropped += 1;
            return;
        }
        pending.lines.extend_from_slice(line);
        pending.count += 1;
        if std::mem::take(&mut pending.asleep) {
            self.wake.notify_one();
        }
    }

    /// Takes what is pending and writes it out, then a line saying how
    /// many were dropped (they came after the last one kept), if any.
    /// Returns how many lines it took.
    fn write_out(&self) -> u64 {
        let mut out = lock(&self.out);
        let (mut lines, count, dropped) = {
            let mut pending = lock(&self.pending);
            (
                std::mem::take(&mut pending.lines),
                std::mem::take(&mut pending.count),
                std::mem::take(&mut pending.dropped),
            )
        };
        let _ = out.write_all(&lines);
        if dropped > 0 {
            let _ = writeln!(
                out,
                "pillbox: {dropped} log lines were dropped: the log output could not keep up"
            );
        }
        let _ = out.flush();
        drop(out);
        if lines.capacity() <= KEPT_BUFFER {
            lines.clear();
            let mut pending = lock(&self.pending);
            if pending.lines.is_empty() {
                pending.lines = lines;
            }
        }
        count
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.shared.push(buf);
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
        // Closed first: every line pushed before is written out below, and
        // every line after goes straight to stderr.
        lock(&self.shared.pending).closed = true;
        self.shared.wake.notify_one();
        self.shared.write_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

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
    fn the_thread_gathers_lines_only_while_they_come_fast() {
        let start = Instant::now();
        let at = |us: u64| start + Duration::from_micros(us);
        let mut pace = Pace::new(start);
        // A person's pace, and a test's requests one after another.
        for n in 1..200 {
            assert!(!pace.busy(1, at(n * 4_000)));
        }
        // A server busy again: its first line 50 µs after the last.
        assert!(pace.busy(1, at(796_050)));
        // Gathered lines: 25 in 10 ms.
        assert!(pace.busy(25, at(806_100)));
        // A few lines of a person's page at once, after a quiet spell.
        assert!(!pace.busy(4, at(900_000)));
        // Past the pace within the second: still busy in the next one, by
        // the last one's count, though its own lines come slowly.
        assert!(pace.busy(1800, at(950_000)));
        assert!(pace.busy(10, at(1_100_000)));
        // Quiet again once a whole second has been quiet.
        assert!(!pace.busy(10, at(2_100_000)));
        assert!(!pace.busy(1, at(5_000_000)));
    }

    #[test]
    fn every_line_queued_before_the_guard_drops_is_written_in_order() {
        let written = Written::default();
        let (mut writer, guard) = start_to(written.clone(), QUEUE_BYTES).unwrap();
        let lines: Vec<String> = (0..500).map(|n| format!("line {n}\n")).collect();
        for line in &lines {
            writer.write_all(line.as_bytes()).unwrap();
        }
        drop(guard);
        assert_eq!(written.text(), lines.concat());
    }

    #[test]
    fn a_line_is_written_while_the_server_runs_not_only_at_the_end() {
        let written = Written::default();
        let (mut writer, _guard) = start_to(written.clone(), QUEUE_BYTES).unwrap();
        for n in 0..3 {
            let line = format!("line {n}\n");
            writer.write_all(line.as_bytes()).unwrap();
            // The sleeping thread is woken: the line appears with the
            // guard still alive (the deadline only stops a broken wake
            // from hanging the test).
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !written.text().ends_with(&line) {
                assert!(std::time::Instant::now() < deadline, "{line} never written");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
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
        let (mut writer, guard) = start_to(Gated(gate.clone(), written.clone()), 32).unwrap();
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
