//! Query parameters as typed shapes. An operation's parameters are one
//! `#[derive(Deserialize, JsonSchema)]` struct: the handler reads it
//! ([`Query`], or [`Paged`] for a list) and the contract lists it
//! (`Op::query_params`), so each parameter's name, type and description
//! (the field's doc comment) are written once, on its field.
//!
//! Every field is read in the order it is declared (the order the contract
//! lists them), a parameter left out as well (an `Option` reads `None`, a
//! [`Count`] its default), and the first that does not read is a 422
//! naming its parameter. Parameters the shape does not name are ignored; a
//! repeated name keeps its last value.

use std::collections::HashMap;
use std::fmt;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::{ApiError, FieldErrors, Result};

/// The query string read as the shape `T`.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        read(&decoded(parts)).map(Query).map_err(ApiError::from)
    }
}

/// A list's query string: the page ([`PageQuery`], both parameters checked
/// and reported together) and then the shape `T` of its filters.
pub struct Paged<T = NoFilter>(pub Page, pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Paged<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        let params = decoded(parts);
        let page = every_error::<PageQuery>(&params, "invalid pagination parameters")?;
        let filter = read(&params).map_err(ApiError::from)?;
        Ok(Paged(page.into(), filter))
    }
}

/// A list without filters.
#[derive(Deserialize, JsonSchema)]
pub struct NoFilter {}

/// A list that can be read from a time on (`updated_since`).
#[derive(Deserialize, JsonSchema)]
pub struct Since {
    /// Only records updated at or after this time
    pub updated_since: Option<At>,
}

impl Since {
    /// `updated_since` in its stored form, as the rules take it.
    pub fn at(self) -> Option<String> {
        at(self.updated_since)
    }
}

/// `page` and `per_page`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PageQuery {
    /// Page number, from 1
    page: Count<{ Page::MAX_PAGE }, 1>,
    /// Items per page, 1 to 100
    per_page: Count<{ Page::MAX_PER_PAGE }, 20>,
}

impl From<PageQuery> for Page {
    fn from(query: PageQuery) -> Page {
        Page {
            page: query.page.0,
            per_page: query.per_page.0,
        }
    }
}

/// A whole number from 1 to `MAX`, `DEFAULT` when left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count<const MAX: u32, const DEFAULT: u32>(pub u32);

impl<'de, const MAX: u32, const DEFAULT: u32> Deserialize<'de> for Count<MAX, DEFAULT> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        match Option::<String>::deserialize(de)? {
            None => Ok(Count(DEFAULT)),
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX).contains(n))
                .map(Count)
                .ok_or_else(|| de::Error::custom(format!("must be an integer from 1 to {MAX}"))),
        }
    }
}

impl<const MAX: u32, const DEFAULT: u32> JsonSchema for Count<MAX, DEFAULT> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Count_{MAX}_{DEFAULT}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": MAX, "default": DEFAULT})
    }
}

/// Defines a query parameter type read from its text by `$parse` (a 422
/// saying `$rule` otherwise), documented as `$schema`.
#[macro_export]
macro_rules! query_param {
    ($(#[$meta:meta])* $name:ident($inner:ty), $parse:expr, $rule:expr, $schema:tt) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(pub $inner);

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                de: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(de)?;
                let parse: fn(&str) -> Option<$inner> = $parse;
                parse(&text)
                    .map($name)
                    .ok_or_else(|| <D::Error as ::serde::de::Error>::custom($rule))
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!($schema)
            }
        }
    };
}

pub use crate::query_param;

query_param!(
    /// A record named by its numeric id or its portable id (`person_id=12`).
    Reference(ResourceId),
    ResourceId::parse,
    "must be a numeric id or a portable id (UUID)",
    {"$ref": "#/components/schemas/ResourceIdentifier"}
);

query_param!(
    /// A record named by its portable id only, kept hyphenated.
    PortableRef(String),
    |text| {
        uuid::Uuid::parse_str(text)
            .ok()
            .map(|u| u.hyphenated().to_string())
    },
    "must be a portable id (UUID)",
    {"$ref": "#/components/schemas/PortableId"}
);

query_param!(
    /// A record named by its numeric id only.
    NumericRef(i64),
    crate::domain::numeric_id,
    "must be a positive integer",
    {"type": "integer", "minimum": 1, "maximum": i64::MAX}
);

query_param!(
    /// A date-time with an offset, kept in its stored form (`updated_since`).
    At(String),
    |text| Timestamp::parse(text).map(Timestamp::into_string),
    "must be an ISO 8601 date-time with an offset",
    {"type": "string", "format": "date-time"}
);

query_param!(
    /// A calendar day, YYYY-MM-DD.
    Day(jiff::civil::Date),
    |text| text.parse().ok(),
    "must be an ISO date (YYYY-MM-DD)",
    {"type": "string", "format": "date"}
);

/// `Option<Reference>` as the `ResourceId` the rules take.
pub fn reference(param: Option<Reference>) -> Option<ResourceId> {
    param.map(|Reference(id)| id)
}

/// `Option<At>` in its stored form, as the rules take it.
pub fn at(param: Option<At>) -> Option<String> {
    param.map(|At(text)| text)
}

/// `1`, `0`, `true` or `false`; left out is false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        match Option::<String>::deserialize(de)?.as_deref() {
            None | Some("0" | "false") => Ok(Flag(false)),
            Some("1" | "true") => Ok(Flag(true)),
            Some(_) => Err(de::Error::custom("must be 1, 0, true or false")),
        }
    }
}

impl JsonSchema for Flag {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Flag".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": ["1", "0", "true", "false"]})
    }
}

/// A value of the closed vocabulary `T`; another value is refused naming
/// the values (`must be schedule or person_medication`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneOf<T>(pub T);

/// A value of the closed vocabulary `T`; another value "is not a supported
/// value".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supported<T>(pub T);

/// `text` as a value of the vocabulary `T`, or the values it may take.
fn vocabulary<T: DeserializeOwned>(text: &str) -> std::result::Result<T, &'static [&'static str]> {
    T::deserialize(text.into_deserializer()).map_err(|_: de::value::Error| variants::<T>())
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for OneOf<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        vocabulary(&String::deserialize(de)?)
            .map(OneOf)
            .map_err(|values| match values.split_last() {
                Some((last, [_, ..])) => de::Error::custom(format!(
                    "must be {} or {last}",
                    values[..values.len() - 1].join(", ")
                )),
                _ => de::Error::custom(format!("must be {}", values.join(""))),
            })
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Supported<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        vocabulary(&String::deserialize(de)?)
            .map(Supported)
            .map_err(|_| de::Error::custom("is not a supported value"))
    }
}

macro_rules! same_schema {
    ($wrapper:ident) => {
        impl<T: JsonSchema> JsonSchema for $wrapper<T> {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                T::schema_name()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                T::json_schema(generator)
            }
        }
    };
}

same_schema!(OneOf);
same_schema!(Supported);
same_schema!(Checked);

/// A parameter whose refusal the handler reports itself (several at once,
/// or beside a rule between parameters): what `T` read, or why it did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked<T>(pub std::result::Result<T, String>);

impl<T> Checked<T> {
    /// What `T` read, or `None` after handing `report` why it did not.
    pub fn or_report(self, report: impl FnOnce(&str)) -> Option<T> {
        self.0.map_err(|message| report(&message)).ok()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        Ok(Checked(T::deserialize(de).map_err(|e| e.to_string())))
    }
}

/// The variant names of the vocabulary `T`: what its `Deserialize` asks an
/// enum for.
fn variants<T: DeserializeOwned>() -> &'static [&'static str] {
    asked::<T>().1
}

/// The parameter names of the shape `T`, in the order they are declared
/// (and read): what `T`'s `Deserialize` asks a struct for.
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    asked::<T>().0
}

/// The field names a struct `T` asks for, or the variant names an enum
/// `T` asks for, found by asking `T` to read from nothing.
fn asked<T: DeserializeOwned>() -> (&'static [&'static str], &'static [&'static str]) {
    struct Names;
    #[derive(Debug)]
    struct Found(&'static [&'static str], &'static [&'static str]);
    impl fmt::Display for Found {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("names")
        }
    }
    impl std::error::Error for Found {}
    impl de::Error for Found {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Found(&[], &[])
        }
    }
    impl<'de> Deserializer<'de> for Names {
        type Error = Found;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Found> {
            Err(Found(&[], &[]))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> std::result::Result<V::Value, Found> {
            Err(Found(fields, &[]))
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> std::result::Result<V::Value, Found> {
            Err(Found(&[], variants))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map identifier ignored_any
        }
    }
    match T::deserialize(Names) {
        Err(Found(fields, variants)) => (fields, variants),
        Ok(_) => (&[], &[]),
    }
}

/// The query string's name/value pairs, percent-decoded (a repeated name
/// keeps its last value).
fn decoded(parts: &Parts) -> HashMap<String, String> {
    form_decode(parts.uri.query().unwrap_or(""))
        .into_iter()
        .collect()
}

fn form_decode(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn read<T: DeserializeOwned>(params: &HashMap<String, String>) -> std::result::Result<T, Refused> {
    T::deserialize(Params(params))
}

/// Reads `T`, reporting every parameter that does not read (not just the
/// first) in one 422 with `message`.
fn every_error<T: DeserializeOwned>(params: &HashMap<String, String>, message: &str) -> Result<T> {
    let mut params = params.clone();
    let mut errors = FieldErrors::new();
    loop {
        match read::<T>(&params) {
            Ok(value) if errors.is_empty() => return Ok(value),
            Ok(_) => {
                return Err(ApiError::Validation {
                    message: message.into(),
                    errors,
                });
            }
            Err(Refused {
                field: Some(field),
                message,
            }) if params.remove(field).is_some() => {
                errors.insert(field.to_string(), vec![message]);
            }
            Err(refused) => return Err(refused.into()),
        }
    }
}

/// Why a parameter did not read, and which.
#[derive(Debug)]
struct Refused {
    field: Option<&'static str>,
    message: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refused {}

impl de::Error for Refused {
    fn custom<M: fmt::Display>(message: M) -> Self {
        Refused {
            field: None,
            message: message.to_string(),
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Refused {
            field: Some(field),
            message: "is required".into(),
        }
    }
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> ApiError {
        ApiError::invalid(refused.field.unwrap_or("query"), refused.message)
    }
}

/// The decoded query string as a struct whose fields are its parameters.
struct Params<'a>(&'a HashMap<String, String>);

impl<'de> Deserializer<'de> for Params<'_> {
    type Error = Refused;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Refused> {
        Err(de::Error::custom("a query shape is a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Refused> {
        visitor.visit_map(InOrder {
            params: self.0,
            fields: fields.iter(),
            current: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Every field of the struct, present or not, in the order it declares
/// them.
struct InOrder<'a> {
    params: &'a HashMap<String, String>,
    fields: std::slice::Iter<'static, &'static str>,
    current: Option<(&'static str, Option<&'a str>)>,
}

impl<'de> MapAccess<'de> for InOrder<'_> {
    type Error = Refused;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, Refused> {
        let Some(&field) = self.fields.next() else {
            return Ok(None);
        };
        self.current = Some((field, self.params.get(field).map(String::as_str)));
        seed.deserialize(field.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, Refused> {
        let (field, value) = self.current.take().expect("a value follows its key");
        seed.deserialize(Text(value)).map_err(|mut refused| {
            refused.field.get_or_insert(field);
            refused
        })
    }
}

/// One parameter's text (`None` when it was left out).
struct Text<'a>(Option<&'a str>);

impl<'de> Deserializer<'de> for Text<'_> {
    type Error = Refused;

    fn deserialize_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, Refused> {
        match self.0 {
            Some(text) => visitor.visit_str(text),
            None => Err(Refused {
                field: None,
                message: "is required".into(),
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> std::result::Result<V::Value, Refused> {
        match self.0 {
            Some(_) => visitor.visit_some(self),
            None => visitor.visit_none(),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
