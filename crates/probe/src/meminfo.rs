//! `/proc/meminfo` (Documentation/filesystems/proc.rst, "meminfo").
//!
//! Parsed to a map of byte counts so that keys added by newer kernels are kept.
//! Values in `kB` are multiplied by 1024; unitless values (`HugePages_Total`, ...)
//! are kept as counts.

use crate::counters::{Counters, Keys, parse_lines};
use crate::error::ParseError;
use crate::util::{kib_to_bytes, parse_u64};
use serde::{Deserialize, Serialize};

/// /proc/meminfo as a map: key -> bytes (or a count for unitless keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meminfo(pub Counters);

impl Meminfo {
    /// A value by its meminfo name, in bytes for `kB` fields.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key)
    }
    pub fn total(&self) -> Option<u64> {
        self.get("MemTotal")
    }
    pub fn available(&self) -> Option<u64> {
        self.get("MemAvailable")
    }
    /// Swap in use, bytes (SwapTotal - SwapFree).
    pub fn swap_used(&self) -> Option<u64> {
        Some(self.get("SwapTotal")?.saturating_sub(self.get("SwapFree")?))
    }
}

pub fn parse(text: &str) -> Result<Meminfo, ParseError> {
    parse_with(text, None)
}

/// [`parse`], reusing the key table of a previous read.
pub fn parse_with(text: &str, prev: Option<&Keys>) -> Result<Meminfo, ParseError> {
    let c = parse_lines(text, prev, |line, n| {
        if line.trim().is_empty() {
            return Ok(None);
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(ParseError::new(n, format!("expected 'Key: value [kB]', found '{line}'")));
        };
        let mut it = rest.split_ascii_whitespace();
        let value = it.next().ok_or_else(|| ParseError::new(n, format!("{key}: missing value")))?;
        let value = parse_u64(value, n, key)?;
        let value = match it.next() {
            None => value,
            Some("kB") => kib_to_bytes(value, n, key)?,
            Some(unit) => return Err(ParseError::new(n, format!("{key}: unknown unit '{unit}'"))),
        };
        if it.next().is_some() {
            return Err(ParseError::new(n, format!("{key}: trailing text in '{line}'")));
        }
        Ok(Some((key.trim(), value)))
    })?;
    if c.is_empty() {
        return Err(ParseError::new(0, "empty meminfo"));
    }
    Ok(Meminfo(c))
}
