pub struct B;

pub fn g() -> crate::a::A {
    crate::a::A
}
