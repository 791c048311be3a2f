use crate::a::Thing;

pub fn wrap() -> Option<Thing> {
    None
}
