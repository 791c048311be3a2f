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

/// Largest number of digits before the decimal point accepted. Inputs and
/// every stored result stay within ±999999999999.999999, so a sum or
/// difference of two of them (at most 19 significant digits) is always
/// exact in `Decimal`'s 28: arithmetic never rounds.
pub const MAX_WHOLE_DIGITS: usize = 12;

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

    /// The largest quantity accepted and stored.
    pub const MAX: Dec = Dec(Decimal::from_parts(2_808_348_671, 232_830_643, 0, false, 6));

    /// Within the accepted range and scale.
    pub fn in_range(self) -> bool {
        self.0.abs() <= Dec::MAX.0 && self.0.normalize().scale() <= MAX_SCALE
    }

    /// The exact sum, or `None` when it leaves the accepted range.
    pub fn checked_add(self, other: Dec) -> Option<Dec> {
        self.0
            .checked_add(other.0)
            .map(Dec)
            .filter(|d| d.in_range())
    }

    /// The exact difference, or `None` when it leaves the accepted range.
    pub fn checked_sub(self, other: Dec) -> Option<Dec> {
        self.0
            .checked_sub(other.0)
            .map(Dec)
            .filter(|d| d.in_range())
    }
}

/// Stock plus an addition, for every path that adds to stock: a 422 naming
/// `field` when the result would leave the accepted range (nothing is
/// changed, since the caller's transaction fails).
pub fn stock_sum(stock: Dec, addition: Dec, field: &str) -> crate::error::Result<Dec> {
    stock.checked_add(addition).ok_or_else(|| {
        crate::error::ApiError::invalid(
            field,
            format!(
                "would take the stock above the largest quantity kept ({}); nothing was changed",
                Dec::MAX
            ),
        )
    })
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
        if whole.trim_start_matches('0').len() > MAX_WHOLE_DIGITS {
            return Err(ParseDecError(
                "must have at most 12 digits before the decimal point",
            ));
        }
        // At most 12 whole and 6 fraction digits that count: the digits
        // make an i64 mantissa, without trailing zeros (so it is normalized).
        let fraction = fraction.trim_end_matches('0');
        let mantissa = whole
            .bytes()
            .chain(fraction.bytes())
            .fold(0i64, |m, b| m * 10 + i64::from(b - b'0'));
        if mantissa == 0 && s.starts_with('-') {
            return Err(FORM);
        }
        let signed = if s.starts_with('-') {
            -mantissa
        } else {
            mantissa
        };
        Ok(Dec(Decimal::new(signed, fraction.len() as u32)))
    }
}

impl fmt::Display for Dec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // normalized: "10.50" and "10.5" are the same quantity and print alike.
        f.write_str(self.plain(&mut [0; PLAIN_LEN]))
    }
}

impl Serialize for Dec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.plain(&mut [0; PLAIN_LEN]))
    }
}

/// Bytes the plain text of any `Decimal` takes at most: a sign, 29 digits,
/// a point and the zero before it.
const PLAIN_LEN: usize = 32;

impl Dec {
    /// The plain text of the normalized value, into `buf`: its digits, with
    /// a point before the last `scale` of them. (`Decimal`'s `Display`,
    /// through `fmt` and serde's `collect_str`, cost several times as much
    /// for every quantity of every listed medication.)
    fn plain(self, buf: &mut [u8; PLAIN_LEN]) -> &str {
        let value = self.0.normalize();
        let scale = value.scale() as usize;
        let mut digits = value.mantissa().unsigned_abs();
        let mut at = PLAIN_LEN;
        let mut written = 0;
        while digits > 0 || written <= scale {
            if written == scale && scale > 0 {
                at -= 1;
                buf[at] = b'.';
            }
            at -= 1;
            buf[at] = b'0' + (digits % 10) as u8;
            digits /= 10;
            written += 1;
        }
        if value.is_sign_negative() && !value.is_zero() {
            at -= 1;
            buf[at] = b'-';
        }
        std::str::from_utf8(&buf[at..]).expect("ASCII digits")
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
        Ok(ToSqlOutput::from(
            self.plain(&mut [0; PLAIN_LEN]).to_owned(),
        ))
    }
}

impl FromSql for Dec {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Dec> {
        let text = value.as_str()?;
        // A row written before the range was enforced still reads back
        // exactly; only new results are held to the range.
        text.parse().or_else(|e: ParseDecError| {
            Decimal::from_str_exact(text)
                .map(|d| Dec(d.normalize()))
                .map_err(|_| FromSqlError::Other(e.to_string().into()))
        })
    }
}

/// A decimal is a string on the wire (never a JSON number), within the
/// range and scale `Deserialize` accepts.
impl schemars::JsonSchema for Dec {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Decimal".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": format!("^-?0*[0-9]{{1,{MAX_WHOLE_DIGITS}}}(\\.[0-9]{{1,{MAX_SCALE}}})?$"),
            "description": "An exact decimal written as a string, e.g. \"2.5\"",
        })
    }
}

/// A decimal held to a range: the range is stated once, in the type, from
/// which both the 422 (its `Deserialize` refuses a value outside it, and the
/// body's path names the field) and the schema's pattern come.
macro_rules! ranged {
    ($(#[$meta:meta])* $name:ident, $holds:expr, $refusal:literal, $pattern:expr, $description:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(Dec);

        impl $name {
            pub fn get(self) -> Dec {
                self.0
            }
        }

        impl TryFrom<Dec> for $name {
            type Error = &'static str;

            fn try_from(value: Dec) -> Result<$name, &'static str> {
                let holds: fn(Dec) -> bool = $holds;
                if holds(value) {
                    Ok($name(value))
                } else {
                    Err($refusal)
                }
            }
        }

        impl From<$name> for Dec {
            fn from(value: $name) -> Dec {
                value.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                Dec::deserialize(deserializer)?
                    .try_into()
                    .map_err(de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": $description,
                })
            }
        }
    };
}

ranged!(
    /// A decimal greater than zero: a dose, an amount ordered or removed.
    /// The pattern asks for a non-zero digit in the whole part, or else
    /// among the (at most six) fraction digits.
    PositiveDecimal,
    Dec::is_positive,
    "must be greater than zero",
    "^(0*[1-9][0-9]{0,11}(\\.[0-9]{1,6})?|0+\\.([1-9][0-9]{0,5}|0[1-9][0-9]{0,4}|00[1-9][0-9]{0,3}|000[1-9][0-9]{0,2}|0000[1-9][0-9]?|00000[1-9]))$",
    "An exact decimal greater than zero written as a string, e.g. \"0.5\""
);

ranged!(
    /// A decimal of zero or more: a stock, a threshold, hours between doses.
    NonNegativeDecimal,
    |d| !d.is_negative(),
    "must not be negative",
    format!("^0*[0-9]{{1,{MAX_WHOLE_DIGITS}}}(\\.[0-9]{{1,{MAX_SCALE}}})?$"),
    "An exact decimal of zero or more written as a string, e.g. \"2.5\""
);

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        s.parse().unwrap()
    }

    #[test]
    fn plain_text_is_what_decimal_writes() {
        let mut values = vec![
            Decimal::ZERO,
            Decimal::MAX,
            Decimal::MIN,
            Decimal::new(-0, 3),
            Decimal::from_parts(0, 0, 0, true, 0),
            Dec::MAX.0,
            Decimal::new(1, 28),
            Decimal::new(-1, 28),
            Decimal::new(5, 1),
            Decimal::new(1000, 3),
            Decimal::new(-1050, 2),
            Decimal::from_i128_with_scale(79_228_162_514_264_337_593_543_950_335, 28),
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let digits = (seed % 20) as u32;
            let mantissa = (seed >> 8) as i64 % 10i64.pow(digits.min(18));
            let sign = if seed & 1 == 1 { -1 } else { 1 };
            values.push(Decimal::new(sign * mantissa, (seed >> 3) as u32 % 29));
        }
        for value in values {
            let expected = value.normalize().to_string();
            assert_eq!(Dec(value).to_string(), expected, "{value:?}");
            assert_eq!(
                serde_json::to_string(&Dec(value)).unwrap(),
                format!("\"{expected}\""),
                "{value:?}"
            );
        }
    }

    #[test]
    fn parsing_gives_the_exact_normalized_value() {
        for text in [
            "0",
            "0.0",
            "000",
            "12",
            "10.50",
            "3.000",
            "-0.5",
            "0.000001",
            "-2.25",
            "999999999999.999999",
            "-999999999999.999999",
            "000000000000012.5",
            "100",
        ] {
            let exact = Decimal::from_str_exact(text).unwrap().normalize();
            let parsed = d(text).0;
            assert_eq!(parsed, exact, "{text}");
            assert_eq!(parsed.scale(), exact.scale(), "{text}");
            assert_eq!(parsed.to_string(), exact.to_string(), "{text}");
        }
        assert!("-0".parse::<Dec>().is_err());
        assert!("-0.000".parse::<Dec>().is_err());
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
    fn results_stay_within_the_input_range() {
        assert_eq!(Dec::MAX.to_string(), "999999999999.999999");
        assert_eq!(d("999999999999.999999"), Dec::MAX);
        assert!("1000000000000".parse::<Dec>().is_err());
        assert!("-1000000000000".parse::<Dec>().is_err());
        assert_eq!(Dec::MAX.checked_add(d("0.000001")), None);
        assert_eq!(d("999999999999").checked_add(d("0.999999")), Some(Dec::MAX));
        assert_eq!(
            d("999999999999")
                .checked_sub(d("0.000001"))
                .unwrap()
                .to_string(),
            "999999999998.999999"
        );
        assert!(stock_sum(Dec::MAX, d("1"), "quantity").is_err());
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
        let schema_of = |schema: schemars::Schema| schema.to_value();
        let positive = pattern(schema_of(schemars::schema_for!(PositiveDecimal)));
        let non_negative = pattern(schema_of(schemars::schema_for!(NonNegativeDecimal)));
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
            assert_eq!(
                positive(text),
                PositiveDecimal::try_from(value).is_ok(),
                "positive {text}"
            );
            assert!(NonNegativeDecimal::try_from(value).is_ok(), "{text}");
            assert!(non_negative(text), "non-negative {text}");
        }
        for text in ["-1", "-0.5", "0.0000001", "1e2", ".5", "1000000000000"] {
            assert!(!positive(text) && !non_negative(text), "{text}");
        }
        let refused = |json: &str| {
            let p = serde_json::from_str::<PositiveDecimal>(json).unwrap_err();
            let n = serde_json::from_str::<NonNegativeDecimal>(json).unwrap_err();
            (p.to_string(), n.to_string())
        };
        let (p, n) = refused("\"-1\"");
        assert!(p.starts_with("must be greater than zero"), "{p}");
        assert!(n.starts_with("must not be negative"), "{n}");
        let zero = serde_json::from_str::<PositiveDecimal>("\"0\"").unwrap_err();
        assert!(zero.to_string().starts_with("must be greater than zero"));
        assert!(serde_json::from_str::<NonNegativeDecimal>("\"0\"").is_ok());
        for text in ["999999999999.999999", "000999999999999"] {
            assert!(text.parse::<Dec>().is_ok(), "{text}");
            assert!(positive(text) && non_negative(text), "{text}");
        }
    }
}
