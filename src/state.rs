//! Shared state handed to every handler.

use std::sync::Arc;

use axum::body::Bytes;

use crate::config::Settings;
use crate::db::Db;
use crate::identity::mfa::crypt::MfaKey;
use crate::limits::RateLimits;

/// Cloned by every handler and middleware that takes it, on every request:
/// one reference count moves, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

#[derive(Clone)]
pub struct Shared {
    pub db: Db,
    pub settings: Arc<Settings>,
    pub rate_limits: Arc<RateLimits>,
    /// The served OpenAPI document, serialised once at start.
    pub openapi: Bytes,
    /// Encrypts second-factor secrets; kept in the data directory. `None`
    /// when it could not be read or made (logged at start; enrolment and
    /// second-factor sign-in then fail with 500).
    pub mfa_key: Option<MfaKey>,
    /// Scheduled backups: whether they run and how the last one went.
    pub backups: Arc<crate::backup::schedule::Status>,
    /// The first-run set-up link of `serve`, while the server has no household.
    pub setup_link: Arc<crate::web::setup_link::SetupLink>,
    /// Outbound calls of lookup and suggestions, with the dictionary's
    /// server-wide rate limit.
    pub lookup: Arc<crate::lookup::Services>,
    /// Where the key derivations of encrypted bundles run, a few at a time.
    pub kdf: Arc<crate::portable::kdf_pool::KdfPool>,
}

impl AppState {
    pub fn new(db: Db, settings: Settings) -> AppState {
        let rate_limits = Arc::new(RateLimits::new(
            settings.rate_limit_per_minute,
            settings.auth_failure_limit_per_minute,
            settings.trusted_proxies,
        ));
        let mfa_key = db
            .path()
            .parent()
            .map(MfaKey::load_or_create)
            .and_then(|loaded| {
                loaded
                    .inspect_err(|e| tracing::error!("cannot read or create the MFA key: {e}"))
                    .ok()
            });
        AppState(Arc::new(Shared {
            db,
            rate_limits,
            openapi: Bytes::new(),
            mfa_key,
            backups: Arc::default(),
            setup_link: Arc::default(),
            lookup: crate::lookup::Services::new(settings.terminology.as_ref()),
            kdf: Arc::new(crate::portable::kdf_pool::KdfPool::new(
                settings.kdf_workers,
                settings.kdf_queue,
            )),
            settings: Arc::new(settings),
        }))
    }

    /// The parts, to change while the state is put together, before it is
    /// handed out (a clone taken earlier keeps what it had).
    pub fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Shared {
    pub fn mfa_key(&self) -> crate::error::Result<MfaKey> {
        self.mfa_key
            .clone()
            .ok_or_else(|| crate::error::ApiError::internal("the MFA key is unavailable"))
    }
}
