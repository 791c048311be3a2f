//! What the provider sends: its discovery document, token response, key
//! set and the ID token's parts. Only the fields used here are read.

use serde::{Deserialize, Serialize};

use crate::identity::sign_in::AuthorizeParams;

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
}

impl Claims {
    pub fn email_verified(&self) -> bool {
        matches!(&self.email_verified, Some(serde_json::Value::Bool(true)))
            || matches!(&self.email_verified, Some(serde_json::Value::String(s)) if s == "true")
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
