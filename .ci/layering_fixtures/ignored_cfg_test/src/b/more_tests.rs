use crate::a::A;
