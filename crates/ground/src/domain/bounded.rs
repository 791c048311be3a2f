//! Bounded text: a length limit stated once, in the type, from which both
//! the 422 (its `Deserialize` refuses the text, and the body's path names
//! the field) and the OpenAPI schema (`maxLength`) come.

use std::borrow::Cow;
use std::ops::Deref;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

/// Text that is not blank and holds at most `MAX` characters (a name or a
/// title). Kept as sent; the rules trim it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Name<const MAX: usize>(String);

impl<const MAX: usize> Name<MAX> {
    pub const MAX: usize = MAX;

    pub fn into_inner(self) -> String {
        self.0
    }
}

impl<const MAX: usize> Deref for Name<MAX> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Name<MAX> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        if text.trim().is_empty() {
            return Err(serde::de::Error::custom("must not be blank"));
        }
        if text.chars().count() > MAX {
            return Err(serde::de::Error::custom(format!(
                "must be at most {MAX} characters"
            )));
        }
        Ok(Name(text))
    }
}

impl<const MAX: usize> JsonSchema for Name<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Name{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1, "maxLength": MAX, "pattern": "\\S"})
    }
}

/// Free text of at most `MAX` characters (a description or notes), kept as
/// sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Text<const MAX: usize>(String);

impl<const MAX: usize> Text<MAX> {
    pub const MAX: usize = MAX;

    pub fn into_inner(self) -> String {
        self.0
    }
}

impl<const MAX: usize> Deref for Text<MAX> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        if text.chars().count() > MAX {
            return Err(serde::de::Error::custom(format!(
                "must be at most {MAX} characters"
            )));
        }
        Ok(Text(text))
    }
}

impl<const MAX: usize> JsonSchema for Text<MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Text{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "maxLength": MAX})
    }
}

/// A code of `MIN` to `MAX` ASCII digits (a barcode, a dm+d code), kept
/// exactly as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Digits<const MIN: usize, const MAX: usize>(String);

impl<const MIN: usize, const MAX: usize> Digits<MIN, MAX> {
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl<'de, const MIN: usize, const MAX: usize> Deserialize<'de> for Digits<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        if !((MIN..=MAX).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())) {
            return Err(serde::de::Error::custom(format!(
                "must be {MIN} to {MAX} digits"
            )));
        }
        Ok(Digits(text))
    }
}

impl<const MIN: usize, const MAX: usize> JsonSchema for Digits<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Digits{MIN}to{MAX}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": format!("^[0-9]{{{MIN},{MAX}}}$")})
    }
}

/// A whole number of at least `MIN` (a count or a limit): a smaller one is
/// refused while the body is read, with the field named; the schema says
/// `minimum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct AtLeast<const MIN: i64>(i64);

impl<const MIN: i64> AtLeast<MIN> {
    pub fn get(self) -> i64 {
        self.0
    }
}

impl<'de, const MIN: i64> Deserialize<'de> for AtLeast<MIN> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(de)?;
        if n < MIN {
            return Err(serde::de::Error::custom(format!("must be at least {MIN}")));
        }
        Ok(AtLeast(n))
    }
}

impl<const MIN: i64> JsonSchema for AtLeast<MIN> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("AtLeast{MIN}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": MIN, "maximum": i64::MAX})
    }
}

/// A list of `MIN` to `MAX` items (the medications an event names, the
/// operations of a batch): a shorter or longer one is refused while the
/// body is read, with the field named; the schema says `minItems` and
/// `maxItems`. Items past `MAX` are refused as they arrive, so a long list
/// is never held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Bounded<T, const MIN: usize, const MAX: usize>(Vec<T>);

impl<T, const MIN: usize, const MAX: usize> Bounded<T, MIN, MAX> {
    pub fn into_inner(self) -> Vec<T> {
        self.0
    }

    fn refusal() -> String {
        if MIN == 0 {
            format!("must list at most {MAX} items")
        } else {
            format!("must list {MIN} to {MAX} items")
        }
    }
}

impl<T, const MIN: usize, const MAX: usize> Deref for Bounded<T, MIN, MAX> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>, const MIN: usize, const MAX: usize> Deserialize<'de>
    for Bounded<T, MIN, MAX>
{
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Items<T, const MIN: usize, const MAX: usize>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>, const MIN: usize, const MAX: usize> serde::de::Visitor<'de>
            for Items<T, MIN, MAX>
        {
            type Value = Vec<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Vec<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX));
                while let Some(item) = seq.next_element()? {
                    if items.len() == MAX {
                        return Err(serde::de::Error::custom(Bounded::<T, MIN, MAX>::refusal()));
                    }
                    items.push(item);
                }
                if items.len() < MIN {
                    return Err(serde::de::Error::custom(Bounded::<T, MIN, MAX>::refusal()));
                }
                Ok(items)
            }
        }

        de.deserialize_seq(Items::<T, MIN, MAX>(std::marker::PhantomData))
            .map(Bounded)
    }
}

impl<T: JsonSchema, const MIN: usize, const MAX: usize> JsonSchema for Bounded<T, MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Bounded{MIN}to{MAX}_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>();
        if MIN == 0 {
            json_schema!({"type": "array", "items": items, "maxItems": MAX})
        } else {
            json_schema!({"type": "array", "items": items, "minItems": MIN, "maxItems": MAX})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lists_refuse_too_few_and_too_many() {
        let list =
            |n: usize| serde_json::from_value::<Bounded<u8, 1, 3>>(serde_json::json!(vec![1; n]));
        assert_eq!(list(3).unwrap().into_inner(), [1, 1, 1]);
        for n in [0, 4, 50] {
            assert_eq!(
                list(n).unwrap_err().to_string(),
                "must list 1 to 3 items",
                "{n}"
            );
        }
        let open = serde_json::from_value::<Bounded<u8, 0, 2>>(serde_json::json!([1, 2, 3]));
        assert_eq!(open.unwrap_err().to_string(), "must list at most 2 items");
        let schema = schemars::SchemaGenerator::default().subschema_for::<Bounded<u8, 0, 2>>();
        assert_eq!(schema.to_value()["maxItems"], 2);
    }

    #[test]
    fn digits_are_counted_and_kept_as_sent() {
        let code = |s: &str| serde_json::from_value::<Digits<6, 8>>(serde_json::json!(s));
        assert_eq!(code("012345").unwrap().into_inner(), "012345");
        for bad in ["12345", "123456789", "12345a", " 123456", "١٢٣٤٥٦"] {
            let err = code(bad).unwrap_err().to_string();
            assert_eq!(err, "must be 6 to 8 digits", "{bad}");
        }
    }
}
