//! `thrash`: one entry per preset and repeat, `{"result": {...}}`.

use serde::{Deserialize, Serialize};

/// Latency percentiles of a probe in one window, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Window {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub n: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Windows {
    pub before: Window,
    pub during: Window,
    pub after: Window,
}

/// One consumer's account of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Consumer {
    pub index: u32,
    pub completed: bool,
    pub cycles: u64,
    /// t_p ÷ the fastest cycle this consumer had: what it would have done unthrashed.
    #[serde(default = "record::results::nan")]
    pub expected_cycles: f64,
    #[serde(default = "record::results::nan")]
    pub progress_ratio: f64,
    /// Actual end − planned end, seconds.
    #[serde(default = "record::results::nan")]
    pub lateness_s: f64,
    /// Allocation time − planned start, seconds.
    #[serde(default = "record::results::nan")]
    pub start_lateness_s: f64,
    #[serde(default = "record::results::nan")]
    pub cycle_ms_min: f64,
    #[serde(default = "record::results::nan")]
    pub cycle_ms_p50: f64,
    #[serde(default = "record::results::nan")]
    pub cycle_ms_max: f64,
    pub failure: Option<String>,
    /// This consumer's progress ratio over the bins in which memory was
    /// overcommitted (the consumers' planned sizes exceeded the room the limit
    /// leaves), when it ran at least `MIN_OVERCOMMIT_S` of them.
    pub progress_overcommitted: Option<f64>,
    /// Allocation and end, seconds from the start signal.
    #[serde(default = "record::results::nan")]
    pub start_s: f64,
    #[serde(default = "record::results::nan")]
    pub end_s: f64,
    /// Cycles completed per `BIN_MS` bin from the start signal (used for the
    /// overcommitted progress; not stored).
    #[serde(skip_serializing)]
    pub bins: Vec<u32>,
}

/// A time series for the charts, one point per collector interval; t in seconds
/// from the start signal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Series {
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub t_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub cpu_user_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub cpu_system_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub cpu_iowait_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub pswpin_per_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub pswpout_per_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub pgpgin_kib_per_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub pgpgout_kib_per_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub pgmajfault_per_s: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub psi_some_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub psi_full_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub cgroup_psi_some_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub cgroup_psi_full_pct: Vec<f64>,
    #[serde(deserialize_with = "record::results::nan_vec")]
    pub collector_lateness_ms: Vec<f64>,
    /// Probe samples: (t_s, latency ms).
    #[serde(deserialize_with = "record::results::nan_pairs")]
    pub probe_outside: Vec<(f64, f64)>,
    #[serde(deserialize_with = "record::results::nan_pairs")]
    pub probe_inside: Vec<(f64, f64)>,
}

impl Series {
    /// No point at all (`thrash --json` leaves the series out).
    pub fn is_empty(&self) -> bool {
        *self == Series::default()
    }
}

/// One run (one repeat) of one plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct ThrashResult {
    pub preset: String,
    pub repeat_index: u32,
    pub plan: Option<Plan>,
    #[serde(default)]
    pub backing: workloads::backing::BackingKind,
    /// The store's compressor, as the kernel reported it after setup (None:
    /// a store that does not compress, or a record from before it was kept).
    #[serde(default)]
    pub compressor: Option<String>,
    #[serde(default)]
    pub limit_bytes: u64,
    /// The idle workers' usage the default limit was built on.
    #[serde(default)]
    pub idle_usage_bytes: u64,
    /// Bytes of a companion inside the group that count in the overcommit
    /// with N × S (jank's frame probe's working set, part of the idle
    /// usage); 0 for thrash's own runs.
    #[serde(default)]
    pub companion_bytes: u64,
    #[serde(default)]
    pub consumers: u32,
    #[serde(default)]
    pub consumers_completed: u32,
    /// OOM kills in the group; null when they could not be read (which
    /// breaks the protocol).
    pub oom_kills: Option<u64>,
    #[serde(default)]
    pub pswpout_total: u64,
    #[serde(default)]
    pub pswpin_total: u64,
    #[serde(default)]
    pub pgmajfault_total: u64,
    /// Means over the thrash window (first allocation to last exit).
    #[serde(default = "record::results::nan")]
    pub cpu_user_pct_mean: f64,
    #[serde(default = "record::results::nan")]
    pub cpu_system_pct_mean: f64,
    #[serde(default = "record::results::nan")]
    pub cpu_iowait_pct_mean: f64,
    #[serde(default = "record::results::nan")]
    pub psi_some_pct_mean: f64,
    #[serde(default = "record::results::nan")]
    pub psi_full_pct_mean: f64,
    /// Cgroup PSI (cgroup v2 only).
    pub cgroup_psi_some_pct_mean: Option<f64>,
    #[serde(default = "record::results::nan")]
    pub pswpout_per_s_peak: f64,
    #[serde(default = "record::results::nan")]
    pub progress_ratio_min: f64,
    #[serde(default = "record::results::nan")]
    pub progress_ratio_median: f64,
    /// The median consumer's progress ratio while memory was overcommitted
    /// (None when no consumer ran long enough in that window).
    pub progress_overcommitted_median: Option<f64>,
    /// Seconds (from the start signal) during which the running consumers' sizes
    /// exceeded the room under the limit.
    #[serde(default = "record::results::nan")]
    pub overcommitted_s: f64,
    /// Swap-outs from the start signal to the last consumer's exit, and their
    /// rate over the consumers' span (first allocation to last exit): a paging rate
    /// that does not depend on the collector's interval. Null when
    /// /proc/vmstat could not be read at either end.
    #[serde(default)]
    pub pswpout_active: Option<u64>,
    #[serde(default = "record::results::nan")]
    pub pswpout_per_s_active: f64,
    #[serde(default = "record::results::nan")]
    pub lateness_max_s: f64,
    pub recovery_s: Option<f64>,
    /// Memory PSI could not be read after the run: `recovery_s` is absent
    /// because it was not measured, not because the machine stayed busy.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub psi_unread: bool,
    #[serde(default)]
    pub recovery_rule: String,
    /// Whether the recovery was measured as the study brought each system back
    /// to normality (issue 57): the consumers alive, their load fallen back to
    /// `plan.after_share` of their regions, on [`RecoveryPoint`]s and the
    /// probe inside the group. False in older records (from the last exit, on
    /// the collector's 1 s intervals), which the recovery finding does not judge.
    #[serde(default)]
    pub recovery_alive: bool,
    /// Where the recovery is counted from (s after the start signal): the
    /// moment the consumers' load fell back enough to fit under the limit
    /// ([`crate::thrash::work::overcommit_end`]).
    pub recovery_from_s: Option<f64>,
    /// The recovery watch, interval by interval, from a second before
    /// `recovery_from_s`.
    #[serde(default)]
    pub recovery_watch: Vec<RecoveryPoint>,
    /// The lateness under which the probe inside the group counts as on time
    /// in the recovery rule (ms): max(2 × its p99 before the load,
    /// [`crate::thrash::work::PROBE_CALM_MS`]).
    pub recovery_probe_limit_ms: Option<f64>,
    #[serde(default = "record::results::nan")]
    pub collector_lateness_p99_ms: f64,
    #[serde(default = "record::results::nan")]
    pub collector_lateness_max_ms: f64,
    /// The unlocked sampler inside the cgroup, same window.
    pub unlocked_lateness_p99_ms: Option<f64>,
    pub unlocked_lateness_max_ms: Option<f64>,
    #[serde(default)]
    pub probe_outside_ms: Windows,
    #[serde(default)]
    pub probe_inside_ms: Windows,
    /// Seconds from the start signal: first allocation, last exit, end of the after window.
    #[serde(default = "record::results::nan")]
    pub thrash_start_s: f64,
    #[serde(default = "record::results::nan")]
    pub thrash_end_s: f64,
    #[serde(default = "record::results::nan")]
    pub end_s: f64,
    #[serde(default = "record::results::nan")]
    pub wall_s: f64,
    #[serde(default)]
    pub host_mem_available_min_bytes: Option<u64>,
    #[serde(default)]
    pub consumer_details: Vec<Consumer>,
    #[serde(skip_serializing_if = "Series::is_empty")]
    #[serde(default)]
    pub series: Series,
    #[serde(default)]
    pub notes: Vec<String>,
    /// What kept the run inside the study's protocol (crate::thrash::work::guard),
    /// while the consumers ran t_p (the protocol's figures read this).
    #[serde(default)]
    pub guard: GuardReport,
    /// The guard over the whole run, the recovery watch included (the
    /// consumers stay alive through it, so it keeps guarding): its counts
    /// are the whole run's. None in older records.
    #[serde(default)]
    pub guard_with_recovery: Option<GuardReport>,
    /// The study's protocol held: every consumer completed, none was OOM-killed.
    #[serde(default)]
    pub protocol_held: bool,
    /// Why it did not, each in a sentence (with the kernel's OOM cause).
    #[serde(default)]
    pub protocol_breaks: Vec<String>,
    /// Depth: user CPU as a share of the busy CPU (user + system + iowait)
    /// during the thrash; it falls as paging takes over.
    #[serde(default = "record::results::nan")]
    pub cpu_user_share: f64,
    /// progress_overcommitted_median ≤ DEEP_PROGRESS.
    #[serde(default)]
    pub deep: bool,
    /// The study's protocol as figures (overcommit, depth, intensity) with
    /// what broke it ([`crate::thrash::protocol`]); null in runs recorded
    /// before them, which the report computes from their fields.
    #[serde(default)]
    pub protocol: Option<crate::thrash::protocol::Protocol>,
}

/// The parameters one experiment actually runs with, after the preset, the flags
/// and `--scale`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Plan {
    pub preset: String,
    pub consumers: u32,
    pub size_bytes: u64,
    pub writes: u64,
    #[serde(default = "record::results::nan")]
    pub sleep_ms: f64,
    #[serde(default = "record::results::nan")]
    pub stagger_ms: f64,
    #[serde(default = "record::results::nan")]
    pub initial_delay_ms: f64,
    /// t_p = N × t_c + t_c.
    #[serde(default = "record::results::nan")]
    pub active_ms: f64,
    #[serde(default = "record::results::nan")]
    pub scale: f64,
    /// The factor on t_s, t_c and the initial delay.
    #[serde(default = "one")]
    pub time_scale: f64,
    /// The cgroup limit requested (None: computed from the idle workers' usage
    /// plus N × S ÷ 2.5 once they run).
    pub limit_bytes: Option<u64>,
    /// The CPU-only control (`--cpu-only`): the limit holds the idle workers
    /// and twice N × S, so that nothing pages; the consumers run as they
    /// would. Outside the study's protocol by definition (its overcommit is
    /// under 1). False in older records.
    #[serde(default)]
    pub cpu_only: bool,
    /// When the last consumer should end, from the start signal.
    #[serde(default = "record::results::nan")]
    pub planned_duration_ms: f64,
    /// The share of its region each consumer keeps writing after t_p, alive,
    /// while the recovery is watched ([`crate::thrash::work::FALL_BACK`]; 1:
    /// its load stays, the recovery's negative control). 0 in a record from
    /// before issue 57, whose consumers exited at t_p.
    #[serde(default)]
    pub after_share: f64,
}

/// One interval of the recovery watch ([`crate::thrash::work::RECOVERY_POLL`]
/// apart): its end (s after the start signal), the machine's paging
/// (pswpin + pswpout, pages/s) and its memory PSI "some" (% of the
/// interval), each NaN when unread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct RecoveryPoint {
    #[serde(default = "record::results::nan")]
    pub t_s: f64,
    #[serde(default = "record::results::nan")]
    pub paging_per_s: f64,
    #[serde(default = "record::results::nan")]
    pub psi_some_pct: f64,
}

fn one() -> f64 {
    1.0
}

/// What the guard saw and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct GuardReport {
    /// "oom_control" (v1), "memory.high" (v2), or "none".
    pub method: String,
    pub target_bytes: u64,
    /// v1: times the group entered an OOM condition (each one a stalled fault
    /// that the kernel would otherwise have answered with a kill).
    pub oom_stalls: u64,
    /// v1: raises of the limit (one page after a reclaim ahead, a whole
    /// step where none could be made), and the highest limit reached.
    pub raises: u64,
    pub limit_max_bytes: u64,
    /// Seconds the limit stood above the target.
    #[serde(default = "record::results::nan")]
    pub above_target_s: f64,
    /// v1: the guard gave up (limit at MAX_RAISE × target) and let the kernel kill.
    pub gave_up: bool,
    /// v1: bytes of the consumers' buffers the guard asked the kernel to
    /// page out ahead of its own reclaim (`process_madvise(MADV_PAGEOUT)`),
    /// as kswapd did on the study's machine: what was advised, which counts
    /// pages already out or still being written too, so it is at most what
    /// the guard paged out. 0 where it did not (v2, or the kernel refused).
    pub paged_ahead_bytes: u64,
    /// v1: why the kernel refused the reclaim ahead, where it did (the
    /// guard then raised whole steps); None where it did not.
    pub ahead_refused: Option<String>,
    /// v2: the highest charge seen (`memory.peak` at the end where the kernel
    /// has it, and `memory.current` at every look). `memory.high` holds the
    /// group near the target by throttling, never by a limit that moves, so
    /// this is the room's largest extent there (`limit_max_bytes` is the
    /// hard stop above it). None on v1 and where neither could be read.
    pub usage_max_bytes: Option<u64>,
    /// v2 memory.events deltas over the run.
    pub high_events: u64,
    pub max_events: u64,
    pub oom_events: u64,
}

/// One entry of run.json's `results`: one run, required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Entry {
    pub result: ThrashResult,
}

/// run.json's `config` for a thrash run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Config {
    pub plans: Vec<Plan>,
    pub repeat: u32,
    pub backing: Vec<String>,
    #[serde(default = "record::results::nan")]
    pub scale: f64,
    #[serde(default = "record::results::nan")]
    pub time_scale: f64,
    /// The charts' smoother: `ma` or `bezier`.
    pub smooth: String,
    pub recovery_rule: String,
    pub interval_ms: u64,
    pub probe_period_ms: u64,
    pub probe_ws_bytes: u64,
}
