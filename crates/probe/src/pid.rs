//! Per-process files: `/proc/<pid>/status`, `/proc/<pid>/stat` and
//! `/proc/<pid>/smaps_rollup` (proc(5), Documentation/filesystems/proc.rst).

use crate::error::ParseError;
use crate::util::{kib_to_bytes, parse_u64};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Memory fields of /proc/<pid>/status, in bytes. Kernel threads have none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidStatus {
    pub vm_rss: Option<u64>,
    pub rss_anon: Option<u64>,
    pub rss_file: Option<u64>,
    pub rss_shmem: Option<u64>,
    pub vm_swap: Option<u64>,
    /// Peak resident set size ("high water mark").
    pub vm_hwm: Option<u64>,
}

pub fn parse_status(text: &str) -> Result<PidStatus, ParseError> {
    let mut s = PidStatus::default();
    let mut saw_name = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let Some((key, rest)) = line.split_once(':') else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(ParseError::new(n, format!("expected 'Key:\\tvalue', found '{line}'")));
        };
        if key == "Name" {
            saw_name = true;
        }
        let slot = match key {
            "VmRSS" => &mut s.vm_rss,
            "RssAnon" => &mut s.rss_anon,
            "RssFile" => &mut s.rss_file,
            "RssShmem" => &mut s.rss_shmem,
            "VmSwap" => &mut s.vm_swap,
            "VmHWM" => &mut s.vm_hwm,
            _ => continue,
        };
        let mut it = rest.split_ascii_whitespace();
        let (Some(v), Some("kB")) = (it.next(), it.next()) else {
            return Err(ParseError::new(n, format!("{key}: expected '<number> kB', found '{}'", rest.trim())));
        };
        *slot = Some(kib_to_bytes(parse_u64(v, n, key)?, n, key)?);
    }
    if !saw_name {
        return Err(ParseError::new(0, "no 'Name:' line; not a status file"));
    }
    Ok(s)
}

/// Fault and CPU counters of /proc/<pid>/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidStat {
    /// Minor faults (no I/O needed), cumulative.
    pub minflt: u64,
    /// Major faults (page had to be read: from swap, zram or a file), cumulative.
    pub majflt: u64,
    /// User CPU time, clock ticks.
    pub utime: u64,
    /// System CPU time, clock ticks.
    pub stime: u64,
    /// Start time after boot, clock ticks; with the pid it names a process uniquely.
    pub starttime: u64,
}

pub fn parse_stat(text: &str) -> Result<PidStat, ParseError> {
    // The command name (field 2) is in parentheses and may itself contain spaces
    // and ')', so fields are counted from the last ')'.
    let line = text.lines().next().ok_or_else(|| ParseError::new(0, "empty stat file"))?;
    let close = line.rfind(')').ok_or_else(|| ParseError::new(1, "no ')' closing the command name"))?;
    let rest: Vec<&str> = line[close + 1..].split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); field k is rest[k - 3].
    let field = |k: usize, name: &str| -> Result<u64, ParseError> {
        let s = rest
            .get(k - 3)
            .ok_or_else(|| ParseError::new(1, format!("{name} (field {k}) missing: only {} fields", rest.len() + 2)))?;
        parse_u64(s, 1, name)
    };
    Ok(PidStat {
        minflt: field(10, "minflt")?,
        majflt: field(12, "majflt")?,
        utime: field(14, "utime")?,
        stime: field(15, "stime")?,
        starttime: field(22, "starttime")?,
    })
}

/// /proc/<pid>/smaps_rollup: summed smaps fields in bytes (Rss, Pss, Pss_Anon,
/// Swap, SwapPss, Anonymous, ...), as a map because fields vary by kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SmapsRollup(pub BTreeMap<String, u64>);

impl SmapsRollup {
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key).copied()
    }
}

pub fn parse_smaps_rollup(text: &str) -> Result<SmapsRollup, ParseError> {
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        // The first line is the address range header: "00400000-7ffd... ---p 00000000 00:00 0 [rollup]".
        if i == 0 && line.contains("[rollup]") {
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(ParseError::new(n, format!("expected 'Key: value kB', found '{line}'")));
        };
        let mut it = rest.split_ascii_whitespace();
        match (it.next(), it.next()) {
            (Some(v), Some("kB")) => {
                map.insert(key.to_string(), kib_to_bytes(parse_u64(v, n, key)?, n, key)?);
            }
            (Some(v), None) => {
                map.insert(key.to_string(), parse_u64(v, n, key)?);
            }
            _ => {
                return Err(ParseError::new(n, format!("{key}: expected '<number> kB', found '{}'", rest.trim())));
            }
        }
    }
    Ok(SmapsRollup(map))
}
