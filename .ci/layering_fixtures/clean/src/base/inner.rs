use super::util::helper;

pub struct Value;

pub fn v() {
    helper()
}
