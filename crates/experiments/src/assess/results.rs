//! `assess`: one entry per assessed process: how much of its memory is cold,
//! how its real pages compress, and (with `--trim`) what trimming it cost.

use serde::{Deserialize, Serialize};

/// Bytes by kind of memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Kinds {
    pub anon: u64,
    pub file: u64,
    pub shmem: u64,
}

impl Kinds {
    pub fn total(&self) -> u64 {
        self.anon + self.file + self.shmem
    }
    /// These bytes less `o`'s, kind by kind.
    pub fn minus(&self, o: &Kinds) -> Kinds {
        Kinds {
            anon: self.anon.saturating_sub(o.anon),
            file: self.file.saturating_sub(o.file),
            shmem: self.shmem.saturating_sub(o.shmem),
        }
    }
}

/// What was assessed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Target {
    pub pid: i32,
    pub comm: String,
    /// The command pagelab started (`-- CMD`), empty for `--pid`.
    pub command: Vec<String>,
    /// `--synthetic`: the worker's size and the fraction it keeps touching.
    pub synthetic_bytes: Option<u64>,
    pub synthetic_hot_fraction: Option<f64>,
    /// The worker's fill pattern and eat's user-space estimate of it (lz4
    /// compressed ÷ original), for checking the compressibility read.
    pub synthetic_pattern: Option<String>,
    pub synthetic_lz4_estimate: Option<f64>,
}

/// One window of the working-set estimate: what was touched within it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Window {
    #[serde(default = "record::results::nan")]
    pub seconds: f64,
    /// Resident at the window's end.
    pub resident: Kinds,
    /// Referenced (touched) within the window.
    pub referenced: Kinds,
    /// 1 − referenced ÷ resident, per kind (NaN where nothing is resident).
    #[serde(default = "record::results::nan")]
    pub cold_anon: f64,
    #[serde(default = "record::results::nan")]
    pub cold_file: f64,
    #[serde(default = "record::results::nan")]
    pub cold_shmem: f64,
    #[serde(default = "record::results::nan")]
    pub cold_total: f64,
}

/// A working-set source the kernel may offer, and whether assess used it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Source {
    pub name: String,
    pub used: bool,
    pub why: String,
}

pub use crate::kit::pages::{Compress, Compressibility};

/// Latency of the user's probe command, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Latency {
    pub runs: u32,
    pub failures: u32,
    #[serde(default = "record::results::nan")]
    pub p50_ms: f64,
    #[serde(default = "record::results::nan")]
    pub p99_ms: f64,
}

/// One point of the curve after the trim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Point {
    /// Seconds since the trim ended.
    pub t_s: f64,
    pub rss_anon_bytes: u64,
    pub swap_bytes: u64,
    pub major_faults: u64,
    /// The store's uncompressed and compressed sizes, and the memory it uses;
    /// null where the store could not be read at that point.
    pub store_orig_bytes: Option<u64>,
    pub store_compr_bytes: Option<u64>,
    pub store_used_bytes: Option<u64>,
}

/// What trimming cost (`--trim`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Trim {
    /// zram (made for the run) or existing, and the store's compressor.
    pub store: String,
    pub compressor: Option<String>,
    pub rss_anon_before_bytes: u64,
    pub rss_anon_after_bytes: u64,
    #[serde(default = "record::results::nan")]
    pub seconds: f64,
    pub curve: Vec<Point>,
    /// Major faults in the first 5 s after the trim, and per second over the run.
    pub major_faults_first_5s: u64,
    #[serde(default = "record::results::nan")]
    pub major_faults_per_s: f64,
    /// Memory PSI (some), mean percent over the follow-up.
    #[serde(default = "record::results::nan")]
    pub psi_some_pct: f64,
    /// Pages faulted back from swap, as % of the working set per minute
    /// (Google's far memory holds itself to 0.2 %/min).
    #[serde(default = "record::results::nan")]
    pub swap_in_pct_ws_per_min: f64,
    /// The working set it is measured against: anon referenced in the longest window.
    pub working_set_bytes: u64,
    /// Bytes faulted back from swap over the follow-up (the fall of VmSwap).
    pub swap_in_bytes: u64,
    pub probe_before: Option<Latency>,
    pub probe_after: Option<Latency>,
    /// What became of the store made for the run.
    pub store_removed: bool,
    pub store_note: String,
}

/// One assessed process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct AssessResult {
    /// 1-based: the windows and compressibility are measured `--repeat` times.
    pub repeat: u32,
    #[serde(default)]
    pub target: Target,
    /// The working-set source used, and the others considered.
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub windows: Vec<Window>,
    pub compress: Option<Compress>,
    pub trim: Option<Trim>,
    /// How DAMON watched, when it was the source.
    pub damon: Option<DamonRun>,
    /// How MGLRU was aged, when it was the source.
    pub mglru: Option<MglruRun>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// An MGLRU pass: the memory cgroup aged, when (seconds from the pass's
/// start), and how many generations it counted at the end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct MglruRun {
    pub memcg: String,
    pub memcg_id: u64,
    pub agings_s: Vec<f64>,
    pub generations: u32,
}

/// A DAMON monitoring pass: its intervals, how long it ran, and the regions
/// it ended with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct DamonRun {
    pub sample_us: u64,
    pub aggr_us: u64,
    #[serde(default = "record::results::nan")]
    pub monitored_s: f64,
    pub regions: u32,
    /// Regions with no access seen in the last aggregation interval.
    pub idle_regions: u32,
    /// The aggregations DAMON did per nominal interval over the last
    /// [`PACE_PROBE_S`] (1 = on time). A starved kdamond (a loaded machine,
    /// an emulated one) ages its regions slower than the clock, so the ages
    /// are converted to seconds at this pace. NaN in runs before 0.3.
    #[serde(default = "record::results::nan")]
    pub pace: f64,
}

/// How long before the end of its watch assess reads DAMON's regions a first
/// time, to measure DAMON's pace.
pub const PACE_PROBE_S: f64 = 1.0;

impl AssessResult {
    /// The longest window.
    pub fn longest(&self) -> Option<&Window> {
        self.windows.iter().max_by(|a, b| a.seconds.total_cmp(&b.seconds))
    }
}
