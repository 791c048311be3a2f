//! The member's own delivery channels. Each operation acts on the caller's
//! membership only: nobody registers, tests or removes another member's
//! channels. A push subscription belongs to the member and to the
//! credential (device) that made it.

use rusqlite::Connection;

use super::TEST;
use super::model::{
    NativeDeviceToken, NativeDeviceTokenAttributes, NtfyChannel, NtfyChannelAttributes, Platform,
    PushSubscription, PushSubscriptionAttributes,
};
use super::outbox_store::{self, NewNotification};
use super::store::{self, Target};
use super::webpush::{ClientKeys, PushKeyError};
use crate::auth::{Actor, Credential};
use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::domain::outbound::{self as destination, Forbidden};
use crate::error::{ApiError, Problems, Result};
use crate::reminders::settings::ReminderSettings;

/// What the rules need to judge a submitted push endpoint or ntfy topic
/// URL beyond its text: whether http is accepted, and what the address rule
/// found of its host. Resolving the host happens before the write, as the
/// writer must not wait on the network.
#[derive(Debug, Clone, Copy)]
pub struct UrlCheck {
    pub allow_http: bool,
    pub refused: Option<Forbidden>,
}

impl UrlCheck {
    pub async fn of(url: &str, settings: &ReminderSettings) -> UrlCheck {
        UrlCheck {
            allow_http: settings.push_allow_http,
            refused: destination::screen(url, settings.push_allow_private_network).await,
        }
    }
}

/// Checks a push endpoint or ntfy topic URL: absolute, with a host, https
/// (http only when allowed), not pointing at an address the server does not
/// send to. The problem names `field`; the URL itself is never echoed.
fn check_url(problems: &mut Problems, field: &str, url: &str, check: UrlCheck) {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        problems.add(field, "must be an absolute URL");
        return;
    };
    if parsed.host_str().is_none_or(str::is_empty) {
        problems.add(field, "must name a host");
        return;
    }
    match parsed.scheme() {
        "https" => {}
        "http" if check.allow_http => {}
        "http" => problems.add(
            field,
            "must use https (this server accepts http only when started with --push-allow-http)",
        ),
        _ => problems.add(field, "must be an https URL"),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        problems.add(field, "must not carry a user name or password");
    }
    if let Some(class) = check.refused {
        problems.add(field, destination::refusal_text(class));
    }
}

fn device_of(actor: &Actor) -> store::Device {
    match actor.credential {
        Credential::AppToken { id, .. } => store::Device {
            app_token_id: Some(id),
            session_id: None,
        },
        Credential::Session { id } => store::Device {
            app_token_id: None,
            session_id: Some(id),
        },
    }
}

fn subscription_api(row: store::SubscriptionRow) -> PushSubscription {
    PushSubscription {
        id: row.id,
        membership_id: row.membership_id,
        endpoint: row.endpoint,
        created_at: Timestamp::from_stored(row.created_at),
    }
}

/// `createPushSubscription`: saves the caller's device's subscription,
/// replacing the one it had.
pub fn create_subscription(
    conn: &WriteTx,
    actor: &Actor,
    attrs: PushSubscriptionAttributes,
    check: UrlCheck,
) -> Result<PushSubscription> {
    let mut problems = Problems::default();
    let endpoint = attrs.endpoint.trim().to_string();
    check_url(&mut problems, "endpoint", &endpoint, check);
    let (p256dh, auth) = match (attrs.p256dh, attrs.auth, attrs.keys) {
        (Some(p256dh), Some(auth), None) => (p256dh.into_inner(), auth.into_inner()),
        (None, None, Some(keys)) => (keys.p256dh.into_inner(), keys.auth.into_inner()),
        (_, _, Some(_)) => {
            problems.add(
                "keys",
                "send p256dh and auth either beside endpoint or under keys, not both",
            );
            (String::new(), String::new())
        }
        (p256dh, auth, None) => {
            if p256dh.is_none() {
                problems.add("p256dh", "is required");
            }
            if auth.is_none() {
                problems.add("auth", "is required");
            }
            (String::new(), String::new())
        }
    };
    if problems.is_empty() {
        match ClientKeys::parse(p256dh.trim(), auth.trim()) {
            Ok(_) => {}
            Err(e @ PushKeyError::PublicKey) => problems.add("p256dh", e.to_string()),
            Err(e @ PushKeyError::Auth) => problems.add("auth", e.to_string()),
        }
    }
    problems.check("the push subscription is invalid")?;
    let now = Timestamp::now();
    let id = store::put_subscription(
        conn,
        &store::NewSubscription {
            household_id: actor.household_id,
            membership_id: actor.membership_id,
            device: device_of(actor),
            endpoint: &endpoint,
            p256dh: p256dh.trim(),
            auth: auth.trim(),
            now: &now,
        },
    )?;
    let row = store::subscription_by_id(conn, id)?
        .ok_or_else(|| ApiError::internal("push subscription vanished"))?;
    Ok(subscription_api(row))
}

fn own_subscription(conn: &Connection, actor: &Actor) -> Result<store::SubscriptionRow> {
    store::subscription_of(conn, actor.membership_id, device_of(actor))?
        .ok_or_else(|| ApiError::NotFound("this device has no push subscription".into()))
}

/// `deletePushSubscription`: removes the caller's device's subscription.
pub fn delete_subscription(conn: &WriteTx, actor: &Actor) -> Result<()> {
    let row = own_subscription(conn, actor)?;
    store::delete_subscription(conn, row.id)?;
    Ok(())
}

/// `testPushSubscription`: queues one test notification to the caller's
/// device's subscription; the background task sends it at once.
pub fn test_subscription(conn: &WriteTx, actor: &Actor) -> Result<()> {
    let row = own_subscription(conn, actor)?;
    let now = Timestamp::now();
    let subject = format!("test:{}", crate::db::new_portable_id());
    outbox_store::enqueue(
        conn,
        &NewNotification {
            household_id: actor.household_id,
            membership_id: actor.membership_id,
            target: Target {
                channel: store::WEB_PUSH,
                id: row.id,
            },
            kind: TEST,
            subject: &subject,
            due_at: &now,
            title: "Pillbox test",
            body: "Reminders reach this device",
            dropped: false,
            now: &now,
        },
    )?;
    // Wakes the background task, as a change of household data does.
    conn.mark_changed();
    Ok(())
}

fn device_token_api(row: store::DeviceTokenRow, settings: &ReminderSettings) -> NativeDeviceToken {
    let channel = if row.platform == "ios" {
        store::APNS
    } else {
        store::FCM
    };
    NativeDeviceToken {
        delivery_enabled: super::channel_enabled(settings, channel),
        id: row.id,
        membership_id: row.membership_id,
        platform: Platform::parse(&row.platform).unwrap_or(Platform::Android),
        device_name: row.device_name,
        created_at: Timestamp::from_stored(row.created_at),
    }
}

/// `createNativeDeviceToken`: keeps a phone's token for the member. The
/// same token again updates its platform and device name.
pub fn create_device_token(
    conn: &WriteTx,
    actor: &Actor,
    attrs: NativeDeviceTokenAttributes,
    settings: &ReminderSettings,
) -> Result<NativeDeviceToken> {
    let token = attrs.token.trim().to_string();
    let problem = match attrs.platform {
        Platform::Ios => super::native::apns_token_problem(&token),
        Platform::Android => super::native::fcm_token_problem(&token),
    };
    if let Some(problem) = problem {
        return Err(ApiError::invalid("token", problem));
    }
    let device_name = attrs.device_name.as_ref().map(|n| n.trim().to_string());
    let row = store::put_device_token(
        conn,
        actor.household_id,
        actor.membership_id,
        attrs.platform.as_str(),
        &token,
        device_name.as_deref(),
        &Timestamp::now(),
    )?;
    Ok(device_token_api(row, settings))
}

/// `deleteNativeDeviceToken`: removes one of the caller's tokens, named by
/// its value or its id.
pub fn delete_device_token(conn: &WriteTx, actor: &Actor, id: &str) -> Result<()> {
    let row = store::find_device_token(conn, actor.membership_id, id)?
        .ok_or_else(|| ApiError::not_found("native device token"))?;
    store::delete_device_token(conn, row.id)
}

fn ntfy_api(row: store::NtfyRow) -> NtfyChannel {
    NtfyChannel {
        id: row.id,
        membership_id: row.membership_id,
        topic_url: row.topic_url,
        created_at: Timestamp::from_stored(row.created_at),
        updated_at: Timestamp::from_stored(row.updated_at),
    }
}

/// `getNtfyChannel`.
pub fn get_ntfy(conn: &Connection, actor: &Actor) -> Result<NtfyChannel> {
    store::ntfy_of(conn, actor.membership_id)?
        .map(ntfy_api)
        .ok_or_else(|| ApiError::NotFound("you have no ntfy channel".into()))
}

/// `replaceNtfyChannel`: sets the member's ntfy topic URL.
pub fn put_ntfy(
    conn: &WriteTx,
    actor: &Actor,
    attrs: NtfyChannelAttributes,
    check: UrlCheck,
) -> Result<NtfyChannel> {
    let url = attrs.topic_url.trim().to_string();
    let mut problems = Problems::default();
    check_url(&mut problems, "topic_url", &url, check);
    if problems.is_empty() {
        let topic = reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| {
                u.path_segments()
                    .and_then(|mut s| s.next_back().map(str::to_string))
            })
            .unwrap_or_default();
        if topic.is_empty() {
            problems.add(
                "topic_url",
                "must end with the topic name, e.g. https://ntfy.sh/my-topic",
            );
        }
    }
    problems.check("the ntfy channel is invalid")?;
    let row = store::put_ntfy(
        conn,
        actor.household_id,
        actor.membership_id,
        &url,
        &Timestamp::now(),
    )?;
    Ok(ntfy_api(row))
}

/// `deleteNtfyChannel`.
pub fn delete_ntfy(conn: &WriteTx, actor: &Actor) -> Result<()> {
    if store::delete_ntfy(conn, actor.membership_id)? {
        Ok(())
    } else {
        Err(ApiError::NotFound("you have no ntfy channel".into()))
    }
}
