//! The typed results each experiment writes into run.json's `results` array:
//! `workloads` produces them, `report` deserializes them, one module per
//! experiment. Field names are the record format (JSON), so renaming one is a
//! format change. Every struct takes `#[serde(default)]`, so a run recorded
//! before a field existed still reads; a missing `f64` reads as NaN (as does a
//! `null`, which is how serde_json writes a NaN), never as a plausible 0.

use serde::{Deserialize, Serialize};

/// One timed phase: duration, fault deltas, memory before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseResult {
    #[serde(default = "crate::results::nan")]
    pub seconds: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub rss_before_bytes: u64,
    pub rss_after_bytes: u64,
    pub swap_before_bytes: u64,
    pub swap_after_bytes: u64,
}

/// The entries of `results` that deserialize as `T`; an entry that does not
/// (another version's shape, a damaged file) is left out rather than failing
/// the whole report.
///
/// A `null` (how serde_json writes a NaN) reads as a missing field, so it takes
/// the field's default instead of failing the entry.
pub fn typed<T: serde::de::DeserializeOwned>(results: &[serde_json::Value]) -> Vec<T> {
    results.iter().filter_map(typed_one).collect()
}

/// What any experiment's result says of the store it ran on (eat and wscap
/// at the top level, thrash inside `result`); `compare` labels runs with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Store {
    pub backing: Option<String>,
    pub compressor: Option<String>,
}

/// An entry's store: the one in its `result`, else its own.
pub fn store_of(v: &serde_json::Value) -> Store {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Wrapped {
        result: Option<Store>,
        #[serde(flatten)]
        own: Store,
    }
    let w: Wrapped = typed_one(v).unwrap_or_default();
    w.result.filter(|s| s.backing.is_some()).unwrap_or(w.own)
}

/// The default of a missing `f64` figure.
pub fn nan() -> f64 {
    f64::NAN
}

/// A series of `f64` in which `null` (a NaN when written) reads as NaN.
pub fn nan_vec<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v: Vec<Option<f64>> = Deserialize::deserialize(d)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// Pairs of `f64` in which `null` reads as NaN.
pub fn nan_pairs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
    let v: Vec<(Option<f64>, Option<f64>)> = Deserialize::deserialize(d)?;
    Ok(v.into_iter().map(|(a, b)| (a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN))).collect())
}

/// One value as `T` (with [`typed`]'s handling of `null`).
pub fn typed_one<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    T::deserialize(&without_nulls(v)).ok()
}

fn without_nulls(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, x)| !x.is_null()).map(|(k, x)| (k.clone(), without_nulls(x))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_store_is_read_where_each_experiment_keeps_it() {
        let eat = json!({"pattern": "semi", "backing": "zram", "compressor": "lz4"});
        assert_eq!(store_of(&eat), Store { backing: Some("zram".into()), compressor: Some("lz4".into()) });
        let thrash = json!({"result": {"preset": "e2", "backing": "swapfile"}});
        assert_eq!(store_of(&thrash).backing.as_deref(), Some("swapfile"));
        assert_eq!(store_of(&json!({"result": {"allocator": "glibc"}})), Store::default());
        assert_eq!(store_of(&json!(3)), Store::default());
    }
}
