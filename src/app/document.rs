//! The head of the served OpenAPI document: what is said of the whole
//! service rather than of one operation (its title, its resource tags, how
//! a client signs in). It names the areas' tags, so it lives here, with
//! the composition root, not in the toolkit that builds the document.

use serde_json::json;

use crate::http::openapi::DocumentHead;

/// Resource tags and their descriptions; a tag is emitted only if used.
const RESOURCE_TAGS: &[(&str, &str)] = &[
    ("Capabilities", "What this server supports"),
    ("Contract", "This OpenAPI document"),
    ("Households", "Households available to the credential"),
    ("People", "People of a household"),
    ("Profile", "The signed-in member's own profile"),
    ("Locations", "Places where medicines are kept"),
    ("Medications", "Medicines of the household and their stock"),
    (
        "Dosage options",
        "Ways a medication is taken, with schedule defaults",
    ),
    ("Stock removals", "Stock that left other than as a dose"),
    (
        "Schedules",
        "When a person takes a medication: dose, timing and dates",
    ),
    (
        "Person medications",
        "Medications assigned directly to a person, routine or as needed",
    ),
    (
        "Medication takes",
        "Doses actually given, with the stock they used and safety warnings",
    ),
    (
        "Pause periods",
        "Periods during which a schedule or direct assignment is paused, and why",
    ),
    (
        "Dose occurrences",
        "Expected doses of a day, their signed keys and outcomes",
    ),
    (
        "Health events",
        "Illnesses and suspected side effects of a person",
    ),
    (
        "Notification preferences",
        "Which reminders the signed-in member's person receives, and when",
    ),
    (
        "Notification devices",
        "Where the signed-in member's reminders are delivered: Web Push, phones, ntfy",
    ),
    ("Location memberships", "Which people a location serves"),
    ("Settings", "Household settings"),
    ("Memberships", "Members of a household and their roles"),
    (
        "Person access grants",
        "Which member may view, record for or manage which person",
    ),
    (
        "App tokens",
        "Household app tokens for API and MCP integrations",
    ),
    ("Audit logs", "Security audit events"),
    (
        "Invitations",
        "Invitations into a household and their acceptance",
    ),
    (
        "OAuth",
        "Sign-in: the OAuth 2.0 authorization server for public clients (PKCE S256)",
    ),
    ("Sessions", "Signed-in devices of the account"),
    (
        "Linked identities",
        "Identity-provider identities that sign in as the account",
    ),
    ("Multi-factor", "TOTP second factor and recovery codes"),
    ("Sync", "Snapshots and the change feed for offline clients"),
    (
        "Medication review prompts",
        "Prompts to ask a pharmacist or doctor about medicines a drug label warns about together, and their reviews",
    ),
    (
        "Reports",
        "A person's health history and medication reviews, as JSON and PDF",
    ),
    (
        "Portability",
        "Encrypted household export and import, and data exports",
    ),
    (
        "Lookup",
        "Medication lookup in the national medicines dictionary and AI set-up suggestions",
    ),
];

/// The head for a service whose sign-in server grants `scope`.
pub(super) fn head(scope: &str) -> DocumentHead {
    DocumentHead {
        info: json!({
            "title": "Household Medication Tracking API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Pillbox: a self-hosted household medication tracker.",
        }),
        resource_tags: RESOURCE_TAGS,
        security_schemes: json!({
            "bearerAuth": {"type": "http", "scheme": "bearer",
                "description": "An opaque bearer token: an OAuth access token (pbx_at_...) from sign-in, or a household app token (pbx_app_...)"},
            "oauth2": {"type": "oauth2",
                "description": "Sign-in through the authorization code flow with PKCE (S256 only) for public clients; discover the endpoints at /.well-known/oauth-authorization-server. The access token is then sent as a bearer token.",
                "flows": {"authorizationCode": {
                    "authorizationUrl": "/api/v1/oauth/authorize",
                    "tokenUrl": "/api/v1/oauth/token",
                    "refreshUrl": "/api/v1/oauth/token",
                    "scopes": {scope: "The account's households, as its memberships and grants allow"},
                }}},
        }),
    }
}
