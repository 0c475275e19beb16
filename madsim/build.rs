//! The guard: this lane means nothing without `--cfg madsim` (madsim then compiles its real
//! runtime instead of the simulator, and the lane would test nothing). `.cargo/config.toml` sets
//! the flag, but a RUSTFLAGS in the environment replaces it; fail the build loudly then.
//! `src/lib.rs` repeats the check as a `compile_error!`, in case a build runs without this script.

fn main() {
    println!("cargo::rerun-if-env-changed=RUSTFLAGS");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if std::env::var_os("CARGO_CFG_MADSIM").is_none() {
        eprintln!(
            "error: wakesim-madsim must be compiled with `--cfg madsim`.\n\
             .cargo/config.toml sets it, but a RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in the \
             environment replaces that setting. Add `--cfg madsim` to it, or unset it, or build \
             only the kernel lane: `cargo test -p wakesim`."
        );
        std::process::exit(1);
    }
}
