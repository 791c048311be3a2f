use crate::{
    b::{self as bee, c::{D, E as Renamed}},
};

pub struct A;

pub fn f(_: D, _: Renamed) {
    bee::q::r();
}
