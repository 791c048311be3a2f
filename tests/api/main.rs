//! One test binary: every area drives the real Router over a real SQLite file.

mod support;

mod admin;
mod basics;
mod cli;
mod contract;
mod dosage_options;
mod health_events;
mod location_memberships;
mod locations;
mod medications;
mod notification_preferences;
mod people;
mod person_medications;
mod profile;
mod schedules;
mod stock_removals;
mod storage;
