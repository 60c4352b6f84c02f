//! `heap`: one entry per allocator × heap mode × thread count,
//! `{"result": {...}}`, or `{"unsupported": {...}}` for a configuration this
//! machine cannot run.

use serde::{Deserialize, Serialize};

/// What one worker (one repeat of one configuration) measured. The means are
/// from batch timing in the warm phase (see the heap workload's script); the percentiles from
/// the rounds timed call by call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Repeat {
    /// Warm heap: mean ns per allocation / free, from batches of
    /// the worker's round (1024) calls between two counter reads; the lowest of the
    /// the warm phase's blocks' means (all threads' calls in each block).
    #[serde(default = "record::results::nan")]
    pub alloc_ns_mean: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_mean: f64,
    /// The plain mean over every counted batch of the warm phase.
    #[serde(default = "record::results::nan")]
    pub alloc_ns_mean_plain: f64,
    /// HeapPerf's measure: ns per allocation over every warm batch, preempted
    /// ones included (a preemption inside the calls counts, one between them
    /// does not), all threads' calls together. NaN in records from before it.
    #[serde(default = "record::results::nan")]
    pub alloc_ns_in_calls: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_mean_plain: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p50: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p99: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p999: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_max: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p50: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p99: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p999: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_max: f64,
    /// Growth, from an empty heap until the live set is full: mean ns per call
    /// (batch-timed) and the minor page faults taken meanwhile, all threads.
    #[serde(default = "record::results::nan")]
    pub growth_alloc_ns_mean: f64,
    #[serde(default = "record::results::nan")]
    pub growth_free_ns_mean: f64,
    pub growth_allocs: u64,
    pub growth_minor_faults: u64,
    /// Minor page faults during the warm phase, all threads.
    pub warm_minor_faults: u64,
    /// Every allocation and free made (growth, warm, and the final frees).
    pub allocs: u64,
    pub frees: u64,
    /// Warm batches timed, and those left out because their thread was preempted.
    pub batches: u64,
    pub batches_preempted: u64,
    pub peak_rss_bytes: u64,
    pub baseline_rss_bytes: u64,
    /// Wall time of the slowest thread.
    #[serde(default = "record::results::nan")]
    pub wall_ms: f64,
    /// The largest share of a thread's warm wall time spent inside timed batches (≤ 1).
    #[serde(default = "record::results::nan")]
    pub timed_fraction_max: f64,
    /// The counter pair's cost as a share of the mean batch it brackets (the
    /// largest over threads and over alloc/free): the method's own error.
    #[serde(default = "record::results::nan")]
    pub timer_share_max: f64,
    #[serde(default = "record::results::nan")]
    pub timer_overhead_ns: f64,
    /// Each thread was pinned to its own CPU (threads ≤ CPUs allowed).
    pub pinned: bool,
    pub minor_faults: u64,
    pub malloc_provider: Option<String>,
    pub preload_mapped: Option<bool>,
    /// The worker processes this repeat's figures come from (`PROCS`, 7).
    pub processes: u32,
}

/// One allocator × heap mode × thread count over its repeats: each headline is
/// the median of the per-repeat figures, with its CV across repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct HeapResult {
    pub allocator: String,
    pub heap_mode: crate::heap::work::alloc::HeapMode,
    #[serde(default)]
    pub workload: crate::heap::work::alloc::Workload,
    pub threads: u32,
    #[serde(default)]
    pub ops_per_thread: u64,
    #[serde(default)]
    pub repeat: u32,
    /// Median over repeats of the warm mean ns per call.
    #[serde(default = "record::results::nan")]
    pub alloc_ns_mean: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p50: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p99: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_p999: f64,
    #[serde(default = "record::results::nan")]
    pub alloc_ns_max: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_mean: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p50: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p99: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_p999: f64,
    #[serde(default = "record::results::nan")]
    pub free_ns_max: f64,
    /// The original's unit: milliseconds per million calls (numerically equal to
    /// the mean ns per call).
    #[serde(default = "record::results::nan")]
    pub alloc_ms_per_million: f64,
    #[serde(default = "record::results::nan")]
    pub free_ms_per_million: f64,
    /// Medians over repeats of the growth phase.
    #[serde(default = "record::results::nan")]
    pub growth_alloc_ns_mean: f64,
    #[serde(default = "record::results::nan")]
    pub growth_free_ns_mean: f64,
    #[serde(default)]
    pub growth_minor_faults: u64,
    #[serde(default)]
    pub peak_rss_bytes: u64,
    /// Coefficient of variation (sample sd ÷ mean) of the per-repeat warm means;
    /// null with a single repeat (no spread to judge).
    pub alloc_ns_mean_cv: Option<f64>,
    pub free_ns_mean_cv: Option<f64>,
    #[serde(default = "record::results::nan")]
    pub timed_fraction_max: f64,
    #[serde(default = "record::results::nan")]
    pub timer_share_max: f64,
    #[serde(default = "record::results::nan")]
    pub timer_overhead_ns: f64,
    #[serde(default)]
    pub pinned: bool,
    /// The CPUs the run could use (heap.growth compares as many threads
    /// with twice as many); null in runs recorded before it.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// `--growth-from`: heap.growth's step starts at this many threads in
    /// place of `cpus` (its control, within the cores); absent when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_from: Option<u32>,
    pub malloc_provider: Option<String>,
    #[serde(default)]
    pub runs: Vec<Repeat>,
}

/// A configuration that could not run here, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Unsupported {
    pub allocator: String,
    #[serde(default)]
    pub heap_mode: crate::heap::work::alloc::HeapMode,
    #[serde(default)]
    pub reason: String,
}

/// One entry of run.json's `results`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<HeapResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<Unsupported>,
    /// `pagelab heap --over-time`: one arm × pattern × thread count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_time: Option<OverTimeResult>,
}

/// What one worker of `heap --over-time` measured: heap memory (the worker's
/// anonymous RSS above what it held before its first allocation) across the
/// phases grow, churn, shrink and idle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverTimeRun {
    /// 1-based; the arms of one repeat ran side by side (ABBA order).
    pub repeat: u32,
    /// Anonymous RSS before the first allocation (the worker's own).
    pub baseline_rss_bytes: u64,
    /// Bytes the program held (requested sizes) at the end of grow and churn.
    pub live_bytes: u64,
    /// Bytes freed by shrink, and those kept (the scattered 10 %).
    pub freed_bytes: u64,
    pub kept_bytes: u64,
    /// Heap RSS: the most seen, the median over churn's second half, just
    /// before shrink, just after it (after malloc_trim where the arm calls it),
    /// and at the end of idle.
    pub peak_rss_bytes: u64,
    pub steady_rss_bytes: u64,
    pub before_shrink_rss_bytes: u64,
    pub after_shrink_rss_bytes: u64,
    pub after_idle_rss_bytes: u64,
    /// Seconds from the end of shrink until half of what idle gave back was
    /// given back; None when idle gave back less than 1 % of the returnable
    /// bytes (heap RSS before shrink − the bytes kept).
    pub half_life_s: Option<f64>,
    /// (after shrink − after idle) ÷ returnable: given back while no calls were made.
    pub idle_returned_fraction: f64,
    /// (before shrink − after idle) ÷ returnable: given back by shrink and idle together.
    pub returned_fraction: f64,
    /// Allocations (each with a free) in churn, all threads, and the CPU time
    /// per allocation-and-free pair: churn's wall time × threads ÷ pairs.
    pub churn_ops: u64,
    pub churn_ns_per_op: f64,
    /// Wall time of grow and shrink, and of malloc_trim where the arm calls it.
    pub grow_s: f64,
    pub shrink_ms: f64,
    pub trim_ms: Option<f64>,
    /// The run's memory cgroup charge (as root), bytes: the most seen and at the end of idle.
    pub peak_charge_bytes: Option<u64>,
    pub after_idle_charge_bytes: Option<u64>,
    /// Ends of grow, churn, shrink and idle, seconds after grow began.
    pub phase_ends_s: [f64; 4],
    /// (seconds after grow began, heap RSS MiB, charge MiB), at most 400 points.
    pub timeline: Vec<(f64, f64, Option<f64>)>,
    /// The allocator's own account of its settings, where it gives one (the
    /// check that a knob's environment setting took).
    #[serde(default)]
    pub knob_readback: Option<String>,
    /// With --pressure: the squeeze after idle, and the regrow after it.
    #[serde(default)]
    pub pressure: Option<PressureRun>,
}

/// `heap --over-time --pressure`: after idle, the worker's memory cgroup is
/// limited to what it still holds live (plus a margin) for a moment, with zram
/// behind it, so that what the allocator kept but the program no longer uses
/// goes to the compressed store; then the limit is lifted and the threads
/// allocate back to the live size, paying for what comes back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PressureRun {
    /// The limit during the squeeze, bytes (charge before grow + bytes kept + margin).
    pub limit_bytes: u64,
    /// The worker's swapped memory (VmSwap) at the end of the squeeze.
    pub swapped_bytes: u64,
    /// What the compressed store grew by during the squeeze: stored and compressed bytes.
    pub stored_bytes: Option<u64>,
    pub compressed_bytes: Option<u64>,
    /// Heap RSS after the squeeze (the limit lifted, nothing touched yet).
    pub after_squeeze_rss_bytes: u64,
    /// Allocating back to the live size: wall time, and the major faults taken
    /// (pages read back from the store).
    pub regrow_s: f64,
    pub regrow_major_faults: u64,
    /// Heap RSS after the regrow.
    pub after_regrow_rss_bytes: u64,
}

/// A figure over repeats: the median and a 95 % interval; None where fewer
/// than two repeats had a value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Spread {
    /// None when no repeat had a value (e.g. a half-life that was never).
    pub median: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    pub n: usize,
}

impl Spread {
    /// Sizes, times and ratios: the verdicts' interval (t on the logs of the
    /// positive values, record::stats::claim::estimate).
    pub fn of(v: &[f64]) -> Spread {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let e = record::stats::claim::estimate(&v);
        Spread { median: record::stats::median(&v), ci95: e.map(|e| e.ci95), n: v.len() }
    }

    /// Amounts where 0 is common (MiB swapped in a squeeze): t on the
    /// values themselves, clipped to 0, for the same reason as
    /// [`Spread::of_share`]: [`Spread::of`] leaves the zeros out, and four
    /// repeats of [0, 0, 0.004, 30] read "0 (0–111508)" there.
    pub fn of_amount(v: &[f64]) -> Spread {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let ci95 = record::stats::mean_ci95(&v).map(|(m, half)| [(m - half).max(0.0), m + half]);
        Spread { median: record::stats::median(&v), ci95, n: v.len() }
    }

    /// Shares (0 to 1, where 0 is common): t on the values themselves, clipped
    /// to 0 and 1; the logarithm of a share near 0 would make the interval
    /// span decades.
    pub fn of_share(v: &[f64]) -> Spread {
        let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let n = v.len();
        let ci95 = record::stats::mean_ci95(&v).map(|(m, half)| [(m - half).max(0.0), (m + half).min(1.0)]);
        Spread { median: record::stats::median(&v), ci95, n }
    }
}

/// One arm (an allocator, or an allocator with one setting changed) × pattern
/// × thread count of `heap --over-time`, over its repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverTimeResult {
    /// The arm: `glibc`, or e.g. `glibc+malloc_trim`, `jemalloc+dirty_decay_ms:0`.
    pub arm: String,
    pub allocator: String,
    /// The setting changed, if any (as given to --knobs, without the allocator).
    pub knob: Option<String>,
    pub pattern: String,
    pub threads: u32,
    /// The live size asked for, all threads.
    pub live_target_bytes: u64,
    pub churn_s: f64,
    pub idle_s: f64,
    /// The share of the objects shrink freed (0.9 before it could be set).
    #[serde(default = "ninety_percent")]
    pub shrink_frees: f64,
    pub peak_mib: Spread,
    /// Steady heap RSS ÷ live bytes (fragmentation and caches).
    pub steady_over_live: Spread,
    pub after_shrink_mib: Spread,
    pub after_idle_mib: Spread,
    /// Over the repeats that gave back anything while idle.
    pub half_life_s: Spread,
    /// Repeats in which idle gave back less than 1 % of the returnable bytes.
    pub half_life_never: usize,
    pub idle_returned_fraction: Spread,
    pub returned_fraction: Spread,
    pub churn_ns_per_op: Spread,
    /// Seconds to grow from empty to the live size.
    #[serde(default)]
    pub grow_s: Spread,
    /// With --pressure: MiB swapped in the squeeze, and the regrow's time ÷ grow's, per repeat.
    #[serde(default)]
    pub swapped_mib: Option<Spread>,
    #[serde(default)]
    pub regrow_over_grow: Option<Spread>,
    pub runs: Vec<OverTimeRun>,
}

/// run.json's `config` for a heap run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Config {
    pub threads: Vec<u32>,
    pub allocators: Vec<String>,
    pub heap_mode: crate::heap::work::alloc::HeapMode,
    pub workload: crate::heap::work::alloc::Workload,
    pub ops_per_thread: u64,
    pub repeat: u32,
    pub seed: u64,
    /// The allocator the relative table compares against.
    pub baseline: String,
    /// `--growth-from`: heap.growth's step starts at this many threads
    /// (absent: at as many as CPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_from: Option<u32>,
    /// CPUs this process may use.
    pub cores: u64,
    /// The parent's timer calibration (crate::heap::work::timer::Calibration).
    pub timer: serde_json::Value,
    #[serde(default = "record::results::nan")]
    pub timer_overhead_ns: f64,
    /// `--over-time`'s plan; None when the run had no over-time part.
    pub over_time: Option<OverTimeConfig>,
    /// False when `--over-time` ran alone (no speed sweep).
    #[serde(default = "yes")]
    pub speed: bool,
}

fn yes() -> bool {
    true
}

fn ninety_percent() -> f64 {
    0.9
}

/// run.json's `config.over_time`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct OverTimeConfig {
    pub threads: Vec<u32>,
    /// Every arm: the allocators, then the knob arms.
    pub arms: Vec<String>,
    pub patterns: Vec<String>,
    pub live_bytes: u64,
    pub churn_s: f64,
    pub idle_s: f64,
    /// The share of the objects shrink frees (0.9 before it could be set).
    #[serde(default = "ninety_percent")]
    pub shrink_frees: f64,
    /// Every glibc arm's fixed mmap threshold, where one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glibc_mmap_threshold: Option<u64>,
    pub repeat: u32,
    pub sample_ms: u64,
    /// Whether the charge of a memory cgroup per worker was recorded (root).
    pub charge: bool,
    /// Whether each worker was squeezed after idle (--pressure), and the store.
    pub pressure: bool,
    pub store: Option<String>,
}

#[cfg(test)]
mod spread_tests {
    use super::Spread;

    #[test]
    fn a_share_near_zero_gets_a_linear_interval_clipped_to_zero() {
        let s = Spread::of_share(&[0.0, 0.0, 0.03]);
        assert_eq!(s.median, Some(0.0));
        let [lo, hi] = s.ci95.unwrap();
        assert_eq!(lo, 0.0);
        // mean 0.01, sd 0.0173, t(2) 4.30: 0.01 + 0.043.
        assert!((hi - 0.053).abs() < 0.001, "{hi}");
        // The log interval of the same figures leaves the zeros out.
        assert_eq!(Spread::of(&[0.0, 0.0, 0.03]).ci95, None);
        let one = Spread::of_share(&[0.5]);
        assert_eq!((one.median, one.ci95, one.n), (Some(0.5), None, 1));
        assert!(Spread::of_share(&[0.9, 1.0, 0.95]).ci95.unwrap()[1] <= 1.0);
    }

    #[test]
    fn an_amount_with_zeros_keeps_them_in_its_interval() {
        // Four squeezes, three of which swapped next to nothing.
        let v = [0.0, 0.0, 0.004, 30.0];
        let s = Spread::of_amount(&v);
        assert_eq!((s.median, s.n), (Some(0.002), 4));
        let [lo, hi] = s.ci95.unwrap();
        // mean 7.501, sd 14.999, t(3) 3.182: 7.501 + 23.86, clipped below at 0.
        assert_eq!(lo, 0.0);
        assert!((hi - 31.36).abs() < 0.05, "{hi}");
        // The log interval reads the positives alone, decades wide.
        assert!(Spread::of(&v).ci95.unwrap()[1] > 1e4);
        // Not clipped at 1, as a share is.
        assert!(Spread::of_amount(&[2.0, 3.0, 4.0]).ci95.unwrap()[1] > 3.0);
    }
}
