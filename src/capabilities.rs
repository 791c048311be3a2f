//! The capability document: what this server supports right now. A flag is
//! `true` only when the feature works in this build and configuration.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

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

const FORMAT: &str = "service.api.capabilities.v1";
const API_VERSION: &str = "v1";

// What this server supports. Objects stay open (no additionalProperties:
// false) so that a client reads a newer server's document too.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Capabilities {
    #[schemars(extend("const" = FORMAT))]
    format: &'static str,
    #[schemars(extend("const" = API_VERSION))]
    api_version: &'static str,
    authentication: Authentication,
    administration: Administration,
    portable_formats: Vec<&'static str>,
    backups: Backups,
    sync: Sync,
    client_tools: ClientTools,
    medication_pause_periods: Supported,
    inventory: Inventory,
    features: Features,
    notifications: Notifications,
}

/// Which reminder channels work now, and the Web Push key browsers
/// subscribe with.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Notifications {
    kinds: Vec<&'static str>,
    web_push: bool,
    /// The VAPID public key (base64url, uncompressed P-256) browsers subscribe with (applicationServerKey)
    web_push_vapid_public_key: Option<String>,
    /// Phone reminders are delivered through FCM, APNs or both
    native_push: bool,
    fcm: bool,
    apns: bool,
    /// Why native push is off for android (FCM), iPhones (APNs) or both; null when both work
    native_push_unavailable_reason: Option<String>,
    ntfy: bool,
}

/// What a phone needs to sign in (spec Authentication 2) and the
/// credentials that work now.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Authentication {
    methods: Vec<&'static str>,
    /// Whether the sign-in page offers an OpenID Connect identity provider ("Sign in with …"); its name, when it does
    delegated_sign_in: DelegatedSignIn,
    mobile_oauth: MobileOauth,
    web_oauth: WebOauth,
    multi_factor: Vec<&'static str>,
    #[schemars(range(min = 1))]
    access_token_lifetime_seconds: u64,
    #[schemars(range(min = 1))]
    refresh_token_lifetime_days: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct MobileOauth {
    supported: bool,
    client_id: String,
    redirect_uris: Vec<String>,
    scopes: Vec<&'static str>,
    #[schemars(extend("format" = "uri"))]
    metadata_url: String,
    #[schemars(extend("format" = "uri"))]
    issuer: String,
    #[schemars(extend("format" = "uri"))]
    authorization_endpoint: String,
    #[schemars(extend("format" = "uri"))]
    token_endpoint: String,
    #[schemars(extend("format" = "uri"))]
    revocation_endpoint: String,
    code_challenge_methods: Vec<&'static str>,
    grant_types: Vec<&'static str>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct DelegatedSignIn {
    supported: bool,
    provider_name: Option<String>,
    /// Whether a provider sign-in skips the account's own second factor only when the provider says it performed one (always true here)
    provider_mfa_required: bool,
    /// Where a signed-in user lists and removes the identities linked to the account
    linked_identities_endpoint: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct WebOauth {
    client_id: String,
    redirect_uris: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Administration {
    settings: bool,
    memberships: bool,
    person_access_grants: bool,
    app_tokens: bool,
    audit_logs: bool,
    invitations: bool,
    /// Whether invitations are emailed (an SMTP server is configured); without it, createInvitation returns the link once for the administrator to pass on
    invitation_email: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Backups {
    encrypted_migration_bundle: bool,
    unencrypted_zip: bool,
    health_data_json: bool,
    takes_csv: bool,
    command_line: bool,
    /// The server takes backups on a schedule (`--backup-dir`).
    scheduled: bool,
    /// The last scheduled backup failed (the server's log says why).
    scheduled_failing: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Sync {
    mobile_snapshot: bool,
    change_feed: bool,
    batch_mutations: bool,
    idempotency_keys: bool,
    etag_conflicts: bool,
    tombstones: bool,
    /// The batch operations each resource supports
    #[schemars(with = "BTreeMap<String, Vec<String>>")]
    operations: Value,
    online_only_resources: &'static [&'static str],
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct ClientTools {
    cli: Cli,
    mcp_server: McpServer,
    diagnostics: Vec<&'static str>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Cli {
    supported: bool,
    binary: &'static str,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct McpServer {
    supported: bool,
    transport: &'static str,
    endpoint: &'static str,
    tools: Vec<&'static str>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Supported {
    supported: &'static [&'static str],
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Inventory {
    stock_removals: bool,
    stock_removal_reasons: &'static [&'static str],
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
struct Features {
    people: bool,
    locations: bool,
    location_memberships: bool,
    profile: bool,
    avatar: bool,
    medications: bool,
    dosage_options: bool,
    stock_removals: bool,
    schedules: bool,
    person_medications: bool,
    medication_pause_periods: bool,
    medication_takes: bool,
    dose_occurrences: bool,
    health_events: bool,
    notification_preferences: bool,
    medication_lookup: bool,
    ai_suggestions: bool,
    web_push: bool,
    native_push: bool,
    ntfy: bool,
    /// The health history and medication reviews reports (JSON)
    reports: bool,
    /// The same reports as PDF downloads
    report_pdf: bool,
    /// The medication review prompt queue (prompts from interaction evidence)
    medication_review_prompts: bool,
}

/// `base` is the server's origin (the public URL, or the one the request
/// was addressed to), which the OAuth URLs hang off.
/// `vapid_public_key`: the server's Web Push key (base64url), when readable.
pub fn document(state: &AppState, base: &str, vapid_public_key: Option<&str>) -> Capabilities {
    let scheduled = state.part::<crate::backup::schedule::Status>().get();
    let reminders = state.part::<crate::reminders::settings::ReminderSettings>();
    let native_push = reminders.fcm.is_some() || reminders.apns.is_some();
    Capabilities {
        format: FORMAT,
        api_version: API_VERSION,
        authentication: authentication(state, base),
        administration: Administration {
            settings: true,
            memberships: true,
            person_access_grants: true,
            app_tokens: true,
            audit_logs: true,
            invitations: true,
            invitation_email: crate::mail::configured(state),
        },
        portable_formats: crate::portable::FORMATS.to_vec(),
        backups: Backups {
            encrypted_migration_bundle: true,
            unencrypted_zip: true,
            health_data_json: true,
            takes_csv: true,
            command_line: true,
            scheduled: scheduled.enabled,
            scheduled_failing: scheduled.failing,
        },
        sync: Sync {
            mobile_snapshot: true,
            change_feed: true,
            batch_mutations: true,
            idempotency_keys: true,
            etag_conflicts: true,
            tombstones: true,
            operations: crate::sync::batches_ops::operations_document(),
            online_only_resources: ONLINE_ONLY_RESOURCES,
        },
        client_tools: ClientTools {
            cli: Cli {
                supported: true,
                binary: "pillbox",
            },
            mcp_server: McpServer {
                supported: true,
                transport: crate::mcp::routes::TRANSPORT,
                endpoint: crate::mcp::routes::ENDPOINT,
                tools: crate::mcp::tool_names(),
            },
            diagnostics: vec!["request_id", "retry_after"],
        },
        medication_pause_periods: Supported {
            supported: PauseReason::ALL,
        },
        inventory: Inventory {
            stock_removals: true,
            stock_removal_reasons: StockRemovalReason::ALL,
        },
        features: Features {
            people: true,
            locations: true,
            location_memberships: true,
            profile: true,
            avatar: true,
            medications: true,
            dosage_options: true,
            stock_removals: true,
            schedules: true,
            person_medications: true,
            medication_pause_periods: true,
            medication_takes: true,
            dose_occurrences: true,
            health_events: true,
            notification_preferences: true,
            medication_lookup: state
                .try_part::<crate::lookup::TerminologySettings>()
                .is_some(),
            ai_suggestions: state.try_part::<crate::lookup::AiSettings>().is_some(),
            web_push: vapid_public_key.is_some(),
            native_push,
            ntfy: true,
            reports: true,
            report_pdf: true,
            medication_review_prompts: true,
        },
        notifications: Notifications {
            kinds: vec![
                crate::reminders::DOSE_DUE,
                crate::reminders::MISSED_DOSE,
                crate::reminders::LOW_STOCK,
                crate::reminders::TEST,
            ],
            web_push: vapid_public_key.is_some(),
            web_push_vapid_public_key: vapid_public_key.map(str::to_string),
            native_push,
            fcm: reminders.fcm.is_some(),
            apns: reminders.apns.is_some(),
            native_push_unavailable_reason: crate::reminders::native_push_off(reminders),
            ntfy: true,
        },
    }
}

fn authentication(state: &AppState, base: &str) -> Authentication {
    let oauth = state.part::<crate::identity::settings::OAuthSettings>();
    let metadata = crate::identity::oauth::routes::metadata_document(base);
    let mobile = crate::identity::clients::find(oauth, base, &oauth.mobile_client_id);
    let web = crate::identity::clients::find(oauth, base, &oauth.web_client_id);
    Authentication {
        methods: if state
            .try_part::<crate::identity::settings::OidcSettings>()
            .is_some()
        {
            vec!["oauth_authorization_code", "openid_connect", "app_token"]
        } else {
            vec!["oauth_authorization_code", "app_token"]
        },
        delegated_sign_in: DelegatedSignIn {
            supported: state
                .try_part::<crate::identity::settings::OidcSettings>()
                .is_some(),
            provider_name: state
                .try_part::<crate::identity::settings::OidcSettings>()
                .map(|o| o.name.clone()),
            provider_mfa_required: true,
            linked_identities_endpoint: format!(
                "{}/auth/linked_identities",
                crate::identity::API_BASE
            ),
        },
        mobile_oauth: MobileOauth {
            supported: mobile.is_some(),
            client_id: oauth.mobile_client_id.clone(),
            redirect_uris: mobile.map(|c| c.redirect_uris).unwrap_or_default(),
            scopes: vec![crate::identity::clients::SCOPE],
            metadata_url: crate::identity::oauth::routes::metadata_url(base),
            issuer: metadata.issuer,
            authorization_endpoint: metadata.authorization_endpoint,
            token_endpoint: metadata.token_endpoint,
            revocation_endpoint: metadata.revocation_endpoint,
            code_challenge_methods: metadata.code_challenge_methods_supported,
            grant_types: metadata.grant_types_supported,
        },
        web_oauth: WebOauth {
            client_id: oauth.web_client_id.clone(),
            redirect_uris: web.map(|c| c.redirect_uris).unwrap_or_default(),
        },
        multi_factor: vec!["totp", "recovery_code"],
        access_token_lifetime_seconds: oauth.access_token_ttl_secs,
        refresh_token_lifetime_days: oauth.refresh_token_ttl_days,
    }
}

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get("/capabilities", "getCapabilities", "Capabilities")
            .summary("What this server supports")
            .public()
            .ok::<Capabilities>(),
        get(show),
    )
}

async fn show(
    State(state): State<AppState>,
    crate::http::origin::BaseUrl(base): crate::http::origin::BaseUrl,
) -> Response {
    let key = state
        .db
        .read(|conn| crate::reminders::vapid(conn).map(|v| v.public_key))
        .await;
    if let Err(e) = &key {
        tracing::warn!("capabilities: the VAPID key cannot be read: {e}");
    }
    respond::ok(document(&state, &base, key.ok().as_deref()))
}
