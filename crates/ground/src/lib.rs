//! The ground every floor of Pillbox stands on: identifier, text and time
//! types, closed vocabularies, exact decimals, the one error type with its
//! envelope and request id, and the outbound HTTP client. It names no area,
//! no storage and no HTTP toolkit.

#![forbid(unsafe_code)]

pub mod decimal;
pub mod domain;
pub mod error;
