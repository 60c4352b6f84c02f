//! `rightsize`: the smallest memory limit a program needs for a chosen
//! slowdown (batch mode), or the footprint a running service settles at under
//! gentle reclaim (service mode).

use serde::{Deserialize, Serialize};

/// One run of the program: unlimited (`limit_bytes` none) or under a limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct ProgramRun {
    /// 1-based, in the order the runs happened.
    pub index: u32,
    /// `baseline`, `probe` (the search) or `verify`.
    pub role: String,
    pub limit_bytes: Option<u64>,
    /// `ok`, `too_slow` (stopped at the time cap), `oom` (killed by the
    /// kernel's OOM killer in its group) or `failed` (exited non-zero).
    pub outcome: String,
    pub exit_code: Option<i32>,
    #[serde(default = "record::results::nan")]
    pub seconds: f64,
    #[serde(default = "record::results::nan")]
    pub user_s: f64,
    #[serde(default = "record::results::nan")]
    pub sys_s: f64,
    /// Peak charge of its memory cgroup (memory.peak, memory.max_usage_in_bytes).
    pub peak_bytes: u64,
    pub major_faults: u64,
    /// Stall time while it ran: its group's memory.pressure on cgroup v2, the
    /// whole machine's /proc/pressure/memory on v1 (`psi_scope`); null when
    /// it could not be read before and after.
    pub psi_some_us: Option<u64>,
    pub psi_full_us: Option<u64>,
    /// Pages swapped in while it ran (/proc/vmstat pswpin; the machine's);
    /// null when unread.
    pub swap_in_pages: Option<u64>,
    /// The compressed store's RAM at its largest while it ran (zram
    /// mem_used_total, or zswap's pool); null with no compressed store, or
    /// when no reading of it succeeded.
    pub store_used_bytes: Option<u64>,
    /// What the store held at its largest, uncompressed (null as above).
    pub store_orig_bytes: Option<u64>,
    /// Its runtime over the unlimited runs' (the paired run's, for a verify run).
    #[serde(default = "record::results::nan")]
    pub ratio: f64,
    /// The unlimited run it is paired with (verify runs).
    pub paired_with: Option<u32>,
    /// The second unlimited run's working set: the bytes its processes
    /// referenced per window (an eighth of the first run's time, ¼ s to 2 s)
    /// in its steady part (the median of the windows in the second half of
    /// the run, or the last window): the search's first guess.
    pub working_set_bytes: Option<u64>,
    /// Bytes referenced in each window of that run, in order.
    pub working_set_windows: Vec<u64>,
}

/// One point of the curve: a limit and what running under it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct CurvePoint {
    pub limit_bytes: u64,
    /// Runs at this limit.
    pub n: u32,
    /// The runtime ratio (geometric mean of the runs' ratios).
    #[serde(default = "record::results::nan")]
    pub ratio: f64,
    /// Its 95 % interval: paired runs' t interval (n ≥ 2), or for one run the
    /// interval the unlimited runs' spread gives a single run.
    pub ci95: Option<[f64; 2]>,
    /// A run stopped at the time cap: the ratio is at least this.
    pub censored: bool,
    /// ok, too_slow, oom (the worst of its runs).
    pub outcome: String,
    #[serde(default = "record::results::nan")]
    pub psi_some_pct: f64,
    #[serde(default = "record::results::nan")]
    pub psi_full_pct: f64,
    pub major_faults: u64,
    /// The most pages swapped in by a run here; null when one was unread.
    pub swap_in_pages: Option<u64>,
    /// The compressed store's RAM at its largest in a run here; null with no
    /// compressed store, or when a run's store could not be read.
    pub store_used_bytes: Option<u64>,
    /// The limit plus what the compressed store held in RAM (the limit alone
    /// with no store, or with zswap's pool charged inside it); null when the
    /// store's size is needed and unread.
    pub total_bytes: Option<u64>,
}

/// What the unlimited runs measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Baseline {
    pub n: u32,
    #[serde(default = "record::results::nan")]
    pub seconds_median: f64,
    /// Coefficient of variation of the runtimes (describes the spread).
    #[serde(default = "record::results::nan")]
    pub seconds_cv: f64,
    #[serde(default = "record::results::nan")]
    pub cpu_s_median: f64,
    pub peak_bytes_median: u64,
    pub peak_bytes_max: u64,
    pub major_faults_median: u64,
}

/// The answer, and how well it was checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Recommendation {
    pub limit_bytes: u64,
    /// The verification's 95 % upper bound lies within the target.
    pub verified: bool,
    /// Paired runs at the limit.
    pub pairs: u32,
    /// The slowdown (runtime ratio − 1) and its 95 % interval.
    #[serde(default = "record::results::nan")]
    pub slowdown: f64,
    pub slowdown_ci95: Option<[f64; 2]>,
    /// The largest swap the program held at the limit (what a unit needs
    /// besides the limit: MemorySwapMax=, docker --memory-swap).
    pub swap_bytes: u64,
    /// The limit plus the compressed store's RAM at its largest.
    pub total_bytes: u64,
    /// The unlimited peak less the total: what the limit saves in all (may
    /// be negative: a store that holds what does not compress costs more
    /// than it saves).
    pub saved_bytes: i64,
    /// What the compressed store held compressed to at most 70 % of its size
    /// (None: no compressed store, or it held nothing).
    pub store_compresses: Option<bool>,
    /// The verification's one-sided upper bound of the runtime ratio, at the
    /// share of α its deciding look spent.
    #[serde(default = "record::results::nan")]
    pub upper_bound: f64,
    /// That look's share of α.
    #[serde(default = "record::results::nan")]
    pub look_alpha: f64,
    /// Ready lines: systemd, docker, kubernetes.
    pub lines: Vec<String>,
    /// The answer in one paragraph.
    pub summary: String,
    /// The answer in Kubernetes' terms: a `resources:` block, its QoS class,
    /// and the LimitedSwap arithmetic when it relies on swap.
    pub kubernetes: Option<crate::rightsize::kube::Kubernetes>,
}

/// `--check`'s answer for one limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckAnswer {
    /// The one-sided upper bound of the ratio is within the target.
    Verified,
    /// The one-sided 95 % lower bound is above the target, or a run passed the time cap.
    TooSlow,
    /// A limited run was killed by the OOM killer in its group.
    OomKilled,
    /// Neither, within the budget.
    #[default]
    Undecided,
}

/// One limit `--check`ed: pairs under the verification's rules, its answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct LimitCheck {
    /// As the user wrote it.
    pub asked: String,
    pub limit_bytes: u64,
    pub answer: CheckAnswer,
    /// Pairs made at the limit.
    pub pairs: u32,
    /// The pairs the budget gave it.
    pub pairs_allowed: u32,
    /// The runtime ratio (geometric mean of the pairs') and its two-sided 95 % interval.
    #[serde(default = "record::results::nan")]
    pub ratio: f64,
    pub ratio_ci95: Option<[f64; 2]>,
    /// The last look's one-sided upper bound, at that look's share of α, and that share.
    pub upper_bound: Option<f64>,
    pub look_alpha: Option<f64>,
    /// Limited runs killed by the OOM killer, and limited runs made.
    pub oom_killed: u32,
    pub limited_runs: u32,
    /// A limited run passed the time cap.
    pub stopped_at_cap: bool,
    /// Undecided: about this many pairs would decide, if the ratio holds,
    /// and the runs and seconds they take.
    pub pairs_to_decide: Option<u32>,
    pub runs_to_decide: Option<u32>,
    pub seconds_to_decide: Option<f64>,
    /// The largest swap the program held at the limit.
    pub swap_bytes: Option<u64>,
    /// A verified limit in Kubernetes' terms.
    pub kubernetes: Option<crate::rightsize::kube::Kubernetes>,
    /// The answer in one line.
    pub said: String,
}

/// Before the first limited run: what the noise of the unlimited runs lets
/// the budget verify.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Plan {
    /// The spread of a pair's log ratio assumed (√2 × the unlimited runs').
    #[serde(default = "record::results::nan")]
    pub pair_sd: f64,
    /// Verification pairs for 80 % power at a limit costing a quarter of the target.
    pub pairs_needed: Option<u32>,
    pub runs_needed: Option<u32>,
    pub runs_affordable: u32,
    /// The budget buys the pairs needed.
    pub enough: bool,
    /// The smallest target this budget can verify at this noise.
    pub verifiable_slowdown: Option<f64>,
    /// Went on though the budget did not buy the pairs (--insist).
    pub insisted: bool,
    /// The plan in words, as said before the first limited run.
    pub said: String,
}

/// When nothing verified: the safe answer, and the best that was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Unverified {
    /// The limit the ready lines give: the unlimited peak.
    pub safe_limit_bytes: u64,
    /// The candidate with the lowest upper bound, not verified.
    pub best_limit_bytes: Option<u64>,
    pub best_pairs: u32,
    #[serde(default = "record::results::nan")]
    pub best_ratio: f64,
    /// Its upper bound at its last look's α.
    #[serde(default = "record::results::nan")]
    pub best_upper_bound: f64,
    /// Ready lines at the safe limit.
    pub lines: Vec<String>,
    pub summary: String,
}

/// One reading of service mode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct ServicePoint {
    pub t_s: f64,
    /// The target's memory: its cgroup's charge (--cgroup) or its resident
    /// set (--pid).
    pub footprint_bytes: u64,
    /// Asked of the kernel in this step.
    pub reclaim_bytes: u64,
    /// Stall share in the step before this reading, percent.
    #[serde(default = "record::results::nan")]
    pub psi_some_pct: f64,
    /// Major faults (refaults) in the step.
    pub major_faults: u64,
    pub probe_ms: Option<f64>,
    /// `reclaim`, `hold` (pressure at or above the threshold) or `back_off`.
    pub action: String,
}

/// Service mode: the target, the method, and where it settled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Service {
    /// `pid 1234 (comm)` or the cgroup's path.
    pub target: String,
    /// `memory.reclaim` or `process_madvise`.
    pub method: String,
    pub psi_threshold_pct: f64,
    pub interval_s: f64,
    pub start_bytes: u64,
    /// Median footprint over the last third of the run; null when no
    /// reading was kept.
    pub settled_bytes: Option<u64>,
    /// Median stall share over the last third, percent.
    #[serde(default = "record::results::nan")]
    pub settled_psi_some_pct: f64,
    pub reclaimed_bytes: u64,
    pub major_faults: u64,
    /// The group's OOM kills; null for a process (its OOM kill ends the run
    /// as an exit) or where they could not be read.
    pub oom_kills: Option<u64>,
    pub probe_baseline_ms: Option<f64>,
    /// The readings, at most 20 000: past that, adjacent readings are merged
    /// in pairs (the larger footprint, reclaim and faults summed, the mean
    /// pressure).
    pub timeline: Vec<ServicePoint>,
    /// Why it ended: duration, interrupted, target exited.
    pub ended: String,
}

/// Before the first limited run: the knee and the total memory at the target
/// this backing should give, from the second unlimited run's steady working
/// set and the compressibility of its cold pages (as `assess` reads them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Prediction {
    /// The smallest limit that holds the working set: W + 10 % + 4 MiB.
    pub knee_bytes: u64,
    /// The steady working set it came from.
    pub working_set_bytes: u64,
    /// What must go to the store at the knee: the unlimited peak less the knee.
    pub cold_bytes: u64,
    /// Compressed ÷ original of the cold pages read, by the compressor that
    /// stands for this store's (`proxy`); None for a store that does not
    /// compress (disk) or when no cold page was read.
    pub stored_fraction: Option<f64>,
    /// `lz4` (for the LZ family: lz4, lzo, lzo-rle) or `zstd`.
    pub proxy: Option<String>,
    /// Pages read for the sample, and of them cold.
    pub pages_read: u64,
    pub cold_pages_read: u64,
    /// The store's RAM expected at the knee (cold × stored fraction).
    pub store_bytes: u64,
    /// The knee plus the store's RAM: the total memory at the target.
    pub total_bytes: u64,
    /// How long reading and compressing the sample took, seconds (in the
    /// second unlimited run, on pagelab's own thread).
    pub sample_seconds: f64,
    /// The prediction in words, as said before the first limited run.
    pub said: String,
}

/// How rightsize answered: from runs of the command (`-- CMD`, batch) or
/// on a running process or group (`--pid`, `--cgroup`, service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Mode {
    #[default]
    Batch,
    Service,
}
crate::serde_by_name!(Mode, "rightsize mode");

#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct RightsizeResult {
    pub mode: Mode,
    #[serde(default)]
    pub command: Vec<String>,
    /// The slowdown the user accepts (0.05 = 5 %).
    #[serde(default)]
    pub target_slowdown: f64,
    /// `v1` or `v2`; null only where a record written before the type said "".
    #[serde(default, deserialize_with = "version_or_none")]
    #[schemars(with = "Option<CgroupVersionName>")]
    pub cgroup_version: Option<probe::cgroup::CgroupVersion>,
    /// What took the pages that did not fit: zram, zswap, swapfile, existing,
    /// none (the store asked for, when no limited run made one); null only
    /// where a record written before the type said "".
    #[serde(default, deserialize_with = "workloads::backing::none_if_empty")]
    pub backing: Option<workloads::backing::BackingKind>,
    pub compressor: Option<String>,
    /// `cgroup` or `machine`: where the runs' PSI comes from; null only
    /// where a record written before the type said "".
    #[serde(default, deserialize_with = "scope_or_none")]
    pub psi_scope: Option<PsiScope>,
    /// Every run of the program, in order.
    #[serde(default)]
    pub runs: Vec<ProgramRun>,
    #[serde(default)]
    pub run_count: u32,
    pub baseline: Option<Baseline>,
    /// Limit → cost, by limit.
    #[serde(default)]
    pub curve: Vec<CurvePoint>,
    pub recommendation: Option<Recommendation>,
    /// Why there is no verified recommendation, if there is none.
    pub unverified_reason: Option<String>,
    /// The safe answer and the best unverified candidate, when nothing verified.
    pub unverified: Option<Unverified>,
    /// What the budget allows at this noise (batch mode).
    pub plan: Option<Plan>,
    /// The pooled spread of a pair's log ratio at the end (sd, degrees of freedom).
    pub pair_sd: Option<[f64; 2]>,
    /// `--check`: each limit given, in order (batch mode; no search then).
    #[serde(default)]
    pub checks: Vec<LimitCheck>,
    pub service: Option<Service>,
    /// For a synthetic target (pagelab's hot/cold worker): its hot and cold sets.
    pub synthetic_hot_bytes: Option<u64>,
    pub synthetic_cold_bytes: Option<u64>,
    /// The knee and total this backing was predicted to give (batch mode).
    pub prediction: Option<Prediction>,
    #[serde(default = "record::results::nan")]
    pub seconds: f64,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Where a rightsize run's pressure (PSI) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PsiScope {
    /// The target's own memory cgroup's memory.pressure (cgroup v2).
    Cgroup,
    /// The whole machine's /proc/pressure/memory (cgroup v1, or a process
    /// not alone in a v2 group).
    Machine,
}

impl std::fmt::Display for PsiScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PsiScope::Cgroup => "cgroup",
            PsiScope::Machine => "machine",
        })
    }
}

/// A field that older records wrote as "" for "unknown": None then.
fn empty_or<'de, D: serde::Deserializer<'de>, T: serde::de::DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    match <Option<String> as Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => serde_json::from_value(serde_json::Value::String(s)).map(Some).map_err(serde::de::Error::custom),
    }
}

fn version_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<probe::cgroup::CgroupVersion>, D::Error> {
    empty_or(d)
}

fn scope_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<PsiScope>, D::Error> {
    empty_or(d)
}

/// `probe::cgroup::CgroupVersion` as the schema names it (the probe crate
/// has no schema of its own): the same two values, as serde writes them.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum CgroupVersionName {
    V1,
    V2,
}
