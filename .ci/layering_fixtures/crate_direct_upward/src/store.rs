pub fn save() {
    pillbox_x::act();
}
