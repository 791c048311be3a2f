pub fn f() -> u8 {
    crate::b::g()
}
