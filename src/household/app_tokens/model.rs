//! App token API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{Name, Timestamp};
use crate::http::openapi;

/// The longest token name. The command line issues tokens through the same
/// rule, so the rule checks it; the schema states it.
pub const MAX_NAME: usize = 100;

// A token as listed: never its secret.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AppToken {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(length(min = 1))]
    pub name: String,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    /// The public part of the token
    pub token_prefix: String,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub created_by_membership_id: Option<i64>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

// Returned once, at creation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CreatedAppToken {
    #[serde(flatten)]
    pub app_token: AppToken,
    /// The secret token; shown only in this response
    pub token: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct AppTokenAttributes {
    #[schemars(with = "Name<MAX_NAME>")]
    pub name: String,
    /// Days until the token expires; at most the household's app_token_max_age_days (its default)
    #[schemars(range(min = 1, max = crate::household::model::MAX_TOKEN_AGE_DAYS))]
    pub max_age_days: Option<i64>,
    /// The member the token acts as: only the caller's own membership may be named (403 otherwise); absent or null means the caller's own
    #[schemars(with = "Option<openapi::NumericId>")]
    pub membership_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AppTokenCreateRequest")]
pub struct AppTokenBody {
    pub api_app_token: AppTokenAttributes,
}
