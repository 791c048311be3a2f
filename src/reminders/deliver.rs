//! Delivery of the outbox: each pending notification whose attempt is due
//! goes to its channel; a success is recorded at once (so a restart never
//! sends it again), a passing failure is retried with back-off, a
//! notification older than the catch-up window is dropped, and a push
//! subscription the push service no longer knows (404/410) is removed.
//! Push bodies, keys and addresses never reach a log.

use jiff::{SignedDuration, Timestamp};

use super::outbox_store::{self, OutboxRow};
pub use super::outcome::Outcome;
use super::store;
use super::webpush::{self, ClientKeys, Vapid};
use crate::db::Db;
use crate::domain::Timestamp as Stored;
use crate::domain::outbound::{self as destination, Forbidden, MemberClient, http_client};
use crate::error::Result;
use crate::reminders::settings::ReminderSettings;

/// Attempts before a notification is given up as failed.
pub const MAX_ATTEMPTS: i64 = 8;
/// The first retry waits this long; each later one twice as long as the one before.
const FIRST_RETRY: SignedDuration = SignedDuration::from_secs(30);
const LONGEST_RETRY: SignedDuration = SignedDuration::from_hours(1);
/// Notifications sent per pass; the rest wait for the next one.
const BATCH: i64 = 64;

/// What delivery needs: the HTTP clients, the VAPID key and the settings.
pub struct Deliverer {
    /// For the operator's services (FCM, APNs).
    http: reqwest::Client,
    /// For push endpoints and ntfy topics, which members supply.
    member: MemberClient,
    vapid: Vapid,
    settings: ReminderSettings,
    native: super::native::NativeSender,
}

impl Deliverer {
    pub async fn new(db: &Db, settings: ReminderSettings) -> Result<Deliverer> {
        let vapid = db.read(super::vapid).await?;
        Ok(Deliverer {
            http: http_client()?,
            member: MemberClient::new(settings.push_allow_private_network)?,
            vapid,
            settings,
            native: super::native::NativeSender::default(),
        })
    }

    /// Delivers what is due at `now`; how many were handled.
    pub async fn deliver_due(&self, db: &Db, now: Timestamp) -> Result<usize> {
        let at = Stored::from_jiff(now);
        let rows = db
            .read(move |conn| outbox_store::due(conn, &at, BATCH))
            .await?;
        let count = rows.len();
        for row in rows {
            self.deliver_one(db, row, now).await?;
        }
        Ok(count)
    }

    async fn deliver_one(&self, db: &Db, row: OutboxRow, now: Timestamp) -> Result<()> {
        let stored_now = Stored::from_jiff(now);
        if row.due_at.to_jiff() < now - self.settings.catch_up {
            let id = row.id;
            return db
                .write(move |tx| {
                    outbox_store::finish(
                        tx,
                        id,
                        "dropped",
                        Some("older than the catch-up window"),
                        &stored_now,
                    )
                })
                .await;
        }
        let outcome = match row.channel.as_str() {
            store::WEB_PUSH => self.web_push(db, &row).await?,
            store::NTFY => self.ntfy(db, &row).await?,
            _ => self.phone(db, &row).await?,
        };
        let (id, target, channel, attempts) =
            (row.id, row.target_id, row.channel.clone(), row.attempts);
        db.write(move |tx| match outcome {
            Outcome::Delivered => outbox_store::finish(tx, id, "delivered", None, &stored_now),
            Outcome::Gone => {
                if channel == store::WEB_PUSH {
                    store::delete_subscription(tx, target)?;
                } else {
                    store::delete_device_token(tx, target)?;
                }
                outbox_store::finish(
                    tx,
                    id,
                    "failed",
                    Some("the push service no longer knows this subscription or token; it was removed"),
                    &stored_now,
                )
            }
            Outcome::Failed(error) => outbox_store::finish(tx, id, "failed", Some(&error), &stored_now),
            Outcome::Retry(error) if attempts + 1 >= MAX_ATTEMPTS => {
                outbox_store::finish(tx, id, "failed", Some(&error), &stored_now)
            }
            Outcome::Retry(error) => {
                let next = Stored::from_jiff(now + backoff(attempts));
                outbox_store::retry_at(tx, id, &error, &next)
            }
        })
        .await
    }

    async fn web_push(&self, db: &Db, row: &OutboxRow) -> Result<Outcome> {
        let target = row.target_id;
        let Some(subscription) = db
            .read(move |conn| store::subscription_by_id(conn, target))
            .await?
        else {
            return Ok(Outcome::Failed("the push subscription was removed".into()));
        };
        let Ok(keys) = ClientKeys::parse(&subscription.p256dh, &subscription.auth) else {
            return Ok(Outcome::Failed(
                "the subscription's keys are not usable".into(),
            ));
        };
        let payload = serde_json::json!({
            "kind": row.kind,
            "title": row.title,
            "body": row.body,
            "tag": format!("{}:{}", row.kind, row.subject),
            "due_at": row.due_at,
        })
        .to_string();
        if payload.len() > webpush::MAX_PAYLOAD {
            return Ok(Outcome::Failed(
                "the notification is too long for Web Push".into(),
            ));
        }
        let body = webpush::encrypt(&keys, payload.as_bytes());
        let Some(authorization) = self.vapid.authorization(
            &subscription.endpoint,
            &self.settings.push_contact,
            Timestamp::now(),
        ) else {
            return Ok(Outcome::Failed("the push endpoint is not a URL".into()));
        };
        let ttl = self.settings.catch_up.as_secs().max(60);
        let request = match self.member.post(&subscription.endpoint) {
            Ok(request) => request,
            Err(class) => return Ok(not_sent("push service", class)),
        };
        let response = request
            .header("TTL", ttl.to_string())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header(
                "Urgency",
                if row.kind == super::MISSED_DOSE {
                    "high"
                } else {
                    "normal"
                },
            )
            .header("Authorization", authorization)
            .body(body)
            .send()
            .await;
        Ok(classify("push service", response))
    }

    /// A phone: FCM for android tokens, APNs for ios ones.
    async fn phone(&self, db: &Db, row: &OutboxRow) -> Result<Outcome> {
        let target = row.target_id;
        let Some(device) = db
            .read(move |conn| store::device_token_by_id(conn, target))
            .await?
        else {
            return Ok(Outcome::Failed("the phone token was removed".into()));
        };
        let message = super::native::Message {
            token: &device.token,
            kind: &row.kind,
            title: &row.title,
            body: &row.body,
        };
        Ok(
            match (
                row.channel.as_str(),
                &self.settings.fcm,
                &self.settings.apns,
            ) {
                (store::FCM, Some(fcm), _) => self.native.send_fcm(&self.http, fcm, &message).await,
                (store::APNS, _, Some(apns)) => {
                    self.native.send_apns(&self.http, apns, &message).await
                }
                (store::FCM, None, _) => {
                    Outcome::Failed(super::fcm_off(&self.settings).unwrap_or_default().into())
                }
                _ => Outcome::Failed(super::apns_off(&self.settings).unwrap_or_default().into()),
            },
        )
    }

    async fn ntfy(&self, db: &Db, row: &OutboxRow) -> Result<Outcome> {
        let target = row.target_id;
        let Some(channel) = db.read(move |conn| store::ntfy_by_id(conn, target)).await? else {
            return Ok(Outcome::Failed("the ntfy channel was removed".into()));
        };
        let priority = match row.kind.as_str() {
            super::MISSED_DOSE => "high",
            super::LOW_STOCK => "default",
            _ => "high",
        };
        let request = match self.member.post(&channel.topic_url) {
            Ok(request) => request,
            Err(class) => return Ok(not_sent("ntfy server", class)),
        };
        let response = request
            .header("Title", row.title.as_str())
            .header("Priority", priority)
            .header("Tags", "pill")
            .header("Content-Type", "text/plain; charset=utf-8")
            .body(row.body.clone())
            .send()
            .await;
        // An ntfy topic has no subscription to lose: 404 is a failure like any other.
        Ok(match classify("ntfy server", response) {
            Outcome::Gone => Outcome::Failed("the ntfy server does not know the topic".into()),
            other => other,
        })
    }
}

/// A member-supplied destination the address rule refuses: failed at once,
/// since retrying cannot make the address allowed.
fn not_sent(service: &str, class: Forbidden) -> Outcome {
    Outcome::Failed(format!(
        "not sent: the {service}'s address is {class}, which this server does not send to (see --push-allow-private-network)"
    ))
}

/// 2xx delivered; 404/410 gone; 429, 5xx and network errors retried; other
/// answers failed; a destination the address rule refused failed. Error
/// texts name the status or the address's class, never the address.
fn classify(service: &str, response: reqwest::Result<reqwest::Response>) -> Outcome {
    if let Err(e) = &response
        && let Some(class) = destination::refused(e)
    {
        return not_sent(service, class);
    }
    match response {
        Ok(r) if r.status().is_success() => Outcome::Delivered,
        Ok(r) if matches!(r.status().as_u16(), 404 | 410) => Outcome::Gone,
        Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
            Outcome::Retry(format!("the {service} answered {}", r.status().as_u16()))
        }
        Ok(r) => Outcome::Failed(format!(
            "the {service} refused it with {}",
            r.status().as_u16()
        )),
        Err(e) if e.is_timeout() => Outcome::Retry(format!("the {service} did not answer in time")),
        Err(e) if e.is_connect() => Outcome::Retry(format!("cannot connect to the {service}")),
        Err(_) => Outcome::Retry(format!("the request to the {service} failed")),
    }
}

/// How long to wait after `attempts` failed attempts.
pub fn backoff(attempts: i64) -> SignedDuration {
    let doubled = FIRST_RETRY
        .checked_mul(1i32 << attempts.clamp(0, 16))
        .unwrap_or(LONGEST_RETRY);
    doubled.min(LONGEST_RETRY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(0), SignedDuration::from_secs(30));
        assert_eq!(backoff(1), SignedDuration::from_secs(60));
        assert_eq!(backoff(3), SignedDuration::from_secs(240));
        assert_eq!(backoff(20), SignedDuration::from_hours(1));
    }
}
