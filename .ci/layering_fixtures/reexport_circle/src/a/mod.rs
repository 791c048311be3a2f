mod inner;

pub use inner::Thing;
