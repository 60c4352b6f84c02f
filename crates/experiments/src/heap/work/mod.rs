//! `heap`: how allocators scale with threads, per call.
//!
//! Reproduces the HeapPerf study ("Windows 7 Heap Performance Analysis"): a
//! container-like workload in 1..N threads, every allocation and free timed on
//! its own with the calibrated TSC, averaged over repeats; plus what that study
//! did not show: per-call tail latency (p99, p99.9) and peak memory. Each
//! allocator × heap mode × thread count × repeat runs in a fresh worker process.

pub mod alloc;
pub mod overtime;
pub mod script;
pub mod timer;

use sandbox::worker::Want;
use alloc::{Allocator, ThreadHeap};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::sync::{Arc, Barrier};
use workloads::observe::ExperimentError;

#[derive(Debug, Clone)]
pub struct HeapConfig {
    pub threads: Vec<u32>,
    pub allocators: Vec<Allocator>,
    pub heap_mode: alloc::HeapMode,
    pub workload: alloc::Workload,
    /// Allocations per thread.
    pub ops: u64,
    pub repeat: u32,
    pub seed: u64,
    pub baseline: String,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
}

pub const MAX_THREADS: u32 = 1024;

/// Fresh processes per repeat, each making 1/[`PROCS`] of the warm calls. A
/// process's figure can be off for its whole life (a disturbance of the host
/// that outlasts it, or its address-space layout): on the project's 2-vCPU VM,
/// mimalloc at 2 threads spread 5.2–7.2 ns over the processes of one run. So a
/// repeat's figure is the trimmed mean of its processes' (the highest and the
/// lowest left out), and the processes of a repeat run far apart in time.
pub const PROCS: u32 = 7;

pub use crate::heap::results::{HeapResult, Repeat, Unsupported};

/// The mean of `v` without its lowest and highest fifth (rounded down: one
/// each of 5 to 9 values, none of fewer than 5); NaN values are left out.
pub fn trimmed_mean(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let k = v.len() / 5;
    record::stats::mean(&v[k..v.len() - k])
}

/// One repeat from its processes: the headline means are the processes'
/// trimmed mean ([`trimmed_mean`]), the percentiles their medians, the plain
/// and growth means their means (each made the same number of calls), the
/// maxima their maxima, and the counts their sums.
pub fn merge_repeats(procs: &[Repeat]) -> Repeat {
    let mean = |f: fn(&Repeat) -> f64| {
        let v: Vec<f64> = procs.iter().map(f).collect();
        record::stats::mean(&v).unwrap_or(0.0)
    };
    let median = |f: fn(&Repeat) -> f64| {
        let v: Vec<f64> = procs.iter().map(f).collect();
        record::stats::median(&v).unwrap_or(0.0)
    };
    let max = |f: fn(&Repeat) -> f64| procs.iter().map(f).fold(0.0, f64::max);
    let trim = |f: fn(&Repeat) -> f64| {
        let v: Vec<f64> = procs.iter().map(f).collect();
        trimmed_mean(&v).unwrap_or(f64::NAN)
    };
    let sum = |f: fn(&Repeat) -> u64| procs.iter().map(f).sum::<u64>();
    let umax = |f: fn(&Repeat) -> u64| procs.iter().map(f).max().unwrap_or(0);
    Repeat {
        alloc_ns_mean: trim(|r| r.alloc_ns_mean),
        free_ns_mean: trim(|r| r.free_ns_mean),
        alloc_ns_mean_plain: mean(|r| r.alloc_ns_mean_plain),
        alloc_ns_in_calls: mean(|r| r.alloc_ns_in_calls),
        free_ns_mean_plain: mean(|r| r.free_ns_mean_plain),
        alloc_ns_p50: median(|r| r.alloc_ns_p50),
        alloc_ns_p99: median(|r| r.alloc_ns_p99),
        alloc_ns_p999: median(|r| r.alloc_ns_p999),
        alloc_ns_max: max(|r| r.alloc_ns_max),
        free_ns_p50: median(|r| r.free_ns_p50),
        free_ns_p99: median(|r| r.free_ns_p99),
        free_ns_p999: median(|r| r.free_ns_p999),
        free_ns_max: max(|r| r.free_ns_max),
        growth_alloc_ns_mean: mean(|r| r.growth_alloc_ns_mean),
        growth_free_ns_mean: mean(|r| r.growth_free_ns_mean),
        growth_allocs: sum(|r| r.growth_allocs),
        growth_minor_faults: sum(|r| r.growth_minor_faults),
        warm_minor_faults: sum(|r| r.warm_minor_faults),
        allocs: sum(|r| r.allocs),
        frees: sum(|r| r.frees),
        batches: sum(|r| r.batches),
        batches_preempted: sum(|r| r.batches_preempted),
        peak_rss_bytes: umax(|r| r.peak_rss_bytes),
        baseline_rss_bytes: umax(|r| r.baseline_rss_bytes),
        wall_ms: procs.iter().map(|r| r.wall_ms).sum(),
        timed_fraction_max: max(|r| r.timed_fraction_max),
        timer_share_max: max(|r| r.timer_share_max),
        timer_overhead_ns: mean(|r| r.timer_overhead_ns),
        pinned: procs.iter().all(|r| r.pinned),
        minor_faults: sum(|r| r.minor_faults),
        malloc_provider: procs.iter().find_map(|r| r.malloc_provider.clone()),
        preload_mapped: procs
            .iter()
            .map(|r| r.preload_mapped)
            .collect::<Option<Vec<bool>>>()
            .map(|v| v.iter().all(|&b| b)),
        processes: procs.iter().map(|r| r.processes.max(1)).sum(),
    }
}

/// Processes per repeat for `ops` warm calls per thread: [`PROCS`], or fewer
/// so that each process makes at least [`MIN_PROC_OPS`] (a tiny run is one
/// process per repeat, as it always was).
pub fn procs_for(ops: u64) -> u32 {
    (ops / MIN_PROC_OPS).clamp(1, PROCS as u64) as u32
}

/// The fewest warm calls a process makes when a repeat is split: 8 rounds.
pub const MIN_PROC_OPS: u64 = 8 * script::ROUND as u64;

const TOO_FEW: &str = "too few warm allocations to time a mean (raise --ops)";

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

pub fn validate(cfg: &HeapConfig, p: &mut probe::Probe) -> Result<(), sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    if cfg.threads.is_empty() || cfg.threads.iter().any(|&t| t == 0 || t > MAX_THREADS) {
        return Err(Invalid(format!(
            "--threads {:?}: expected a comma-separated list of counts from 1 to {MAX_THREADS}, e.g. 1,2,4,8",
            cfg.threads
        )));
    }
    if cfg.allocators.is_empty() {
        return Err(Invalid(format!("--allocators is empty: expected {}", alloc::ALLOCATOR_FORMS)));
    }
    for a in &cfg.allocators {
        if let Allocator::Preload(p) = a {
            alloc::check_preload(p).map_err(|e| Invalid(format!("--allocators {e}")))?;
        }
    }
    if cfg.ops == 0 || cfg.repeat == 0 {
        return Err(Invalid("--ops and --repeat must be at least 1".into()));
    }
    let names: Vec<String> = cfg.allocators.iter().map(Allocator::name).collect();
    if !names.contains(&cfg.baseline) {
        return Err(Invalid(format!(
            "--baseline {}: expected one of the allocators run: {}",
            cfg.baseline,
            names.join(", ")
        )));
    }
    if cfg.allocators.iter().all(|a| a.unsupported(cfg.heap_mode).is_some()) {
        let why: Vec<String> = cfg
            .allocators
            .iter()
            .map(|a| format!("{}: {}", a.name(), a.unsupported(cfg.heap_mode).unwrap()))
            .collect();
        return Err(Invalid(format!(
            "--heap-mode {}: no allocator given supports it ({}); shared: glibc, jemalloc; per-thread: mimalloc, jemalloc",
            crate::kit::names::name(&cfg.heap_mode),
            why.join("; ")
        )));
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    // A thread's live set settles near 5 MiB (4096 long-lived objects, a third of
    // them vectors of 3 KiB on average; see script.rs), plus its stack.
    let most = *cfg.threads.iter().max().unwrap() as u64;
    guard.check_plan((most * (8 << 20) + (64 << 20)) as u128, "heap", &meminfo)?;
    Ok(())
}

fn stat_line(h: &Histogram<u64>, ns_per_tick: f64) -> [f64; 4] {
    [
        h.value_at_quantile(0.5) as f64 * ns_per_tick,
        h.value_at_quantile(0.99) as f64 * ns_per_tick,
        h.value_at_quantile(0.999) as f64 * ns_per_tick,
        h.max() as f64 * ns_per_tick,
    ]
}

/// This process's resident memory now, or at its peak (`VmHWM`); an error
/// when /proc/self/status cannot be read (the figure is unknown, not 0).
fn self_rss(p: &mut probe::Probe, peak: bool) -> Result<u64, String> {
    let s = p.pid_status(std::process::id() as i32).ok().flatten();
    s.and_then(|s| if peak { s.vm_hwm } else { s.vm_rss })
        .ok_or_else(|| "the heap worker could not read its own VmRSS and VmHWM (/proc/self/status)".into())
}

fn minflt() -> u64 {
    workloads::usage::process().minflt
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    // SAFETY: c < CPU_SETSIZE, so the bit is inside the set.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to one CPU.
fn pin_to(cpu: usize) -> Result<(), String> {
    // SAFETY: as above; 0 is the calling thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(format!("pinning a thread to CPU {cpu}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Runs `threads` threads of the script, each with a heap from `make`; each
/// thread is pinned to its own CPU when there are no more threads than CPUs.
fn run_threads<H: ThreadHeap, F>(
    threads: u32,
    ops: u64,
    seed: u64,
    overhead: u64,
    make: F,
) -> Result<(Vec<script::ThreadStats>, bool), String>
where
    F: Fn(usize) -> Result<H, String> + Sync,
{
    let cpus = allowed_cpus();
    let pin = !cpus.is_empty() && threads as usize <= cpus.len();
    let barrier = Arc::new(Barrier::new(threads as usize));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as usize)
            .map(|i| {
                let b = barrier.clone();
                let make = &make;
                let cpu = pin.then(|| cpus[i]);
                std::thread::Builder::new()
                    .name(format!("heap-{i}"))
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || {
                        let heap = cpu.map(pin_to).transpose().and_then(|_| make(i));
                        match heap {
                            Ok(mut h) => script::run(&mut h, ops, seed, overhead, || {
                                b.wait();
                            }),
                            Err(e) => {
                                b.wait();
                                Err(e)
                            }
                        }
                    })
                    .map_err(|e| format!("starting thread {i}: {e}"))
            })
            .collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h?.join().map_err(|_| "a workload thread panicked".to_string())??);
        }
        Ok((out, pin))
    })
}

/// The speed sweep's worker kind.
pub const WORKER: &str = "heap";

/// One speed worker's start (`--spec`): one allocator, heap mode and thread count.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// glibc, mimalloc, jemalloc, or preload (with `preload`).
    pub allocator: String,
    pub mode: alloc::HeapMode,
    pub threads: u32,
    pub ops: u64,
    pub seed: u64,
    /// The library in LD_PRELOAD, for allocator `preload`.
    pub preload: Option<String>,
}

/// One configuration in this (worker) process.
pub fn run_config(spec: &Spec) -> Result<Repeat, String> {
    let Spec { allocator, mode, threads, ops, seed, preload } = spec;
    let (allocator, mode, threads, ops, seed, preload) =
        (allocator.as_str(), *mode, *threads, *ops, *seed, preload.as_deref());
    if let Some(p) = preload {
        provides_malloc(p)?;
    }
    // This worker's one reader of its own /proc/self (it is its own edge).
    let mut probe = probe::Probe::default();
    let cal = timer::calibrate(&mut probe, 30, 20_000);
    let oh = cal.overhead_ticks;
    let base_rss = self_rss(&mut probe, false)?;
    let f0 = minflt();
    let (stats, pinned) = drive(allocator, mode, threads, ops, seed, oh)?;
    let faults = minflt() - f0;
    let ns = cal.ns_per_tick;
    let Sums { ah, fh, g, w, allocs, frees, wall, frac, share } = sum_threads(&stats, ns, oh)?;
    let per = |ticks: u64, calls: u64| if calls == 0 { f64::NAN } else { ticks as f64 * ns / calls as f64 };
    // Each thread's lowest block mean (see script::BLOCKS), then the mean of
    // those over threads: a disturbance on one CPU then spoils blocks of that
    // thread only, which its own lowest block leaves out.
    let block_means = |k: usize| -> Option<f64> {
        let v: Vec<f64> = stats
            .iter()
            .filter_map(|s| {
                s.warm.blocks.iter().map(|x| per(x[k], x[k + 1])).filter(|x| x.is_finite()).reduce(f64::min)
            })
            .collect();
        record::stats::mean(&v)
    };
    let a = stat_line(&ah, ns);
    let f = stat_line(&fh, ns);
    let provider = alloc::malloc_provider();
    let preload_mapped = preload.map(|p| {
        let want = std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
        let maps = probe.pid_maps(std::process::id() as i32).ok().flatten().unwrap_or_default();
        maps.iter().any(|m| std::path::Path::new(&m.name) == want)
    });
    Ok(Repeat {
        alloc_ns_mean: block_means(0).or(finite(per(w.alloc_ticks, w.allocs))).ok_or(TOO_FEW)?,
        free_ns_mean: block_means(2).or(finite(per(w.free_ticks, w.frees))).ok_or(TOO_FEW)?,
        alloc_ns_mean_plain: per(w.alloc_ticks, w.allocs),
        alloc_ns_in_calls: per(w.alloc_ticks_all, w.allocs_all),
        free_ns_mean_plain: per(w.free_ticks, w.frees),
        alloc_ns_p50: a[0],
        alloc_ns_p99: a[1],
        alloc_ns_p999: a[2],
        alloc_ns_max: a[3],
        free_ns_p50: f[0],
        free_ns_p99: f[1],
        free_ns_p999: f[2],
        free_ns_max: f[3],
        growth_alloc_ns_mean: per(g.alloc_ticks, g.allocs),
        growth_free_ns_mean: per(g.free_ticks, g.frees),
        growth_allocs: g.allocs,
        growth_minor_faults: g.minor_faults,
        warm_minor_faults: w.minor_faults,
        allocs,
        frees,
        batches: w.batches,
        batches_preempted: w.batches_preempted,
        peak_rss_bytes: self_rss(&mut probe, true)?,
        baseline_rss_bytes: base_rss,
        wall_ms: wall as f64 / 1e6,
        timed_fraction_max: frac,
        timer_share_max: share,
        timer_overhead_ns: cal.overhead_ns,
        pinned,
        minor_faults: faults,
        malloc_provider: provider,
        preload_mapped,
        processes: 1,
    })
}

/// A preloaded library that does not define malloc leaves libc's in place:
/// its figures would be glibc's under another name.
pub(crate) fn provides_malloc(p: &str) -> Result<(), String> {
    let want = std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
    let got = alloc::malloc_provider().unwrap_or_default();
    let got_path = std::fs::canonicalize(&got).unwrap_or_else(|_| got.clone().into());
    if got_path != want {
        return Err(format!(
            "preload:{p} does not provide malloc (malloc resolves to {got}): it is not an allocator, and its figures would be libc's"
        ));
    }
    Ok(())
}

/// Runs the script on `threads` threads with the allocator and heap mode's
/// per-thread heap: each thread's figures, and whether the threads were pinned.
fn drive(
    allocator: &str,
    mode: alloc::HeapMode,
    threads: u32,
    ops: u64,
    seed: u64,
    oh: u64,
) -> Result<(Vec<script::ThreadStats>, bool), String> {
    use alloc::HeapMode::{Default, PerThread, Shared};
    Ok(match (allocator, mode) {
        ("glibc" | "preload", Default) => run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?,
        ("glibc", Shared) => {
            // SAFETY: mallopt before any workload thread exists.
            if unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) } != 1 {
                return Err("mallopt(M_ARENA_MAX, 1) failed".into());
            }
            run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?
        }
        ("mimalloc", Default) => run_threads(threads, ops, seed, oh, |_| Ok(alloc::MiDefault))?,
        ("mimalloc", PerThread) => run_threads(threads, ops, seed, oh, |_| alloc::MiHeap::new())?,
        ("jemalloc", Default) => run_threads(threads, ops, seed, oh, |_| Ok(alloc::Je))?,
        ("jemalloc", Shared) => {
            let a = alloc::je_create_arena()?;
            run_threads(threads, ops, seed, oh, |_| alloc::je_bind(a).map(|_| alloc::Je))?
        }
        ("jemalloc", PerThread) => run_threads(threads, ops, seed, oh, |_| {
            alloc::je_create_arena().and_then(alloc::je_bind).map(|_| alloc::Je)
        })?,
        (a, m) => return Err(format!("allocator {a} cannot run heap mode {}", crate::kit::names::name(&m))),
    })
}

/// The threads' figures summed: the histograms merged, the phases' counts
/// added, and the worst thread's wall time, timed fraction and timer share.
struct Sums {
    ah: Histogram<u64>,
    fh: Histogram<u64>,
    g: script::PhaseStats,
    w: script::PhaseStats,
    allocs: u64,
    frees: u64,
    wall: u64,
    frac: f64,
    share: f64,
}

fn sum_threads(stats: &[script::ThreadStats], ns: f64, oh: u64) -> Result<Sums, String> {
    let mut ah = Histogram::<u64>::new_with_bounds(1, 1 << 36, 3).map_err(|e| e.to_string())?;
    let mut fh = Histogram::<u64>::new_with_bounds(1, 1 << 36, 3).map_err(|e| e.to_string())?;
    let (mut g, mut w) = (script::PhaseStats::default(), script::PhaseStats::default());
    let (mut allocs, mut frees, mut wall, mut frac, mut share) = (0u64, 0u64, 0u64, 0f64, 0f64);
    for s in stats {
        ah.add(&s.alloc_hist).map_err(|e| e.to_string())?;
        fh.add(&s.free_hist).map_err(|e| e.to_string())?;
        allocs += s.allocs_total;
        frees += s.frees_total;
        for (sum, p) in [(&mut g, &s.growth), (&mut w, &s.warm)] {
            sum.allocs += p.allocs;
            sum.frees += p.frees;
            sum.alloc_ticks += p.alloc_ticks;
            sum.allocs_all += p.allocs_all;
            sum.alloc_ticks_all += p.alloc_ticks_all;
            sum.free_ticks += p.free_ticks;
            sum.batches += p.batches;
            sum.batches_preempted += p.batches_preempted;
            sum.minor_faults += p.minor_faults;
        }
        wall = wall.max(s.wall_ns);
        let timed = (s.warm.alloc_ticks + s.warm.free_ticks) as f64 * ns;
        frac = frac.max(timed / s.warm_wall_ns.max(1) as f64);
        // Batches per kind: half of the counted ones each (alloc, free).
        let counted = ((s.warm.batches - s.warm.batches_preempted) as f64 / 2.0).max(1.0);
        for t in [s.warm.alloc_ticks, s.warm.free_ticks] {
            if t > 0 {
                share = share.max(oh as f64 / (t as f64 / counted));
            }
        }
    }
    Ok(Sums { ah, fh, g, w, allocs, frees, wall, frac, share })
}

/// The median over repeats of one figure (NaN-free; the mean of the middle two
/// for an even count).
fn med(runs: &[Repeat], f: fn(&Repeat) -> f64) -> f64 {
    record::stats::median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
}

/// Summarizes the repeats of one configuration: medians, and the CV of the
/// warm means across repeats.
pub fn aggregate(cfg: &HeapConfig, allocator: &Allocator, threads: u32, runs: Vec<Repeat>) -> HeapResult {
    let alloc_means: Vec<f64> = runs.iter().map(|r| r.alloc_ns_mean).collect();
    let free_means: Vec<f64> = runs.iter().map(|r| r.free_ns_mean).collect();
    HeapResult {
        allocator: allocator.name(),
        heap_mode: cfg.heap_mode,
        workload: cfg.workload,
        threads,
        ops_per_thread: cfg.ops,
        repeat: runs.len() as u32,
        alloc_ns_mean: med(&runs, |r| r.alloc_ns_mean),
        alloc_ns_p50: med(&runs, |r| r.alloc_ns_p50),
        alloc_ns_p99: med(&runs, |r| r.alloc_ns_p99),
        alloc_ns_p999: med(&runs, |r| r.alloc_ns_p999),
        alloc_ns_max: runs.iter().map(|r| r.alloc_ns_max).fold(0.0, f64::max),
        free_ns_mean: med(&runs, |r| r.free_ns_mean),
        free_ns_p50: med(&runs, |r| r.free_ns_p50),
        free_ns_p99: med(&runs, |r| r.free_ns_p99),
        free_ns_p999: med(&runs, |r| r.free_ns_p999),
        free_ns_max: runs.iter().map(|r| r.free_ns_max).fold(0.0, f64::max),
        alloc_ms_per_million: med(&runs, |r| r.alloc_ns_mean),
        free_ms_per_million: med(&runs, |r| r.free_ns_mean),
        growth_alloc_ns_mean: med(&runs, |r| r.growth_alloc_ns_mean),
        growth_free_ns_mean: med(&runs, |r| r.growth_free_ns_mean),
        growth_minor_faults: med(&runs, |r| r.growth_minor_faults as f64) as u64,
        peak_rss_bytes: med(&runs, |r| r.peak_rss_bytes as f64) as u64,
        alloc_ns_mean_cv: record::stats::cv(&alloc_means),
        free_ns_mean_cv: record::stats::cv(&free_means),
        timed_fraction_max: runs.iter().map(|r| r.timed_fraction_max).fold(0.0, f64::max),
        timer_share_max: runs.iter().map(|r| r.timer_share_max).fold(0.0, f64::max),
        timer_overhead_ns: med(&runs, |r| r.timer_overhead_ns),
        pinned: runs.iter().all(|r| r.pinned),
        cpus: std::thread::available_parallelism().ok().map(|n| n.get() as u32),
        malloc_provider: runs.first().and_then(|r| r.malloc_provider.clone()),
        runs,
    }
}

/// Runs every thread count × repeat × allocator, each in a fresh worker; the
/// allocators are interleaved within a repeat so that drift hits them alike.
pub fn run<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<HeapResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut sandbox::worker::Processes)
}

/// [`run`], its workers started by `spawn` (tests: [`sandbox::worker::Threads`],
/// no process; it refuses a preloaded allocator, whose environment a thread
/// cannot take).
pub fn run_with<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
) -> Result<Vec<HeapResult>, ExperimentError> {
    let supported: Vec<&Allocator> =
        cfg.allocators.iter().filter(|a| a.unsupported(cfg.heap_mode).is_none()).collect();
    let mode = cfg.heap_mode;
    for a in cfg.allocators.iter().filter(|a| a.unsupported(cfg.heap_mode).is_some()) {
        let why = a.unsupported(cfg.heap_mode).unwrap_or_default();
        obs.note(&format!("{} does not support heap mode {mode}: {why}", a.name()));
        let unsupported =
            crate::heap::results::Unsupported { allocator: a.name(), heap_mode: cfg.heap_mode, reason: why.to_string() };
        obs.result(&crate::heap::results::Entry {
            unsupported: Some(unsupported),
            ..Default::default()
        })?;
    }
    let mut out = Vec::new();
    let total = cfg.threads.len() * cfg.repeat as usize * procs_for(cfg.ops) as usize * supported.len();
    let mut done = 0usize;
    for &threads in &cfg.threads {
        // Per allocator and repeat, its processes. A repeat's processes are
        // spread over the whole sweep (process 1 of every repeat, then process
        // 2 of every repeat, ...), so that a disturbance of a few seconds hits
        // one process of several repeats rather than every process of one, and
        // each repeat's trimmed mean sets it aside.
        let mut procs: Vec<Vec<Vec<Repeat>>> = vec![vec![Vec::new(); cfg.repeat as usize]; supported.len()];
        let nprocs = procs_for(cfg.ops);
        let proc_ops = cfg.ops.div_ceil(nprocs as u64);
        for sub in 0..nprocs {
            for rep in 0..cfg.repeat {
                // ABBA: the allocators' order flips every other repeat.
                let order = workloads::order::abba(&(0..supported.len()).collect::<Vec<_>>(), rep as usize);
                for (k, a) in order.into_iter().map(|k| (k, &supported[k])) {
                    if stop() {
                        return Err(ExperimentError::Interrupted);
                    }
                    let (name, env, preload) = match a {
                        Allocator::Preload(p) => (
                            "preload".to_string(),
                            vec![("LD_PRELOAD".to_string(), p.display().to_string())],
                            Some(p.display().to_string()),
                        ),
                        other => (other.name(), vec![], None),
                    };
                    let spec = Spec {
                        allocator: name,
                        mode: cfg.heap_mode,
                        threads,
                        ops: proc_ops,
                        seed: cfg.seed,
                        preload,
                    };
                    let label = format!(
                        "heap {} {} threads, repeat {} process {}/{nprocs}",
                        a.name(),
                        threads,
                        rep + 1,
                        sub + 1
                    );
                    let r = one_process(cfg, &spec, env, &label, obs, stop, &mut *spawn)?;
                    done += 1;
                    obs.note(&format!(
                        "[{done}/{total}] {label}: alloc {:.1} ns, free {:.1} ns, peak RSS {:.1} MiB",
                        r.alloc_ns_mean,
                        r.free_ns_mean,
                        units::mib(r.peak_rss_bytes)
                    ));
                    procs[k][rep as usize].push(r);
                }
            }
        }
        for (k, a) in supported.iter().enumerate() {
            let runs: Vec<Repeat> = procs[k].iter().map(|p| merge_repeats(p)).collect();
            let r = aggregate(cfg, a, threads, runs);
            obs.result(&crate::heap::results::Entry {
                result: Some(r.clone()),
                ..Default::default()
            })?;
            out.push(r);
        }
    }
    obs.targets(vec![], None, vec![]);
    Ok(out)
}

/// One worker process of the speed sweep: started, waited for, its report read.
fn one_process<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    spec: &Spec,
    env: Vec<(String, String)>,
    label: &str,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
) -> Result<Repeat, ExperimentError> {
    let mut w = spawn.spawn(sandbox::worker::WorkerSpec {
        exe: cfg.exe.clone(),
        args: sandbox::worker::argv_spec(WORKER, spec),
        cgroup: None,
        env,
        label: label.to_string(),
    })?;
    obs.targets(vec![w.pid()], None, vec![]);
    let t0 = probe::sample::monotonic_ns();
    obs.event("phase_start", label, t0, Value::Null);
    let d = w
        .wait_for(Want::Report, std::time::Duration::from_secs(3600), &mut |_| {}, &stop)
        .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) })?
        .data;
    let _ = w.finish(std::time::Duration::from_secs(10));
    obs.event("phase_end", label, probe::sample::monotonic_ns(), Value::Null);
    serde_json::from_value(d).map_err(|e| ExperimentError::Worker(format!("{label}: bad report: {e}")))
}

/// `pagelab __worker heap --spec JSON` ([`Spec`]): one configuration, replied
/// as a [`Repeat`].
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let spec: Spec = sandbox::worker::spec_of(WORKER, args)?;
    let r = run_config(&spec)?;
    io.report(&r)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_runs_in_process_from_its_spec() {
        let spec = Spec {
            allocator: "jemalloc".into(),
            mode: alloc::HeapMode::PerThread,
            threads: 2,
            ops: 20_000,
            seed: 3,
            preload: None,
        };
        let argv = sandbox::worker::argv_spec(WORKER, &spec);
        assert_eq!(sandbox::worker::spec_of::<Spec>(WORKER, &argv[2..]).unwrap(), spec);
        let r = run_config(&spec).unwrap();
        // Both threads ran the script: every allocation was freed, and the
        // warm phase's means are times, not NaN or zero.
        assert!(r.allocs >= 20_000 && r.allocs == r.frees, "{} allocs, {} frees", r.allocs, r.frees);
        assert!(r.alloc_ns_mean > 0.0 && r.alloc_ns_mean.is_finite());
        assert!(r.alloc_ns_p50 <= r.alloc_ns_p99 && r.alloc_ns_p99 <= r.alloc_ns_max);
        assert_eq!(r.processes, 1);
        assert!(r.peak_rss_bytes >= r.baseline_rss_bytes);
        // A mode the allocator has not is refused by name.
        let bad = Spec { allocator: "mimalloc".into(), mode: alloc::HeapMode::Shared, ..spec };
        assert_eq!(run_config(&bad).unwrap_err(), "allocator mimalloc cannot run heap mode shared");
    }

    /// heap's whole sweep with no process: each worker's main on a thread.
    /// The allocators alternate ABBA within the repeats, each allocator's
    /// result is written once its repeats are in, one the mode does not
    /// support is written as such, a stop ends it, a result that cannot be
    /// written fails it, and a preloaded allocator (an environment a thread
    /// cannot take) is refused rather than run as glibc.
    #[test]
    fn the_sweep_drives_its_workers_without_a_process() {
        use workloads::observe::{ExperimentError, Recorder};
        let cfg = HeapConfig {
            threads: vec![1],
            allocators: vec![Allocator::Glibc, Allocator::Jemalloc, Allocator::Mimalloc],
            heap_mode: alloc::HeapMode::Shared,
            workload: alloc::Workload::Containers,
            ops: 4_000,
            repeat: 2,
            seed: 7,
            baseline: "glibc".into(),
            exe: "/nonexistent".into(),
            host_floor: None,
        };
        let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
        let mut obs = Recorder::default();
        let rs = run_with(&cfg, &mut obs, || false, &mut threads).unwrap();
        let ran: Vec<&str> = obs.notes.iter().filter_map(|n| n.split_once("] heap ")?.1.split(' ').next()).collect();
        assert_eq!(ran, ["glibc", "jemalloc", "jemalloc", "glibc"], "{:?}", obs.notes);
        let names: Vec<(&str, u32)> = rs.iter().map(|r| (r.allocator.as_str(), r.repeat)).collect();
        assert_eq!(names, [("glibc", 2), ("jemalloc", 2)]);
        assert!(rs.iter().all(|r| r.alloc_ns_mean > 0.0 && r.free_ns_mean > 0.0), "{rs:?}");
        assert_eq!(obs.results.len(), 3, "mimalloc's refusal, then the two results");
        assert!(obs.results[0].unsupported.as_ref().is_some_and(|u| u.allocator == "mimalloc"));
        assert_eq!(obs.results[1].result.as_ref(), Some(&rs[0]));
        let e = run_with(&cfg, &mut Recorder::default(), || true, &mut threads).unwrap_err();
        assert!(matches!(e, ExperimentError::Interrupted), "{e}");
        let mut refusing = Recorder { refuse_results: true, ..Default::default() };
        let e = run_with(&cfg, &mut refusing, || false, &mut threads).unwrap_err();
        assert!(matches!(e, ExperimentError::Record(_)), "{e}");
        let preload = HeapConfig {
            allocators: vec![Allocator::Preload("/x/libfast.so".into())],
            heap_mode: alloc::HeapMode::Default,
            ..cfg
        };
        let e = run_with(&preload, &mut Recorder::default(), || false, &mut threads).unwrap_err();
        assert!(e.to_string().contains("cannot be given LD_PRELOAD"), "{e}");
    }

    #[test]
    fn repeats_split_into_processes_only_when_each_gets_eight_rounds() {
        assert_eq!(procs_for(3_000), 1);
        assert_eq!(procs_for(2 * MIN_PROC_OPS), 2);
        assert_eq!(procs_for(1_000_000), PROCS);
        assert_eq!(procs_for(2_000_000), PROCS);
    }

    #[test]
    fn the_trimmed_mean_drops_one_from_each_end_of_five_to_nine() {
        assert_eq!(trimmed_mean(&[1.0, 2.0, 3.0]), Some(2.0));
        assert_eq!(trimmed_mean(&[10.0, 1.0, 2.0, 3.0, 100.0]), Some(5.0));
        assert_eq!(trimmed_mean(&[9.0, 5.0, 5.0, 5.0, 5.0, 5.0, 1.0]), Some(5.0));
        assert_eq!(trimmed_mean(&[f64::NAN, 4.0]), Some(4.0));
        assert_eq!(trimmed_mean(&[]), None);
    }
}
