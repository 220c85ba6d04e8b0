//! One log: a ring of `ring_bytes` holding records, and an index of `ring_records`
//! positions (seq % ring_records -> position | length << 32).
//!
//! A record is a 16-byte header {seq u64, length u32, checksum u32} and its payload,
//! 8-byte aligned, contiguous (one that does not fit before the end goes to the start).
//! `head` is the newest record's seq (0: none), `tail` the newest evicted one's, so the
//! log holds (tail, head]. Writers hold the ring's lock; readers take none: they copy,
//! then re-load `tail` to learn whether the writer reclaimed the record meanwhile (it
//! stores `tail` before it overwrites anything), then check the header and checksum.

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

use super::hash::check32;
use super::layout::{align, Layout, R_HEAD, R_INDEX, R_LOCK, R_TAIL, R_WPOS};
use super::lock::Lock;
use super::map::Map;

const RECORD_HEADER: usize = 16;

/// Where [`Segment::read`](super::Segment::read) puts the records it reads.
pub trait RecordSink {
    /// Keep record `seq` of `len` bytes: call `fill` once with a buffer of exactly `len`
    /// bytes (it copies the record in). False: stop reading (the sink failed).
    fn record(&mut self, seq: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool;
    /// Drop the record just kept (it was overwritten while being copied, or is bad).
    fn discard(&mut self);
}

impl RecordSink for Vec<(u64, Vec<u8>)> {
    fn record(&mut self, seq: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let mut buf = vec![0u8; len];
        fill(&mut buf);
        self.push((seq, buf));
        true
    }

    fn discard(&mut self) {
        self.pop();
    }
}

/// The outcome of a read: the next cursor and how many records were lost, or the seq of
/// a corrupted record.
pub(crate) enum ReadEnd {
    Done { cursor: u64, lost: u64 },
    Corrupted(u64),
    SinkFailed { cursor: u64, lost: u64 },
}

pub(crate) struct Ring<'a> {
    map: &'a Map,
    lay: &'a Layout,
    base: usize,
}

#[inline]
fn checksum(seq: u64, payload: &[u8]) -> u32 {
    check32(seq ^ 0x5245_434f_5244_u64, payload)
}

impl<'a> Ring<'a> {
    #[inline]
    pub fn new(map: &'a Map, lay: &'a Layout, index: usize) -> Ring<'a> {
        Ring {
            map,
            lay,
            base: lay.ring(index),
        }
    }

    #[inline]
    pub fn lock(&self) -> Lock<'a> {
        Lock::at(self.map, self.base + R_LOCK)
    }

    #[inline]
    fn head_word(&self) -> &'a AtomicU64 {
        self.map.u64(self.base + R_HEAD)
    }

    #[inline]
    fn tail_word(&self) -> &'a AtomicU64 {
        self.map.u64(self.base + R_TAIL)
    }

    #[inline]
    fn wpos_word(&self) -> &'a AtomicU64 {
        self.map.u64(self.base + R_WPOS)
    }

    #[inline]
    fn index(&self, seq: u64) -> &'a AtomicU64 {
        self.map
            .u64(self.base + R_INDEX + (seq % self.lay.ring_records as u64) as usize * 8)
    }

    #[inline]
    fn data(&self) -> usize {
        self.base + self.lay.ring_data
    }

    #[inline]
    pub fn head(&self) -> u64 {
        self.head_word().load(Acquire)
    }

    /// The records the log holds (for stats): head - tail, bounded.
    pub fn held(&self) -> u64 {
        let head = self.head_word().load(Acquire);
        let tail = self.tail_word().load(Acquire);
        head.saturating_sub(tail).min(self.lay.ring_records as u64)
    }

    /// Reset to empty (a new log).
    pub fn init(&self) {
        self.tail_word().store(0, Relaxed);
        self.wpos_word().store(0, Relaxed);
        self.head_word().store(0, Release);
    }

    /// A valid (position, length) from an index entry, if it is one.
    #[inline]
    fn entry(&self, e: u64) -> Option<(usize, usize)> {
        let (pos, len) = ((e & 0xffff_ffff) as usize, (e >> 32) as usize);
        (pos & 7 == 0
            && len <= self.lay.max_record
            && pos + RECORD_HEADER + len <= self.lay.ring_bytes)
            .then_some((pos, len))
    }

    /// Append `record` (at most `max_record` bytes, checked by the caller); the caller
    /// holds the lock. Its seq.
    pub fn append_locked(&self, record: &[u8]) -> u64 {
        let ring_bytes = self.lay.ring_bytes;
        let records = self.lay.ring_records as u64;
        let head = self.head_word().load(Relaxed);
        let mut tail = self.tail_word().load(Relaxed);
        let mut wpos = self.wpos_word().load(Relaxed);
        let tail0 = tail;
        // Garbage (or a torn write of these words): start the ring over; readers learn
        // they lost what it held.
        if tail > head || head - tail > records || wpos & 7 != 0 || wpos >= ring_bytes as u64 {
            tail = head;
            wpos = 0;
        }
        let wpos = wpos as usize;
        let size = align(RECORD_HEADER + record.len(), 8);
        let (pos, wrap) = if wpos + size <= ring_bytes {
            (wpos, false)
        } else {
            (0, true)
        };
        // Evict the oldest records while the index is full or they sit where this one
        // goes (when it wraps, the end of the ring [wpos, ring_bytes) is given up too).
        while tail < head {
            let oldest = tail + 1;
            if head - tail < records {
                let Some((p, n)) = self.entry(self.index(oldest).load(Relaxed)) else {
                    tail = head; // a garbage index: drop it all
                    break;
                };
                let end = p + align(RECORD_HEADER + n, 8);
                let overlaps = p < pos + size && pos < end;
                if !(overlaps || (wrap && p >= wpos)) {
                    break;
                }
            }
            tail = oldest;
        }
        if tail != tail0 {
            self.tail_word().store(tail, Relaxed);
            // Readers must see the new tail before any byte it frees changes.
            fence(Release);
        }
        let seq = head + 1;
        let at = self.data() + pos;
        let check = checksum(seq, record);
        self.map.u64(at).store(seq, Relaxed);
        self.map
            .u64(at + 8)
            .store(record.len() as u64 | u64::from(check) << 32, Relaxed);
        self.map.store_words(at + RECORD_HEADER, record);
        self.index(seq)
            .store(pos as u64 | (record.len() as u64) << 32, Relaxed);
        let next = pos + size;
        self.wpos_word()
            .store(if next >= ring_bytes { 0 } else { next } as u64, Relaxed);
        self.head_word().store(seq, Release);
        seq
    }

    /// Up to `limit` records after `cursor`, into `sink`. Lock-free.
    pub fn read(&self, cursor: u64, limit: usize, sink: &mut dyn RecordSink) -> ReadEnd {
        let head = self.head_word().load(Acquire);
        if cursor >= head {
            return ReadEnd::Done {
                cursor: head,
                lost: 0,
            };
        }
        let mut c = cursor;
        let mut lost = 0;
        let tail = self.tail_word().load(Acquire);
        if c < tail {
            lost += tail.min(head) - c;
            c = tail.min(head);
        }
        let mut taken = 0;
        while c < head && taken < limit {
            let seq = c + 1;
            let e = self.index(seq).load(Acquire);
            let found = self.entry(e);
            let mut header = [0u64; 2];
            let mut sum = 0u32;
            if let Some((pos, len)) = found {
                let at = self.data() + pos;
                header = [
                    self.map.u64(at).load(Relaxed),
                    self.map.u64(at + 8).load(Relaxed),
                ];
                let from = at + RECORD_HEADER;
                let map = self.map;
                let kept = sink.record(seq, len, &mut |buf: &mut [u8]| {
                    map.load_words(from, buf);
                    sum = checksum(seq, buf);
                });
                if !kept {
                    return ReadEnd::SinkFailed { cursor: c, lost };
                }
            }
            fence(Acquire);
            let tail = self.tail_word().load(Relaxed);
            if seq <= tail {
                // Overwritten while we copied: lost, as is all up to the new tail.
                if found.is_some() {
                    sink.discard();
                }
                let to = tail.min(head);
                lost += to - c;
                c = to;
                continue;
            }
            let Some((_, len)) = found else {
                return ReadEnd::Corrupted(seq);
            };
            if header[0] != seq
                || header[1] & 0xffff_ffff != len as u64
                || (header[1] >> 32) as u32 != sum
            {
                sink.discard();
                return ReadEnd::Corrupted(seq);
            }
            c = seq;
            taken += 1;
        }
        ReadEnd::Done { cursor: c, lost }
    }
}
