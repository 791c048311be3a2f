//! Storage: one SQLite file, a pool of read-only connections, the single
//! writer thread through which every write goes, and the process's memory
//! settings. Every `unsafe` line of Pillbox lives in this crate (the
//! writer's VFS, SQLite's process-wide configuration, glibc's allocator
//! settings); every other crate forbids it.

pub mod db;
pub mod memory;

use pillbox_ground::{domain, error};
