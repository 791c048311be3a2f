//! The one outbound HTTP client of lookup and suggestions: rustls, a
//! connect timeout, a per-request timeout, no redirects and a bounded
//! answer. Failures are reduced to what may be logged and shown: the
//! service's name and the kind of failure, never a URL (the query holds
//! what was searched), a credential or a body.

use std::time::Duration;

use serde_json::Value;

use crate::error::{ApiError, Result};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Larger answers are refused rather than held in memory.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why an outside call gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No connection, or no answer within the timeout.
    Unreachable,
    /// The service said it is overloaded or limiting us (429, 503).
    Busy,
    /// Credentials refused (401, 403).
    Refused,
    /// Any other non-success status.
    Status(u16),
    /// A success whose body is not JSON, or is too large.
    Malformed,
}

impl Failure {
    /// The API error for a failure of `service` (e.g. "the medicines
    /// dictionary"): 503 when trying again later may work, 502 otherwise.
    pub fn to_error(&self, service: &str) -> ApiError {
        tracing::warn!(service, failure = ?self, "outbound call failed");
        match self {
            Failure::Unreachable => ApiError::unavailable(
                "upstream_unavailable",
                format!("{service} did not answer in time; try again later"),
            ),
            Failure::Busy => ApiError::unavailable(
                "upstream_busy",
                format!("{service} is busy; try again later"),
            ),
            Failure::Refused => ApiError::bad_gateway(
                "upstream_error",
                format!("{service} refused this server's credentials"),
            ),
            Failure::Status(status) => ApiError::bad_gateway(
                "upstream_error",
                format!("{service} answered with an error ({status})"),
            ),
            Failure::Malformed => ApiError::bad_gateway(
                "upstream_error",
                format!("{service} gave an answer this server cannot read"),
            ),
        }
    }
}

pub struct Outbound {
    client: Option<reqwest::Client>,
}

impl Default for Outbound {
    fn default() -> Self {
        Outbound::new()
    }
}

impl Outbound {
    pub fn new() -> Outbound {
        // Installed once per process; a later call finds it installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pillbox/", env!("CARGO_PKG_VERSION")))
            .build()
            .inspect_err(|_| tracing::error!("the outbound HTTP client cannot start"))
            .ok();
        Outbound { client }
    }

    fn client(&self) -> Result<&reqwest::Client> {
        self.client
            .as_ref()
            .ok_or_else(|| ApiError::internal("the outbound HTTP client is unavailable"))
    }

    /// A form POST (OAuth token requests).
    pub async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<std::result::Result<Value, Failure>> {
        let body = serde_urlencoded::to_string(form).map_err(ApiError::internal)?;
        let request = self
            .client()?
            .post(url)
            .timeout(timeout)
            .header(reqwest::header::ACCEPT, "application/json")
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        Ok(send(request).await)
    }

    /// A JSON POST, with a bearer token when one is given.
    pub async fn post_json(
        &self,
        url: &str,
        bearer: Option<&str>,
        body: &Value,
        timeout: Duration,
    ) -> Result<std::result::Result<Value, Failure>> {
        let body = serde_json::to_vec(body).map_err(ApiError::internal)?;
        let mut request = self
            .client()?
            .post(url)
            .timeout(timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body);
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        Ok(send(request).await)
    }
}

async fn send(request: reqwest::RequestBuilder) -> std::result::Result<Value, Failure> {
    // reqwest's errors name the URL; only the kind of failure is kept.
    let mut response = request.send().await.map_err(|_| Failure::Unreachable)?;
    let status = response.status().as_u16();
    match status {
        200..=299 => {}
        401 | 403 => return Err(Failure::Refused),
        429 | 503 => return Err(Failure::Busy),
        _ => return Err(Failure::Status(status)),
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(Failure::Malformed);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) if e.is_timeout() => return Err(Failure::Unreachable),
            Err(_) => return Err(Failure::Malformed),
        }
    }
    serde_json::from_slice(&body).map_err(|_| Failure::Malformed)
}
