pub mod d;

pub struct Gate;

pub fn open_gate() {
    crate::c::d::e::open();
}
