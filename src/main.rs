/// mimalloc instead of the system allocator: a run allocates a few dozen small blocks per seed
/// (the world, its plan, the wake logic), and glibc's malloc and free were about a tenth of the
/// instructions of `wakesim run` (README, "Benchmarks, and where the time goes"). The library
/// sets no allocator: a crate using `wakesim::testing` keeps its own. `mialloc` calls mimalloc's
/// plain `mi_malloc` where the layout lets it (the `mimalloc` crate always took the aligned call).
#[global_allocator]
static ALLOCATOR: mialloc::Mimalloc = mialloc::Mimalloc;

mod mialloc;

fn main() {
    std::process::exit(wakesim::cmd::main());
}
