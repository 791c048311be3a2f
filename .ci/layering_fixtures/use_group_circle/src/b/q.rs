pub fn r() {}
