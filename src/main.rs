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

// The allocator's test lives here, not in `mialloc.rs`, which the benches include as well.
#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use crate::mialloc::Mimalloc;

    /// Every layout the plain calls take comes back aligned, across the small size classes and
    /// a realloc through them, whatever mimalloc's pages happen to hold.
    #[test]
    fn plain_calls_meet_the_alignment() {
        let a = Mimalloc;
        let mut kept = Vec::new();
        for size in 1..=1024usize {
            for align in [1usize, 2, 4, 8, 16, 32, 64] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is checked, then freed below.
                let p = unsafe { a.alloc(layout) };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "size {size} align {align}");
                // SAFETY: `p` from `alloc` with `layout`; the new size is non-zero.
                let q = unsafe { a.realloc(p, layout, size * 3) };
                assert_eq!(
                    q as usize % align,
                    0,
                    "realloc of size {size} align {align}"
                );
                let grown = Layout::from_size_align(size * 3, align).unwrap();
                // SAFETY: as above.
                let z = unsafe { a.alloc_zeroed(layout) };
                assert_eq!(z as usize % align, 0, "zeroed size {size} align {align}");
                // SAFETY: `z` has `size` bytes.
                assert!(
                    unsafe { std::slice::from_raw_parts(z, size) }
                        .iter()
                        .all(|b| *b == 0)
                );
                kept.push((q, grown));
                kept.push((z, layout));
            }
        }
        for (p, layout) in kept {
            // SAFETY: each pointer came from `a` with that layout.
            unsafe { a.dealloc(p, layout) };
        }
    }
}
