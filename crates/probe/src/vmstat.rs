//! `/proc/vmstat`: "name value" lines, kept as a map because the set of keys
//! changes from kernel to kernel (pswpin, pgmajfault, workingset_refault_anon, ...).

use crate::error::ParseError;
use crate::util::parse_flat_keyed;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cumulative event counters and gauges, by name, as the kernel prints them
/// (pages for page counts, events for event counters).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Vmstat(pub BTreeMap<String, u64>);

impl Vmstat {
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.get(key).copied()
    }
    /// Sum of keys that start with `prefix` (e.g. `pgscan_` over kswapd/direct/khugepaged).
    pub fn sum_prefix(&self, prefix: &str) -> u64 {
        self.0
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| *v)
            .sum()
    }
}

pub fn parse(text: &str) -> Result<Vmstat, ParseError> {
    let map = parse_flat_keyed(text)?;
    if map.is_empty() {
        return Err(ParseError::new(0, "empty vmstat"));
    }
    Ok(Vmstat(map))
}
