//! How reminders are delivered: which push addresses are accepted, how
//! late a reminder may still go out, and the native push credentials.

pub const DEFAULT_REMINDER_CATCH_UP_MINUTES: i64 = 360;

/// How reminders are delivered.
#[derive(Debug, Clone)]
pub struct ReminderSettings {
    /// http:// push endpoints and ntfy topics are accepted.
    pub push_allow_http: bool,
    /// Push endpoints and ntfy topics may name non-public addresses
    /// (loopback, private, link-local, ...).
    pub push_allow_private_network: bool,
    /// How late a reminder may still be sent.
    pub catch_up: jiff::SignedDuration,
    /// The VAPID `sub` claim.
    pub push_contact: String,
    /// FCM, when configured.
    pub fcm: Option<std::sync::Arc<super::native::FcmCredentials>>,
    /// APNs, when configured.
    pub apns: Option<std::sync::Arc<super::native::ApnsCredentials>>,
}

impl Default for ReminderSettings {
    fn default() -> Self {
        ReminderSettings {
            push_allow_http: false,
            push_allow_private_network: false,
            catch_up: jiff::SignedDuration::from_mins(DEFAULT_REMINDER_CATCH_UP_MINUTES),
            push_contact: DEFAULT_PUSH_CONTACT.to_string(),
            fcm: None,
            apns: None,
        }
    }
}

/// A contact push services accept when none is configured.
pub const DEFAULT_PUSH_CONTACT: &str = "mailto:pillbox@localhost.invalid";

/// The missed-dose grace period of a household that never set one.
pub const DEFAULT_GRACE_MINUTES: i64 = 60;
