//! `heap`: one entry per allocator × heap mode × thread count,
//! `{"result": {...}}`, or `{"unsupported": {...}}` for a configuration this
//! machine cannot run.

use serde::{Deserialize, Serialize};

/// What one worker (one repeat of one configuration) measured. The means are
/// from batch timing in the warm phase (see the heap workload's script); the percentiles from
/// the rounds timed call by call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Repeat {
    /// Warm heap: mean ns per allocation / free, from batches of
    /// the worker's round (1024) calls between two counter reads; the lowest of the
    /// the warm phase's blocks' means (all threads' calls in each block).
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_mean: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_mean: f64,
    /// The plain mean over every counted batch of the warm phase.
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_mean_plain: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_mean_plain: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p50: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p99: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p999: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_max: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p50: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p99: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p999: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_max: f64,
    /// Growth, from an empty heap until the live set is full: mean ns per call
    /// (batch-timed) and the minor page faults taken meanwhile, all threads.
    #[serde(default = "crate::results::nan")]
    pub growth_alloc_ns_mean: f64,
    #[serde(default = "crate::results::nan")]
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
    #[serde(default = "crate::results::nan")]
    pub wall_ms: f64,
    /// The largest share of a thread's warm wall time spent inside timed batches (≤ 1).
    #[serde(default = "crate::results::nan")]
    pub timed_fraction_max: f64,
    /// The counter pair's cost as a share of the mean batch it brackets (the
    /// largest over threads and over alloc/free): the method's own error.
    #[serde(default = "crate::results::nan")]
    pub timer_share_max: f64,
    #[serde(default = "crate::results::nan")]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeapResult {
    pub allocator: String,
    pub heap_mode: String,
    pub workload: String,
    pub threads: u32,
    pub ops_per_thread: u64,
    pub repeat: u32,
    /// Median over repeats of the warm mean ns per call.
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_mean: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p50: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p99: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_p999: f64,
    #[serde(default = "crate::results::nan")]
    pub alloc_ns_max: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_mean: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p50: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p99: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_p999: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ns_max: f64,
    /// The original's unit: milliseconds per million calls (numerically equal to
    /// the mean ns per call).
    #[serde(default = "crate::results::nan")]
    pub alloc_ms_per_million: f64,
    #[serde(default = "crate::results::nan")]
    pub free_ms_per_million: f64,
    /// Medians over repeats of the growth phase.
    #[serde(default = "crate::results::nan")]
    pub growth_alloc_ns_mean: f64,
    #[serde(default = "crate::results::nan")]
    pub growth_free_ns_mean: f64,
    pub growth_minor_faults: u64,
    pub peak_rss_bytes: u64,
    /// Coefficient of variation (sample sd ÷ mean) of the per-repeat warm means;
    /// null with a single repeat (no spread to judge).
    pub alloc_ns_mean_cv: Option<f64>,
    pub free_ns_mean_cv: Option<f64>,
    #[serde(default = "crate::results::nan")]
    pub timed_fraction_max: f64,
    #[serde(default = "crate::results::nan")]
    pub timer_share_max: f64,
    #[serde(default = "crate::results::nan")]
    pub timer_overhead_ns: f64,
    pub pinned: bool,
    pub malloc_provider: Option<String>,
    pub runs: Vec<Repeat>,
}

/// A configuration that could not run here, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Unsupported {
    pub allocator: String,
    pub heap_mode: String,
    pub reason: String,
}

/// One entry of run.json's `results`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    pub result: Option<HeapResult>,
    pub unsupported: Option<Unsupported>,
}

/// run.json's `config` for a heap run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub threads: Vec<u32>,
    pub allocators: Vec<String>,
    pub heap_mode: String,
    pub workload: String,
    pub ops_per_thread: u64,
    pub repeat: u32,
    pub seed: u64,
    /// The allocator the relative table compares against.
    pub baseline: String,
    /// CPUs this process may use.
    pub cores: u64,
    /// The parent's timer calibration (workloads::heap::timer::Calibration).
    pub timer: serde_json::Value,
    #[serde(default = "crate::results::nan")]
    pub timer_overhead_ns: f64,
}
