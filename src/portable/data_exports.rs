//! `getDataExport`: the household's data in one of four modes, each of the
//! records the caller may see, audited (`data_export.downloaded`) and sent
//! `no-store` like every household response.
//!
//! - `health_data_json`: plaintext `service.health_data.v1` (the v2
//!   collections with health events), streamed as it is read.
//! - `takes_csv`: one RFC 4180 row per take, times in the household zone;
//!   a cell a spreadsheet would run as a formula is neutralised.
//! - `backup_zip`: a ZIP holding `backup.json` (`service.backup.v1`: the
//!   portable v2 payload) and the people's avatars.
//! - `encrypted_migration_bundle`: the v2 encrypted bundle of
//!   `exportPortableHouseholdBundle` (passphrase header required).

use std::io::Write;

use axum::extract::{RawPathParams, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rusqlite::Connection;
use serde_json::json;

use super::envelope::{self, PASSPHRASE_HEADER};
use super::export::{self, Version};
use super::routes::{passphrase, sealed_bundle};
use crate::auth::Actor;
use crate::care;
use crate::error::{ApiError, Result};
use crate::household;
use crate::household::audit;
use crate::http::extract::path_param;
use crate::http::openapi::{Api, Op};
use crate::http::{respond, stream};
use crate::state::AppState;

const PATH: &str = "/households/{household_id}/data_exports/{mode}";
pub const HEALTH_DATA_FORMAT: &str = "service.health_data.v1";
pub const BACKUP_FORMAT: &str = "service.backup.v1";

/// The modes, in the order the 404 lists them.
pub const MODES: &[&str] = &[
    "encrypted_migration_bundle",
    "backup_zip",
    "health_data_json",
    "takes_csv",
];

pub fn routes(api: Api) -> Api {
    api.single_schema(
        "DataExport",
        json!({
            "description": "health_data_json: a service.health_data.v1 payload; encrypted_migration_bundle: a service.portable.encrypted.v1 envelope",
            "oneOf": [
                {"type": "object", "required": ["format", "scope", "exported_at", "source_instance_id", "records"],
                 "properties": {"format": {"const": HEALTH_DATA_FORMAT}, "records": {"type": "object"}}},
                {"$ref": "#/components/schemas/Envelope"},
            ],
        }),
    )
    .route(
        Op::get(PATH, "getDataExport", "Portability")
            .summary("Download the household's data in one export mode")
            .description(
                "mode is one of encrypted_migration_bundle (the v2 encrypted bundle; needs the \
                 X-Service-Portable-Passphrase header; 429 with Retry-After while too many \
                 exports and imports wait for a key derivation), backup_zip (application/zip holding \
                 backup.json in the service.backup.v1 format and the people's avatars), \
                 health_data_json (plaintext service.health_data.v1) or takes_csv (text/csv, \
                 one RFC 4180 row per take with person, medication, dose and the time in the \
                 household zone; cells starting with =, +, -, @, tab or carriage return are \
                 prefixed with ' so a spreadsheet never runs them). An unknown mode is a 404 \
                 listing the modes. Only records the caller may see; audited; no-store.",
            )
            .header(
                PASSPHRASE_HEADER,
                false,
                json!({"type": "string", "minLength": envelope::MIN_PASSPHRASE_CHARS}),
                "Required for encrypted_migration_bundle only",
            )
            .binary_ok(&["text/csv", "application/zip"])
            .ok_named("DataExportResponse")
            .errors(&[404, 422]),
        get(data_export),
    )
}

async fn data_export(
    State(state): State<AppState>,
    actor: Actor,
    params: RawPathParams,
    headers: HeaderMap,
) -> Result<Response> {
    let mode = path_param(&params, "mode").unwrap_or_default();
    if !MODES.contains(&mode.as_str()) {
        return Err(ApiError::NotFound(format!(
            "no such data export mode; the modes are {}",
            MODES.join(", ")
        )));
    }
    if mode == "encrypted_migration_bundle" {
        let passphrase = passphrase(&headers)?;
        let sealed = sealed_bundle(&state, actor.clone(), Version::V2, passphrase).await?;
        audited(&state, &actor, &mode).await?;
        return Ok(respond::ok(sealed));
    }
    audited(&state, &actor, &mode).await?;
    match mode.as_str() {
        "health_data_json" => {
            stream::json(&state.db, move |conn, out| {
                out.write_all(b"{\"data\":")
                    .map_err(crate::domain::json_object::write_error)?;
                export::write_payload_as(conn, &actor, HEALTH_DATA_FORMAT, Version::V2, out)?;
                out.write_all(b"}")
                    .map_err(crate::domain::json_object::write_error)
            })
            .await
        }
        "takes_csv" => {
            let csv = state.db.read(move |conn| takes_csv(conn, &actor)).await?;
            Ok(download(csv, "text/csv; charset=utf-8", "takes.csv"))
        }
        _ => {
            let zip = state.db.read(move |conn| backup_zip(conn, &actor)).await?;
            Ok(download(zip, "application/zip", "pillbox-backup.zip"))
        }
    }
}

async fn audited(state: &AppState, actor: &Actor, mode: &str) -> Result<()> {
    let actor = actor.clone();
    let mode = mode.to_string();
    state
        .db
        .write(move |tx| {
            audit::record(
                tx,
                actor.household_id,
                Some(actor.membership_id),
                "data_export.downloaded",
                ("household", actor.household_id),
                json!({"mode": mode}),
            )
        })
        .await
}

fn download(body: Vec<u8>, content_type: &'static str, file_name: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// One CSV cell (RFC 4180): quoted when it holds a comma, quote or line
/// break; a leading `=`, `+`, `-`, `@`, tab or carriage return gets a `'`
/// first so that a spreadsheet shows it as text instead of running it.
pub fn csv_cell(text: &str) -> String {
    let neutral = match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_string(),
    };
    if neutral.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", neutral.replace('"', "\"\""))
    } else {
        neutral
    }
}

pub const CSV_HEADER: &[&str] = &[
    "taken_at",
    "person",
    "medication",
    "dose_amount",
    "dose_unit",
    "source_type",
    "location",
    "take_portable_id",
];

fn takes_csv(conn: &Connection, actor: &Actor) -> Result<Vec<u8>> {
    let tz = crate::household::store::time_zone(conn, actor.household_id)?;
    let mut out = Vec::new();
    let line = |out: &mut Vec<u8>, cells: &[&str]| {
        let row: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
        out.extend_from_slice(row.join(",").as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    line(&mut out, CSV_HEADER);
    care::portable_rows::takes_for_csv(conn, actor, |take| {
        let local = take
            .taken_at
            .parse::<jiff::Timestamp>()
            .map(|ts| {
                ts.to_zoned_datetime(tz.clone())
                    .strftime("%Y-%m-%dT%H:%M:%S%:z")
                    .to_string()
            })
            .unwrap_or(take.taken_at.clone());
        line(
            &mut out,
            &[
                &local,
                &take.person,
                &take.medication,
                &take.dose_amount,
                &take.dose_unit,
                &take.source_type,
                take.location.as_deref().unwrap_or(""),
                &take.portable_id,
            ],
        );
        Ok(())
    })?;
    Ok(out)
}

fn backup_zip(conn: &Connection, actor: &Actor) -> Result<Vec<u8>> {
    use zip::write::SimpleFileOptions;
    let zip_error = |e: zip::result::ZipError| ApiError::internal(format!("zip: {e}"));
    let io_error = |e: std::io::Error| ApiError::internal(format!("zip: {e}"));
    let mut payload = Vec::new();
    export::write_payload_as(
        conn,
        actor,
        export::Version::V2.format(),
        Version::V2,
        &mut payload,
    )?;
    let avatars = household::portable_rows::avatars(conn, actor)?;
    let listed: Vec<_> = avatars
        .iter()
        .map(|a| json!({"person_portable_id": a.person_portable_id, "content_type": a.content_type, "file": a.file_name()}))
        .collect();
    let mut backup = Vec::new();
    write!(
        backup,
        "{{\"format\":{},\"exported_at\":{},\"avatars\":{},\"portable\":",
        json!(BACKUP_FORMAT),
        json!(crate::domain::Timestamp::now()),
        serde_json::Value::Array(listed)
    )
    .map_err(io_error)?;
    backup.extend_from_slice(&payload);
    drop(payload);
    backup.push(b'}');
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o600);
    zip.start_file("backup.json", options).map_err(zip_error)?;
    zip.write_all(&backup).map_err(io_error)?;
    drop(backup);
    for avatar in &avatars {
        zip.start_file(avatar.file_name(), options)
            .map_err(zip_error)?;
        zip.write_all(&avatar.data).map_err(io_error)?;
    }
    Ok(zip.finish().map_err(zip_error)?.into_inner())
}
