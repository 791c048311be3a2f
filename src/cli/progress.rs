//! The progress line of long commands (`backup`, `restore`, `export`,
//! `import`): drawn on stderr only when stderr is a terminal, redrawn in
//! place at most a few times a second; scripts and logs see nothing of it.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the line is redrawn at most.
const REDRAW: Duration = Duration::from_millis(100);

pub struct ProgressLine {
    out: Option<Mutex<Drawn>>,
}

struct Drawn {
    to: Box<dyn Write + Send>,
    last: Option<Instant>,
    shown: bool,
}

impl ProgressLine {
    /// A line on stderr when it is a terminal; otherwise one that draws
    /// nothing.
    pub fn on_stderr() -> ProgressLine {
        if std::io::stderr().is_terminal() {
            ProgressLine::to(Box::new(std::io::stderr()))
        } else {
            ProgressLine { out: None }
        }
    }

    fn to(to: Box<dyn Write + Send>) -> ProgressLine {
        ProgressLine {
            out: Some(Mutex::new(Drawn {
                to,
                last: None,
                shown: false,
            })),
        }
    }

    /// Records of a collection: "importing medication_takes 12,000/50,000
    /// (24%)"; without a total, the count so far.
    pub fn records(&self, verb: &str, what: &str, done: u64, total: u64) {
        let last = total > 0 && done == total;
        self.draw(last, || match percent(done, total) {
            Some(p) => format!("{verb} {what} {}/{} ({p}%)", grouped(done), grouped(total)),
            None => format!("{verb} {what} {}", grouped(done)),
        });
    }

    /// Bytes of a copy: "copying 4.0 MiB of 120.0 MiB (3%)".
    pub fn bytes(&self, verb: &str, done: u64, total: u64) {
        self.draw(done == total, || {
            format!(
                "{verb} {} of {} ({}%)",
                mebibytes(done),
                mebibytes(total),
                percent(done, total).unwrap_or(100)
            )
        });
    }

    /// A step without a count: "encrypting ...".
    pub fn step(&self, text: &str) {
        self.draw(true, || format!("{text} ..."));
    }

    fn draw(&self, force: bool, text: impl FnOnce() -> String) {
        let Some(out) = &self.out else { return };
        let mut drawn = out.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if !force && drawn.last.is_some_and(|at| now.duration_since(at) < REDRAW) {
            return;
        }
        drawn.last = Some(now);
        drawn.shown = true;
        // Back to the start of the line, the new text, the rest cleared.
        let _ = write!(drawn.to, "\r{}\x1b[K", text());
        let _ = drawn.to.flush();
    }

    /// Ends the line so the command's own output starts on a fresh one.
    pub fn finish(&self) {
        let Some(out) = &self.out else { return };
        let mut drawn = out.lock().unwrap_or_else(|e| e.into_inner());
        if drawn.shown {
            let _ = write!(drawn.to, "\r\x1b[K");
            let _ = drawn.to.flush();
            drawn.shown = false;
        }
    }
}

fn percent(done: u64, total: u64) -> Option<u64> {
    (total > 0).then(|| done.min(total) * 100 / total)
}

/// 12345678 as "12,345,678".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_line_is_redrawn_in_place_and_cleared_at_the_end() {
        let seen = Shared::default();
        let line = ProgressLine::to(Box::new(seen.clone()));
        line.records("importing", "medication_takes", 1, 50_000);
        // Within the redraw interval only the last record forces a redraw.
        line.records("importing", "medication_takes", 2, 50_000);
        line.records("importing", "medication_takes", 50_000, 50_000);
        line.bytes("copying", 4 * 1024 * 1024, 8 * 1024 * 1024);
        line.finish();
        let text = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "\rimporting medication_takes 1/50,000 (0%)\x1b[K\
             \rimporting medication_takes 50,000/50,000 (100%)\x1b[K\
             \r\x1b[K"
        );
        assert_eq!(grouped(12_000), "12,000");
        assert_eq!(grouped(999), "999");
        assert_eq!(mebibytes(4 * 1024 * 1024), "4.0 MiB");
    }

    #[test]
    fn nothing_is_drawn_without_a_terminal() {
        let line = ProgressLine { out: None };
        line.records("reading", "people", 1, 2);
        line.step("encrypting");
        line.finish();
    }
}
