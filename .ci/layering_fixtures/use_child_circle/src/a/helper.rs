use crate::a::Name;

pub fn shout() -> Option<Name> {
    None
}
