pub fn act() {}
