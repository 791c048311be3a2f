//! Extractors whose rejections speak the spec's error envelope.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::{ApiError, FieldErrors, Result};

mod strict;
pub use strict::text_problem;

/// A JSON body sent as `application/json` (anything else is a 415); unknown
/// properties, repeated keys, wrong types, missing fields and unsafe text
/// are 422s that name the field.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        if content_type(&req) != Some(true) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// `Some(true)` for `application/json` (any parameters), `Some(false)` for
/// any other declared type, `None` when the request declares none. A JSON
/// text sent as `text/plain` or a form is what a cross-site form post
/// looks like, so only the JSON media type is read as JSON.
fn content_type(req: &Request) -> Option<bool> {
    let value = req.headers().get(axum::http::header::CONTENT_TYPE)?;
    let essence = value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    Some(essence.is_some_and(|e| e.eq_ignore_ascii_case("application/json")))
}

/// A JSON body that may be left out entirely (an empty body is `None`).
pub struct OptionalApiJson<T>(pub Option<T>);

impl<S, T> FromRequest<S> for OptionalApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let declared = content_type(&req);
        if declared == Some(false) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalApiJson(None));
        }
        if declared.is_none() {
            return Err(ApiError::UnsupportedMediaType);
        }
        parse_json(&bytes).map(|v| OptionalApiJson(Some(v)))
    }
}

async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(crate::http::MAX_JSON_BODY)
        } else {
            ApiError::invalid("body", "could not be read")
        }
    })
}

/// Turns an already parsed JSON body (kept as a `Value` so an
/// Idempotency-Key fingerprint can be taken of it) into its typed form, with
/// the same 422s as a body parsed directly. No body reads as `{}`.
pub fn typed<T: DeserializeOwned>(body: Option<&Value>) -> Result<T> {
    let mut value = body
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(json_error)
}

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut value = strict::parse(bytes)?;
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(json_error)
}

/// In JSON (and JSON Schema) `2.0` is the integer 2; serde would refuse it
/// for an integer field, so whole-valued numbers become integers first.
fn integral_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

fn json_error(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    let last = path.rsplit('.').next().unwrap_or_default().to_string();
    let at_field = !matches!(last.as_str(), "" | "." | "?");
    let (field, message) = if !inner.is_data() {
        if at_field {
            (last, "has an invalid value".to_string())
        } else {
            ("body".to_string(), "must be a JSON object".to_string())
        }
    } else {
        let text = inner.to_string();
        // serde_json appends the position; the field path says more to a user.
        let text = text
            .rfind(" at line ")
            .map_or(text.as_str(), |i| &text[..i]);
        let backticked = |s: &str| s.split('`').nth(1).map(str::to_string);
        if let Some(rest) = text.strip_prefix("unknown field ") {
            (
                backticked(rest).unwrap_or_default(),
                "is not a recognised attribute".to_string(),
            )
        } else if let Some(rest) = text.strip_prefix("missing field ") {
            (backticked(rest).unwrap_or_default(), "is required".into())
        } else {
            (last, describe_data_error(text))
        }
    };
    let field = if field.is_empty() {
        "body".to_string()
    } else {
        field
    };
    let location = if path.is_empty() || path == "." {
        String::new()
    } else {
        format!(" (in {path})")
    };
    let mut errors = FieldErrors::new();
    errors.insert(field.clone(), vec![message.clone()]);
    ApiError::Validation {
        message: format!("{field} {message}{location}"),
        errors,
    }
}

/// Rewords serde's messages so they state the rule without repeating the
/// submitted value (which may be a clinical value that must not be echoed).
/// A message raised by a library's own parser (jiff for dates, ...) often
/// quotes the value, so only messages in our own phrasing ("must ...",
/// "is ...", as every `Deserialize` of ours words them) pass through.
fn describe_data_error(text: &str) -> String {
    if let Some(rest) = text.strip_prefix("unknown variant ") {
        let expected = rest.split_once(", expected ").map_or("", |(_, e)| e);
        if expected.is_empty() {
            return "is not one of the supported values".into();
        }
        return format!("must be {expected}");
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let expected = rest.split_once(", expected ").map(|(_, e)| e);
            return format!("must be {}", plain_expected(expected));
        }
    }
    if text.starts_with("must ") || text.starts_with("is ") {
        return text.to_string();
    }
    let lower = text.to_ascii_lowercase();
    if ["date", "year", "month", "day"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return "must be a calendar date that exists, written YYYY-MM-DD".into();
    }
    "has an invalid value".into()
}

/// serde's "expected ..." in words a client understands (Rust type names
/// mean nothing to it).
fn plain_expected(expected: Option<&str>) -> String {
    let Some(expected) = expected else {
        return "a valid value".into();
    };
    match expected {
        e if e.starts_with("struct ") || e == "a map" => "a JSON object".into(),
        "a sequence" => "a JSON array".into(),
        "a boolean" => "true or false".into(),
        "a string" => "a string".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        e => e.to_string(),
    }
}

/// Deserialize helper for PATCH fields where "absent" and "null" differ:
/// `#[serde(default, deserialize_with = "present")] field: Option<Option<T>>`.
pub fn present<'de, D, T>(de: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(de).map(Some)
}

/// Query-string parameters, with typed accessors that fail as 422s.
pub struct QueryParams(HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        let raw = parts.uri.query().unwrap_or("");
        let pairs: Vec<(String, String)> = form_decode(raw);
        Ok(QueryParams(pairs.into_iter().collect()))
    }
}

/// Submitted text as kept: trimmed, and blank text is no text.
pub fn trimmed(value: Option<String>) -> Option<String> {
    value
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
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

/// One page of a list: `page` from 1, `per_page` 1..=100 (default 20).
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub page: u32,
    pub per_page: u32,
}

impl Page {
    pub const MAX_PER_PAGE: u32 = 100;
    /// Far past any real list; keeps offsets well inside SQLite's integers.
    pub const MAX_PAGE: u32 = 1_000_000_000;

    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.per_page)
    }

    pub fn limit(&self) -> i64 {
        i64::from(self.per_page)
    }

    pub fn meta(&self, total_count: i64) -> Value {
        json!({"page": self.page, "per_page": self.per_page, "total_count": total_count})
    }
}

impl QueryParams {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// An optional numeric-or-portable reference filter (`person_id=12`);
    /// anything else is a 422 naming the parameter.
    pub fn reference(&self, name: &str) -> Result<Option<ResourceId>> {
        self.get(name)
            .map(|text| {
                ResourceId::parse(text).ok_or_else(|| {
                    ApiError::invalid(name, "must be a numeric id or a portable id (UUID)")
                })
            })
            .transpose()
    }

    /// `page` and `per_page`, both checked, both reported together.
    pub fn page(&self) -> Result<Page> {
        let mut errors = FieldErrors::new();
        let mut read = |name: &str, default: u32, max: u32| -> u32 {
            match self.get(name) {
                None => default,
                Some(text) => match text.parse::<u32>() {
                    Ok(n) if n >= 1 && n <= max => n,
                    _ => {
                        let rule = format!("must be an integer from 1 to {max}");
                        errors.insert(name.to_string(), vec![rule]);
                        default
                    }
                },
            }
        };
        let page = read("page", 1, Page::MAX_PAGE);
        let per_page = read("per_page", 20, Page::MAX_PER_PAGE);
        if errors.is_empty() {
            Ok(Page { page, per_page })
        } else {
            Err(ApiError::Validation {
                message: "invalid pagination parameters".into(),
                errors,
            })
        }
    }

    /// `updated_since` as a stored-form timestamp.
    pub fn updated_since(&self) -> Result<Option<String>> {
        self.timestamp("updated_since")
    }

    pub fn timestamp(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(text) => crate::time::parse(text).map(Some).ok_or_else(|| {
                ApiError::invalid(name, "must be an ISO 8601 date-time with an offset")
            }),
        }
    }
}

/// The `If-Match` header, when sent.
pub struct IfMatch(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        let value = parts
            .headers
            .get(axum::http::header::IF_MATCH)
            .map(|v| {
                v.to_str()
                    .map(|s| s.trim().to_string())
                    .map_err(|_| ApiError::invalid("If-Match", "must be an ETag string"))
            })
            .transpose()?;
        Ok(IfMatch(value))
    }
}

impl IfMatch {
    /// Optional precondition: stale → 409, absent → allowed.
    pub fn check(&self, current: &str) -> Result<()> {
        match &self.0 {
            Some(sent) if sent != current => Err(ApiError::stale_etag()),
            _ => Ok(()),
        }
    }

    /// Mandatory precondition: absent → 428, stale → 409.
    pub fn require(&self, current: &str) -> Result<()> {
        match &self.0 {
            None => Err(ApiError::precondition_required()),
            Some(_) => self.check(current),
        }
    }
}

/// The optional `Idempotency-Key` header: 1 to 255 visible ASCII
/// characters (anything else is a 422). See `db::idempotency`.
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self> {
        use crate::db::idempotency;
        let Some(value) = parts.headers.get(idempotency::HEADER) else {
            return Ok(IdempotencyKey(None));
        };
        match value.to_str() {
            Ok(key) if idempotency::valid_key(key) => Ok(IdempotencyKey(Some(key.to_string()))),
            _ => Err(ApiError::invalid(
                idempotency::HEADER,
                format!(
                    "must be 1 to {} visible ASCII characters",
                    idempotency::MAX_KEY_LENGTH
                ),
            )),
        }
    }
}

/// A `{id}` that names a record by its numeric id or its portable id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceId {
    Numeric(i64),
    Portable(String),
}

impl ResourceId {
    /// Only the canonical spellings name a record: `12` (not `012`, `+12`
    /// or `12.0`) and a hyphenated UUID (either case; not braced, URN or
    /// unhyphenated), so one record has one address.
    pub fn parse(text: &str) -> Option<ResourceId> {
        if let Some(n) = numeric_id(text) {
            return Some(ResourceId::Numeric(n));
        }
        if text.len() != 36 {
            return None;
        }
        uuid::Uuid::try_parse(text)
            .ok()
            .map(|u| ResourceId::Portable(u.hyphenated().to_string()))
    }

    /// SQL-ready parts: (numeric id or -1, portable id or "").
    pub fn sql_parts(&self) -> (i64, &str) {
        match self {
            ResourceId::Numeric(n) => (*n, ""),
            ResourceId::Portable(p) => (-1, p.as_str()),
        }
    }
}

/// In a body, a reference is a numeric id (number or numeric string) or a
/// portable id (UUID string).
impl<'de> serde::Deserialize<'de> for ResourceId {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        struct IdVisitor;
        const EXPECTED: &str = "must be a numeric id or a portable id (UUID)";

        impl serde::de::Visitor<'_> for IdVisitor {
            type Value = ResourceId;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a numeric id or a portable id (UUID)")
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<ResourceId, E> {
                i64::try_from(v)
                    .ok()
                    .filter(|n| *n >= 1)
                    .map(ResourceId::Numeric)
                    .ok_or_else(|| E::custom(EXPECTED))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<ResourceId, E> {
                if v >= 1 {
                    Ok(ResourceId::Numeric(v))
                } else {
                    Err(E::custom(EXPECTED))
                }
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<ResourceId, E> {
                ResourceId::parse(v).ok_or_else(|| E::custom(EXPECTED))
            }

            fn visit_f64<E: serde::de::Error>(self, _: f64) -> std::result::Result<ResourceId, E> {
                Err(E::custom(EXPECTED))
            }

            fn visit_bool<E: serde::de::Error>(
                self,
                _: bool,
            ) -> std::result::Result<ResourceId, E> {
                Err(E::custom(EXPECTED))
            }
        }

        de.deserialize_any(IdVisitor)
    }
}

/// A numeric id written canonically: digits only, no leading zero, from 1
/// to `i64::MAX`. Anything else (`01`, `+1`, `1.0`, ` 1`) is no id.
pub fn numeric_id(text: &str) -> Option<i64> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

/// The JSON schema of a body reference: numeric id, numeric string or UUID,
/// as `ResourceId`'s `Deserialize` reads it.
impl schemars::JsonSchema for ResourceId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ResourceReference".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [
            {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            {"type": "string", "pattern": "^[1-9][0-9]*$"},
            {"type": "string", "format": "uuid"},
        ]})
    }
}

/// `ResourceId`'s schema, for schemas still written by hand.
pub fn resource_ref_schema() -> Value {
    schemars::SchemaGenerator::default()
        .subschema_for::<ResourceId>()
        .to_value()
}

/// Reads one path parameter of the matched route.
pub fn path_param(params: &RawPathParams, name: &str) -> Option<String> {
    params
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// `{id}` as a numeric or portable id; anything else cannot name a record (404).
pub struct PathId(pub ResourceId);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let raw = raw_param(parts, state, "id").await?;
        ResourceId::parse(&raw)
            .map(PathId)
            .ok_or_else(|| ApiError::not_found("record"))
    }
}

/// `{id}` that must be numeric (people, memberships, grants, tokens).
pub struct PathNumericId(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for PathNumericId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let raw = raw_param(parts, state, "id").await?;
        numeric_id(&raw)
            .map(PathNumericId)
            .ok_or_else(|| ApiError::not_found("record"))
    }
}

pub async fn raw_param<S: Send + Sync>(parts: &mut Parts, state: &S, name: &str) -> Result<String> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|_| ApiError::internal("route has no path parameters"))?;
    path_param(&params, name).ok_or_else(|| ApiError::internal(format!("route has no {{{name}}}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
        #[serde(default, deserialize_with = "present")]
        email: Option<Option<String>>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        person: Inner,
    }

    fn field_of(err: ApiError) -> Vec<String> {
        match err {
            ApiError::Validation { errors, .. } => errors.into_keys().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn unknown_missing_and_mistyped_fields_are_named() {
        let e = parse_json::<Outer>(br#"{"person":{"name":"A","colour":"red"}}"#).unwrap_err();
        assert_eq!(field_of(e), ["colour"]);
        let e = parse_json::<Outer>(br#"{"person":{}}"#).unwrap_err();
        assert_eq!(field_of(e), ["name"]);
        let e = parse_json::<Outer>(br#"{"person":{"name":5}}"#).unwrap_err();
        assert_eq!(field_of(e), ["name"]);
        let e = parse_json::<Outer>(b"{not json").unwrap_err();
        assert_eq!(field_of(e), ["body"]);
    }

    #[test]
    fn absent_and_null_differ() {
        let o = parse_json::<Outer>(br#"{"person":{"name":"A"}}"#).unwrap();
        assert_eq!(o.person.email, None);
        let o = parse_json::<Outer>(br#"{"person":{"name":"A","email":null}}"#).unwrap();
        assert_eq!(o.person.email, Some(None));
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct WithRef {
        person_id: ResourceId,
    }

    #[test]
    fn references_in_bodies() {
        let parsed = parse_json::<WithRef>(br#"{"person_id": "12"}"#).unwrap();
        assert_eq!(parsed.person_id, ResourceId::Numeric(12));
        let parsed = parse_json::<WithRef>(br#"{"person_id": 12}"#).unwrap();
        assert_eq!(parsed.person_id, ResourceId::Numeric(12));
        // JSON Schema counts 12.0 as the integer 12.
        let parsed = parse_json::<WithRef>(br#"{"person_id": 12.0}"#).unwrap();
        assert_eq!(parsed.person_id, ResourceId::Numeric(12));
        for bad in [
            &br#"{}"#[..],
            br#"{"person_id": 0}"#,
            br#"{"person_id": "x"}"#,
            br#"{"person_id": 1.5}"#,
        ] {
            let e = parse_json::<WithRef>(bad).unwrap_err();
            assert_eq!(field_of(e), ["person_id"]);
        }
    }

    #[test]
    fn resource_ids() {
        assert_eq!(ResourceId::parse("12"), Some(ResourceId::Numeric(12)));
        assert_eq!(ResourceId::parse("0"), None);
        for not_canonical in ["12.0", "12.5", "012", "+12", " 12", "-1", "1e1"] {
            assert_eq!(ResourceId::parse(not_canonical), None, "{not_canonical}");
        }
        let upper = "0192A5B0-0000-7000-8000-000000000000";
        assert_eq!(
            ResourceId::parse(upper),
            Some(ResourceId::Portable(upper.to_ascii_lowercase()))
        );
        for not_canonical in [
            "0192a5b000007000800000000000000",
            "{0192a5b0-0000-7000-8000-000000000000}",
            "urn:uuid:0192a5b0-0000-7000-8000-000000000000",
        ] {
            assert_eq!(ResourceId::parse(not_canonical), None, "{not_canonical}");
        }
        assert!(matches!(
            ResourceId::parse("0192a5b0-0000-7000-8000-000000000000"),
            Some(ResourceId::Portable(_))
        ));
        assert_eq!(ResourceId::parse("abc"), None);
        assert_eq!(percent_decode("a%20b+c%2"), "a b c%2");
    }
}

#[cfg(test)]
mod enum_tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "snake_case")]
    enum Colour {
        Red,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct WithEnum {
        colour: Colour,
        count: Option<u32>,
    }

    fn only_error(err: ApiError) -> (String, String) {
        match err {
            ApiError::Validation { errors, .. } => {
                let (k, v) = errors.into_iter().next().unwrap();
                (k, v.join(" "))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_values_are_named_without_echoing_them() {
        let (field, _) = only_error(parse_json::<WithEnum>(br#"{"colour": null}"#).unwrap_err());
        assert_eq!(field, "colour");
        let (field, message) =
            only_error(parse_json::<WithEnum>(br#"{"colour": "blue"}"#).unwrap_err());
        assert_eq!(field, "colour");
        assert!(
            !message.contains("blue") && message.contains("red"),
            "{message}"
        );
        let (field, message) = only_error(
            parse_json::<WithEnum>(br#"{"colour": "red", "count": "seventeen"}"#).unwrap_err(),
        );
        assert_eq!(field, "count");
        assert!(!message.contains("seventeen"), "{message}");
        let (field, _) = only_error(parse_json::<WithEnum>(br#"{"colour": "red", "#).unwrap_err());
        assert_eq!(field, "body");
    }
}
