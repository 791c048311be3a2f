//! The OpenAPI schemas of sync batches. The operation union is written by
//! hand (its pairs come from the operation table); the rest mirror the
//! shapes in `batches_model`.

use serde_json::{Value, json};

use super::batches_model::MAX_OPERATIONS;
use super::batches_ops::{actions, by_resource};

fn resource_types() -> Vec<&'static str> {
    by_resource().into_iter().map(|(r, _)| r).collect()
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
        "anyOf": by_resource()
            .into_iter()
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
