//! Request budgets: token buckets keyed by whatever the caller verified
//! (a credential or an address). Pure counting, shared through the state;
//! how a request picks its bucket is `http::rate_limit`'s business.
//!
//! Each bucket holds `per_minute` requests and refills evenly over a minute.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

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

    pub fn is_on(&self) -> bool {
        self.per_minute > 0
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
        let refill = |b: &Bucket| {
            (b.tokens + now.duration_since(b.at).as_secs_f64() * per_second).min(capacity)
        };
        let refilled = match buckets.get_mut(key) {
            Some(bucket) => {
                let refilled = refill(bucket);
                bucket.at = now;
                bucket.tokens = if refilled >= 1.0 {
                    refilled - 1.0
                } else {
                    refilled
                };
                refilled
            }
            None => {
                buckets.insert(
                    key.to_string(),
                    Bucket {
                        tokens: capacity - 1.0,
                        at: now,
                    },
                );
                capacity
            }
        };
        if refilled >= 1.0 {
            Ok(())
        } else {
            let wait = ((1.0 - refilled) / per_second).ceil() as u64;
            Err(wait.max(1))
        }
    }
}

/// Every limit of the server and what it needs to find a client's address.
pub struct RateLimits {
    /// Per verified credential, and per address for requests without one.
    pub requests: RateLimiter,
    /// Failed authentications per address.
    pub auth_failures: RateLimiter,
    /// Reverse proxies in front of the server whose `X-Forwarded-For` entries are believed.
    pub trusted_proxies: usize,
}

impl RateLimits {
    pub fn new(per_minute: u32, auth_failures_per_minute: u32, trusted_proxies: usize) -> Self {
        RateLimits {
            requests: RateLimiter::new(per_minute),
            auth_failures: RateLimiter::new(auth_failures_per_minute),
            trusted_proxies,
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
