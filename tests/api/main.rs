//! One test binary: every area drives the real Router over a real SQLite file.

mod support;

mod admin;
mod basics;
mod cli;
mod contract;
mod dosage_options;
mod location_memberships;
mod locations;
mod medications;
mod people;
mod profile;
mod stock_removals;
mod storage;
