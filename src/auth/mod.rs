//! Who is calling: credentials, the `Actor` of a household request, and the
//! permission checks every rule calls.

pub mod access;
pub mod accounts;
mod extract;
pub mod model;
pub mod password;
pub mod routes;
pub mod store;
pub mod token;
pub mod view;

pub use extract::{app_token_actor, rate_limit};
pub use model::{AccessLevel, Actor, Authenticated, Credential, Permissions, Role, Verified};
