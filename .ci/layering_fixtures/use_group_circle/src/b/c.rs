pub struct D;
pub struct E;

pub fn back() -> crate::a::A {
    crate::a::A
}
