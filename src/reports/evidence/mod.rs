//! Interaction evidence: public drug-label text that names medicines taken
//! together, imported by `pillbox evidence import` and read by the review
//! pass. Evidence is instance-wide public text: it belongs to no household
//! and holds nothing about anyone.

pub mod model;
pub mod openfda;
pub mod store;

use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::reports::names;
use model::{Evidence, ImportCounts};

/// Stores a batch of records: new ones are added, known ones (same source
/// and record id) are updated in place, identical ones left alone.
pub fn import_batch(conn: &WriteTx, batch: &[Evidence]) -> Result<ImportCounts> {
    let now = Timestamp::now();
    let mut counts = ImportCounts::default();
    for evidence in batch {
        let (id, stored) = store::upsert(conn, evidence, &now)?;
        match stored {
            store::Stored::Unchanged => {
                counts.unchanged += 1;
                continue;
            }
            store::Stored::Created => counts.created += 1,
            store::Stored::Updated => counts.updated += 1,
        }
        store::replace_names(conn, id, &index_names(evidence))?;
    }
    Ok(counts)
}

/// The normalised names a record is found by: each product name, each
/// ingredient name and each ingredient of a combined generic name.
fn index_names(evidence: &Evidence) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for product in &evidence.product_names {
        out.push((names::normalise(product), "product"));
    }
    for ingredient in &evidence.ingredient_names {
        out.push((names::normalise(ingredient), "ingredient"));
        for part in names::ingredients(ingredient) {
            out.push((part, "ingredient"));
        }
    }
    out.retain(|(name, _)| name.len() >= 3);
    out.sort();
    out.dedup();
    out
}
