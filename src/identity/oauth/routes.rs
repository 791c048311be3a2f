//! OAuth endpoint handlers: token, revocation, and the RFC 8414 metadata.
//! Their bodies are forms and their errors RFC 6749's, not the API's.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::de::DeserializeOwned;

use super::model::{Metadata, OAuthError, RevokeForm, TokenForm, TokenResponse};
use crate::http::openapi::{Api, Op};
use crate::http::origin::{BaseUrl, ClientAddress};
use crate::identity::clients;
use crate::identity::paths::{API_BASE, METADATA_PATH};
use crate::state::AppState;

const TAG: &str = "OAuth";
pub const AUTHORIZE_PATH: &str = "/oauth/authorize";
pub const TOKEN_PATH: &str = "/oauth/token";
pub const REVOKE_PATH: &str = "/oauth/revoke";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::post(TOKEN_PATH, "createOAuthToken", TAG)
            .summary("Token endpoint: redeem an authorization code (with its PKCE verifier) or rotate a refresh token")
            .description("Form-encoded (RFC 6749 4.1.3 and 6). A code is single-use and short-lived; using it twice revokes the tokens its first use issued. Each refresh returns a new refresh token; presenting an already-rotated one revokes the whole session.")
            .public()
            .form_body::<TokenForm>()
            .ok_unwrapped::<TokenResponse>()
            .plain_response::<OAuthError>(400, "An RFC 6749 5.2 error: invalid_request, invalid_grant, unsupported_grant_type")
            .plain_response::<OAuthError>(401, "invalid_client: the client is not registered"),
        post(token),
    )
    .route(
        Op::post(REVOKE_PATH, "deleteOAuthToken", TAG)
            .summary("Revocation endpoint (RFC 7009): revoke the session of an access or refresh token")
            .description("Form-encoded. Answers 200 with no body whether or not the token was live, except for a live token issued to another client than the client_id given, which is refused (RFC 7009 2.1) and stays valid.")
            .public()
            .form_body::<RevokeForm>()
            .plain_response::<OAuthError>(400, "invalid_request: no token given; unauthorized_client: the token was issued to another client"),
        post(revoke),
    )
}

fn parse_form<T: DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, OAuthError> {
    crate::identity::form::parse_form(headers, body).map_err(OAuthError::invalid_request)
}

async fn token(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    body: Bytes,
) -> Response {
    let form: TokenForm = match parse_form(&headers, &body) {
        Ok(form) => form,
        Err(e) => return e.into_response(),
    };
    let context = super::Context {
        clients: clients::registered(
            state.part::<crate::identity::settings::OAuthSettings>(),
            &base,
        ),
        lifetimes: (&**state.part::<crate::identity::settings::OAuthSettings>()).into(),
        address,
    };
    match state
        .db
        .write(move |tx| super::exchange(tx, &context, &form))
        .await
    {
        Ok(Ok(tokens)) => {
            let mut response = (StatusCode::OK, axum::Json(tokens)).into_response();
            response
                .headers_mut()
                .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            response
        }
        Ok(Err(oauth)) => oauth.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    body: Bytes,
) -> Response {
    let form: RevokeForm = match parse_form(&headers, &body) {
        Ok(form) => form,
        Err(e) => return e.into_response(),
    };
    let Some(token) = form.token.filter(|t| !t.is_empty()) else {
        return OAuthError::invalid_request("token is required").into_response();
    };
    let client_id = form.client_id;
    match state
        .db
        .write(move |tx| super::revoke(tx, &token, client_id.as_deref(), &address))
        .await
    {
        Ok(Ok(())) => StatusCode::OK.into_response(),
        Ok(Err(refused)) => refused.into_response(),
        Err(e) => e.into_response(),
    }
}

/// The discovery document; the issuer is the server's public URL.
pub fn metadata_document(base: &str) -> Metadata {
    let api = format!("{base}{API_BASE}");
    Metadata {
        issuer: base.to_string(),
        authorization_endpoint: format!("{api}{AUTHORIZE_PATH}"),
        token_endpoint: format!("{api}{TOKEN_PATH}"),
        revocation_endpoint: format!("{api}{REVOKE_PATH}"),
        response_types_supported: vec!["code"],
        response_modes_supported: vec!["query"],
        grant_types_supported: vec!["authorization_code", "refresh_token"],
        code_challenge_methods_supported: vec!["S256"],
        token_endpoint_auth_methods_supported: vec!["none"],
        revocation_endpoint_auth_methods_supported: vec!["none"],
        scopes_supported: vec![clients::SCOPE],
        authorization_response_iss_parameter_supported: true,
    }
}

pub fn metadata_url(base: &str) -> String {
    format!("{base}{METADATA_PATH}")
}

pub async fn metadata(BaseUrl(base): BaseUrl) -> Response {
    axum::Json(metadata_document(&base)).into_response()
}
