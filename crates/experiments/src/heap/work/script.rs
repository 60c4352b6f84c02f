//! The `containers` workload: a seeded script of what standard containers do to
//! an allocator, run the same in every thread, timed the way allocator people
//! time calls of a few nanoseconds.
//!
//! The script runs in rounds. Each round draws [`ROUND`] allocation requests
//! (untimed), makes them in one **batch** between two counter reads, writes the
//! new objects (untimed, the first touch of their memory), works out which
//! objects die this round (untimed), and frees those in a second batch. A batch
//! of about a thousand calls takes microseconds, so the ~30 ns of a counter pair
//! is under 1 % of what it times: the mean cost per call is no longer the small
//! difference of two noisy numbers, as it was when every call was timed alone.
//!
//! The objects (the same mix as before):
//! - 30 %: a list/map node (24..64 B) inserted into a node set of at most 4096;
//!   a full set first erases a random node;
//! - 15 %: erase a random node (a free, no allocation);
//! - 25 %: a string of random length (1 B .. 1 KiB, skewed short), short-lived;
//! - 15 %: a vector grown by doubling from 16 B to 16 B..16 KiB: each growth is a
//!   new buffer, the old one dies; one in ten vectors lives long;
//! - 15 %: an object of 16..256 B; one in five lives long (a pool of at most
//!   4096, a full pool frees a random member), the rest are short-lived.
//!
//! Short-lived objects pass through a FIFO of [`RING`] entries. The live set
//! stops growing once the node set and the long-lived pool are full:
//! - **growth** is everything up to that point, from an empty heap: the
//!   allocator takes fresh memory from the kernel and first-touch page faults
//!   land in its calls; reported on its own, with the faults counted;
//! - **warm** is the next `ops` allocations: the steady state the headline
//!   figures describe.
//!
//! In the warm phase one round in [`TAIL_EVERY`] times every call on its own
//! with the counter (overhead subtracted), as HeapPerf did, for the tail
//! percentiles; those rounds are left out of the batch means. A batch during
//! which the thread was preempted (its involuntary context switches went up)
//! is not counted in the means either: its time is another thread's. Voluntary
//! switches are kept, since a thread that sleeps on an allocator's lock is part
//! of what that allocator costs.

use super::alloc::ThreadHeap;
use super::timer;
use hdrhistogram::Histogram;

const NODES: usize = 4096;
const RING: usize = 64;
const LONG: usize = 4096;
/// Allocation requests per round (one timed batch).
pub const ROUND: usize = 1024;
/// In the warm phase, one round in this many is timed call by call.
pub const TAIL_EVERY: u64 = 4;
/// The warm phase is cut into this many blocks of rounds; a process's figure is
/// the lowest of the blocks' mean costs. A disturbance of the host (steal time,
/// an interrupt storm, a neighbour's burst) only ever adds time, so the lowest
/// block mean is the estimate least moved by it (Chen and Revels, "Robust
/// benchmarking in noisy environments", 2016), while each block's mean still
/// carries every one of its calls' cost, slow ones included.
pub const BLOCKS: usize = 9;
/// Rounds past this many in growth end it anyway (a safety net: the pools fill
/// after about 150 rounds with the mix above).
const GROWTH_MAX_ROUNDS: u64 = 10_000;

/// The project's SplitMix64 (record::stats::rng): tiny, seedable, and the
/// same on every platform.
pub(crate) struct Rng(pub(crate) record::stats::rng::SplitMix64);
impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(record::stats::rng::SplitMix64(seed))
    }
    #[inline(always)]
    pub(crate) fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    #[inline(always)]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// What becomes of an object after its round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Node,
    Short,
    Long,
    /// A vector's outgrown buffer: dies in the same round.
    Outgrown,
}

/// Counts for one phase (growth or warm) of one thread.
#[derive(Debug, Clone, Default)]
pub struct PhaseStats {
    /// Calls in the batches that count towards the means.
    pub allocs: u64,
    pub frees: u64,
    /// Their summed time, counter ticks (one counter pair per batch, its
    /// overhead subtracted).
    pub alloc_ticks: u64,
    pub free_ticks: u64,
    /// Every timed allocation batch's calls and ticks, preempted ones
    /// included: HeapPerf's measure (a clock read before and after the calls,
    /// summed per thread: a preemption inside the calls counts, one between
    /// them does not), which the study's findings are judged on.
    pub allocs_all: u64,
    pub alloc_ticks_all: u64,
    /// Batches timed, and those left out because the thread was preempted.
    pub batches: u64,
    pub batches_preempted: u64,
    /// Minor page faults of this thread during the phase.
    pub minor_faults: u64,
    /// Warm phase only: (alloc ticks, allocs, free ticks, frees) per block.
    pub blocks: Vec<[u64; 4]>,
}

/// One thread's account.
pub struct ThreadStats {
    pub growth: PhaseStats,
    pub warm: PhaseStats,
    /// Every allocation and free the script made (all phases, all rounds).
    pub allocs_total: u64,
    pub frees_total: u64,
    pub bytes: u64,
    /// Wall time of the warm phase, and of the whole script.
    pub warm_wall_ns: u64,
    pub wall_ns: u64,
    /// Per-call times of the tail rounds, ticks (overhead subtracted).
    pub alloc_hist: Histogram<u64>,
    pub free_hist: Histogram<u64>,
}

/// The thread's involuntary and voluntary context switches and minor faults.
fn thread_usage() -> (u64, u64) {
    let u = workloads::usage::thread();
    (u.nivcsw, u.minflt)
}

#[inline(always)]
fn write(p: *mut u8, len: usize, v: u8) {
    // SAFETY: p..p+len was just allocated.
    unsafe { std::ptr::write_bytes(p, v, len) }
}

struct State {
    rng: Rng,
    nodes: Vec<*mut u8>,
    ring: Vec<*mut u8>,
    ring_at: usize,
    long: Vec<*mut u8>,
}

impl State {
    fn full(&self) -> bool {
        self.nodes.len() == NODES && self.long.len() == LONG
    }
}

/// Draws one round: the sizes and fates of `ROUND` allocations, and the frees
/// of existing objects the round's erase steps pick (`erased`).
fn draw(st: &mut State, sizes: &mut Vec<usize>, fates: &mut Vec<Fate>, erased: &mut usize) {
    sizes.clear();
    fates.clear();
    *erased = 0;
    while sizes.len() < ROUND {
        let r = st.rng.below(100);
        if r < 30 {
            sizes.push(24 + st.rng.below(41) as usize);
            fates.push(Fate::Node);
        } else if r < 45 {
            *erased += 1;
        } else if r < 70 {
            let scale = 16u64 << st.rng.below(7);
            sizes.push(1 + st.rng.below(scale) as usize);
            fates.push(Fate::Short);
        } else if r < 85 {
            let target = 16usize << st.rng.below(11);
            let mut cap = 16usize;
            while cap < target && sizes.len() + 1 < ROUND {
                sizes.push(cap);
                fates.push(Fate::Outgrown);
                cap *= 2;
            }
            sizes.push(cap);
            fates.push(if st.rng.below(10) == 0 { Fate::Long } else { Fate::Short });
        } else {
            sizes.push(16 + st.rng.below(241) as usize);
            fates.push(if st.rng.below(5) == 0 { Fate::Long } else { Fate::Short });
        }
    }
}

/// Places the round's new objects (already written) and lists what dies.
fn settle(st: &mut State, ptrs: &[*mut u8], sizes: &[usize], fates: &[Fate], erased: usize, dying: &mut Vec<*mut u8>) {
    dying.clear();
    for _ in 0..erased {
        if !st.nodes.is_empty() {
            let i = st.rng.below(st.nodes.len() as u64) as usize;
            dying.push(st.nodes.swap_remove(i));
        }
    }
    let mut prev: Option<(*mut u8, usize)> = None;
    for ((&p, &size), &fate) in ptrs.iter().zip(sizes).zip(fates) {
        // A grown vector copies its old buffer into the new one.
        if let Some((old, cap)) = prev.take() {
            // SAFETY: the new buffer is twice the old one; they do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(old, p, cap) };
        }
        match fate {
            Fate::Node => {
                write(p, 16, 1);
                if st.nodes.len() == NODES {
                    let i = st.rng.below(NODES as u64) as usize;
                    dying.push(st.nodes.swap_remove(i));
                }
                st.nodes.push(p);
            }
            Fate::Outgrown => {
                write(p, size, 2);
                prev = Some((p, size));
                dying.push(p);
            }
            Fate::Short => {
                write(p, size.min(1024), 3);
                let old = std::mem::replace(&mut st.ring[st.ring_at], p);
                st.ring_at = (st.ring_at + 1) % RING;
                if !old.is_null() {
                    dying.push(old);
                }
            }
            Fate::Long => {
                write(p, size.min(1024), 4);
                if st.long.len() == LONG {
                    let i = st.rng.below(LONG as u64) as usize;
                    dying.push(std::mem::replace(&mut st.long[i], p));
                } else {
                    st.long.push(p);
                }
            }
        }
    }
}

/// How a round is timed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timing {
    Batch,
    PerCall,
}

/// Runs the script: growth until the live set is full, then `ops` warm
/// allocations. `start` is called just before the first timed call (after the
/// bookkeeping is allocated) so that threads can start together.
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
    let mut s = ThreadStats {
        growth: PhaseStats::default(),
        warm: PhaseStats::default(),
        allocs_total: 0,
        frees_total: 0,
        bytes: 0,
        warm_wall_ns: 0,
        wall_ns: 0,
        alloc_hist: hist(),
        free_hist: hist(),
    };
    let mut st = State {
        rng: Rng::new(seed),
        nodes: Vec::with_capacity(NODES),
        ring: vec![std::ptr::null_mut(); RING],
        ring_at: 0,
        long: Vec::with_capacity(LONG),
    };
    let mut sizes: Vec<usize> = Vec::with_capacity(ROUND);
    let mut fates: Vec<Fate> = Vec::with_capacity(ROUND);
    let mut ptrs: Vec<*mut u8> = vec![std::ptr::null_mut(); ROUND];
    let mut dying: Vec<*mut u8> = Vec::with_capacity(4 * ROUND);
    let mut erased = 0usize;
    start();
    let t0 = timer::mono_ns();
    let (_, f0) = thread_usage();
    let mut rounds = 0u64;
    let mut warm_from: Option<(u64, u64, u64)> = None; // (round, wall ns, faults)
    let mut warm_allocs = 0u64;
    let warm_rounds = ops.div_ceil(ROUND as u64).max(1);
    s.warm.blocks = vec![[0; 4]; BLOCKS];
    loop {
        let warm = warm_from.is_some();
        if warm && warm_allocs >= ops {
            break;
        }
        draw(&mut st, &mut sizes, &mut fates, &mut erased);
        let n = sizes.len();
        let timing = match warm_from {
            Some((r0, _, _)) if (rounds - r0) % TAIL_EVERY == TAIL_EVERY - 1 => Timing::PerCall,
            _ => Timing::Batch,
        };
        let block =
            warm_from.map(|(r0, _, _)| (((rounds - r0) * BLOCKS as u64 / warm_rounds) as usize).min(BLOCKS - 1));
        let phase = if warm { &mut s.warm } else { &mut s.growth };
        let clock = Clock { timing, block, overhead };
        alloc_batch(h, &mut ptrs[..n], &sizes, clock, phase, &mut s.alloc_hist);
        if let Some(i) = ptrs[..n].iter().position(|p| p.is_null()) {
            return Err(format!(
                "allocation of {} bytes failed after {} allocations",
                sizes[i],
                s.allocs_total + i as u64
            ));
        }
        s.allocs_total += n as u64;
        s.bytes += sizes.iter().map(|&x| x as u64).sum::<u64>();
        if warm {
            warm_allocs += n as u64;
        }
        settle(&mut st, &ptrs[..n], &sizes, &fates, erased, &mut dying);
        let m = dying.len();
        let phase = if warm { &mut s.warm } else { &mut s.growth };
        free_batch(h, &dying, clock, phase, &mut s.free_hist);
        s.frees_total += m as u64;
        rounds += 1;
        if warm_from.is_none() && (st.full() || rounds >= GROWTH_MAX_ROUNDS) {
            let (_, f) = thread_usage();
            s.growth.minor_faults = f - f0;
            warm_from = Some((rounds, timer::mono_ns(), f));
        }
    }
    let (_, f1) = thread_usage();
    let now = timer::mono_ns();
    if let Some((_, w0, wf)) = warm_from {
        s.warm_wall_ns = now - w0;
        s.warm.minor_faults = f1 - wf;
    }
    // Everything still live is freed (untimed), so every allocation has its free.
    let live: Vec<*mut u8> =
        st.nodes.drain(..).chain(st.ring.drain(..).filter(|p| !p.is_null())).chain(st.long.drain(..)).collect();
    for p in live {
        // SAFETY: each live object is freed once.
        unsafe { h.free(p) };
        s.frees_total += 1;
    }
    s.wall_ns = timer::mono_ns() - t0;
    Ok(s)
}

/// How a round's batches are timed: as a whole (the means) or per call (the
/// histograms), into which block of the warm phase, less the timer's overhead.
#[derive(Clone, Copy)]
struct Clock {
    timing: Timing,
    block: Option<usize>,
    overhead: u64,
}

impl Clock {
    /// Counts a timed batch of `n` calls into `phase`: `k` is 0 for the
    /// allocations, 2 for the frees (their columns in a block). A batch during
    /// which the thread was switched out counts as preempted, not as time.
    fn count(self, phase: &mut PhaseStats, undisturbed: bool, ticks: u64, n: usize, k: usize) {
        phase.batches += 1;
        if k == 0 {
            phase.allocs_all += n as u64;
            phase.alloc_ticks_all += ticks.saturating_sub(self.overhead);
        }
        if !undisturbed {
            phase.batches_preempted += 1;
            return;
        }
        let t = ticks.saturating_sub(self.overhead);
        if k == 0 {
            phase.allocs += n as u64;
            phase.alloc_ticks += t;
        } else {
            phase.frees += n as u64;
            phase.free_ticks += t;
        }
        if let Some(b) = self.block {
            phase.blocks[b][k] += t;
            phase.blocks[b][k + 1] += n as u64;
        }
    }
}

/// The allocation batch: one block per size, into `ptrs`.
#[inline(always)]
fn alloc_batch<H: ThreadHeap>(
    h: &mut H,
    ptrs: &mut [*mut u8],
    sizes: &[usize],
    c: Clock,
    phase: &mut PhaseStats,
    hist: &mut Histogram<u64>,
) {
    let (sw0, _) = thread_usage();
    if c.timing == Timing::Batch {
        let a = timer::start();
        for (p, &size) in ptrs.iter_mut().zip(sizes) {
            // SAFETY: freed later, through the same heap.
            *p = unsafe { h.alloc(size) };
        }
        let b = timer::stop();
        let (sw1, _) = thread_usage();
        c.count(phase, sw1 == sw0, b.saturating_sub(a), ptrs.len(), 0);
    } else {
        for (p, &size) in ptrs.iter_mut().zip(sizes) {
            let a = timer::start();
            // SAFETY: as above.
            *p = unsafe { h.alloc(size) };
            let b = timer::stop();
            hist.saturating_record(b.saturating_sub(a).saturating_sub(c.overhead).max(1));
        }
    }
}

/// The free batch: every pointer in `dying`, once.
#[inline(always)]
fn free_batch<H: ThreadHeap>(
    h: &mut H,
    dying: &[*mut u8],
    c: Clock,
    phase: &mut PhaseStats,
    hist: &mut Histogram<u64>,
) {
    let (sw0, _) = thread_usage();
    if c.timing == Timing::Batch {
        let a = timer::start();
        for &p in dying {
            // SAFETY: every pointer in `dying` came from h.alloc and is freed once.
            unsafe { h.free(p) };
        }
        let b = timer::stop();
        let (sw1, _) = thread_usage();
        c.count(phase, sw1 == sw0, b.saturating_sub(a), dying.len(), 2);
    } else {
        for &p in dying {
            let a = timer::start();
            // SAFETY: as above.
            unsafe { h.free(p) };
            let b = timer::stop();
            hist.saturating_record(b.saturating_sub(a).saturating_sub(c.overhead).max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::work::alloc::Libc;

    #[test]
    fn every_allocation_is_freed_and_the_phases_add_up() {
        let c = crate::heap::work::timer::calibrate(&mut probe::Probe::default(), 30, 2000);
        let s = run(&mut Libc, 50_000, 7, c.overhead_ticks, || {}).unwrap();
        assert_eq!(s.frees_total, s.allocs_total, "every allocation has its free");
        // The warm phase made at least `ops` allocations, in whole rounds.
        let warm_rounds = s.warm.batches / 2 + s.alloc_hist.len() / ROUND as u64;
        assert!(warm_rounds * ROUND as u64 >= 50_000, "{warm_rounds} warm rounds");
        // Growth ended because the pools filled, long before the safety net.
        assert!(s.growth.batches > 0 && s.growth.batches / 2 < GROWTH_MAX_ROUNDS);
        // A quarter of the warm rounds are the per-call tail rounds.
        let tail_rounds = s.alloc_hist.len() / ROUND as u64;
        assert!(tail_rounds >= 1 && tail_rounds * 3 <= s.warm.batches / 2 + 1, "{tail_rounds} tail rounds");
        // Timed time fits in wall time.
        let timed_ns = (s.warm.alloc_ticks + s.warm.free_ticks) as f64 * c.ns_per_tick;
        assert!(
            timed_ns > 0.0 && timed_ns <= s.warm_wall_ns as f64,
            "timed {timed_ns} ns, warm wall {} ns",
            s.warm_wall_ns
        );
        // Growth takes fresh memory from the kernel: it faults; a warm heap
        // reuses what it has, so it faults far less per allocation.
        assert!(s.growth.minor_faults > 0, "growth made no page faults");
    }

    #[test]
    fn the_script_is_the_same_for_the_same_seed() {
        let a = run(&mut Libc, 20_000, 42, 0, || {}).unwrap();
        let b = run(&mut Libc, 20_000, 42, 0, || {}).unwrap();
        let c = run(&mut Libc, 20_000, 43, 0, || {}).unwrap();
        assert_eq!((a.bytes, a.frees_total), (b.bytes, b.frees_total));
        assert_ne!(a.bytes, c.bytes);
    }

    #[test]
    fn a_batch_is_long_enough_for_the_timer_to_be_under_one_percent() {
        // The guard of the method: ~30 ns of counter pair against a
        // batch of ROUND calls of at least ~3 ns each.
        let c = crate::heap::work::timer::calibrate(&mut probe::Probe::default(), 30, 2000);
        let s = run(&mut Libc, 20_000, 1, c.overhead_ticks, || {}).unwrap();
        let per_batch_ticks = s.warm.alloc_ticks as f64 / (s.warm.batches / 2).max(1) as f64;
        assert!(
            (c.overhead_ticks as f64) < 0.01 * per_batch_ticks,
            "overhead {} ticks against {per_batch_ticks} ticks per batch",
            c.overhead_ticks
        );
    }
}
