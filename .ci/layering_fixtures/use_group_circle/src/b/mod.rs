pub mod c;
pub mod q;
