//! Per-credential rate limit: a token bucket per bearer credential (or per
//! client address when there is none). `per_minute` requests refill evenly
//! over a minute; a burst of up to `per_minute` is allowed from a full bucket.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::token;
use crate::error::ApiError;
use crate::state::AppState;

/// Above this many tracked keys, idle (full) buckets are forgotten.
const PRUNE_ABOVE: usize = 10_000;

pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// `per_minute == 0` switches limiting off.
    pub fn new(per_minute: u32) -> Self {
        RateLimiter {
            per_minute,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `key`'s bucket, or says how many seconds until one is free.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < capacity
            });
        }
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let refilled = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_second)
            .min(capacity);
        bucket.at = now;
        if refilled >= 1.0 {
            bucket.tokens = refilled - 1.0;
            Ok(())
        } else {
            bucket.tokens = refilled;
            let wait = ((1.0 - refilled) / per_second).ceil() as u64;
            Err(wait.max(1))
        }
    }
}

pub async fn middleware(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let key = match token::bearer(request.headers()).and_then(token::selector) {
        Some(selector) => format!("credential:{selector}"),
        None => match request.extensions().get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) => format!("address:{}", addr.ip()),
            None => "address:unknown".to_string(),
        },
    };
    match state.rate_limiter.check(&key, Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(retry_after_secs) => {
            let mut response = ApiError::RateLimited { retry_after_secs }.into_response();
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-store"),
            );
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bucket_allows_the_minute_then_refuses_then_refills() {
        let limiter = RateLimiter::new(60);
        let t0 = Instant::now();
        for _ in 0..60 {
            assert!(limiter.check("a", t0).is_ok());
        }
        assert_eq!(limiter.check("a", t0), Err(1));
        assert!(limiter.check("b", t0).is_ok(), "keys are independent");
        assert!(limiter.check("a", t0 + Duration::from_millis(1100)).is_ok());
        assert!(
            limiter
                .check("a", t0 + Duration::from_millis(1100))
                .is_err()
        );
    }

    #[test]
    fn zero_switches_it_off() {
        let limiter = RateLimiter::new(0);
        let t0 = Instant::now();
        for _ in 0..10_000 {
            assert!(limiter.check("a", t0).is_ok());
        }
    }
}
