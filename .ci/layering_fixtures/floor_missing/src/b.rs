pub fn g() {
    crate::a::f();
}
