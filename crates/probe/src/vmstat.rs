//! `/proc/vmstat`: "name value" lines, kept as a map because the set of keys
//! changes from kernel to kernel (pswpin, pgmajfault, workingset_refault_anon, ...).

use crate::counters::{Counters, Keys};
use crate::error::ParseError;
use crate::util::parse_flat_keyed_with;
use serde::{Deserialize, Serialize};

/// Cumulative event counters and gauges, by name, as the kernel prints them
/// (pages for page counts, events for event counters).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vmstat(pub Counters);

impl Vmstat {
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key)
    }
    /// Sum of keys that start with `prefix` (e.g. `pgscan_` over kswapd/direct/khugepaged).
    pub fn sum_prefix(&self, prefix: &str) -> u64 {
        self.0.sum_prefix(prefix)
    }
    /// None when no counter has the prefix.
    pub fn sum_prefix_opt(&self, prefix: &str) -> Option<u64> {
        self.0.sum_prefix_opt(prefix)
    }
}

pub fn parse(text: &str) -> Result<Vmstat, ParseError> {
    parse_with(text, None)
}

/// [`parse`], reusing the key table of a previous read.
pub fn parse_with(text: &str, prev: Option<&Keys>) -> Result<Vmstat, ParseError> {
    let c = parse_flat_keyed_with(text, prev)?;
    if c.is_empty() {
        return Err(ParseError::new(0, "empty vmstat"));
    }
    Ok(Vmstat(c))
}
