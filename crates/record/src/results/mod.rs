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

/// The store of each entry of run.json's `results` (an array; none otherwise).
pub fn stores_of(results: &serde_json::Value) -> Vec<Store> {
    results.as_array().map_or(&[][..], Vec::as_slice).iter().map(store_of).collect()
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

/// One value as `T` (with [`typed`]'s handling of `null`). A value with no
/// `null` in an object (every run a report reads: it calls [`strip_nulls`]
/// first) is read in place, with no copy: a copy of a crafted run.json's
/// largest entry would double what reading it takes.
pub fn typed_one<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    match T::deserialize(v) {
        Ok(t) => Some(t),
        Err(_) if has_null_field(v) => T::deserialize(&without_nulls(v)).ok(),
        Err(_) => None,
    }
}

/// Removes every object entry whose value is `null`, in place: a `null` (how
/// serde_json writes a NaN) then reads as a missing field.
pub fn strip_nulls(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn has_null_field(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(m) => m.values().any(|x| x.is_null() || has_null_field(x)),
        Value::Array(a) => a.iter().any(has_null_field),
        _ => false,
    }
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

    #[test]
    fn a_null_reads_as_a_missing_field_stripped_or_not() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct E {
            #[serde(default = "nan")]
            x: f64,
            #[serde(default)]
            n: u32,
            #[serde(default, deserialize_with = "nan_vec")]
            v: Vec<f64>,
        }
        let mut raw = json!({"x": null, "n": 3, "v": [1.0, null], "inner": {"y": null}});
        let e: E = typed_one(&raw).unwrap();
        assert!(e.x.is_nan() && e.n == 3 && e.v[0] == 1.0 && e.v[1].is_nan());
        strip_nulls(&mut raw);
        assert_eq!(raw, json!({"n": 3, "v": [1.0, null], "inner": {}}), "object nulls go, array nulls stay");
        let f: E = typed_one(&raw).unwrap();
        assert!(f.x.is_nan() && f.n == 3 && f.v[1].is_nan());
        assert!(typed_one::<E>(&json!({"n": "three"})).is_none());
    }
}
