//! The allocator of the `wakesim` binary and of the benches (`mod mialloc` in `src/main.rs`,
//! `#[path]` in `benches/`; the library sets none: a crate using `wakesim::testing` keeps its
//! own). mimalloc, called as the `mimalloc` crate would, but for the common layout.
//!
//! The `mimalloc` crate's `GlobalAlloc` calls `mi_malloc_aligned` for every layout, which tests
//! the alignment and its power of two and looks for a block on the size's page by hand before it
//! allocates (about 60 instructions an allocation in callgrind). `mi_malloc` alone already gives
//! what most layouts ask: mimalloc's blocks are word-aligned, and, with `MI_MAX_ALIGN_SIZE` 16
//! (two words on x86-64 and aarch64), every block of 16 bytes or more is 16-aligned
//! (`libmimalloc-sys` 0.1.49, `c_src/mimalloc/v3`: `types.h` `MI_MAX_ALIGN_SIZE`,
//! `page-queue.c` `MI_ALIGN2W`, the assertion in `alloc.c` `_mi_page_malloc_zero`). So a layout
//! whose alignment is at most 16 and at most its size (the test std's own `System` makes before
//! it calls plain `malloc`) goes to `mi_malloc` / `mi_zalloc` / `mi_realloc`; any other layout to
//! the aligned calls, as before. `mi_free` frees either.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc's `MI_MAX_ALIGN_SIZE` on a 64-bit target: the alignment `mi_malloc` gives every
/// block of at least that many bytes.
const MI_MAX_ALIGN_SIZE: usize = 16;

/// mimalloc as the global allocator, with the plain calls where the layout lets them.
pub struct Mimalloc;

/// Whether `mi_malloc(size)` (or a `mi_realloc` to `size`) meets `align` by itself.
#[inline(always)]
fn plain(align: usize, size: usize) -> bool {
    align <= MI_MAX_ALIGN_SIZE && align <= size
}

// SAFETY: every pointer handed out comes from mimalloc, meets the layout's size and alignment
// (see the module's text for the plain calls; the aligned calls take the alignment), and is
// freed by `mi_free`, which takes any pointer mimalloc gave (aligned or not).
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's C calls take any size and a power-of-two alignment (a `Layout`'s).
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; a block mimalloc moves is
        // allocated as `mi_malloc(new_size)` would, aligned by the test above, and one it keeps
        // in place keeps its address, aligned when it was allocated.
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}
