pub mod app;
pub mod base;
