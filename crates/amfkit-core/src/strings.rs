//! The AMF3 writer's string table: contents to index, with no allocation per string.
//!
//! Strings are copied into one arena; the table holds (hash, offset, length, index)
//! entries, so a lookup hashes the text once and an insert appends bytes and never
//! rehashes a string.

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
    arena: Vec<u8>,
    table: HashTable<Entry>,
    len: u32,
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StringTable")
            .field("len", &self.len)
            .finish()
    }
}

#[inline]
fn hash(s: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(s);
    h.write_usize(s.len());
    h.finish()
}

impl StringTable {
    /// Number of strings assigned an index.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn clear(&mut self) {
        self.arena.clear();
        self.table.clear();
        self.len = 0;
    }

    /// The index of `s`, if it is in the table.
    #[inline]
    pub fn get(&self, s: &str) -> Option<u32> {
        let bytes = s.as_bytes();
        let h = hash(bytes);
        let arena = &self.arena;
        self.table
            .find(h, |e| {
                &arena[e.start as usize..(e.start + e.len) as usize] == bytes
            })
            .map(|e| e.index)
    }

    /// Give `s` the next index (the caller checked it is not in the table). A string
    /// whose index a reference could not carry (2^28 and up), or that does not fit the
    /// arena's 32-bit offsets, takes its index without an entry: it is never referenced.
    #[inline]
    pub fn insert(&mut self, s: &str) -> u32 {
        let index = self.len;
        self.len += 1;
        let bytes = s.as_bytes();
        let start = self.arena.len();
        if (index as usize) < crate::amf3::MAX_LEN && start + bytes.len() <= u32::MAX as usize {
            self.arena.extend_from_slice(bytes);
            let entry = Entry {
                hash: hash(bytes),
                start: start as u32,
                len: bytes.len() as u32,
                index,
            };
            self.table.insert_unique(entry.hash, entry, |e| e.hash);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_contents() {
        let mut t = StringTable::default();
        for i in 0..10_000 {
            assert_eq!(t.insert(&format!("s{i}")), i);
        }
        for i in 0..10_000 {
            assert_eq!(t.get(&format!("s{i}")), Some(i));
        }
        assert_eq!(t.get("s10000"), None);
        assert_eq!(t.get(""), None);
        t.clear();
        assert!(t.len() == 0 && t.get("s1").is_none());
    }
}
