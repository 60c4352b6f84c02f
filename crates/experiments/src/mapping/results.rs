//! `mapping`: one entry per method, `{"baseline": {...}, "result": {...}}`.

use serde::{Deserialize, Serialize};

/// One step's statistics over the counted iterations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct StepStats {
    #[serde(default = "record::results::nan")]
    pub ms_p50: f64,
    #[serde(default = "record::results::nan")]
    pub ms_min: f64,
    #[serde(default = "record::results::nan")]
    pub ms_max: f64,
    /// Median ns per 4 KiB page of the region.
    #[serde(default = "record::results::nan")]
    pub ns_per_page_p50: f64,
    #[serde(default = "record::results::nan")]
    pub minor_faults_p50: f64,
    #[serde(default = "record::results::nan")]
    pub major_faults_p50: f64,
    /// Resident set after the step, median, bytes.
    pub rss_after_bytes: u64,
    /// Shared memory (RssShmem) after the step, median, bytes.
    pub shmem_after_bytes: u64,
}

/// One method's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct MappingResult {
    pub method: String,
    #[serde(default)]
    pub touch: String,
    #[serde(default)]
    pub size_bytes: u64,
    #[serde(default)]
    pub stride_bytes: u64,
    #[serde(default)]
    pub iterations: u32,
    #[serde(default)]
    pub warmup: u32,
    /// 1-based run of this method (each a fresh worker); 0 in records from
    /// before repeats, whose one run's iterations are no repeats (so a
    /// missing one reads as 0, by the format, not by accident).
    #[serde(default)]
    pub repeat: u32,
    #[serde(default)]
    pub hugepages: String,
    #[serde(default)]
    pub pressure: bool,
    /// The memfd method kept one memfd across cycles (`--memfd-keep`).
    #[serde(default)]
    pub memfd_keep: bool,
    /// The free method's release paged its region out at once
    /// (`--free-pageout`).
    #[serde(default)]
    pub free_pageout: bool,
    #[serde(default)]
    pub obtain: StepStats,
    #[serde(default)]
    pub touch_step: StepStats,
    #[serde(default)]
    pub release: StepStats,
    pub retouch: Option<StepStats>,
    #[serde(default = "record::results::nan")]
    pub obtain_ms_p50: f64,
    #[serde(default = "record::results::nan")]
    pub touch_ms_p50: f64,
    #[serde(default = "record::results::nan")]
    pub release_ms_p50: f64,
    pub retouch_ms_p50: Option<f64>,
    /// Median over iterations of obtain + touch + release (+ re-touch).
    #[serde(default = "record::results::nan")]
    pub total_ms_p50: f64,
    /// total minus the touch-only baseline (touch of resident memory).
    #[serde(default = "record::results::nan")]
    pub normalized_ms_p50: f64,
    /// obtain + touch + release (+ re-touch) of each counted iteration, in order
    /// (what `compare` tests across runs).
    #[serde(deserialize_with = "record::results::nan_vec")]
    #[serde(default)]
    pub total_ms: Vec<f64>,
    #[serde(default)]
    pub rss_after_release_bytes: u64,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The touch of resident memory alone, which the normalized figures subtract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Baseline {
    pub touch_ms_p50: Option<f64>,
    pub touch_ms_min: Option<f64>,
    pub touch_ms_max: Option<f64>,
}

/// One entry of run.json's `results`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<MappingResult>,
}
