//! The sync batch request and response shapes.

use crate::domain::{Bounded, ResourceId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most operations one batch may carry.
pub const MAX_OPERATIONS: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SyncBatchRequest")]
pub struct BatchBody {
    pub batch: Batch,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct Batch {
    pub operations: Bounded<Operation, 1, MAX_OPERATIONS>,
}

/// One queued write. `action` and `resource_type` stay strings so that an
/// unknown pair is reported as `sync_operation_unsupported`. Its schema (the
/// `SyncOperation` union of the supported pairs) is made from the operation
/// table, in `batches_schema`.
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

/// An action of the operation table; its schema (the table's actions) is
/// made in `batches_schema`, which reads the table.
pub struct BatchAction;

/// One applied operation (the spec's rule 7).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, inline)]
pub struct OperationResult {
    pub index: usize,
    #[schemars(with = "BatchAction")]
    pub action: String,
    pub record_type: &'static str,
    pub record_id: String,
    pub record_portable_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<bool>,
}

/// `createSyncBatch`'s result: every operation applied, in order.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "SyncBatchResult")]
pub struct BatchResult {
    #[schemars(extend("const" = true))]
    pub applied: bool,
    pub results: Vec<OperationResult>,
}
