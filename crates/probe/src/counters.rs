//! `Counters`: a map-shaped kernel file (meminfo, vmstat, memory.stat, ...) as a
//! shared table of key names plus a vector of values.
//!
//! These files keep the same keys in the same order from one read to the next, so
//! the reader parses the names once and, on later reads, only checks them against
//! the previous table and fills in the numbers. A sample then costs one allocation
//! per file instead of one per key, which matters at a 10 ms sampling interval.
//! If the layout ever changes (a module loaded, a new kernel), a new table is built.
//! On disk and in JSON a `Counters` is an ordinary object, key to value.

use crate::error::ParseError;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

pub type Keys = Arc<[Box<str>]>;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Counters {
    keys: Keys,
    values: Vec<u64>,
}

impl Counters {
    /// The value of `key`, if the file has it.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.keys.iter().position(|k| &**k == key).map(|i| self.values[i])
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.keys.iter().map(|k| &**k).zip(self.values.iter().copied())
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// Sum over keys starting with `prefix` (e.g. `pgscan_` over kswapd/direct/...).
    pub fn sum_prefix(&self, prefix: &str) -> u64 {
        self.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum()
    }
    /// [`Counters::sum_prefix`], None when no key has the prefix (a counter
    /// this kernel does not have is unknown, not 0).
    pub fn sum_prefix_opt(&self, prefix: &str) -> Option<u64> {
        self.iter().any(|(k, _)| k.starts_with(prefix)).then(|| self.sum_prefix(prefix))
    }
    /// The key table, to pass to the next parse of the same file.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> Self {
        let (k, v): (Vec<Box<str>>, Vec<u64>) = pairs.into_iter().map(|(k, v)| (Box::<str>::from(k), v)).unzip();
        Counters { keys: k.into(), values: v }
    }
}

/// Parses a file line by line. `line` turns one line into `(key, value)`, or
/// `None` to skip it. `prev` is the key table of the previous read of the same
/// file: when the keys match it, it is shared instead of rebuilt.
pub fn parse_lines<'a>(
    text: &'a str,
    prev: Option<&Keys>,
    mut line: impl FnMut(&'a str, usize) -> Result<Option<(&'a str, u64)>, ParseError>,
) -> Result<Counters, ParseError> {
    if let Some(prev) = prev {
        let mut values = Vec::with_capacity(prev.len());
        let mut same = true;
        for (i, l) in text.lines().enumerate() {
            if let Some((k, v)) = line(l, i + 1)? {
                if prev.get(values.len()).is_some_and(|pk| &**pk == k) {
                    values.push(v);
                } else {
                    same = false;
                    break;
                }
            }
        }
        if same && values.len() == prev.len() {
            return Ok(Counters { keys: prev.clone(), values });
        }
    }
    let mut keys: Vec<Box<str>> = Vec::new();
    let mut values = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if let Some((k, v)) = line(l, i + 1)? {
            keys.push(k.into());
            values.push(v);
        }
    }
    Ok(Counters { keys: keys.into(), values })
}

impl Serialize for Counters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Counters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Counters;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of counters")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Counters, A::Error> {
                let mut keys: Vec<Box<str>> = Vec::new();
                let mut values = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, u64>()? {
                    keys.push(k.into());
                    values.push(v);
                }
                Ok(Counters { keys: keys.into(), values })
            }
        }
        d.deserialize_map(V)
    }
}
