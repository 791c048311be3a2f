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

use crate::error::{ApiError, Result};

/// Free-text fields where a line break or a tab is part of the text.
pub const MULTI_LINE_FIELDS: &[&str] = &["notes", "note", "description"];

/// Why `text` (the value of `field`) is refused, if it is.
pub fn text_problem(field: &str, text: &str) -> Option<&'static str> {
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
    fn syntax_errors_stay_body_errors() {
        assert_eq!(refused("{\"a\":").0, "body");
        assert_eq!(refused("{\"a\":1} x").0, "body");
        assert_eq!(refused("nope").0, "body");
    }
}
