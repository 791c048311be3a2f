//! Shared state handed to every handler.

use std::sync::Arc;

use axum::body::Bytes;

use crate::config::Settings;
use crate::db::Db;
use crate::http::rate_limit::RateLimiter;

#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub settings: Arc<Settings>,
    pub rate_limiter: Arc<RateLimiter>,
    /// The served OpenAPI document, serialised once at start.
    pub openapi: Bytes,
}

impl AppState {
    pub fn new(db: Db, settings: Settings) -> AppState {
        let rate_limiter = Arc::new(RateLimiter::new(settings.rate_limit_per_minute));
        AppState {
            db,
            settings: Arc::new(settings),
            rate_limiter,
            openapi: Bytes::new(),
        }
    }
}
