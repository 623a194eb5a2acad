//! The global allocator: mimalloc, asked for a plain block whenever its plain blocks are
//! aligned enough.
//!
//! The `mimalloc` crate passes every request to `mi_malloc_aligned`. Its fast path takes a
//! block only while the size class's free list is non-empty; once that list runs dry it falls
//! to the generic path, which over-allocates into the next size class (mimalloc#889), and the
//! size class is not refilled until a plain `mi_malloc` asks for it: a review paid about 1.2k
//! instructions a request for it (README "Performance"). Every mimalloc block is aligned to at
//! least a word (its size classes are multiples of 8), so a layout asking no more than that
//! gets a plain block; larger alignments still go to the aligned functions.
#![allow(unsafe_code)] // the one place: a GlobalAlloc impl is unsafe by definition

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as ffi;

/// Alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

// SAFETY: each method forwards to mimalloc with a size and alignment it honours: plain blocks
// only when the layout asks for at most word alignment, which every block has (size classes
// are multiples of a word, pages start their blocks 16-aligned); memory is freed by `mi_free`,
// which takes blocks from either family. This holds with mimalloc's debug features off, as
// Cargo.toml builds it: its guarded mode (`MI_GUARDED`, debug builds only) may place a plain
// block against a guard page at any alignment.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_malloc(layout.size()).cast()
            } else {
                ffi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_zalloc(layout.size()).cast()
            } else {
                ffi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; see the impl.
        unsafe {
            if layout.align() <= WORD {
                ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size up to a few pages' worth and every alignment up to a page: each block is
    /// aligned as asked, holds what was written, and keeps it through growing and shrinking.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = MiMalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (1..=600).chain([1024, 4000, 65536, 1 << 20]) {
                let Ok(layout) = Layout::from_size_align(size.max(align), align) else {
                    continue;
                };
                // Many at once, so size classes run dry and are refilled (the case at hand).
                let blocks: Vec<*mut u8> = (0..8)
                    .map(|i| {
                        // SAFETY: the layout's size is non-zero.
                        let p = unsafe {
                            if i % 2 == 0 {
                                a.alloc(layout)
                            } else {
                                a.alloc_zeroed(layout)
                            }
                        };
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "size {size} align {align}");
                        if i % 2 == 1 {
                            // SAFETY: `p` holds `layout.size()` bytes.
                            let s = unsafe { std::slice::from_raw_parts(p, layout.size()) };
                            assert!(s.iter().all(|&b| b == 0), "zeroed size {size}");
                        }
                        // SAFETY: as above.
                        unsafe { p.write_bytes(i as u8 + 1, layout.size()) };
                        p
                    })
                    .collect();
                for (i, p) in blocks.into_iter().enumerate() {
                    let grown = layout.size() * 3 + 5;
                    // SAFETY: `p` came from `alloc` with `layout`; `grown` is non-zero.
                    let q = unsafe { a.realloc(p, layout, grown) };
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0, "realloc size {size} align {align}");
                    // SAFETY: the first `layout.size()` bytes were kept.
                    let s = unsafe { std::slice::from_raw_parts(q, layout.size()) };
                    assert!(s.iter().all(|&b| b == i as u8 + 1));
                    let grown = Layout::from_size_align(grown, align).unwrap();
                    // SAFETY: `q` came from `realloc` to `grown`.
                    unsafe { a.dealloc(q, grown) };
                }
            }
        }
    }
}
