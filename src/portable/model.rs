//! Shapes of the portable operations: the export response, the import
//! summary, and the plaintext payload as an import reads it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::http::openapi;

/// One record that disagrees with what the destination already holds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Conflict {
    /// The portable collection, e.g. `medications`.
    pub collection: String,
    /// The change-feed record type of that collection, e.g. `Medication`.
    pub record_type: String,
    /// The incoming record's portable id.
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    /// The first field that differs.
    pub field: String,
    /// The portable id of the record it conflicts with in the destination.
    #[schemars(with = "openapi::PortableId")]
    pub existing_portable_id: String,
}

/// A record the destination's rules refuse. Never repeats a submitted value.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RecordError {
    pub collection: String,
    /// The record's portable id, when it has a usable one.
    #[schemars(with = "Option<openapi::PortableId>")]
    pub portable_id: Option<String>,
    pub field: String,
    pub message: String,
}

/// What a dry run found, or what an import applied.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ImportSummary {
    /// True only for an applied import.
    pub applied: bool,
    /// The plaintext format found inside the envelope.
    pub format: String,
    /// Records per collection in the bundle.
    pub counts: BTreeMap<String, u64>,
    /// Records per collection that were new to the destination.
    pub created: BTreeMap<String, u64>,
    /// Records per collection already present and unchanged (skipped).
    pub unchanged: BTreeMap<String, u64>,
    pub conflicts: Vec<Conflict>,
    pub errors: Vec<RecordError>,
}

/// The plaintext payload. Unknown top-level keys and unknown collections
/// are refused while it is read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payload {
    pub format: String,
    #[serde(default)]
    pub scope: Option<Value>,
    #[serde(default)]
    pub exported_at: Option<Value>,
    #[serde(default)]
    pub source_instance_id: Option<Value>,
    /// Present when the payload is a sync snapshot.
    #[serde(default)]
    pub cursor: Option<Value>,
    pub records: Records,
}

pub type RawRecord = Map<String, Value>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Records {
    #[serde(default)]
    pub people: Vec<RawRecord>,
    #[serde(default)]
    pub locations: Vec<RawRecord>,
    #[serde(default)]
    pub medications: Vec<RawRecord>,
    #[serde(default)]
    pub dosage_options: Vec<RawRecord>,
    #[serde(default)]
    pub schedules: Vec<RawRecord>,
    #[serde(default)]
    pub person_medications: Vec<RawRecord>,
    #[serde(default)]
    pub medication_takes: Vec<RawRecord>,
    #[serde(default)]
    pub notification_preferences: Vec<RawRecord>,
    #[serde(default)]
    pub health_events: Vec<RawRecord>,
    #[serde(default)]
    pub medication_pause_periods: Option<Vec<RawRecord>>,
    #[serde(default)]
    pub dose_occurrences: Option<Vec<RawRecord>>,
}
