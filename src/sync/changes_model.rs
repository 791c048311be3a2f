//! Shapes of the change feed: entries, tombstones and the page around them.

use serde::Serialize;
use serde_json::{Value, json};

use super::snapshot_store::DoseOccurrenceRecord;

/// Every `record_type` the change feed can carry.
pub const RECORD_TYPES: &[&str] = crate::domain::record_type::ALL;

/// One page of the feed after a cursor.
#[derive(Debug, Serialize)]
pub struct SyncChanges {
    /// Creations and updates, oldest first.
    pub changes: Vec<ChangeEntry>,
    /// Deletion markers, oldest first.
    pub tombstones: Vec<Tombstone>,
    /// Where the next read starts: after the last entry scanned.
    pub next_cursor: String,
    /// Entries after `next_cursor` remain.
    pub has_more: bool,
}

/// A creation or update. Metadata holds non-clinical facts only.
#[derive(Debug, Serialize)]
pub struct ChangeEntry {
    pub id: i64,
    pub record_type: String,
    pub record_id: String,
    pub record_portable_id: String,
    pub action: String,
    pub occurred_at: String,
    pub metadata: ChangeMetadata,
    /// `MedicationDoseOccurrence` entries only: the outcome as it is now
    /// (reasons and notes live here, for a reader allowed to see them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<DoseOccurrenceRecord>,
}

/// Never clinical reasons or notes: only the person the record belongs to.
#[derive(Debug, Serialize)]
pub struct ChangeMetadata {
    pub person_portable_id: Option<String>,
}

/// A deletion marker (a deleted record or a retired source).
#[derive(Debug, Serialize)]
pub struct Tombstone {
    pub id: i64,
    pub record_type: String,
    pub record_id: String,
    pub record_portable_id: String,
    pub occurred_at: String,
    pub person_portable_id: Option<String>,
}

fn nullable_portable_id() -> Value {
    json!({"oneOf": [{"$ref": "#/components/schemas/PortableId"}, {"type": "null"}]})
}

fn common_properties() -> serde_json::Map<String, Value> {
    let mut props = serde_json::Map::new();
    props.insert(
        "id".into(),
        json!({"type": "integer", "minimum": 1, "maximum": i64::MAX,
               "description": "Position of the entry in the feed (increasing)"}),
    );
    props.insert(
        "record_type".into(),
        json!({"type": "string", "enum": RECORD_TYPES}),
    );
    props.insert(
        "record_id".into(),
        json!({"type": "string", "pattern": "^[0-9]+$",
               "description": "The record's numeric id, as a string"}),
    );
    props.insert(
        "record_portable_id".into(),
        json!({"$ref": "#/components/schemas/PortableId"}),
    );
    props.insert(
        "occurred_at".into(),
        json!({"type": "string", "format": "date-time"}),
    );
    props
}

pub fn change_schema() -> Value {
    let mut props = common_properties();
    props.insert(
        "action".into(),
        json!({"type": "string", "enum": ["create", "update"]}),
    );
    props.insert(
        "metadata".into(),
        json!({
            "type": "object", "additionalProperties": false,
            "required": ["person_portable_id"],
            "description": "Non-clinical facts only; never reasons or notes",
            "properties": {"person_portable_id": nullable_portable_id()},
        }),
    );
    props.insert(
        "record".into(),
        json!({
            "$ref": "#/components/schemas/PortableDoseOccurrence",
            "description": "Present on MedicationDoseOccurrence entries only: the current \
                            portable outcome and its ETag (the latest state, so several \
                            entries of one outcome can carry the same record)",
        }),
    );
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["id", "record_type", "record_id", "record_portable_id", "action",
                     "occurred_at", "metadata"],
        "properties": props,
    })
}

pub fn tombstone_schema() -> Value {
    let mut props = common_properties();
    props.insert("person_portable_id".into(), nullable_portable_id());
    json!({
        "type": "object", "additionalProperties": false,
        "description": "A deletion marker: the record was deleted or retired",
        "required": ["id", "record_type", "record_id", "record_portable_id", "occurred_at",
                     "person_portable_id"],
        "properties": props,
    })
}

pub fn sync_changes_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["changes", "tombstones", "next_cursor", "has_more"],
        "properties": {
            "changes": {"type": "array", "items": {"$ref": "#/components/schemas/SyncChange"}},
            "tombstones": {"type": "array", "items": {"$ref": "#/components/schemas/SyncTombstone"}},
            "next_cursor": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$",
                "description": "Opaque; pass it as `cursor` to read on from here"},
            "has_more": {"type": "boolean",
                "description": "More entries follow next_cursor; read again at once"},
        },
    })
}
