//! The OpenAPI 3.1 document is built from the same calls that build the
//! Router: a route cannot exist without its operation, nor the reverse.
//! Audience tags come from the path (the spec's four audiences), so an
//! operation cannot be filed under the wrong one.

mod api;
mod op;
mod schemas;
mod tags;

pub use api::*;
pub use op::*;
pub use schemas::*;
pub use tags::*;
