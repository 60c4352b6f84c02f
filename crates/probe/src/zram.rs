//! zram device attributes under `/sys/block/zramN/`
//! (Documentation/admin-guide/blockdev/zram.rst).

use crate::error::ParseError;
use crate::util::{parse_i64, parse_u64};
use serde::{Deserialize, Serialize};

/// `mm_stat`: memory statistics of the device, bytes unless noted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmStat {
    /// Uncompressed size of the data stored.
    pub orig_data_size: u64,
    /// Compressed size of the data stored.
    pub compr_data_size: u64,
    /// Memory the allocator uses for the store, overhead and fragmentation included.
    pub mem_used_total: u64,
    /// Limit on mem_used_total (0: none).
    pub mem_limit: u64,
    /// Maximum mem_used_total seen.
    pub mem_used_max: u64,
    /// Pages filled with one repeated value, stored without any data (count of pages).
    pub same_pages: u64,
    /// Pages freed by compaction (count).
    pub pages_compacted: u64,
    /// Pages stored uncompressed because they did not compress (count); newer kernels.
    pub huge_pages: Option<u64>,
    /// Incompressible pages stored since the device was set up (count); newer kernels.
    pub huge_pages_since: Option<u64>,
}

pub fn parse_mm_stat(text: &str) -> Result<MmStat, ParseError> {
    let f: Vec<&str> = text.split_ascii_whitespace().collect();
    if f.len() < 7 {
        return Err(ParseError::new(1, format!("mm_stat has {} fields, expected at least 7", f.len())));
    }
    let g = |i: usize, name: &str| parse_u64(f[i], 1, name);
    // mem_limit is printed as a signed long on some kernels; treat negatives as "none".
    let mem_limit = parse_i64(f[3], 1, "mem_limit").map(|v| v.max(0) as u64).or_else(|_| g(3, "mem_limit"))?;
    Ok(MmStat {
        orig_data_size: g(0, "orig_data_size")?,
        compr_data_size: g(1, "compr_data_size")?,
        mem_used_total: g(2, "mem_used_total")?,
        mem_limit,
        mem_used_max: g(4, "mem_used_max")?,
        same_pages: g(5, "same_pages")?,
        pages_compacted: g(6, "pages_compacted")?,
        huge_pages: f.get(7).map(|s| parse_u64(s, 1, "huge_pages")).transpose()?,
        huge_pages_since: f.get(8).map(|s| parse_u64(s, 1, "huge_pages_since")).transpose()?,
    })
}

/// `io_stat`: failure and discard counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    pub invalid_io: u64,
    pub notify_free: u64,
}

pub fn parse_io_stat(text: &str) -> Result<IoStat, ParseError> {
    let f: Vec<&str> = text.split_ascii_whitespace().collect();
    if f.len() < 4 {
        return Err(ParseError::new(1, format!("io_stat has {} fields, expected at least 4", f.len())));
    }
    Ok(IoStat {
        failed_reads: parse_u64(f[0], 1, "failed_reads")?,
        failed_writes: parse_u64(f[1], 1, "failed_writes")?,
        invalid_io: parse_u64(f[2], 1, "invalid_io")?,
        notify_free: parse_u64(f[3], 1, "notify_free")?,
    })
}

/// `comp_algorithm`: the algorithms the kernel offers, the selected one in brackets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompAlgorithm {
    pub selected: Option<String>,
    pub available: Vec<String>,
}

pub fn parse_comp_algorithm(text: &str) -> Result<CompAlgorithm, ParseError> {
    let mut out = CompAlgorithm::default();
    for tok in text.split_ascii_whitespace() {
        let name = if let Some(inner) = tok.strip_prefix('[') {
            let inner =
                inner.strip_suffix(']').ok_or_else(|| ParseError::new(1, format!("unbalanced bracket in '{tok}'")))?;
            out.selected = Some(inner.to_string());
            inner
        } else {
            tok
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(ParseError::new(1, format!("unexpected algorithm name '{tok}'")));
        }
        out.available.push(name.to_string());
    }
    if out.available.is_empty() {
        return Err(ParseError::new(1, "no algorithms listed"));
    }
    Ok(out)
}
