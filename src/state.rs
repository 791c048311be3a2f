//! Shared state handed to every handler.

use std::sync::Arc;

use axum::body::Bytes;

use crate::config::Settings;
use crate::db::Db;
use crate::limits::RateLimits;

#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub settings: Arc<Settings>,
    pub rate_limits: Arc<RateLimits>,
    /// The served OpenAPI document, serialised once at start.
    pub openapi: Bytes,
    /// Scheduled backups: whether they run and how the last one went.
    pub backups: Arc<crate::backup::schedule::Status>,
}

impl AppState {
    pub fn new(db: Db, settings: Settings) -> AppState {
        let rate_limits = Arc::new(RateLimits::new(
            settings.rate_limit_per_minute,
            settings.auth_failure_limit_per_minute,
            settings.trusted_proxies,
        ));
        AppState {
            db,
            settings: Arc::new(settings),
            rate_limits,
            openapi: Bytes::new(),
            backups: Arc::default(),
        }
    }
}
