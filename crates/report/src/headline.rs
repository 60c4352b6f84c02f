//! The headline metrics of each experiment, with every repeat's value: what the
//! lab report's summary shows and what `compare` tests between runs.

use serde::Serialize;
use serde_json::Value;

/// One headline metric of one configuration, with a value per repeat (or per
/// counted iteration, for `mapping`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Metric {
    pub experiment: String,
    /// The configuration within the experiment, e.g. "semi lzo-rle", "glibc ×4".
    pub group: String,
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    pub values: Vec<f64>,
    /// The absolute spread below which differences mean nothing (0: none).
    #[serde(skip)]
    pub resolution: f64,
}

impl Metric {
    /// experiment / group / name: how metrics of two runs are matched.
    pub fn key(&self) -> String {
        format!("{} / {} / {}", self.experiment, self.group, self.name)
    }

    pub fn median(&self) -> Option<f64> {
        record::stats::median(&self.values)
    }

    /// The CV across the values (None for fewer than two).
    pub fn cv(&self) -> Option<f64> {
        record::stats::cv(&self.values)
    }

    /// The stability contract: at least two values, and a CV at most 5 % or a
    /// spread (max − min) within the metric's absolute resolution (a stored
    /// fraction of 0.0001 against 0.0002 is the same "nothing").
    pub fn stable(&self) -> bool {
        let spread = self.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            - self.values.iter().cloned().fold(f64::INFINITY, f64::min);
        self.values.len() >= 2 && (record::stats::stable(&self.values) || spread <= self.resolution)
    }

    /// "median (CV 3.1 %, n = 5)", or "median (unstable: CV 12 %, n = 5)".
    pub fn with_spread(&self, fmt: impl Fn(f64) -> String) -> String {
        let Some(m) = self.median() else { return "-".into() };
        match self.cv() {
            None => format!("{} (n = 1)", fmt(m)),
            Some(c) if self.stable() => format!("{} (CV {:.1} %, n = {})", fmt(m), 100.0 * c, self.values.len()),
            Some(c) => format!("{} (unstable: CV {:.1} %, n = {})", fmt(m), 100.0 * c, self.values.len()),
        }
    }
}

/// The absolute resolution of a figure: a spread within it is not instability.
/// The stored fraction is read to 0.005; thrash's recovery is found on the
/// collector's 1 s intervals.
fn resolution(name: &str) -> f64 {
    match name {
        "stored fraction" => 0.005,
        "recovery s" => 1.0,
        _ => 0.0,
    }
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    x.as_f64().filter(|f| f.is_finite())
}

struct Builder {
    experiment: String,
    out: Vec<Metric>,
}

impl Builder {
    fn push(&mut self, group: &str, name: &'static str, unit: &'static str, lower: bool, v: Option<f64>) {
        let Some(v) = v else { return };
        match self.out.iter_mut().find(|m| m.group == group && m.name == name) {
            Some(m) => m.values.push(v),
            None => self.out.push(Metric {
                experiment: self.experiment.clone(),
                group: group.to_string(),
                name,
                unit,
                lower_is_better: lower,
                values: vec![v],
                resolution: resolution(name),
            }),
        }
    }
}

/// The headline metrics of one run, from its experiment name and `results`.
pub fn metrics(experiment: &str, results: &[Value]) -> Vec<Metric> {
    let mut b = Builder { experiment: experiment.to_string(), out: Vec::new() };
    match experiment {
        "eat" => {
            // The store names a group only when the run compared stores; otherwise
            // runs on different stores (lz4 against lzo-rle) match by pattern.
            let store = |r: &Value| r["compressor"].as_str().or(r["backing"].as_str()).unwrap_or("?").to_string();
            let mut stores: Vec<String> = results.iter().map(store).collect();
            stores.sort();
            stores.dedup();
            for r in results {
                let p = r["pattern"].as_str().unwrap_or("?");
                let g = if stores.len() > 1 { format!("{p} {}", store(r)) } else { p.to_string() };
                b.push(&g, "stored fraction", "", true, num(r, &["stored_fraction"]));
                b.push(&g, "trim µs/page", "µs", true, num(r, &["trim_us_per_page"]));
                b.push(&g, "read-back µs/page", "µs", true, num(r, &["restore_us_per_page"]));
                b.push(&g, "fill GB/s", "GB/s", false, num(r, &["fill_gbps_first_touch"]));
            }
        }
        "wscap" => {
            for r in results.iter().filter(|r| r["supported"] == true && r["sweep"] != true) {
                let g = r["mode"].as_str().unwrap_or("?").to_string();
                b.push(&g, "scans/s", "/s", false, num(r, &["scans_per_sec"]));
                b.push(&g, "ms per scan p99", "ms", true, num(r, &["ms_per_scan_p99"]));
            }
        }
        "heap" => {
            for r in results.iter().filter_map(|r| r.get("result")) {
                let g = format!(
                    "{} {} ×{}",
                    r["allocator"].as_str().unwrap_or("?"),
                    r["heap_mode"].as_str().unwrap_or("?"),
                    r["threads"].as_u64().unwrap_or(0)
                );
                for run in r["runs"].as_array().map(Vec::as_slice).unwrap_or_default() {
                    b.push(&g, "alloc ns", "ns", true, num(run, &["alloc_ns_mean"]));
                    b.push(&g, "free ns", "ns", true, num(run, &["free_ns_mean"]));
                    b.push(&g, "alloc p99 ns", "ns", true, num(run, &["alloc_ns_p99"]));
                    b.push(&g, "peak RSS MiB", "MiB", true, num(run, &["peak_rss_bytes"]).map(|x| x / 1048576.0));
                }
            }
        }
        "mapping" => {
            for r in results.iter().filter_map(|r| r.get("result")) {
                let g = r["method"].as_str().unwrap_or("?").to_string();
                let per_iteration = r["total_ms"].as_array().map(Vec::as_slice).unwrap_or_default();
                if per_iteration.is_empty() {
                    b.push(&g, "total ms", "ms", true, num(r, &["total_ms_p50"]));
                }
                for x in per_iteration {
                    b.push(&g, "total ms", "ms", true, x.as_f64());
                }
            }
        }
        "thrash" => {
            let rs: Vec<&Value> = results.iter().filter_map(|r| r.get("result")).collect();
            for &r in &rs {
                let g = crate::thrash::group(r, &rs);
                b.push(&g, "pages swapped out", "pages", true, num(r, &["pswpout_total"]));
                b.push(&g, "swap-outs/s while active", "/s", true, num(r, &["pswpout_per_s_active"]));
                b.push(&g, "progress while overcommitted", "", false, num(r, &["progress_overcommitted_median"]));
                b.push(&g, "probe p99 outside, ms", "ms", true, num(r, &["probe_outside_ms", "during", "p99"]));
                b.push(&g, "recovery s", "s", true, num(r, &["recovery_s"]));
            }
        }
        _ => {}
    }
    b.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thrash_recovery_is_judged_at_the_collectors_one_second() {
        let r = |rec: f64| json!({"result": {"preset": "e2", "backing": "swapfile", "recovery_s": rec}});
        let m = metrics("thrash", &[r(0.4), r(1.3)]);
        let rec = m.iter().find(|m| m.name == "recovery s").unwrap();
        assert!(rec.cv().unwrap() > 0.05 && rec.stable(), "within 1 s: the same figure");
        let m = metrics("thrash", &[r(0.4), r(2.5)]);
        assert!(!m.iter().find(|m| m.name == "recovery s").unwrap().stable());
    }

    #[test]
    fn eat_repeats_collect_per_group() {
        let rs = vec![
            json!({"pattern": "semi", "backing": "zram", "compressor": "lz4", "stored_fraction": 0.2, "trim_us_per_page": 3.0}),
            json!({"pattern": "semi", "backing": "zram", "compressor": "lz4", "stored_fraction": 0.3, "trim_us_per_page": 4.0}),
            json!({"pattern": "const", "backing": "zram", "compressor": "lz4", "stored_fraction": 0.0}),
        ];
        let m = metrics("eat", &rs);
        let semi = m.iter().find(|m| m.group == "semi" && m.name == "stored fraction").unwrap();
        assert_eq!(semi.values, vec![0.2, 0.3]);
        assert_eq!(m.iter().filter(|m| m.group == "const").count(), 1);
        // Two stores in one run: the store becomes part of the group.
        let mut two = rs.clone();
        two.push(json!({"pattern": "semi", "backing": "zram", "compressor": "lzo-rle", "stored_fraction": 0.21}));
        let m = metrics("eat", &two);
        assert!(m.iter().any(|m| m.group == "semi lzo-rle") && m.iter().any(|m| m.group == "semi lz4"));
        assert!(m.iter().all(|m| m.experiment == "eat"));
    }

    #[test]
    fn heap_uses_each_repeat() {
        let rs = vec![json!({"result": {"allocator": "glibc", "heap_mode": "default", "threads": 2,
            "runs": [{"alloc_ns_mean": 40.0}, {"alloc_ns_mean": 50.0}, {"alloc_ns_mean": 45.0}]}})];
        let m = metrics("heap", &rs);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].group, "glibc default ×2");
        assert_eq!(m[0].values, vec![40.0, 50.0, 45.0]);
        assert_eq!(m[0].median(), Some(45.0));
    }

    #[test]
    fn unsupported_and_unknown_give_nothing() {
        let rs = vec![json!({"mode": "cap-max", "supported": false, "scans_per_sec": 1.0})];
        assert!(metrics("wscap", &rs).is_empty());
        assert!(metrics("nope", &rs).is_empty());
    }
}
