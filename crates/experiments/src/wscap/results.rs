//! `wscap`: one result per mode and repeat.

use serde::{Deserialize, Serialize};

/// System-wide reclaim counters over a mode's window (vmstat deltas, pages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Reclaim {
    pub pgscan: u64,
    pub pgsteal: u64,
    pub workingset_refault: u64,
    pub pswpin: u64,
    pub pswpout: u64,
}

/// One mode's run (or one point of a `--sweep-cap` series).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct WscapResult {
    pub mode: crate::wscap::work::Mode,
    /// False when this kernel or cgroup version cannot do the mode (see `reason`).
    #[serde(default)]
    pub supported: bool,
    pub reason: Option<String>,
    /// `ok`, or `OOM-killed inside the cap`.
    #[serde(default)]
    pub outcome: String,
    /// Part of a `--sweep-cap` series.
    #[serde(default)]
    pub sweep: bool,
    /// Part of the memory arm (`--memory-store`): `none` and `cap-max` run
    /// again on the store named in `backing`, for the memory finding only.
    #[serde(default)]
    pub memory_arm: bool,
    #[serde(default)]
    pub size_bytes: u64,
    /// The cap in force (cap modes), bytes.
    pub cap_bytes: Option<u64>,
    pub period_s: Option<f64>,
    #[serde(default)]
    pub access: String,
    pub repeat: u32,
    #[serde(default)]
    pub backing: workloads::backing::BackingKind,
    pub compressor: Option<String>,
    #[serde(default = "record::results::nan")]
    pub duration_s: f64,
    #[serde(default)]
    pub scans: u64,
    #[serde(default = "record::results::nan")]
    pub scans_per_sec: f64,
    #[serde(default = "record::results::nan")]
    pub ms_per_scan_p50: f64,
    #[serde(default = "record::results::nan")]
    pub ms_per_scan_p99: f64,
    #[serde(default = "record::results::nan")]
    pub ms_per_scan_max: f64,
    /// scans/s without a cap ÷ scans/s in this mode (same run).
    pub slowdown: Option<f64>,
    #[serde(default = "record::results::nan")]
    pub minor_faults_per_scan: f64,
    #[serde(default = "record::results::nan")]
    pub major_faults_per_scan: f64,
    /// The worker's resident set during the window (VmRSS), bytes; null
    /// (as the three below) when no poll could read the worker.
    pub rss_median_bytes: Option<u64>,
    pub rss_max_bytes: Option<u64>,
    /// The worker's resident anonymous memory, max, bytes.
    pub rss_anon_max_bytes: Option<u64>,
    /// Memory charged to the worker's cgroup, max, bytes.
    pub charged_max_bytes: Option<u64>,
    pub swap_max_bytes: Option<u64>,
    /// The memory the mode's pages held in RAM, max, bytes: poll by poll the
    /// group's charge (its resident pages and swap cache) + the zram store +
    /// the rise of zswap's pool, the three where a capped page can stay in
    /// RAM; none when no poll read the charge.
    pub held_max_bytes: Option<u64>,
    /// The compressed store (zram mem_used_total), max, bytes.
    pub store_max_bytes: Option<u64>,
    /// The worker's CPU over the window, seconds.
    #[serde(default = "record::results::nan")]
    pub cpu_user_s: f64,
    #[serde(default = "record::results::nan")]
    pub cpu_system_s: f64,
    #[serde(default)]
    pub reclaim: Reclaim,
    /// Minimal scan loop over the same buffer (no per-scan timing), scans/s, median
    /// of ten windows alternated with `instrumented_scans_per_sec`; `none` only.
    pub minimal_scans_per_sec: Option<f64>,
    /// The instrumented loop (a timestamp per scan) in those alternating windows.
    pub instrumented_scans_per_sec: Option<f64>,
    /// Median over neighbouring window pairs of instrumented ÷ minimal.
    pub instrumented_vs_minimal: Option<f64>,
    /// Scans per second, second by second.
    #[serde(default)]
    pub scans_per_second_series: Vec<u64>,
    #[serde(default)]
    pub notes: Vec<String>,
}
