fn main() {
    std::process::exit(wakesim::cli::main());
}
