//! Exact decimals for stock, doses and taper amounts: JSON strings on the
//! wire, TEXT in SQLite, `rust_decimal` in between. A JSON number where a
//! decimal belongs is refused, so no float ever touches a quantity.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rust_decimal::Decimal;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Largest number of fraction digits accepted (a microgram of a gram).
pub const MAX_SCALE: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dec(pub Decimal);

impl Dec {
    pub const ZERO: Dec = Dec(Decimal::ZERO);

    pub fn is_positive(self) -> bool {
        self.0 > Decimal::ZERO
    }

    pub fn is_negative(self) -> bool {
        self.0 < Decimal::ZERO
    }

    pub fn checked_add(self, other: Dec) -> Option<Dec> {
        self.0.checked_add(other.0).map(Dec)
    }

    pub fn checked_sub(self, other: Dec) -> Option<Dec> {
        self.0.checked_sub(other.0).map(Dec)
    }
}

/// Why a text is not a decimal we accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDecError(&'static str);

impl fmt::Display for ParseDecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl FromStr for Dec {
    type Err = ParseDecError;

    /// Plain decimal notation only: `12`, `-0.5`, `2.25`; no exponent, no
    /// spaces, no `+`, at most six fraction digits.
    fn from_str(s: &str) -> Result<Dec, ParseDecError> {
        const FORM: ParseDecError = ParseDecError("must be a decimal string such as \"2.5\"");
        let digits = s.strip_prefix('-').unwrap_or(s);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let well_formed = !whole.is_empty()
            && whole.bytes().all(|b| b.is_ascii_digit())
            && fraction.bytes().all(|b| b.is_ascii_digit())
            && !(digits.contains('.') && fraction.is_empty());
        if !well_formed {
            return Err(FORM);
        }
        if fraction.len() > MAX_SCALE as usize {
            return Err(ParseDecError(
                "must have at most 6 digits after the decimal point",
            ));
        }
        let value = Decimal::from_str_exact(s).map_err(|_| ParseDecError("is too large"))?;
        if value.is_zero() && s.starts_with('-') {
            return Err(FORM);
        }
        Ok(Dec(value.normalize()))
    }
}

impl fmt::Display for Dec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // normalize: "10.50" and "10.5" are the same quantity and print alike.
        write!(f, "{}", self.0.normalize())
    }
}

impl Serialize for Dec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dec, D::Error> {
        struct DecVisitor;

        impl Visitor<'_> for DecVisitor {
            type Value = Dec;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a decimal string such as \"2.5\"")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dec, E> {
                v.parse().map_err(E::custom)
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Dec, E> {
                Err(E::custom(
                    "must be a decimal string such as \"2.5\", not a JSON number",
                ))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Dec, E> {
                Err(E::custom(
                    "must be a decimal string such as \"2\", not a JSON number",
                ))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Dec, E> {
                Err(E::custom(
                    "must be a decimal string such as \"2\", not a JSON number",
                ))
            }
        }

        deserializer.deserialize_any(DecVisitor)
    }
}

impl ToSql for Dec {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.to_string()))
    }
}

impl FromSql for Dec {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Dec> {
        let text = value.as_str()?;
        text.parse()
            .map_err(|e: ParseDecError| FromSqlError::Other(e.to_string().into()))
    }
}

/// The JSON schema of a decimal string.
pub fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "pattern": "^-?[0-9]+(\\.[0-9]{1,6})?$",
        "description": "An exact decimal written as a string, e.g. \"2.5\"",
    })
}

/// A decimal string of zero or more.
pub fn non_negative_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "pattern": "^[0-9]+(\\.[0-9]{1,6})?$",
        "description": "An exact decimal of zero or more written as a string, e.g. \"2.5\"",
    })
}

/// A decimal string greater than zero: a non-zero digit in the whole part,
/// or else among the (at most six) fraction digits.
pub fn positive_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "pattern": "^([0-9]*[1-9][0-9]*(\\.[0-9]{1,6})?|0+\\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))$",
        "description": "An exact decimal greater than zero written as a string, e.g. \"0.5\"",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        s.parse().unwrap()
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(
            d("10.5").checked_sub(d("0.25")).unwrap().to_string(),
            "10.25"
        );
        assert_eq!(d("0.1").checked_add(d("0.2")).unwrap().to_string(), "0.3");
        assert_eq!(d("10.50").to_string(), "10.5");
        assert_eq!(d("3.000").to_string(), "3");
    }

    #[test]
    fn only_plain_decimal_strings_parse() {
        for bad in [
            "",
            "1e3",
            "+1",
            " 1",
            "1.",
            ".5",
            "1.2.3",
            "abc",
            "1.1234567",
            "0x10",
        ] {
            assert!(bad.parse::<Dec>().is_err(), "{bad:?} parsed");
        }
        assert!(serde_json::from_str::<Dec>("2.5").is_err());
        assert!(serde_json::from_str::<Dec>("2").is_err());
        assert_eq!(serde_json::from_str::<Dec>("\"2.5\"").unwrap(), d("2.5"));
        assert_eq!(serde_json::to_string(&d("2.50")).unwrap(), "\"2.5\"");
    }

    #[test]
    fn schema_patterns_agree_with_the_parser() {
        let pattern = |schema: serde_json::Value| {
            let p = schema["pattern"].as_str().unwrap().to_string();
            move |text: &str| {
                jsonschema::is_valid(&serde_json::json!({"pattern": p}), &serde_json::json!(text))
            }
        };
        let positive = pattern(positive_schema());
        let non_negative = pattern(non_negative_schema());
        for text in [
            "0",
            "0.0",
            "00.000000",
            "1",
            "0.5",
            "0.50",
            "0.000001",
            "10.25",
            "007",
            "3.000",
        ] {
            let value: Dec = text.parse().unwrap();
            assert_eq!(positive(text), value.is_positive(), "positive {text}");
            assert!(non_negative(text), "non-negative {text}");
        }
        for text in ["-1", "-0.5", "0.0000001", "1e2", ".5"] {
            assert!(!positive(text) && !non_negative(text), "{text}");
        }
    }
}
