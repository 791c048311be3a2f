//! What one delivery attempt came to, whatever the channel.

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// The push service no longer knows the subscription.
    Gone,
    /// Worth another try later.
    Retry(String),
    /// Never worth another try.
    Failed(String),
}
