//! Fill patterns of different compressibility, and a fast read-back hash.
//!
//! The patterns of the memory-compression study (Mangan, "Performance versus Data"):
//!
//! - `random`: a random value in every byte (incompressible);
//! - `semi`: one random byte value repeated over a block (20 bytes by default), then
//!   a new random value for the next block (compresses to about 1/5 on Windows);
//! - `const`: the same value in every byte (zram stores it as a "same page");
//! - `zero`: zeros.
//!
//! The generator is xoshiro256++ (Blackman and Vigna), run as four independent
//! streams side by side so the compiler can keep them in vector registers: each
//! step writes 32 bytes. The streams are seeded from one `seed` with SplitMix64 (record::stats::rng), so
//! a pattern is exactly reproducible from the seed recorded with the run.

use record::stats::rng::SplitMix64;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Random,
    Semi,
    Const,
    Zero,
}

impl Pattern {
    pub const ALL: [Pattern; 4] = [Pattern::Random, Pattern::Semi, Pattern::Const, Pattern::Zero];
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Semi => "semi",
            Pattern::Const => "const",
            Pattern::Zero => "zero",
        }
    }
    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const LANES: usize = 8;

/// Eight xoshiro256++ generators in structure-of-arrays form: two sets of four,
/// so an AVX2 implementation can run two independent dependency chains.
#[derive(Clone, Debug)]
pub struct Rng4 {
    s0: [u64; LANES],
    s1: [u64; LANES],
    s2: [u64; LANES],
    s3: [u64; LANES],
}

impl Rng4 {
    pub fn new(seed: u64) -> Self {
        // Seeded by the project's one SplitMix64 (record::stats::rng).
        let mut sm = SplitMix64(seed);
        let mut r = Rng4 { s0: [0; LANES], s1: [0; LANES], s2: [0; LANES], s3: [0; LANES] };
        for l in 0..LANES {
            r.s0[l] = sm.next_u64();
            r.s1[l] = sm.next_u64();
            r.s2[l] = sm.next_u64();
            r.s3[l] = sm.next_u64();
        }
        r
    }

    /// One step: eight 64-bit outputs (64 bytes).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane-parallel state update, kept as in the paper
    pub fn next8(&mut self) -> [u64; LANES] {
        let mut out = [0u64; LANES];
        for l in 0..LANES {
            out[l] = self.s0[l].wrapping_add(self.s3[l]).rotate_left(23).wrapping_add(self.s0[l]);
            let t = self.s1[l] << 17;
            self.s2[l] ^= self.s0[l];
            self.s3[l] ^= self.s1[l];
            self.s1[l] ^= self.s2[l];
            self.s0[l] ^= self.s3[l];
            self.s2[l] ^= t;
            self.s3[l] = self.s3[l].rotate_left(45);
        }
        out
    }

    /// Four outputs (for the semi pattern, which needs few random values).
    #[inline(always)]
    pub fn next4(&mut self) -> [u64; 4] {
        let v = self.next8();
        [v[0], v[1], v[2], v[3]]
    }
}

fn fill_words_scalar(words: &mut [[u64; LANES]], rng: &mut Rng4) {
    for w in words.iter_mut() {
        *w = rng.next8();
        if cfg!(target_endian = "big") {
            for x in w.iter_mut() {
                *x = x.swap_bytes();
            }
        }
    }
}

/// Resident regions at least this large are written with non-temporal stores (they
/// would not stay in cache anyway), as glibc's memset does for large sizes.
///
/// Not on first touch: the kernel has just zeroed each faulted page, so the page is
/// in cache and ordinary stores are cheaper there. Measured on the 2-vCPU VM with
/// 512 MiB: first touch 1.58 GB/s with ordinary stores against 1.35 with streaming
/// (memset 1.5-1.6); re-fill 13.9 GB/s streaming against 7.5 ordinary (memset 9.6-9.9).
const STREAM_MIN: usize = 4 << 20;

/// Whether the first, middle and last pages of a region are resident (mincore).
#[cfg(target_arch = "x86_64")]
fn resident<T>(words: &[T]) -> bool {
    let page = crate::mm::page_size();
    let start = words.as_ptr() as usize;
    let len = std::mem::size_of_val(words);
    [start, start + len / 2, start + len.saturating_sub(1)].iter().all(|&a| {
        let base = a & !(page - 1);
        let mut v = 0u8;
        // SAFETY: mincore on one page of a mapping we hold; writes one byte to v.
        unsafe { libc::mincore(base as *mut libc::c_void, 1, &mut v) == 0 && v & 1 == 1 }
    })
}

/// The same stream as `fill_words_scalar`, eight lanes in two ymm sets.
// SAFETY (callers): only called after is_x86_feature_detected!("avx2") said yes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_words_avx2(words: &mut [[u64; LANES]], rng: &mut Rng4) {
    use std::arch::x86_64::*;
    let stream = std::mem::size_of_val(words) >= STREAM_MIN && resident(words);
    // SAFETY (whole function): loads and stores of [u64; 4] halves through
    // unaligned or (for streaming, checked) aligned pointers into owned memory.
    unsafe {
        let ld = |p: &[u64; LANES], h: usize| _mm256_loadu_si256(p.as_ptr().add(h * 4) as *const __m256i);
        let (mut a0, mut a1, mut a2, mut a3) = (ld(&rng.s0, 0), ld(&rng.s1, 0), ld(&rng.s2, 0), ld(&rng.s3, 0));
        let (mut b0, mut b1, mut b2, mut b3) = (ld(&rng.s0, 1), ld(&rng.s1, 1), ld(&rng.s2, 1), ld(&rng.s3, 1));
        macro_rules! rotl {
            ($x:expr, $k:literal) => {
                _mm256_or_si256(_mm256_slli_epi64($x, $k), _mm256_srli_epi64($x, 64 - $k))
            };
        }
        macro_rules! step {
            ($s0:ident, $s1:ident, $s2:ident, $s3:ident) => {{
                let r = _mm256_add_epi64(rotl!(_mm256_add_epi64($s0, $s3), 23), $s0);
                let t = _mm256_slli_epi64($s1, 17);
                $s2 = _mm256_xor_si256($s2, $s0);
                $s3 = _mm256_xor_si256($s3, $s1);
                $s1 = _mm256_xor_si256($s1, $s2);
                $s0 = _mm256_xor_si256($s0, $s3);
                $s2 = _mm256_xor_si256($s2, t);
                $s3 = rotl!($s3, 45);
                r
            }};
        }
        let aligned = (words.as_ptr() as usize) % 32 == 0;
        for w in words.iter_mut() {
            let ra = step!(a0, a1, a2, a3);
            let rb = step!(b0, b1, b2, b3);
            let p = w.as_mut_ptr() as *mut __m256i;
            if stream && aligned {
                _mm256_stream_si256(p, ra);
                _mm256_stream_si256(p.add(1), rb);
            } else {
                _mm256_storeu_si256(p, ra);
                _mm256_storeu_si256(p.add(1), rb);
            }
        }
        if stream {
            _mm_sfence();
        }
        let st = |dst: &mut [u64; LANES], h: usize, v: __m256i| {
            _mm256_storeu_si256(dst.as_mut_ptr().add(h * 4) as *mut __m256i, v)
        };
        st(&mut rng.s0, 0, a0);
        st(&mut rng.s1, 0, a1);
        st(&mut rng.s2, 0, a2);
        st(&mut rng.s3, 0, a3);
        st(&mut rng.s0, 1, b0);
        st(&mut rng.s1, 1, b1);
        st(&mut rng.s2, 1, b2);
        st(&mut rng.s3, 1, b3);
    }
}

fn fill_random_with(buf: &mut [u8], rng: &mut Rng4, words_fn: fn(&mut [[u64; LANES]], &mut Rng4)) {
    // The aligned middle as whole 64-byte words; the unaligned ends byte by byte.
    // SAFETY: any bit pattern is a valid u64.
    let (head, words, tail) = unsafe { buf.align_to_mut::<[u64; LANES]>() };
    for b in head.iter_mut() {
        *b = rng.next8()[0] as u8;
    }
    words_fn(words, rng);
    for b in tail.iter_mut() {
        *b = rng.next8()[0] as u8;
    }
}

/// Fills `buf` with random bytes from `rng`.
pub fn fill_random(buf: &mut [u8], rng: &mut Rng4) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return fill_random_with(buf, rng, |w, r| unsafe { fill_words_avx2(w, r) });
    }
    fill_random_with(buf, rng, fill_words_scalar)
}

/// Fills `buf` with blocks of `block` bytes, each one random byte value repeated.
/// The block grid starts at the start of `buf`.
///
/// 64 blocks (one generator step gives 64 values) are built in a small staging
/// buffer that stays in L1 cache, each block written as one 32-byte store of the
/// repeated value (the next block's store overwrites the overhang), and the
/// staging buffer is then copied out whole. Writing the overlapping stores straight
/// into a large region was four times slower: partial-line writes to memory.
pub fn fill_semi(buf: &mut [u8], block: usize, rng: &mut Rng4) {
    let block = block.max(1);
    let span = block * 64;
    let mut stage = vec![0u8; span + 32];
    let mut vals = [0u8; 64];
    let refill_vals = |rng: &mut Rng4, vals: &mut [u8; 64]| {
        for (i, w) in rng.next8().iter().enumerate() {
            vals[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
    };
    let mut chunks = buf.chunks_exact_mut(span);
    for out in &mut chunks {
        refill_vals(rng, &mut vals);
        if block <= 32 {
            for (k, v) in vals.iter().enumerate() {
                stage[k * block..k * block + 32].copy_from_slice(&[*v; 32]);
            }
        } else {
            for (k, v) in vals.iter().enumerate() {
                stage[k * block..(k + 1) * block].fill(*v);
            }
        }
        out.copy_from_slice(&stage[..span]);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        refill_vals(rng, &mut vals);
        for (c, v) in rest.chunks_mut(block).zip(vals.iter()) {
            c.fill(*v);
        }
    }
}

/// The byte value of the `const` pattern for a seed (never zero, so it differs
/// from the `zero` pattern).
pub fn const_value(seed: u64) -> u8 {
    (SplitMix64(seed).next_u64() as u8) | 1
}

/// Fills `buf` with `pattern`, reproducibly from `seed`.
pub fn fill(buf: &mut [u8], pattern: Pattern, block: usize, seed: u64) {
    match pattern {
        Pattern::Random => fill_random(buf, &mut Rng4::new(seed)),
        Pattern::Semi => fill_semi(buf, block, &mut Rng4::new(seed)),
        Pattern::Const => buf.fill(const_value(seed)),
        Pattern::Zero => buf.fill(0),
    }
}

#[inline(always)]
fn hash_body(buf: &[u8]) -> u64 {
    const K: u64 = 0x9FB2_1C65_1E98_DF25;
    let mut h = [0x243F_6A88_85A3_08D3u64, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0, 0x082E_FA98_EC4E_6C89];
    let mut chunks = buf.chunks_exact(32);
    for c in &mut chunks {
        for l in 0..4 {
            let w = u64::from_le_bytes(c[l * 8..l * 8 + 8].try_into().unwrap());
            h[l] = (h[l] ^ w).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut tail = 0u64;
    for (i, b) in chunks.remainder().iter().enumerate() {
        tail ^= (*b as u64) << ((i % 8) * 8);
    }
    let mut out = buf.len() as u64 ^ tail.wrapping_mul(K);
    for v in h {
        out = (out ^ v).wrapping_mul(K).rotate_left(31);
    }
    out
}

// SAFETY (callers): only called after is_x86_feature_detected!("avx2") said yes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hash_avx2(buf: &[u8]) -> u64 {
    hash_body(buf)
}

/// A fast 64-bit hash of every byte of `buf` (reading it all: this is the
/// read-back phase's work). Not cryptographic; it detects lost or changed data.
pub fn hash(buf: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { hash_avx2(buf) };
    }
    hash_body(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_reproducible_and_distinct() {
        let mut a = vec![0u8; 10_000];
        let mut b = vec![0u8; 10_000];
        fill(&mut a, Pattern::Random, 20, 42);
        fill(&mut b, Pattern::Random, 20, 42);
        assert_eq!(a, b);
        fill(&mut b, Pattern::Random, 20, 43);
        assert_ne!(a, b);
        // Random bytes: all 256 values appear.
        let mut seen = [false; 256];
        a.iter().for_each(|x| seen[*x as usize] = true);
        assert!(seen.iter().all(|s| *s));
        // The AVX2 path and the scalar path write the same bytes for a seed.
        let mut c = vec![0u8; 10_000];
        fill_random_with(&mut c, &mut Rng4::new(42), fill_words_scalar);
        assert_eq!(a, c);
        let mut big = vec![0u8; 8 << 20];
        let mut big2 = vec![0u8; 8 << 20];
        fill(&mut big, Pattern::Random, 20, 5);
        fill_random_with(&mut big2, &mut Rng4::new(5), fill_words_scalar);
        assert!(big == big2, "streaming stores give the same bytes");
    }

    #[test]
    fn semi_blocks_repeat_one_value() {
        let mut a = vec![0u8; 4096];
        fill(&mut a, Pattern::Semi, 20, 7);
        for block in a.chunks(20) {
            assert!(block.iter().all(|x| *x == block[0]));
        }
        let distinct = a.chunks(20).zip(a.chunks(20).skip(1)).filter(|(x, y)| x[0] != y[0]).count();
        assert!(distinct > 150, "consecutive blocks mostly differ: {distinct}");
    }

    #[test]
    fn const_and_zero() {
        let mut a = vec![1u8; 100];
        fill(&mut a, Pattern::Zero, 20, 1);
        assert!(a.iter().all(|x| *x == 0));
        fill(&mut a, Pattern::Const, 20, 1);
        assert!(a.iter().all(|x| *x == a[0] && *x != 0));
    }

    #[test]
    fn hash_sees_every_byte() {
        let mut a = vec![0u8; 4096 * 3 + 5];
        fill(&mut a, Pattern::Random, 20, 3);
        let h = hash(&a);
        for i in [0, 31, 32, 4096, a.len() - 1] {
            a[i] ^= 1;
            assert_ne!(hash(&a), h, "flip at {i}");
            a[i] ^= 1;
        }
        assert_eq!(hash(&a), h);
        assert_eq!(hash_body(&a), h, "the AVX2 and plain paths agree");
    }
}
