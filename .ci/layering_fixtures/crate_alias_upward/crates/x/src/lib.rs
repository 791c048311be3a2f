pub mod tools;

pub fn start() {
    crate::tools::act();
}
