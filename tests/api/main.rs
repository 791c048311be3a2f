//! One test binary: every area drives the real Router over a real SQLite file.

mod process;
mod support;

mod admin;
mod admin_escalation;
mod basics;
mod cli;
mod contract;
mod dosage_options;
mod dose_occurrences;
mod dose_outcomes;
mod durability;
mod health_events;
mod location_memberships;
mod locations;
mod medication_takes;
mod medications;
mod notification_preferences;
mod pause_periods;
mod people;
mod people_access;
mod person_medications;
mod profile;
mod schedules;
mod stock_removals;
mod storage;
mod sync_batches;
mod sync_changes;
mod sync_round_trip;
mod sync_snapshot;
