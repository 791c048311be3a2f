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
    "push_subscription",
    "native_device_token",
    "ntfy_channel",
];

/// `vapid_public_key`: the server's Web Push key (base64url), when readable.
pub fn document(state: &AppState, vapid_public_key: Option<&str>) -> Value {
    let reminders = &state.settings.reminders;
    let native_push = reminders.fcm.is_some() || reminders.apns.is_some();
    json!({
        "format": "service.api.capabilities.v1",
        "api_version": "v1",
        "authentication": {
            "methods": ["app_token"],
            "mobile_oauth": {"supported": false},
        },
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
            "web_push": vapid_public_key.is_some(),
            "native_push": native_push,
            "ntfy": true,
            "reports": false,
        },
        "notifications": {
            "kinds": [crate::reminders::DOSE_DUE, crate::reminders::MISSED_DOSE,
                crate::reminders::LOW_STOCK, crate::reminders::TEST],
            "web_push": vapid_public_key.is_some(),
            "web_push_vapid_public_key": vapid_public_key,
            "native_push": native_push,
            "fcm": reminders.fcm.is_some(),
            "apns": reminders.apns.is_some(),
            "native_push_unavailable_reason": crate::reminders::native_push_off(reminders),
            "ntfy": true,
        },
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
                    "mobile_oauth": {"type": "object"},
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
            "notifications": {
                "type": "object",
                "required": ["kinds", "web_push", "web_push_vapid_public_key", "native_push",
                    "fcm", "apns", "native_push_unavailable_reason", "ntfy"],
                "properties": {
                    "kinds": {"type": "array", "items": {"type": "string"}},
                    "web_push": {"type": "boolean"},
                    "web_push_vapid_public_key": {"type": ["string", "null"],
                        "description": "The VAPID public key (base64url, uncompressed P-256) browsers subscribe with (applicationServerKey)"},
                    "native_push": {"type": "boolean",
                        "description": "Phone reminders are delivered through FCM, APNs or both"},
                    "fcm": {"type": "boolean"},
                    "apns": {"type": "boolean"},
                    "native_push_unavailable_reason": {"type": ["string", "null"],
                        "description": "Why native push is off for android (FCM), iPhones (APNs) or both; null when both work"},
                    "ntfy": {"type": "boolean"},
                },
            },
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

async fn show(State(state): State<AppState>) -> Response {
    let key = state
        .db
        .read(|conn| crate::reminders::vapid(conn).map(|v| v.public_key))
        .await;
    if let Err(e) = &key {
        tracing::warn!("capabilities: the VAPID key cannot be read: {e}");
    }
    respond::ok(document(&state, key.ok().as_deref()))
}
