//! A fill split the way GPU drivers take it: their fill calls write whole aligned 4-byte words
//! (HSA's `hsa_amd_memory_fill` refuses an unaligned start), so a fill of any pattern from any
//! address becomes up to three bytes before the first aligned word, the words, and up to three
//! bytes after the last, the edges copied from the host.

/// One fill of `size` bytes at `dst` with a 1-, 2- or 4-byte pattern, in the driver's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FillPlan {
    /// The bytes before the first aligned word, and where they go.
    pub head: Edge,
    /// The aligned words: the first one's address, the value each holds, how many.
    pub words: Words,
    /// The bytes after the last aligned word, and where they go.
    pub tail: Edge,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edge {
    pub address: usize,
    pub bytes: Vec<u8>,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Words {
    pub address: usize,
    pub value: u32,
    pub count: usize,
}

impl FillPlan {
    /// The plan for `size` bytes at `dst`, which the caller has checked (`plugin_api::check_fill`):
    /// `pattern` is 1, 2 or 4 bytes, `size` a whole number of them.
    pub fn new(dst: usize, pattern: &[u8], size: usize) -> FillPlan {
        // The byte that belongs at `address` in the filled range.
        let byte_at = |address: usize| pattern[(address - dst) % pattern.len()];
        let end = dst + size;
        let first_word = dst.next_multiple_of(4).min(end);
        let count = (end - first_word) / 4;
        let words_end = first_word + 4 * count;
        let edge = |from: usize, to: usize| Edge {
            address: from,
            bytes: (from..to).map(byte_at).collect(),
        };
        // A word's bytes repeat every pattern, and 4 is a whole number of patterns: every word
        // holds the same value.
        let value = if count == 0 {
            0
        } else {
            u32::from_le_bytes(std::array::from_fn(|i| byte_at(first_word + i)))
        };
        FillPlan {
            head: edge(dst, first_word),
            words: Words {
                address: first_word,
                value,
                count,
            },
            tail: edge(words_end, end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Carries out a plan on a buffer standing for device memory at `base`.
    fn apply(plan: &FillPlan, base: usize, memory: &mut [u8]) {
        for edge in [&plan.head, &plan.tail] {
            let at = edge.address - base;
            memory[at..at + edge.bytes.len()].copy_from_slice(&edge.bytes);
        }
        assert!(plan.words.address.is_multiple_of(4) || plan.words.count == 0);
        for i in 0..plan.words.count {
            let at = plan.words.address - base + 4 * i;
            memory[at..at + 4].copy_from_slice(&plan.words.value.to_le_bytes());
        }
    }

    #[test]
    fn every_start_and_length_fills_exactly_its_bytes() {
        let base = 0x1000;
        for pattern in [&[0xabu8][..], &[1, 2], &[1, 2, 3, 4]] {
            for offset in 0..8 {
                for count in 0..12 {
                    let size = count * pattern.len();
                    let plan = FillPlan::new(base + offset, pattern, size);
                    assert!(plan.head.bytes.len() < 4 && plan.tail.bytes.len() < 4);
                    let mut memory = vec![0xeeu8; 64];
                    apply(&plan, base, &mut memory);
                    let mut expected = vec![0xeeu8; 64];
                    for i in 0..size {
                        expected[offset + i] = pattern[i % pattern.len()];
                    }
                    assert_eq!(memory, expected, "{pattern:?} at +{offset}, {size} bytes");
                }
            }
        }
    }

    #[test]
    fn an_aligned_fill_is_all_words() {
        let plan = FillPlan::new(0x100, &[0x5a], 4096);
        assert!(plan.head.bytes.is_empty() && plan.tail.bytes.is_empty());
        assert_eq!(
            plan.words,
            Words {
                address: 0x100,
                value: 0x5a5a_5a5a,
                count: 1024
            }
        );
        // A two-byte pattern from an address that is 2 mod 4: the words start with its second
        // byte.
        let plan = FillPlan::new(0x102, &[0x11, 0x22], 10);
        assert_eq!(plan.head.bytes, vec![0x11, 0x22]);
        assert_eq!(
            plan.words.value,
            u32::from_le_bytes([0x11, 0x22, 0x11, 0x22])
        );
        assert_eq!(plan.words.count, 2);
    }
}
