//! Pillbox: a self-hosted household medication tracker serving the Household
//! Medication Tracking API from one binary with SQLite inside.

#![forbid(unsafe_code)]

// The three floors the compiler keeps are crates of their own; their
// modules keep their paths here (`crate::db`, `crate::http`, ...).
pub use pillbox_ground as ground;
pub use pillbox_ground::{decimal, domain, error};
pub use pillbox_storage as storage;
pub use pillbox_storage::{db, memory};
pub use pillbox_toolkit as toolkit;
pub use pillbox_toolkit::{http, limits, state};

pub mod app;
pub mod auth;
pub mod backup;
pub mod capabilities;
pub mod care;
pub mod cli;
pub mod config;
pub mod household;
pub mod household_settings;
pub mod identity;
pub mod lookup;
pub mod mail;
pub mod mcp;
pub mod medicine;
pub mod portable;
pub mod reminders;
pub mod reports;
pub mod sync;
pub mod web;

pub use app::app;
pub use state::AppState;
