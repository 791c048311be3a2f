//! Portable export, dry run and import handlers: parse, call the rule,
//! shape the response. Bundles are sensitive health data: every response
//! is `no-store` (as every household response) and nothing of a bundle or
//! its passphrase is logged.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::envelope::{self, Envelope, PASSPHRASE_HEADER, Passphrase};
use super::export::{self, Version};
use super::import;
use super::model::{ImportSummary, Payload};
use crate::auth::{AccessLevel, Actor};
use crate::db::idempotency::SavedResponse;
use crate::domain::{ResourceId, vocabulary};
use crate::error::{ApiError, Result};
use crate::household::{audit, people};
use crate::http::openapi::{Api, Op};
use crate::http::query::{OneOf, Query};
use crate::http::replay::Idempotent;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Portability";
const EXPORT: &str = "/households/{household_id}/portable_export";
const DRY_RUN: &str = "/households/{household_id}/portable_imports/dry_run";
const IMPORT: &str = "/households/{household_id}/portable_imports";
/// Largest import body: a bundle of years of a household's takes.
pub const MAX_IMPORT_BODY: usize = 32 * 1024 * 1024;

pub fn routes(api: Api) -> Api {
    let passphrase = json!({"type": "string", "minLength": envelope::MIN_PASSPHRASE_CHARS,
        "maxLength": envelope::MAX_PASSPHRASE_BYTES});
    api.route(
        Op::get(EXPORT, "exportPortableHouseholdBundle", TAG)
            .summary("Export the household as an encrypted portable bundle")
            .description(
                "The records the caller may see (as in the sync snapshot) as a \
                 service.portable.encrypted.v1 envelope: argon2id derives an AES-256-GCM key \
                 from the passphrase with a random salt; the envelope holds the KDF \
                 parameters, salt, nonce, the hex SHA-256 checksum of the plaintext and the \
                 base64 ciphertext. The plaintext is service.portable.v1 by default (without \
                 health events, pause periods or dose outcomes); portable_format=\
                 service.portable.v2 or version=2 selects v2 (with health events, pause periods \
                 and persisted dose outcomes). The whole envelope is sensitive health data. \
                 Key derivations run a few at a time: when too many exports and imports wait \
                 for one, the answer is 429 with Retry-After. Audited.",
            )
            .header(
                PASSPHRASE_HEADER,
                true,
                passphrase.clone(),
                "The passphrase the bundle is encrypted with; never sent in a URL or body",
            )
            .query_params::<ExportQuery>()
            .errors(&[422])
            .ok::<Envelope>(),
        get(export_bundle),
    )
    .route(
        Op::post(DRY_RUN, "dryRunPortableImport", TAG)
            .summary("Check an encrypted bundle against the household without writing")
            .description(
                "Decrypts the bundle (the envelope as exported, bare or inside {\"data\": ...}) \
                 and runs the whole import through the same rules, then rolls it back: record \
                 counts per collection, conflicts (collection, incoming portable id, field, \
                 existing portable id) and validation errors. Writes nothing. A wrong \
                 passphrase or a changed byte is one 422 on `bundle`. Only owners, \
                 administrators and members who manage a person or hold inventory or location \
                 management may import: anyone else is 403 before the bundle is decrypted. \
                 Key derivations run a few at a time; a full queue is 429 with Retry-After.",
            )
            .header(
                PASSPHRASE_HEADER,
                true,
                passphrase.clone(),
                "The bundle's passphrase",
            )
            .body::<Envelope>()
            .errors(&[422])
            .ok::<ImportSummary>(),
        post(dry_run).layer(DefaultBodyLimit::max(MAX_IMPORT_BODY)),
    )
    .route(
        Op::post(IMPORT, "createPortableImport", TAG)
            .summary("Import an encrypted bundle into the household")
            .description(
                "Applies the bundle in one transaction, or nothing: any conflict or validation \
                 error is a 422 listing them (run the dry run first). Records keep their \
                 portable ids; existing takes stay authoritative; outcomes are restored without \
                 administering doses or changing stock; the importer needs manage access to \
                 every affected person. Accepts service.portable.v1 and v2 payloads. Audited \
                 as the importing member. Bodies up to 32 MiB. Who may import, and the 429 of a \
                 full key derivation queue, as for the dry run.",
            )
            .header(
                PASSPHRASE_HEADER,
                true,
                passphrase,
                "The bundle's passphrase",
            )
            .idempotency_key()
            .body::<Envelope>()
            .errors(&[422])
            .created::<ImportSummary>(),
        post(create_import).layer(DefaultBodyLimit::max(MAX_IMPORT_BODY)),
    )
}

/// The passphrase header; never logged or echoed.
pub fn passphrase(headers: &HeaderMap) -> Result<Passphrase> {
    let value = headers
        .get(PASSPHRASE_HEADER)
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::invalid(PASSPHRASE_HEADER, "must be visible ASCII text"))
        })
        .transpose()?;
    Passphrase::new(value)
}

/// The plaintext format an export is asked for, by name or by number.
#[derive(Deserialize, JsonSchema)]
struct ExportQuery {
    /// The plaintext format (default service.portable.v1)
    portable_format: Option<OneOf<FormatName>>,
    /// Short form of portable_format
    version: Option<OneOf<FormatNumber>>,
}

vocabulary!(
    /// `portable_format`: a format's name (`Version::format`).
    FormatName { V1 => "service.portable.v1", V2 => "service.portable.v2" }
);

vocabulary!(
    /// `version`: a format's number.
    FormatNumber { V1 => "1", V2 => "2" }
);

fn version_of(query: ExportQuery) -> Result<Version> {
    let by_format = query.portable_format.map(|OneOf(name)| match name {
        FormatName::V1 => Version::V1,
        FormatName::V2 => Version::V2,
    });
    let by_version = query.version.map(|OneOf(number)| match number {
        FormatNumber::V1 => Version::V1,
        FormatNumber::V2 => Version::V2,
    });
    match (by_format, by_version) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid(
            "version",
            "disagrees with portable_format",
        )),
        (a, b) => Ok(a.or(b).unwrap_or(Version::V1)),
    }
}

/// Builds and seals a bundle, then audits it. The turn on the key
/// derivation pool is taken first, so a busy server refuses (429) before
/// it reads the household.
pub async fn sealed_bundle(
    state: &AppState,
    actor: Actor,
    version: Version,
    passphrase: Passphrase,
) -> Result<Envelope> {
    let slot = state
        .part::<crate::portable::kdf_pool::KdfPool>()
        .slot()
        .await?;
    let reader = actor.clone();
    let plain = state
        .db
        .read(move |conn| export::payload(conn, &reader, version))
        .await?;
    let sealed = slot.run(move || envelope::seal(plain, &passphrase)).await?;
    state
        .db
        .write(move |tx| {
            audit::record(
                tx,
                actor.household_id,
                Some(actor.membership_id),
                "portable.exported",
                ("household", actor.household_id),
                json!({"format": version.format(), "encrypted": true}),
            )
        })
        .await?;
    Ok(sealed)
}

async fn export_bundle(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    Query(query): Query<ExportQuery>,
) -> Result<Response> {
    let version = version_of(query)?;
    let passphrase = passphrase(&headers)?;
    let sealed = sealed_bundle(&state, actor, version, passphrase).await?;
    Ok(respond::ok(sealed))
}

/// The envelope as exported: bare, or still inside the export's `data`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    Wrapped { data: Envelope },
    Bare(Envelope),
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn body_bytes(body: std::result::Result<Bytes, BytesRejection>) -> Result<Bytes> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(MAX_IMPORT_BODY)
        } else {
            ApiError::invalid("body", "could not be read")
        }
    })
}

/// Opens a bundle for a caller who may import (checked first: nothing of
/// the bundle is decrypted for anyone else), with argon2id and AES-GCM on
/// the key derivation pool: the payload, and a digest of the body for
/// Idempotency-Key fingerprints.
pub async fn open_bundle(
    state: &AppState,
    actor: &Actor,
    headers: &HeaderMap,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<(Payload, String)> {
    let importer = actor.clone();
    state
        .db
        .read(move |conn| import::require_may_import(conn, &importer))
        .await?;
    if !is_json(headers) {
        return Err(ApiError::UnsupportedMediaType);
    }
    let passphrase = passphrase(headers)?;
    let bytes = body_bytes(body)?;
    state
        .part::<super::kdf_pool::KdfPool>()
        .run(move || {
            let digest: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let envelope = match serde_json::from_slice::<Body>(&bytes) {
                Ok(Body::Wrapped { data }) | Ok(Body::Bare(data)) => data,
                Err(_) => return Err(envelope::unreadable()),
            };
            drop(bytes);
            let plain = envelope::open(envelope, &passphrase)?;
            Ok((import::parse(&plain)?, digest))
        })
        .await
}

async fn dry_run(
    State(state): State<AppState>,
    actor: Actor,
    headers: HeaderMap,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let (payload, _) = open_bundle(&state, &actor, &headers, body).await?;
    let summary = state
        .db
        .write(move |tx| import::run(tx, &actor, payload, false))
        .await?;
    Ok(respond::ok(summary))
}

async fn create_import(
    State(state): State<AppState>,
    actor: Actor,
    request: Idempotent,
    headers: HeaderMap,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<Response> {
    let (payload, digest) = open_bundle(&state, &actor, &headers, body).await?;
    let people: Vec<String> = payload
        .records
        .people
        .iter()
        .filter_map(|p| {
            p.get("portable_id")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })
        .collect();
    request
        .write(
            &state.db,
            (actor, people),
            Some(&json!({"sha256": digest})),
            |conn, actor, bundle_people, _| {
                // The importer still manages every person of the bundle.
                for person in bundle_people {
                    people::find_for(
                        conn,
                        actor,
                        &ResourceId::Portable(person.clone()),
                        AccessLevel::Manage,
                    )?;
                }
                Ok(())
            },
            move |tx, actor, _| {
                let summary = import::run(tx, actor, payload, true)?;
                SavedResponse::data(StatusCode::CREATED, &summary)
            },
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_names_are_the_formats() {
        assert_eq!(FormatName::V1.as_str(), Version::V1.format());
        assert_eq!(FormatName::V2.as_str(), Version::V2.format());
    }
}
