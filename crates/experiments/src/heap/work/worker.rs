//! The speed sweep's worker: one configuration of allocator, heap mode and
//! threads, timed per call in this process, its report the repeat.

use super::*;

pub(super) fn stat_line(h: &Histogram<u64>, ns_per_tick: f64) -> [f64; 4] {
    [
        h.value_at_quantile(0.5) as f64 * ns_per_tick,
        h.value_at_quantile(0.99) as f64 * ns_per_tick,
        h.value_at_quantile(0.999) as f64 * ns_per_tick,
        h.max() as f64 * ns_per_tick,
    ]
}

/// This process's resident memory now, or at its peak (`VmHWM`); an error
/// when /proc/self/status cannot be read (the figure is unknown, not 0).
pub(super) fn self_rss(p: &mut probe::Probe, peak: bool) -> Result<u64, String> {
    let s = p.pid_status(std::process::id() as i32).ok().flatten();
    s.and_then(|s| if peak { s.vm_hwm } else { s.vm_rss })
        .ok_or_else(|| "the heap worker could not read its own VmRSS and VmHWM (/proc/self/status)".into())
}

pub(super) fn minflt() -> u64 {
    workloads::usage::process().minflt
}

/// Runs `threads` threads of the script, each with a heap from `make`; each
/// thread is pinned to its own CPU when there are no more threads than CPUs.
pub(super) fn run_threads<H: ThreadHeap, F>(
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

/// One configuration in this (worker) process, its own /proc/self read
/// through `probe` (the worker's, [`sandbox::worker::child::WorkerIo::probe`]).
pub fn run_config(spec: &Spec, probe: &mut probe::Probe) -> Result<Repeat, String> {
    let Spec { allocator, mode, threads, ops, seed, preload } = spec;
    let (allocator, mode, threads, ops, seed, preload) =
        (allocator.as_str(), *mode, *threads, *ops, *seed, preload.as_deref());
    if let Some(p) = preload {
        provides_malloc(p)?;
    }
    let cal = timer::calibrate(probe, 30, 20_000);
    let oh = cal.overhead_ticks;
    let base_rss = self_rss(probe, false)?;
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
    // Maps that cannot be read leave it unknown, never "not mapped".
    let preload_mapped = preload.and_then(|p| {
        let want = std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
        let maps = probe.pid_maps(std::process::id() as i32).ok().flatten()?;
        Some(maps.iter().any(|m| std::path::Path::new(&m.name) == want))
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
        peak_rss_bytes: self_rss(probe, true)?,
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
pub(super) fn drive(
    allocator: &str,
    mode: alloc::HeapMode,
    threads: u32,
    ops: u64,
    seed: u64,
    oh: u64,
) -> Result<(Vec<script::ThreadStats>, bool), String> {
    use alloc::HeapMode::{Default, GlibcCached, PerThread, Shared};
    Ok(match (allocator, mode) {
        ("glibc" | "preload", Default) => run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?,
        ("glibc", GlibcCached) => {
            // The check reads whichever allocator malloc is: glibc's alone counts.
            let provider = alloc::malloc_provider().unwrap_or_default();
            let name = std::path::Path::new(&provider).file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| n.starts_with("libc.so") || n.starts_with("libc-")) {
                return Err(format!(
                    "heap mode glibc-cached: malloc resolves to {provider:?}, not glibc's libc (an LD_PRELOAD in \
                     pagelab's environment?): the run would not be glibc's"
                ));
            }
            if !alloc::deep_tcache() {
                return Err(format!(
                    "heap mode glibc-cached: glibc's thread cache keeps fewer than 64 blocks a size \
                     (GLIBC_TUNABLES={}): this glibc did not take {}",
                    std::env::var("GLIBC_TUNABLES").unwrap_or_default(),
                    alloc::DEEP_TCACHE
                ));
            }
            run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?
        }
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
pub(super) struct Sums {
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

pub(super) fn sum_threads(stats: &[script::ThreadStats], ns: f64, oh: u64) -> Result<Sums, String> {
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

/// `pagelab __worker heap --spec JSON` ([`Spec`]): one configuration, replied
/// as a [`Repeat`].
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let spec: Spec = sandbox::worker::spec_of(WORKER, args)?;
    let r = run_config(&spec, io.probe())?;
    io.report(&r)?;
    Ok(())
}
