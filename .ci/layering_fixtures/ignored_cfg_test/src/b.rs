pub struct B;

#[cfg(test)]
mod tests {
    use crate::a::A;

    fn f() {
        let _ = crate::a::A;
    }
}

#[cfg(test)]
mod more_tests;

#[cfg(all(test, target_os = "linux"))]
fn only_in_tests() -> crate::a::A {
    crate::a::A
}

#[test]
fn a_test() {
    let _ = crate::a::A;
}

pub fn after() {
    crate::c::C::new();
}
