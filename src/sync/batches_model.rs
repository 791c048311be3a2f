//! The sync batch request and response shapes.

use crate::domain::ResourceId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most operations one batch may carry.
pub const MAX_OPERATIONS: usize = 200;

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
