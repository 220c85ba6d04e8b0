//! The key-value table: open addressing, linear probing on a hash of the key, every
//! operation under the table's lock (they take microseconds).
//!
//! A slot is a tag {state (empty, used, tombstone), key hash} in a compact array (what
//! probing reads), a key record {key length, value length, checksum, key} and a value
//! area of kv_value_bytes. The checksum covers key and value; a slot that fails it is an
//! error to `get`, and is cleared by the scan that follows a dead owner's recovery (its
//! writer died half-way: the value is lost, not made up).

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::hash::{check32, hash64};
use super::layout::{
    Layout, H_KV_TOMBS, H_KV_USED, KEY_MAX, KEY_STRIDE, K_CHECK, K_KEY, K_KEY_LEN, K_VALUE_LEN,
    TAG_BYTES,
};
use super::map::Map;

const EMPTY: u32 = 0;
const USED: u32 = 1;
const TOMB: u32 = 2;
const KEY_SEED: u64 = 0x4b45_595f_5345_4544;

/// What went wrong in the table.
pub(crate) enum KvError {
    Full,
    /// The slot that is not what it should be.
    Corrupted(usize),
}

enum Probe {
    Found(usize),
    /// Absent; the slot to insert into (None: the table is full).
    Absent(Option<usize>),
}

pub(crate) struct Table<'a> {
    map: &'a Map,
    lay: &'a Layout,
}

impl<'a> Table<'a> {
    pub fn new(map: &'a Map, lay: &'a Layout) -> Table<'a> {
        Table { map, lay }
    }

    fn state(&self, i: usize) -> &'a AtomicU32 {
        self.map.u32(self.lay.kv_tags + i * TAG_BYTES)
    }

    fn tag_hash(&self, i: usize) -> &'a AtomicU32 {
        self.map.u32(self.lay.kv_tags + i * TAG_BYTES + 4)
    }

    fn rec(&self, i: usize) -> usize {
        self.lay.kv_keys + i * KEY_STRIDE
    }

    fn value_at(&self, i: usize) -> usize {
        self.lay.kv_values + i * self.lay.value_stride
    }

    fn used(&self) -> &'a AtomicU32 {
        self.map.u32(H_KV_USED)
    }

    fn tombs(&self) -> &'a AtomicU32 {
        self.map.u32(H_KV_TOMBS)
    }

    /// The number of used slots (for stats).
    pub fn used_count(&self) -> u32 {
        self.used().load(Relaxed)
    }

    fn key_hash(key: &[u8]) -> u64 {
        hash64(KEY_SEED, key)
    }

    /// Slot `i`'s key (checked length), into `buf`.
    fn key_of<'b>(&self, i: usize, buf: &'b mut [u8; KEY_MAX]) -> Result<&'b [u8], KvError> {
        let n = self.map.u32(self.rec(i) + K_KEY_LEN).load(Relaxed) as usize;
        if n == 0 || n > KEY_MAX {
            return Err(KvError::Corrupted(i));
        }
        self.map.read(self.rec(i) + K_KEY, &mut buf[..n]);
        Ok(&buf[..n])
    }

    fn probe(&self, key: &[u8], h: u64) -> Result<Probe, KvError> {
        let n = self.lay.kv_slots;
        let tag = (h >> 32) as u32;
        let mut s = (h % n as u64) as usize;
        let mut free = None;
        let mut buf = [0u8; KEY_MAX];
        for _ in 0..n {
            match self.state(s).load(Relaxed) {
                EMPTY => return Ok(Probe::Absent(free.or(Some(s)))),
                TOMB => {
                    free.get_or_insert(s);
                }
                USED => {
                    if self.tag_hash(s).load(Relaxed) == tag && self.key_of(s, &mut buf)? == key {
                        return Ok(Probe::Found(s));
                    }
                }
                _ => return Err(KvError::Corrupted(s)),
            }
            s += 1;
            if s == n {
                s = 0;
            }
        }
        Ok(Probe::Absent(free))
    }

    /// Slot `i`'s value, checked against its checksum (`h`: the key's hash).
    fn value_of(&self, i: usize, h: u64) -> Result<Vec<u8>, KvError> {
        let rec = self.rec(i);
        let n = self.map.u32(rec + K_VALUE_LEN).load(Relaxed) as usize;
        if n > self.lay.kv_value_bytes {
            return Err(KvError::Corrupted(i));
        }
        let mut value = vec![0u8; n];
        self.map.read(self.value_at(i), &mut value);
        if self.map.u32(rec + K_CHECK).load(Relaxed) != check32(h, &value) {
            return Err(KvError::Corrupted(i));
        }
        Ok(value)
    }

    fn set_value(&self, i: usize, h: u64, value: &[u8]) {
        let rec = self.rec(i);
        self.map.write(self.value_at(i), value);
        self.map
            .u32(rec + K_VALUE_LEN)
            .store(value.len() as u32, Relaxed);
        self.map
            .u32(rec + K_CHECK)
            .store(check32(h, value), Relaxed);
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, KvError> {
        let h = Self::key_hash(key);
        match self.probe(key, h)? {
            Probe::Found(i) => self.value_of(i, h).map(Some),
            Probe::Absent(_) => Ok(None),
        }
    }

    /// Set `key` (`value` fits kv_value_bytes: the caller checked).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), KvError> {
        let h = Self::key_hash(key);
        match self.probe(key, h)? {
            Probe::Found(i) => self.set_value(i, h, value),
            Probe::Absent(None) => return Err(KvError::Full),
            Probe::Absent(Some(i)) => {
                let was = self.state(i).load(Relaxed);
                let rec = self.rec(i);
                self.map.write(rec + K_KEY, key);
                self.map
                    .u32(rec + K_KEY_LEN)
                    .store(key.len() as u32, Relaxed);
                self.set_value(i, h, value);
                self.tag_hash(i).store((h >> 32) as u32, Relaxed);
                // Last: a writer that dies before this leaves the slot as it was.
                self.state(i).store(USED, Relaxed);
                self.used().fetch_add(1, Relaxed);
                if was == TOMB {
                    self.tombs().fetch_sub(1, Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Empty slot `i`; a tombstone only where a probe may have to pass it.
    fn remove(&self, i: usize) {
        let n = self.lay.kv_slots;
        self.used().fetch_sub(1, Relaxed);
        let next = if i + 1 == n { 0 } else { i + 1 };
        if n > 1 && self.state(next).load(Relaxed) != EMPTY {
            self.state(i).store(TOMB, Relaxed);
            self.tombs().fetch_add(1, Relaxed);
            return;
        }
        // Nothing after it: it, and the tombstones just before it, end no probe.
        self.state(i).store(EMPTY, Relaxed);
        let mut s = i;
        for _ in 1..n {
            s = if s == 0 { n - 1 } else { s - 1 };
            if self.state(s).load(Relaxed) != TOMB {
                break;
            }
            self.state(s).store(EMPTY, Relaxed);
            self.tombs().fetch_sub(1, Relaxed);
        }
    }

    pub fn delete(&self, key: &[u8]) -> Result<bool, KvError> {
        let h = Self::key_hash(key);
        match self.probe(key, h)? {
            Probe::Found(i) => {
                self.remove(i);
                Ok(true)
            }
            Probe::Absent(_) => Ok(false),
        }
    }

    /// Set `key` to `value` (None: delete) if it holds `expected` (None: absent).
    pub fn cas(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<bool, KvError> {
        let h = Self::key_hash(key);
        let probe = self.probe(key, h)?;
        let current = match probe {
            Probe::Found(i) => Some(self.value_of(i, h)?),
            Probe::Absent(_) => None,
        };
        if current.as_deref() != expected {
            return Ok(false);
        }
        match (probe, value) {
            (Probe::Found(i), None) => self.remove(i),
            (Probe::Found(i), Some(v)) => self.set_value(i, h, v),
            (Probe::Absent(_), None) => {}
            (Probe::Absent(_), Some(v)) => self.put(key, v)?,
        }
        Ok(true)
    }

    /// The keys starting with `prefix`.
    pub fn keys(&self, prefix: &[u8]) -> Result<Vec<String>, KvError> {
        let mut out = Vec::new();
        let mut buf = [0u8; KEY_MAX];
        for i in 0..self.lay.kv_slots {
            match self.state(i).load(Relaxed) {
                USED => {
                    let key = self.key_of(i, &mut buf)?;
                    if key.starts_with(prefix) {
                        let key = std::str::from_utf8(key).map_err(|_| KvError::Corrupted(i))?;
                        out.push(key.to_owned());
                    }
                }
                EMPTY | TOMB => {}
                _ => return Err(KvError::Corrupted(i)),
            }
        }
        Ok(out)
    }

    /// After a dead owner: clear the slots that fail their checks (and garbage states),
    /// recount. How many were cleared.
    pub fn repair(&self) -> usize {
        let (mut used, mut tombs, mut cleared) = (0u32, 0u32, 0usize);
        let mut buf = [0u8; KEY_MAX];
        for i in 0..self.lay.kv_slots {
            match self.state(i).load(Relaxed) {
                EMPTY => {}
                TOMB => tombs += 1,
                USED => {
                    let ok = match self.key_of(i, &mut buf) {
                        Ok(key) => {
                            let h = Self::key_hash(key);
                            self.tag_hash(i).load(Relaxed) == (h >> 32) as u32
                                && self.value_of(i, h).is_ok()
                        }
                        Err(_) => false,
                    };
                    if ok {
                        used += 1;
                    } else {
                        self.state(i).store(TOMB, Relaxed);
                        tombs += 1;
                        cleared += 1;
                    }
                }
                _ => {
                    self.state(i).store(TOMB, Relaxed);
                    tombs += 1;
                    cleared += 1;
                }
            }
        }
        self.used().store(used, Relaxed);
        self.tombs().store(tombs, Relaxed);
        cleared
    }
}
