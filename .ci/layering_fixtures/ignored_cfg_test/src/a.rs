use crate::b::B;

pub struct A;

pub fn f() -> B {
    B
}
