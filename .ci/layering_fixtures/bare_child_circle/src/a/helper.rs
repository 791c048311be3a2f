use super::Name;

pub fn shout() -> Option<Name> {
    None
}
