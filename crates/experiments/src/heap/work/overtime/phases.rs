//! The worker side of `heap --over-time`: threads grow a live set, churn it,
//! free 90 % of it (a scattered 10 % survives) and go quiet, while a sampler
//! thread reads the process's anonymous RSS (and its cgroup's charge).
//!
//! The phases are fenced by one barrier that the threads and the main thread
//! all pass, so every phase boundary is one instant:
//!
//! | wait | then |
//! | --- | --- |
//! | 1 | grow: each thread allocates (and writes) objects until it holds live ÷ threads |
//! | 2 | churn: free a random object, allocate to the target again, until told to stop |
//! | 3 | (the main thread reads RSS before shrink) |
//! | 4 | shrink: free each object but a random tenth |
//! | 5 | (main: malloc_trim or mi_collect where the arm calls it, then RSS) idle: nobody calls the allocator |
//! | 5a, 5b | with --pressure only: (main: the parent squeezes the cgroup) regrow to the live size |
//! | 6 | the survivors are freed and the threads end |
//!
//! The objects' table lives in mmap'd memory outside every allocator and is
//! written before the baseline is read, so heap RSS is the allocator's alone.

use super::{Pattern, Sample, Spec, SqueezeAsk, Squeezed};
use probe::pid::Statm;
use crate::heap::work::alloc::{Je, Libc, MiDefault, ThreadHeap};
use crate::heap::work::script::Rng;
use std::cell::UnsafeCell;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use workloads::mm::Mapping;

/// Allocations per Larson round, after which the threads pass their tables on.
const LARSON_ROUND: u64 = 10_000;
/// Entries in a cross-thread hand-off ring.
const RING: usize = 4096;

#[derive(Clone, Copy)]
#[repr(C)]
struct Obj {
    p: usize,
    n: usize,
}

/// One thread's objects: a table in its own mapping.
struct Table {
    mem: Mapping,
    cap: usize,
    len: usize,
    live: u64,
}

impl Table {
    fn new(cap: usize) -> Result<Table, String> {
        let mut mem = Mapping::anon(cap * std::mem::size_of::<Obj>(), 0)
            .map_err(|e| format!("mapping a table of {cap} objects: {e}"))?;
        // Written now, so that the table is in the baseline and not in heap RSS.
        mem.as_mut_slice().fill(0);
        Ok(Table { mem, cap, len: 0, live: 0 })
    }
    fn slots(&mut self) -> &mut [Obj] {
        // SAFETY: the mapping holds cap Objs (plain integers, any bytes valid),
        // is page-aligned, and is borrowed uniquely through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.mem.ptr.cast::<Obj>(), self.cap) }
    }
    fn push(&mut self, o: Obj) -> Result<(), String> {
        if self.len == self.cap {
            return Err(format!("the object table ({} entries) is full", self.cap));
        }
        let at = self.len;
        self.slots()[at] = o;
        self.len += 1;
        self.live += o.n as u64;
        Ok(())
    }
    fn take(&mut self, k: usize) -> Obj {
        let last = self.len - 1;
        let s = self.slots();
        let o = s[k];
        s[k] = s[last];
        self.len -= 1;
        self.live -= o.n as u64;
        o
    }
}

/// A table that threads pass between them: each is used by one thread at a
/// time, and a barrier separates one user from the next.
struct Shared(UnsafeCell<Table>);
// SAFETY: see the type's comment: access is exclusive between barriers.
unsafe impl Sync for Shared {}

/// A single-producer, single-consumer ring of objects handed to another thread.
struct Ring {
    buf: Mapping,
    head: AtomicUsize,
    tail: AtomicUsize,
}
// SAFETY: one producer writes slots before publishing them with `tail`
// (release), one consumer reads them after `tail` (acquire) and frees them
// with `head` (release), which the producer reads (acquire) before reuse.
unsafe impl Sync for Ring {}

impl Ring {
    fn new() -> Result<Ring, String> {
        let mut buf = Mapping::anon(RING * std::mem::size_of::<Obj>(), 0).map_err(|e| format!("ring: {e}"))?;
        buf.as_mut_slice().fill(0);
        Ok(Ring { buf, head: AtomicUsize::new(0), tail: AtomicUsize::new(0) })
    }
    fn slot(&self, i: usize) -> *mut Obj {
        // SAFETY: i % RING is inside the mapping of RING Objs.
        unsafe { self.buf.ptr.cast::<Obj>().add(i % RING) }
    }
    fn push(&self, o: Obj) -> bool {
        let t = self.tail.load(Ordering::Relaxed);
        if t - self.head.load(Ordering::Acquire) == RING {
            return false;
        }
        // SAFETY: the slot is not between head and tail, so the consumer does not read it.
        unsafe { self.slot(t).write(o) };
        self.tail.store(t + 1, Ordering::Release);
        true
    }
    fn pop(&self) -> Option<Obj> {
        let h = self.head.load(Ordering::Relaxed);
        if h == self.tail.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the producer published this slot (tail > h) and does not reuse it until head moves.
        let o = unsafe { self.slot(h).read() };
        self.head.store(h + 1, Ordering::Release);
        Some(o)
    }
}

struct Ctx {
    threads: usize,
    pattern: Pattern,
    /// Live bytes per thread.
    target: u64,
    seed: u64,
    tables: Vec<Shared>,
    rings: Vec<Ring>,
    phase: Barrier,
    round: Barrier,
    stop: AtomicBool,
    round_stop: AtomicBool,
    failed: AtomicBool,
    /// Bytes kept by shrink, all threads (the squeeze's limit needs them).
    kept: AtomicU64,
    /// Whether the regrow phase runs (--pressure).
    regrow: bool,
    /// Shrink frees an object when a draw below 1000 falls under this
    /// (900 by default: a scattered tenth survives).
    frees_permille: u64,
}

/// What one thread did.
#[derive(Default)]
struct Out {
    ops: u64,
    freed: u64,
    kept: u64,
    live: u64,
    err: Option<String>,
}

fn alloc_obj<H: ThreadHeap>(h: &mut H, n: usize, fill: u8) -> Result<Obj, String> {
    // SAFETY: n > 0; the block is freed by this allocator's free (free_obj).
    let p = unsafe { h.alloc(n) };
    if p.is_null() {
        return Err(format!("the allocator returned no memory for {n} bytes"));
    }
    // Every page of the block is touched (so that it is resident, as a
    // program's data would be), small blocks written whole.
    let page = 4096;
    if n <= page {
        // SAFETY: p..p+n was just allocated.
        unsafe { std::ptr::write_bytes(p, fill, n) };
    } else {
        for off in (0..n).step_by(page).chain(std::iter::once(n - 1)) {
            // SAFETY: off < n, inside the block just allocated.
            unsafe { p.add(off).write(fill) };
        }
    }
    Ok(Obj { p: p as usize, n })
}

fn free_obj<H: ThreadHeap>(h: &mut H, o: Obj) {
    // SAFETY: o.p came from this allocator kind and is freed once (its table entry is gone).
    unsafe { h.free(o.p as *mut u8) }
}

impl Ctx {
    /// The table thread `i` uses in Larson round `round` (its own elsewhere).
    #[allow(clippy::mut_from_ref)]
    fn table(&self, i: usize, round: u64) -> &mut Table {
        let k = (i + round as usize) % self.threads;
        // SAFETY: in every round the threads use distinct tables (a rotation),
        // and rounds are separated by barriers (see Shared).
        unsafe { &mut *self.tables[k].0.get() }
    }

    /// Allocates into `t` until it holds the target; returns the allocations made.
    fn fill<H: ThreadHeap>(&self, h: &mut H, t: &mut Table, rng: &mut Rng) -> Result<u64, String> {
        let mut n = 0;
        while t.live < self.target {
            let o = alloc_obj(h, self.pattern.size(rng), n as u8 | 1)?;
            t.push(o)?;
            n += 1;
        }
        Ok(n)
    }

    /// One churn step: a random object dies (freed here, or by the next thread
    /// for cross-thread), then the table is filled again.
    fn step<H: ThreadHeap>(&self, i: usize, h: &mut H, t: &mut Table, rng: &mut Rng) -> Result<u64, String> {
        if t.len > 0 {
            let o = t.take(rng.below(t.len as u64) as usize);
            if self.pattern == Pattern::CrossThread {
                if !self.rings[(i + 1) % self.threads].push(o) {
                    free_obj(h, o);
                }
            } else {
                free_obj(h, o);
            }
        }
        if self.pattern == Pattern::CrossThread {
            while let Some(o) = self.rings[i].pop() {
                free_obj(h, o);
            }
        }
        self.fill(h, t, rng)
    }

    fn churn<H: ThreadHeap>(&self, i: usize, h: &mut H, rng: &mut Rng) -> Result<(u64, u64), String> {
        let mut ops = 0;
        if self.pattern == Pattern::Larson {
            let mut round = 0u64;
            loop {
                let t = self.table(i, round);
                let start = ops;
                while ops - start < LARSON_ROUND {
                    ops += self.step(i, h, t, rng)?.max(1);
                }
                if self.round.wait().is_leader() {
                    self.round_stop.store(self.stop.load(Ordering::Acquire), Ordering::Release);
                }
                self.round.wait();
                if self.round_stop.load(Ordering::Acquire) {
                    return Ok((ops, round));
                }
                round += 1;
            }
        }
        let t = self.table(i, 0);
        let mut k = 0u64;
        loop {
            if k % 256 == 0 && self.stop.load(Ordering::Acquire) {
                return Ok((ops, 0));
            }
            ops += self.step(i, h, t, rng)?;
            k += 1;
        }
    }

    /// The thread's life. A failure stops every thread's churn and is
    /// reported; the failed thread still passes every barrier, so that nobody
    /// waits for it forever, and frees nothing more (its table may be another's).
    fn thread<H: ThreadHeap>(&self, i: usize, mut h: H) -> Out {
        let mut out = Out::default();
        let mut rng = Rng::new(self.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        self.phase.wait(); // 1: grow
        let grown = self.fill(&mut h, self.table(i, 0), &mut rng).map(|_| ());
        self.phase.wait(); // 2: churn
        let churned = grown.and_then(|_| self.churn(i, &mut h, &mut rng));
        if churned.is_err() {
            self.failed.store(true, Ordering::Release);
            self.stop.store(true, Ordering::Release);
            if self.pattern == Pattern::Larson {
                // The others stop at their next round's barriers; pass them.
                loop {
                    self.round.wait();
                    self.round.wait();
                    if self.round_stop.load(Ordering::Acquire) {
                        break;
                    }
                }
            }
        }
        self.phase.wait(); // 3: churn over
        self.phase.wait(); // 4: shrink
        let round = match churned {
            Ok((ops, round)) => {
                out.ops = ops;
                round
            }
            Err(e) => {
                out.err = Some(e);
                self.phase.wait(); // 5
                if self.regrow {
                    self.phase.wait(); // 5a
                    self.phase.wait(); // 5b
                }
                self.phase.wait(); // 6
                return out;
            }
        };
        while let Some(o) = self.rings.get(i).and_then(Ring::pop) {
            free_obj(&mut h, o);
        }
        let t = self.table(i, round);
        out.live = t.live;
        let mut j = 0;
        for k in 0..t.len {
            let o = t.slots()[k];
            // Kept below 1000 − freed: at 900 freed, exactly the objects
            // the rule before --shrink-frees kept (below(10) == 0).
            if rng.below(1000) < 1000 - self.frees_permille {
                t.slots()[j] = o;
                j += 1;
                out.kept += o.n as u64;
            } else {
                free_obj(&mut h, o);
                out.freed += o.n as u64;
            }
        }
        t.len = j;
        t.live = out.kept;
        self.kept.fetch_add(out.kept, Ordering::AcqRel);
        self.phase.wait(); // 5: idle
        if self.regrow {
            self.phase.wait(); // 5a: regrow
            if let Err(e) = self.fill(&mut h, t, &mut rng) {
                out.err = Some(e);
            }
            self.phase.wait(); // 5b
        }
        self.phase.wait(); // 6: the end
        while t.len > 0 {
            let o = t.take(t.len - 1);
            free_obj(&mut h, o);
        }
        out
    }
}

/// Why an arm ends when its statm cannot be read.
const RSS_UNREAD: &str = "/proc/self/statm could not be read: the anonymous RSS is unknown";

/// The anonymous RSS, or the error that ends the arm: a reading that failed
/// is unknown, never 0 (it would read as everything given back).
fn rss_now(statm: &Statm) -> Result<u64, String> {
    statm.anon_bytes().ok_or_else(|| RSS_UNREAD.to_string())
}

/// Reads up to buf.len() bytes of a small file without allocating.
fn read_small(path: &std::ffi::CStr, buf: &mut [u8]) -> usize {
    // SAFETY: path is NUL-terminated; the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return 0;
    }
    // SAFETY: buf is writable for its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    n.max(0) as usize
}

fn charge(path: Option<&std::ffi::CStr>) -> Option<u64> {
    let mut buf = [0u8; 64];
    let n = read_small(path?, &mut buf);
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

/// What the main thread saw, for the parent to fold (super::fold).
pub struct Seen {
    pub baseline: u64,
    pub samples: Vec<Sample>,
    /// Grow start, and the ends of grow, churn, shrink (after any trim call) and idle, ns.
    pub marks: [u64; 5],
    pub before_shrink: u64,
    pub after_shrink: Sample,
    pub after_idle: Sample,
    pub trim_ms: Option<f64>,
    /// With --pressure: what the squeeze and the regrow after it did.
    pub pressure: Option<SeenPressure>,
    pub ops: u64,
    pub freed: u64,
    pub kept: u64,
    pub live: u64,
}

/// The squeeze (as the parent reports it) and the regrow.
pub struct SeenPressure {
    pub squeezed: Squeezed,
    pub after_squeeze_rss: u64,
    pub regrow_ns: u64,
    pub regrow_major_faults: u64,
    pub after_regrow_rss: u64,
    /// When the regrow ended, ns.
    pub regrow_end_ns: u64,
}

/// Asks the parent to squeeze the worker's cgroup, and waits for its answer.
pub type SqueezeHook<'a> = &'a mut dyn FnMut(&SqueezeAsk) -> Result<Squeezed, String>;

fn now_ns() -> u64 {
    probe::sample::monotonic_ns()
}

/// The threads' shared state for `spec`: their tables (room for twice
/// their share of the live size), the rings of cross-thread frees, barriers.
fn context(spec: &Spec) -> Result<Ctx, String> {
    let t = spec.threads as usize;
    let target = (spec.live_bytes / t as u64).max(1);
    let cap = (2.0 * target as f64 / spec.pattern.mean_size()) as usize + 4096;
    let tables = (0..t).map(|_| Table::new(cap).map(|x| Shared(UnsafeCell::new(x)))).collect::<Result<_, _>>()?;
    let rings = if spec.pattern == Pattern::CrossThread {
        (0..t).map(|_| Ring::new()).collect::<Result<_, _>>()?
    } else {
        vec![]
    };
    Ok(Ctx {
        threads: t,
        pattern: spec.pattern,
        target,
        seed: spec.seed,
        tables,
        rings,
        phase: Barrier::new(t + 1),
        round: Barrier::new(t),
        stop: AtomicBool::new(false),
        round_stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        kept: AtomicU64::new(0),
        regrow: spec.pressure,
        frees_permille: (spec.shrink_frees.clamp(0.0, 1.0) * 1000.0).round() as u64,
    })
}

/// Runs the phases with heap `H` and returns what was seen; the process's
/// anonymous RSS is read from `statm` (opened through the worker's probe).
fn run_with<H: ThreadHeap + Copy + Send>(
    spec: &Spec,
    heap: H,
    statm: &Statm,
    squeeze: SqueezeHook,
) -> Result<Seen, String> {
    let t = spec.threads as usize;
    let ctx = context(spec)?;
    let charge_path =
        spec.charge_file.as_ref().and_then(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).ok());
    let sampling = AtomicBool::new(true);
    let every = Duration::from_millis(spec.sample_ms.max(1));
    // Bounded whatever the spec says (the command refuses more: heap::cmd).
    let expect = (spec.churn_ms.saturating_add(spec.idle_ms).saturating_add(120_000) / spec.sample_ms.max(1))
        .min(crate::heap::cmd::MAX_OVER_TIME_SAMPLES);
    std::thread::scope(|s| {
        let sampler = std::thread::Builder::new()
            .name("sampler".into())
            .spawn_scoped(s, || {
                let mut v: Vec<Sample> = Vec::with_capacity(expect as usize);
                while sampling.load(Ordering::Acquire) {
                    if v.len() < v.capacity() {
                        // A reading that failed is left out (a gap in the
                        // series), never a 0.
                        if let Some(rss) = statm.anon_bytes() {
                            v.push(Sample { t_ns: now_ns(), rss, charge: charge(charge_path.as_deref()) });
                        }
                    }
                    std::thread::sleep(every);
                }
                v
            })
            .map_err(|e| format!("starting the sampler: {e}"))?;
        let workers: Vec<_> = (0..t)
            .map(|i| {
                let ctx = &ctx;
                std::thread::Builder::new()
                    .name(format!("heap-{i}"))
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || ctx.thread(i, heap))
                    .map_err(|e| format!("starting thread {i}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let read = || rss_now(statm).map(|rss| Sample { t_ns: now_ns(), rss, charge: charge(charge_path.as_deref()) });
        let baseline = rss_now(statm)?;
        let base_charge = charge(charge_path.as_deref());
        let mut marks = [0u64; 5];
        ctx.phase.wait(); // 1
        marks[0] = now_ns();
        ctx.phase.wait(); // 2
        marks[1] = now_ns();
        let until = Instant::now() + Duration::from_millis(spec.churn_ms);
        while Instant::now() < until && !ctx.failed.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5).min(until.saturating_duration_since(Instant::now())));
        }
        ctx.stop.store(true, Ordering::Release);
        ctx.phase.wait(); // 3
        marks[2] = now_ns();
        let before_shrink = rss_now(statm)?;
        ctx.phase.wait(); // 4
        ctx.phase.wait(); // 5
        let trim_ms = spec.after_shrink.map(call);
        let after_shrink = read()?;
        marks[3] = after_shrink.t_ns;
        std::thread::sleep(Duration::from_millis(spec.idle_ms));
        let after_idle = read()?;
        marks[4] = after_idle.t_ns;
        let (pressure, squeeze_err) = if spec.pressure {
            let ask =
                SqueezeAsk { base_charge, kept_bytes: ctx.kept.load(Ordering::Acquire), rss_bytes: after_idle.rss };
            let (p, e) = squeeze_and_regrow(&ctx, &ask, statm, squeeze);
            (Some(p), e)
        } else {
            (None, None)
        };
        ctx.phase.wait(); // 6
        let outs: Vec<Out> = workers.into_iter().map(|w| w.join().unwrap_or_default()).collect();
        sampling.store(false, Ordering::Release);
        let samples = sampler.join().map_err(|_| "the sampler panicked".to_string())?;
        if let Some(e) = outs.iter().find_map(|o| o.err.clone()).or(squeeze_err) {
            return Err(e);
        }
        let sum = |f: fn(&Out) -> u64| outs.iter().map(f).sum::<u64>();
        Ok(Seen {
            baseline,
            samples,
            marks,
            before_shrink,
            after_shrink,
            after_idle,
            trim_ms,
            pressure,
            ops: sum(|o| o.ops),
            freed: sum(|o| o.freed),
            kept: sum(|o| o.kept),
            live: sum(|o| o.live),
        })
    })
}

/// The arm's call after shrink; returns its time, ms.
fn call(c: super::Call) -> f64 {
    let t0 = Instant::now();
    match c {
        // SAFETY: malloc_trim takes no pointers; glibc serializes it with its arenas.
        super::Call::MallocTrim => unsafe {
            libc::malloc_trim(0);
        },
        // SAFETY: mi_collect(true) frees what this thread's heap and the abandoned pages hold.
        super::Call::MiCollect => unsafe { libmimalloc_sys::mi_collect(true) },
    }
    t0.elapsed().as_secs_f64() * 1e3
}

/// The main thread's part of the squeeze (the parent does it) and the regrow
/// (barriers 5a and 5b, which the threads pass whatever the squeeze did).
fn squeeze_and_regrow(
    ctx: &Ctx,
    ask: &SqueezeAsk,
    statm: &Statm,
    squeeze: SqueezeHook,
) -> (SeenPressure, Option<String>) {
    let mut err = None;
    let squeezed = squeeze(ask).unwrap_or_else(|e| {
        err = Some(e);
        Squeezed::default()
    });
    let after_squeeze_rss = statm.anon_bytes().unwrap_or_else(|| {
        err.get_or_insert_with(|| RSS_UNREAD.to_string());
        0
    });
    let maj = workloads::usage::process().majflt;
    let t = now_ns();
    ctx.phase.wait(); // 5a
    ctx.phase.wait(); // 5b
    let end = now_ns();
    let p = SeenPressure {
        regrow_end_ns: end,
        squeezed,
        after_squeeze_rss,
        regrow_ns: end - t,
        regrow_major_faults: workloads::usage::process().majflt - maj,
        after_regrow_rss: statm.anon_bytes().unwrap_or_else(|| {
            err.get_or_insert_with(|| RSS_UNREAD.to_string());
            0
        }),
    };
    (p, err)
}

/// Runs the spec with the allocator it names (a preloaded one is plain malloc),
/// reading this process's memory from `statm`.
pub fn run(spec: &Spec, statm: &Statm, squeeze: SqueezeHook) -> Result<Seen, String> {
    if spec.threads == 0 || spec.live_bytes == 0 {
        return Err("heap-time needs threads ≥ 1 and a live size above 0".into());
    }
    match spec.allocator.as_str() {
        "glibc" | "preload" => run_with(spec, Libc, statm, squeeze),
        "mimalloc" => run_with(spec, MiDefault, statm, squeeze),
        "jemalloc" => run_with(spec, Je, statm, squeeze),
        other => Err(format!("heap-time: unknown allocator '{other}'")),
    }
}

/// What the allocator says its settings are, where it can say (the knob
/// arms' check that an environment setting took).
pub fn readback(allocator: &str) -> Option<String> {
    match allocator {
        "mimalloc" => {
            // SAFETY: reading an option (15: purge_delay in mimalloc 3).
            let d = unsafe { libmimalloc_sys::mi_option_get(15) };
            Some(format!("mimalloc purge_delay {d} ms"))
        }
        "jemalloc" => {
            let dirty = je_read::<isize>(c"arenas.dirty_decay_ms")?;
            let muzzy = je_read::<isize>(c"arenas.muzzy_decay_ms")?;
            let bg = je_read::<bool>(c"background_thread")?;
            let na = je_read::<libc::c_uint>(c"opt.narenas")?;
            Some(format!(
                "jemalloc dirty_decay_ms {dirty}, muzzy_decay_ms {muzzy}, background_thread {bg}, narenas {na}"
            ))
        }
        _ => None,
    }
}

fn je_read<T: Copy + Default>(name: &std::ffi::CStr) -> Option<T> {
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>();
    // SAFETY: reading a mallctl whose type is T into v.
    let r = unsafe {
        crate::heap::work::alloc::je_sys::mallctl(name.as_ptr(), (&mut v as *mut T).cast(), &mut len, std::ptr::null_mut(), 0)
    };
    (r == 0 && len == std::mem::size_of::<T>()).then_some(v)
}

/// This process's statm, as a worker opens it through the machine's probe.
#[cfg(test)]
fn own_statm() -> Statm {
    probe::Probe::default().open_statm(None).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(allocator: &str, pattern: Pattern) -> Spec {
        Spec {
            allocator: allocator.into(),
            pattern,
            threads: 2,
            live_bytes: 8 << 20,
            churn_ms: 150,
            idle_ms: 100,
            shrink_frees: 0.9,
            sample_ms: 10,
            seed: 3,
            repeat: 1,
            after_shrink: None,
            charge_file: None,
            pressure: false,
        }
    }

    /// The worker opens its statm through the probe it was given: over a
    /// tree without /proc/self it fails before it allocates anything, with
    /// what it could not open, never a curve of zeros.
    #[test]
    fn the_worker_reads_its_rss_through_its_probe() {
        let empty = tempfile::tempdir().unwrap();
        let argv = sandbox::worker::argv_spec(super::super::WORKER, &spec("glibc", Pattern::Small));
        let mut io = sandbox::worker::child::WorkerIo::over(std::io::empty(), std::io::sink())
            .with_probe(probe::Probe::new(probe::Roots::under(empty.path())));
        let e = super::super::worker_main(&mut io, &argv[2..]).unwrap_err();
        assert!(e.contains("opening its statm"), "{e}");
    }

    /// `--shrink-frees`: none freed keeps every byte live, all freed keeps
    /// none (the two controls of heap's findings), a half keeps about half.
    #[test]
    fn shrink_frees_the_share_it_is_given() {
        for (share, lo, hi) in [(0.0, 1.0, 1.0), (1.0, 0.0, 0.0), (0.5, 0.3, 0.7)] {
            let sp = Spec { shrink_frees: share, ..spec("glibc", Pattern::Small) };
            let s = run(&sp, &own_statm(), &mut |_| Err("no squeeze here".into())).unwrap();
            let kept = s.kept as f64 / s.live as f64;
            assert!(kept >= lo && kept <= hi, "frees {share}: kept {kept} of {} bytes", s.live);
            assert_eq!(s.freed + s.kept, s.live, "frees {share}");
        }
    }

    #[test]
    fn every_pattern_holds_its_live_size_then_keeps_a_tenth() {
        for (a, p) in [
            ("glibc", Pattern::Small),
            ("jemalloc", Pattern::Mixed),
            ("mimalloc", Pattern::CrossThread),
            ("glibc", Pattern::Larson),
        ] {
            let s =
                run(&spec(a, p), &own_statm(), &mut |_| Err("no squeeze here".into())).unwrap_or_else(|e| panic!("{a} {p:?}: {e}"));
            let live = s.live as f64;
            // Each thread fills to its half of 8 MiB and stops past it by one
            // object, of at most 2 MiB (Pattern::size). Which object was last
            // depends on how many churn steps the 150 ms held, that is on the
            // machine's load: a bound of 1.3 × 8 MiB failed under load with a
            // mixed-size object last (issue 42).
            let most = (8u64 << 20) + spec(a, p).threads as u64 * (2 << 20);
            assert!(s.live >= 8 << 20 && s.live <= most, "{a} {p:?}: live {live}, at most {most}");
            assert_eq!(s.freed + s.kept, s.live, "{a} {p:?}");
            let kept = s.kept as f64 / live;
            // A random tenth of the objects, by bytes. Mixed sizes (up to 2 MiB
            // in 8 MiB) are a few dozen objects, whose byte share spreads
            // widely: one 2 MiB object more or less moves it by a quarter.
            let (lo, hi) = if p == Pattern::Mixed { (0.0, 0.7) } else { (0.005, 0.4) };
            assert!(kept > lo && kept < hi, "{a} {p:?}: kept {kept}");
            assert!(s.ops > 100, "{a} {p:?}: {} allocations in churn", s.ops);
            assert!(s.marks.windows(2).all(|w| w[0] <= w[1]), "{:?}", s.marks);
            // The sampler read all along (every 10 ms over at least 250 ms). What
            // the readings say of the heap is tests/heap.rs's to check, in a
            // process of its own: here other tests allocate and free beside it.
            assert!(s.samples.len() >= 10, "{a} {p:?}: {} samples", s.samples.len());
        }
    }

    #[test]
    fn anonymous_rss_sees_a_written_mapping() {
        // Other tests of this process free memory meanwhile: one of three tries
        // must see the whole mapping.
        let seen: Vec<(u64, u64)> = (0..3)
            .map(|_| {
                let before = own_statm().anon_bytes().unwrap();
                let mut m = Mapping::anon(32 << 20, 0).unwrap();
                m.as_mut_slice().fill(1);
                (before, own_statm().anon_bytes().unwrap())
            })
            .collect();
        assert!(seen.iter().any(|&(b, a)| a >= b + (30 << 20)), "{seen:?}");
    }
}

#[cfg(test)]
mod regrow_tests {
    use super::*;

    #[test]
    fn with_pressure_the_hook_is_asked_once_and_the_threads_regrow() {
        let spec = Spec {
            allocator: "jemalloc".into(),
            pattern: Pattern::Larson,
            threads: 2,
            live_bytes: 8 << 20,
            churn_ms: 100,
            idle_ms: 50,
            shrink_frees: 0.9,
            sample_ms: 10,
            seed: 5,
            repeat: 1,
            after_shrink: None,
            charge_file: None,
            pressure: true,
        };
        // Back to the live size: RSS after the regrow is well above after
        // shrink. The RSS is this test process's, whose other tests allocate
        // and free beside it: one of three tries must see it (as
        // anonymous_rss_sees_a_written_mapping does); it failed once in one
        // try under load (issue 42).
        let mut regrown = Vec::new();
        for _ in 0..3 {
            let mut asked = Vec::new();
            let s = run(&spec, &own_statm(), &mut |a| {
                asked.push(a.kept_bytes);
                Ok(Squeezed { limit_bytes: 1, ..Default::default() })
            })
            .unwrap();
            assert_eq!(asked.len(), 1);
            assert_eq!(asked[0], s.kept);
            let p = s.pressure.expect("the regrow ran");
            assert_eq!(p.squeezed.limit_bytes, 1);
            let seen = p.after_regrow_rss > s.after_shrink.rss + (4 << 20) || p.after_regrow_rss > s.before_shrink * 9 / 10;
            regrown.push((s.before_shrink, s.after_shrink.rss, p.after_regrow_rss));
            if seen {
                break;
            }
        }
        assert!(
            regrown.iter().any(|&(before, shrunk, regrow)| regrow > shrunk + (4 << 20) || regrow > before * 9 / 10),
            "(before shrink, after shrink, after regrow) RSS: {regrown:?}"
        );
        // A failing squeeze fails the run, after every thread has passed every barrier.
        let e = run(&spec, &own_statm(), &mut |_| Err("the parent is gone".into())).err().unwrap();
        assert!(e.contains("parent is gone"), "{e}");
    }
}
