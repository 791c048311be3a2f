//! How sign-in is configured: the registered OAuth clients and token
//! lifetimes, and the identity provider of delegated sign-in.

pub const DEFAULT_MOBILE_CLIENT_ID: &str = "pillbox-mobile";
pub const DEFAULT_MOBILE_REDIRECT_URI: &str = "pillbox://oauth/callback";
pub const DEFAULT_WEB_CLIENT_ID: &str = "pillbox-web";
pub const DEFAULT_ACCESS_TOKEN_TTL_SECS: u64 = 3600;
pub const DEFAULT_REFRESH_TOKEN_TTL_DAYS: u64 = 60;
/// Appended to the public URL when no web redirect URI is configured.
pub const DEFAULT_WEB_REDIRECT_PATH: &str = "/app/oauth/callback";

pub const DEFAULT_OIDC_NAME: &str = "single sign-on";

/// The OpenID Connect provider of delegated sign-in.
#[derive(Clone)]
pub struct OidcSettings {
    /// Exactly as the provider's ID tokens name it (`iss`).
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Shown on the button: "Sign in with <name>".
    pub name: String,
    /// `acr` values that mean the provider performed a second factor.
    pub mfa_acr_values: Vec<String>,
}

impl std::fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("name", &self.name)
            .field("mfa_acr_values", &self.mfa_acr_values)
            .finish_non_exhaustive()
    }
}

/// The registered public clients and token lifetimes of the sign-in server.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    pub mobile_client_id: String,
    pub mobile_redirect_uris: Vec<String>,
    pub web_client_id: String,
    /// Empty: the public URL followed by `DEFAULT_WEB_REDIRECT_PATH`.
    pub web_redirect_uris: Vec<String>,
    pub access_token_ttl_secs: u64,
    pub refresh_token_ttl_days: u64,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            mobile_client_id: DEFAULT_MOBILE_CLIENT_ID.into(),
            mobile_redirect_uris: vec![DEFAULT_MOBILE_REDIRECT_URI.into()],
            web_client_id: DEFAULT_WEB_CLIENT_ID.into(),
            web_redirect_uris: Vec::new(),
            access_token_ttl_secs: DEFAULT_ACCESS_TOKEN_TTL_SECS,
            refresh_token_ttl_days: DEFAULT_REFRESH_TOKEN_TTL_DAYS,
        }
    }
}
