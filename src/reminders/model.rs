//! API shapes of the member's delivery channels: Web Push subscriptions,
//! native device tokens and the ntfy topic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::vocabulary;
use crate::domain::{Name, Text, Timestamp};
use crate::http::openapi;

vocabulary!(
    /// Which push service a phone app's token belongs to.
    Platform {
        Ios => "ios",
        Android => "android",
    }
);

/// A push service URL (RFC 8030), at most 2,000 characters.
pub type Endpoint = Text<2000>;
/// A base64url key from the browser's PushSubscription.
pub type KeyText = Name<200>;

/// The keys of a browser PushSubscription, as its `toJSON()` nests them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushSubscriptionKeys {
    /// The browser's P-256 public key, base64url (65 bytes uncompressed)
    pub p256dh: KeyText,
    /// The browser's authentication secret, base64url (16 bytes)
    pub auth: KeyText,
}

/// A browser push subscription: `endpoint` with `p256dh` and `auth`, either
/// beside it or nested under `keys` as the browser's `toJSON()` gives them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PushSubscriptionAttributes")]
pub struct PushSubscriptionAttributes {
    /// The push service URL (https, unless the server allows http)
    pub endpoint: Endpoint,
    #[serde(default)]
    pub p256dh: Option<KeyText>,
    #[serde(default)]
    pub auth: Option<KeyText>,
    #[serde(default)]
    pub keys: Option<PushSubscriptionKeys>,
    /// Ignored; browsers send it
    #[serde(default, rename = "expirationTime")]
    #[schemars(with = "Option<i64>")]
    pub expiration_time: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PushSubscriptionCreateRequest")]
pub struct PushSubscriptionBody {
    pub push_subscription: PushSubscriptionAttributes,
}

/// The caller's push subscription. Its keys are never answered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PushSubscription {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    pub endpoint: String,
    pub created_at: Timestamp,
}

/// A phone's push token.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "NativeDeviceTokenAttributes")]
pub struct NativeDeviceTokenAttributes {
    /// The FCM registration token (android) or APNs device token (ios)
    pub token: Name<4096>,
    pub platform: Platform,
    /// A name for the device the member recognises
    #[serde(default)]
    pub device_name: Option<Name<200>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "NativeDeviceTokenCreateRequest")]
pub struct NativeDeviceTokenBody {
    pub native_device_token: NativeDeviceTokenAttributes,
}

/// A registered phone. The token itself is never answered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NativeDeviceToken {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    pub platform: Platform,
    pub device_name: Option<String>,
    /// Whether this server can deliver to the token now (its push service is configured)
    pub delivery_enabled: bool,
    pub created_at: Timestamp,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "NtfyChannelAttributes")]
pub struct NtfyChannelAttributes {
    /// The topic's URL on an ntfy server, e.g. https://ntfy.sh/my-pillbox-topic
    pub topic_url: Endpoint,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "NtfyChannelReplaceRequest")]
pub struct NtfyChannelBody {
    pub ntfy_channel: NtfyChannelAttributes,
}

/// The member's ntfy topic.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NtfyChannel {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    pub topic_url: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// How one delivery channel of the household is doing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChannelHealth {
    pub channel: Channel,
    /// Whether this server delivers through the channel now
    pub enabled: bool,
    /// Why the channel is off, when it is
    pub unavailable_reason: Option<String>,
    pub last_delivered_at: Option<Timestamp>,
    #[schemars(range(min = 0))]
    pub delivered_count: i64,
    /// Waiting for their time or for a retry
    #[schemars(range(min = 0))]
    pub pending_count: i64,
    /// Given up after retries, refused by the service, or the address is gone
    #[schemars(range(min = 0))]
    pub failed_count: i64,
    /// Too late to send when their turn came (the catch-up window had passed)
    #[schemars(range(min = 0))]
    pub dropped_count: i64,
    /// The latest delivery error (it never names an address or a payload)
    pub last_error: Option<String>,
}

vocabulary!(
    /// A way reminders are delivered.
    Channel {
        WebPush => "web_push",
        Fcm => "fcm",
        Apns => "apns",
        Ntfy => "ntfy",
    }
);
