//! Sign-in: the OAuth 2.0 authorization server for public clients (PKCE
//! S256), the server-rendered sign-in page, sign-in sessions and their
//! tokens, TOTP multi-factor with recovery codes, and the removed
//! password-login endpoints. An access token identifies the account; what
//! it may do in a household is decided at every request by `auth`.

pub mod clients;
pub mod csrf;
pub mod events;
pub mod form;
pub mod invitation;
pub mod mfa;
pub mod oauth;
pub mod oidc;
pub mod operator;
pub mod paths;
pub mod removed;
pub mod sessions;
pub mod settings;
pub mod sign_in;

use axum::Router;
use axum::routing::get;

use crate::http::openapi::Api;
use crate::state::AppState;
pub use form::{parse_form, parse_pairs};
pub use paths::{API_BASE, METADATA_PATH};

pub fn routes(api: Api) -> Api {
    let api = oauth::routes::routes(api);
    let api = sign_in::routes::routes(api);
    let api = sessions::routes::routes(api);
    let api = mfa::routes::routes(api);
    let api = oidc::identity_routes::routes(api);
    removed::routes(api)
}

/// Routes outside /api/v1: the discovery document sits where RFC 8414 says.
pub fn root_router() -> Router<AppState> {
    Router::new()
        .route(METADATA_PATH, get(oauth::routes::metadata))
        .merge(invitation::routes::router())
        .merge(oidc::routes::router())
}
