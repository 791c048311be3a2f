//! The one JSON reader of request bodies. serde_json's own `Value` keeps the
//! last of two equal keys, so `{"quantity":"1","quantity":"50"}` would mean
//! whatever the last proxy or client library in the chain decided; here a
//! repeated key at any depth is refused, and so is text no field should
//! hold (NUL and other control characters, bidirectional overrides that
//! make a name display differently from what is stored). Both are checked
//! while the body is read, so every JSON body (REST and sync batches alike)
//! gets the same rule.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::domain::body::whole_number;
use crate::error::{ApiError, Result};

/// Free-text fields where a line break or a tab is part of the text.
pub const MULTI_LINE_FIELDS: &[&str] = &["notes", "note", "description"];

/// Why `text` (the value of `field`) is refused, if it is.
pub fn text_problem(field: &str, text: &str) -> Option<&'static str> {
    // Printable ASCII, what nearly every field holds, needs no closer look.
    if text.bytes().all(|b| matches!(b, b' '..=b'~')) {
        return None;
    }
    let multi_line = MULTI_LINE_FIELDS.contains(&field);
    for c in text.chars() {
        if matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
            return Some("must not contain Unicode bidirectional override characters");
        }
        if c.is_control() && !(multi_line && matches!(c, '\n' | '\t')) {
            return Some(if multi_line {
                "must not contain control characters other than line breaks and tabs"
            } else {
                "must not contain control characters"
            });
        }
    }
    None
}

/// What made the reader stop, when it was the content and not the syntax.
enum Refusal {
    RepeatedKey(String),
    Text {
        field: String,
        message: &'static str,
    },
}

/// Reads a JSON body into a `Value`, refusing repeated keys and unsafe text.
pub fn parse(bytes: &[u8]) -> Result<Value> {
    let refusal = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict {
        refusal: &refusal,
        field: "body",
    }
    .deserialize(&mut de)
    .and_then(|value| de.end().map(|()| value));
    match (parsed, refusal.into_inner()) {
        (_, Some(Refusal::RepeatedKey(key))) => Err(ApiError::invalid(
            &key,
            "appears more than once in the same object",
        )),
        (_, Some(Refusal::Text { field, message })) => Err(ApiError::invalid(&field, message)),
        (Ok(value), None) => Ok(value),
        (Err(e), None) if e.is_eof() => Err(ApiError::invalid("body", "is not complete JSON")),
        (Err(_), None) => Err(ApiError::invalid("body", "must be a JSON object")),
    }
}

/// Whether `bytes` is a JSON text [`parse`] accepts in which no number is a
/// whole number written with a fraction or an exponent (`2.0`, `1e2`).
/// Such a text means the same read straight into a type as read through a
/// checked `Value`, so the `Value` need not be built; for any other text
/// (refused, malformed, or `2.0` meaning the integer 2) the answer is
/// `false` and the caller reads it through [`parse`], which says why.
pub fn reads_as_written(bytes: &[u8]) -> bool {
    let refusal = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let checked = Check(Strict {
        refusal: &refusal,
        field: "body",
    })
    .deserialize(&mut de)
    .and_then(|()| de.end());
    checked.is_ok() && refusal.into_inner().is_none()
}

/// One value and the name of the field it belongs to (the nearest key).
struct Strict<'r, 'f> {
    refusal: &'r RefCell<Option<Refusal>>,
    field: &'f str,
}

impl Strict<'_, '_> {
    fn refuse<E: de::Error>(&self, refusal: Refusal) -> E {
        *self.refusal.borrow_mut() = Some(refusal);
        // The message is never shown: `parse` reports the refusal itself.
        E::custom("refused")
    }

    fn text<E: de::Error>(&self, text: &str) -> std::result::Result<(), E> {
        match text_problem(self.field, text) {
            None => Ok(()),
            Some(message) => Err(self.refuse(Refusal::Text {
                field: self.field.to_string(),
                message,
            })),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_, '_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Value, E> {
        self.text(v)?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Value, E> {
        self.text(&v)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict {
            refusal: self.refusal,
            field: self.field,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // A key with unsafe text is reported against the object holding
            // it, so the refused text is never repeated as a field name.
            self.text(&key)?;
            if object.contains_key(&key) {
                return Err(self.refuse(Refusal::RepeatedKey(key)));
            }
            let value = map.next_value_seed(Strict {
                refusal: self.refusal,
                field: &key,
            })?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// [`Strict`]'s rules with nothing built: what [`reads_as_written`] runs.
struct Check<'r, 'f>(Strict<'r, 'f>);

impl Check<'_, '_> {
    fn nested<'r, 'f>(&'r self, field: &'f str) -> Check<'r, 'f> {
        Check(Strict {
            refusal: self.0.refusal,
            field,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Check<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        match whole_number(v) {
            // Not refused: only not read as written (it is read as an integer).
            Some(_) => Err(E::custom("a whole number written as a fraction")),
            None => Ok(()),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.0.text(v)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(self.nested(self.0.field))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        // The keys seen so far, on the stack: a body's objects are small.
        let mut keys = [""; MAX_KEYS];
        let mut seen = 0;
        while let Some(key) = map.next_key_seed(Key)? {
            self.0.text(key)?;
            if keys[..seen].contains(&key) {
                return Err(de::Error::custom("a repeated key"));
            }
            *keys
                .get_mut(seen)
                .ok_or_else(|| de::Error::custom("more keys than checked here"))? = key;
            seen += 1;
            map.next_value_seed(self.nested(key))?;
        }
        Ok(())
    }
}

/// Keys of one object [`reads_as_written`] checks; an object with more is
/// read through [`parse`].
const MAX_KEYS: usize = 24;

/// An object's key as the body spells it. A key written with escapes is
/// left to [`parse`] (it would have to be copied to be compared).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = &'de str;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = &'de str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key without escapes")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> (String, String) {
        match parse(body.as_bytes()).unwrap_err() {
            ApiError::Validation { errors, .. } => {
                let (k, v) = errors.into_iter().next().unwrap();
                (k, v.join(" "))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn repeated_keys_are_refused_at_any_depth() {
        assert_eq!(refused(r#"{"quantity":"1","quantity":"50"}"#).0, "quantity");
        assert_eq!(
            refused(r#"{"batch":{"operations":[{"attributes":{"a":1,"b":2,"a":3}}]}}"#).0,
            "a"
        );
        assert!(parse(br#"{"a":{"x":1},"b":{"x":1}}"#).is_ok());
    }

    #[test]
    fn control_and_bidi_characters_are_refused_by_field() {
        let (field, message) = refused("{\"person\":{\"name\":\"A\\u0000B\"}}");
        assert_eq!(field, "name");
        assert!(!message.contains('A'), "{message}");
        assert_eq!(refused("{\"name\":\"a\\u202Eb\"}").0, "name");
        assert_eq!(refused("{\"name\":\"a\\u2067b\"}").0, "name");
        assert_eq!(refused("{\"name\":\"two\\nlines\"}").0, "name");
        assert_eq!(refused("{\"notes\":\"bell\\u0007\"}").0, "notes");
        assert_eq!(
            refused("{\"shortcuts\":[\"ok\",\"b\\u0001\"]}").0,
            "shortcuts"
        );
        assert_eq!(refused("{\"person\":{\"na\\u0000me\":1}}").0, "person");
        assert!(parse(b"{\"notes\":\"line one\\nline two\\tindented\"}").is_ok());
        assert!(parse("{\"name\":\"Zo\u{eb} \u{5e9}\u{5dc}\u{5d5}\u{5dd}\"}".as_bytes()).is_ok());
    }

    #[test]
    fn a_body_reads_as_written_only_when_the_checked_reader_accepts_it_unchanged() {
        let bodies = [
            r#"{"take":{"source_id":12,"taken_at":"2026-01-01T08:00:00Z","dose":"1.5"}}"#,
            r#"{"a":[1,-2,3.25,true,false,null,{"b":"c"}],"d":{}}"#,
            r#"{"quantity":"1","quantity":"50"}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"{"batch":{"operations":[{"attributes":{"a":1,"b":2,"a":3}}]}}"#,
            r#"{"person":{"name":"A\u0000B"}}"#,
            r#"{"name":"a\u202Eb"}"#,
            r#"{"name":"two\nlines"}"#,
            r#"{"notes":"line one\nline two"}"#,
            r#"{"shortcuts":["ok","b\u0001"]}"#,
            r#"{"person":{"na\u0000me":1}}"#,
            r#"{"person_id": 12.0}"#,
            r#"{"a": [1e2]}"#,
            r#"{"a": -0.0}"#,
            r#"{"a": 1e300}"#,
            r#"{"a":"#,
            r#"{"a":1} x"#,
            "nope",
            "",
        ];
        for body in bodies {
            let as_written = reads_as_written(body.as_bytes());
            let checked = parse(body.as_bytes());
            if as_written {
                let value = checked.unwrap_or_else(|e| panic!("{body}: {e:?}"));
                let mut whole = value.clone();
                crate::domain::body::integral_numbers(&mut whole);
                assert_eq!(value, whole, "{body}");
                assert_eq!(
                    value,
                    serde_json::from_str::<Value>(body).unwrap(),
                    "{body}"
                );
            }
        }
        for plain in &bodies[..2] {
            assert!(reads_as_written(plain.as_bytes()), "{plain}");
        }
        assert!(reads_as_written(br#"{"notes":"line one\nline two"}"#));
        let keys = |n: usize| (0..n).map(|i| format!("\"k{i}\":{i}")).collect::<Vec<_>>();
        let most = keys(MAX_KEYS);
        assert!(reads_as_written(
            format!("{{{}}}", most.join(",")).as_bytes()
        ));
        let repeated = format!("{{{},\"k7\":1}}", keys(MAX_KEYS - 1).join(","));
        assert!(!reads_as_written(repeated.as_bytes()));
        assert!(parse(repeated.as_bytes()).is_err());
        let many = format!("{{{}}}", keys(2000).join(","));
        assert!(!reads_as_written(many.as_bytes()));
        assert!(parse(many.as_bytes()).is_ok());
        let repeated = format!("{{{},\"k1999\":1}}", keys(2000).join(","));
        assert!(parse(repeated.as_bytes()).is_err());
    }

    #[test]
    fn syntax_errors_stay_body_errors() {
        assert_eq!(refused("{\"a\":").0, "body");
        assert_eq!(refused("{\"a\":1} x").0, "body");
        assert_eq!(refused("nope").0, "body");
    }
}
