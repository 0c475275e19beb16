fn main() {
    std::process::exit(wakesim::cmd::main());
}
