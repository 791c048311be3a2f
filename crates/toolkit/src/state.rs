//! Shared state handed to every handler: the database, the server's own
//! settings and rate limits, the served contract, and each area's parts.
//!
//! The state names no area. An area keeps what it needs at run time (its
//! settings, a key, a pool) as a *part*, a value of the area's own type
//! that the composition root (`crate::app`) puts in before the state is
//! handed out; the area reads it back by type. So the floor under the areas
//! carries their parts without knowing them, and no area reaches up to the
//! root to find its settings.

use std::any::{Any, TypeId, type_name};
use std::sync::Arc;

use axum::body::Bytes;

use crate::db::Db;
use crate::limits::RateLimits;

/// Cloned by every handler and middleware that takes it, on every request:
/// one reference count moves, not one per part.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

#[derive(Clone)]
pub struct Shared {
    pub db: Db,
    pub settings: Arc<ServerSettings>,
    pub rate_limits: Arc<RateLimits>,
    /// The served OpenAPI document, serialised once at start.
    pub openapi: Bytes,
    /// Each part is an `Arc<T>` boxed as `Any`, so it is read back as
    /// `&Arc<T>` and cloned cheaply by handlers that keep it.
    parts: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
}

/// What the server itself (not one area) is configured with.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// The address phones and browsers reach the server at; links and the
    /// OAuth issuer are built from it when set.
    pub public_url: Arc<PublicUrl>,
    /// Reverse proxies in front of the server whose `X-Forwarded-For`
    /// entries are believed.
    pub trusted_proxies: usize,
}

/// The public URL: the operator's `--public-url`, else the one the owner
/// gave at set-up (kept in the database), else none, and links follow the
/// address each request reached. The set-up page gives it while the server
/// runs, so it is read at each use.
#[derive(Debug, Default)]
pub struct PublicUrl {
    configured: Option<String>,
    given: std::sync::RwLock<Option<String>>,
}

impl PublicUrl {
    pub fn configured(url: Option<String>) -> PublicUrl {
        PublicUrl {
            configured: url.map(|u| u.trim_end_matches('/').to_string()),
            given: std::sync::RwLock::default(),
        }
    }

    pub fn get(&self) -> Option<String> {
        self.configured.clone().or_else(|| {
            self.given
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
    }

    /// Whether the operator set it (then nothing else changes it).
    pub fn is_configured(&self) -> bool {
        self.configured.is_some()
    }

    /// The address the owner gave, already checked and stored.
    pub fn remember(&self, url: String) {
        *self
            .given
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(url);
    }
}

impl AppState {
    pub fn new(db: Db, settings: ServerSettings, rate_limits: RateLimits) -> AppState {
        AppState(Arc::new(Shared {
            db,
            settings: Arc::new(settings),
            rate_limits: Arc::new(rate_limits),
            openapi: Bytes::new(),
            parts: Vec::new(),
        }))
    }

    /// Puts an area's part in (replacing one of the same type), while the
    /// state is put together, before it is handed out. A part may be a trait
    /// object (`dyn T`): how a lower area is handed an answer from above.
    pub fn with<T: ?Sized + Send + Sync + 'static>(mut self, part: impl Into<Arc<T>>) -> AppState {
        self.insert(part.into());
        self
    }

    /// As `with`, for a state already bound to a name (a clone taken
    /// earlier keeps what it had).
    pub fn insert<T: ?Sized + Send + Sync + 'static>(&mut self, part: Arc<T>) {
        let parts = &mut Arc::make_mut(&mut self.0).parts;
        parts.retain(|(id, _)| *id != TypeId::of::<T>());
        parts.push((TypeId::of::<T>(), Arc::new(part)));
    }

    /// The served document, set once the Router is assembled.
    pub fn set_openapi(&mut self, document: Bytes) {
        Arc::make_mut(&mut self.0).openapi = document;
    }
}

impl Shared {
    /// An area's part, or `None` when the root put none in (a feature that
    /// is not configured: no mail server, no identity provider).
    pub fn try_part<T: ?Sized + Send + Sync + 'static>(&self) -> Option<&Arc<T>> {
        // A dozen parts at most: a scan beats hashing the key.
        self.parts
            .iter()
            .find(|(id, _)| *id == TypeId::of::<T>())
            .and_then(|(_, part)| part.downcast_ref::<Arc<T>>())
    }

    /// A part every server has; its absence is a composition-root bug,
    /// caught by the first test that reaches the area.
    pub fn part<T: ?Sized + Send + Sync + 'static>(&self) -> &Arc<T> {
        self.try_part::<T>().unwrap_or_else(|| {
            panic!(
                "the composition root put no {} in the state",
                type_name::<T>()
            )
        })
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}
