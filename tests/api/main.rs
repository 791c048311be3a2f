//! One test binary: every area drives the real Router over a real SQLite file.

mod support;

mod basics;
mod contract;
mod people;
mod storage;
