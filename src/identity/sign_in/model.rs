//! What the sign-in page is sent: the authorization request and the
//! page's forms.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The authorization request (RFC 6749 4.1.1 with RFC 7636's challenge),
/// as query parameters of the page or hidden fields of its forms.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AuthorizeParams {
    /// Must be `code`
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    /// Must equal one of the client's registered redirect URIs exactly
    pub redirect_uri: Option<String>,
    /// Returned to the client untouched
    pub state: Option<String>,
    /// BASE64URL(SHA256(code_verifier)), 43 characters
    pub code_challenge: Option<String>,
    /// Must be `S256`
    pub code_challenge_method: Option<String>,
    /// `pillbox` (the default)
    pub scope: Option<String>,
    /// A name for the device shown in the session list (default: from the user agent)
    pub device_label: Option<String>,
    /// From the page of a delegated sign-in no account matched, in the
    /// browser the provider sent back (it holds the same token in a
    /// cookie): after signing in, the account is asked to confirm linking
    /// that identity-provider identity to it
    pub link_token: Option<String>,
}

impl AuthorizeParams {
    /// The parameters present, for hidden form fields.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        [
            ("response_type", &self.response_type),
            ("client_id", &self.client_id),
            ("redirect_uri", &self.redirect_uri),
            ("state", &self.state),
            ("code_challenge", &self.code_challenge),
            ("code_challenge_method", &self.code_challenge_method),
            ("scope", &self.scope),
            ("device_label", &self.device_label),
            ("link_token", &self.link_token),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_deref().map(|v| (name, v)))
        .collect()
    }
}

/// The sign-in form: the authorization request, the CSRF token, and either
/// the password step or the second step's fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SignInForm {
    #[serde(flatten)]
    pub request: AuthorizeParams,
    /// The token of the page's CSRF cookie
    pub csrf_token: Option<String>,
    pub email: Option<String>,
    pub password: Option<String>,
    /// Names the sign-in waiting for its second factor (second step)
    pub mfa_token: Option<String>,
    /// The authenticator's current code (second step)
    pub code: Option<String>,
    /// An unused recovery code instead of a code (second step)
    pub recovery_code: Option<String>,
    /// `oidc`: sign in with the configured identity provider instead
    pub provider: Option<String>,
    /// The confirmation page's secret (after signing in on a link's page)
    pub link_confirm: Option<String>,
    /// The answer on the confirmation page: `link`, or `skip` to sign in without linking
    pub link_answer: Option<String>,
}
