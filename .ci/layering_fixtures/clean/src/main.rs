fn main() {
    pillbox::app::run();
}
