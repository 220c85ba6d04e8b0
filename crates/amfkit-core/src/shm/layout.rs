//! Where everything is in a segment: the offsets of the header fields, of the logs, of
//! their rings and of the key-value table, from the layout parameters. The mapping that
//! reads and writes them is `map.rs`.
//!
//! ```text
//! 0      header (4 KiB): magic, version, parameters, app tag, bell, lock and counter
//!        words, process table (128 x {pid, waiting, start time})
//! 4096   log directory: max_logs x 192 bytes {state, name length, name hash, name}
//!        rings: max_logs x {control (64 bytes: lock, head, tail, write position),
//!                           index (ring_records x u64: position | length << 32),
//!                           data (ring_bytes)}
//!        key-value table: tags (kv_slots x {state, key hash}), keys (kv_slots x
//!        {key length, value length, checksum, key}), values (kv_slots x kv_value_bytes)
//! ```
//!
//! All offsets come from the parameters (validated, and the same for every process);
//! nothing read from the shared memory is used as an offset unchecked.

pub(crate) const MAGIC: [u8; 8] = *b"AMFKSHM1";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_BYTES: usize = 4096;
/// A lock's words (`lock.rs`: owner, waiters, generation, and room to spare).
pub(crate) const LOCK_BYTES: usize = 16;

// Header fields.
pub(crate) const H_MAGIC: usize = 0;
pub(crate) const H_VERSION: usize = 8;
pub(crate) const H_RING_BYTES: usize = 16; // u64
pub(crate) const H_RING_RECORDS: usize = 24;
pub(crate) const H_MAX_LOGS: usize = 28;
pub(crate) const H_KV_SLOTS: usize = 32;
pub(crate) const H_KV_VALUE_BYTES: usize = 36;
pub(crate) const H_TOTAL: usize = 40; // u64
pub(crate) const H_APP_LEN: usize = 48;
pub(crate) const H_APP: usize = 56; // APP_MAX bytes
pub(crate) const H_BELL: usize = 128; // own cache line: the bell and its waiters
pub(crate) const H_BELL_WAITERS: usize = 132;
pub(crate) const H_DIR_LOCK: usize = 192; // LOCK_BYTES
pub(crate) const H_LOG_COUNT: usize = 208;
pub(crate) const H_KV_LOCK: usize = 256; // LOCK_BYTES
pub(crate) const H_KV_USED: usize = 272;
pub(crate) const H_KV_TOMBS: usize = 276;
pub(crate) const H_RECOVERIES: usize = 320;
pub(crate) const H_PROCS: usize = 1024;
pub(crate) const PROC_SLOTS: usize = 128;
pub(crate) const PROC_BYTES: usize = 16; // pid u32, waiting u32, start u64

pub(crate) const APP_MAX: usize = 64;
pub(crate) const LOG_NAME_MAX: usize = 128;
pub(crate) const KEY_MAX: usize = 200;

// A log directory entry.
pub(crate) const DIR_ENTRY: usize = 192;
pub(crate) const D_STATE: usize = 0;
pub(crate) const D_NAME_LEN: usize = 4;
pub(crate) const D_HASH: usize = 8;
pub(crate) const D_NAME: usize = 16;

// A ring's control block (64 bytes: the lock's 16, then head, tail, write position).
pub(crate) const R_LOCK: usize = 0;
pub(crate) const R_HEAD: usize = 16;
pub(crate) const R_TAIL: usize = 24;
pub(crate) const R_WPOS: usize = 32;
pub(crate) const R_INDEX: usize = 64;

// The key-value table: a tag (state u32, key hash u32) and a key record per slot.
pub(crate) const TAG_BYTES: usize = 8;
pub(crate) const K_KEY_LEN: usize = 0;
pub(crate) const K_VALUE_LEN: usize = 4;
pub(crate) const K_CHECK: usize = 8;
pub(crate) const K_KEY: usize = 16;
pub(crate) const KEY_STRIDE: usize = 224; // 16 + KEY_MAX, rounded to 32

// Limits of the parameters.
pub(crate) const RING_BYTES_MIN: u64 = 4096;
pub(crate) const RING_BYTES_MAX: u64 = 1 << 31;
pub(crate) const RING_RECORDS_MAX: u64 = 1 << 24;
pub(crate) const MAX_LOGS_MAX: u64 = 4096;
pub(crate) const KV_SLOTS_MAX: u64 = 1 << 24;
pub(crate) const KV_VALUE_MAX: u64 = 1 << 24;
pub(crate) const TOTAL_MAX: u64 = 1 << 38;

// The locks' 16 bytes fit before the next field.
const _: () = assert!(H_DIR_LOCK + LOCK_BYTES <= H_LOG_COUNT);
const _: () = assert!(H_KV_LOCK + LOCK_BYTES <= H_KV_USED);
const _: () = assert!(R_LOCK + LOCK_BYTES <= R_HEAD);
const _: () = assert!(H_PROCS + PROC_SLOTS * PROC_BYTES <= HEADER_BYTES);
const _: () = assert!(K_KEY + KEY_MAX <= KEY_STRIDE && D_NAME + LOG_NAME_MAX <= DIR_ENTRY);

pub(crate) const fn align(n: usize, to: usize) -> usize {
    (n + to - 1) & !(to - 1)
}

/// The layout parameters (the creator's; joiners adopt them) and the offsets they give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub ring_bytes: usize,
    pub ring_records: usize,
    pub max_logs: usize,
    pub kv_slots: usize,
    pub kv_value_bytes: usize,
    /// The largest record (a quarter of ring_bytes).
    pub max_record: usize,
    pub dir: usize,
    pub rings: usize,
    pub ring_stride: usize,
    /// Offset of a ring's data within its region.
    pub ring_data: usize,
    pub kv_tags: usize,
    pub kv_keys: usize,
    pub kv_values: usize,
    pub value_stride: usize,
    pub total: usize,
}

impl Layout {
    /// The layout of these parameters; Err names the one out of range.
    pub fn new(
        ring_bytes: u64,
        ring_records: u64,
        max_logs: u64,
        kv_slots: u64,
        kv_value_bytes: u64,
    ) -> Result<Layout, String> {
        fn check(what: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
            if v < lo || v > hi {
                return Err(format!("{what} must be in {lo}..={hi}, not {v}"));
            }
            Ok(())
        }
        check("ring_bytes", ring_bytes, RING_BYTES_MIN, RING_BYTES_MAX)?;
        check("ring_records", ring_records, 1, RING_RECORDS_MAX)?;
        check("max_logs", max_logs, 1, MAX_LOGS_MAX)?;
        check("kv_slots", kv_slots, 1, KV_SLOTS_MAX)?;
        check("kv_value_bytes", kv_value_bytes, 0, KV_VALUE_MAX)?;
        // In range, so none of this overflows a u64 (nor a 64-bit usize).
        let ring_bytes = align(ring_bytes as usize, 8);
        let ring_records = ring_records as usize;
        let max_logs = max_logs as usize;
        let kv_slots = kv_slots as usize;
        let kv_value_bytes = kv_value_bytes as usize;
        let dir = HEADER_BYTES;
        let rings = align(dir + max_logs * DIR_ENTRY, 64);
        let ring_data = align(R_INDEX + ring_records * 8, 64);
        let ring_stride = align(ring_data + ring_bytes, 64);
        let kv_tags = rings + max_logs * ring_stride;
        let kv_keys = align(kv_tags + kv_slots * TAG_BYTES, 64);
        let kv_values = align(kv_keys + kv_slots * KEY_STRIDE, 64);
        let value_stride = align(kv_value_bytes, 8);
        let total = align(kv_values + kv_slots * value_stride, 4096);
        if total as u64 > TOTAL_MAX {
            return Err(format!(
                "the segment would be {total} bytes (at most {TOTAL_MAX}): lower ring_bytes, max_logs, kv_slots or kv_value_bytes"
            ));
        }
        Ok(Layout {
            ring_bytes,
            ring_records,
            max_logs,
            kv_slots,
            kv_value_bytes,
            max_record: ring_bytes / 4,
            dir,
            rings,
            ring_stride,
            ring_data,
            kv_tags,
            kv_keys,
            kv_values,
            value_stride,
            total,
        })
    }

    /// The layout a header holds; Err says what is wrong with it.
    pub fn from_header(h: &[u8]) -> Result<Layout, String> {
        let u32_at = |o: usize| u32::from_ne_bytes(h[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(h[o..o + 8].try_into().unwrap());
        let lay = Layout::new(
            u64_at(H_RING_BYTES),
            u64::from(u32_at(H_RING_RECORDS)),
            u64::from(u32_at(H_MAX_LOGS)),
            u64::from(u32_at(H_KV_SLOTS)),
            u64::from(u32_at(H_KV_VALUE_BYTES)),
        )?;
        if lay.ring_bytes as u64 != u64_at(H_RING_BYTES) || lay.total as u64 != u64_at(H_TOTAL) {
            return Err("its size fields disagree".into());
        }
        Ok(lay)
    }

    #[inline]
    pub fn ring(&self, i: usize) -> usize {
        debug_assert!(i < self.max_logs);
        self.rings + i * self.ring_stride
    }

    #[inline]
    pub fn dir_entry(&self, i: usize) -> usize {
        debug_assert!(i < self.max_logs);
        self.dir + i * DIR_ENTRY
    }
}
