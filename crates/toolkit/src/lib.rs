//! The HTTP toolkit every area's routes are written with (extractors,
//! responses, JSON, the contract builder, the connection loop and
//! middleware), the application state's container and the server's
//! limits. It names no area: the Router is assembled above it.

#![forbid(unsafe_code)]

pub mod http;
pub mod limits;
pub mod state;

use pillbox_ground::{domain, error};
use pillbox_storage::db;
