//! `eat`: one result per pattern, store and repeat.

use record::results::PhaseResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Estimated stored fraction per compressor (shared with assess and
/// rightsize, so it lives with the compressor).
pub use workloads::compress::Estimate;

/// The store's state at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct StoreStats {
    /// zram: uncompressed bytes stored.
    pub orig_data_bytes: Option<u64>,
    /// zram: compressed bytes stored.
    pub compr_data_bytes: Option<u64>,
    /// zram: memory used by the store (allocator overhead included).
    pub mem_used_bytes: Option<u64>,
    /// zram: pages stored as a single repeated value, with no data.
    pub same_pages: Option<u64>,
    /// zram: pages stored uncompressed because they did not shrink.
    pub huge_pages: Option<u64>,
    /// zswap pool size (meminfo `Zswap`).
    pub zswap_bytes: Option<u64>,
    /// Uncompressed bytes in zswap (meminfo `Zswapped`).
    pub zswapped_bytes: Option<u64>,
    /// Pages zswap has taken in since boot (vmstat `zswpout`).
    pub zswpout_pages: Option<u64>,
    /// Zero-filled pages the swap layer swapped out without writing them to any
    /// device, since boot (vmstat `swpout_zero`, on kernels that have it).
    pub swpout_zero_pages: Option<u64>,
    /// The worker's swapped-out bytes (VmSwap).
    pub swapped_bytes: u64,
    /// The worker's resident anonymous bytes (RssAnon).
    pub resident_bytes: u64,
}

/// One pattern's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct EatResult {
    pub pattern: String,
    #[serde(default)]
    pub size_bytes: u64,
    #[serde(default)]
    pub block_bytes: usize,
    #[serde(default)]
    pub seed: u64,
    /// 1-based repeat number.
    pub repeat: u32,
    #[serde(default)]
    pub backing: workloads::backing::BackingKind,
    pub compressor: Option<String>,
    #[serde(default)]
    pub swap_areas: Vec<String>,
    #[serde(default)]
    pub trim: String,
    /// Whether the hash on read-back equals the hash of what was written.
    #[serde(default)]
    pub verified: bool,
    #[serde(default)]
    pub hash_written: String,
    #[serde(default)]
    pub hash_read: String,
    /// Store memory used ÷ bytes trimmed; `None` without a compressed store or with
    /// nothing trimmed.
    pub stored_fraction: Option<f64>,
    /// Store memory used for the trimmed data, bytes (delta over the run);
    /// `None` without a compressed store (a disk swap, no swap), never a 0
    /// that was not read.
    pub stored_bytes: Option<u64>,
    /// Bytes moved out of the working set into swap by the trim (VmSwap delta).
    #[serde(default)]
    pub trimmed_bytes: u64,
    #[serde(default)]
    pub phases: BTreeMap<String, PhaseResult>,
    #[serde(default)]
    pub after_trim: StoreStats,
    #[serde(default)]
    pub after_settle: StoreStats,
    /// Fill bandwidth of the pattern on first touch (page faults included), GB/s.
    #[serde(default = "record::results::nan")]
    pub fill_gbps_first_touch: f64,
    /// Fill bandwidth of the pattern over resident memory, GB/s.
    #[serde(default = "record::results::nan")]
    pub fill_gbps_refill: f64,
    /// memset of a region of the same size on first touch, same process, GB/s.
    #[serde(default = "record::results::nan")]
    pub memset_gbps_first_touch: f64,
    /// memset over resident memory, GB/s.
    #[serde(default = "record::results::nan")]
    pub memset_gbps_refill: f64,
    /// Stored fraction estimated by compressing 4 KiB pages in user space.
    #[serde(default)]
    pub estimated_ratio: Estimate,
    /// Kernel's stored fraction from zram (compr_data_size ÷ orig_data_size).
    pub kernel_compr_ratio: Option<f64>,
    /// Trim time per trimmed page, microseconds.
    pub trim_us_per_page: Option<f64>,
    /// Read-back time per trimmed page, microseconds.
    pub restore_us_per_page: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
}
