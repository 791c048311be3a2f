//! Session shapes.

use schemars::JsonSchema;
use serde::Serialize;

use crate::domain::Timestamp;
use crate::http::openapi;

/// One signed-in device of the account.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Session {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    /// The OAuth client the device signed in with
    #[schemars(length(min = 1))]
    pub client_id: String,
    /// A name for the device, from the client or its browser's user agent
    pub device_label: String,
    pub created_at: Timestamp,
    pub last_used_at: Timestamp,
    /// When the session ends unless its refresh token is used before then
    pub expires_at: Timestamp,
    /// Whether this is the session of the credential making the request
    pub current: bool,
}
