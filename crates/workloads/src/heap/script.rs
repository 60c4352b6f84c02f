//! The `containers` workload: a seeded script of what standard containers do to
//! an allocator, run the same in every thread.
//!
//! Each step picks one of:
//! - 30 %: insert a list/map node (24..64 B) into a node set of at most 4096;
//!   a full set first erases a random node;
//! - 15 %: erase a random node;
//! - 25 %: a string of random length (1 B .. 1 KiB, skewed short), written in
//!   full and kept in a 64-entry FIFO of short-lived objects;
//! - 15 %: a vector grown by doubling from 16 B to 16 B..16 KiB: each growth
//!   allocates the new size, copies, and frees the old buffer; one in ten
//!   vectors lives long, the rest are freed at once;
//! - 15 %: an object of 16..256 B; one in five lives long (a pool of at most
//!   4096, a full pool frees a random member), the rest are short-lived.
//!
//! The script stops after `ops` allocations; then everything still live is freed,
//! so every allocation has its timed free.

use super::alloc::ThreadHeap;
use super::timer;
use hdrhistogram::Histogram;

const NODES: usize = 4096;
const RING: usize = 64;
const LONG: usize = 4096;

/// splitmix64: tiny, seedable, and the same on every platform.
struct Rng(u64);
impl Rng {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    #[inline(always)]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// One thread's counts, in counter ticks with the timer overhead subtracted.
pub struct ThreadStats {
    pub allocs: u64,
    pub frees: u64,
    pub alloc_ticks: u64,
    pub free_ticks: u64,
    pub bytes: u64,
    pub wall_ns: u64,
    pub alloc_hist: Histogram<u64>,
    pub free_hist: Histogram<u64>,
}

struct Timed<'a, H: ThreadHeap> {
    h: &'a mut H,
    overhead: u64,
    s: ThreadStats,
}

impl<H: ThreadHeap> Timed<'_, H> {
    #[inline(always)]
    fn alloc(&mut self, size: usize) -> Result<*mut u8, String> {
        let a = timer::start();
        // SAFETY: freed through self.free.
        let p = unsafe { self.h.alloc(size) };
        let b = timer::stop();
        if p.is_null() {
            return Err(format!("allocation of {size} bytes failed after {} allocations", self.s.allocs));
        }
        let d = b.saturating_sub(a).saturating_sub(self.overhead);
        self.s.allocs += 1;
        self.s.alloc_ticks += d;
        self.s.bytes += size as u64;
        self.s.alloc_hist.saturating_record(d);
        Ok(p)
    }
    #[inline(always)]
    fn free(&mut self, p: *mut u8) {
        let a = timer::start();
        // SAFETY: p came from self.alloc.
        unsafe { self.h.free(p) };
        let b = timer::stop();
        let d = b.saturating_sub(a).saturating_sub(self.overhead);
        self.s.frees += 1;
        self.s.free_ticks += d;
        self.s.free_hist.saturating_record(d);
    }
}

#[inline(always)]
fn write(p: *mut u8, len: usize, v: u8) {
    // SAFETY: p..p+len was just allocated.
    unsafe { std::ptr::write_bytes(p, v, len) }
}

/// Runs the script; `start` is called just before the first timed call (after
/// the bookkeeping is allocated) so that threads can start together.
pub fn run<H: ThreadHeap>(
    h: &mut H,
    ops: u64,
    seed: u64,
    overhead: u64,
    start: impl FnOnce(),
) -> Result<ThreadStats, String> {
    // Up to 2^36 ticks (about half a minute at 2.4 GHz), 3 significant figures; a
    // longer call is recorded as the top value.
    let hist = || Histogram::<u64>::new_with_bounds(1, 1 << 36, 3).expect("valid histogram bounds");
    let mut t = Timed {
        h,
        overhead,
        s: ThreadStats {
            allocs: 0,
            frees: 0,
            alloc_ticks: 0,
            free_ticks: 0,
            bytes: 0,
            wall_ns: 0,
            alloc_hist: hist(),
            free_hist: hist(),
        },
    };
    let mut rng = Rng(seed);
    let mut nodes: Vec<*mut u8> = Vec::with_capacity(NODES);
    let mut ring: Vec<*mut u8> = vec![std::ptr::null_mut(); RING];
    let mut ring_at = 0usize;
    let mut long: Vec<*mut u8> = Vec::with_capacity(LONG);
    start();
    let t0 = timer::mono_ns();
    // A short-lived object enters the ring; the one it displaces is freed.
    macro_rules! short {
        ($p:expr) => {{
            let old = std::mem::replace(&mut ring[ring_at], $p);
            ring_at = (ring_at + 1) % RING;
            if !old.is_null() {
                t.free(old);
            }
        }};
    }
    macro_rules! keep_long {
        ($p:expr) => {{
            if long.len() == LONG {
                let i = rng.below(LONG as u64) as usize;
                let old = std::mem::replace(&mut long[i], $p);
                t.free(old);
            } else {
                long.push($p);
            }
        }};
    }
    while t.s.allocs < ops {
        let r = rng.below(100);
        if r < 30 {
            if nodes.len() == NODES {
                let i = rng.below(NODES as u64) as usize;
                let old = nodes.swap_remove(i);
                t.free(old);
            }
            let size = 24 + rng.below(41) as usize;
            let p = t.alloc(size)?;
            write(p, 16, r as u8);
            nodes.push(p);
        } else if r < 45 {
            if !nodes.is_empty() {
                let i = rng.below(nodes.len() as u64) as usize;
                let old = nodes.swap_remove(i);
                t.free(old);
            }
        } else if r < 70 {
            let scale = 16u64 << rng.below(7);
            let len = 1 + rng.below(scale) as usize;
            let p = t.alloc(len)?;
            write(p, len, b'x');
            short!(p);
        } else if r < 85 {
            let target = 16usize << rng.below(11);
            let mut cap = 16usize;
            let mut p = t.alloc(cap)?;
            write(p, cap, 1);
            while cap < target && t.s.allocs < ops {
                let q = t.alloc(cap * 2)?;
                // SAFETY: both buffers hold at least cap bytes and do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(p, q, cap) };
                write(q.wrapping_add(cap), cap, 2);
                t.free(p);
                p = q;
                cap *= 2;
            }
            if rng.below(10) == 0 {
                keep_long!(p);
            } else {
                t.free(p);
            }
        } else {
            let size = 16 + rng.below(241) as usize;
            let p = t.alloc(size)?;
            write(p, size.min(64), 3);
            if rng.below(5) == 0 {
                keep_long!(p);
            } else {
                short!(p);
            }
        }
    }
    for p in nodes.drain(..).chain(ring.drain(..).filter(|p| !p.is_null())).chain(long.drain(..)) {
        t.free(p);
    }
    t.s.wall_ns = timer::mono_ns() - t0;
    Ok(t.s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::alloc::Libc;

    #[test]
    fn every_allocation_is_freed_and_timed_time_fits_in_wall_time() {
        let c = crate::heap::timer::calibrate(30, 2000);
        let s = run(&mut Libc, 50_000, 7, c.overhead_ticks, || {}).unwrap();
        assert_eq!(s.allocs, 50_000);
        assert_eq!(s.frees, s.allocs);
        assert_eq!(s.alloc_hist.len(), s.allocs);
        let timed_ns = (s.alloc_ticks + s.free_ticks) as f64 * c.ns_per_tick;
        assert!(timed_ns > 0.0 && timed_ns <= s.wall_ns as f64, "timed {timed_ns} ns, wall {} ns", s.wall_ns);
    }

    #[test]
    fn the_script_is_the_same_for_the_same_seed() {
        let a = run(&mut Libc, 20_000, 42, 0, || {}).unwrap();
        let b = run(&mut Libc, 20_000, 42, 0, || {}).unwrap();
        let c = run(&mut Libc, 20_000, 43, 0, || {}).unwrap();
        assert_eq!((a.bytes, a.frees), (b.bytes, b.frees));
        assert_ne!(a.bytes, c.bytes);
    }
}
