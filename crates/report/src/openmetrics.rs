//! OpenMetrics and Prometheus text exposition: a run's or a lab's headline
//! figures (`pagelab report DIR --openmetrics FILE`, for node_exporter's
//! textfile collector) and a live sample (`monitor --serve`, `record --serve`).
//!
//! Names follow Prometheus conventions: a `pagelab_` prefix, base units
//! (seconds, bytes, ratios) in the name, `_total` on counters. Live figures are
//! the kernel's raw cumulative counters and current sizes, so that Prometheus
//! takes the rates (`rate(pagelab_swap_in_pages_total[1m])`), as it does for
//! every other exporter.

use crate::headline::Metric;
use probe::Sample;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `Content-Type` of an OpenMetrics 1.0 body.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// `Content-Type` of a Prometheus text format 0.0.4 body.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0: `# UNIT`, counters typed by family name, `# EOF`.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (what a scraper that does not ask for
    /// OpenMetrics gets).
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

/// One metric family: its samples, each a label set and a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The family name; a counter's samples add `_total`.
    pub name: String,
    pub kind: Kind,
    /// The OpenMetrics unit the name ends in ("" for none).
    pub unit: &'static str,
    pub help: String,
    pub samples: Vec<(Vec<(String, String)>, f64)>,
}

impl Family {
    pub fn new(name: impl Into<String>, kind: Kind, unit: &'static str, help: impl Into<String>) -> Family {
        Family { name: name.into(), kind, unit, help: help.into(), samples: Vec::new() }
    }
    /// Adds a sample; a non-finite value (not measured) is left out.
    pub fn push(&mut self, labels: &[(&str, &str)], v: f64) {
        if v.is_finite() {
            self.samples.push((labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), v));
        }
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn value(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() < 1e-4 || v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// The exposition of `families` in `format`. Families with no sample are left
/// out; the order is kept.
pub fn render(families: &[Family], format: Format) -> String {
    let mut o = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let sample_name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Gauge => f.name.clone(),
        };
        let (typed, kind) = match (format, f.kind) {
            (Format::OpenMetrics, Kind::Counter) => (&f.name, "counter"),
            (Format::Text, Kind::Counter) => (&sample_name, "counter"),
            (_, Kind::Gauge) => (&f.name, "gauge"),
        };
        let _ = writeln!(o, "# HELP {typed} {}", f.help.replace('\\', "\\\\").replace('\n', " "));
        let _ = writeln!(o, "# TYPE {typed} {kind}");
        if format == Format::OpenMetrics && !f.unit.is_empty() {
            let _ = writeln!(o, "# UNIT {typed} {}", f.unit);
        }
        for (labels, v) in &f.samples {
            o += &sample_name;
            if !labels.is_empty() {
                let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
                let _ = write!(o, "{{{}}}", l.join(","));
            }
            let _ = writeln!(o, " {}", value(*v));
        }
    }
    if format == Format::OpenMetrics {
        o += "# EOF\n";
    }
    o
}

/// Which format a scraper asked for in its `Accept` header.
pub fn negotiate(accept: Option<&str>) -> Format {
    // Each media range with its weight (RFC 9110 12.5.1); q=0 means "not this".
    let weight = |want: &str| -> Option<f64> {
        accept?.split(',').find_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim();
            if !media.eq_ignore_ascii_case(want) {
                return None;
            }
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            Some(q)
        })
    };
    let om = weight("application/openmetrics-text").unwrap_or(0.0);
    let text = weight("text/plain").unwrap_or(0.0);
    if om > 0.0 && om >= text { Format::OpenMetrics } else { Format::Text }
}

/// The labels every figure of a run carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunLabels {
    pub kernel: String,
    pub host: String,
}

/// A report's headline figures as metric families: each figure in base units
/// (its median across repeats), its number of repeats (`_repeats`) and its CV
/// (`_cv`, a ratio), labelled with experiment, configuration, kernel and host.
pub fn figures(metrics: &[(RunLabels, Metric)]) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    let mut family = |name: String, unit: &'static str, help: String| -> usize {
        match out.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                out.push(Family::new(name, Kind::Gauge, unit, help));
                out.len() - 1
            }
        }
    };
    let mut rows = Vec::new();
    for (l, m) in metrics {
        let x = m.export;
        if x.name.is_empty() {
            continue;
        }
        let base = format!("pagelab_{}_{}", m.experiment, x.name);
        let labels = [
            ("experiment", m.experiment.as_str()),
            ("configuration", m.group.as_str()),
            ("kernel", l.kernel.as_str()),
            ("host", l.host.as_str()),
        ];
        let labels: Vec<(String, String)> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let fig = family(
            base.clone(),
            x.unit,
            format!("{}: {} (median across repeats, in base units)", m.experiment, m.name),
        );
        let n = family(format!("{base}_repeats"), "", format!("{}: {}: number of repeats", m.experiment, m.name));
        let cv = family(
            format!("{base}_cv"),
            "",
            format!("{}: {}: coefficient of variation across repeats (above 0.05: unstable)", m.experiment, m.name),
        );
        rows.push((fig, labels.clone(), m.median().map(|v| v * x.scale)));
        rows.push((n, labels.clone(), Some(m.values.len() as f64)));
        rows.push((cv, labels, m.cv()));
    }
    for (i, labels, v) in rows {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            out[i].samples.push((labels, v));
        }
    }
    out
}

/// Each run's headline metrics with the run's kernel and host.
pub fn labelled_metrics(r: &crate::html::Report) -> Vec<(RunLabels, Metric)> {
    let mut out = Vec::new();
    for s in &r.sections {
        let Some(rec) = &s.record else { continue };
        let env = &rec.run.environment;
        let l = RunLabels { kernel: env.kernel.clone(), host: env.hostname.clone() };
        out.extend(s.metrics().into_iter().map(|m| (l.clone(), m)));
    }
    out
}

/// A run's or a lab's headline figures as an OpenMetrics text file.
pub fn report_file(r: &crate::html::Report) -> String {
    render(&figures(&labelled_metrics(r)), Format::OpenMetrics)
}

/// The headline figures in Bencher's Metric Format (BMF): a benchmark per
/// experiment and configuration (`eat/semi`), a measure per headline figure
/// (its Prometheus name without the pagelab_<experiment>_ prefix, in base
/// units): the median, and the lowest and highest repeat
/// (schema/bmf.schema.json is generated from this type).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Bmf(pub BTreeMap<String, BTreeMap<String, Measure>>);

/// One figure in BMF: finite numbers only (JSON has no infinity, and null
/// is no BMF value: issue 46 item 12).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Measure {
    /// The median of the repeats.
    pub value: f64,
    /// The lowest repeat.
    pub lower_value: f64,
    /// The highest repeat.
    pub upper_value: f64,
}

/// The headline figures of a report as [`Bmf`], with the median as the value
/// and the lowest and highest repeat as its bounds.
pub fn bmf(r: &crate::html::Report) -> Bmf {
    let mut out = Bmf::default();
    for (_, m) in labelled_metrics(r) {
        let (Some(med), x) = (m.median(), m.export) else { continue };
        if x.name.is_empty() {
            continue;
        }
        let lo = m.values.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = m.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let (value, lower, upper) = (med * x.scale, lo * x.scale, hi * x.scale);
        // A figure out of floating point's range in base units (1e300 ms) is
        // left out: JSON has no infinity, and null is no BMF value (issue 46
        // item 12).
        if ![value, lower, upper].iter().all(|v| v.is_finite()) {
            continue;
        }
        let bench = format!("{}/{}", m.experiment, m.group);
        out.0
            .entry(bench)
            .or_default()
            .insert(x.name.to_string(), Measure { value, lower_value: lower, upper_value: upper });
    }
    out
}

/// The live figures of one sample: the system's memory categories, swap, the
/// compressed stores, PSI, paging counters, and the target's figures with a
/// `pid` or `cgroup` label.
pub fn live(s: &Sample) -> Vec<Family> {
    let mut f = live_memory(s);
    f.extend(live_stores(s));
    f.extend(live_pressure_and_paging(s));
    f.extend(live_target(s));
    f
}

/// This sample's meminfo field `k`, NaN when missing.
fn meminfo(s: &Sample, k: &str) -> f64 {
    s.meminfo.as_ref().and_then(|m| m.get(k)).map(|v| v as f64).unwrap_or(f64::NAN)
}

/// RAM by category, totals and swap.
fn live_memory(s: &Sample) -> Vec<Family> {
    use Kind::Gauge;
    let mut f = Vec::new();
    let mi = |k: &str| meminfo(s, k);
    let cats = record::derive::categories(s);
    let mut mem =
        Family::new("pagelab_memory_bytes", Gauge, "bytes", "RAM by category, as pagelab's timeline stacks it");
    if s.meminfo.is_some() {
        for (name, v) in cats.ram_stack() {
            let label: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            mem.push(&[("category", &label)], v as f64);
        }
    }
    f.push(mem);
    let mut total = Family::new("pagelab_memory_total_bytes", Gauge, "bytes", "MemTotal");
    total.push(&[], mi("MemTotal"));
    f.push(total);
    let mut avail = Family::new("pagelab_memory_available_bytes", Gauge, "bytes", "MemAvailable");
    avail.push(&[], mi("MemAvailable"));
    f.push(avail);
    let mut swap = Family::new("pagelab_swap_used_bytes", Gauge, "bytes", "swap in use (SwapTotal - SwapFree)");
    swap.push(&[], mi("SwapTotal") - mi("SwapFree"));
    f.push(swap);
    let mut swap_t = Family::new("pagelab_swap_total_bytes", Gauge, "bytes", "SwapTotal");
    swap_t.push(&[], mi("SwapTotal"));
    f.push(swap_t);

    f
}

/// The compressed stores: zram devices and the zswap pool.
fn live_stores(s: &Sample) -> Vec<Family> {
    use Kind::Gauge;
    let mut f = Vec::new();
    let mi = |k: &str| meminfo(s, k);
    let mut orig =
        Family::new("pagelab_zram_original_bytes", Gauge, "bytes", "zram: uncompressed size of the data stored");
    let mut compr =
        Family::new("pagelab_zram_compressed_bytes", Gauge, "bytes", "zram: compressed size of the data stored");
    let mut used =
        Family::new("pagelab_zram_memory_used_bytes", Gauge, "bytes", "zram: memory the store uses, overhead included");
    let mut same = Family::new("pagelab_zram_same_pages", Gauge, "", "zram: pages stored as one repeated value");
    for z in &s.zram {
        let Some(m) = z.mm_stat else { continue };
        let dev = format!("zram{}", z.id);
        let l = [("device", dev.as_str())];
        orig.push(&l, m.orig_data_size as f64);
        compr.push(&l, m.compr_data_size as f64);
        used.push(&l, m.mem_used_total as f64);
        same.push(&l, m.same_pages as f64);
    }
    f.extend([orig, compr, used, same]);
    let mut zpool = Family::new("pagelab_zswap_pool_bytes", Gauge, "bytes", "zswap: memory the pool uses");
    zpool.push(
        &[],
        s.meminfo.as_ref().and_then(|m| m.get("Zswap")).or(s.zswap_pool_bytes).map(|v| v as f64).unwrap_or(f64::NAN),
    );
    f.push(zpool);
    let mut zstored = Family::new(
        "pagelab_zswap_stored_bytes",
        Gauge,
        "bytes",
        "zswap: uncompressed size of the pages stored (Zswapped)",
    );
    zstored.push(&[], mi("Zswapped"));
    f.push(zstored);

    f
}

/// PSI and the paging counters.
fn live_pressure_and_paging(s: &Sample) -> Vec<Family> {
    use Kind::Counter;
    let mut f = Vec::new();
    let mut psi = Family::new(
        "pagelab_pressure_stalled_seconds",
        Counter,
        "seconds",
        "PSI: time some or all tasks stalled on a resource",
    );
    for (res, p) in [("memory", s.psi.memory), ("cpu", s.psi.cpu), ("io", s.psi.io)] {
        let Some(p) = p else { continue };
        psi.push(&[("resource", res), ("kind", "some")], p.some.total_us as f64 / 1e6);
        if let Some(full) = p.full {
            psi.push(&[("resource", res), ("kind", "full")], full.total_us as f64 / 1e6);
        }
    }
    f.push(psi);
    let vm = |k: &str| s.vmstat.as_ref().and_then(|v| v.get(k)).map(|v| v as f64).unwrap_or(f64::NAN);
    for (name, key, help) in [
        ("pagelab_swap_in_pages", "pswpin", "pages swapped in (vmstat pswpin)"),
        ("pagelab_swap_out_pages", "pswpout", "pages swapped out (vmstat pswpout)"),
        ("pagelab_major_faults", "pgmajfault", "major page faults (vmstat pgmajfault)"),
        ("pagelab_page_faults", "pgfault", "page faults (vmstat pgfault)"),
    ] {
        let mut c = Family::new(name, Counter, "", help);
        c.push(&[], vm(key));
        f.push(c);
    }

    f
}

/// The target: each followed process, or the cgroup.
fn live_target(s: &Sample) -> Vec<Family> {
    use Kind::{Counter, Gauge};
    let mut f = Vec::new();
    let mut rss = Family::new(
        "pagelab_target_resident_bytes",
        Gauge,
        "bytes",
        "the target's resident memory by kind (anon, file, shmem)",
    );
    let mut tswap = Family::new("pagelab_target_swap_bytes", Gauge, "bytes", "the target's memory in swap");
    let mut tmaj = Family::new("pagelab_target_major_faults", Counter, "", "the target's major faults");
    let mut tmin = Family::new("pagelab_target_minor_faults", Counter, "", "the target's minor faults");
    let mut tcpu =
        Family::new("pagelab_target_cpu_seconds", Counter, "seconds", "the target's CPU time, user and system");
    let ticks = record::derive::clock_ticks();
    for p in &s.pids {
        let pid = p.pid.to_string();
        let l = vec![("pid", pid.as_str())];
        if let Some(st) = p.status {
            for (kind, v) in [("anon", st.rss_anon), ("file", st.rss_file), ("shmem", st.rss_shmem)] {
                let mut ll = l.clone();
                ll.push(("kind", kind));
                rss.push(&ll, v.map(|v| v as f64).unwrap_or(f64::NAN));
            }
            tswap.push(&l, st.vm_swap.map(|v| v as f64).unwrap_or(f64::NAN));
        }
        if let Some(st) = p.stat {
            tmaj.push(&l, st.majflt as f64);
            tmin.push(&l, st.minflt as f64);
            tcpu.push(&l, (st.utime + st.stime) as f64 / ticks);
        }
    }
    let mut cg_usage =
        Family::new("pagelab_cgroup_memory_bytes", Gauge, "bytes", "memory charged to the target cgroup");
    let mut cg_limit = Family::new(
        "pagelab_cgroup_limit_bytes",
        Gauge,
        "bytes",
        "the target cgroup's hard limit (memory.max, limit_in_bytes)",
    );
    let mut cg_high =
        Family::new("pagelab_cgroup_high_bytes", Gauge, "bytes", "the target cgroup's throttling limit (memory.high)");
    let mut cg_swap = Family::new("pagelab_cgroup_swap_bytes", Gauge, "bytes", "the target cgroup's memory in swap");
    let mut cg_psi = Family::new(
        "pagelab_cgroup_pressure_stalled_seconds",
        Counter,
        "seconds",
        "the target cgroup's memory PSI (v2)",
    );
    if let Some(cg) = &s.cgroup {
        let l = [("cgroup", cg.path.as_str())];
        let opt = |v: Option<u64>| v.filter(|v| *v < u64::MAX / 2).map(|v| v as f64).unwrap_or(f64::NAN);
        cg_usage.push(&l, opt(cg.usage_bytes));
        cg_limit.push(&l, opt(cg.limit_bytes));
        cg_high.push(&l, opt(cg.high_bytes));
        cg_swap.push(&l, opt(cg.swap_bytes));
        for (kind, v) in [("anon", cg.anon_bytes()), ("file", cg.file_bytes()), ("shmem", cg.shmem_bytes())] {
            rss.push(&[("cgroup", cg.path.as_str()), ("kind", kind)], opt(v));
        }
        if let Some(p) = cg.pressure {
            cg_psi.push(&[("cgroup", cg.path.as_str()), ("kind", "some")], p.some.total_us as f64 / 1e6);
            if let Some(full) = p.full {
                cg_psi.push(&[("cgroup", cg.path.as_str()), ("kind", "full")], full.total_us as f64 / 1e6);
            }
        }
    }
    f.extend([rss, tswap, tmaj, tmin, tcpu, cg_usage, cg_limit, cg_high, cg_swap, cg_psi]);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_typed_by_family_in_openmetrics_and_by_sample_in_text() {
        let mut c = Family::new("pagelab_swap_in_pages", Kind::Counter, "", "pages");
        c.push(&[], 12.0);
        let mut g = Family::new("pagelab_x_seconds", Kind::Gauge, "seconds", "a \"quoted\" help");
        g.push(&[("configuration", "semi \"a\"\\b")], 0.5);
        g.push(&[("configuration", "nan")], f64::NAN);
        let empty = Family::new("pagelab_empty", Kind::Gauge, "", "nothing");
        let om = render(&[c.clone(), g.clone(), empty.clone()], Format::OpenMetrics);
        assert_eq!(
            om,
            "# HELP pagelab_swap_in_pages pages\n# TYPE pagelab_swap_in_pages counter\npagelab_swap_in_pages_total 12\n\
             # HELP pagelab_x_seconds a \"quoted\" help\n# TYPE pagelab_x_seconds gauge\n# UNIT pagelab_x_seconds seconds\n\
             pagelab_x_seconds{configuration=\"semi \\\"a\\\"\\\\b\"} 0.5\n# EOF\n"
        );
        let text = render(&[c, g, empty], Format::Text);
        assert!(
            text.starts_with("# HELP pagelab_swap_in_pages_total pages\n# TYPE pagelab_swap_in_pages_total counter\n")
        );
        assert!(!text.contains("# UNIT") && !text.contains("# EOF") && !text.contains("pagelab_empty"), "{text}");
    }

    #[test]
    fn accept_headers_pick_the_format() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        assert_eq!(negotiate(None), Format::Text);
        // q=0 refuses a format (issue 31 item 14); the heavier one wins.
        assert_eq!(negotiate(Some("application/openmetrics-text;q=0, text/plain")), Format::Text);
        assert_eq!(negotiate(Some("application/openmetrics-text; q=0.0")), Format::Text);
        assert_eq!(negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")), Format::Text);
        assert_eq!(negotiate(Some("text/plain;q=0.1, Application/OpenMetrics-Text")), Format::OpenMetrics);
    }

    #[test]
    fn figures_are_in_base_units_with_n_and_cv() {
        // As heap declares them.
        use crate::headline::Figure;
        const ALLOC: Figure = Figure::new("alloc ns", "ns", true, 0.01).export("alloc_seconds", "seconds", 1e-9);
        const PEAK_RSS: Figure = Figure::new("peak RSS MiB", "MiB", true, crate::headline::PAGE_MIB).export(
            "peak_rss_bytes",
            "bytes",
            1048576.0,
        );
        let mut b = crate::headline::Builder::new("heap");
        for v in [40.0, 50.0, 45.0] {
            b.push("glibc ×2", &ALLOC, Some(v));
        }
        b.push("glibc ×2", &PEAK_RSS, Some(2.0));
        let l = RunLabels { kernel: "6.12".into(), host: "h".into() };
        let fams = figures(&b.finish().into_iter().map(|m| (l.clone(), m)).collect::<Vec<_>>());
        let get = |n: &str| fams.iter().find(|f| f.name == n).unwrap_or_else(|| panic!("{n}: {fams:?}"));
        let alloc = get("pagelab_heap_alloc_seconds");
        assert_eq!(alloc.unit, "seconds");
        assert!((alloc.samples[0].1 - 45e-9).abs() < 1e-15, "{:?}", alloc.samples);
        assert_eq!(get("pagelab_heap_alloc_seconds_repeats").samples[0].1, 3.0);
        assert!((get("pagelab_heap_alloc_seconds_cv").samples[0].1 - 0.1111).abs() < 1e-3);
        assert_eq!(get("pagelab_heap_peak_rss_bytes").samples[0].1, 2.0 * 1048576.0);
        // One repeat: a figure and n, but no CV.
        assert!(get("pagelab_heap_peak_rss_bytes_cv").samples.is_empty());
        let labels = &alloc.samples[0].0;
        for k in ["experiment", "configuration", "kernel", "host"] {
            assert!(labels.iter().any(|(x, _)| x == k), "{labels:?}");
        }
    }

    #[test]
    fn a_live_sample_names_the_target() {
        let s = Sample {
            meminfo: Some(
                probe::meminfo::parse("MemTotal: 1000 kB\nMemFree: 500 kB\nSwapTotal: 100 kB\nSwapFree: 40 kB\n")
                    .unwrap(),
            ),
            pids: vec![probe::sample::PidSample {
                pid: 42,
                status: Some(probe::pid::PidStatus { rss_anon: Some(4096), ..Default::default() }),
                stat: Some(probe::pid::PidStat { majflt: 7, ..Default::default() }),
                smaps_rollup: None,
            }],
            ..Default::default()
        };
        let text = render(&live(&s), Format::OpenMetrics);
        assert!(text.contains("pagelab_memory_total_bytes 1024000\n"), "{text}");
        assert!(text.contains("pagelab_swap_used_bytes 61440\n"), "{text}");
        assert!(text.contains("pagelab_target_resident_bytes{pid=\"42\",kind=\"anon\"} 4096\n"), "{text}");
        assert!(text.contains("pagelab_target_major_faults_total{pid=\"42\"} 7\n"), "{text}");
        assert!(text.contains("pagelab_memory_bytes{category=\"free\"} 512000\n"), "{text}");
        assert!(!text.contains("pagelab_zram_"), "no zram sampled: {text}");
    }
}
