pub fn serialize() {}
