mod helper;

use helper::shout;

pub struct Name;

pub fn run() {
    shout();
}
