pub use pillbox_x as x;

pub mod store;
