//! Shapes of the change feed: entries, tombstones and the page around them.

use schemars::JsonSchema;
use serde::Serialize;

use super::snapshot_model::DoseOccurrenceRecord;
use crate::domain::Timestamp;
use crate::http::openapi::PortableId;

/// Every `record_type` the change feed can carry.
pub const RECORD_TYPES: &[&str] = crate::domain::record_type::ALL;

/// One page of the feed after a cursor.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "SyncChanges")]
pub struct SyncChanges {
    /// Creations and updates, oldest first.
    pub changes: Vec<ChangeEntry>,
    /// Deletion markers, oldest first.
    pub tombstones: Vec<Tombstone>,
    /// Opaque; pass it as `cursor` to read on from here
    #[schemars(length(min = 1), extend("pattern" = "^[A-Za-z0-9_-]+$"))]
    pub next_cursor: String,
    /// More entries follow next_cursor; read again at once
    pub has_more: bool,
}

/// A creation or update. Metadata holds non-clinical facts only.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "SyncChange")]
pub struct ChangeEntry {
    /// Position of the entry in the feed (increasing)
    #[schemars(range(min = 1))]
    pub id: i64,
    #[schemars(extend("enum" = RECORD_TYPES))]
    pub record_type: String,
    /// The record's numeric id, as a string
    #[schemars(extend("pattern" = "^[0-9]+$"))]
    pub record_id: String,
    #[schemars(with = "PortableId")]
    pub record_portable_id: String,
    #[schemars(extend("enum" = ["create", "update"]))]
    pub action: String,
    pub occurred_at: Timestamp,
    pub metadata: ChangeMetadata,
    /// Present on MedicationDoseOccurrence entries only: the current portable outcome and its ETag (the latest state, so several entries of one outcome can carry the same record)
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "DoseOccurrenceRecord")]
    pub record: Option<DoseOccurrenceRecord>,
}

/// Non-clinical facts only; never reasons or notes
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, inline)]
pub struct ChangeMetadata {
    #[schemars(with = "Option<PortableId>")]
    pub person_portable_id: Option<String>,
}

/// A deletion marker: the record was deleted or retired
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "SyncTombstone")]
pub struct Tombstone {
    /// Position of the entry in the feed (increasing)
    #[schemars(range(min = 1))]
    pub id: i64,
    #[schemars(extend("enum" = RECORD_TYPES))]
    pub record_type: String,
    /// The record's numeric id, as a string
    #[schemars(extend("pattern" = "^[0-9]+$"))]
    pub record_id: String,
    #[schemars(with = "PortableId")]
    pub record_portable_id: String,
    pub occurred_at: Timestamp,
    #[schemars(with = "Option<PortableId>")]
    pub person_portable_id: Option<String>,
}
