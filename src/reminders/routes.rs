//! Handlers of the member's delivery channels: parse, call the rule, shape
//! the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, post};

use super::devices::UrlCheck;
use super::model::{
    NativeDeviceToken, NativeDeviceTokenBody, NtfyChannel, NtfyChannelBody, PushSubscription,
    PushSubscriptionBody,
};
use crate::auth::Actor;
use crate::error::Result;
use crate::http::extract::{ApiJson, raw_param};
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Notification devices";
const PUSH: &str = "/households/{household_id}/push_subscription";
const PUSH_TEST: &str = "/households/{household_id}/push_subscription/test";
const TOKENS: &str = "/households/{household_id}/native_device_tokens";
const TOKEN: &str = "/households/{household_id}/native_device_tokens/{id}";
const NTFY: &str = "/households/{household_id}/ntfy_channel";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::post(PUSH, "createPushSubscription", TAG)
            .summary("Subscribe this device to Web Push reminders")
            .description("Saves the browser's PushSubscription (endpoint with p256dh and auth, beside it or under keys) for the caller's membership and credential, replacing the one this credential had. The endpoint must be https unless the server runs with --push-allow-http, and its host may not be or resolve to a loopback, private, link-local, multicast or other non-public address unless the server runs with --push-allow-private-network (422 naming endpoint; each delivery connects only to an address that passes the same rule); the keys must be a P-256 public key and a 16-byte secret (base64url). Reminders are encrypted for these keys (RFC 8291) and signed with the VAPID key whose public half is web_push_vapid_public_key in the capability document. The keys are never answered.")
            .body::<PushSubscriptionBody>()
            .created::<PushSubscription>(),
        post(create_subscription),
    )
    .route(
        Op::delete(PUSH, "deletePushSubscription", TAG)
            .summary("Unsubscribe this device")
            .description("Removes the push subscription of the caller's credential (404 when it has none).")
            .no_content(),
        delete(delete_subscription),
    )
    .route(
        Op::post(PUSH_TEST, "testPushSubscription", TAG)
            .summary("Send a test notification to this device")
            .description("Queues one test notification to the push subscription of the caller's credential (404 when it has none); the background task delivers it at once.")
            .no_content(),
        post(test_subscription),
    )
    .route(
        Op::post(TOKENS, "createNativeDeviceToken", TAG)
            .summary("Register a phone for reminders")
            .description("Keeps a phone app's push token (FCM for android, APNs for ios) for the caller's membership; the same token again updates its platform and device name. An APNs token is 64 hexadecimal characters, an FCM token 100 to 4096 letters, digits, '-', '_' or ':' (422 naming token otherwise). Tokens are kept even while native push is off (see native_push in the capability document). The token itself is never answered.")
            .body::<NativeDeviceTokenBody>()
            .created::<NativeDeviceToken>(),
        post(create_device_token),
    )
    .route(
        Op::delete(TOKEN, "deleteNativeDeviceToken", TAG)
            .summary("Unregister a phone")
            .description("Removes one of the caller's own phone tokens, named by the token itself or by its id.")
            .text_path_param("id")
            .no_content(),
        delete(delete_device_token),
    )
    .route(
        Op::get(NTFY, "getNtfyChannel", TAG)
            .summary("Get your ntfy channel")
            .description("The ntfy topic the caller's reminders are also published to (404 when none is set).")
            .ok::<NtfyChannel>(),
        get(show_ntfy),
    )
    .route(
        Op::put(NTFY, "replaceNtfyChannel", TAG)
            .summary("Set your ntfy channel")
            .description("Sets the ntfy topic URL (an ntfy server's URL followed by the topic, e.g. https://ntfy.sh/my-topic) the caller's reminders are published to. https only unless the server runs with --push-allow-http; the host may not be or resolve to a loopback, private, link-local, multicast or other non-public address unless the server runs with --push-allow-private-network (422 naming topic_url; each delivery connects only to an address that passes the same rule).")
            .body::<NtfyChannelBody>()
            .ok::<NtfyChannel>(),
        axum::routing::put(put_ntfy),
    )
    .route(
        Op::delete(NTFY, "deleteNtfyChannel", TAG)
            .summary("Remove your ntfy channel")
            .no_content(),
        delete(delete_ntfy),
    )
}

async fn create_subscription(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<PushSubscriptionBody>,
) -> Result<Response> {
    let check = UrlCheck::of(
        &body.push_subscription.endpoint,
        state.part::<crate::reminders::settings::ReminderSettings>(),
    )
    .await;
    let subscription = state
        .db
        .write(move |tx| {
            super::devices::create_subscription(tx, &actor, body.push_subscription, check)
        })
        .await?;
    Ok(respond::created(subscription))
}

async fn delete_subscription(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    state
        .db
        .write(move |tx| super::devices::delete_subscription(tx, &actor))
        .await?;
    Ok(respond::no_content())
}

async fn test_subscription(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    state
        .db
        .write(move |tx| super::devices::test_subscription(tx, &actor))
        .await?;
    Ok(respond::no_content())
}

async fn create_device_token(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<NativeDeviceTokenBody>,
) -> Result<Response> {
    let config = state.part::<super::settings::ReminderSettings>().clone();
    let token = state
        .db
        .write(move |tx| {
            super::devices::create_device_token(tx, &actor, body.native_device_token, &config)
        })
        .await?;
    Ok(respond::created(token))
}

struct TokenId(String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for TokenId {
    type Rejection = crate::error::ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self> {
        raw_param(parts, state, "id").await.map(TokenId)
    }
}

async fn delete_device_token(
    State(state): State<AppState>,
    actor: Actor,
    TokenId(id): TokenId,
) -> Result<Response> {
    state
        .db
        .write(move |tx| super::devices::delete_device_token(tx, &actor, &id))
        .await?;
    Ok(respond::no_content())
}

async fn show_ntfy(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let channel = state
        .db
        .read(move |conn| super::devices::get_ntfy(conn, &actor))
        .await?;
    Ok(respond::ok(channel))
}

async fn put_ntfy(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<NtfyChannelBody>,
) -> Result<Response> {
    let check = UrlCheck::of(
        &body.ntfy_channel.topic_url,
        state.part::<crate::reminders::settings::ReminderSettings>(),
    )
    .await;
    let channel = state
        .db
        .write(move |tx| super::devices::put_ntfy(tx, &actor, body.ntfy_channel, check))
        .await?;
    Ok(respond::ok(channel))
}

async fn delete_ntfy(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    state
        .db
        .write(move |tx| super::devices::delete_ntfy(tx, &actor))
        .await?;
    Ok(respond::no_content())
}
