//! Types every layer shares, below `http/` and `db/`: how a record is named,
//! paged and versioned, and how submitted text is kept. Nothing here knows
//! HTTP, SQL or any resource.

pub mod body;
pub mod bounded;
mod columns;
pub mod id;
pub mod json_object;
pub mod outbound;
pub mod page;
pub mod public_url;
pub mod record_type;
pub mod text;
pub mod time_zone;
pub mod timestamp;
pub mod version;
pub mod vocabulary;

/// The request id lives beside the error envelope that carries it.
pub use crate::error::request_id;
pub use bounded::{AtLeast, Bounded, Digits, Name, Text};
pub use id::{ResourceId, numeric_id};
pub use page::{Page, PageMeta};
pub use text::{bounded_text, present, trimmed};
pub use time_zone::canonical_time_zone;
pub use timestamp::Timestamp;
pub use version::{IfMatch, Versioned, etag};
pub use vocabulary::vocabulary;
