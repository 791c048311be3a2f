//! The composition root: the one module that names every area. It puts each
//! area's part into the state, assembles the Router and the OpenAPI
//! document from each area's routes, and wraps them in what every request
//! goes through. Nothing below imports it.

mod document;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;

use crate::config::Settings;
use crate::db::Db;
use crate::error::ApiError;
use crate::http::openapi::{Api, Op};
use crate::http::{API_PREFIX, MAX_JSON_BODY};
use crate::limits::RateLimits;
use crate::state::{AppState, ServerSettings};

/// The state of a server configured with `settings`: the server's own
/// settings, and each area's part.
pub fn state(db: Db, settings: Settings) -> AppState {
    let rate_limits = RateLimits::new(
        settings.rate_limit_per_minute,
        settings.auth_failure_limit_per_minute,
        settings.trusted_proxies,
    );
    let server = ServerSettings {
        public_url: Arc::new(crate::state::PublicUrl::configured(
            settings.public_url.clone(),
        )),
        trusted_proxies: settings.trusted_proxies,
    };
    let mfa_key = crate::identity::mfa::crypt::MfaKey::for_database(&db);
    let policy = crate::household::invitations::Policy {
        ttl_days: settings.invitation_ttl_days,
        email: settings.mail.is_some(),
    };
    let mut state = AppState::new(db, server, rate_limits)
        .with::<crate::identity::settings::OAuthSettings>(settings.oauth)
        .with::<crate::reminders::settings::ReminderSettings>(settings.reminders)
        .with::<crate::household::invitations::Policy>(policy)
        .with::<crate::backup::schedule::Status>(Arc::default())
        .with::<crate::web::setup_link::SetupLink>(Arc::default())
        .with::<crate::lookup::Services>(crate::lookup::Services::new(
            settings.terminology.as_ref(),
        ))
        .with::<dyn crate::medicine::forecast::PlannedUse>(
            Arc::new(crate::care::forecast::CarePlan)
                as Arc<dyn crate::medicine::forecast::PlannedUse>,
        )
        .with::<crate::portable::kdf_pool::KdfPool>(crate::portable::kdf_pool::KdfPool::new(
            settings.kdf_workers,
            settings.kdf_queue,
        ));
    // What is not configured is left out: its area reads the absence as
    // "off" (no mail server, no provider, no lookup, no suggestions).
    if let Some(key) = mfa_key {
        state.insert(Arc::new(key));
    }
    if let Some(mail) = settings.mail {
        state.insert(Arc::new(mail));
    }
    if let Some(oidc) = settings.oidc {
        state.insert(Arc::new(oidc));
    }
    if let Some(terminology) = settings.terminology {
        state.insert(Arc::new(terminology));
    }
    if let Some(ai) = settings.ai {
        state.insert(Arc::new(ai));
    }
    state
}

/// Every operation of the service, documented as it is routed.
pub fn api() -> Api {
    let api = Api::new();
    let api = crate::capabilities::routes(api);
    let api = openapi_route(api);
    let api = crate::auth::routes::routes(api);
    let api = crate::identity::routes(api);
    let api = crate::household::routes(api);
    let api = crate::household_settings::routes::routes(api);
    let api = crate::medicine::routes(api);
    let api = crate::care::routes(api);
    let api = crate::reminders::routes::routes(api);
    let api = crate::sync::routes(api);
    let api = crate::reports::routes(api);
    let api = crate::lookup::routes::routes(api);
    crate::portable::routes(api)
}

fn openapi_route(api: Api) -> Api {
    api.schema(
        "OpenApiDocument",
        serde_json::json!({"type": "object", "required": ["openapi", "paths"]}),
    )
    .route(
        Op::get("/openapi.json", "getOpenApiDocument", "Contract")
            .summary("This OpenAPI 3.1 document")
            .public()
            .ok_named("OpenApiDocument"),
        get(|State(state): State<AppState>| async move {
            (
                [(header::CONTENT_TYPE, "application/json")],
                state.openapi.clone(),
            )
        }),
    )
}

/// The whole service as one Router (tests call this directly).
pub fn app(mut state: AppState) -> Router {
    let (routes, doc) = api().finish(document::head(crate::identity::clients::SCOPE));
    state.set_openapi(
        serde_json::to_vec(&doc)
            .expect("OpenAPI document serialises")
            .into(),
    );
    let v1 = routes
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed);
    let routes = Router::new()
        .nest(API_PREFIX, v1)
        .merge(crate::identity::root_router())
        .merge(crate::web::router())
        .merge(crate::mcp::routes::router(&state))
        .fallback(route_not_found)
        .with_state(state.clone());
    // Layers go around the whole Router, not each of its routes
    // (`Router::layer`): axum clones a route's stack of layers for every
    // request, and each layer clones the rest again (about 40 allocations a
    // request for four layers). A route that takes larger bodies (imports,
    // pictures) sets its own limit, which wins over this one.
    let around = tower::ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(state, every_request))
        .layer(DefaultBodyLimit::max(MAX_JSON_BODY));
    Router::new().fallback_service(around.service(routes))
}

async fn route_not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// What every request goes through: the toolkit's envelope (an id, the
/// cache and page headers, one log line) around the rate limit, which
/// verifies a presented credential once.
async fn every_request(state: State<AppState>, request: Request, next: Next) -> Response {
    crate::http::around(request, |request| {
        crate::auth::rate_limit(state, request, next)
    })
    .await
}
