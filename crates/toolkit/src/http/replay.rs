//! The one idempotent-write handler: every operation that takes an
//! `Idempotency-Key` runs its write through [`Idempotent::write`].

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use rusqlite::Connection;
use serde_json::Value;

use crate::db::idempotency::{self, KeyOwner, Replay, SavedResponse};
use crate::db::{Db, WriteTx};
use crate::error::{ApiError, Result};
use crate::http::extract::IdempotencyKey;

/// A write request that may carry an Idempotency-Key: the key (checked as
/// [`IdempotencyKey`] checks it), the method and the path it was sent to.
pub struct Idempotent {
    key: Option<String>,
    method: String,
    path: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Idempotent {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let IdempotencyKey(key) = IdempotencyKey::from_request_parts(parts, state).await?;
        Ok(Idempotent {
            key,
            method: parts.method.as_str().to_string(),
            path: parts.uri.path().to_string(),
        })
    }
}

impl Idempotent {
    /// Runs `write` in one write transaction under the key (see
    /// `db::idempotency::run`): a saved response for an identical request
    /// is answered again once `recheck` has passed, otherwise `write` runs
    /// and its response is saved. `body` is the request as fingerprinted;
    /// both steps are given the writing `owner` and the `context` they share.
    pub async fn write<O, C, A, W>(
        self,
        db: &Db,
        (owner, context): (O, C),
        body: Option<&Value>,
        recheck: A,
        write: W,
    ) -> Result<Response>
    where
        O: KeyOwner + Send + 'static,
        C: Send + 'static,
        A: FnOnce(&Connection, &O, &C, &SavedResponse) -> Result<()> + Send + 'static,
        W: FnOnce(&WriteTx, &O, &C) -> Result<SavedResponse> + Send + 'static,
    {
        let replay = Replay::new(self.key, &self.method, &self.path, body);
        let saved = db
            .write(move |tx| {
                idempotency::run(
                    tx,
                    &owner,
                    &replay,
                    |conn, saved| recheck(conn, &owner, &context, saved),
                    |tx| write(tx, &owner, &context),
                )
            })
            .await?;
        Ok(saved.into_response())
    }
}
