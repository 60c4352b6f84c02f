//! Memory-cgroup files, v2 (Documentation/admin-guide/cgroup-v2.rst, "Memory")
//! and v1 (Documentation/admin-guide/cgroup-v1/memory.rst).
//!
//! Limits are normalized: v2's `max` and v1's "unlimited" sentinel (a value near
//! 2^63 rounded to pages) both become `u64::MAX`.

use crate::counters::{Counters, Keys};
use crate::error::ParseError;
use crate::util::{parse_flat_keyed, parse_flat_keyed_with, parse_single_u64};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    V1,
    V2,
}

impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// The value used for "no limit".
pub const UNLIMITED: u64 = u64::MAX;

/// v1 prints PAGE_COUNTER_MAX * PAGE_SIZE (9223372036854771712 with 4 KiB pages)
/// for "unlimited"; anything at or above 2^62 is treated as that sentinel.
const V1_UNLIMITED_FLOOR: u64 = 1 << 62;

/// A v2 limit file (`memory.max`, `memory.high`, `memory.swap.max`): `max` or bytes.
pub fn parse_v2_limit(text: &str) -> Result<u64, ParseError> {
    if text.trim() == "max" { Ok(UNLIMITED) } else { parse_single_u64(text) }
}

/// A v1 limit file (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`).
pub fn parse_v1_limit(text: &str) -> Result<u64, ParseError> {
    let v = parse_single_u64(text)?;
    Ok(if v >= V1_UNLIMITED_FLOOR { UNLIMITED } else { v })
}

/// `memory.stat` (v1 and v2) and `memory.events`: "key value" maps.
pub fn parse_keyed(text: &str) -> Result<Counters, ParseError> {
    parse_flat_keyed(text)
}

/// [`parse_keyed`], reusing the key table of a previous read.
pub fn parse_keyed_with(text: &str, prev: Option<&Keys>) -> Result<Counters, ParseError> {
    parse_flat_keyed_with(text, prev)
}

/// One counter file (`memory.current`, `memory.usage_in_bytes`, `memory.failcnt`, ...).
pub fn parse_counter(text: &str) -> Result<u64, ParseError> {
    parse_single_u64(text)
}

/// What one sample of a memory cgroup holds. Fields a version lacks are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupSample {
    pub version: Option<CgroupVersion>,
    /// Path relative to the memory hierarchy's root, e.g. `pagelab/eat-1`.
    pub path: String,
    /// Memory charged to the group, bytes (v2 memory.current, v1 memory.usage_in_bytes).
    pub usage_bytes: Option<u64>,
    /// Hard limit, bytes (v2 memory.max, v1 memory.limit_in_bytes); u64::MAX for none.
    pub limit_bytes: Option<u64>,
    /// Throttling limit, bytes (v2 memory.high only).
    pub high_bytes: Option<u64>,
    /// Swap used by the group, bytes (v2 memory.swap.current; v1 memsw.usage - usage).
    pub swap_bytes: Option<u64>,
    /// v1 memory+swap usage, bytes.
    pub memsw_usage_bytes: Option<u64>,
    /// v1 memory.failcnt: how often the limit was hit.
    pub failcnt: Option<u64>,
    /// memory.stat (v2 keys are bytes or event counts; v1 keys are bytes or counts).
    pub stat: Option<Counters>,
    /// v2 memory.events (low, high, max, oom, oom_kill, ...).
    pub events: Option<Counters>,
    /// v2 memory.pressure.
    pub pressure: Option<crate::pressure::Pressure>,
}

impl CgroupSample {
    /// Anonymous memory in the group, bytes (v2 `anon`, v1 `total_rss`/`rss`).
    pub fn anon_bytes(&self) -> Option<u64> {
        let s = self.stat.as_ref()?;
        match self.version? {
            CgroupVersion::V2 => s.get("anon"),
            CgroupVersion::V1 => s.get("total_rss").or_else(|| s.get("rss")),
        }
    }
    /// Page cache in the group, bytes, shmem excluded where the kernel allows.
    pub fn file_bytes(&self) -> Option<u64> {
        let s = self.stat.as_ref()?;
        match self.version? {
            CgroupVersion::V2 => {
                let file = s.get("file")?;
                Some(file.saturating_sub(s.get("shmem").unwrap_or(0)))
            }
            CgroupVersion::V1 => {
                let cache = s.get("total_cache").or_else(|| s.get("cache"))?;
                let shmem = s.get("total_shmem").or_else(|| s.get("shmem")).unwrap_or(0);
                Some(cache.saturating_sub(shmem))
            }
        }
    }
    pub fn shmem_bytes(&self) -> Option<u64> {
        let s = self.stat.as_ref()?;
        s.get("shmem").or_else(|| s.get("total_shmem"))
    }
    /// OOM kills inside the group (v2 memory.events oom_kill; v1 from memory.oom_control).
    pub fn oom_kills(&self) -> Option<u64> {
        self.events.as_ref()?.get("oom_kill")
    }
}

/// OOM kills in the group at `dir` so far (v2 `memory.events`, v1
/// `memory.oom_control`), or None where the file cannot be read or has no
/// `oom_kill` line (v1 before Linux 4.13): never a 0 that was not read.
pub fn read_oom_kills(dir: &std::path::Path, version: CgroupVersion) -> Option<u64> {
    let f = match version {
        CgroupVersion::V2 => "memory.events",
        CgroupVersion::V1 => "memory.oom_control",
    };
    let t = std::fs::read_to_string(dir.join(f)).ok()?;
    parse_flat_keyed(&t).ok()?.get("oom_kill")
}

/// v1 `memory.oom_control`: `oom_kill_disable 0`, `under_oom 0`, `oom_kill N`.
pub fn parse_v1_oom_control(text: &str) -> Result<Counters, ParseError> {
    parse_flat_keyed(text)
}

#[cfg(test)]
mod oom_tests {
    use super::*;

    /// A count read is a count; a file missing, or a v1 kernel whose
    /// `memory.oom_control` has no `oom_kill` line, is None and never 0.
    #[test]
    fn oom_kills_are_read_or_unknown_never_a_made_up_zero() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_oom_kills(d.path(), CgroupVersion::V2), None);
        std::fs::write(d.path().join("memory.events"), "low 0\nhigh 3\nmax 9\noom 2\noom_kill 2\n").unwrap();
        assert_eq!(read_oom_kills(d.path(), CgroupVersion::V2), Some(2));
        std::fs::write(d.path().join("memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\n").unwrap();
        assert_eq!(read_oom_kills(d.path(), CgroupVersion::V1), None);
        std::fs::write(d.path().join("memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n").unwrap();
        assert_eq!(read_oom_kills(d.path(), CgroupVersion::V1), Some(0));
    }
}
