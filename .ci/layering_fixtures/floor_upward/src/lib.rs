pub mod high;
pub mod low;
