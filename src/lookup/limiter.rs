//! A sliding-window limit on requests to an outside service, shared by
//! every request of the server: at most `limit` calls in any `window`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Limiter {
    limit: usize,
    window: Duration,
    /// When each call of the current window was let through (at most
    /// `limit` entries, so memory stays bounded).
    sent: Mutex<VecDeque<Instant>>,
}

impl Limiter {
    pub fn new(limit: u32, window: Duration) -> Limiter {
        Limiter {
            limit: limit as usize,
            window,
            sent: Mutex::new(VecDeque::new()),
        }
    }

    /// Takes `calls` slots at once, or none: `Err` holds how long until
    /// enough slots are free. Taking them together means a lookup is never
    /// cut off half-way by the limit.
    pub fn acquire(&self, calls: usize) -> Result<(), Duration> {
        let now = Instant::now();
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        while sent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= self.window)
        {
            sent.pop_front();
        }
        if calls > self.limit {
            return Err(self.window);
        }
        if sent.len() + calls > self.limit {
            // The oldest entries leave the window first.
            let freeing = sent.len() + calls - self.limit;
            let at = sent[freeing - 1];
            return Err(self.window.saturating_sub(now.duration_since(at)));
        }
        sent.extend(std::iter::repeat_n(now, calls));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_taken_all_or_none() {
        let limiter = Limiter::new(5, Duration::from_secs(60));
        assert!(limiter.acquire(3).is_ok());
        assert!(limiter.acquire(3).is_err());
        assert!(limiter.acquire(2).is_ok());
        assert!(limiter.acquire(1).is_err());
    }

    #[test]
    fn slots_come_back_after_the_window() {
        let limiter = Limiter::new(2, Duration::from_millis(50));
        assert!(limiter.acquire(2).is_ok());
        let wait = limiter.acquire(1).unwrap_err();
        assert!(wait <= Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        assert!(limiter.acquire(2).is_ok());
    }
}
