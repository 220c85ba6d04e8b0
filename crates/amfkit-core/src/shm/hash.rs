//! The checksum of records and table slots, and the hash of keys and log names: a
//! 128-bit multiply-fold over 16-byte blocks (the wyhash idea). Fast and well mixed; not
//! a MAC (a hostile peer sharing the memory can forge it): it is there to catch garbage.

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

#[inline(always)]
fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// The 64-bit hash of `data` under `seed`.
#[inline]
pub fn hash64(seed: u64, data: &[u8]) -> u64 {
    let len = data.len() as u64;
    let mut h = seed ^ P0 ^ fold(len ^ P1, P2);
    let mut blocks = data.chunks_exact(16);
    for b in &mut blocks {
        h = fold(word(&b[..8]) ^ P1 ^ h, word(&b[8..]) ^ P2);
    }
    let rest = blocks.remainder();
    let (a, b) = if rest.len() > 8 {
        (word(&rest[..8]), word(&rest[8..]))
    } else {
        (word(rest), 0)
    };
    h = fold(a ^ P1 ^ h, b ^ P2 ^ len);
    fold(h ^ P0, h ^ P2)
}

/// A 32-bit checksum of `data` under `seed`.
#[inline]
pub(crate) fn check32(seed: u64, data: &[u8]) -> u32 {
    let h = hash64(seed, data);
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differs() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..64usize {
            let data: Vec<u8> = (0..n as u8).collect();
            assert!(seen.insert(hash64(1, &data)));
            assert_ne!(hash64(1, &data), hash64(2, &data));
        }
        assert_ne!(hash64(0, b"\0"), hash64(0, b""));
        assert_ne!(hash64(0, b"\0\0"), hash64(0, b"\0"));
    }
}
