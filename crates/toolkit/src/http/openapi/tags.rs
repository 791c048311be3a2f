//! The document's tags: the four audiences a path belongs to, and the
//! resource tags with their descriptions.

use serde_json::{Value, json};

/// A schema that also admits `null`.
pub fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

pub const PUBLIC: &str = "Public";
pub const ACCOUNT: &str = "Account";
pub const HOUSEHOLD: &str = "Household";
pub const ADMINISTRATION: &str = "Household administration";

pub(super) fn audience_tags() -> [(&'static str, &'static str); 4] {
    [
        (PUBLIC, "No credential needed"),
        (ACCOUNT, "A credential without a selected household"),
        (HOUSEHOLD, "Paths under /households/{household_id}"),
        (
            ADMINISTRATION,
            "Paths under /households/{household_id}/admin",
        ),
    ]
}
