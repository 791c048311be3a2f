//! A moment in time as the contract sends it and the database keeps it:
//! RFC 3339 UTC text with a fixed six-digit fraction, so stored values sort
//! correctly as plain strings. Any RFC 3339 offset is accepted on input and
//! normalised to UTC.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(String);

/// Appends the last `width` decimal digits of `value` (not negative),
/// zero-padded: what the general formatter writes, at a fraction of its
/// cost on the paths that write hundreds of dates per response.
pub fn push_digits(text: &mut String, value: i64, width: u32) {
    let mut digits = [b'0'; 20];
    let width = (width as usize).min(digits.len());
    let at = digits.len() - width;
    put_digits(&mut digits[at..], value.unsigned_abs());
    text.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// Fills `slot` with the last `slot.len()` decimal digits of `value`,
/// zero-padded (a constant divisor, so no division instruction).
fn put_digits(slot: &mut [u8], mut value: u64) {
    for digit in slot.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// A civil date as `YYYY-MM-DD`, what jiff's `Display` writes, written
/// digit by digit for years 0 to 9999 (a day's list writes two per dose).
pub fn date_text(date: jiff::civil::Date) -> String {
    if !(0..=9999).contains(&date.year()) {
        return date.to_string();
    }
    let mut text = *b"0000-00-00";
    put_digits(&mut text[0..4], date.year().unsigned_abs().into());
    put_digits(&mut text[5..7], date.month().unsigned_abs().into());
    put_digits(&mut text[8..10], date.day().unsigned_abs().into());
    String::from_utf8(text.to_vec()).expect("ASCII digits")
}

/// `#[serde(serialize_with)]` for a civil date, as [`date_text`] writes it.
pub fn serialize_date<S: Serializer>(date: &jiff::civil::Date, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&date_text(*date))
}

impl Timestamp {
    pub fn now() -> Timestamp {
        Timestamp::from_jiff(jiff::Timestamp::now())
    }

    pub fn from_jiff(ts: jiff::Timestamp) -> Timestamp {
        let at = jiff::tz::Offset::UTC.to_datetime(ts);
        if !(0..=9999).contains(&at.year()) {
            return Timestamp(ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
        }
        // Written digit by digit: a list of expected doses writes hundreds
        // of these, and the general formatter costs several times as much.
        let mut text = *b"0000-00-00T00:00:00.000000Z";
        put_digits(&mut text[0..4], at.year().unsigned_abs().into());
        put_digits(&mut text[5..7], at.month().unsigned_abs().into());
        put_digits(&mut text[8..10], at.day().unsigned_abs().into());
        put_digits(&mut text[11..13], at.hour().unsigned_abs().into());
        put_digits(&mut text[14..16], at.minute().unsigned_abs().into());
        put_digits(&mut text[17..19], at.second().unsigned_abs().into());
        put_digits(
            &mut text[20..26],
            (at.subsec_nanosecond() / 1000).unsigned_abs().into(),
        );
        Timestamp(String::from_utf8(text.to_vec()).expect("ASCII digits"))
    }

    /// Parses any RFC 3339 timestamp (with offset) into the stored form.
    pub fn parse(text: &str) -> Option<Timestamp> {
        text.parse::<jiff::Timestamp>()
            .ok()
            .map(Timestamp::from_jiff)
    }

    /// Text read back from a column this code wrote with the stored form.
    pub fn from_stored(text: String) -> Timestamp {
        Timestamp(text)
    }

    pub fn to_jiff(&self) -> jiff::Timestamp {
        // Every constructor keeps the stored form, so the text parses.
        self.0.parse().unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    /// This moment moved by a signed duration.
    pub fn plus(&self, span: jiff::SignedDuration) -> Timestamp {
        Timestamp::from_jiff(
            self.to_jiff()
                .saturating_add(span)
                .unwrap_or(self.to_jiff()),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Its stored text, for SQL bounds and text comparisons (the stored form
/// sorts as time does). The other way needs `parse`.
impl std::ops::Deref for Timestamp {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Timestamp {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Timestamp> for String {
    fn eq(&self, other: &Timestamp) -> bool {
        *self == other.0
    }
}

impl PartialOrd<Timestamp> for String {
    fn partial_cmp(&self, other: &Timestamp) -> Option<std::cmp::Ordering> {
        Some(self.as_str().cmp(other.as_str()))
    }
}

impl From<Timestamp> for String {
    fn from(ts: Timestamp) -> String {
        ts.0
    }
}

impl PartialEq<str> for Timestamp {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(de)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("must be an RFC 3339 timestamp"))
    }
}

// One named component (`#/components/schemas/Timestamp`), referenced by
// every timestamp field.
impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_as_jiff_writes_them() {
        for (y, m, d) in [
            (2027, 3, 1),
            (1, 1, 1),
            (999, 12, 31),
            (9999, 12, 31),
            (-5, 6, 7),
        ] {
            let date = jiff::civil::date(y, m, d);
            assert_eq!(date_text(date), date.to_string());
            let json = serde_json::to_value(DateField(date)).unwrap();
            assert_eq!(json, serde_json::json!(date.to_string()));
        }
    }

    #[derive(Serialize)]
    struct DateField(#[serde(serialize_with = "serialize_date")] jiff::civil::Date);

    #[test]
    fn the_stored_form_is_written_as_the_general_formatter_writes_it() {
        let general = |ts: jiff::Timestamp| ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let mut moments = vec![jiff::Timestamp::MIN, jiff::Timestamp::MAX];
        for (seconds, nanos) in [
            (0, 0),
            (1, 999_999_999),
            (1_795_000_000, 123_456_789),
            (1_795_000_000, 1_000),
            (1_795_000_000, 999),
            (-1, -500_000_000),
            (-62_135_596_800, 0),
            (-62_135_596_801, 0),
            (253_402_207_199, 999_999_999),
        ] {
            moments.push(jiff::Timestamp::new(seconds, nanos).unwrap());
        }
        for ts in moments {
            assert_eq!(Timestamp::from_jiff(ts).0, general(ts), "{ts:?}");
        }
    }

    #[test]
    fn stored_form_sorts_as_text() {
        let a = Timestamp::parse("2026-01-02T03:04:05Z").unwrap();
        let b = Timestamp::parse("2026-01-02T03:04:05.5+00:00").unwrap();
        assert_eq!(a.as_str(), "2026-01-02T03:04:05.000000Z");
        assert!(a < b);
        assert_eq!(Timestamp::parse("2026-01-02T05:04:05+02:00").unwrap(), a);
        assert!(Timestamp::parse("yesterday").is_none());
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        let err = serde_json::from_str::<Timestamp>("\"2026-13-01T00:00:00Z\"").unwrap_err();
        assert!(err.to_string().contains("RFC 3339"));
        let ok: Timestamp = serde_json::from_str("\"2026-01-01T01:00:00+01:00\"").unwrap();
        assert_eq!(ok.as_str(), "2026-01-01T00:00:00.000000Z");
    }
}
