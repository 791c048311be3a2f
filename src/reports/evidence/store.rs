//! SQL for interaction evidence.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::Evidence;
use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::{ApiError, Result};

/// What storing one record did.
pub enum Stored {
    Created,
    Updated,
    Unchanged,
}

fn json(list: &[String]) -> Result<String> {
    serde_json::to_string(list).map_err(ApiError::internal)
}

/// Inserts the record, or updates the one of the same source and record id
/// in place (its id, and so every prompt's link to it, stays).
pub fn upsert(conn: &WriteTx, evidence: &Evidence, now: &Timestamp) -> Result<(i64, Stored)> {
    let products = json(&evidence.product_names)?;
    let ingredients = json(&evidence.ingredient_names)?;
    let existing = find(conn, &evidence.source_name, &evidence.record_id)?;
    match existing {
        Some(row)
            if row.evidence.version == evidence.version
                && row.evidence.effective_date == evidence.effective_date
                && row.evidence.product_names == evidence.product_names
                && row.evidence.ingredient_names == evidence.ingredient_names
                && row.evidence.evidence_text == evidence.evidence_text =>
        {
            Ok((row.id, Stored::Unchanged))
        }
        Some(EvidenceRow { id, .. }) => {
            conn.prepare_kept(
                "UPDATE review_evidence SET url = ?2, version = ?3, effective_date = ?4,
                     product_names = ?5, ingredient_names = ?6, evidence_text = ?7, updated_at = ?8
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                evidence.url,
                evidence.version,
                evidence.effective_date,
                products,
                ingredients,
                evidence.evidence_text,
                now,
            ])?;
            Ok((id, Stored::Updated))
        }
        None => {
            conn.prepare_kept(
                "INSERT INTO review_evidence (source_name, record_id, url, version, effective_date,
                     product_names, ingredient_names, evidence_text, imported_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
            )?
            .execute(params![
                evidence.source_name,
                evidence.record_id,
                evidence.url,
                evidence.version,
                evidence.effective_date,
                products,
                ingredients,
                evidence.evidence_text,
                now,
            ])?;
            Ok((conn.last_insert_rowid(), Stored::Created))
        }
    }
}

/// Makes the record's name index exactly these normalised names.
pub fn replace_names(conn: &WriteTx, evidence_id: i64, names: &[(String, &str)]) -> Result<()> {
    conn.prepare_kept("DELETE FROM review_evidence_names WHERE evidence_id = ?1")?
        .execute([evidence_id])?;
    let mut insert = conn.prepare_kept(
        "INSERT OR IGNORE INTO review_evidence_names (name, evidence_id, kind) VALUES (?1, ?2, ?3)",
    )?;
    for (name, kind) in names {
        insert.execute(params![name, evidence_id, kind])?;
    }
    Ok(())
}

/// A stored evidence record.
#[derive(Debug, Clone)]
pub struct EvidenceRow {
    pub id: i64,
    pub evidence: Evidence,
}

/// The records with any of these normalised names (as product or ingredient).
pub fn named(conn: &Connection, names: &[String]) -> Result<Vec<i64>> {
    let names = serde_json::to_string(names).map_err(ApiError::internal)?;
    let ids = conn
        .prepare_kept(
            "SELECT DISTINCT evidence_id FROM review_evidence_names
             WHERE name IN (SELECT value FROM json_each(?1)) ORDER BY evidence_id",
        )?
        .query_map([names], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// The normalised names of a record.
pub fn names_of(conn: &Connection, evidence_id: i64) -> Result<Vec<(String, String)>> {
    Ok(conn
        .prepare_kept("SELECT name, kind FROM review_evidence_names WHERE evidence_id = ?1")?
        .query_map([evidence_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

const COLUMNS: &str = "id, source_name, record_id, url, version, effective_date, product_names,
    ingredient_names, evidence_text";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EvidenceRow> {
    let decode = |text: String| serde_json::from_str::<Vec<String>>(&text).unwrap_or_default();
    Ok(EvidenceRow {
        id: r.get(0)?,
        evidence: Evidence {
            source_name: r.get(1)?,
            record_id: r.get(2)?,
            url: r.get(3)?,
            version: r.get(4)?,
            effective_date: r.get(5)?,
            product_names: decode(r.get(6)?),
            ingredient_names: decode(r.get(7)?),
            evidence_text: r.get(8)?,
        },
    })
}

pub fn get(conn: &Connection, id: i64) -> Result<Option<EvidenceRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM review_evidence WHERE id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// The record of a source by the source's own id.
pub fn find(conn: &Connection, source_name: &str, record_id: &str) -> Result<Option<EvidenceRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM review_evidence WHERE source_name = ?1 AND record_id = ?2"
        ))?
        .query_row(params![source_name, record_id], from_row)
        .optional()?)
}
