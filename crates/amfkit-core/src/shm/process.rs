//! Who is alive: this process's pid (kept right across fork), and /proc/PID/stat's state
//! and start time (field 22), so that a reused pid is not mistaken for a live owner.

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Once;

/// Linux's PID_MAX_LIMIT: no pid is larger (a larger "owner" is garbage).
pub(crate) const PID_MAX: u32 = 1 << 22;

static PID: AtomicU32 = AtomicU32::new(0);
static START: AtomicU64 = AtomicU64::new(0);
static AT_FORK: Once = Once::new();

/// Run in a forked child (pthread_atfork): forget the parent's pid and start time.
extern "C" fn forked_child() {
    PID.store(0, Relaxed);
    START.store(0, Relaxed);
}

/// This process's pid, without a system call once known.
#[inline]
pub(crate) fn pid() -> u32 {
    let p = PID.load(Relaxed);
    if p != 0 {
        return p;
    }
    AT_FORK.call_once(|| {
        // SAFETY: registers a child handler that only stores to two atomics
        // (async-signal-safe); the prepare and parent handlers are absent.
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    // SAFETY: getpid has no preconditions and cannot fail.
    let p = unsafe { libc::getpid() } as u32;
    PID.store(p, Relaxed);
    p
}

/// This process's start time (clock ticks after boot), 0 if /proc cannot say.
pub(crate) fn start_time() -> u64 {
    let s = START.load(Relaxed);
    if s != 0 {
        return s;
    }
    let s = stat(pid()).map_or(0, |s| s.start);
    START.store(s, Relaxed);
    s
}

/// A process's state letter and start time.
pub(crate) struct Stat {
    pub state: u8,
    pub start: u64,
}

/// /proc/PID/stat's field 3 (state) and 22 (start time); None if unreadable.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and ')'.
    let close = text.iter().rposition(|&b| b == b')')?;
    let mut fields = text[close + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let state = *fields.next()?.first()?;
    let start = std::str::from_utf8(fields.nth(18)?).ok()?.parse().ok()?;
    Some(Stat { state, start })
}

/// Whether `pid` (started at `start`, 0: unknown) is a live process.
pub(crate) fn alive(pid: u32, start: u64) -> bool {
    if pid == 0 || pid > PID_MAX {
        return false;
    }
    if pid == self::pid() {
        return start == 0 || start_time() == 0 || start == start_time();
    }
    // SAFETY: signal 0 sends nothing (it only checks); pid is in 1..=PID_MAX, so it
    // names one process, never a group.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    if r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    match stat(pid) {
        // A zombie (killed, not yet reaped) holds nothing any more.
        Some(s) => s.state != b'Z' && s.state != b'X' && (start == 0 || s.start == start),
        // /proc hides it (hidepid) or it just went: kill(2) had the last word (alive,
        // or EPERM: alive and someone else's); the next check settles a race.
        None => true,
    }
}
