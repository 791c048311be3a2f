pub fn not_a_path_key() {}
