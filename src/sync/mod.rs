//! Offline sync: snapshots, the change feed and sync batches.

use crate::http::openapi::Api;

pub mod batches;
pub mod batches_model;
pub mod batches_ops;
pub mod batches_schema;
pub mod batches_step;
pub mod batches_store;
pub mod changes;
pub mod changes_model;
pub mod changes_store;
pub mod snapshot;
pub mod snapshot_model;
pub mod snapshot_store;

/// Every sync operation, documented as it is routed.
pub fn routes(api: Api) -> Api {
    let api = changes::routes(api);
    let api = snapshot::routes(api);
    batches::routes(api)
}
