//! The mapping of a whole segment file, and the only way into it: atomics and
//! bounds-checked copies at offsets that `layout.rs` computes.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use super::layout::align;

/// A shared mapping of a whole segment file. Accessors check their offsets against the
/// mapping's length (a bug is a panic, never a stray access); the memory itself may be
/// changed at any time by other processes, so values read from it are checked by the
/// callers before they steer anything.
pub(crate) struct Map {
    ptr: *mut u8,
    len: usize,
    unmapped: AtomicBool,
}

// SAFETY: the mapping is plain shared memory, reached only through atomics and copies
// that tolerate concurrent changes; `Map` holds no thread-bound state.
unsafe impl Send for Map {}
// SAFETY: as above: every access through `&Map` is an atomic or a racy-tolerant copy.
unsafe impl Sync for Map {}

impl Map {
    /// Map `len` bytes of `fd`, shared, read-write.
    pub fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<Map> {
        // SAFETY: a fresh mapping at an address of the kernel's choosing: it overlaps no
        // Rust object. `fd` is open read-write; a failure is MAP_FAILED, checked below.
        let ptr = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map {
            ptr: ptr.cast(),
            len,
            unmapped: AtomicBool::new(false),
        })
    }

    /// The atomic u32 at `off`.
    #[inline]
    pub fn u32(&self, off: usize) -> &AtomicU32 {
        assert!(
            off & 3 == 0 && off <= self.len - 4,
            "shm offset out of range"
        );
        // SAFETY: in bounds and aligned (the mapping is page aligned); the mapping stays
        // until `unmap`, which the segment calls only when no access is under way.
        // Any bit pattern is a valid AtomicU32.
        unsafe { &*self.ptr.add(off).cast::<AtomicU32>() }
    }

    /// The atomic u64 at `off`.
    #[inline]
    pub fn u64(&self, off: usize) -> &AtomicU64 {
        assert!(
            off & 7 == 0 && off <= self.len - 8,
            "shm offset out of range"
        );
        // SAFETY: as in `u32`.
        unsafe { &*self.ptr.add(off).cast::<AtomicU64>() }
    }

    /// Copy bytes out from `off` (8-aligned), a word at a time with relaxed atomic loads
    /// (a writer may be changing them: the caller checks the copy afterwards).
    #[inline]
    pub fn load_words(&self, off: usize, dst: &mut [u8]) {
        assert!(off & 7 == 0 && off <= self.len && align(dst.len(), 8) <= self.len - off);
        let mut o = off;
        let mut chunks = dst.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.u64(o).load(Ordering::Relaxed).to_ne_bytes());
            o += 8;
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.u64(o).load(Ordering::Relaxed).to_ne_bytes();
            rest.copy_from_slice(&w[..rest.len()]);
        }
    }

    /// Copy `src` in at `off` (8-aligned), a word at a time with relaxed atomic stores;
    /// the last word is padded with zeros.
    #[inline]
    pub fn store_words(&self, off: usize, src: &[u8]) {
        assert!(off & 7 == 0 && off <= self.len && align(src.len(), 8) <= self.len - off);
        let mut o = off;
        let mut chunks = src.chunks_exact(8);
        for c in &mut chunks {
            self.u64(o)
                .store(u64::from_ne_bytes(c.try_into().unwrap()), Ordering::Relaxed);
            o += 8;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.u64(o).store(u64::from_ne_bytes(w), Ordering::Relaxed);
        }
    }

    /// Copy bytes out from `off` (any alignment). For data that changes only under a
    /// lock the caller holds (the table, the header under flock).
    #[inline]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        assert!(
            off <= self.len && dst.len() <= self.len - off,
            "shm range out of bounds"
        );
        // SAFETY: the source range is inside the live mapping (checked above); `dst` is
        // a distinct Rust buffer, so the ranges do not overlap.
        unsafe { ptr::copy_nonoverlapping(self.ptr.add(off), dst.as_mut_ptr(), dst.len()) }
    }

    /// Copy `src` in at `off` (any alignment); same use as `read`.
    #[inline]
    pub fn write(&self, off: usize, src: &[u8]) {
        assert!(
            off <= self.len && src.len() <= self.len - off,
            "shm range out of bounds"
        );
        // SAFETY: the destination range is inside the live, writable mapping (checked
        // above) and no Rust reference covers it; `src` is a distinct buffer.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(off), src.len()) }
    }

    /// Unmap (once; later calls do nothing).
    ///
    /// # Safety
    /// No reference from the accessors may be alive, and none may be made afterwards.
    pub unsafe fn unmap(&self) {
        if !self.unmapped.swap(true, Ordering::AcqRel) {
            // SAFETY: `ptr`/`len` are this mapping's; the caller guarantees nothing
            // refers into it any more.
            unsafe {
                libc::munmap(self.ptr.cast(), self.len);
            }
        }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no accessor reference can be alive.
        unsafe { self.unmap() }
    }
}
