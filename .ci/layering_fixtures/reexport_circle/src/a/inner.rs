pub struct Thing;

pub fn make() -> Thing {
    crate::b::wrap();
    Thing
}
