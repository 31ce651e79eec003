//! Hash maps keyed by addresses and sizes, on the hot path of every construct (kernel lookup,
//! the memory pool, a plugin's live allocations). The keys are not attacker-controlled, so std's SipHash buys nothing;
//! a multiplicative (Fibonacci) hash of the integer is enough and far cheaper.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u64(&mut self, value: u64) {
        // The golden-ratio multiplier spreads aligned addresses (low bits all zero) over the
        // high bits, which hashbrown uses.
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

pub type AddressMap<K, V> = HashMap<K, V, BuildHasherDefault<AddressHasher>>;

#[test]
fn aligned_addresses_spread() {
    use std::hash::BuildHasher;
    let build = BuildHasherDefault::<AddressHasher>::default();
    let hashes: std::collections::HashSet<u64> = (0..1000u64)
        .map(|i| build.hash_one(0x7f00_0000_0000 + i * 64) >> 57)
        .collect();
    assert!(hashes.len() > 64, "top bits take {} values", hashes.len());
}
