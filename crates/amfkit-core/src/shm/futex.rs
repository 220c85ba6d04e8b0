//! futex(2) wait and wake on a word of the shared mapping. Never `FUTEX_PRIVATE_FLAG`:
//! the waiters and wakers are different processes.

use std::ptr;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleep while `*word == expected`, for at most `timeout` (None: until woken). Returns
/// early on a wake-up, a signal, or when the word already differs; callers re-check.
/// True when a signal ended the sleep (EINTR): a caller that must let its process handle
/// signals (Python's Ctrl-C) returns to it.
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> bool {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp: *const libc::timespec = match &ts {
        Some(t) => t,
        None => ptr::null(),
    };
    // SAFETY: `word` is a live, 4-byte aligned atomic (in the mapping, which outlives
    // the call); `tsp` is null or points to `ts`, alive for the call. FUTEX_WAIT only
    // reads the word; callers re-check the word whatever the result.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            tsp,
            ptr::null::<u32>(),
            0u32,
        )
    };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// Wake up to `count` processes sleeping on `word`.
pub(crate) fn wake(word: &AtomicU32, count: i32) {
    // SAFETY: `word` is a live, aligned atomic; FUTEX_WAKE does not touch memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            count,
            ptr::null::<libc::timespec>(),
            ptr::null::<u32>(),
            0u32,
        );
    }
}
