//! The typed results each experiment writes into run.json's `results` array:
//! `workloads` produces them, `report` deserializes them, one module per
//! experiment. Field names are the record format (JSON), so renaming one is a
//! format change. Every struct takes `#[serde(default)]`, so a run recorded
//! before a field existed still reads; a missing `f64` reads as NaN (as does a
//! `null`, which is how serde_json writes a NaN), never as a plausible 0.

use serde::{Deserialize, Serialize};

/// One timed phase: duration, fault deltas, memory before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
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

/// The entries of `results`, each as `T`; the first that is not one (another
/// version's shape, a damaged file, a required field missing) is an error
/// naming the entry and the field, never an entry silently left out.
///
/// A `null` (how serde_json writes a NaN) reads as a missing field, so it takes
/// the field's default instead of failing the entry.
pub fn typed<T: serde::de::DeserializeOwned>(results: &[serde_json::Value]) -> Result<Vec<T>, EntryError> {
    results.iter().enumerate().map(|(i, v)| entry(i, v)).collect()
}

/// An entry of run.json's `results` that is not its experiment's shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("results[{index}]{at}: {message}")]
pub struct EntryError {
    /// Its place in `results`, from 0.
    pub index: usize,
    /// The path inside the entry to what failed (`.phases.trim`), or empty
    /// for the entry itself.
    pub at: String,
    /// What serde said of it (`missing field `pattern``).
    pub message: String,
}

impl EntryError {
    /// What is wrong with the entry at `index` as a whole.
    pub fn whole(index: usize, message: &str) -> EntryError {
        EntryError { index, at: String::new(), message: message.to_string() }
    }
}

/// The entry at `index` as `T`, or what is wrong with it (see [`typed`]).
pub fn entry<T: serde::de::DeserializeOwned>(index: usize, v: &serde_json::Value) -> Result<T, EntryError> {
    let read = |v: &serde_json::Value| {
        serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." { String::new() } else { crate::rundir::one_line(format!(".{path}")) };
            // brief: a value a derived enum quotes whole ("unknown variant
            // `…`") is cut short, and control characters are escaped.
            EntryError { index, at, message: crate::rundir::brief(&e.into_inner()) }
        })
    };
    match read(v) {
        Err(_) if has_null_field(v) => read(&without_nulls(v)),
        r => r,
    }
}

/// What any experiment's result says of the store it ran on (eat and wscap
/// at the top level, thrash inside `result`); `compare` labels runs with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
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

/// One value as `T`, or None (with [`typed`]'s handling of `null`), for what
/// is not a run's results (a config, a doctor's report). A value with no
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

    #[test]
    fn an_entry_that_is_not_its_shape_is_an_error_naming_the_entry_and_the_field() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Inner {
            seconds: f64,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct E {
            pattern: String,
            #[serde(default)]
            phases: std::collections::BTreeMap<String, Inner>,
        }
        let good = json!({"pattern": "zero", "phases": {"fill": {"seconds": 1.0}}});
        assert_eq!(typed::<E>(std::slice::from_ref(&good)).unwrap().len(), 1);
        let e = typed::<E>(&[good.clone(), json!({"phases": {}})]).unwrap_err();
        assert_eq!(e.to_string(), "results[1]: missing field `pattern`");
        let e = typed::<E>(&[json!({"pattern": "zero", "phases": {"fill": {"seconds": "slow"}}})]).unwrap_err();
        assert_eq!((e.index, e.at.as_str()), (0, ".phases.fill.seconds"), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
        // A null in a required field is a missing field: still an error.
        let e = typed::<E>(&[json!({"pattern": null})]).unwrap_err();
        assert!(e.to_string().contains("missing field `pattern`"), "{e}");
    }

    /// A type's own error that quotes a file's value with a control character
    /// in it (a carriage return, a newline) still makes one line.
    #[test]
    fn an_entry_error_is_one_line_whatever_the_value_held() {
        #[derive(Debug)]
        struct Mode;
        impl<'de> Deserialize<'de> for Mode {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
                let s = String::deserialize(d)?;
                Err(serde::de::Error::custom(format!("unknown mode '{s}'")))
            }
        }
        #[derive(Deserialize, Debug)]
        struct E {
            #[allow(dead_code)]
            mode: Mode,
        }
        let e = typed::<E>(&[json!({"mode": "a b\r c\nd"})]).unwrap_err();
        assert_eq!(e.to_string(), "results[0].mode: unknown mode 'a b\\r c\\nd'");
        assert!(!e.to_string().chars().any(char::is_control), "{e:?}");
        // A map key is part of the path; a derived enum quotes the value whole.
        #[derive(Deserialize, Debug)]
        enum Answer {
            Verified,
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            phases: std::collections::BTreeMap<String, u32>,
            answer: Option<Answer>,
        }
        let e = typed::<F>(&[json!({"phases": {"a\rb": "x"}})]).unwrap_err();
        assert_eq!(e.at, ".phases.a\\rb", "{e}");
        let e = typed::<F>(&[json!({"phases": {}, "answer": "v".repeat(100_000)})]).unwrap_err();
        assert!(e.to_string().len() < 300 && e.to_string().contains("100000 characters"), "{e}");
        let _ = Answer::Verified;
    }
}
