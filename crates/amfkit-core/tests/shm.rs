//! The shared-memory segment (`amfkit_core::shm`): records, wrap-around and lost counts,
//! concurrent writers (threads and processes), the key-value table, dead lock owners,
//! garbage in the memory, apps, cleanup and stale segments, and the bell.
//!
//! Processes: a forked child (for children that only touch an inherited segment: no
//! allocation after fork), or this test binary run again with `AMFKIT_SHM_CHILD` set
//! (it runs `child_main` only) for children that open a segment by name.
#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use amfkit_core::shm::{Error, Options, Segment};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory and a unique name.
struct Place {
    dir: PathBuf,
    name: String,
}

impl Place {
    fn new(tag: &str) -> Place {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("amfkit-shm-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Place {
            dir,
            name: format!("{tag}{}-{n}", std::process::id()),
        }
    }

    fn opts(&self) -> Options {
        Options {
            directory: self.dir.clone(),
            ring_bytes: 1 << 16,
            ring_records: 256,
            max_logs: 8,
            kv_slots: 64,
            kv_value_bytes: 256,
            ..Options::default()
        }
    }

    fn open(&self) -> Segment {
        Segment::open(&self.name, &self.opts()).unwrap()
    }

    fn path(&self) -> PathBuf {
        self.dir.join(format!("amfkit.{}", self.name))
    }

    /// Overwrite bytes of the segment's file (the mapping sees them).
    fn scribble(&self, at: usize, bytes: &[u8]) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(self.path())
            .unwrap();
        f.write_all_at(bytes, at as u64).unwrap();
    }

    fn peek(&self, at: usize, n: usize) -> Vec<u8> {
        let f = std::fs::File::open(self.path()).unwrap();
        let mut buf = vec![0; n];
        f.read_exact_at(&mut buf, at as u64).unwrap();
        buf
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_all(seg: &Segment, log: &str, cursor: u64) -> (Vec<(u64, Vec<u8>)>, u64, u64) {
    let mut out = Vec::new();
    let (c, lost) = seg.read(log, cursor, usize::MAX, &mut out).unwrap();
    (out, c, lost)
}

fn is_store(e: &Error, fragment: &str) -> bool {
    matches!(e, Error::Store(m) if m.contains(fragment))
}

// --- child processes ----------------------------------------------------------------

/// The child side of the spawned tests; does nothing in a normal run.
#[test]
fn child_main() {
    let Ok(role) = std::env::var("AMFKIT_SHM_CHILD") else {
        return;
    };
    let dir = PathBuf::from(std::env::var("AMFKIT_SHM_DIR").unwrap());
    let name = std::env::var("AMFKIT_SHM_NAME").unwrap();
    let opts = Options {
        directory: dir,
        ..Options::default()
    };
    let seg = Segment::open(&name, &opts).unwrap();
    match role.as_str() {
        // Register, leave a record, die without closing (as a killed process would).
        "leave" => {
            seg.append("left", b"behind").unwrap();
            std::process::exit(0);
        }
        // Append to "ping" after 200 ms, then close.
        "ping-later" => {
            thread::sleep(Duration::from_millis(200));
            seg.append("ping", b"hi").unwrap();
        }
        // Append 2000 records to "m" as writer W.
        "writer" => {
            let w: u32 = std::env::var("AMFKIT_SHM_WRITER").unwrap().parse().unwrap();
            for i in 0..2000u32 {
                let mut rec = [0u8; 8];
                rec[..4].copy_from_slice(&w.to_le_bytes());
                rec[4..].copy_from_slice(&i.to_le_bytes());
                seg.append("m", &rec).unwrap();
            }
        }
        other => panic!("unknown child role {other}"),
    }
    seg.close().unwrap();
    std::process::exit(0);
}

fn spawn(place: &Place, role: &str, extra: &[(&str, String)]) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_main", "--test-threads=1", "--nocapture"])
        .env("AMFKIT_SHM_CHILD", role)
        .env("AMFKIT_SHM_DIR", &place.dir)
        .env("AMFKIT_SHM_NAME", &place.name)
        .stdout(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Fork; the child runs `f` (no allocation in it, please) then exits.
fn fork(f: impl FnOnce()) -> libc::pid_t {
    // SAFETY: the child only runs `f`, which touches an inherited mapping and makes
    // system calls (no allocation, no locks another thread may hold), then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        f();
        // SAFETY: leaves the child at once, running nothing of the parent's.
        unsafe { libc::_exit(0) }
    }
    pid
}

fn reap(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid);
    status
}

fn kill9(pid: libc::pid_t) {
    // SAFETY: signals our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

// --- records ------------------------------------------------------------------------

#[test]
fn round_trip_of_records() {
    let p = Place::new("rt");
    let seg = p.open();
    let big = vec![7u8; (1 << 16) / 4];
    assert_eq!(seg.head("a").unwrap(), 0);
    assert_eq!(seg.append("a", b"").unwrap(), 1);
    assert_eq!(seg.append("a", b"x").unwrap(), 2);
    assert_eq!(seg.append("a", &big).unwrap(), 3);
    let too_big = vec![0u8; (1 << 16) / 4 + 1];
    assert!(is_store(
        &seg.append("a", &too_big).unwrap_err(),
        "larger than a log may hold"
    ));
    assert!(seg.try_append("a", &too_big).is_err());
    assert_eq!(seg.head("a").unwrap(), 3);
    let (recs, c, lost) = read_all(&seg, "a", 0);
    assert_eq!(
        recs,
        vec![(1, vec![]), (2, b"x".to_vec()), (3, big.clone())]
    );
    assert_eq!((c, lost), (3, 0));
    // limit, a cursor from the future, an absent log
    let mut out = Vec::new();
    assert_eq!(seg.read("a", 1, 1, &mut out).unwrap(), (2, 0));
    assert_eq!(out, vec![(2, b"x".to_vec())]);
    assert_eq!(read_all(&seg, "a", 99), (vec![], 3, 0));
    assert_eq!(read_all(&seg, "nope", 5), (vec![], 0, 0));
    assert_eq!(seg.try_append("a", b"y").unwrap(), Some(4));
    assert_eq!(
        seg.try_append("new", b"y").unwrap(),
        None,
        "a new log needs the blocking path"
    );
    assert_eq!(seg.logs().unwrap(), vec!["a".to_string()]);
    // names
    assert!(matches!(seg.append("", b"x"), Err(Error::Invalid(_))));
    assert!(matches!(
        seg.append(&"l".repeat(129), b"x"),
        Err(Error::Invalid(_))
    ));
    seg.append(&"l".repeat(128), b"x").unwrap();
    seg.append("ünïcødé", b"x").unwrap();
    let mut logs = seg.logs().unwrap();
    logs.sort();
    assert_eq!(
        logs,
        vec!["a".to_string(), "l".repeat(128), "ünïcødé".to_string()]
    );
}

#[test]
fn too_many_logs() {
    let p = Place::new("many");
    let seg = p.open();
    for i in 0..8 {
        seg.append(&format!("log{i}"), b"x").unwrap();
    }
    assert!(is_store(
        &seg.append("log8", b"x").unwrap_err(),
        "too many logs"
    ));
    assert_eq!(seg.stats().unwrap().logs, 8);
}

#[test]
fn wrap_around_by_count() {
    let p = Place::new("wc");
    let seg = Segment::open(
        &p.name,
        &Options {
            ring_records: 8,
            ..p.opts()
        },
    )
    .unwrap();
    for i in 1..=1000u64 {
        assert_eq!(seg.append("a", &i.to_le_bytes()).unwrap(), i);
    }
    let (recs, c, lost) = read_all(&seg, "a", 0);
    assert_eq!(lost, 992);
    assert_eq!(c, 1000);
    assert_eq!(
        recs.iter().map(|r| r.0).collect::<Vec<_>>(),
        (993..=1000).collect::<Vec<_>>()
    );
    for (seq, rec) in &recs {
        assert_eq!(rec, &seq.to_le_bytes());
    }
    // a reader 10 behind loses 2; one 8 behind loses none
    assert_eq!(read_all(&seg, "a", 990).2, 2);
    assert_eq!(read_all(&seg, "a", 992).2, 0);
    assert_eq!(read_all(&seg, "a", 992).0.len(), 8);
    // limited reads skip the lost ones first
    let mut out = Vec::new();
    assert_eq!(seg.read("a", 100, 3, &mut out).unwrap(), (995, 892));
    assert_eq!(out.len(), 3);
    assert_eq!(seg.stats().unwrap().records, 8);
}

#[test]
fn wrap_around_by_bytes() {
    let p = Place::new("wb");
    let seg = Segment::open(
        &p.name,
        &Options {
            ring_bytes: 4096,
            ring_records: 1024,
            ..p.opts()
        },
    )
    .unwrap();
    // 1000 bytes + a 16-byte header: four fit in 4096 bytes, the fifth goes to the start.
    for i in 1..=500u64 {
        let rec = vec![i as u8; 1000];
        assert_eq!(seg.append("a", &rec).unwrap(), i);
        let (recs, c, lost) = read_all(&seg, "a", 0);
        let held = i.min(4);
        assert_eq!(
            (c, lost, recs.len() as u64),
            (i, i - held, held),
            "after {i}"
        );
        for (seq, r) in recs {
            assert_eq!(r, vec![seq as u8; 1000]);
        }
    }
    // a reader that fell behind by bytes
    assert_eq!(read_all(&seg, "a", 400).2, 96);
}

#[test]
fn wrap_around_random_sizes_against_a_model() {
    let p = Place::new("wr");
    let seg = Segment::open(
        &p.name,
        &Options {
            ring_bytes: 8192,
            ring_records: 32,
            ..p.opts()
        },
    )
    .unwrap();
    let mut rng = 0x1234_5678_u64;
    let mut all: Vec<Vec<u8>> = vec![];
    for _ in 0..5000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let len = (rng % 2049) as usize;
        let rec: Vec<u8> = (0..len).map(|i| (i as u64 ^ rng) as u8).collect();
        let seq = seg.append("r", &rec).unwrap();
        all.push(rec);
        assert_eq!(seq, all.len() as u64);
        let (recs, c, lost) = read_all(&seg, "r", 0);
        assert_eq!(c, seq);
        assert_eq!(lost + recs.len() as u64, seq);
        assert!(!recs.is_empty() && recs.len() <= 32);
        let bytes: usize = recs.iter().map(|r| (16 + r.1.len()).div_ceil(8) * 8).sum();
        assert!(bytes <= 8192);
        for (i, (s, r)) in recs.iter().enumerate() {
            assert_eq!(*s, lost + 1 + i as u64);
            assert_eq!(r, &all[*s as usize - 1]);
        }
    }
}

// --- concurrency --------------------------------------------------------------------

fn writer_record(w: u32, i: u32) -> [u8; 8] {
    let mut rec = [0u8; 8];
    rec[..4].copy_from_slice(&w.to_le_bytes());
    rec[4..].copy_from_slice(&i.to_le_bytes());
    rec
}

/// Every record exactly once, each writer's in order.
fn check_writers(recs: &[(u64, Vec<u8>)], writers: u32, each: u32) {
    let mut next: HashMap<u32, u32> = HashMap::new();
    for (k, (seq, rec)) in recs.iter().enumerate() {
        assert_eq!(*seq, k as u64 + 1);
        assert_eq!(rec.len(), 8);
        let w = u32::from_le_bytes(rec[..4].try_into().unwrap());
        let i = u32::from_le_bytes(rec[4..].try_into().unwrap());
        let n = next.entry(w).or_insert(0);
        assert_eq!(i, *n, "writer {w}");
        *n += 1;
    }
    assert_eq!(next.len() as u32, writers);
    assert!(next.values().all(|&n| n == each));
}

#[test]
fn writer_threads_and_a_concurrent_reader() {
    let p = Place::new("wt");
    let seg = Arc::new(
        Segment::open(
            &p.name,
            &Options {
                ring_bytes: 1 << 22,
                ring_records: 1 << 16,
                ..p.opts()
            },
        )
        .unwrap(),
    );
    seg.append("m", &writer_record(99, 0)).unwrap();
    let (writers, each) = (4u32, 5000u32);
    let reader = {
        let seg = seg.clone();
        thread::spawn(move || {
            // reads as they come: never a torn record, every record once, in order
            let mut cursor = 1;
            let mut got: Vec<(u64, Vec<u8>)> = vec![];
            let mut seen = vec![0u32; writers as usize];
            while got.len() < (writers * each) as usize {
                let mut out = Vec::new();
                let (c, lost) = seg.read("m", cursor, 64, &mut out).unwrap();
                assert_eq!(lost, 0);
                for (_, rec) in &out {
                    let w = u32::from_le_bytes(rec[..4].try_into().unwrap()) as usize;
                    let i = u32::from_le_bytes(rec[4..].try_into().unwrap());
                    assert_eq!(i, seen[w]);
                    seen[w] += 1;
                }
                got.extend(out);
                cursor = c;
            }
            got
        })
    };
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let seg = seg.clone();
            thread::spawn(move || {
                for i in 0..each {
                    seg.append("m", &writer_record(w, i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let got = reader.join().unwrap();
    assert_eq!(got.len(), (writers * each) as usize);
    let (mut recs, _, lost) = read_all(&seg, "m", 0);
    assert_eq!(lost, 0);
    recs.remove(0);
    for (k, r) in recs.iter_mut().enumerate() {
        r.0 = k as u64 + 1;
    }
    check_writers(&recs, writers, each);
}

#[test]
fn a_reader_behind_fast_writers_never_sees_a_torn_record() {
    let p = Place::new("torn");
    // A tiny ring: the writers lap the reader all the time.
    let seg = Arc::new(
        Segment::open(
            &p.name,
            &Options {
                ring_bytes: 4096,
                ring_records: 16,
                ..p.opts()
            },
        )
        .unwrap(),
    );
    seg.append("t", b"start").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (seg, stop) = (seg.clone(), stop.clone());
            thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let len = 8 + (i as usize * 37 + w * 101) % 900;
                    let fill = (i as u8) ^ (w as u8);
                    let mut rec = vec![fill; len];
                    rec[..8].copy_from_slice(&i.to_le_bytes());
                    seg.append("t", &rec).unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    let (mut cursor, mut read, mut lost_total) = (0, 0u64, 0u64);
    let until = Instant::now() + Duration::from_millis(700);
    while Instant::now() < until {
        let mut out = Vec::new();
        let (c, lost) = seg.read("t", cursor, 8, &mut out).unwrap();
        assert!(c >= cursor);
        // in order (records lost while being copied leave gaps, counted in `lost`)
        let mut last = cursor;
        for (seq, rec) in &out {
            assert!(*seq > last);
            last = *seq;
            if *seq > 1 {
                let i = u64::from_le_bytes(rec[..8].try_into().unwrap());
                let fill = rec[8..].first().copied();
                assert!(rec[8..].iter().all(|&b| Some(b) == fill), "torn record");
                assert!(i < 1 << 40);
            }
        }
        assert_eq!(c, cursor + lost + out.len() as u64);
        read += out.len() as u64;
        lost_total += lost;
        cursor = c;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(read > 0 && lost_total > 0, "read {read}, lost {lost_total}");
}

#[test]
fn writer_processes_forked() {
    let p = Place::new("wpf");
    let seg = Segment::open(
        &p.name,
        &Options {
            ring_bytes: 1 << 20,
            ring_records: 1 << 14,
            ..p.opts()
        },
    )
    .unwrap();
    seg.append("m", &writer_record(0, 0)).unwrap();
    let kids: Vec<_> = (1..=3u32)
        .map(|w| {
            let seg = &seg;
            fork(move || {
                for i in 0..2000 {
                    if seg.append("m", &writer_record(w, i)).is_err() {
                        // SAFETY: leaves the child with a failure status.
                        unsafe { libc::_exit(3) }
                    }
                }
            })
        })
        .collect();
    for i in 1..2000 {
        seg.append("m", &writer_record(0, i)).unwrap();
    }
    for k in kids {
        assert_eq!(reap(k), 0);
    }
    let (recs, c, lost) = read_all(&seg, "m", 0);
    assert_eq!((c, lost), (8000, 0));
    check_writers(&recs, 4, 2000);
}

#[test]
fn writer_processes_spawned() {
    let p = Place::new("wps");
    let seg = Segment::open(
        &p.name,
        &Options {
            directory: p.dir.clone(),
            ..Options::default()
        },
    )
    .unwrap();
    let kids: Vec<_> = (0..3)
        .map(|w| spawn(&p, "writer", &[("AMFKIT_SHM_WRITER", w.to_string())]))
        .collect();
    for mut k in kids {
        assert!(k.wait().unwrap().success());
    }
    let (recs, c, lost) = read_all(&seg, "m", 0);
    assert_eq!((c, lost), (6000, 0));
    check_writers(&recs, 3, 2000);
    assert_eq!(seg.stats().unwrap().processes, 1);
}

// --- the key-value table ------------------------------------------------------------

#[test]
fn key_value_table() {
    let p = Place::new("kv");
    let seg = p.open();
    assert_eq!(seg.get("a").unwrap(), None);
    seg.put("a", b"1").unwrap();
    seg.put("ab", b"").unwrap();
    seg.put("b", &[9u8; 256]).unwrap();
    assert_eq!(seg.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(seg.get("ab").unwrap().as_deref(), Some(&b""[..]));
    seg.put("a", b"2").unwrap();
    assert_eq!(seg.get("a").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(!seg.cas("a", Some(b"1"), Some(b"3")).unwrap());
    assert!(seg.cas("a", Some(b"2"), Some(b"3")).unwrap());
    assert!(!seg.cas("a", None, Some(b"4")).unwrap());
    assert!(seg.cas("new", None, Some(b"n")).unwrap());
    assert!(seg.cas("new", Some(b"n"), None).unwrap());
    assert_eq!(seg.get("new").unwrap(), None);
    assert!(seg.cas("never", None, None).unwrap());
    let mut keys = seg.keys("a").unwrap();
    keys.sort();
    assert_eq!(keys, vec!["a", "ab"]);
    assert_eq!(seg.keys("").unwrap().len(), 3);
    assert!(seg.delete("a").unwrap());
    assert!(!seg.delete("a").unwrap());
    assert_eq!(seg.get("a").unwrap(), None);
    // limits
    assert!(is_store(
        &seg.put("c", &[0u8; 257]).unwrap_err(),
        "larger than kv_value_bytes"
    ));
    assert!(is_store(
        &seg.cas("c", None, Some(&[0u8; 257])).unwrap_err(),
        "larger than kv_value_bytes"
    ));
    assert!(matches!(
        seg.put(&"k".repeat(201), b""),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(seg.get(""), Err(Error::Invalid(_))));
    seg.put(&"k".repeat(200), b"long").unwrap();
    assert_eq!(
        seg.get(&"k".repeat(200)).unwrap().as_deref(),
        Some(&b"long"[..])
    );
}

#[test]
fn key_value_table_full_and_churn() {
    let p = Place::new("kvf");
    let seg = p.open();
    for i in 0..64 {
        seg.put(&format!("key{i}"), &[i as u8]).unwrap();
    }
    let e = seg.put("one-more", b"x").unwrap_err();
    assert!(
        is_store(&e, "the key-value table is full (64 slots)"),
        "{e}"
    );
    assert!(seg.cas("one-more", None, Some(b"x")).is_err());
    assert_eq!(seg.get("one-more").unwrap(), None);
    assert_eq!(seg.stats().unwrap().kv_used, 64);
    for i in 0..64 {
        assert_eq!(seg.get(&format!("key{i}")).unwrap(), Some(vec![i as u8]));
        assert!(seg.delete(&format!("key{i}")).unwrap());
    }
    assert_eq!(seg.stats().unwrap().kv_used, 0);
    // churn: tombstones are reused or cleared
    for round in 0..50 {
        for i in 0..40 {
            seg.put(&format!("r{round}-{i}"), b"v").unwrap();
        }
        for i in 0..40 {
            assert!(seg.delete(&format!("r{round}-{i}")).unwrap());
        }
    }
    assert!(seg.keys("").unwrap().is_empty());
}

// --- dead and stuck lock owners -----------------------------------------------------

fn wait_for_owner(seg: &Segment, log: Option<&str>, pid: libc::pid_t) {
    let until = Instant::now() + Duration::from_secs(10);
    while seg.debug_lock_owner(log).unwrap() != pid as u32 {
        assert!(Instant::now() < until, "the child never took the lock");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_process_killed_holding_a_log_lock() {
    let p = Place::new("kill");
    let seg = p.open();
    seg.append("l", b"before").unwrap();
    let child = fork(|| {
        let _ = seg.debug_hold_lock(Some("l"));
        loop {
            // SAFETY: sleeps until the parent's SIGKILL.
            unsafe { libc::pause() };
        }
    });
    wait_for_owner(&seg, Some("l"), child);
    // A live owner that never lets go: reported after ~2 s, not waited on forever.
    let t = Instant::now();
    let e = seg.append("l", b"stuck").unwrap_err();
    assert!(is_store(&e, "held by pid"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(seg.try_append("l", b"x").unwrap(), None);
    kill9(child);
    // Killed but not reaped yet (a zombie): taken over all the same, promptly.
    let t = Instant::now();
    assert_eq!(seg.append("l", b"after").unwrap(), 2);
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    reap(child);
    assert_eq!(seg.stats().unwrap().recoveries, 1);
    let (recs, _, _) = read_all(&seg, "l", 0);
    assert_eq!(recs, vec![(1, b"before".to_vec()), (2, b"after".to_vec())]);
}

#[test]
fn a_process_killed_holding_the_table_lock() {
    let p = Place::new("killkv");
    let seg = p.open();
    seg.put("k", b"v").unwrap();
    let child = fork(|| {
        let _ = seg.debug_hold_lock(None);
        loop {
            // SAFETY: sleeps until the parent's SIGKILL.
            unsafe { libc::pause() };
        }
    });
    wait_for_owner(&seg, None, child);
    kill9(child);
    reap(child);
    let t = Instant::now();
    assert_eq!(seg.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(t.elapsed() < Duration::from_millis(500));
    assert_eq!(seg.stats().unwrap().recoveries, 1);
}

#[test]
fn a_garbage_lock_owner_is_taken_over() {
    let p = Place::new("glock");
    let seg = p.open();
    seg.append("l", b"x").unwrap();
    let r = seg.debug_regions();
    p.scribble(r.rings, &u32::MAX.to_ne_bytes()); // the lock of log 0
    let t = Instant::now();
    assert_eq!(seg.append("l", b"y").unwrap(), 2);
    assert!(t.elapsed() < Duration::from_millis(500));
}

#[test]
fn the_table_is_repaired_after_a_dead_owner() {
    let p = Place::new("repair");
    let seg = p.open();
    seg.put("good", b"fine").unwrap();
    seg.put("bad", b"soon garbage").unwrap();
    // A writer that died half-way through a value: garbage under the lock it held.
    let r = seg.debug_regions();
    let at = (0..64)
        .map(|i| r.kv_values + i * r.value_stride)
        .find(|&o| p.peek(o, 12) == b"soon garbage")
        .unwrap();
    p.scribble(at, b"SOON");
    assert!(is_store(&seg.get("bad").unwrap_err(), "corrupted"));
    let child = fork(|| {
        let _ = seg.debug_hold_lock(None);
        loop {
            // SAFETY: sleeps until the parent's SIGKILL.
            unsafe { libc::pause() };
        }
    });
    wait_for_owner(&seg, None, child);
    kill9(child);
    reap(child);
    // The recovery clears the slot that fails its checksum.
    assert_eq!(seg.get("bad").unwrap(), None);
    assert_eq!(seg.get("good").unwrap().as_deref(), Some(&b"fine"[..]));
    assert_eq!(seg.keys("").unwrap(), vec!["good"]);
}

// --- garbage ------------------------------------------------------------------------

#[test]
fn garbage_over_the_header() {
    let p = Place::new("gh");
    let seg = p.open();
    p.scribble(0, b"NOTASEGM");
    let e = Segment::open(&p.name, &p.opts()).unwrap_err();
    assert!(
        is_store(&e, "is not an amfkit shared-memory segment") && e.message().contains(&p.name),
        "{e}"
    );
    p.scribble(0, b"AMFKSHM1\x09\0\0\0");
    let e = Segment::open(&p.name, &p.opts()).unwrap_err();
    assert!(is_store(&e, "layout version 9"), "{e}");
    p.scribble(0, b"AMFKSHM1\x01\0\0\0");
    p.scribble(16, &3u64.to_ne_bytes()); // ring_bytes
    let e = Segment::open(&p.name, &p.opts()).unwrap_err();
    assert!(is_store(&e, "corrupted"), "{e}");
    // the open handle works on (it kept its own copy of the layout)
    seg.append("a", b"x").unwrap();
    assert!(!Segment::remove_stale(&p.name, &p.dir).unwrap());
}

#[test]
fn garbage_over_a_record_and_the_index() {
    let p = Place::new("gr");
    let seg = p.open();
    for i in 0..10u8 {
        seg.append("a", &[b'R', b'E', b'C', i, 0, 0, 0, 0]).unwrap();
    }
    let r = seg.debug_regions();
    let data = r.rings + r.ring_data;
    // record 5 (seq 5 is the fifth: 16 + 8 bytes each)
    p.scribble(data + 4 * 24 + 16, b"XX");
    let mut out = Vec::new();
    let e = seg.read("a", 0, 100, &mut out).unwrap_err();
    assert!(is_store(&e, "log 'a' record 5 is corrupted"), "{e}");
    assert_eq!(read_all(&seg, "a", 5).0.len(), 5);
    // an index entry pointing outside the ring
    p.scribble(r.rings + r.ring_index + 7 * 8, &u64::MAX.to_ne_bytes());
    let e = seg.read("a", 6, 100, &mut Vec::new()).unwrap_err();
    assert!(is_store(&e, "record 7 is corrupted"), "{e}");
    // a garbage header word (the record's seq)
    p.scribble(data + 8 * 24, &77u64.to_ne_bytes());
    assert!(seg.read("a", 8, 1, &mut Vec::new()).is_err());
    // writers go on (and readers of what they write)
    let s = seg.append("a", b"new").unwrap();
    assert_eq!(read_all(&seg, "a", s - 1).0, vec![(s, b"new".to_vec())]);
}

#[test]
fn garbage_over_a_table_slot() {
    let p = Place::new("gkv");
    let seg = p.open();
    seg.put("k", b"value").unwrap();
    let r = seg.debug_regions();
    let slot = (0..64)
        .find(|&i| p.peek(r.kv_values + i * r.value_stride, 5) == b"value")
        .unwrap();
    p.scribble(r.kv_values + slot * r.value_stride, b"VALUE");
    assert!(is_store(&seg.get("k").unwrap_err(), "corrupted"));
    p.scribble(r.kv_keys + slot * r.key_stride, &1000u32.to_ne_bytes()); // key length
    assert!(seg.get("k").is_err());
    assert!(seg.keys("").is_err());
    p.scribble(r.kv_tags + slot * 8, &7u32.to_ne_bytes()); // state
    assert!(seg.get("k").is_err());
    assert!(seg.put("k", b"v").is_err());
}

#[test]
fn random_garbage_everywhere_is_an_error_never_a_crash() {
    let p = Place::new("gz");
    let opts = Options {
        ring_bytes: 4096,
        ring_records: 16,
        max_logs: 2,
        kv_slots: 8,
        kv_value_bytes: 64,
        ..p.opts()
    };
    let seg = Segment::open(&p.name, &opts).unwrap();
    let r = seg.debug_regions();
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for round in 0..300 {
        seg.append("a", b"some record").ok();
        seg.append("b", &[1u8; 100]).ok();
        seg.put("k", b"v").ok();
        // garbage over a random stretch after the header's locks
        let at = 4096 + (next() as usize % (r.total - 4096 - 64));
        let len = 1 + next() as usize % 64;
        let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        p.scribble(at, &junk);
        // lock words of garbage are dead owners (never a live pid by chance)
        for l in [r.rings, r.rings + r.ring_stride] {
            let owner = u32::from_ne_bytes(p.peek(l, 4).try_into().unwrap());
            if owner != 0 && owner <= 1 << 22 {
                p.scribble(l, &u32::MAX.to_ne_bytes());
            }
        }
        for log in ["a", "b", "c"] {
            let _ = seg.read(log, 0, 100, &mut Vec::new());
            let _ = seg.read(log, round, 3, &mut Vec::new());
            let _ = seg.head(log);
        }
        let _ = seg.logs();
        let _ = seg.get("k");
        let _ = seg.keys("");
        let _ = seg.delete("k");
        let _ = seg.stats();
    }
}

// --- apps, cleanup, stale segments ---------------------------------------------------

#[test]
fn two_apps_cannot_share_a_name() {
    let p = Place::new("app");
    let a = Segment::open(
        &p.name,
        &Options {
            app: "alpha".into(),
            ..p.opts()
        },
    )
    .unwrap();
    let e = Segment::open(
        &p.name,
        &Options {
            app: "beta".into(),
            ..p.opts()
        },
    )
    .unwrap_err();
    assert!(
        is_store(&e, "in use by another application (app 'alpha', pids"),
        "{e}"
    );
    assert!(e.message().contains(&std::process::id().to_string()));
    // no tag joins anyone; the same tag joins
    let b = Segment::open(&p.name, &p.opts()).unwrap();
    let c = Segment::open(
        &p.name,
        &Options {
            app: "alpha".into(),
            ..p.opts()
        },
    )
    .unwrap();
    drop((a, b, c));
    // an untagged segment adopts the first tag
    let d = Segment::open(&p.name, &p.opts()).unwrap();
    let e1 = Segment::open(
        &p.name,
        &Options {
            app: "gamma".into(),
            ..p.opts()
        },
    )
    .unwrap();
    assert!(Segment::open(
        &p.name,
        &Options {
            app: "delta".into(),
            ..p.opts()
        }
    )
    .is_err());
    drop((d, e1));
}

#[test]
fn the_last_one_out_removes_the_file() {
    let p = Place::new("last");
    let a = p.open();
    let meta = std::fs::metadata(p.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let b = p.open();
    b.append("x", b"shared").unwrap();
    assert_eq!(read_all(&a, "x", 0).0, vec![(1, b"shared".to_vec())]);
    assert_eq!(a.stats().unwrap().processes, 1);
    a.close().unwrap();
    a.close().unwrap();
    assert!(is_store(&a.append("x", b"y").unwrap_err(), "closed"));
    assert!(is_store(&a.bell().unwrap_err(), "closed"));
    assert!(p.path().exists());
    drop(b);
    assert!(!p.path().exists());
    // and a new open starts afresh
    let c = p.open();
    assert_eq!(c.head("x").unwrap(), 0);
}

#[test]
fn joiners_adopt_the_creators_layout() {
    let p = Place::new("adopt");
    let a = Segment::open(
        &p.name,
        &Options {
            ring_records: 64,
            ..p.opts()
        },
    )
    .unwrap();
    let b = Segment::open(
        &p.name,
        &Options {
            ring_records: 128,
            kv_slots: 16,
            ..p.opts()
        },
    )
    .unwrap();
    let s = b.stats().unwrap();
    assert_eq!((s.ring_records, s.kv_slots), (64, 64));
    drop((a, b));
}

#[test]
fn a_stale_segment_is_reinitialised_or_removed() {
    let p = Place::new("stale");
    let mut kid = spawn(&p, "leave", &[]);
    assert!(kid.wait().unwrap().success());
    assert!(p.path().exists(), "the dead child left its segment");
    // re-initialised on open, with the opener's layout
    let seg = Segment::open(
        &p.name,
        &Options {
            ring_records: 32,
            ..p.opts()
        },
    )
    .unwrap();
    assert_eq!(seg.head("left").unwrap(), 0);
    assert!(seg.logs().unwrap().is_empty());
    assert_eq!(seg.stats().unwrap().ring_records, 32);
    assert!(!Segment::remove_stale(&p.name, &p.dir).unwrap(), "in use");
    drop(seg);
    // removed by remove_stale
    let mut kid = spawn(&p, "leave", &[]);
    assert!(kid.wait().unwrap().success());
    assert!(p.path().exists());
    assert!(Segment::remove_stale(&p.name, &p.dir).unwrap());
    assert!(!p.path().exists());
    assert!(!Segment::remove_stale(&p.name, &p.dir).unwrap());
    // an empty file (a creation that never finished) goes too
    std::fs::write(p.path(), b"").unwrap();
    assert!(Segment::remove_stale(&p.name, &p.dir).unwrap());
    // a file that is not a segment stays
    std::fs::write(p.path(), b"something else entirely").unwrap();
    assert!(!Segment::remove_stale(&p.name, &p.dir).unwrap());
    assert!(Segment::open(&p.name, &p.opts()).is_err());
}

#[test]
fn names_and_sizes_are_checked() {
    let p = Place::new("names");
    for bad in ["", "a/b", "../x", "x y", &"n".repeat(65), "é"] {
        assert!(
            matches!(Segment::open(bad, &p.opts()), Err(Error::Invalid(_))),
            "{bad:?}"
        );
        assert!(matches!(
            Segment::remove_stale(bad, &p.dir),
            Err(Error::Invalid(_))
        ));
    }
    for opts in [
        Options {
            ring_bytes: 100,
            ..p.opts()
        },
        Options {
            ring_records: 0,
            ..p.opts()
        },
        Options {
            max_logs: 0,
            ..p.opts()
        },
        Options {
            kv_slots: 1 << 30,
            ..p.opts()
        },
        Options {
            app: "a".repeat(65),
            ..p.opts()
        },
    ] {
        assert!(matches!(
            Segment::open(&p.name, &opts),
            Err(Error::Invalid(_))
        ));
    }
    assert!(!p.path().exists());
    let e = Segment::open(
        &p.name,
        &Options {
            directory: p.dir.join("missing"),
            ..p.opts()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Store(_)));
    let seg = Segment::open(&"n".repeat(64), &p.opts()).unwrap();
    assert_eq!(
        seg.path(),
        Path::new(&p.dir).join(format!("amfkit.{}", "n".repeat(64)))
    );
}

// --- the bell -----------------------------------------------------------------------

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn an_idle_waiter_sleeps() {
    let p = Place::new("idle");
    let seg = p.open();
    let b = seg.bell().unwrap();
    let (cpu0, t) = (thread_cpu(), Instant::now());
    assert_eq!(
        seg.wait(
            b,
            Some(Duration::from_millis(500)),
            Duration::from_micros(50)
        )
        .unwrap(),
        b
    );
    let (cpu, elapsed) = (thread_cpu() - cpu0, t.elapsed());
    assert!(
        elapsed >= Duration::from_millis(500) && elapsed < Duration::from_millis(800),
        "{elapsed:?}"
    );
    assert!(
        cpu < Duration::from_millis(20),
        "a waiter used {cpu:?} of CPU"
    );
    assert_eq!(seg.stats().unwrap().waiters, 0);
    // a changed bell returns at once; a zero timeout too
    assert_eq!(
        seg.wait(b.wrapping_add(1), None, Duration::ZERO).unwrap(),
        b
    );
    let t = Instant::now();
    seg.wait(b, Some(Duration::ZERO), Duration::from_micros(50))
        .unwrap();
    assert!(t.elapsed() < Duration::from_millis(50));
}

#[test]
fn a_waiter_wakes_on_an_append_from_a_thread() {
    let p = Place::new("wake");
    let seg = Arc::new(p.open());
    let b = seg.bell().unwrap();
    let w = {
        let seg = seg.clone();
        thread::spawn(move || {
            let t = Instant::now();
            let now = seg
                .wait(b, Some(Duration::from_secs(10)), Duration::ZERO)
                .unwrap();
            (now, t.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    seg.append("x", b"ding").unwrap();
    let (now, waited) = w.join().unwrap();
    assert_ne!(now, b);
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert!(t.elapsed() < Duration::from_millis(500));
}

#[test]
fn a_waiter_wakes_on_an_append_from_another_process() {
    let p = Place::new("wakep");
    let seg = Segment::open(
        &p.name,
        &Options {
            directory: p.dir.clone(),
            ..Options::default()
        },
    )
    .unwrap();
    let b = seg.bell().unwrap();
    let mut kid = spawn(&p, "ping-later", &[]);
    let t = Instant::now();
    let mut now = b;
    while seg.head("ping").unwrap() == 0 && t.elapsed() < Duration::from_secs(20) {
        now = seg
            .wait(
                now,
                Some(Duration::from_secs(20)),
                Duration::from_micros(50),
            )
            .unwrap();
    }
    let woke = Instant::now();
    assert_eq!(seg.head("ping").unwrap(), 1);
    assert!(t.elapsed() < Duration::from_secs(15));
    assert!(kid.wait().unwrap().success());
    // it woke when the record came, not at a timeout
    assert!(woke.duration_since(t) >= Duration::from_millis(150));
}

#[test]
fn close_wakes_this_processs_waiters() {
    let p = Place::new("closewake");
    let seg = Arc::new(p.open());
    let b = seg.bell().unwrap();
    let w = {
        let seg = seg.clone();
        thread::spawn(move || {
            let t = Instant::now();
            let _ = seg.wait(b, Some(Duration::from_secs(30)), Duration::ZERO);
            t.elapsed()
        })
    };
    thread::sleep(Duration::from_millis(100));
    seg.close().unwrap();
    assert!(w.join().unwrap() < Duration::from_secs(5));
    assert!(!p.path().exists());
}

// --- a reader of one log: find, head_at, read_at, wait_log ---------------------------

use amfkit_core::shm::{LogSlot, Woken};

/// Until `seg` has `n` threads asleep on its bell (a waiter past its spin).
fn until_sleepers(seg: &Segment, n: u64) {
    let t = Instant::now();
    while seg.stats().unwrap().waiters < n {
        assert!(t.elapsed() < Duration::from_secs(20), "no sleeper");
        thread::yield_now();
    }
}

#[test]
fn a_found_log_reads_as_by_name() {
    let p = Place::new("slot");
    let seg = p.open();
    assert_eq!(seg.find("x").unwrap(), None);
    for i in 0..300u32 {
        seg.append("x", &i.to_le_bytes()).unwrap();
    }
    let slot = seg.find("x").unwrap().unwrap();
    assert_eq!(seg.head_at(slot).unwrap(), seg.head("x").unwrap());
    let mut by_slot = Vec::new();
    let (c, lost) = seg.read_at(slot, "x", 0, usize::MAX, &mut by_slot).unwrap();
    assert_eq!((by_slot, c, lost), read_all(&seg, "x", 0)); // 256 held, 44 lost
    assert!(matches!(seg.find(&"y".repeat(200)), Err(Error::Invalid(_))));
}

#[test]
fn wait_log_wakes_for_its_log_only_and_finds_a_log_made_later() {
    let p = Place::new("waitlog");
    let seg = Arc::new(p.open());
    let w = {
        let seg = seg.clone();
        thread::spawn(move || {
            let mut slot: Option<LogSlot> = None;
            let mut wakes = Vec::new();
            // "mine" does not exist yet: the wait finds it once made.
            let woken = seg
                .wait_log(
                    "mine",
                    &mut slot,
                    0,
                    &|| false,
                    Some(Duration::from_secs(30)),
                    Duration::ZERO,
                )
                .unwrap();
            wakes.push((woken, seg.head("mine").unwrap()));
            (wakes, slot.is_some())
        })
    };
    until_sleepers(&seg, 1);
    seg.append("other", b"not for it").unwrap(); // wakes it; it sleeps again
    seg.append("mine", b"for it").unwrap();
    let (wakes, found) = w.join().unwrap();
    assert_eq!(wakes, vec![(Woken::Ready, 1)]);
    assert!(found);
    // Spinning: a record appended from another thread ends the spin.
    let slot = seg.find("mine").unwrap();
    let w = {
        let seg = seg.clone();
        thread::spawn(move || {
            let mut slot = slot;
            seg.wait_log(
                "mine",
                &mut slot,
                1,
                &|| false,
                Some(Duration::from_secs(30)),
                Duration::from_millis(200),
            )
            .unwrap()
        })
    };
    seg.append("mine", b"again").unwrap();
    assert_eq!(w.join().unwrap(), Woken::Ready);
}

#[test]
fn wait_log_times_out_and_a_nudge_makes_it_look_at_stop() {
    let p = Place::new("nudge");
    let seg = Arc::new(p.open());
    seg.append("x", b"one").unwrap();
    let mut slot = seg.find("x").unwrap();
    let t = Instant::now();
    let woken = seg
        .wait_log(
            "x",
            &mut slot,
            1,
            &|| false,
            Some(Duration::from_millis(50)),
            Duration::ZERO,
        )
        .unwrap();
    assert_eq!(woken, Woken::TimedOut);
    assert!(t.elapsed() >= Duration::from_millis(50));
    // a cursor behind the head: ready at once
    assert_eq!(
        seg.wait_log(
            "x",
            &mut slot,
            0,
            &|| false,
            Some(Duration::ZERO),
            Duration::ZERO
        )
        .unwrap(),
        Woken::Ready
    );
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let w = {
        let (seg, stop) = (seg.clone(), stop.clone());
        thread::spawn(move || {
            let mut slot = slot;
            let t = Instant::now();
            let woken = seg
                .wait_log(
                    "x",
                    &mut slot,
                    1,
                    &|| stop.load(Ordering::Relaxed),
                    Some(Duration::from_secs(30)),
                    Duration::ZERO,
                )
                .unwrap();
            (woken, t.elapsed())
        })
    };
    until_sleepers(&seg, 1);
    stop.store(true, Ordering::Relaxed);
    seg.nudge().unwrap();
    let (woken, waited) = w.join().unwrap();
    assert_eq!(woken, Woken::Ready);
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert_eq!(seg.head("x").unwrap(), 1); // nothing was appended: the bell was not rung
}

#[test]
fn wait_log_on_a_closed_segment_is_an_error() {
    let p = Place::new("waitclosed");
    let seg = Arc::new(p.open());
    let w = {
        let seg = seg.clone();
        thread::spawn(move || {
            let mut slot = None;
            seg.wait_log(
                "x",
                &mut slot,
                0,
                &|| false,
                Some(Duration::from_secs(30)),
                Duration::ZERO,
            )
        })
    };
    until_sleepers(&seg, 1);
    seg.close().unwrap();
    let e = w.join().unwrap().unwrap_err();
    assert!(is_store(&e, "closed"), "{e}");
}
