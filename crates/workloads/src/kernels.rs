//! The workers' CPU-bound inner loops, kept in this crate because the dev
//! profile optimizes it (Cargo.toml) while `experiments` builds
//! unoptimized there: a test build then runs these loops at the speed a
//! user's build does. (Built at opt-level 2, `experiments` took about 150 s
//! of CPU twice in a 2-vCPU test build, the library and its unit tests;
//! unoptimized, rightsize's hot/cold program ran its tests 3.7 times as
//! long until its loop moved here.)
//!
//! Every function is plain, neither `#[inline]` nor generic: an inlinable
//! one is compiled in its caller's crate, at its caller's optimization. A
//! release build's link-time optimization inlines them all the same.

/// One xorshift64 step (Marsaglia's 13, 7, 17): the new state, also stored.
pub fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// `n` xorshift64 steps from `x`: CPU work in registers alone (jank's frame
/// work), the last state returned so that the work cannot be elided.
pub fn xorshift_steps(mut x: u64, n: u64) -> u64 {
    for _ in 0..n {
        xorshift(&mut x);
    }
    x
}

/// Fills `buf` with xorshift64 words drawn from `seed` (the last word
/// shortened to what is left), native byte order.
pub fn fill_xorshift(buf: &mut [u8], seed: &mut u64) {
    for w in buf.chunks_mut(8) {
        w.copy_from_slice(&xorshift(seed).to_ne_bytes()[..w.len()]);
    }
}

/// Fills the first `head` bytes of every `page` of `buf` with xorshift64
/// words from `seed` and leaves the rest: pages that compress well but are
/// not all one value.
pub fn fill_page_heads(buf: &mut [u8], page: usize, head: usize, seed: &mut u64) {
    for p in buf.chunks_mut(page) {
        let n = head.min(p.len());
        fill_xorshift(&mut p[..n], seed);
    }
}

/// One sweep of `buf`: in every `page`, the first word read, mixed `rounds`
/// times in registers (v = xorshift(v) + v) and written back. Returns the
/// sum of the words written (wrapping), so that nothing is elided. Every
/// page stays referenced, and the time is CPU time rather than memory
/// bandwidth.
pub fn sweep_pages(buf: &mut [u8], page: usize, rounds: u32) -> u64 {
    let mut sum = 0u64;
    for p in buf.chunks_mut(page) {
        if p.len() < 8 {
            continue;
        }
        let mut v = u64::from_ne_bytes(p[..8].try_into().expect("8 bytes"));
        for _ in 0..rounds {
            let mut s = v;
            v = xorshift(&mut s).wrapping_add(v);
        }
        sum = sum.wrapping_add(v);
        p[..8].copy_from_slice(&v.to_ne_bytes());
    }
    sum
}

/// `writes` random bytes at random positions of `buf[..size]` (xorshift64*,
/// position and value from one draw of the state `x`): one cycle of a
/// thrash consumer. `size` is clamped to `buf.len()`.
pub fn random_writes(buf: &mut [u8], size: usize, writes: u64, x: &mut u64) {
    let size = size.min(buf.len());
    if size == 0 {
        return;
    }
    for _ in 0..writes {
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let pos = (((v >> 8) as u128 * size as u128) >> 56) as usize;
        // SAFETY: pos < size <= buf.len() (a 56-bit fraction of size);
        // volatile so that the writes are not elided.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(pos), v as u8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_marsaglias_13_7_17() {
        // The first step from 1: 1 ^ 1<<13 = 0x2001; ^ >>7 = 0x2041;
        // ^ <<17 = 0x4082_2041.
        let mut s = 1u64;
        assert_eq!(xorshift(&mut s), 0x4082_2041);
        assert_eq!(s, 0x4082_2041);
        let mut t = 1u64;
        xorshift(&mut t);
        xorshift(&mut t);
        assert_eq!(xorshift_steps(1, 2), t);
        assert_eq!(xorshift_steps(7, 0), 7);
    }

    #[test]
    fn fills_write_words_and_page_heads_only() {
        let mut a = vec![0u8; 20];
        let mut s = 5u64;
        fill_xorshift(&mut a, &mut s);
        let mut t = 5u64;
        let w0 = xorshift(&mut t).to_ne_bytes();
        let w1 = xorshift(&mut t).to_ne_bytes();
        let w2 = xorshift(&mut t).to_ne_bytes();
        assert_eq!(&a[..8], &w0);
        assert_eq!(&a[8..16], &w1);
        assert_eq!(&a[16..], &w2[..4]);
        assert_eq!(s, t);

        let mut b = vec![0u8; 3 * 64];
        let mut s = 9u64;
        fill_page_heads(&mut b, 64, 16, &mut s);
        for p in b.chunks(64) {
            assert!(p[..16].iter().any(|&x| x != 0));
            assert!(p[16..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn a_sweep_mixes_the_first_word_of_every_page_and_sums_them() {
        let mut b = vec![0u8; 2 * 64 + 4];
        b[..8].copy_from_slice(&1u64.to_ne_bytes());
        b[64..72].copy_from_slice(&2u64.to_ne_bytes());
        let sum = sweep_pages(&mut b, 64, 3);
        let mix = |mut v: u64| {
            for _ in 0..3 {
                let mut s = v;
                v = xorshift(&mut s).wrapping_add(v);
            }
            v
        };
        let (v0, v1) = (mix(1), mix(2));
        assert_eq!(u64::from_ne_bytes(b[..8].try_into().unwrap()), v0);
        assert_eq!(u64::from_ne_bytes(b[64..72].try_into().unwrap()), v1);
        assert_eq!(sum, v0.wrapping_add(v1));
        // The short tail page (4 bytes) is left alone.
        assert_eq!(&b[128..], &[0, 0, 0, 0]);
    }

    #[test]
    fn random_writes_stay_inside_the_size_and_follow_the_state() {
        // One write, worked by hand (xorshift64*: >>12, <<25, >>27, times
        // 0x2545f4914f6cdd1d): the state 0x69cf1fdabcd68fcc, the draw
        // 0x7016343d3c81661c, its top 56 bits × 100 >> 56 = position 43, its
        // low byte 0x1c the value.
        let mut one = vec![0u8; 100];
        let mut s = 0x1234_5678_9abc_def1u64;
        random_writes(&mut one, 100, 1, &mut s);
        assert_eq!(s, 0x69cf_1fda_bcd6_8fcc);
        assert_eq!(one.iter().position(|&v| v != 0), Some(43));
        assert_eq!(one[43], 0x1c);
        // A size past the buffer is clamped to it.
        let mut small = vec![0u8; 16];
        let mut t = 99u64;
        random_writes(&mut small, 1 << 40, 1000, &mut t);
        assert!(small.iter().any(|&v| v != 0));

        let mut b = vec![0u8; 4096];
        let mut x = 0x1234_5678_9abc_def1u64;
        random_writes(&mut b, 100, 10_000, &mut x);
        assert!(b[100..].iter().all(|&v| v == 0), "a write landed past size");
        assert!(b[..100].iter().filter(|&&v| v != 0).count() > 50);
        let mut y = 0x1234_5678_9abc_def1u64;
        random_writes(&mut vec![0u8; 4096], 100, 10_000, &mut y);
        assert_eq!(x, y);
        // An empty size writes nothing and leaves the state.
        let mut z = 3u64;
        random_writes(&mut b, 0, 10, &mut z);
        assert_eq!(z, 3);
    }
}
