pub mod e;
