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
pub mod native;
pub mod outbox_store;
pub mod outcome;
pub mod routes;
pub mod settings;
pub mod store;
pub mod task;
pub mod webpush;

use rusqlite::Connection;

use crate::db::instance;
use crate::error::{ApiError, Result};
use crate::reminders::settings::ReminderSettings;

pub const DOSE_DUE: &str = "dose_due";
pub const MISSED_DOSE: &str = "missed_dose";
pub const LOW_STOCK: &str = "low_stock";
pub const TEST: &str = "test";

pub use settings::DEFAULT_GRACE_MINUTES;

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

/// Why phone push is off, per service: `None` when it is configured.
pub fn fcm_off(settings: &ReminderSettings) -> Option<&'static str> {
    settings
        .fcm
        .is_none()
        .then_some("Firebase Cloud Messaging is not configured (--fcm-service-account); android tokens are kept but receive nothing")
}

pub fn apns_off(settings: &ReminderSettings) -> Option<&'static str> {
    settings
        .apns
        .is_none()
        .then_some("APNs is not configured (--apns-key-file, --apns-key-id, --apns-team-id, --apns-topic); iPhone tokens are kept but receive nothing")
}

/// Why native push is (partly) off, or `None` when both services work.
pub fn native_push_off(settings: &ReminderSettings) -> Option<String> {
    let reasons: Vec<&str> = [fcm_off(settings), apns_off(settings)]
        .into_iter()
        .flatten()
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// Whether this server delivers through `channel` now.
pub fn channel_enabled(settings: &ReminderSettings, channel: &str) -> bool {
    match channel {
        store::FCM => settings.fcm.is_some(),
        store::APNS => settings.apns.is_some(),
        _ => true,
    }
}

/// Delivery health of every channel of a household, for its administrators.
pub fn delivery_health(
    conn: &Connection,
    household_id: i64,
    settings: &ReminderSettings,
) -> Result<Vec<model::ChannelHealth>> {
    Ok(outbox_store::health(conn, household_id)?
        .into_iter()
        .filter_map(|h| {
            let channel = model::Channel::parse(h.channel)?;
            let off = match channel {
                model::Channel::Fcm => fcm_off(settings),
                model::Channel::Apns => apns_off(settings),
                _ => None,
            };
            Some(model::ChannelHealth {
                channel,
                enabled: off.is_none(),
                unavailable_reason: off.map(str::to_string),
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
