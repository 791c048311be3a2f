//! Versions of records: the strong ETag a record carries and the version a
//! client expects when it writes (sent as `If-Match`).

use crate::error::{ApiError, Result};

/// The strong ETag of a versioned record: changes with every write to it.
pub fn etag(portable_id: &str, lock_version: i64) -> String {
    format!("\"{portable_id}.{lock_version}\"")
}

/// A resource that has a version, so its responses carry an ETag.
pub trait Versioned {
    fn etag(&self) -> String;
}

impl<T: Versioned> Versioned for &T {
    fn etag(&self) -> String {
        (*self).etag()
    }
}

/// The version a client expects the record to be at: the `If-Match` header,
/// when sent (the extractor lives in `http::extract`).
pub struct IfMatch(pub Option<String>);

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

/// The `If-Match` header, when sent.
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for IfMatch {
    type Rejection = crate::error::ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> crate::error::Result<Self> {
        let value = parts
            .headers
            .get(axum::http::header::IF_MATCH)
            .map(|v| {
                v.to_str().map(|s| s.trim().to_string()).map_err(|_| {
                    crate::error::ApiError::invalid("If-Match", "must be an ETag string")
                })
            })
            .transpose()?;
        Ok(IfMatch(value))
    }
}
