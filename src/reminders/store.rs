//! SQL for reminders: the member's channels, the outbox and the engine's
//! progress. The only writer of these tables.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::auth::{Actor, Credential, Permissions, Role};
use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::{ApiError, Result};

/// Channels the outbox delivers through.
pub const WEB_PUSH: &str = "web_push";
pub const FCM: &str = "fcm";
pub const APNS: &str = "apns";
pub const NTFY: &str = "ntfy";
pub const CHANNELS: [&str; 4] = [WEB_PUSH, FCM, APNS, NTFY];

pub struct SubscriptionRow {
    pub id: i64,
    pub membership_id: i64,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub created_at: String,
}

fn subscription(r: &Row<'_>) -> rusqlite::Result<SubscriptionRow> {
    Ok(SubscriptionRow {
        id: r.get(0)?,
        membership_id: r.get(1)?,
        endpoint: r.get(2)?,
        p256dh: r.get(3)?,
        auth: r.get(4)?,
        created_at: r.get(5)?,
    })
}

const SUBSCRIPTION: &str = "SELECT id, membership_id, endpoint, p256dh, auth, created_at
    FROM push_subscriptions";

/// The credential's subscription (a credential is one device).
pub fn subscription_of(
    conn: &Connection,
    membership_id: i64,
    device: Device,
) -> Result<Option<SubscriptionRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "{SUBSCRIPTION} WHERE membership_id = ?1 AND app_token_id IS ?2 AND session_id IS ?3"
        ))?
        .query_row(
            params![membership_id, device.app_token_id, device.session_id],
            subscription,
        )
        .optional()?)
}

pub fn subscription_by_id(conn: &Connection, id: i64) -> Result<Option<SubscriptionRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!("{SUBSCRIPTION} WHERE id = ?1"))?
        .query_row([id], subscription)
        .optional()?)
}

/// The credential a subscription belongs to: an app token or a sign-in
/// session, each one device.
#[derive(Clone, Copy)]
pub struct Device {
    pub app_token_id: Option<i64>,
    pub session_id: Option<i64>,
}

/// A subscription to save for a member's credential.
#[derive(Clone, Copy)]
pub struct NewSubscription<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub device: Device,
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub now: &'a Timestamp,
}

/// Saves the credential's subscription, replacing the one it had.
pub fn put_subscription(conn: &WriteTx, s: &NewSubscription<'_>) -> Result<i64> {
    let NewSubscription {
        household_id,
        membership_id,
        device,
        endpoint,
        p256dh,
        auth,
        now,
    } = *s;
    conn.prepare_kept(
        "DELETE FROM push_subscriptions
          WHERE membership_id = ?1 AND app_token_id IS ?2 AND session_id IS ?3",
    )?
    .execute(params![
        membership_id,
        device.app_token_id,
        device.session_id
    ])?;
    conn.prepare_kept(
        "INSERT INTO push_subscriptions
           (household_id, membership_id, app_token_id, session_id, endpoint, p256dh, auth,
            created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        household_id,
        membership_id,
        device.app_token_id,
        device.session_id,
        endpoint,
        p256dh,
        auth,
        now.as_str()
    ])?;
    Ok(conn.last_insert_rowid())
}

pub fn delete_subscription(conn: &WriteTx, id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept("DELETE FROM push_subscriptions WHERE id = ?1")?
        .execute([id])?
        > 0)
}

pub struct DeviceTokenRow {
    pub id: i64,
    pub membership_id: i64,
    pub platform: String,
    pub token: String,
    pub device_name: Option<String>,
    pub created_at: String,
}

const DEVICE_TOKEN: &str =
    "SELECT id, membership_id, platform, token, device_name, created_at FROM native_device_tokens";

fn device_token(r: &Row<'_>) -> rusqlite::Result<DeviceTokenRow> {
    Ok(DeviceTokenRow {
        id: r.get(0)?,
        membership_id: r.get(1)?,
        platform: r.get(2)?,
        token: r.get(3)?,
        device_name: r.get(4)?,
        created_at: r.get(5)?,
    })
}

/// Saves a phone's token for the member (the same token again replaces
/// its platform and name).
pub fn put_device_token(
    conn: &WriteTx,
    household_id: i64,
    membership_id: i64,
    platform: &str,
    token: &str,
    device_name: Option<&str>,
    now: &Timestamp,
) -> Result<DeviceTokenRow> {
    conn.prepare_kept(
        "INSERT INTO native_device_tokens
           (household_id, membership_id, platform, token, device_name, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (membership_id, token)
         DO UPDATE SET platform = excluded.platform, device_name = excluded.device_name",
    )?
    .execute(params![
        household_id,
        membership_id,
        platform,
        token,
        device_name,
        now.as_str()
    ])?;
    conn.prepare_kept(crate::db::sql!(
        "{DEVICE_TOKEN} WHERE membership_id = ?1 AND token = ?2"
    ))?
    .query_row(params![membership_id, token], device_token)
    .map_err(Into::into)
}

/// The member's token named by its value or its numeric id.
pub fn find_device_token(
    conn: &Connection,
    membership_id: i64,
    id: &str,
) -> Result<Option<DeviceTokenRow>> {
    let by_value = conn
        .prepare_kept(crate::db::sql!(
            "{DEVICE_TOKEN} WHERE membership_id = ?1 AND token = ?2"
        ))?
        .query_row(params![membership_id, id], device_token)
        .optional()?;
    if by_value.is_some() {
        return Ok(by_value);
    }
    let Some(numeric) = crate::domain::numeric_id(id) else {
        return Ok(None);
    };
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "{DEVICE_TOKEN} WHERE membership_id = ?1 AND id = ?2"
        ))?
        .query_row(params![membership_id, numeric], device_token)
        .optional()?)
}

pub fn device_token_by_id(conn: &Connection, id: i64) -> Result<Option<DeviceTokenRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!("{DEVICE_TOKEN} WHERE id = ?1"))?
        .query_row([id], device_token)
        .optional()?)
}

pub fn delete_device_token(conn: &WriteTx, id: i64) -> Result<()> {
    conn.prepare_kept("DELETE FROM native_device_tokens WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

pub struct NtfyRow {
    pub id: i64,
    pub membership_id: i64,
    pub topic_url: String,
    pub created_at: String,
    pub updated_at: String,
}

const NTFY_ROW: &str =
    "SELECT id, membership_id, topic_url, created_at, updated_at FROM ntfy_channels";

fn ntfy(r: &Row<'_>) -> rusqlite::Result<NtfyRow> {
    Ok(NtfyRow {
        id: r.get(0)?,
        membership_id: r.get(1)?,
        topic_url: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
    })
}

pub fn ntfy_of(conn: &Connection, membership_id: i64) -> Result<Option<NtfyRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!("{NTFY_ROW} WHERE membership_id = ?1"))?
        .query_row([membership_id], ntfy)
        .optional()?)
}

pub fn ntfy_by_id(conn: &Connection, id: i64) -> Result<Option<NtfyRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!("{NTFY_ROW} WHERE id = ?1"))?
        .query_row([id], ntfy)
        .optional()?)
}

pub fn put_ntfy(
    conn: &WriteTx,
    household_id: i64,
    membership_id: i64,
    topic_url: &str,
    now: &Timestamp,
) -> Result<NtfyRow> {
    conn.prepare_kept(
        "INSERT INTO ntfy_channels (household_id, membership_id, topic_url, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (membership_id)
         DO UPDATE SET topic_url = excluded.topic_url, updated_at = excluded.updated_at",
    )?
    .execute(params![
        household_id,
        membership_id,
        topic_url,
        now.as_str()
    ])?;
    ntfy_of(conn, membership_id)?.ok_or_else(|| ApiError::internal("ntfy channel vanished"))
}

pub fn delete_ntfy(conn: &WriteTx, membership_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept("DELETE FROM ntfy_channels WHERE membership_id = ?1")?
        .execute([membership_id])?
        > 0)
}

/// One place a member is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub channel: &'static str,
    pub id: i64,
}

/// Every channel of a member: push subscriptions of credentials still
/// valid (a signed-out device is no longer reached), phone tokens (FCM for
/// android, APNs for ios) and the ntfy topic.
pub fn targets_of(conn: &Connection, membership_id: i64) -> Result<Vec<Target>> {
    let mut out = Vec::new();
    let mut stmt = conn.prepare_kept(
        "SELECT 'web_push', s.id FROM push_subscriptions s
           LEFT JOIN app_tokens t ON t.id = s.app_token_id
           LEFT JOIN oauth_sessions o ON o.id = s.session_id
          WHERE s.membership_id = ?1
            AND (s.app_token_id IS NULL OR (t.revoked_at IS NULL AND t.expires_at > ?2))
            AND (s.session_id IS NULL OR (o.revoked_at IS NULL AND o.expires_at > ?2))
         UNION ALL
         SELECT CASE platform WHEN 'ios' THEN 'apns' ELSE 'fcm' END, id
           FROM native_device_tokens WHERE membership_id = ?1
         UNION ALL
         SELECT 'ntfy', id FROM ntfy_channels WHERE membership_id = ?1
         ORDER BY 1, 2",
    )?;
    let now = Timestamp::now();
    let rows = stmt.query_map(params![membership_id, now.as_str()], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    for row in rows {
        let (channel, id) = row?;
        if let Some(channel) = CHANNELS.iter().find(|c| **c == channel) {
            out.push(Target { channel, id });
        }
    }
    Ok(out)
}

/// The active members of a household that have at least one channel, as
/// the actors whose access decides what they are told about.
pub fn reachable_members(conn: &Connection, household_id: i64) -> Result<Vec<Actor>> {
    let mut stmt = conn.prepare_kept(
        "SELECT m.id, m.account_id, m.role, m.person_id, m.inventory_management,
                m.location_management, m.adult_review
           FROM memberships m
          WHERE m.household_id = ?1 AND m.status = 'active'
            AND (EXISTS (SELECT 1 FROM push_subscriptions s WHERE s.membership_id = m.id)
              OR EXISTS (SELECT 1 FROM native_device_tokens t WHERE t.membership_id = m.id)
              OR EXISTS (SELECT 1 FROM ntfy_channels n WHERE n.membership_id = m.id))
          ORDER BY m.id",
    )?;
    let rows = stmt.query_map([household_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Option<i64>>(3)?,
            Permissions {
                inventory_management: r.get(4)?,
                location_management: r.get(5)?,
                adult_review: r.get(6)?,
            },
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (membership_id, account_id, role, person_id, permissions) = row?;
        let Some(role) = Role::parse(&role) else {
            continue;
        };
        out.push(Actor {
            account_id,
            membership_id,
            household_id,
            role,
            person_id,
            permissions,
            // The engine acts for the member, with no credential of theirs:
            // only the membership's access is read.
            credential: Credential::AppToken {
                id: 0,
                membership_id,
            },
        });
    }
    Ok(out)
}

/// (scanned_until, missed-dose grace minutes) of a household.
pub fn progress(conn: &Connection, household_id: i64) -> Result<(Option<Timestamp>, i64)> {
    Ok(conn
        .prepare_kept(
            "SELECT scanned_until, missed_dose_grace_minutes FROM reminder_households
             WHERE household_id = ?1",
        )?
        .query_row([household_id], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.map(Timestamp::from_stored),
                r.get(1)?,
            ))
        })
        .optional()?
        .unwrap_or((None, super::settings::DEFAULT_GRACE_MINUTES)))
}

pub fn set_scanned_until(conn: &WriteTx, household_id: i64, at: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO reminder_households (household_id, scanned_until) VALUES (?1, ?2)
         ON CONFLICT (household_id) DO UPDATE SET scanned_until = excluded.scanned_until",
    )?
    .execute(params![household_id, at.as_str()])?;
    Ok(())
}

pub fn set_grace_minutes(conn: &WriteTx, household_id: i64, minutes: i64) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO reminder_households (household_id, missed_dose_grace_minutes) VALUES (?1, ?2)
         ON CONFLICT (household_id) DO UPDATE SET missed_dose_grace_minutes = excluded.missed_dose_grace_minutes",
    )?
    .execute(params![household_id, minutes])?;
    Ok(())
}

/// (episode, low) of a medication's low-stock state.
pub fn low_stock_state(conn: &Connection, medication_id: i64) -> Result<Option<(i64, bool)>> {
    Ok(conn
        .prepare_kept("SELECT episode, low FROM reminder_low_stock WHERE medication_id = ?1")?
        .query_row([medication_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

pub fn set_low_stock_state(
    conn: &WriteTx,
    medication_id: i64,
    episode: i64,
    low: bool,
) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO reminder_low_stock (medication_id, episode, low) VALUES (?1, ?2, ?3)
         ON CONFLICT (medication_id) DO UPDATE SET episode = excluded.episode, low = excluded.low",
    )?
    .execute(params![medication_id, episode, low])?;
    Ok(())
}
