//! The allocator of the core's own allocations (Linux): blocks of 1 MiB and more — the column
//! buffers the tables are made of — straight from the kernel (`mmap`, grown with `mremap`,
//! given back with `munmap`), everything smaller from the C allocator.
//!
//! Why: with the C allocator alone, the memory of a read stayed resident after its tables were
//! dropped. glibc raises its mmap threshold each time a mapped block is freed (up to 32 MiB), so
//! the next read's column buffers came from the heap and per-thread arenas, which glibc keeps:
//! read, `del`, three times in one process kept 1.2–1.6 GB of a 1 GB dump's tables (issue 53).
//! A block that is its own mapping goes back to the system the moment Arrow releases it, and a
//! growing column moves by remapping pages, not by copying them.
//!
//! Only this library's allocations use it (`#[global_allocator]` of the cdylib): Python's and
//! pyarrow's allocators are untouched, and nothing changes for the rest of the process.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks at least this big are mappings of their own.
const BIG: usize = 1 << 20;
/// Alignments a mapping gives (its start is page-aligned).
const PAGE: usize = 4096;

/// The core's allocator (see the module documentation).
pub struct ReturningAllocator;

#[inline]
fn mapped(layout: &Layout) -> bool {
    layout.size() >= BIG && layout.align() <= PAGE
}

/// A fresh zeroed mapping of `size` bytes, or null.
unsafe fn map(size: usize) -> *mut u8 {
    let p = libc::mmap(
        std::ptr::null_mut(),
        size,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

unsafe impl GlobalAlloc for ReturningAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size())
        } else {
            System.alloc(layout)
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size()) // (anonymous mappings are zeroed)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            libc::munmap(ptr.cast(), layout.size());
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (mapped(&layout), mapped(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                let p = libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE);
                if p == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    p.cast()
                }
            }
            _ => {
                // across the threshold: a new block of the other kind, the bytes copied over
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_grow_shrink_and_keep_their_bytes() {
        let a = ReturningAllocator;
        unsafe {
            let l = Layout::from_size_align(BIG - 8, 64).unwrap();
            let p = a.alloc(l);
            assert!(!p.is_null());
            for i in 0..l.size() {
                *p.add(i) = (i % 251) as u8;
            }
            // small → mapped → bigger mapping → small again: the bytes follow
            let q = a.realloc(p, l, 3 * BIG + 5);
            let l2 = Layout::from_size_align(3 * BIG + 5, 64).unwrap();
            assert!((0..l.size()).all(|i| *q.add(i) == (i % 251) as u8));
            let r = a.realloc(q, l2, 9 * BIG);
            let l3 = Layout::from_size_align(9 * BIG, 64).unwrap();
            assert!((0..l.size()).all(|i| *r.add(i) == (i % 251) as u8));
            let s = a.realloc(r, l3, 100);
            assert!((0..100).all(|i| *s.add(i) == (i % 251) as u8));
            a.dealloc(s, Layout::from_size_align(100, 64).unwrap());
            let z = a.alloc_zeroed(l3);
            assert!((0..l3.size()).step_by(4093).all(|i| *z.add(i) == 0));
            a.dealloc(z, l3);
        }
    }
}
