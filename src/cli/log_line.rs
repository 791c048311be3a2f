//! The server's plain-text log line, the same text as tracing's default
//! format without colour, written for a fraction of its cost. The default
//! paints every field name with an empty style and formats the whole
//! date for each line; with a line per request that was about a tenth of
//! a point read's instructions. Here the date and time to the second are
//! formatted once a second, and fields go straight into the line.
//!
//! The server opens no spans, so a line has no span context to print.

use std::cell::RefCell;
use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `2026-11-27T18:25:21.603271Z  INFO pillbox::http: request id=1 path=/`
pub struct TextLine;

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        write_now(&mut writer)?;
        write!(writer, " {:>5} {}: ", meta.level(), meta.target())?;
        let mut fields = Fields {
            writer: &mut writer,
            first: true,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writer.write_char('\n')
    }
}

thread_local! {
    /// The second last written by this thread, and its text up to the dot.
    static SECOND: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
}

/// The time now in UTC, to the microsecond.
fn write_now(writer: &mut Writer<'_>) -> fmt::Result {
    let now = jiff::Timestamp::now();
    let second = now.as_second();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != second {
            text.clear();
            write!(text, "{}", now.strftime("%Y-%m-%dT%H:%M:%S"))?;
            *cached = second;
        }
        write!(writer, "{text}.{:06}Z", now.subsec_microsecond())
    })
}

/// The event's fields as tracing's default format writes them without
/// colour: the message as it is (control characters that drive a terminal
/// escaped), every other field as `name=value`, strings quoted.
struct Fields<'a, 'w> {
    writer: &'a mut Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl Fields<'_, '_> {
    fn pad(&mut self) -> fmt::Result {
        if std::mem::take(&mut self.first) {
            Ok(())
        } else {
            self.writer.write_char(' ')
        }
    }

    fn write(&mut self, field: &Field, value: &dyn fmt::Debug) -> fmt::Result {
        let name = field.name();
        if name.starts_with("log.") {
            return Ok(());
        }
        self.pad()?;
        match name {
            "message" => {
                let mut escaping = Escaping(self.writer);
                write!(escaping, "{value:?}")
            }
            name => {
                let name = name.strip_prefix("r#").unwrap_or(name);
                write!(self.writer, "{name}={value:?}")
            }
        }
    }
}

impl Visit for Fields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_ok() {
            self.result = if field.name() == "message" {
                self.write(field, &format_args!("{value}"))
            } else {
                self.write(field, &value)
            };
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.result.is_err() {
            return;
        }
        let mut sources = Vec::new();
        let mut next = value.source();
        while let Some(source) = next {
            sources.push(source.to_string());
            next = source.source();
        }
        self.result = if sources.is_empty() {
            self.write(field, &format_args!("{value}"))
        } else {
            let name = field.name();
            let sources = sources.join(", ");
            self.write(field, &format_args!("{value} {name}.sources=[{sources}]"))
        };
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_ok() {
            self.result = self.write(field, value);
        }
    }
}

/// Writes through, escaping the characters that start terminal control
/// sequences, as tracing's default format does for messages.
struct Escaping<'a, 'w>(&'a mut Writer<'w>);

impl Write for Escaping<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(at) = rest.find(|c: char| {
            matches!(
                c,
                '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' | '\u{80}'..='\u{9f}'
            )
        }) {
            self.0.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().expect("found above");
            match c {
                '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", c as u32)?,
                c => write!(self.0, "\\x{:02x}", c as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    #[derive(Debug)]
    struct Failed(Option<Box<Failed>>, &'static str);

    impl fmt::Display for Failed {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.1)
        }
    }

    impl std::error::Error for Failed {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.0.as_deref().map(|e| e as _)
        }
    }

    fn events() {
        let id = "01a21e41-3cc1-720e-994a-4a08bd0de3b8".to_string();
        tracing::info!(request_id = %id, method = %"GET", path = %"/api/v1", status = 200u16, ms = 3u64, "request");
        tracing::warn!(
            step = "password",
            account_id = 7i64,
            "sign-in \x1b[31mfailed\u{9b}"
        );
        tracing::error!("cannot write: {}", "disk full");
        let nested = Failed(Some(Box::new(Failed(None, "root cause"))), "outer");
        tracing::error!(
            error = &nested as &dyn std::error::Error,
            r#type = true,
            "failed"
        );
        tracing::error!(error = &Failed(None, "alone") as &dyn std::error::Error);
        tracing::debug!(seconds = 1.5f64, negative = -3i64, "numbers");
    }

    fn lines(text: &str) -> Vec<String> {
        text.lines()
            .map(|line| {
                let (time, rest) = line.split_once(' ').expect("a time first");
                assert_eq!(time.len(), "2026-11-27T18:25:21.603271Z".len(), "{line}");
                assert!(time.ends_with('Z') && time.as_bytes()[19] == b'.', "{line}");
                rest.to_string()
            })
            .collect()
    }

    #[test]
    fn lines_read_as_tracings_default_format_without_colour() {
        let ours = Buffer::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(ours.clone())
            .event_format(TextLine)
            .finish();
        tracing::subscriber::with_default(subscriber, events);
        let default = Buffer::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(default.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, events);
        let ours = String::from_utf8(ours.0.lock().unwrap().clone()).unwrap();
        let default = String::from_utf8(default.0.lock().unwrap().clone()).unwrap();
        assert_eq!(lines(&ours), lines(&default), "{ours}\n{default}");
        assert_eq!(lines(&ours).len(), 6);
    }
}
