//! Evidence shapes: an openFDA drug label as the bulk download holds it
//! (only the fields the review pass reads), and an evidence record as it
//! is stored.

use serde::Deserialize;

/// The source name stored with openFDA label evidence.
pub const OPENFDA_SOURCE: &str = "openFDA drug label";

/// One element of an openFDA label file's `results`. Every other field of
/// a label (and there are many) is skipped while parsing.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Label {
    pub set_id: Option<String>,
    pub id: Option<String>,
    pub version: Option<String>,
    pub effective_time: Option<String>,
    pub openfda: OpenFda,
    pub drug_interactions: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct OpenFda {
    pub generic_name: Vec<String>,
    pub brand_name: Vec<String>,
    pub substance_name: Vec<String>,
}

/// An evidence record ready to be stored (or updated in place).
#[derive(Debug, Clone)]
pub struct Evidence {
    pub source_name: String,
    pub record_id: String,
    pub url: String,
    pub version: Option<String>,
    /// ISO date.
    pub effective_date: Option<String>,
    pub product_names: Vec<String>,
    pub ingredient_names: Vec<String>,
    pub evidence_text: String,
}

/// What an import did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ImportCounts {
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Labels without interaction text or without a record id.
    pub skipped: u64,
}

impl ImportCounts {
    pub fn add(&mut self, other: ImportCounts) {
        self.created += other.created;
        self.updated += other.updated;
        self.unchanged += other.unchanged;
        self.skipped += other.skipped;
    }

    pub fn labels(&self) -> u64 {
        self.created + self.updated + self.unchanged + self.skipped
    }
}
