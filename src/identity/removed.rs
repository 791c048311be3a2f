//! The password-login endpoints of the older API (spec Authentication 6
//! and Versioning 4): still listed in the contract, deprecated, and
//! answering 410 Gone with a pointer to the OAuth flow that replaced them.

use axum::routing::{any, post};

use crate::error::ApiError;
use crate::http::openapi::{Api, Op};
use crate::http::origin::BaseUrl;
use crate::identity::oauth;

const TAG: &str = "Sessions";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::post("/auth/login", "createLoginSession", TAG)
            .summary("Removed: password login. Answers 410; sign in with OAuth (authorization code with PKCE)")
            .public()
            .removed(201),
        post(gone),
    )
    .route(
        Op::post("/auth/refresh", "refreshSession", TAG)
            .summary("Removed: token refresh. Answers 410; refresh at the OAuth token endpoint")
            .public()
            .removed(200),
        post(gone),
    )
    .route(
        Op::post("/auth/oidc_exchange", "exchangeOidcSession", TAG)
            .summary("Removed: OIDC token exchange. Answers 410; sign in with OAuth (authorization code with PKCE)")
            .public()
            .removed(201),
        post(gone),
    )
    .removed_route("/auth/select_household", any(gone))
}

/// 410 naming the discovery document of the flow that replaced the endpoint.
async fn gone(BaseUrl(base): BaseUrl) -> ApiError {
    ApiError::Gone(format!(
        "this endpoint was removed; sign in with the OAuth authorization code flow with PKCE described at {}",
        oauth::routes::metadata_url(&base)
    ))
}
