//! Extractors whose rejections speak the spec's error envelope.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::domain::body::{integral_numbers, json_error};
use crate::domain::{ResourceId, numeric_id};
use crate::error::{ApiError, Result};

mod strict;

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

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    // Most bodies are well formed: read them straight into their type, and
    // keep the checked `Value` (which can name the field at fault) for the
    // rest. Either way the same rules hold.
    if strict::reads_as_written(bytes)
        && let Ok(typed) = serde_json::from_slice(bytes)
    {
        return Ok(typed);
    }
    let mut value = strict::parse(bytes)?;
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(json_error)
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
    use crate::domain::present;

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
