use crate::high::Thing;

pub fn thing() -> Thing {
    Thing
}
