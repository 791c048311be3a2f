//! Outside knowledge for setting a household up: medication lookup in the
//! national medicines dictionary (dm+d, through a FHIR terminology server)
//! and AI set-up suggestions from an OpenAI-compatible endpoint. Every
//! outbound call goes through the one client in `outbound`.

pub mod ai;
pub mod ai_model;
pub mod limiter;
pub mod model;
pub mod outbound;
pub mod routes;
pub mod terminology;

use std::sync::Arc;
use std::time::Duration;

/// The NHS England terminology server (FHIR R4).
pub const DEFAULT_TERMINOLOGY_URL: &str = "https://ontology.nhs.uk/production1/fhir";
/// Its OAuth 2.0 token endpoint (client_credentials).
pub const DEFAULT_TERMINOLOGY_TOKEN_URL: &str = "https://ontology.nhs.uk/authorisation/auth/realms/nhs-digital-terminology/protocol/openid-connect/token";
/// The dictionary's documented rate: requests per window, across the server.
pub const UPSTREAM_LIMIT: u32 = 5000;
pub const UPSTREAM_WINDOW: Duration = Duration::from_secs(300);

/// What administrators are told while lookup is off.
pub const LOOKUP_OFF_WARNING: &str =
    "medication search is unavailable because credentials are not configured";

/// A setting that must never be printed: `Debug` shows only that it is set.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Medication lookup: present only when both dm+d credentials are set.
#[derive(Debug, Clone)]
pub struct TerminologySettings {
    pub client_id: String,
    pub client_secret: Secret,
    /// FHIR base URL, without a trailing slash.
    pub base_url: String,
    pub token_url: String,
    /// Upstream requests allowed per `window`, across the whole server.
    pub limit: u32,
    pub window: Duration,
    /// Longest wait for one upstream answer.
    pub timeout: Duration,
}

impl TerminologySettings {
    /// `None` (lookup off) unless both the client id and secret are set
    /// and not blank.
    pub fn configured(
        client_id: Option<&str>,
        client_secret: Option<&str>,
        base_url: &str,
        token_url: &str,
    ) -> Option<TerminologySettings> {
        let client_id = client_id.map(str::trim).filter(|s| !s.is_empty())?;
        let client_secret = client_secret.map(str::trim).filter(|s| !s.is_empty())?;
        Some(TerminologySettings {
            client_id: client_id.to_string(),
            client_secret: Secret::new(client_secret),
            base_url: base_url.trim().trim_end_matches('/').to_string(),
            token_url: token_url.trim().to_string(),
            limit: UPSTREAM_LIMIT,
            window: UPSTREAM_WINDOW,
            timeout: Duration::from_secs(15),
        })
    }
}

/// AI suggestions: present once an endpoint and a model are set.
#[derive(Debug, Clone)]
pub struct AiSettings {
    /// OpenAI-compatible base URL (the part before `/chat/completions`).
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// Longest wait for the model's answer (a local model can be slow).
    pub timeout: Duration,
}

impl AiSettings {
    pub fn configured(
        base_url: Option<&str>,
        model: Option<&str>,
        api_key: Option<&str>,
    ) -> Option<AiSettings> {
        let base_url = base_url.map(str::trim).filter(|s| !s.is_empty())?;
        let model = model.map(str::trim).filter(|s| !s.is_empty())?;
        Some(AiSettings {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: api_key
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Secret::new),
            timeout: Duration::from_secs(120),
        })
    }
}

/// What lookup and suggestions share across the server: the outbound
/// client and the dictionary's rate limiter.
pub struct Services {
    pub http: outbound::Outbound,
    pub dictionary_limiter: limiter::Limiter,
}

impl Services {
    pub fn new(terminology: Option<&TerminologySettings>) -> Arc<Services> {
        let (limit, window) = terminology
            .map(|t| (t.limit, t.window))
            .unwrap_or((UPSTREAM_LIMIT, UPSTREAM_WINDOW));
        Arc::new(Services {
            http: outbound::Outbound::new(),
            dictionary_limiter: limiter::Limiter::new(limit, window),
        })
    }
}
