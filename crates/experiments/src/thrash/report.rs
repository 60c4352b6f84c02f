//! Rendering `thrash` runs: a table per preset (repeats, median, CV), the
//! check of the study's findings, and charts like the study's (CPU user and
//! system %, page-in and page-out per second against time), raw and smoothed, with
//! the min..max band across repeats; plus PSI and responsiveness charts.
//!
//! Smoothers (documented in docs/thrash.md):
//! - `ma`: a centred moving average over 5 points (5 s at the 1 s collector);
//! - `bezier`: one Bézier curve with every point as a control point, as gnuplot's
//!   `smooth bezier` that the study's curves look like: very smooth, and it
//!   flattens peaks.

use crate::thrash::{carryover, protocol};
use crate::thrash::results::{Config, Entry, Plan, Series, ThrashResult, Windows};
use record::results::typed;
use record::rundir::RunRecord;
use record::stats::{cv, median};
use report::charts::{self, Trace};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use report::verdict::Finding;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The study's setup: (preset, W, t_s ms, t_c s).
pub const STUDY: [(&str, u64, u64, u64); 4] =
    [("e1", 1_000, 100, 30), ("e2", 10_000, 100, 30), ("e3", 10_000, 1_000, 30), ("e4", 10_000, 100, 1)];

/// A figure of a result, by accessor (None where the run has none).
type Field = fn(&ThrashResult) -> Option<f64>;

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// A headline metric: its key in `summary`'s JSON, its label, its value,
/// and the report's figure it is, if it is one. One list: a figure's value
/// is its row's, and [`FIGURES`] is taken from it (a count that does not
/// match is a compile error).
#[derive(Clone, Copy)]
pub struct Row {
    pub key: &'static str,
    pub label: &'static str,
    pub value: Field,
    pub figure: Option<Figure>,
}

/// Headline metrics, the report's figures among them.
pub const HEADLINE: [Row; 19] = [
    Row { key: "pswpout_active", label: "pages swapped out, start to last exit", value: |r| r.pswpout_active.map(|n| n as f64), figure: None },
    Row { key: "pswpout_total", label: "pages swapped out, samples to end of watch", value: |r| Some(r.pswpout_total as f64), figure: None },
    Row {
        key: "swapped_out",
        label: "pages swapped out (start to last exit, else all)",
        value: |r| Some(carryover::swapped_out(r)),
        figure: Some(SWAPPED_OUT),
    },
    Row { key: "pswpin_total", label: "pages swapped in", value: |r| Some(r.pswpin_total as f64), figure: None },
    Row { key: "pswpout_per_s_peak", label: "peak swap-outs/s (1 s)", value: |r| finite(r.pswpout_per_s_peak), figure: None },
    Row { key: "pswpout_per_s_active", label: "swap-outs/s while active", value: |r| finite(r.pswpout_per_s_active), figure: Some(SWAP_OUT_RATE) },
    Row { key: "cpu_user_pct_mean", label: "CPU user % (thrash)", value: |r| finite(r.cpu_user_pct_mean), figure: None },
    Row { key: "cpu_system_pct_mean", label: "CPU system % (thrash)", value: |r| finite(r.cpu_system_pct_mean), figure: None },
    Row { key: "psi_some_pct_mean", label: "memory PSI some % (thrash)", value: |r| finite(r.psi_some_pct_mean), figure: None },
    Row { key: "progress_ratio_min", label: "progress ratio, min", value: |r| finite(r.progress_ratio_min), figure: None },
    Row { key: "progress_ratio_median", label: "progress ratio, median", value: |r| finite(r.progress_ratio_median), figure: None },
    Row { key: "progress_overcommitted_median", label: "progress while overcommitted, median", value: |r| r.progress_overcommitted_median, figure: Some(PROGRESS) },
    Row { key: "overcommitted_s", label: "overcommitted, s", value: |r| finite(r.overcommitted_s), figure: None },
    Row { key: "lateness_max_s", label: "consumer lateness max, s", value: |r| finite(r.lateness_max_s), figure: None },
    Row { key: "recovery_s", label: "recovery, s", value: |r| r.recovery_s, figure: Some(RECOVERY) },
    Row { key: "collector_lateness_p99_ms", label: "collector lateness p99, ms (mlocked)", value: |r| finite(r.collector_lateness_p99_ms), figure: None },
    Row { key: "unlocked_lateness_p99_ms", label: "sampler lateness p99, ms (unlocked, in the cgroup)", value: |r| r.unlocked_lateness_p99_ms, figure: None },
    Row { key: "probe_outside_ms.during.p99", label: "probe outside p99 during, ms", value: |r| r.probe_outside_ms.during.p99, figure: Some(PROBE_P99) },
    Row { key: "probe_inside_ms.during.p99", label: "probe inside p99 during, ms", value: |r| r.probe_inside_ms.during.p99, figure: None },
];

/// The report's figures ([`Study::figures`]), in [`HEADLINE`]'s order.
pub static FIGURES: [Figure; 5] = figures_of(&HEADLINE);

const fn figures_of<const N: usize>(rows: &[Row]) -> [Figure; N] {
    let mut out = [Figure::new("", "", true, 1.0); N];
    let (mut i, mut n) = (0, 0);
    while i < rows.len() {
        if let Some(f) = rows[i].figure {
            assert!(n < N, "HEADLINE has more figures than FIGURES holds");
            out[n] = f;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "HEADLINE has fewer figures than FIGURES holds");
    out
}

fn results_of(all: &[Value]) -> Result<Vec<ThrashResult>, record::results::EntryError> {
    Ok(typed::<Entry>(all)?.into_iter().map(|e| e.result).collect())
}

/// A result's group: its preset, with its store when the runs used more than
/// one (`e2 on swapfile`).
pub fn group(r: &ThrashResult, rs: &[ThrashResult]) -> String {
    let first = rs.first().map(|x| &x.backing);
    if rs.iter().any(|x| Some(&x.backing) != first) {
        format!("{} on {}", r.preset, r.backing)
    } else {
        r.preset.clone()
    }
}

fn presets(rs: &[ThrashResult]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rs {
        let g = group(r, rs);
        if !v.contains(&g) {
            v.push(g);
        }
    }
    v
}

/// One headline metric of one preset, over its repeats.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Spread {
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub cv: Option<f64>,
    pub n: usize,
}

/// One preset's repeats, summarized (`thrash --json`'s `summary`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct PresetSummary {
    pub preset: String,
    pub repeats: usize,
    pub consumers_completed: u64,
    pub consumers: u64,
    /// By headline metric's key.
    pub metrics: std::collections::BTreeMap<&'static str, Spread>,
}

/// Per preset: for each headline metric, the median across repeats, min, max and CV.
pub fn summary(rs: &[ThrashResult]) -> Vec<PresetSummary> {
    let mut out = Vec::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let mut metrics: std::collections::BTreeMap<&'static str, Spread> = Default::default();
        for Row { key, value, .. } in HEADLINE {
            let v: Vec<f64> = reps.iter().filter_map(|r| value(r)).collect();
            metrics.insert(
                key,
                Spread {
                    median: median(&v),
                    min: v.iter().cloned().reduce(f64::min),
                    max: v.iter().cloned().reduce(f64::max),
                    cv: cv(&v),
                    n: v.len(),
                },
            );
        }
        out.push(PresetSummary {
            preset: p.to_string(),
            repeats: reps.len(),
            consumers_completed: reps.iter().map(|r| u64::from(r.consumers_completed)).sum(),
            consumers: reps.iter().map(|r| u64::from(r.consumers)).sum(),
            metrics,
        });
    }
    out
}

fn fmt(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

pub fn text_table(rs: &[ThrashResult]) -> String {
    let mut s = String::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let first = reps[0];
        // As JSON prints them (5.0, not 5; null for a run without a plan).
        let plan = |f: fn(&Plan) -> Value| first.plan.as_ref().map(f).unwrap_or(Value::Null);
        let _ = writeln!(
            s,
            "preset {p}: {} consumers × {:.1} MiB in {:.1} MiB ({} backing), W={} t_s={} ms t_c={} ms, scale {}",
            plan(|p| json!(p.consumers)),
            units::mib(first.plan.as_ref().map_or(0, |p| p.size_bytes)),
            units::mib(first.limit_bytes),
            first.backing,
            plan(|p| json!(p.writes)),
            plan(|p| json!(p.sleep_ms)),
            plan(|p| json!(p.stagger_ms)),
            plan(|p| json!(p.scale))
        );
        let _ = write!(s, "{:<50}", "metric");
        for r in &reps {
            let _ = write!(s, " {:>9}", format!("run {}", r.repeat_index + 1));
        }
        let _ = writeln!(s, " {:>9} {:>7}", "median", "CV");
        let _ = write!(s, "{:<50}", "consumers completed");
        for r in &reps {
            let _ = write!(s, " {:>9}", format!("{}/{}", r.consumers_completed, r.consumers));
        }
        let _ = writeln!(s);
        for Row { label, value, .. } in HEADLINE {
            let v: Vec<Option<f64>> = reps.iter().map(|r| value(r)).collect();
            let _ = write!(s, "{label:<50}");
            for x in &v {
                let _ = write!(s, " {:>9}", fmt(*x));
            }
            let have: Vec<f64> = v.iter().flatten().copied().collect();
            let _ = writeln!(
                s,
                " {:>9} {:>7}",
                fmt(median(&have)),
                cv(&have).map(|c| format!("{:.0}%", c * 100.0)).unwrap_or("-".into())
            );
        }
        let window = |w: &Windows, which: &str| match which {
            "before" => w.before.clone(),
            "during" => w.during.clone(),
            _ => w.after.clone(),
        };
        for w in ["before", "during", "after"] {
            let _ = write!(s, "{:<50}", format!("probe p50/p99/max ms {w}: outside | inside"));
            for r in &reps {
                let (o, i) = (window(&r.probe_outside_ms, w), window(&r.probe_inside_ms, w));
                let _ = write!(
                    s,
                    "  {}/{}/{} | {}/{}/{}",
                    fmt(o.p50),
                    fmt(o.p99),
                    fmt(o.max),
                    fmt(i.p50),
                    fmt(i.p99),
                    fmt(i.max)
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s);
    }
    s
}

/// The study's findings, checked on this machine's runs by the verdict rules
/// ([`report::verdict`]): a finding is judged only when its presets ran beside
/// e2 and the protocol held, from its 95 % interval against its region.
pub fn findings_markdown(rs: &[ThrashResult]) -> String {
    let mut s =
        String::from("| the study found | the study | accepted | here (95 % CI) | verdict |\n|---|---|---|---|---|\n");
    for v in report::verdict::verdicts(&Thrash, &report::experiment::Parsed::of(rs.to_vec())) {
        let why = if v.why.is_empty() { String::new() } else { format!(": {}", v.why) };
        let _ =
            writeln!(s, "| {} | {} | {} | {} | {}{why} |", v.claim, v.study, v.acceptance, v.ours, v.outcome.word());
    }
    let _ = writeln!(
        s,
        "\nThe study (N = 25, S = 100 MB, 1 GB machines, Linux 2.6.35 among four systems) also found that Linux kept \
the most user CPU during the thrash and recovered fastest; here, CPU user % and recovery are in the table per preset. \
Its setups, as (W, t_s, t_c): {}.",
        STUDY.iter().map(|(p, w, ts, tc)| format!("{p} ({w}, {ts} ms, {tc} s)")).collect::<Vec<_>>().join(", ")
    );
    let _ = write!(s, "\n{}", protocol::markdown(rs));
    s
}

/// Centred moving average over `k` points (shorter at the ends).
pub fn moving_average(v: &[(f64, f64)], k: usize) -> Vec<(f64, f64)> {
    let h = k / 2;
    (0..v.len())
        .map(|i| {
            let lo = i.saturating_sub(h);
            let hi = (i + h + 1).min(v.len());
            let ys: Vec<f64> = v[lo..hi].iter().map(|p| p.1).collect();
            (v[i].0, record::stats::mean(&ys).unwrap_or(f64::NAN))
        })
        .collect()
}

/// One Bézier curve through `n_out` parameter steps with every point as a control
/// point (de Casteljau).
pub fn bezier(v: &[(f64, f64)], n_out: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = v.iter().copied().filter(|p| p.1.is_finite()).collect();
    if pts.len() < 3 {
        return pts;
    }
    let mut buf = pts.clone();
    (0..n_out)
        .map(|j| {
            let t = j as f64 / (n_out - 1).max(1) as f64;
            buf.copy_from_slice(&pts);
            for level in (1..buf.len()).rev() {
                for i in 0..level {
                    buf[i] = (buf[i].0 + t * (buf[i + 1].0 - buf[i].0), buf[i].1 + t * (buf[i + 1].1 - buf[i].1));
                }
            }
            buf[0]
        })
        .collect()
}

/// The charts' smoother (`--smooth`; run.json's `config.smooth` by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Smooth {
    /// A centred 5-point moving average.
    #[default]
    Ma,
    /// The study's Bézier curves.
    Bezier,
}

fn smooth(v: &[(f64, f64)], how: Smooth) -> Vec<(f64, f64)> {
    match how {
        Smooth::Bezier => bezier(v, 300),
        Smooth::Ma => moving_average(v, 5),
    }
}

/// A series of the charts, by accessor.
type SeriesOf = fn(&Series) -> &Vec<f64>;

fn xy(r: &ThrashResult, key: SeriesOf) -> Vec<(f64, f64)> {
    r.series.t_s.iter().copied().zip(key(&r.series).iter().copied()).collect()
}

/// Median line and min..max band across repeats of the moving-average-smoothed
/// series, on a 1 s grid (bins of rounded seconds).
/// (x, min, max) across repeats.
type Band = Vec<(f64, f64, f64)>;

fn across(reps: &[&ThrashResult], key: SeriesOf) -> (Vec<(f64, f64)>, Band) {
    let mut bins: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for r in reps {
        for (t, y) in moving_average(&xy(r, key), 5) {
            if y.is_finite() {
                bins.entry(t.round() as i64).or_default().push(y);
            }
        }
    }
    let mut mid = Vec::new();
    let mut band = Vec::new();
    for (t, v) in bins {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        band.push((t as f64, lo, hi));
        mid.push((t as f64, median(&v).unwrap_or(f64::NAN)));
    }
    (mid, band)
}

pub fn render(rec: &RunRecord, rs: &[ThrashResult]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = &rec.dir;
    let config: Config = record::results::typed_one(&rec.run.config).unwrap_or_default();
    // A run from before `smooth` was recorded: the default.
    let how = crate::kit::names::parse::<Smooth>("smoother", &config.smooth).unwrap_or_default();
    let mut written = Vec::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let first = reps[0];
        let n = reps.len();
        let band_note = if n > 1 { format!(", band: min..max of {n} runs") } else { String::new() };
        let pair = |a: (SeriesOf, &str), b: (SeriesOf, &str)| -> Vec<Trace> {
            let mut t = Vec::new();
            for (c, (key, name)) in [a, b].into_iter().enumerate() {
                let raw = xy(first, key);
                t.push(Trace { name: String::new(), color: c, points: raw.clone(), faint: true, band: vec![] });
                let (mid, band) = across(&reps, key);
                let line =
                    if n > 1 { if how == Smooth::Bezier { bezier(&mid, 300) } else { mid } } else { smooth(&raw, how) };
                t.push(Trace {
                    name: format!("{name} ({})", if how == Smooth::Bezier { "Bézier" } else { "5 s moving average" }),
                    color: c,
                    points: line,
                    faint: false,
                    band: if n > 1 { band } else { vec![] },
                });
            }
            t
        };
        let stem = dir.join(format!("thrash-{}-cpu", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: CPU (faint: raw, run 1{band_note})"),
            "seconds since the start signal",
            "% of all CPUs",
            &pair((|s| &s.cpu_user_pct, "user"), (|s| &s.cpu_system_pct, "system")),
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let stem = dir.join(format!("thrash-{}-paging", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: paging (faint: raw, run 1{band_note})"),
            "seconds since the start signal",
            "pages per second",
            &pair((|s| &s.pswpin_per_s, "page-in (pswpin)"), (|s| &s.pswpout_per_s, "page-out (pswpout)")),
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let mut psi = pair((|s| &s.psi_some_pct, "memory some"), (|s| &s.psi_full_pct, "memory full"));
        let cgroup_psi = xy(first, |s| &s.cgroup_psi_some_pct);
        if cgroup_psi.iter().any(|p| p.1.is_finite()) {
            psi.push(Trace {
                name: "cgroup memory some".into(),
                color: 3,
                points: moving_average(&cgroup_psi, 5),
                ..Default::default()
            });
        }
        let stem = dir.join(format!("thrash-{}-psi", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: memory pressure (PSI, system){band_note}"),
            "seconds since the start signal",
            "% of time stalled",
            &psi,
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let (ts, te) = (first.thrash_start_s, first.thrash_end_s);
        let stem = dir.join(format!("thrash-{}-probes", report::plain_name(&p.to_string())));
        let mut probe_tr = Vec::new();
        for (c, (raw, name)) in
            [(&first.series.probe_outside, "outside the cgroup"), (&first.series.probe_inside, "inside the cgroup")]
                .into_iter()
                .enumerate()
        {
            let raw: Vec<(f64, f64)> = raw.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
            probe_tr.push(Trace { name: String::new(), color: c, points: raw.clone(), faint: true, band: vec![] });
            probe_tr.push(Trace {
                name: (*name).into(),
                color: c,
                points: moving_average(&raw, 11),
                ..Default::default()
            });
        }
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: probe wake-up to done (run 1; thrash {ts:.0}..{te:.0} s)"),
            "seconds since the start signal",
            "ms (log; line: 11-point moving average)",
            &probe_tr,
            true,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
    }
    report::write_file(
        dir.join("thrash.md"),
        format!(
            "# pagelab thrash\n\n```\n{}```\n\n## The study's findings, checked here\n\n{}\nRecovery rule: {}.\n",
            text_table(rs),
            findings_markdown(rs),
            config.recovery_rule
        ),
    )?;
    written.push(dir.join("thrash.md"));
    Ok(written)
}

// ---- The experiment, as the report sees it (report::experiment).

pub const SWAPPED_OUT: Figure = Figure::new("pages swapped out", "pages", true, 1.0).export("swapped_out_pages", "", 1.0);
pub const SWAP_OUT_RATE: Figure =
    Figure::new("swap-outs/s while active", "/s", true, 0.01).export("swap_outs_per_second", "", 1.0);
pub const PROGRESS: Figure =
    Figure::new("progress while overcommitted", "", false, 0.001).export("progress_ratio", "ratio", 1.0);
pub const PROBE_P99: Figure =
    Figure::new("probe p99 outside, ms", "ms", true, 0.001).export("probe_p99_seconds", "seconds", 1e-3);
pub const RECOVERY: Figure =
    Figure::new("recovery s", "s", true, 0.1).export("recovery_seconds", "seconds", 1.0);

/// `thrash` in the report's list of experiments.
pub struct Thrash;

impl Study for Thrash {
    type Entry = ThrashResult;
    fn figures(&self) -> &'static [Figure] {
        &FIGURES
    }
    fn name(&self) -> &'static str {
        "thrash"
    }
    fn study(&self) -> &'static str {
        "Maziero et al., thrashing on four OSes (Linux 2.6.35 among them): 25 consumers × 100 MB on 1 GB machines"
    }
    fn parse(&self, results: &[Value]) -> Result<Vec<ThrashResult>, record::results::EntryError> {
        results_of(results)
    }
    fn render(
        &self,
        rec: &RunRecord,
        r: &[ThrashResult],
    ) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
        render(rec, r)
    }
    fn metrics(&self, rs: &[ThrashResult], b: &mut Builder) {
        for r in rs {
            let g = group(r, rs);
            for row in &HEADLINE {
                if let Some(fig) = &row.figure {
                    b.push_rep(&g, fig, r.repeat_index, (row.value)(r));
                }
            }
        }
    }
    fn protocol(&self, rs: &[ThrashResult]) -> Result<(), String> {
        protocol(rs)
    }
    fn findings(&self) -> &'static [Finding<ThrashResult>] {
        &crate::thrash::findings::FINDINGS
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        let med = |g: &str, fig: &Figure| report::experiment::median_of(m, g, fig);

        let mut v = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for x in m {
            if seen.contains(&x.group.as_str()) {
                continue;
            }
            seen.push(&x.group);
            let g = &x.group;
            let mut p = format!("{g}:");
            if let Some(y) = med(g, &SWAPPED_OUT) {
                p += &format!(" {y:.0} pages out");
            }
            if let Some(y) = med(g, &SWAP_OUT_RATE) {
                p += &format!(", {y:.0}/s while active");
            }
            if let Some(y) = med(g, &PROGRESS) {
                p += &format!(", progress {y:.2} while overcommitted");
            }
            if let Some(y) = med(g, &RECOVERY) {
                p += &format!(", recovery {y:.1} s");
            }
            v.push(p);
        }
        v
    }
}

/// Whether a run kept the study's protocol. thrash: every consumer completed
/// and none was OOM-killed, in every repeat (Maziero et al. checked each
/// allocation and the system logs after each run).
fn protocol(rs: &[ThrashResult]) -> Result<(), String> {
    let mut why = Vec::new();
    for r in rs {
        let name = format!("{} repeat {}", r.preset, r.repeat_index + 1);
        let breaks: Vec<String> = if !r.protocol_breaks.is_empty() {
            r.protocol_breaks.clone()
        } else {
            // Also runs recorded before the protocol field: judge from the counts.
            let (n, done, oom) = (r.consumers, r.consumers_completed, r.oom_kills);
            let mut b = Vec::new();
            // An unread count broke the protocol when the run was made (its
            // `protocol_breaks` say so); here only a count read counts.
            if let Some(k) = oom.filter(|&k| k > 0) {
                b.push(format!("{k} consumer(s) OOM-killed"));
            }
            if done < n {
                b.push(format!("{} of {n} consumers did not complete", n - done));
            }
            b
        };
        if !breaks.is_empty() {
            why.push(format!("{name}: {}", breaks.join("; ")));
        }
    }
    if why.is_empty() { Ok(()) } else { Err(why.join(" / ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_average_is_centred_and_bezier_keeps_the_ends() {
        let v: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, if i == 5 { 10.0 } else { 0.0 })).collect();
        let m = moving_average(&v, 5);
        assert_eq!(m[5].1, 2.0);
        assert_eq!(m[3].1, 2.0);
        assert_eq!(m[2].1, 0.0);
        let b = bezier(&v, 50);
        assert_eq!(b.first().copied(), Some((0.0, 0.0)));
        assert_eq!(b.last().copied(), Some((9.0, 0.0)));
        assert!(b.iter().all(|p| p.1 >= 0.0 && p.1 < 10.0), "a Bézier curve stays inside its control polygon's hull");
    }
}
