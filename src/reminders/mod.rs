//! Reminders that reach people: the member's delivery channels (Web Push
//! subscriptions, phone tokens, an ntfy topic), the engine that decides
//! which notifications fall due ([`engine`]), the outbox they wait in, and
//! the background task that delivers them with retries ([`deliver`],
//! [`task`]). Requests only register channels and queue tests; everything
//! else happens in the background.

pub mod deliver;
pub mod devices;
pub mod engine;
pub mod model;
pub mod routes;
pub mod store;
pub mod task;
pub mod webpush;

use rusqlite::Connection;

use crate::db::instance;
use crate::error::{ApiError, Result};

pub const DOSE_DUE: &str = "dose_due";
pub const MISSED_DOSE: &str = "missed_dose";
pub const LOW_STOCK: &str = "low_stock";
pub const TEST: &str = "test";

/// The missed-dose grace period of a household that never set one.
pub const DEFAULT_GRACE_MINUTES: i64 = 60;

/// Where the engine reads the time: the system clock when serving, a
/// clock the test moves in tests.
pub trait Clock: Send + Sync {
    fn now(&self) -> jiff::Timestamp;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// The server's VAPID key, made on first start and kept in the database.
pub fn vapid(conn: &Connection) -> Result<webpush::Vapid> {
    let secret = instance::secret(conn, instance::VAPID_PRIVATE_KEY)?;
    webpush::Vapid::from_secret(&secret)
        .ok_or_else(|| ApiError::internal("the stored VAPID key is not a P-256 private key"))
}

/// Why native push is off: this build has no FCM or APNs sender, so phone
/// tokens are kept (and reached once it has) but nothing is sent to them.
pub const NATIVE_PUSH_OFF: &str = "Firebase Cloud Messaging and APNs delivery are not configured on this server; phone tokens are kept but receive nothing";

/// Delivery health of every channel of a household, for its administrators.
pub fn delivery_health(conn: &Connection, household_id: i64) -> Result<Vec<model::ChannelHealth>> {
    Ok(store::health(conn, household_id)?
        .into_iter()
        .filter_map(|h| {
            let channel = model::Channel::parse(h.channel)?;
            let native = matches!(channel, model::Channel::Fcm | model::Channel::Apns);
            Some(model::ChannelHealth {
                channel,
                enabled: !native,
                unavailable_reason: native.then(|| NATIVE_PUSH_OFF.to_string()),
                last_delivered_at: h.last_delivered_at,
                delivered_count: h.delivered,
                pending_count: h.pending,
                failed_count: h.failed,
                dropped_count: h.dropped,
                last_error: h.last_error,
            })
        })
        .collect())
}

/// The household's missed-dose grace period, in minutes.
pub fn grace_minutes(conn: &Connection, household_id: i64) -> Result<i64> {
    Ok(store::progress(conn, household_id)?.1)
}

/// Longest missed-dose grace period, in minutes (a day).
pub const MAX_GRACE_MINUTES: i64 = 1440;
