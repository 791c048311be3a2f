//! What the provider sends: its discovery document, token response, key
//! set and the ID token's parts. Only the fields used here are read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::Timestamp;
use crate::http::openapi;
use crate::identity::sign_in::model::AuthorizeParams;

/// An identity of the identity provider that signs in as this account.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LinkedIdentity {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    /// The provider's issuer URL
    pub issuer: String,
    /// The name the provider gave the identity when it was linked (its email or user name)
    pub name: String,
    pub linked_at: Timestamp,
    pub last_used_at: Timestamp,
}

/// OpenID Connect Discovery 1.0, section 3.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
}

/// The token endpoint's answer (OpenID Connect Core 3.1.3.3).
#[derive(Debug, Deserialize)]
pub struct TokenResponse {
    pub id_token: Option<String>,
}

/// RFC 7517: a key set; only RSA signing keys are used.
#[derive(Debug, Clone, Deserialize)]
pub struct Jwks {
    #[serde(default)]
    pub keys: Vec<Jwk>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Jwk {
    pub kty: String,
    pub kid: Option<String>,
    #[serde(rename = "use")]
    pub use_: Option<String>,
    pub alg: Option<String>,
    pub n: Option<String>,
    pub e: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Header {
    pub alg: String,
    pub kid: Option<String>,
}

/// `aud` is one string or an array of them (Core 2).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    pub fn contains(&self, client_id: &str) -> bool {
        match self {
            Audience::One(aud) => aud == client_id,
            Audience::Many(auds) => auds.iter().any(|a| a == client_id),
        }
    }

    /// More than one audience: the authorized party (`azp`) must then be us.
    pub fn several(&self) -> bool {
        matches!(self, Audience::Many(auds) if auds.len() > 1)
    }
}

/// The claims of an ID token this server checks or uses.
#[derive(Debug, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: Audience,
    pub exp: i64,
    pub iat: Option<i64>,
    pub nonce: Option<String>,
    pub azp: Option<String>,
    pub email: Option<String>,
    /// A boolean, though some providers send the string "true"
    pub email_verified: Option<serde_json::Value>,
    pub preferred_username: Option<String>,
    /// How the provider authenticated the user: an array of RFC 8176
    /// values (a lone string from a lax provider is read as one).
    pub amr: Option<serde_json::Value>,
    pub acr: Option<String>,
}

impl Claims {
    pub fn email_verified(&self) -> bool {
        matches!(&self.email_verified, Some(serde_json::Value::Bool(true)))
            || matches!(&self.email_verified, Some(serde_json::Value::String(s)) if s == "true")
    }

    /// Whether the provider says it performed a second factor: an `amr` of
    /// `mfa`, `otp` or `hwk` (RFC 8176), or an `acr` the operator named.
    pub fn second_factor_done(&self, mfa_acr_values: &[String]) -> bool {
        let strong = |m: &serde_json::Value| matches!(m.as_str(), Some("mfa" | "otp" | "hwk"));
        let amr = match &self.amr {
            Some(serde_json::Value::Array(methods)) => methods.iter().any(strong),
            Some(method) => strong(method),
            None => false,
        };
        amr || self
            .acr
            .as_deref()
            .is_some_and(|acr| mfa_acr_values.iter().any(|v| v == acr))
    }

    /// The name a person knows this identity by: its email, else its user
    /// name, else the provider's subject; printable and short.
    pub fn label(&self) -> String {
        let name = [self.email.as_deref(), self.preferred_username.as_deref()]
            .into_iter()
            .flatten()
            .map(str::trim)
            .find(|n| !n.is_empty())
            .unwrap_or(&self.sub);
        name.chars().filter(|c| !c.is_control()).take(200).collect()
    }
}

/// Where a sign-in goes once the provider sends the browser back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Finish this authorization request of ours (a code for the app).
    Authorize {
        params: Box<AuthorizeParams>,
        device_label: String,
    },
    /// Accept the invitation whose token the browser holds in a cookie.
    Invitation,
}
