//! Idempotency keys for queued writes: a client that lost the answer to a
//! write resends the identical request with the same `Idempotency-Key` and
//! gets the saved response (status, body and ETag) without the write
//! running again.
//!
//! Rules (the spec's "Limits", idempotency rules 1–5):
//! - A key belongs to one member in one household (whatever credential the
//!   member uses, so a replay after re-authentication works); it is remembered for
//!   [`WINDOW_HOURS`] and then ignored and purged.
//! - The same key with a different request (method, path or body) is a 409
//!   `idempotency_key_reused`.
//! - Current authority is checked before anything is replayed: the caller's
//!   `recheck` sees the saved response (so it can check every record the
//!   response names) and runs before it is returned, so revoked access never
//!   gets the saved result. A write that runs checks its own authority in its
//!   rule, as it does without a key.
//! - Only successes are saved: a failed write leaves nothing (its
//!   transaction rolls back), so a retry runs it again.
//!
//! Everything happens inside the caller's one write transaction. The body is
//! kept as JSON text and the status as an integer so any operation (pause
//! periods, sync batches, stock removals, location memberships) can use it.

use crate::db::PrepareKept;
use axum::http::StatusCode;
use rusqlite::{Connection, OptionalExtension, params};

use super::WriteTx;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::Versioned;
use crate::error::{ApiError, Result};

/// The request header that carries the key.
pub const HEADER: &str = "Idempotency-Key";
/// How long a saved response is replayed.
pub const WINDOW_HOURS: i64 = 24;
/// Longest key accepted (visible ASCII characters).
pub const MAX_KEY_LENGTH: usize = 255;
/// At most this many expired rows are purged by one write.
const PURGE_BATCH: i64 = 100;

/// The error code of a key sent again with a different request.
pub const KEY_REUSED: &str = "idempotency_key_reused";

/// Whether `key` is an acceptable Idempotency-Key: 1 to 255 visible ASCII
/// characters.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LENGTH && key.bytes().all(|b| b.is_ascii_graphic())
}

/// SHA-256 (lowercase hex) of the method, the path and the body. A JSON body
/// is taken in its canonical form (object keys sorted, no whitespace), so
/// the same body sent with other spacing is the same request. Each part is
/// length-prefixed so that no two different requests run together.
pub fn fingerprint(method: &str, path: &str, body: Option<&Value>) -> String {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut hasher = Sha256::new();
    for part in [method.to_ascii_uppercase().as_str(), path, body.as_str()] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The identity of one request for replay purposes.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The Idempotency-Key, when sent; without one nothing is saved or replayed.
    pub key: Option<String>,
    pub method: String,
    pub path: String,
    pub fingerprint: String,
}

impl Replay {
    pub fn new(key: Option<String>, method: &str, path: &str, body: Option<&Value>) -> Replay {
        Replay {
            key,
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            fingerprint: fingerprint(method, path, body),
        }
    }
}

/// A response as saved and replayed: status, JSON body text and ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedResponse {
    pub status: u16,
    pub body: String,
    pub etag: Option<String>,
}

impl SavedResponse {
    /// `{"data": ...}` with the record's ETag.
    pub fn tagged<T: Serialize + Versioned>(status: StatusCode, data: &T) -> Result<SavedResponse> {
        let mut saved = SavedResponse::data(status, data)?;
        saved.etag = Some(data.etag());
        Ok(saved)
    }

    /// `{"data": ...}` without an ETag (records that have no version).
    pub fn data<T: Serialize>(status: StatusCode, data: &T) -> Result<SavedResponse> {
        Ok(SavedResponse {
            status: status.as_u16(),
            body: to_json(&json!({ "data": data }))?,
            etag: None,
        })
    }

    /// 204 No Content. `about` is kept with the key, never sent: what the
    /// write touched, so a replay can check the caller's authority over it
    /// after the record itself is gone.
    pub fn no_content<T: Serialize>(about: &T) -> Result<SavedResponse> {
        Ok(SavedResponse {
            status: StatusCode::NO_CONTENT.as_u16(),
            body: to_json(about)?,
            etag: None,
        })
    }
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| ApiError::internal(format!("cannot serialise a response: {e}")))
}

/// Who writes under a key: the acting member of a household. Kept as a
/// trait so storage need not know the `Actor` of `auth`.
pub trait KeyOwner {
    fn household_id(&self) -> i64;
    fn membership_id(&self) -> i64;
}

/// Whose keys these are: the acting member, not the credential. A client
/// that gets a 401, re-authenticates (a new token) and replays its saved
/// batch with the original key must get the saved response, not a second
/// write (the spec's authentication rule 9). Members never share keys.
pub fn key_owner(owner: &impl KeyOwner) -> String {
    format!("membership:{}", owner.membership_id())
}

fn cutoff() -> crate::domain::Timestamp {
    crate::domain::Timestamp::from_jiff(
        jiff::Timestamp::now() - jiff::SignedDuration::from_hours(WINDOW_HOURS),
    )
}

/// Runs a write under an optional Idempotency-Key, in the caller's
/// transaction. A saved response for the key is replayed (409 when it was
/// saved for a different request) only after `recheck` (the operation's
/// current permission check, given the saved response) has passed;
/// otherwise `write` runs (its rule checks authority) and its response is
/// saved with the key.
pub fn run<A, W>(
    conn: &WriteTx,
    actor: &impl KeyOwner,
    replay: &Replay,
    recheck: A,
    write: W,
) -> Result<SavedResponse>
where
    A: FnOnce(&Connection, &SavedResponse) -> Result<()>,
    W: FnOnce(&WriteTx) -> Result<SavedResponse>,
{
    let Some(key) = replay.key.as_deref() else {
        return write(conn);
    };
    let cutoff = cutoff();
    purge_expired(conn, &cutoff)?;
    let credential = key_owner(actor);
    if let Some((fingerprint, saved)) = find(conn, actor.household_id(), &credential, key, &cutoff)?
    {
        if fingerprint != replay.fingerprint {
            return Err(ApiError::conflict(
                KEY_REUSED,
                "this Idempotency-Key was already used for a different request; use a new key for a changed request",
            ));
        }
        recheck(conn, &saved)?;
        return Ok(saved);
    }
    let saved = write(conn)?;
    insert(
        conn,
        actor.household_id(),
        &credential,
        key,
        replay,
        &saved,
        &crate::domain::Timestamp::now(),
    )?;
    Ok(saved)
}

/// Deletes up to [`PURGE_BATCH`] rows older than the window.
fn purge_expired(conn: &WriteTx, cutoff: &str) -> Result<()> {
    conn.prepare_kept(
        "DELETE FROM idempotency_keys WHERE id IN (
             SELECT id FROM idempotency_keys WHERE created_at <= ?1 ORDER BY created_at LIMIT ?2)",
    )?
    .execute(params![cutoff, PURGE_BATCH])?;
    Ok(())
}

/// The saved (fingerprint, response) of a key still inside the window. An
/// expired row for the key is removed so the key can be saved afresh.
fn find(
    conn: &Connection,
    household_id: i64,
    credential: &str,
    key: &str,
    cutoff: &str,
) -> Result<Option<(String, SavedResponse)>> {
    conn.prepare_kept(
        "DELETE FROM idempotency_keys
         WHERE household_id = ?1 AND credential = ?2 AND key = ?3 AND created_at <= ?4",
    )?
    .execute(params![household_id, credential, key, cutoff])?;
    Ok(conn
        .prepare_kept(
            "SELECT fingerprint, status, body, etag FROM idempotency_keys
             WHERE household_id = ?1 AND credential = ?2 AND key = ?3",
        )?
        .query_row(params![household_id, credential, key], |r| {
            Ok((
                r.get(0)?,
                SavedResponse {
                    status: r.get(1)?,
                    body: r.get(2)?,
                    etag: r.get(3)?,
                },
            ))
        })
        .optional()?)
}

fn insert(
    conn: &WriteTx,
    household_id: i64,
    credential: &str,
    key: &str,
    replay: &Replay,
    saved: &SavedResponse,
    now: &str,
) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO idempotency_keys
           (household_id, credential, key, method, path, fingerprint, status, body, etag,
            created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        household_id,
        credential,
        key,
        replay.method,
        replay.path,
        replay.fingerprint,
        saved.status,
        saved.body,
        saved.etag,
        now,
    ])?;
    Ok(())
}

/// A saved response is answered as it was first sent: status, JSON body and ETag.
impl axum::response::IntoResponse for SavedResponse {
    fn into_response(self) -> axum::response::Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        if status == StatusCode::NO_CONTENT {
            return status.into_response();
        }
        let mut response = (
            status,
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            self.body,
        )
            .into_response();
        if let Some(value) = self
            .etag
            .and_then(|e| axum::http::HeaderValue::from_str(&e).ok())
        {
            response
                .headers_mut()
                .insert(axum::http::header::ETAG, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_sha256_hex_of_method_path_and_body() {
        let body = json!({"medication_pause_period": {"reason": "other"}});
        let a = fingerprint(
            "POST",
            "/households/1/medication_pause_periods",
            Some(&body),
        );
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        // Deterministic, and the method's case does not matter.
        assert_eq!(
            a,
            fingerprint(
                "post",
                "/households/1/medication_pause_periods",
                Some(&body)
            )
        );
        // Each part counts.
        assert_ne!(
            a,
            fingerprint("PUT", "/households/1/medication_pause_periods", Some(&body))
        );
        assert_ne!(
            a,
            fingerprint(
                "POST",
                "/households/2/medication_pause_periods",
                Some(&body)
            )
        );
        let other = json!({"medication_pause_period": {"reason": "side_effects"}});
        assert_ne!(
            a,
            fingerprint(
                "POST",
                "/households/1/medication_pause_periods",
                Some(&other)
            )
        );
        assert_ne!(
            fingerprint("POST", "/p", None),
            fingerprint("POST", "/p", Some(&json!({})))
        );
    }

    #[test]
    fn fingerprint_ignores_spacing_and_key_order() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": {"c": [1, 2]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":{"c":[1,2]},"a":1}"#).unwrap();
        assert_eq!(
            fingerprint("POST", "/x", Some(&a)),
            fingerprint("POST", "/x", Some(&b))
        );
    }

    #[test]
    fn parts_cannot_run_together() {
        assert_ne!(
            fingerprint("POST", "/ab", None),
            fingerprint("POST", "/a", None)
        );
        // Moving text between path and body changes the fingerprint.
        let body = json!("b");
        assert_ne!(
            fingerprint("POST", "/a\"b\"", None),
            fingerprint("POST", "/a", Some(&body))
        );
    }

    #[test]
    fn known_digest() {
        // Computed independently (Python hashlib over the length-prefixed parts).
        assert_eq!(
            fingerprint("GET", "/", None),
            "975d4d6b1234968642ee96c943739619291e4381c6eda0c73db4a6d4d1c4c88e"
        );
    }

    #[test]
    fn keys() {
        assert!(valid_key("a"));
        assert!(valid_key(&"k".repeat(255)));
        assert!(!valid_key(""));
        assert!(!valid_key(&"k".repeat(256)));
        assert!(!valid_key("has space"));
        assert!(!valid_key("tab\t"));
        assert!(!valid_key("café"));
    }
}
