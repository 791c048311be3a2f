//! OAuth shapes: form bodies (RFC 6749, 7009, 7636), the token response,
//! RFC 6749 section 5.2 errors and the RFC 8414 metadata.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters the server does not know are ignored, as RFC 6749 3.2 says.
///
/// The token endpoint's form: `authorization_code` (with `code`,
/// `redirect_uri`, `code_verifier`) or `refresh_token` (with `refresh_token`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TokenForm {
    /// `authorization_code` or `refresh_token`
    #[schemars(extend("enum" = ["authorization_code", "refresh_token"]))]
    pub grant_type: Option<String>,
    /// The public client's id
    pub client_id: Option<String>,
    /// The authorization code (authorization_code grant)
    pub code: Option<String>,
    /// The redirect URI the code was requested with (authorization_code grant)
    pub redirect_uri: Option<String>,
    /// The PKCE code verifier, 43 to 128 characters (authorization_code grant)
    pub code_verifier: Option<String>,
    /// The refresh token (refresh_token grant)
    pub refresh_token: Option<String>,
    /// Ignored: a refresh keeps the scope of the sign-in
    pub scope: Option<String>,
}

/// The revocation endpoint's form (RFC 7009).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RevokeForm {
    /// An access token (pbx_at_...) or refresh token (pbx_rt_...)
    pub token: Option<String>,
    /// `access_token` or `refresh_token`; either way the whole session is revoked
    pub token_type_hint: Option<String>,
    pub client_id: Option<String>,
}

/// A successful token response (RFC 6749 section 5.1).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TokenResponse {
    /// Opaque bearer token, `pbx_at_...`
    pub access_token: String,
    #[schemars(extend("const" = "Bearer"))]
    pub token_type: &'static str,
    /// Seconds until the access token expires
    pub expires_in: u64,
    /// Opaque, single-use refresh token, `pbx_rt_...`; each refresh returns a new one
    pub refresh_token: String,
    pub scope: String,
}

/// An error response (RFC 6749 section 5.2).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OAuthError {
    /// invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type or invalid_scope
    pub error: &'static str,
    pub error_description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError {
            error,
            error_description: description.into(),
        }
    }

    pub fn invalid_request(description: impl Into<String>) -> OAuthError {
        OAuthError::new("invalid_request", description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> OAuthError {
        OAuthError::new("invalid_grant", description)
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let status = if self.error == "invalid_client" {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::BAD_REQUEST
        };
        (status, axum::Json(self)).into_response()
    }
}

/// Authorization server metadata (RFC 8414).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Metadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub revocation_endpoint: String,
    pub response_types_supported: Vec<&'static str>,
    pub response_modes_supported: Vec<&'static str>,
    pub grant_types_supported: Vec<&'static str>,
    pub code_challenge_methods_supported: Vec<&'static str>,
    pub token_endpoint_auth_methods_supported: Vec<&'static str>,
    pub revocation_endpoint_auth_methods_supported: Vec<&'static str>,
    pub scopes_supported: Vec<&'static str>,
    pub authorization_response_iss_parameter_supported: bool,
}
