//! The AMF3 writer's string table: contents to index, with no allocation per string.
//!
//! Strings are copied into one arena and described by entries in a vector, in the order
//! they were added; the hash table holds only each entry's position (4 bytes), so a table
//! of many strings stays small enough for the caches, and a string not in it is usually
//! refused on its hash tag without reading an entry. A lookup hashes the text once; an
//! insert appends and never rehashes a string (entries keep their hash).

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

#[inline]
fn hash(s: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(s);
    h.write_usize(s.len());
    h.finish()
}

impl StringTable {
    pub fn clear(&mut self) {
        self.arena.clear();
        self.entries.clear();
        self.table.clear();
        self.len = 0;
    }

    #[inline]
    fn find(&self, bytes: &[u8], h: u64) -> Option<u32> {
        let (arena, entries) = (&self.arena, &self.entries);
        self.table
            .find(h, |&at| {
                let e = &entries[at as usize];
                e.hash == h && &arena[e.start as usize..(e.start + e.len) as usize] == bytes
            })
            .map(|&at| entries[at as usize].index)
    }

    /// The index of `s` if it is in the table (`Ok`), else give it the next index
    /// (`Err`), hashing it once. A string whose index a reference could not carry
    /// (2^28 and up), or that does not fit the arena's 32-bit offsets, takes its index
    /// without an entry: it is never referenced.
    #[inline]
    pub fn get_or_insert(&mut self, s: &str) -> Result<u32, u32> {
        let bytes = s.as_bytes();
        let h = hash(bytes);
        if let Some(index) = self.find(bytes, h) {
            return Ok(index);
        }
        Err(self.add(bytes, h))
    }

    fn add(&mut self, bytes: &[u8], h: u64) -> u32 {
        let index = self.len;
        self.len += 1;
        let start = self.arena.len();
        if (index as usize) < crate::amf3::MAX_LEN && start + bytes.len() <= u32::MAX as usize {
            self.arena.extend_from_slice(bytes);
            let at = self.entries.len() as u32;
            self.entries.push(Entry {
                hash: h,
                start: start as u32,
                len: bytes.len() as u32,
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

    #[test]
    fn finds_by_contents() {
        let mut t = StringTable::default();
        for i in 0..10_000 {
            assert_eq!(t.get_or_insert(&format!("s{i}")), Err(i));
        }
        for i in 0..10_000 {
            assert_eq!(t.get_or_insert(&format!("s{i}")), Ok(i));
        }
        assert_eq!(t.get_or_insert("s10000"), Err(10_000));
        assert_eq!(t.get_or_insert(""), Err(10_001));
        assert_eq!(t.get_or_insert(""), Ok(10_001));
        t.clear();
        assert_eq!(t.get_or_insert("s1"), Err(0));
    }
}
