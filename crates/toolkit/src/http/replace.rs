//! PUT bodies: a replace carries the whole writable representation. A field
//! left out is a 422 naming it, never a silent reset to a default, so a
//! client that only knows some fields cannot wipe the others by accident.

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::extract::ApiJson;
use crate::domain::body::typed;
use crate::error::{ApiError, Problems, Result};

/// A request body that can replace a record whole.
pub trait Whole: DeserializeOwned {
    /// The key the attributes sit under (`{"location": {...}}`).
    const KEY: &'static str;
    /// Every attribute a replace must carry (null where the field may be
    /// empty). The replace request schema lists the same fields as required.
    const FIELDS: &'static [&'static str];
}

/// The body of a PUT: parsed like any JSON body, then refused with every
/// missing field named before the rule sees it.
pub struct ReplaceJson<T>(pub T);

impl<S, T> FromRequest<S> for ReplaceJson<T>
where
    S: Send + Sync,
    T: Whole,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let ApiJson(value) = ApiJson::<Value>::from_request(req, state).await?;
        require_whole::<T>(&value)?;
        typed(Some(&value)).map(ReplaceJson)
    }
}

/// 422 naming each field of `T::FIELDS` missing under `T::KEY`. A body of
/// another shape is left to the typed parse, which names what is wrong.
pub fn require_whole<T: Whole>(body: &Value) -> Result<()> {
    let Some(attributes) = body.get(T::KEY).and_then(Value::as_object) else {
        return Ok(());
    };
    let mut problems = Problems::default();
    for field in T::FIELDS {
        if !attributes.contains_key(*field) {
            problems.add(
                field,
                "is required: a replace (PUT) carries every attribute; use PATCH to change some",
            );
        }
    }
    problems.check("a replace must carry the whole record")
}
