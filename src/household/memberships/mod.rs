//! Memberships: an account's place in a household, its role and permissions.

pub mod store;
