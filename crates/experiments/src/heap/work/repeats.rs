//! heap's repeat statistics: a repeat from its processes, and a
//! configuration's summary over its repeats.

use super::*;

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

/// The median over repeats of one figure (NaN-free; the mean of the middle two
/// for an even count).
pub(super) fn med(runs: &[Repeat], f: fn(&Repeat) -> f64) -> f64 {
    record::stats::median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
}

/// Summarizes the repeats of one configuration: medians, and the CV of the
/// warm means across repeats.
pub fn aggregate(cfg: &HeapConfig, allocator: &Allocator, threads: u32, runs: Vec<Repeat>) -> HeapResult {
    let alloc_means: Vec<f64> = runs.iter().map(|r| r.alloc_ns_mean).collect();
    let free_means: Vec<f64> = runs.iter().map(|r| r.free_ns_mean).collect();
    HeapResult {
        allocator: allocator.name(),
        heap_mode: cfg.heap_mode.of(allocator),
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
        growth_from: cfg.growth_from,
        malloc_provider: runs.first().and_then(|r| r.malloc_provider.clone()),
        runs,
    }
}
