pub mod codec;
pub mod unused;

pub const DEFAULT: u8 = 1;

pub fn back(a: crate::a::A) -> u8 {
    a.x
}
