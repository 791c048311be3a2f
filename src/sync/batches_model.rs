//! The sync batch request and response shapes, and the one table of the
//! resource/action pairs a batch may carry.

use crate::domain::ResourceId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Most operations one batch may carry.
pub const MAX_OPERATIONS: usize = 200;

/// Every (resource_type, actions) pair a batch applies. The pre-write check
/// and the capability document's `sync.operations` both read this table.
pub const SUPPORTED: &[(&str, &[&str])] = &[
    ("location", &["create", "update", "delete"]),
    ("person", &["create", "update"]),
    (
        "medication",
        &[
            "create",
            "update",
            "delete",
            "adjust_inventory",
            "mark_as_ordered",
            "mark_as_received",
            "remove_stock",
        ],
    ),
    ("medication_dosage_option", &["create", "update"]),
    ("health_event", &["create", "update", "delete"]),
    (
        "schedule",
        &["create", "update", "delete", "pause", "resume"],
    ),
    (
        "person_medication",
        &["create", "update", "delete", "pause", "resume"],
    ),
    ("medication_pause_period", &["create", "close"]),
    ("medication_take", &["create"]),
    ("medication_dose_occurrence", &["create", "update"]),
];

/// Whether a batch may carry this pair.
pub fn supported(resource_type: &str, action: &str) -> bool {
    SUPPORTED
        .iter()
        .any(|(r, actions)| *r == resource_type && actions.contains(&action))
}

/// `sync.operations` of the capability document: `{resource_type: [actions]}`.
pub fn operations_document() -> Value {
    let map: Map<String, Value> = SUPPORTED
        .iter()
        .map(|(r, actions)| (r.to_string(), json!(actions)))
        .collect();
    Value::Object(map)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchBody {
    pub batch: Batch,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    pub operations: Vec<Operation>,
}

/// One queued write. `action` and `resource_type` stay strings so that an
/// unknown pair is reported as `sync_operation_unsupported`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    pub action: String,
    pub resource_type: String,
    #[serde(default)]
    pub id: Option<ResourceId>,
    #[serde(default)]
    pub if_match: Option<String>,
    #[serde(default)]
    pub attributes: Option<Value>,
}

/// One applied operation (the spec's rule 7).
#[derive(Debug, Serialize)]
pub struct OperationResult {
    pub index: usize,
    pub action: String,
    pub record_type: &'static str,
    pub record_id: String,
    pub record_portable_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<bool>,
}

fn actions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = SUPPORTED
        .iter()
        .flat_map(|(_, actions)| actions.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn resource_types() -> Vec<&'static str> {
    SUPPORTED.iter().map(|(r, _)| *r).collect()
}

/// `SyncBatchRequest`.
pub fn batch_request_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["batch"],
        "properties": {"batch": {
            "type": "object", "additionalProperties": false, "required": ["operations"],
            "properties": {"operations": {
                "type": "array", "minItems": 1, "maxItems": MAX_OPERATIONS,
                "items": {"$ref": "#/components/schemas/SyncOperation"},
            }},
        }},
    })
}

/// `SyncOperation`: the formal schema marks action, resource_type, id and
/// if_match required; the behavioural rules in the operation's description
/// take precedence (creates carry no id or if_match, close carries empty
/// attributes).
pub fn operation_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["action", "resource_type", "id", "if_match"],
        "description": "One queued write. The behavioural rules take precedence over `required`: create operations carry no id and no if_match; remove_stock carries the medication's id and no if_match; close, pause, resume and delete carry empty (or no) attributes.",
        "properties": {
            "action": {"type": "string", "enum": actions()},
            "resource_type": {"type": "string", "enum": resource_types()},
            "id": {"$ref": "#/components/schemas/ResourceIdentifier"},
            "if_match": {"type": "string", "minLength": 1},
            "attributes": {"type": "object", "description": "The resource's attributes, as in its REST create or update request body (without the wrapping key)."},
        },
        // Only the supported pairs: one alternative per resource type.
        "anyOf": SUPPORTED
            .iter()
            .map(|(resource_type, actions)| json!({
                "properties": {
                    "resource_type": {"const": resource_type},
                    "action": {"enum": actions},
                },
            }))
            .collect::<Vec<_>>(),
    })
}

/// `SyncBatchResult`.
pub fn batch_result_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["applied", "results"],
        "properties": {
            "applied": {"type": "boolean", "const": true},
            "results": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "required": ["index", "action", "record_type", "record_id", "record_portable_id"],
                "properties": {
                    "index": {"type": "integer", "minimum": 0},
                    "action": {"type": "string", "enum": actions()},
                    "record_type": {"type": "string"},
                    "record_id": {"type": "string"},
                    "record_portable_id": {"type": "string"},
                    "etag": {"type": "string"},
                    "replayed": {"type": "boolean"},
                },
            }},
        },
    })
}
