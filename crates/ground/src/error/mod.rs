//! The one error type of the service and its rendering as the spec's error envelope.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

pub mod request_id;

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Field name -> validation messages, rendered as the envelope's `errors`.
pub type FieldErrors = BTreeMap<String, Vec<String>>;

// The spec's error envelope (the `Error` component).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Error", deny_unknown_fields)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct ErrorBody {
    #[schemars(length(min = 1))]
    pub code: &'static str,
    #[schemars(length(min = 1))]
    pub message: String,
    #[schemars(length(min = 1))]
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "FieldErrors")]
    pub errors: Option<FieldErrors>,
}

// The rate-limit envelope (the `RateLimitError` component): the spec gives
// it no request id.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "RateLimitError", deny_unknown_fields)]
pub struct RateLimitEnvelope {
    pub error: RateLimitBody,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct RateLimitBody {
    #[schemars(extend("const" = RATE_LIMITED))]
    pub code: &'static str,
    #[schemars(length(min = 1))]
    pub message: &'static str,
}

const RATE_LIMITED: &str = "rate_limited";

/// Collects every problem with a submission so one 422 reports them all.
#[derive(Debug, Default)]
pub struct Problems(FieldErrors);

impl Problems {
    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0
            .entry(field.to_string())
            .or_default()
            .push(message.into());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when nothing was added, else a 422 with `message` and the fields.
    pub fn check(self, message: &str) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Validation {
                message: message.to_string(),
                errors: self.0,
            })
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Bearer credential absent, invalid, expired, revoked or no longer active.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// The caller may see the thing but cannot do this to it.
    #[error("{0}")]
    Forbidden(String),
    /// Does not exist inside the caller's authorised scope.
    #[error("{0}")]
    NotFound(String),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// A 422 with a named code of its own rather than field errors (the
    /// spec's `invitation_unavailable`).
    #[error("{message}")]
    Unprocessable { code: &'static str, message: String },
    /// A stale If-Match: a variant of its own so that a sync batch can turn
    /// it into `sync_conflict` by matching the type, not the code string.
    #[error("the resource has changed since it was read; reload it and retry with the new ETag")]
    StaleEtag,
    #[error("{message}")]
    Validation {
        message: String,
        errors: FieldErrors,
    },
    #[error("{0}")]
    PreconditionRequired(String),
    /// A removed endpoint: the message says what replaced it.
    #[error("{0}")]
    Gone(String),
    #[error("this method is not allowed on this path")]
    MethodNotAllowed,
    #[error("the request body must be JSON sent with Content-Type: application/json")]
    UnsupportedMediaType,
    #[error("request body is larger than the {0} byte limit")]
    PayloadTooLarge(usize),
    #[error("rate limit exceeded")]
    RateLimited { retry_after_secs: u64 },
    /// A feature switched off, or an outside service that cannot answer
    /// now (503).
    #[error("{message}")]
    Unavailable { code: &'static str, message: String },
    /// An outside service answered with something unusable (502).
    #[error("{message}")]
    BadGateway { code: &'static str, message: String },
    /// Never shown to the client; logged with the request id.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    pub fn not_found(what: &str) -> Self {
        ApiError::NotFound(format!("{what} not found"))
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::Forbidden(message.into())
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Unprocessable {
            code,
            message: message.into(),
        }
    }

    /// A stale If-Match: the resource changed since the client read it.
    pub fn stale_etag() -> Self {
        ApiError::StaleEtag
    }

    pub fn precondition_required() -> Self {
        ApiError::PreconditionRequired(
            "this change needs the resource's current ETag in the If-Match header".into(),
        )
    }

    /// A 422 naming one field.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let mut errors = FieldErrors::new();
        errors.insert(field.to_string(), vec![message.clone()]);
        ApiError::Validation {
            message: format!("{field} {message}"),
            errors,
        }
    }

    /// 503: the feature is off in this server's configuration.
    pub fn feature_unavailable(message: impl Into<String>) -> Self {
        ApiError::Unavailable {
            code: "feature_unavailable",
            message: message.into(),
        }
    }

    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Unavailable {
            code,
            message: message.into(),
        }
    }

    pub fn bad_gateway(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::BadGateway {
            code,
            message: message.into(),
        }
    }

    pub fn internal(err: impl std::fmt::Display) -> Self {
        ApiError::Internal(err.to_string())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } | ApiError::StaleEtag => StatusCode::CONFLICT,
            ApiError::Validation { .. } | ApiError::Unprocessable { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::PreconditionRequired(_) => StatusCode::PRECONDITION_REQUIRED,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::Conflict { code, .. }
            | ApiError::Unprocessable { code, .. }
            | ApiError::Unavailable { code, .. }
            | ApiError::BadGateway { code, .. } => code,
            ApiError::StaleEtag => "edit_conflict",
            ApiError::Validation { .. } => "validation_failed",
            ApiError::PreconditionRequired(_) => "precondition_required",
            ApiError::Gone(_) => "endpoint_removed",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::RateLimited { .. } => RATE_LIMITED,
            ApiError::Internal(_) => "internal_error",
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(err: rusqlite::Error) -> Self {
        ApiError::Internal(format!("database: {err}"))
    }
}

impl From<r2d2::Error> for ApiError {
    fn from(err: r2d2::Error) -> Self {
        ApiError::Internal(format!("database pool: {err}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if let ApiError::RateLimited { retry_after_secs } = self {
            let body = RateLimitEnvelope {
                error: RateLimitBody {
                    code: RATE_LIMITED,
                    message: "rate limit exceeded; retry after the number of seconds in Retry-After",
                },
            };
            let mut response = (status, axum::Json(body)).into_response();
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs.max(1)),
            );
            return response;
        }
        let request_id = request_id::current();
        let message = match &self {
            ApiError::Internal(detail) => {
                // Details stay in the log (they never carry secrets or clinical values).
                tracing::error!(request_id = %request_id, "{detail}");
                "internal server error; quote the request id when reporting it".to_string()
            }
            other => other.to_string(),
        };
        let errors = match &self {
            ApiError::Validation { errors, .. } if !errors.is_empty() => Some(errors.clone()),
            _ => None,
        };
        let body = ErrorEnvelope {
            error: ErrorBody {
                code: self.code(),
                message,
                request_id,
                errors,
            },
        };
        (status, axum::Json(body)).into_response()
    }
}
