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

/// A process's `statm`, held open and read again with `pread` into a buffer
/// on the stack: after [`crate::Probe::open_statm`] a reading allocates
/// nothing (heap's sampler reads it beside the allocators it measures).
#[derive(Debug)]
pub struct Statm {
    file: std::fs::File,
    page: u64,
}

impl Statm {
    pub(crate) fn open(path: &std::path::Path) -> std::io::Result<Statm> {
        Ok(Statm { file: std::fs::File::open(path)?, page: crate::environment::page_size() })
    }

    /// Anonymous resident memory, bytes (resident − shared pages); none
    /// when the file cannot be read or parsed (unknown, never 0).
    pub fn anon_bytes(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 256];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        let (resident, shared) = parse_statm(std::str::from_utf8(&buf[..n]).ok()?)?;
        Some(resident.saturating_sub(shared) * self.page)
    }
}

/// statm's resident and shared pages (its second and third fields).
pub fn parse_statm(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_ascii_whitespace().skip(1);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

#[cfg(test)]
mod statm_tests {
    use super::*;

    #[test]
    fn statm_gives_resident_and_shared_or_nothing() {
        assert_eq!(parse_statm("5012 1204 801 200 0 1500 0\n"), Some((1204, 801)));
        assert_eq!(parse_statm("5012 1204"), None);
        assert_eq!(parse_statm("5012 x 801"), None);
        assert_eq!(parse_statm(""), None);
    }

    #[test]
    fn a_statm_is_read_through_the_probes_roots() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/self")).unwrap();
        std::fs::write(d.path().join("proc/self/statm"), "100 30 10 1 0 20 0\n").unwrap();
        let p = crate::Probe::new(crate::Roots::under(d.path()));
        let s = p.open_statm(None).unwrap();
        assert_eq!(s.anon_bytes(), Some(20 * crate::environment::page_size()));
        // Read again (pread at 0), as the file changes under it.
        std::fs::write(d.path().join("proc/self/statm"), "100 31 10 1 0 20 0\n").unwrap();
        assert_eq!(s.anon_bytes(), Some(21 * crate::environment::page_size()));
        std::fs::write(d.path().join("proc/self/statm"), "garbage\n").unwrap();
        assert_eq!(s.anon_bytes(), None, "unparsed is unknown, not 0");
        let empty = tempfile::tempdir().unwrap();
        assert!(crate::Probe::new(crate::Roots::under(empty.path())).open_statm(None).is_err());
    }
}
