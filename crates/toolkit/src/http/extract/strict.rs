//! The one JSON reader of request bodies. serde_json's own `Value` keeps the
//! last of two equal keys, so `{"quantity":"1","quantity":"50"}` would mean
//! whatever the last proxy or client library in the chain decided; here a
//! repeated key at any depth is refused, and so is text no field should
//! hold (NUL and other control characters, bidirectional overrides that
//! make a name display differently from what is stored). Both are checked
//! while the body is read, so every JSON body (REST and sync batches alike)
//! gets the same rule. [`reads_as_written`] picks out the bodies that
//! plainly keep it, which may skip building the `Value`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

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

/// Whether `bytes`, if it is JSON at all, is a text [`parse`] accepts
/// unchanged: no repeated key, no text it refuses, no number written with
/// a fraction or an exponent (`2.0` is read as the integer 2). Such a
/// text means the same read straight into a type as read through a
/// checked `Value`, so the `Value` need not be built. One pass over the
/// bytes, nothing allocated; it answers `false` for whatever it does not
/// look into (an escape, text beyond printable ASCII, deep nesting, many
/// keys, anything that is not JSON), and the caller then reads the body
/// through [`parse`], which says why if anything is wrong. Whether the
/// text is well-formed JSON is left to the reader that comes next.
pub fn reads_as_written(bytes: &[u8]) -> bool {
    // The objects and arrays open, innermost last: for an object, where
    // its keys start in `keys`.
    let mut open = [None::<usize>; MAX_DEPTH];
    let mut depth = 0usize;
    // The keys of the objects open, as (start, end) in `bytes`.
    let mut keys = [(0usize, 0usize); MAX_KEYS];
    let mut key_count = 0;
    let mut expect_key = false;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' | b':' => i += 1,
            b'"' => {
                let start = i + 1;
                let Some(len) = bytes[start..]
                    .iter()
                    .position(|&b| !matches!(b, b' '..=b'~') || b == b'"' || b == b'\\')
                else {
                    return false;
                };
                let end = start + len;
                if bytes[end] != b'"' {
                    return false;
                }
                if expect_key {
                    let key = &bytes[start..end];
                    let first = depth
                        .checked_sub(1)
                        .and_then(|d| open[d])
                        .unwrap_or(key_count);
                    if keys[first..key_count]
                        .iter()
                        .any(|&(s, e)| &bytes[s..e] == key)
                        || key_count == MAX_KEYS
                    {
                        return false;
                    }
                    keys[key_count] = (start, end);
                    key_count += 1;
                    expect_key = false;
                }
                i = end + 1;
            }
            b'{' | b'[' => {
                if depth == MAX_DEPTH {
                    return false;
                }
                open[depth] = (byte == b'{').then_some(key_count);
                depth += 1;
                expect_key = byte == b'{';
                i += 1;
            }
            b'}' | b']' => {
                let Some(top) = depth.checked_sub(1) else {
                    return false;
                };
                depth = top;
                if let Some(first) = open[top] {
                    key_count = first;
                }
                expect_key = false;
                i += 1;
            }
            b',' => {
                expect_key = depth.checked_sub(1).is_some_and(|top| open[top].is_some());
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let len = bytes[i..]
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'+' | b'0'..=b'9' | b'.' | b'e' | b'E'))
                    .count();
                if bytes[i..i + len]
                    .iter()
                    .any(|b| matches!(b, b'.' | b'e' | b'E'))
                {
                    return false;
                }
                i += len;
            }
            b't' | b'f' | b'n' => {
                i += bytes[i..]
                    .iter()
                    .take_while(|b| b.is_ascii_lowercase())
                    .count();
            }
            _ => return false,
        }
    }
    true
}

/// Objects and arrays open at once that [`reads_as_written`] looks into.
const MAX_DEPTH: usize = 16;
/// Keys of the open objects, together, that [`reads_as_written`] keeps to
/// compare (compared one by one: a body's objects are small).
const MAX_KEYS: usize = 48;

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
            let as_written =
                reads_as_written(body.as_bytes()) && serde_json::from_str::<Value>(body).is_ok();
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
        for plain in [
            bodies[0],
            r#"{"a":[1,-2,true,false,null,{"b":"c"}],"d":{},"e":[]}"#,
            r#" { "batch" : { "operations" : [ { "a" : 1 } , { "a" : 2 } ] } } "#,
        ] {
            assert!(reads_as_written(plain.as_bytes()), "{plain}");
        }
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

    /// Random JSON texts, repeated keys, escapes, text beyond ASCII and
    /// whole numbers with fractions among them: whenever the fast check
    /// passes one that is JSON, the checked reader accepts it unchanged.
    #[test]
    fn the_fast_check_never_passes_what_the_checked_reader_would_refuse_or_change() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        const TEXTS: &[&str] = &[
            "a",
            "b",
            "c",
            "name",
            "notes",
            "",
            "x y",
            "\\n",
            "\\u0061",
            "\\u0000",
            "z\u{eb}",
            "a\u{202e}b",
            "\u{85}",
            "\u{7f}",
            "tab\\t",
            "q\\\"",
        ];
        const NUMBERS: &[&str] = &["0", "-1", "12", "2.0", "2.5", "1e2", "-0.0", "1E300", "7"];
        fn value(next: &mut impl FnMut(u64) -> u64, depth: u32, out: &mut String) {
            match if depth > 3 { next(4) } else { next(7) } {
                0 => out.push_str(NUMBERS[next(NUMBERS.len() as u64) as usize]),
                1 => out.push_str(["true", "false", "null"][next(3) as usize]),
                2 | 3 => {
                    out.push('"');
                    out.push_str(TEXTS[next(TEXTS.len() as u64) as usize]);
                    out.push('"');
                }
                4 => {
                    out.push('[');
                    for i in 0..next(4) {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        value(next, depth + 1, out);
                    }
                    out.push(']');
                }
                _ => {
                    out.push('{');
                    for i in 0..next(5) {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push('"');
                        out.push_str(TEXTS[next(TEXTS.len() as u64) as usize]);
                        out.push_str("\": ");
                        value(next, depth + 1, out);
                    }
                    out.push('}');
                }
            }
        }
        let (mut passed, mut json) = (0, 0);
        for _ in 0..20_000 {
            let mut body = String::new();
            value(&mut next, 0, &mut body);
            let Ok(plain) = serde_json::from_str::<Value>(&body) else {
                continue;
            };
            json += 1;
            if !reads_as_written(body.as_bytes()) {
                continue;
            }
            passed += 1;
            let checked = parse(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e:?}"));
            let mut whole = checked.clone();
            crate::domain::body::integral_numbers(&mut whole);
            assert_eq!(checked, whole, "{body}");
            assert_eq!(checked, plain, "{body}");
        }
        assert!(passed > json / 10, "{passed} of {json} passed");
        assert!(passed < json, "{passed} of {json} passed");
    }

    #[test]
    fn syntax_errors_stay_body_errors() {
        assert_eq!(refused("{\"a\":").0, "body");
        assert_eq!(refused("{\"a\":1} x").0, "body");
        assert_eq!(refused("nope").0, "body");
    }
}
