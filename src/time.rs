//! Timestamps are stored and sent as RFC 3339 UTC text with a fixed six-digit
//! fraction, so SQLite compares them correctly as plain strings.

use jiff::Timestamp;

pub fn format(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub fn now() -> String {
    format(Timestamp::now())
}

/// Parses any RFC 3339 timestamp (with offset) into the stored form.
pub fn parse(text: &str) -> Option<String> {
    text.parse::<Timestamp>().ok().map(format)
}

pub fn days_from_now(days: i64) -> String {
    let span = jiff::SignedDuration::from_hours(days * 24);
    format(Timestamp::now() + span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_sorts_as_text() {
        let a = parse("2026-01-02T03:04:05Z").unwrap();
        let b = parse("2026-01-02T03:04:05.5+00:00").unwrap();
        assert_eq!(a, "2026-01-02T03:04:05.000000Z");
        assert!(a < b);
        assert_eq!(parse("2026-01-02T05:04:05+02:00").unwrap(), a);
        assert!(parse("yesterday").is_none());
    }
}
