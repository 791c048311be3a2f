mod inner;
pub mod util;

pub use inner::Value;
