pub fn save() {
    crate::x::tools::act();
}
