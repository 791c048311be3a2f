use crate::b::*;

pub struct A;

pub fn f() -> B {
    B
}
