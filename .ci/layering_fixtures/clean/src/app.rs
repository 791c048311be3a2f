use crate::base::{self, Value};

pub fn run() {
    base::util::helper();
    let _ = Value;
    nested::n();
}

mod nested {
    use super::super::base::util;

    pub fn n() {
        util::helper()
    }
}
