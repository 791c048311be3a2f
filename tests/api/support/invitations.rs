//! Invited accounts: signed in with a session of their own, the
//! invitation's token read from its link, and the page the link opens.

use axum::http::Method;
use serde_json::Value;

use super::sign_in::{pkce, redeem, sign_in};
use super::{TestApp, TestResponse, password_hash};

/// Makes an account for `email` and signs it in; answers its access token.
pub async fn session_for(app: &TestApp, email: &str) -> String {
    let owned = email.to_string();
    app.db
        .write(move |tx| pillbox::auth::accounts::create(tx, &owned, password_hash(), None))
        .await
        .unwrap();
    signed_in(app, email).await
}

/// Signs an existing account in; answers its access token.
pub async fn signed_in(app: &TestApp, email: &str) -> String {
    let (verifier, challenge) = pkce();
    let code = sign_in(app, &challenge, email, None).await;
    let r = redeem(app, &code, &verifier).await;
    r.assert_status(200);
    r.body["access_token"].as_str().unwrap().to_string()
}

pub fn token_of(created: &Value) -> String {
    let url = created["accept_url"].as_str().expect("an accept_url");
    let token = url.split("token=").nth(1).expect("a token in the link");
    assert!(token.starts_with("pbx_inv_"), "{url}");
    token.to_string()
}

pub async fn open(app: &TestApp, token: &str) -> TestResponse {
    let query = serde_urlencoded::to_string([("token", token)]).unwrap();
    app.raw(
        Method::GET,
        &format!("/invitation?{query}"),
        None,
        None,
        &[],
    )
    .await
}
