pub fn g() -> u8 {
    1
}

pub fn h() -> u8 {
    crate::a::f()
}
