pub struct C;

impl C {
    pub fn new() -> C {
        C
    }
}
