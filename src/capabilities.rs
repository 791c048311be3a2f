//! The capability document: what this server supports right now. A flag is
//! `true` only when the feature works in this build and configuration.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use crate::care::pause_periods::model::PauseReason;
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::medicine::vocab::StockRemovalReason;
use crate::state::AppState;

/// Resources a sync batch never carries: they change only online.
pub const ONLINE_ONLY_RESOURCES: &[&str] = &[
    "profile",
    "avatar",
    "invitation",
    "membership",
    "access",
    "location_membership",
    "reports",
];

/// `base` is the server's origin (the public URL, or the one the request
/// was addressed to), which the OAuth URLs hang off.
pub fn document(state: &AppState, base: &str) -> Value {
    json!({
        "format": "service.api.capabilities.v1",
        "api_version": "v1",
        "authentication": authentication(state, base),
        "administration": {
            "settings": true,
            "memberships": true,
            "person_access_grants": true,
            "app_tokens": true,
            "audit_logs": true,
            "invitations": false,
        },
        "portable_formats": [],
        "backups": {
            "encrypted_migration_bundle": false,
            "unencrypted_zip": false,
            "health_data_json": false,
        },
        "sync": {
            "mobile_snapshot": true,
            "change_feed": true,
            "batch_mutations": true,
            "idempotency_keys": true,
            "etag_conflicts": true,
            "tombstones": true,
            "operations": crate::sync::batches_ops::operations_document(),
            "online_only_resources": ONLINE_ONLY_RESOURCES,
        },
        "client_tools": {
            "cli": {"supported": true, "binary": "pillbox"},
            "mcp_server": {"supported": false, "transport": "streamable_http", "endpoint": "/mcp", "tools": []},
            "diagnostics": ["request_id", "retry_after"],
        },
        "medication_pause_periods": {"supported": PauseReason::ALL},
        "inventory": {
            "stock_removals": true,
            "stock_removal_reasons": StockRemovalReason::ALL,
        },
        "features": {
            "people": true,
            "locations": true,
            "location_memberships": true,
            "profile": true,
            "avatar": true,
            "medications": true,
            "dosage_options": true,
            "stock_removals": true,
            "schedules": true,
            "person_medications": true,
            "medication_pause_periods": true,
            "medication_takes": true,
            "dose_occurrences": true,
            "health_events": true,
            "notification_preferences": true,
            "medication_lookup": false,
            "ai_suggestions": false,
            "web_push": false,
            "native_push": false,
            "reports": false,
        },
    })
}

/// What a phone needs to sign in (spec Authentication 2) and the
/// credentials that work now.
fn authentication(state: &AppState, base: &str) -> Value {
    let settings = &state.settings;
    let metadata = crate::identity::oauth::routes::metadata_document(base);
    let mobile = crate::identity::clients::find(settings, base, &settings.oauth.mobile_client_id);
    json!({
        "methods": ["oauth_authorization_code", "app_token"],
        "mobile_oauth": {
            "supported": mobile.is_some(),
            "client_id": settings.oauth.mobile_client_id,
            "redirect_uris": mobile.map(|c| c.redirect_uris).unwrap_or_default(),
            "scopes": [crate::identity::clients::SCOPE],
            "metadata_url": crate::identity::oauth::routes::metadata_url(base),
            "issuer": metadata.issuer,
            "authorization_endpoint": metadata.authorization_endpoint,
            "token_endpoint": metadata.token_endpoint,
            "revocation_endpoint": metadata.revocation_endpoint,
            "code_challenge_methods": metadata.code_challenge_methods_supported,
            "grant_types": metadata.grant_types_supported,
        },
        "web_oauth": {
            "client_id": settings.oauth.web_client_id,
            "redirect_uris": crate::identity::clients::find(settings, base, &settings.oauth.web_client_id)
                .map(|c| c.redirect_uris)
                .unwrap_or_default(),
        },
        "multi_factor": ["totp", "recovery_code"],
        "access_token_lifetime_seconds": settings.oauth.access_token_ttl_secs,
        "refresh_token_lifetime_days": settings.oauth.refresh_token_ttl_days,
    })
}

fn schema() -> Value {
    let flags = json!({"type": "object", "additionalProperties": {"type": "boolean"}});
    json!({
        "type": "object",
        "required": ["format", "api_version", "authentication", "administration", "portable_formats",
            "backups", "sync", "client_tools", "features"],
        "properties": {
            "format": {"const": "service.api.capabilities.v1"},
            "api_version": {"const": "v1"},
            "authentication": {
                "type": "object", "required": ["methods", "mobile_oauth"],
                "properties": {
                    "methods": {"type": "array", "items": {"type": "string"}},
                    "mobile_oauth": {
                        "type": "object",
                        "required": ["supported", "client_id", "redirect_uris", "scopes", "metadata_url"],
                        "properties": {
                            "supported": {"type": "boolean"},
                            "client_id": {"type": "string"},
                            "redirect_uris": {"type": "array", "items": {"type": "string"}},
                            "scopes": {"type": "array", "items": {"type": "string"}},
                            "metadata_url": {"type": "string", "format": "uri"},
                            "issuer": {"type": "string", "format": "uri"},
                            "authorization_endpoint": {"type": "string", "format": "uri"},
                            "token_endpoint": {"type": "string", "format": "uri"},
                            "revocation_endpoint": {"type": "string", "format": "uri"},
                            "code_challenge_methods": {"type": "array", "items": {"const": "S256"}},
                            "grant_types": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    "web_oauth": {
                        "type": "object", "required": ["client_id", "redirect_uris"],
                        "properties": {
                            "client_id": {"type": "string"},
                            "redirect_uris": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                    "multi_factor": {"type": "array", "items": {"type": "string"}},
                    "access_token_lifetime_seconds": {"type": "integer", "minimum": 1},
                    "refresh_token_lifetime_days": {"type": "integer", "minimum": 1},
                },
            },
            "administration": flags,
            "portable_formats": {"type": "array", "items": {"type": "string"}},
            "backups": flags,
            "sync": {
                "type": "object",
                "required": ["mobile_snapshot", "change_feed", "batch_mutations", "idempotency_keys",
                    "etag_conflicts", "tombstones", "operations", "online_only_resources"],
                "properties": {
                    "operations": {"type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}}},
                    "online_only_resources": {"type": "array", "items": {"type": "string"}},
                },
            },
            "client_tools": {"type": "object", "required": ["cli", "mcp_server", "diagnostics"]},
            "medication_pause_periods": {
                "type": "object", "required": ["supported"],
                "properties": {"supported": {"type": "array", "items": {"type": "string"}}},
            },
            "inventory": {
                "type": "object", "required": ["stock_removals", "stock_removal_reasons"],
                "properties": {
                    "stock_removals": {"type": "boolean"},
                    "stock_removal_reasons": {"type": "array", "items": {"type": "string"}},
                },
            },
            "features": flags,
        },
    })
}

pub fn routes(api: Api) -> Api {
    api.single_schema("Capabilities", schema()).route(
        Op::get("/capabilities", "getCapabilities", "Capabilities")
            .summary("What this server supports")
            .public()
            .ok_named("CapabilitiesResponse"),
        get(show),
    )
}

async fn show(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let base = crate::identity::base_url(&state.settings, &headers);
    respond::ok(document(&state, &base))
}
