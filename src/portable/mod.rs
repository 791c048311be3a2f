//! Portable household data: the encrypted envelope, export, dry run and
//! import of portable bundles, and the data exports.

pub mod collections;
pub mod data_exports;
pub mod envelope;
pub mod export;
pub mod import;
pub mod kdf_pool;
pub mod model;
pub mod routes;
pub mod store;

use crate::http::openapi::Api;

/// Told how far a long export or import is: the collection, the records
/// done, and the records in all (0 when not known in advance). The command
/// line draws it on a terminal; the API passes [`quiet`].
pub type Progress<'p> = &'p (dyn Fn(&str, u64, u64) + Sync);

/// The progress of a run nobody watches.
pub fn quiet(_: &str, _: u64, _: u64) {}

/// The formats this server reads and writes (the capability document's
/// `portable_formats`).
pub const FORMATS: &[&str] = &[
    crate::sync::snapshot::FORMAT_V1,
    crate::sync::snapshot::FORMAT_V2,
    envelope::FORMAT,
    data_exports::HEALTH_DATA_FORMAT,
    data_exports::BACKUP_FORMAT,
];

/// Every portable operation, documented as it is routed.
pub fn routes(api: Api) -> Api {
    data_exports::routes(routes::routes(api))
}
