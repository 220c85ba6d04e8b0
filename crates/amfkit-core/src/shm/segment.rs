//! A segment: the file, its mapping, the header and process table, the lifecycle (open,
//! join, stale re-initialisation, close, the last one out unlinking), and the public API.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::hint;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::futex;
use super::hash::hash64;
use super::kv::{KvError, Table};
use super::layout::*;
use super::lock::{Lock, Taken, STUCK};
use super::map::Map;
use super::process;
use super::ring::{ReadEnd, RecordSink, Ring};
use super::{Error, Result};

const LOG_SEED: u64 = 0x4c4f_475f_4e41_4d45;
const READY: u32 = 1;
/// The in-flight count's top bit: the segment is closed.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// How to open a segment. The layout parameters apply when this process creates the
/// segment (or re-initialises a stale one); a process joining a live segment adopts its
/// creator's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where the file goes (`{directory}/amfkit.{name}`).
    pub directory: PathBuf,
    /// The application's tag (up to 64 bytes; empty: any). Two different non-empty tags
    /// cannot share a segment.
    pub app: String,
    /// Bytes of records per log (4096..=2^31, rounded up to 8); a record may be a
    /// quarter of it.
    pub ring_bytes: u64,
    /// Records per log at most (1..=2^24).
    pub ring_records: u64,
    /// Logs at most (1..=4096).
    pub max_logs: u64,
    /// Key-value slots (1..=2^24).
    pub kv_slots: u64,
    /// The largest value (0..=2^24).
    pub kv_value_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            directory: PathBuf::from("/dev/shm"),
            app: String::new(),
            ring_bytes: 1 << 20,
            ring_records: 8192,
            max_logs: 64,
            kv_slots: 16384,
            kv_value_bytes: 8192,
        }
    }
}

/// A log of a segment, found by name once ([`Segment::find`]). Logs are never removed
/// from a live segment, so a slot stays valid for the segment that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSlot(usize);

/// Why [`Segment::wait_log`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The log has a record after the cursor, or the caller's `stop` said so.
    Ready,
    TimedOut,
    /// A signal ended the sleep (the caller handles it, then waits again).
    Interrupted,
}

/// A segment's figures ([`Segment::stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Logs made.
    pub logs: u64,
    /// Records the logs hold now.
    pub records: u64,
    /// Records ever appended (the sum of the heads).
    pub appended: u64,
    pub kv_used: u64,
    pub kv_slots: u64,
    /// Distinct live processes registered (dead ones stay in the table until the next
    /// open or close purges them).
    pub processes: u64,
    pub bell: u64,
    /// Threads sleeping on the bell.
    pub waiters: u64,
    /// Locks taken over from dead owners.
    pub recoveries: u64,
    pub ring_bytes: u64,
    pub ring_records: u64,
    pub max_logs: u64,
    pub kv_value_bytes: u64,
    /// The file's size in bytes.
    pub size: u64,
}

/// Where things are in the mapping, for tests that write garbage into the file.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct DebugRegions {
    pub dir: usize,
    pub rings: usize,
    pub ring_stride: usize,
    pub ring_index: usize,
    pub ring_data: usize,
    pub kv_tags: usize,
    pub kv_keys: usize,
    pub key_stride: usize,
    pub kv_values: usize,
    pub value_stride: usize,
    pub total: usize,
}

/// An open segment. Thread-safe: every method takes `&self`.
pub struct Segment {
    name: String,
    path: PathBuf,
    lay: Layout,
    map: Map,
    file: Mutex<Option<File>>,
    /// The pid and start time registered in the process table (a forked child using an
    /// inherited segment is not registered, and leaves the table alone).
    pid: u32,
    start: u64,
    slot: usize,
    /// Operations under way, and CLOSED: the mapping goes when both say so.
    state: AtomicUsize,
}

impl fmt::Debug for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Segment")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// An operation under way (the mapping stays while one is).
struct InFlight<'a>(&'a Segment);

impl Drop for InFlight<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.exit();
    }
}

/// A lock held; released when dropped (panics included).
struct Held<'a> {
    lock: Lock<'a>,
    me: u32,
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        self.lock.release(self.me);
    }
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if !ok {
        return Err(Error::Invalid(format!(
            "shared memory name {name:?} must be 1 to 64 characters of A-Z, a-z, 0-9, '_', '.', '-'"
        )));
    }
    Ok(())
}

fn check_log(log: &str) -> Result<()> {
    if log.is_empty() || log.len() > LOG_NAME_MAX {
        return Err(Error::Invalid(format!(
            "a log name is 1 to {LOG_NAME_MAX} bytes of UTF-8, not {}",
            log.len()
        )));
    }
    Ok(())
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > KEY_MAX {
        return Err(Error::Invalid(format!(
            "a key is 1 to {KEY_MAX} bytes of UTF-8, not {}",
            key.len()
        )));
    }
    Ok(())
}

fn io_error(path: &Path, what: &str, e: io::Error) -> Error {
    Error::Store(format!(
        "shared memory {}: cannot {what}: {e}",
        path.display()
    ))
}

fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock(2) on an fd this `File` owns; no memory is involved.
        let r = unsafe { libc::flock(file.as_raw_fd(), op) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `path` still names the file `file` has open (a closer may have unlinked it).
fn same_file(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The (pid, start) entries of a process table held in a header's bytes.
fn table_of(header: &[u8]) -> Vec<(u32, u64)> {
    (0..PROC_SLOTS)
        .map(|i| {
            let o = H_PROCS + i * PROC_BYTES;
            let pid = u32::from_ne_bytes(header[o..o + 4].try_into().unwrap());
            let start = u64::from_ne_bytes(header[o + 8..o + 16].try_into().unwrap());
            (pid, start)
        })
        .filter(|&(pid, _)| pid != 0)
        .collect()
}

/// What a file's first bytes say it is.
enum Found {
    /// Empty, or a creation that never finished (no magic yet).
    Blank,
    Segment(Layout),
}

fn read_header(file: &File, path: &Path, size: u64) -> Result<(Found, Vec<u8>)> {
    let mut header = vec![0u8; HEADER_BYTES];
    let n = (size as usize).min(HEADER_BYTES);
    file.read_exact_at(&mut header[..n], 0)
        .map_err(|e| io_error(path, "read it", e))?;
    if n < 8 || header[H_MAGIC..H_MAGIC + 8] == [0; 8] {
        return Ok((Found::Blank, header));
    }
    if header[H_MAGIC..H_MAGIC + 8] != MAGIC {
        return Err(Error::Store(format!(
            "{} is not an amfkit shared-memory segment (remove it, or pick another name)",
            path.display()
        )));
    }
    let version = u32::from_ne_bytes(header[H_VERSION..H_VERSION + 4].try_into().unwrap());
    if version != VERSION {
        return Err(Error::Store(format!(
            "{} is an amfkit shared-memory segment of layout version {version}, this amfkit uses version {VERSION} (stop its processes, or pick another name)",
            path.display()
        )));
    }
    let corrupted = |why: &str| {
        Error::Store(format!(
            "{} is a corrupted amfkit shared-memory segment: {why}",
            path.display()
        ))
    };
    if n < HEADER_BYTES {
        return Err(corrupted("it is shorter than its header"));
    }
    let lay = Layout::from_header(&header).map_err(|why| corrupted(&why))?;
    if lay.total as u64 != size {
        return Err(corrupted(&format!(
            "it is {size} bytes, its header says {}",
            lay.total
        )));
    }
    Ok((Found::Segment(lay), header))
}

impl Segment {
    /// Open the segment `name` (creating it, or re-initialising it when every process
    /// that used it is dead).
    pub fn open(name: &str, opts: &Options) -> Result<Segment> {
        check_name(name)?;
        if opts.app.len() > APP_MAX {
            return Err(Error::Invalid(format!(
                "app is at most {APP_MAX} bytes, not {}",
                opts.app.len()
            )));
        }
        let lay = Layout::new(
            opts.ring_bytes,
            opts.ring_records,
            opts.max_logs,
            opts.kv_slots,
            opts.kv_value_bytes,
        )
        .map_err(Error::Invalid)?;
        let path = opts.directory.join(format!("amfkit.{name}"));
        for _ in 0..32 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| io_error(&path, "open it", e))?;
            flock(&file, libc::LOCK_EX).map_err(|e| io_error(&path, "lock it", e))?;
            if !same_file(&path, &file) {
                continue; // unlinked by the last one out meanwhile: open the new one
            }
            return Segment::setup(name, path, file, lay, &opts.app);
        }
        Err(Error::Store(format!(
            "shared memory {}: the file keeps being replaced",
            path.display()
        )))
    }

    /// Under flock: create, re-initialise or join; register; unlock.
    fn setup(name: &str, path: PathBuf, file: File, ours: Layout, app: &str) -> Result<Segment> {
        let meta = file.metadata().map_err(|e| io_error(&path, "stat it", e))?;
        if !meta.file_type().is_file() {
            return Err(Error::Store(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        if meta.uid() != euid() {
            return Err(Error::Store(format!(
                "{} belongs to another user (uid {}); pick another name",
                path.display(),
                meta.uid()
            )));
        }
        let (found, header) = read_header(&file, &path, meta.len())?;
        let joined = match found {
            Found::Segment(lay) if table_of(&header).iter().any(|&(p, s)| process::alive(p, s)) => {
                Some(lay)
            }
            // Blank, or stale (everyone who used it is dead): start it over.
            _ => None,
        };
        let lay = joined.unwrap_or(ours);
        if joined.is_none() {
            // Truncating to 0 first gives fresh zero pages (and frees the old ones).
            file.set_len(0)
                .map_err(|e| io_error(&path, "truncate it", e))?;
            file.set_len(lay.total as u64)
                .map_err(|e| io_error(&path, "size it", e))?;
        }
        let map = Map::new(file.as_fd(), lay.total).map_err(|e| io_error(&path, "map it", e))?;
        let mut seg = Segment {
            name: name.to_owned(),
            path,
            lay,
            map,
            file: Mutex::new(None),
            pid: process::pid(),
            start: process::start_time(),
            slot: 0,
            state: AtomicUsize::new(0),
        };
        if joined.is_none() {
            seg.init_header(app);
        } else {
            seg.purge();
            seg.check_app(app)?;
        }
        seg.slot = seg.register()?;
        flock(&file, libc::LOCK_UN).map_err(|e| io_error(&seg.path, "unlock it", e))?;
        *seg.file.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(file);
        Ok(seg)
    }

    fn init_header(&self, app: &str) {
        let m = &self.map;
        let l = &self.lay;
        m.u64(H_RING_BYTES).store(l.ring_bytes as u64, Relaxed);
        m.u32(H_RING_RECORDS).store(l.ring_records as u32, Relaxed);
        m.u32(H_MAX_LOGS).store(l.max_logs as u32, Relaxed);
        m.u32(H_KV_SLOTS).store(l.kv_slots as u32, Relaxed);
        m.u32(H_KV_VALUE_BYTES)
            .store(l.kv_value_bytes as u32, Relaxed);
        m.u64(H_TOTAL).store(l.total as u64, Relaxed);
        self.set_app(app);
        m.u32(H_VERSION).store(VERSION, Relaxed);
        fence(Release);
        m.write(H_MAGIC, &MAGIC);
    }

    fn app(&self) -> String {
        let n = (self.map.u32(H_APP_LEN).load(Relaxed) as usize).min(APP_MAX);
        let mut buf = vec![0u8; n];
        self.map.read(H_APP, &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }

    fn set_app(&self, app: &str) {
        self.map.write(H_APP, app.as_bytes());
        self.map.u32(H_APP_LEN).store(app.len() as u32, Relaxed);
    }

    fn check_app(&self, app: &str) -> Result<()> {
        let theirs = self.app();
        if app.is_empty() || theirs == app {
            return Ok(());
        }
        if theirs.is_empty() {
            self.set_app(app);
            return Ok(());
        }
        let pids: Vec<String> = self
            .procs()
            .map(|(pid, _, _)| pid.load(Relaxed).to_string())
            .collect();
        Err(Error::Store(format!(
            "shared memory '{}' is in use by another application (app '{theirs}', pids {}); pick another name",
            self.name,
            pids.join(", ")
        )))
    }

    /// The registered entries of the process table: (pid, waiting, start).
    fn procs(&self) -> impl Iterator<Item = (&AtomicU32, &AtomicU32, &AtomicU64)> {
        (0..PROC_SLOTS)
            .map(|i| {
                let o = H_PROCS + i * PROC_BYTES;
                (self.map.u32(o), self.map.u32(o + 4), self.map.u64(o + 8))
            })
            .filter(|(pid, _, _)| pid.load(Relaxed) != 0)
    }

    /// Under flock: drop the dead from the table; how many entries are left.
    fn purge(&self) -> usize {
        let mut live = 0;
        for (pid, waiting, start) in self.procs() {
            if process::alive(pid.load(Relaxed), start.load(Relaxed)) {
                live += 1;
                continue;
            }
            // Its sleepers died with it: stop waking them.
            let w = waiting.swap(0, Relaxed);
            let waiters = self.map.u32(H_BELL_WAITERS);
            let _ = waiters.fetch_update(SeqCst, Relaxed, |n| Some(n.saturating_sub(w)));
            start.store(0, Relaxed);
            pid.store(0, Release);
        }
        live
    }

    /// Under flock: add this process to the table; its slot.
    fn register(&self) -> Result<usize> {
        for i in 0..PROC_SLOTS {
            let o = H_PROCS + i * PROC_BYTES;
            if self.map.u32(o).load(Relaxed) == 0 {
                self.map.u64(o + 8).store(self.start, Relaxed);
                self.map.u32(o + 4).store(0, Relaxed);
                self.map.u32(o).store(self.pid, Release);
                return Ok(i);
            }
        }
        Err(Error::Store(format!(
            "shared memory '{}' has {PROC_SLOTS} processes attached already",
            self.name
        )))
    }

    /// The start time the table holds for `pid`.
    fn start_of(&self, pid: u32) -> Option<u64> {
        self.procs()
            .find(|(p, _, _)| p.load(Relaxed) == pid)
            .map(|(_, _, s)| s.load(Relaxed))
    }

    // --- the lifecycle -------------------------------------------------------------

    #[inline]
    fn enter(&self) -> Result<InFlight<'_>> {
        let s = self.state.fetch_add(1, Acquire);
        let guard = InFlight(self);
        if s & CLOSED != 0 {
            return Err(self.closed());
        }
        Ok(guard)
    }

    #[inline]
    fn exit(&self) {
        if self.state.fetch_sub(1, Release) == CLOSED | 1 {
            fence(Acquire);
            // SAFETY: closed, and this was the last operation under way; any later one
            // sees CLOSED before it touches the mapping.
            unsafe { self.map.unmap() }
        }
    }

    fn closed(&self) -> Error {
        Error::Store(format!("shared memory '{}' is closed", self.name))
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.state.load(Relaxed) & CLOSED != 0
    }

    /// Let go: leave the process table (dropping dead entries too); the last process out
    /// unlinks the file. The mapping goes once no operation of another thread is under
    /// way. Idempotent; every later operation fails with "closed".
    pub fn close(&self) -> Result<()> {
        let Ok(_in) = self.enter() else { return Ok(()) };
        if self.state.fetch_or(CLOSED, AcqRel) & CLOSED != 0 {
            return Ok(());
        }
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner()).take();
        let result = match &file {
            Some(file) if process::pid() == self.pid => self.deregister(file),
            _ => Ok(()),
        };
        // Wake this process's sleepers (they return, and find it closed).
        self.ring_bell();
        drop(file);
        result
    }

    fn deregister(&self, file: &File) -> Result<()> {
        flock(file, libc::LOCK_EX).map_err(|e| io_error(&self.path, "lock it", e))?;
        let o = H_PROCS + self.slot * PROC_BYTES;
        if self.map.u32(o).load(Relaxed) == self.pid
            && self.map.u64(o + 8).load(Relaxed) == self.start
        {
            self.map.u64(o + 8).store(0, Relaxed);
            self.map.u32(o).store(0, Release);
        }
        let mut result = Ok(());
        if self.purge() == 0 && same_file(&self.path, file) {
            if let Err(e) = std::fs::remove_file(&self.path) {
                result = Err(io_error(&self.path, "remove it", e));
            }
        }
        let _ = flock(file, libc::LOCK_UN);
        result
    }

    /// Unlink the segment `name` if no live process uses it (or it is a creation that
    /// never finished); whether it did. A file that is not an amfkit segment stays.
    pub fn remove_stale(name: &str, directory: &Path) -> Result<bool> {
        check_name(name)?;
        let path = directory.join(format!("amfkit.{name}"));
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io_error(&path, "open it", e)),
        };
        flock(&file, libc::LOCK_EX).map_err(|e| io_error(&path, "lock it", e))?;
        if !same_file(&path, &file) {
            return Ok(false);
        }
        let meta = file.metadata().map_err(|e| io_error(&path, "stat it", e))?;
        if !meta.file_type().is_file() {
            return Ok(false);
        }
        let stale = match read_header(&file, &path, meta.len()) {
            Ok((Found::Blank, _)) => true,
            Ok((Found::Segment(_), header)) => {
                !table_of(&header).iter().any(|&(p, s)| process::alive(p, s))
            }
            Err(_) => false,
        };
        if stale {
            std::fs::remove_file(&path).map_err(|e| io_error(&path, "remove it", e))?;
        }
        Ok(stale)
    }

    // --- locks -----------------------------------------------------------------------

    /// Take `lock` (`what` names it in errors); a takeover from a dead owner is counted.
    fn take<'a>(&'a self, lock: Lock<'a>, what: &dyn Fn() -> String) -> Result<(Held<'a>, Taken)> {
        let me = process::pid();
        match lock.acquire(me, &|pid| self.start_of(pid)) {
            Ok(taken) => {
                if let Taken::Recovered(_) = taken {
                    self.map.u32(H_RECOVERIES).fetch_add(1, Relaxed);
                }
                Ok((Held { lock, me }, taken))
            }
            Err(pid) => Err(Error::Store(format!(
                "shared memory '{}': {} has been held by pid {pid} for more than {} s (stuck, or corrupted memory)",
                self.name,
                what(),
                STUCK.as_secs()
            ))),
        }
    }

    // --- logs ------------------------------------------------------------------------

    fn log_count(&self) -> Result<usize> {
        let n = self.map.u32(H_LOG_COUNT).load(Acquire) as usize;
        if n > self.lay.max_logs {
            return Err(Error::Store(format!(
                "shared memory '{}': the log directory is corrupted",
                self.name
            )));
        }
        Ok(n)
    }

    /// The directory entry of `log`, if it exists.
    #[inline]
    fn find_log(&self, log: &str) -> Result<Option<usize>> {
        let tag = hash64(LOG_SEED, log.as_bytes()) as u32;
        for i in 0..self.log_count()? {
            let e = self.lay.dir_entry(i);
            if self.map.u32(e + D_HASH).load(Relaxed) == tag
                && self.map.u32(e + D_STATE).load(Acquire) == READY
                && self.map.u32(e + D_NAME_LEN).load(Relaxed) as usize == log.len()
            {
                let mut buf = [0u8; LOG_NAME_MAX];
                self.map.read(e + D_NAME, &mut buf[..log.len()]);
                if &buf[..log.len()] == log.as_bytes() {
                    return Ok(Some(i));
                }
            }
        }
        Ok(None)
    }

    /// The directory entry of `log`, made if need be.
    fn log_index(&self, log: &str) -> Result<usize> {
        if let Some(i) = self.find_log(log)? {
            return Ok(i);
        }
        let (_held, _) = self.take(Lock::at(&self.map, H_DIR_LOCK), &|| {
            "the log directory's lock".into()
        })?;
        if let Some(i) = self.find_log(log)? {
            return Ok(i);
        }
        let i = self.log_count()?;
        if i == self.lay.max_logs {
            return Err(Error::Store(format!(
                "shared memory '{}': too many logs (max_logs is {}), cannot make log '{log}'",
                self.name, self.lay.max_logs
            )));
        }
        let e = self.lay.dir_entry(i);
        self.map.write(e + D_NAME, log.as_bytes());
        self.map
            .u32(e + D_NAME_LEN)
            .store(log.len() as u32, Relaxed);
        self.map
            .u32(e + D_HASH)
            .store(hash64(LOG_SEED, log.as_bytes()) as u32, Relaxed);
        let base = self.lay.ring(i);
        for w in 0..4 {
            self.map.u32(base + R_LOCK + 4 * w).store(0, Relaxed);
        }
        Ring::new(&self.map, &self.lay, i).init();
        self.map.u32(e + D_STATE).store(READY, Release);
        self.map.u32(H_LOG_COUNT).store(i as u32 + 1, Release);
        Ok(i)
    }

    fn check_record(&self, log: &str, record: &[u8]) -> Result<()> {
        check_log(log)?;
        if record.len() > self.lay.max_record {
            return Err(Error::Store(format!(
                "shared memory '{}': a record of {} bytes is larger than a log may hold ({} bytes, a quarter of ring_bytes)",
                self.name,
                record.len(),
                self.lay.max_record
            )));
        }
        Ok(())
    }

    #[inline]
    fn ring_bell(&self) {
        let bell = self.map.u32(H_BELL);
        bell.fetch_add(1, SeqCst);
        if self.map.u32(H_BELL_WAITERS).load(SeqCst) != 0 {
            futex::wake(bell, i32::MAX);
        }
    }

    /// [`append`](Self::append) without blocking: None when that would wait (the log's
    /// lock is taken, or the log does not exist yet).
    #[inline]
    pub fn try_append(&self, log: &str, record: &[u8]) -> Result<Option<u64>> {
        let _in = self.enter()?;
        self.check_record(log, record)?;
        let Some(i) = self.find_log(log)? else {
            return Ok(None);
        };
        let ring = Ring::new(&self.map, &self.lay, i);
        let me = process::pid();
        let lock = ring.lock();
        if !lock.try_acquire(me) {
            return Ok(None);
        }
        let held = Held { lock, me };
        let seq = ring.append_locked(record);
        drop(held);
        self.ring_bell();
        Ok(Some(seq))
    }

    /// Add `record` to `log` (made on first use), ring the bell; its seq (from 1).
    pub fn append(&self, log: &str, record: &[u8]) -> Result<u64> {
        let _in = self.enter()?;
        self.check_record(log, record)?;
        let i = self.log_index(log)?;
        let ring = Ring::new(&self.map, &self.lay, i);
        let (held, _) = self.take(ring.lock(), &|| format!("the lock of log '{log}'"))?;
        let seq = ring.append_locked(record);
        drop(held);
        self.ring_bell();
        Ok(seq)
    }

    /// The seq of the newest record of `log` (0: none yet).
    #[inline]
    pub fn head(&self, log: &str) -> Result<u64> {
        let _in = self.enter()?;
        check_log(log)?;
        Ok(match self.find_log(log)? {
            Some(i) => Ring::new(&self.map, &self.lay, i).head(),
            None => 0,
        })
    }

    /// Up to `limit` records of `log` after `cursor`, oldest first, into `sink`; the next
    /// cursor and how many records after `cursor` the log no longer holds. A cursor past
    /// the head (from before a restart) reads as the head. Lock-free.
    #[inline]
    pub fn read(
        &self,
        log: &str,
        cursor: u64,
        limit: usize,
        sink: &mut dyn RecordSink,
    ) -> Result<(u64, u64)> {
        let _in = self.enter()?;
        check_log(log)?;
        let Some(i) = self.find_log(log)? else {
            return Ok((0, 0));
        };
        match Ring::new(&self.map, &self.lay, i).read(cursor, limit, sink) {
            ReadEnd::Done { cursor, lost } | ReadEnd::SinkFailed { cursor, lost } => {
                Ok((cursor, lost))
            }
            ReadEnd::Corrupted(seq) => Err(Error::Store(format!(
                "shared memory '{}': log '{log}' record {seq} is corrupted",
                self.name
            ))),
        }
    }

    /// The log `log`, found once for [`head_at`](Self::head_at), [`read_at`](Self::read_at)
    /// and [`wait_log`](Self::wait_log) (which then skip the lookup by name); None while
    /// nobody has appended to it.
    pub fn find(&self, log: &str) -> Result<Option<LogSlot>> {
        let _in = self.enter()?;
        check_log(log)?;
        Ok(self.find_log(log)?.map(LogSlot))
    }

    /// The ring of a slot (one this segment gave: its index is in range).
    #[inline]
    fn ring_at(&self, slot: LogSlot) -> Result<Ring<'_>> {
        if slot.0 >= self.lay.max_logs {
            return Err(Error::Invalid(format!(
                "log slot {} is not one of this segment's {} logs",
                slot.0, self.lay.max_logs
            )));
        }
        Ok(Ring::new(&self.map, &self.lay, slot.0))
    }

    /// [`head`](Self::head) of a found log.
    #[inline]
    pub fn head_at(&self, slot: LogSlot) -> Result<u64> {
        let _in = self.enter()?;
        Ok(self.ring_at(slot)?.head())
    }

    /// [`read`](Self::read) of a found log (`log` is its name, for errors).
    #[inline]
    pub fn read_at(
        &self,
        slot: LogSlot,
        log: &str,
        cursor: u64,
        limit: usize,
        sink: &mut dyn RecordSink,
    ) -> Result<(u64, u64)> {
        let _in = self.enter()?;
        match self.ring_at(slot)?.read(cursor, limit, sink) {
            ReadEnd::Done { cursor, lost } | ReadEnd::SinkFailed { cursor, lost } => {
                Ok((cursor, lost))
            }
            ReadEnd::Corrupted(seq) => Err(Error::Store(format!(
                "shared memory '{}': log '{log}' record {seq} is corrupted",
                self.name
            ))),
        }
    }

    /// The names of the logs that exist.
    pub fn logs(&self) -> Result<Vec<String>> {
        let _in = self.enter()?;
        let mut out = Vec::new();
        for i in 0..self.log_count()? {
            let e = self.lay.dir_entry(i);
            if self.map.u32(e + D_STATE).load(Acquire) != READY {
                continue;
            }
            let n = self.map.u32(e + D_NAME_LEN).load(Relaxed) as usize;
            let mut buf = vec![0u8; n.min(LOG_NAME_MAX)];
            self.map.read(e + D_NAME, &mut buf);
            match String::from_utf8(buf) {
                Ok(name) if n <= LOG_NAME_MAX && n > 0 => out.push(name),
                _ => {
                    return Err(Error::Store(format!(
                        "shared memory '{}': the log directory is corrupted (entry {i})",
                        self.name
                    )))
                }
            }
        }
        Ok(out)
    }

    // --- the bell --------------------------------------------------------------------

    /// The bell's count (one more at least per append; it wraps).
    #[inline]
    pub fn bell(&self) -> Result<u32> {
        let _in = self.enter()?;
        Ok(self.map.u32(H_BELL).load(SeqCst))
    }

    /// Wait until the bell's count differs from `seen` or `timeout` passes (None: no
    /// limit): spin up to `spin`, then sleep on a futex (no CPU). The count then. The
    /// spin adapts (`SpinGuess`): after `MISS_LIMIT` spins in a row that the bell did not
    /// end, the next `SKIP_WAITS` waits sleep at once. Spinning only pays when the process
    /// that rings can run meanwhile; sharing one CPU with it, a spin only delays it (a
    /// one-core round trip took 151 µs with a spin every time, ~45 without).
    pub fn wait(&self, seen: u32, timeout: Option<Duration>, spin: Duration) -> Result<u32> {
        let spin = SPIN_GUESS.budget(spin);
        let _in = self.enter()?;
        let bell = self.map.u32(H_BELL);
        let now = Instant::now();
        let current = bell.load(SeqCst);
        if current != seen {
            return Ok(current);
        }
        let deadline = timeout.and_then(|t| now.checked_add(t));
        let spin_end = now + timeout.map_or(spin, |t| spin.min(t));
        if !spin.is_zero() {
            loop {
                for _ in 0..LOOKS_PER_CLOCK {
                    hint::spin_loop();
                    let current = bell.load(Acquire);
                    if current != seen {
                        SPIN_GUESS.rang();
                        return Ok(current);
                    }
                }
                if Instant::now() >= spin_end {
                    if timeout.is_none_or(|t| t >= spin) {
                        SPIN_GUESS.missed(); // a whole spin, and no bell
                    }
                    break;
                }
            }
        }
        let waiters = self.map.u32(H_BELL_WAITERS);
        let mine = self.map.u32(H_PROCS + self.slot * PROC_BYTES + 4);
        let registered = process::pid() == self.pid;
        loop {
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() && timeout.is_some() {
                        return Ok(bell.load(SeqCst));
                    }
                    Some(left)
                }
                // No deadline (or one too far to represent): sleep in long naps.
                None => Some(Duration::from_secs(3600)),
            };
            if registered {
                mine.fetch_add(1, Relaxed);
            }
            waiters.fetch_add(1, SeqCst);
            if bell.load(SeqCst) == seen {
                futex::wait(bell, seen, left);
            }
            // Saturating: a purge or a re-registration of the slot may have zeroed them.
            let _ = waiters.fetch_update(SeqCst, SeqCst, |n| Some(n.saturating_sub(1)));
            if registered {
                let _ = mine.fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
            }
            let current = bell.load(SeqCst);
            if current != seen || self.is_closed() {
                return Ok(current);
            }
        }
    }

    /// Wait until `log` holds a record after `cursor` (its head differs from `cursor`),
    /// `stop()` says so, or `timeout` passes (None: no limit). `slot` is the log once found
    /// (it is looked for while None: nobody has appended to the log yet). A reader that
    /// follows one log: it spins on that log's head, not on the bell, so appends to other
    /// logs do not end its spin (they do wake its sleep, which it then resumes). The spin
    /// adapts as [`wait`](Self::wait)'s does; a signal ends the sleep (`Woken::Interrupted`)
    /// so that the caller can handle it.
    pub fn wait_log(
        &self,
        log: &str,
        slot: &mut Option<LogSlot>,
        cursor: u64,
        stop: &dyn Fn() -> bool,
        timeout: Option<Duration>,
        spin: Duration,
    ) -> Result<Woken> {
        let spin = SPIN_GUESS.budget(spin);
        let _in = self.enter()?;
        check_log(log)?;
        let ready = |slot: &mut Option<LogSlot>| -> Result<bool> {
            if slot.is_none() {
                *slot = self.find_log(log)?.map(LogSlot);
            }
            Ok(match *slot {
                Some(s) => self.ring_at(s)?.head() != cursor || stop(),
                None => stop(),
            })
        };
        if ready(slot)? {
            return Ok(Woken::Ready);
        }
        let now = Instant::now();
        let deadline = timeout.and_then(|t| now.checked_add(t));
        if !spin.is_zero() {
            let spin_end = now + timeout.map_or(spin, |t| spin.min(t));
            // The head's word, once the log exists: one load per turn.
            let head = slot.map(|s| self.ring_at(s)).transpose()?;
            loop {
                // A look at the head after every pause (a pause is ~20 ns here, a read
                // of the clock twice that): the record is seen within a pause of its
                // append.
                for _ in 0..LOOKS_PER_CLOCK {
                    hint::spin_loop();
                    let arrived = match &head {
                        Some(ring) => ring.head() != cursor || stop(),
                        None => ready(slot)?,
                    };
                    if arrived {
                        SPIN_GUESS.rang();
                        return Ok(Woken::Ready);
                    }
                }
                if Instant::now() >= spin_end {
                    if timeout.is_none_or(|t| t >= spin) {
                        SPIN_GUESS.missed();
                    }
                    break;
                }
            }
        }
        let bell = self.map.u32(H_BELL);
        let waiters = self.map.u32(H_BELL_WAITERS);
        let mine = self.map.u32(H_PROCS + self.slot * PROC_BYTES + 4);
        let registered = process::pid() == self.pid;
        loop {
            if self.is_closed() {
                return Err(self.closed());
            }
            // The bell before the head: an append after this load changes the bell, so
            // the futex below does not sleep through it.
            let seen = bell.load(SeqCst);
            if ready(slot)? {
                return Ok(Woken::Ready);
            }
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(Woken::TimedOut);
                    }
                    left
                }
                None => Duration::from_secs(3600),
            };
            if registered {
                mine.fetch_add(1, Relaxed);
            }
            waiters.fetch_add(1, SeqCst);
            let interrupted = bell.load(SeqCst) == seen && futex::wait(bell, seen, Some(left));
            let _ = waiters.fetch_update(SeqCst, SeqCst, |n| Some(n.saturating_sub(1)));
            if registered {
                let _ = mine.fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
            }
            if interrupted {
                return Ok(if ready(slot)? {
                    Woken::Ready
                } else {
                    Woken::Interrupted
                });
            }
        }
    }

    /// Wake every thread of every process sleeping on this segment's bell without
    /// ringing it: each looks again at what it waits for (a reader told to stop).
    pub fn nudge(&self) -> Result<()> {
        let _in = self.enter()?;
        if self.map.u32(H_BELL_WAITERS).load(SeqCst) != 0 {
            futex::wake(self.map.u32(H_BELL), i32::MAX);
        }
        Ok(())
    }

    // --- the key-value table ---------------------------------------------------------

    fn kv<T>(
        &self,
        key: Option<&str>,
        f: impl FnOnce(&Table<'_>) -> std::result::Result<T, KvError>,
    ) -> Result<T> {
        let _in = self.enter()?;
        let (_held, taken) = self.take(Lock::at(&self.map, H_KV_LOCK), &|| {
            "the key-value table's lock".into()
        })?;
        let table = Table::new(&self.map, &self.lay);
        if let Taken::Recovered(_) = taken {
            table.repair();
        }
        f(&table).map_err(|e| match e {
            KvError::Full => Error::Store(format!(
                "shared memory '{}': the key-value table is full ({} slots)",
                self.name, self.lay.kv_slots
            )),
            KvError::Corrupted(slot) => Error::Store(match key {
                Some(key) => format!(
                    "shared memory '{}': key-value slot {slot} is corrupted (looking up key {key:?})",
                    self.name
                ),
                None => format!("shared memory '{}': key-value slot {slot} is corrupted", self.name),
            }),
        })
    }

    fn check_value(&self, value: &[u8]) -> Result<()> {
        if value.len() > self.lay.kv_value_bytes {
            return Err(Error::Store(format!(
                "shared memory '{}': a value of {} bytes is larger than kv_value_bytes ({})",
                self.name,
                value.len(),
                self.lay.kv_value_bytes
            )));
        }
        Ok(())
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.kv(Some(key), |t| t.get(key.as_bytes()))
    }

    /// Set `key`.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        check_key(key)?;
        self.check_value(value)?;
        self.kv(Some(key), |t| t.put(key.as_bytes(), value))
    }

    /// Set `key` to `value` (None: delete it) only if it holds `expected` (None:
    /// absent); whether it did.
    pub fn cas(&self, key: &str, expected: Option<&[u8]>, value: Option<&[u8]>) -> Result<bool> {
        check_key(key)?;
        if let Some(v) = value {
            self.check_value(v)?;
        }
        self.kv(Some(key), |t| t.cas(key.as_bytes(), expected, value))
    }

    /// Remove `key`; whether it was there.
    pub fn delete(&self, key: &str) -> Result<bool> {
        check_key(key)?;
        self.kv(Some(key), |t| t.delete(key.as_bytes()))
    }

    /// The keys starting with `prefix`, in no particular order.
    pub fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        self.kv(None, |t| t.keys(prefix.as_bytes()))
    }

    // --- the rest --------------------------------------------------------------------

    /// The segment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The segment's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Figures: logs, records held, table use, processes, the bell...
    pub fn stats(&self) -> Result<Stats> {
        let _in = self.enter()?;
        let logs = self.log_count()?;
        let (mut records, mut appended) = (0, 0);
        for i in 0..logs {
            let ring = Ring::new(&self.map, &self.lay, i);
            records += ring.held();
            appended += ring.head();
        }
        let mut pids: Vec<u32> = self
            .procs()
            .map(|(p, _, s)| (p.load(Relaxed), s.load(Relaxed)))
            .filter(|&(p, s)| process::alive(p, s))
            .map(|(p, _)| p)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        Ok(Stats {
            logs: logs as u64,
            records,
            appended,
            kv_used: u64::from(Table::new(&self.map, &self.lay).used_count()),
            kv_slots: self.lay.kv_slots as u64,
            processes: pids.len() as u64,
            bell: u64::from(self.map.u32(H_BELL).load(SeqCst)),
            waiters: u64::from(self.map.u32(H_BELL_WAITERS).load(SeqCst)),
            recoveries: u64::from(self.map.u32(H_RECOVERIES).load(Relaxed)),
            ring_bytes: self.lay.ring_bytes as u64,
            ring_records: self.lay.ring_records as u64,
            max_logs: self.lay.max_logs as u64,
            kv_value_bytes: self.lay.kv_value_bytes as u64,
            size: self.lay.total as u64,
        })
    }

    /// Take the lock of `log` (None: the key-value table's) and never release it. For
    /// tests of dead-owner recovery (a child takes it, then is killed).
    #[doc(hidden)]
    pub fn debug_hold_lock(&self, log: Option<&str>) -> Result<()> {
        let _in = self.enter()?;
        let off = match log {
            Some(log) => {
                check_log(log)?;
                self.lay.ring(self.log_index(log)?) + R_LOCK
            }
            None => H_KV_LOCK,
        };
        let (held, _) = self.take(Lock::at(&self.map, off), &|| "the lock".into())?;
        std::mem::forget(held);
        Ok(())
    }

    /// The owner of the lock of `log` (None: the table's); 0: free.
    #[doc(hidden)]
    pub fn debug_lock_owner(&self, log: Option<&str>) -> Result<u32> {
        let _in = self.enter()?;
        let off = match log {
            Some(log) => match self.find_log(log)? {
                Some(i) => self.lay.ring(i) + R_LOCK,
                None => return Ok(0),
            },
            None => H_KV_LOCK,
        };
        Ok(Lock::at(&self.map, off).owner())
    }

    /// Where things are in the file.
    #[doc(hidden)]
    pub fn debug_regions(&self) -> DebugRegions {
        let l = &self.lay;
        DebugRegions {
            dir: l.dir,
            rings: l.rings,
            ring_stride: l.ring_stride,
            ring_index: R_INDEX,
            ring_data: l.ring_data,
            kv_tags: l.kv_tags,
            kv_keys: l.kv_keys,
            key_stride: KEY_STRIDE,
            kv_values: l.kv_values,
            value_stride: l.value_stride,
            total: l.total,
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Looks at what a spin waits for (one pause apart) between two reads of the clock.
const LOOKS_PER_CLOCK: u32 = 32;

/// Spins in a row that ended without the bell before waits stop spinning for a while.
const MISS_LIMIT: u32 = 8;
/// Waits that then sleep at once, before a spin is tried again.
const SKIP_WAITS: u32 = 64;

/// Whether spinning pays in this process, learnt from the last waits (one per process:
/// whether the ringer can run beside the waiter is a matter of CPUs, not of segments).
struct SpinGuess {
    misses: AtomicU32,
    skips: AtomicU32,
}

static SPIN_GUESS: SpinGuess = SpinGuess {
    misses: AtomicU32::new(0),
    skips: AtomicU32::new(0),
};

impl SpinGuess {
    /// The spin for the next wait: `spin`, or none while skipping.
    fn budget(&self, spin: Duration) -> Duration {
        if spin.is_zero() {
            return spin;
        }
        let skipping = self
            .skips
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if skipping {
            Duration::ZERO
        } else {
            spin
        }
    }

    fn rang(&self) {
        self.misses.store(0, Relaxed);
    }

    fn missed(&self) {
        if self.misses.fetch_add(1, Relaxed) + 1 >= MISS_LIMIT {
            self.misses.store(0, Relaxed);
            self.skips.store(SKIP_WAITS, Relaxed);
        }
    }
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    #[test]
    fn spins_stop_after_misses_and_come_back() {
        let guess = SpinGuess {
            misses: AtomicU32::new(0),
            skips: AtomicU32::new(0),
        };
        let d = Duration::from_micros(50);
        for _ in 0..MISS_LIMIT - 1 {
            assert_eq!(guess.budget(d), d);
            guess.missed();
        }
        guess.rang(); // one bell in time: the count starts again
        for _ in 0..MISS_LIMIT {
            assert_eq!(guess.budget(d), d);
            guess.missed();
        }
        for _ in 0..SKIP_WAITS {
            assert_eq!(guess.budget(d), Duration::ZERO);
        }
        assert_eq!(guess.budget(d), d); // then a spin is tried again
        assert_eq!(guess.budget(Duration::ZERO), Duration::ZERO);
    }
}
