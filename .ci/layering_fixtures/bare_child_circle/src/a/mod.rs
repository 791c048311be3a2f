mod helper;

pub struct Name;

pub fn run() {
    helper::shout();
}
