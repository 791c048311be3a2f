//! Pillbox: a self-hosted household medication tracker serving the Household
//! Medication Tracking API from one binary with SQLite inside.

pub mod app;
pub mod auth;
pub mod backup;
pub mod capabilities;
pub mod care;
pub mod cli;
pub mod config;
pub mod db;
pub mod decimal;
pub mod domain;
pub mod error;
pub mod household;
pub mod household_settings;
pub mod http;
pub mod identity;
pub mod limits;
pub mod lookup;
pub mod mail;
pub mod mcp;
pub mod medicine;
pub mod memory;
pub mod portable;
pub mod reminders;
pub mod reports;
pub mod state;
pub mod sync;
pub mod web;

pub use app::app;
pub use state::AppState;
