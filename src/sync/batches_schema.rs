//! The schemas of sync batch operations that are made from the operation
//! table rather than derived: the `SyncOperation` union of the supported
//! pairs (the wire form of `batches_model::Operation`) and the list of
//! actions a result may name.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::json;

use super::batches_model::{BatchAction, Operation};
use super::batches_ops::{actions, by_resource};

fn resource_types() -> Vec<&'static str> {
    by_resource().into_iter().map(|(r, _)| r).collect()
}

/// `SyncOperation`: the formal schema marks action, resource_type, id and
/// if_match required; the behavioural rules in the operation's description
/// take precedence (creates carry no id or if_match, close carries empty
/// attributes).
impl JsonSchema for Operation {
    fn schema_name() -> Cow<'static, str> {
        "SyncOperation".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
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
}

impl JsonSchema for BatchAction {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SyncBatchAction".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "enum": actions()})
    }
}
