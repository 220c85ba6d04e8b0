//! The AMF3 writer's string table: contents to index, with no copy of any string.
//!
//! A string enters the table as it is written inline, and its entry points at those
//! bytes in the output (the encoder's output is append-only within a reference context:
//! the length slots patched afterwards never hold string bytes), so the table costs a
//! few bytes per string whatever their lengths, and a big save of unique texts is not
//! held twice while it is written. Entries are kept in a vector, in the order they were
//! added; the hash table holds only each entry's position (4 bytes), so a table of many
//! strings stays small enough for the caches, and a string not in it is usually refused
//! on its hash tag without reading an entry. A lookup hashes the text once; an insert
//! appends and never rehashes a string (entries keep their hash).

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    start: u32,
    len: u32,
    index: u32,
}

#[derive(Default)]
pub struct StringTable {
    entries: Vec<Entry>,
    table: HashTable<u32>,
    len: u32,
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StringTable")
            .field("len", &self.len)
            .finish()
    }
}

/// The hash a lookup and the insert that may follow it share.
#[inline]
pub fn hash(s: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(s);
    h.write_usize(s.len());
    h.finish()
}

impl StringTable {
    pub fn clear(&mut self) {
        self.entries.clear();
        self.table.clear();
        self.len = 0;
    }

    /// Make room for `n` more entries.
    pub fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
        let entries = &self.entries;
        self.table.reserve(n, |&at| entries[at as usize].hash);
    }

    /// The index of `bytes` (hashed `h`) if the table has it; `out` is the output its
    /// entries point into. An entry whose bytes are no longer there (an output cleared
    /// without [`StringTable::clear`]) never matches.
    #[inline]
    pub fn find(&self, out: &[u8], bytes: &[u8], h: u64) -> Option<u32> {
        let entries = &self.entries;
        self.table
            .find(h, |&at| {
                let e = &entries[at as usize];
                e.hash == h
                    && e.len as usize == bytes.len()
                    && out.get(e.start as usize..e.start as usize + e.len as usize) == Some(bytes)
            })
            .map(|&at| entries[at as usize].index)
    }

    /// Give the next index to the string of `len` bytes hashed `h` that was just written
    /// at `out[start..]`. A string whose index a reference could not carry (2^28 and up),
    /// or that lies beyond the entries' 32-bit offsets, takes its index without an entry:
    /// it is never referenced.
    pub fn add(&mut self, h: u64, start: usize, len: usize) -> u32 {
        let index = self.len;
        self.len += 1;
        if (index as usize) < crate::amf3::MAX_LEN && start + len <= u32::MAX as usize {
            let at = self.entries.len() as u32;
            self.entries.push(Entry {
                hash: h,
                start: start as u32,
                len: len as u32,
                index,
            });
            let entries = &self.entries;
            self.table
                .insert_unique(h, at, |&at| entries[at as usize].hash);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write `s` to `out` through the table as the encoder does: its index, and whether
    /// it was found.
    fn put(t: &mut StringTable, out: &mut Vec<u8>, s: &str) -> Result<u32, u32> {
        let h = hash(s.as_bytes());
        if let Some(index) = t.find(out, s.as_bytes(), h) {
            return Ok(index);
        }
        out.push(0xff); // a header before the text, as the encoder writes one
        let start = out.len();
        out.extend_from_slice(s.as_bytes());
        Err(t.add(h, start, s.len()))
    }

    #[test]
    fn finds_by_contents() {
        let (mut t, mut out) = (StringTable::default(), Vec::new());
        for i in 0..10_000 {
            assert_eq!(put(&mut t, &mut out, &format!("s{i}")), Err(i));
        }
        for i in 0..10_000 {
            assert_eq!(put(&mut t, &mut out, &format!("s{i}")), Ok(i));
        }
        assert_eq!(put(&mut t, &mut out, "s10000"), Err(10_000));
        assert_eq!(put(&mut t, &mut out, ""), Err(10_001));
        assert_eq!(put(&mut t, &mut out, ""), Ok(10_001));
        t.clear();
        assert_eq!(put(&mut t, &mut out, "s1"), Err(0));
    }

    #[test]
    fn a_prefix_or_an_extension_is_another_string() {
        let (mut t, mut out) = (StringTable::default(), Vec::new());
        assert_eq!(put(&mut t, &mut out, "abc"), Err(0));
        assert_eq!(put(&mut t, &mut out, "ab"), Err(1));
        assert_eq!(put(&mut t, &mut out, "abcd"), Err(2));
        assert_eq!(put(&mut t, &mut out, "abc"), Ok(0));
    }

    #[test]
    fn entries_past_a_cleared_output_never_match() {
        let (mut t, mut out) = (StringTable::default(), Vec::new());
        assert_eq!(put(&mut t, &mut out, "hello"), Err(0));
        out.clear();
        assert_eq!(put(&mut t, &mut out, "hello"), Err(1));
    }
}
