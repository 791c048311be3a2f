//! What reminder tests share: a clock the test moves, and device tokens of
//! the shapes the push services document.

use std::sync::{Arc, Mutex};

use pillbox::reminders::Clock;

/// The time as the test sets it.
pub struct ManualClock(Mutex<jiff::Timestamp>);

impl ManualClock {
    pub fn at(text: &str) -> Arc<ManualClock> {
        Arc::new(ManualClock(Mutex::new(text.parse().unwrap())))
    }

    pub fn set(&self, text: &str) {
        *self.0.lock().unwrap() = text.parse().unwrap();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> jiff::Timestamp {
        *self.0.lock().unwrap()
    }
}

/// An FCM registration token and an APNs device token of the shapes the
/// services document.
pub const FCM_TOKEN: &str = "dQw4w9WgXcQ:APA91bPtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA_2O76UMFxFkM_R5Kjp1vRt-1fjORS_6ilI8ihN5KXSc7Tvo_hBKqFYY_kv5ZJr3J1TWDtkwtDDb-xHKas1VOqg6YYZYn9Zh";

pub const APNS_TOKEN: &str = "626e53a13043b026c48bbf33feff9243a8f506b40928b5b7a767c76fb008f86b";
