//! SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
//! OOPSLA 2014): the one seeded generator every part of remat-opt draws from — random graphs,
//! seeded step inputs (remat-run and remat-gpu-run must draw the same ones), randomized
//! rounding, DTR's random heuristic and the tests. The same seed gives the same numbers on
//! every platform. No dependencies, so the runtime can use it without the graph crate.

#![deny(missing_docs)]

/// SplitMix64: a tiny, well-distributed, seedable generator.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A number in `lo..=hi` (`lo <= hi`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference outputs of SplitMix64 seeded with 0 (the generator's published test
    /// vector), so seeded inputs and graphs never change silently.
    #[test]
    fn matches_the_reference_sequence() {
        let mut rng = SplitMix64::new(0);
        let first: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(first, [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F]);
    }

    #[test]
    fn ranges_are_inclusive_and_bounded() {
        let mut rng = SplitMix64::new(7);
        let draws: Vec<u64> = (0..200).map(|_| rng.range(3, 5)).collect();
        assert!(draws.iter().all(|d| (3..=5).contains(d)));
        assert!([3, 4, 5].iter().all(|v| draws.contains(v)), "every value of a small range is drawn");
    }
}
