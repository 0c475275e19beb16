/// mimalloc instead of the system allocator: a run allocates a few dozen small blocks per seed
/// (the world, its plan, the wake logic), and glibc's malloc and free were about a tenth of the
/// instructions of `wakesim run` (README, "Benchmarks, and where the time goes"). The library
/// sets no allocator: a crate using `wakesim::testing` keeps its own.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(wakesim::cmd::main());
}
