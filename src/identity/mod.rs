//! Sign-in: the OAuth 2.0 authorization server for public clients (PKCE
//! S256), the server-rendered sign-in page, sign-in sessions and their
//! tokens, TOTP multi-factor with recovery codes, and the removed
//! password-login endpoints. An access token identifies the account; what
//! it may do in a household is decided at every request by `auth`.

pub mod clients;
pub mod csrf;
pub mod events;
pub mod invitation;
pub mod mfa;
pub mod oauth;
pub mod oidc;
pub mod operator;
pub mod removed;
pub mod sessions;
pub mod settings;
pub mod sign_in;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::routing::get;

use crate::http::openapi::Api;
pub use crate::http::origin::{BaseUrl, ClientAddress, base_url, is_https};
use crate::state::AppState;

/// The API's base path (`http::API_PREFIX`), which the OAuth endpoints sit
/// under; named here so that identity does not import the router's module.
pub const API_BASE: &str = "/api/v1";

/// Where RFC 8414 puts the metadata of an issuer without a path.
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

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

/// Parses a form body: RFC 6749 3.2 wants the form media type and each
/// parameter at most once. The error is a sentence for the client.
pub fn parse_form<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T, String> {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form_type {
        return Err("the body must be sent as application/x-www-form-urlencoded".into());
    }
    parse_pairs(body)
}

/// Parses `a=1&b=2` (a form body or a query string) into `T`; a parameter
/// given twice is refused.
pub fn parse_pairs<T: serde::de::DeserializeOwned>(text: &[u8]) -> Result<T, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(text).map_err(|_| "the parameters are not a valid form")?;
    let mut map = serde_json::Map::new();
    for (name, value) in pairs {
        if map
            .insert(name.clone(), serde_json::Value::String(value))
            .is_some()
        {
            return Err(format!("{name} is given more than once"));
        }
    }
    serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|_| "a parameter has the wrong kind of value".to_string())
}
