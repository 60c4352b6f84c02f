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

use crate::thrash::protocol;
use crate::thrash::results::{Config, Entry, Plan, Series, ThrashResult, Windows};
use record::results::typed;
use record::rundir::RunRecord;
use record::stats::claim::Region;
use record::stats::{cv, median};
use report::charts::{self, Trace};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use report::verdict::{Claim, Drawn, Evidence, Finding, Ms, group_is};
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

/// Headline metrics: (key in `summary`'s JSON, label, the figure).
pub const HEADLINE: [(&str, &str, Field); 18] = [
    ("pswpout_active", "pages swapped out, start to last exit", |r| r.pswpout_active.map(|n| n as f64)),
    ("pswpout_total", "pages swapped out, samples to end of watch", |r| Some(r.pswpout_total as f64)),
    ("pswpin_total", "pages swapped in", |r| Some(r.pswpin_total as f64)),
    ("pswpout_per_s_peak", "peak swap-outs/s (1 s)", |r| finite(r.pswpout_per_s_peak)),
    ("pswpout_per_s_active", "swap-outs/s while active", |r| finite(r.pswpout_per_s_active)),
    ("cpu_user_pct_mean", "CPU user % (thrash)", |r| finite(r.cpu_user_pct_mean)),
    ("cpu_system_pct_mean", "CPU system % (thrash)", |r| finite(r.cpu_system_pct_mean)),
    ("psi_some_pct_mean", "memory PSI some % (thrash)", |r| finite(r.psi_some_pct_mean)),
    ("progress_ratio_min", "progress ratio, min", |r| finite(r.progress_ratio_min)),
    ("progress_ratio_median", "progress ratio, median", |r| finite(r.progress_ratio_median)),
    ("progress_overcommitted_median", "progress while overcommitted, median", |r| r.progress_overcommitted_median),
    ("overcommitted_s", "overcommitted, s", |r| finite(r.overcommitted_s)),
    ("lateness_max_s", "consumer lateness max, s", |r| finite(r.lateness_max_s)),
    ("recovery_s", "recovery, s", |r| r.recovery_s),
    ("collector_lateness_p99_ms", "collector lateness p99, ms (mlocked)", |r| finite(r.collector_lateness_p99_ms)),
    ("unlocked_lateness_p99_ms", "sampler lateness p99, ms (unlocked, in the cgroup)", |r| r.unlocked_lateness_p99_ms),
    ("probe_outside_ms.during.p99", "probe outside p99 during, ms", |r| r.probe_outside_ms.during.p99),
    ("probe_inside_ms.during.p99", "probe inside p99 during, ms", |r| r.probe_inside_ms.during.p99),
];

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
        for (k, _, f) in HEADLINE {
            let v: Vec<f64> = reps.iter().filter_map(|r| f(r)).collect();
            metrics.insert(
                k,
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
            first.plan.as_ref().map(|p| p.size_bytes as f64).unwrap_or(0.0) / 1048576.0,
            first.limit_bytes as f64 / 1048576.0,
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
        for (_, label, f) in HEADLINE {
            let v: Vec<Option<f64>> = reps.iter().map(|r| f(r)).collect();
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
            let ys: Vec<f64> = v[lo..hi].iter().map(|p| p.1).filter(|y| y.is_finite()).collect();
            (v[i].0, if ys.is_empty() { f64::NAN } else { ys.iter().sum::<f64>() / ys.len() as f64 })
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
    Figure::new("recovery s", "s", true, 1.0).export("recovery_seconds", "seconds", 1.0);

/// `thrash` in the report's list of experiments.
pub struct Thrash;

impl Study for Thrash {
    type Entry = ThrashResult;
    fn figures(&self) -> &'static [Figure] {
        &[SWAPPED_OUT, SWAP_OUT_RATE, PROGRESS, PROBE_P99, RECOVERY]
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
            // Read from vmstat at the start signal and at the last exit; the
            // collector's samples miss the edges (a 4 s e4 lost 95 % of its paging
            // between them). Runs recorded before the field have only the total.
            let out = r.pswpout_active.filter(|&n| n > 0).unwrap_or(r.pswpout_total);
            b.push_rep(&g, &SWAPPED_OUT, r.repeat_index, Some(out as f64));
            b.push_rep(&g, &SWAP_OUT_RATE, r.repeat_index, Some(r.pswpout_per_s_active));
            b.push_rep(&g, &PROGRESS, r.repeat_index, r.progress_overcommitted_median);
            b.push_rep(&g, &PROBE_P99, r.repeat_index, r.probe_outside_ms.during.p99);
            b.push_rep(&g, &RECOVERY, r.repeat_index, r.recovery_s);
        }
    }
    fn protocol(&self, rs: &[ThrashResult]) -> Result<(), String> {
        protocol(rs)
    }
    fn findings(&self) -> &'static [Finding<ThrashResult>] {
        &FINDINGS
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

/// e2's recovery per repeat for `thrash.recovery`, and how many of the values
/// are censored. A repeat that did not recover within its after-window counts
/// at the window's length, a lower bound (issue 43: it was dropped, so the
/// finding could not differ for that reason); one whose window was no longer
/// than the region's edge says nothing about "within 10 s" and is unusable
/// (NaN); a run recorded without its window's edges watched for at most
/// RECOVERY_MAX.
pub fn recovery_evidence(rs: &[ThrashResult], edge: f64) -> (Vec<f64>, usize) {
    let max = crate::thrash::work::RECOVERY_MAX.as_secs_f64();
    let mut censored = 0;
    let values = rs
        .iter()
        .filter(|r| group_is(&group(r, rs), "e2"))
        .map(|r| match r.recovery_s {
            Some(x) => x,
            // Not measured is no evidence either way.
            None if r.psi_unread => f64::NAN,
            None => {
                let window = r.end_s - r.thrash_end_s;
                let window = if window.is_finite() && window > 0.0 { window } else { max };
                if window > edge {
                    censored += 1;
                    window
                } else {
                    f64::NAN
                }
            }
        })
        .collect();
    (values, censored)
}

/// "Within seconds", as pagelab reads it: 10 s from the last exit.
const RECOVERY_EDGE_S: f64 = 10.0;

/// Direction claims need a 10 % minimum effect (docs/stability.md).
pub static FINDINGS: [Finding<ThrashResult>; 5] = [
    Finding {
        claim: Claim {
            id: "thrash.deep",
            claim: "the consumers thrash deeply: they progress slowly",
            study: "deep thrashing by design (parameters chosen to reach it without exhausting memory)",
            quantity: "e2's median progress while overcommitted, per repeat (deep: ≤ 0.5)",
            region: Region::at_most(0.5),
            floor: 0.01,
            own: false,
            check: false,
            control: "a limit above N x S (the CPU-only arm): nothing pages, so the consumers progress at full speed, far above 0.5",
            yes: "while memory was overcommitted the median consumer completed at most half the cycles it would have \
                  unthrashed",
            no: "the consumers were slowed too little to call it deep thrashing (a fast store such as zram makes each \
                 fault cheap)",
        },
        draw: draw_deep,
    },
    Finding {
        claim: Claim {
            id: "thrash.writes",
            claim: "more writes per cycle mean more paging",
            study: "e2 (W = 10000) pages more than e1 (W = 1000)",
            quantity: "pages swapped out, e2 ÷ e1, paired by repeat (more: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e1 and e2 under a limit above N x S: neither pages, so pages out are about equal (under one page each), and the ratio is not above 1.10",
            yes: "more writes touch more of each working set per cycle, so more of it must be paged in and out",
            no: "e1 paged about as much as e2",
        },
        draw: draw_writes,
    },
    Finding {
        claim: Claim {
            id: "thrash.sleep",
            claim: "a longer sleep means less paging",
            study: "e3 (t_s = 1 s) pages less than e2 (t_s = 0.1 s)",
            quantity: "pages swapped out, e3 ÷ e2, paired by repeat (less: ≤ 0.91)",
            region: Region::at_most(1.0 / 1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e2 and e3 under a limit above N x S: neither pages, so the ratio is about 1, above 0.91",
            yes: "longer sleeps spread the same writes over more time",
            no: "e3 paged about as much as e2",
        },
        draw: draw_sleep,
    },
    Finding {
        claim: Claim {
            id: "thrash.stagger",
            claim: "a faster stagger means more aggressive thrashing",
            study: "e4 (t_c = 1 s) reaches a higher paging rate than e2 (t_c = 30 s)",
            quantity: "swap-outs/s while the consumers ran, e4 ÷ e2, paired by repeat (higher: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e2 and e4 under a limit above N x S: neither pages, so the rates are about equal and the ratio is below 1.10",
            yes: "consumers that start close together overcommit memory at once",
            no: "e4's consumers paged no faster than e2's while they ran",
        },
        draw: draw_stagger,
    },
    Finding {
        claim: Claim {
            id: "thrash.recovery",
            claim: "Linux recovers within seconds once the load ends (pagelab's own check: the study gives no figure)",
            study: "Linux seemed to recover fastest of the four systems, which the authors call \"only a subjective \
                    estimation, not backed by concrete results\"",
            quantity: "e2's recovery: seconds from the last exit until paging and PSI stay at the baseline, per repeat \
                       (within seconds: ≤ 10 s; read on 1 s intervals, so under 1 s counts as 1 s; a repeat that did not \
                       recover within its window counts as the window's length, censored)",
            region: Region::at_most(RECOVERY_EDGE_S),
            floor: 1.0,
            own: true,
            check: false,
            control: "consumers whose load does not fall back (their working set kept above the limit after the load ends): paging does not calm down within 10 s",
            yes: "paging and memory pressure fall back to the baseline within seconds after the last consumer exits",
            no: "paging or memory pressure stayed above the recovery rule's threshold for more than 10 s after the load",
        },
        draw: draw_recovery,
    },
];

/// Maziero et al.'s three findings compare e2 with e1 (fewer writes), e3 (a
/// longer sleep) and e4 (a faster stagger); a run without that preset beside
/// e2 has not tested the finding.
fn beside(m: &Ms, p: &str, a: (&str, &Figure), b: (&str, &Figure)) -> Drawn {
    let has = |p: &str| m.all.iter().any(|x| group_is(&x.group, p));
    let e: Evidence = if !has("e2") {
        Err("the findings compare against e2, which this run did not run".into())
    } else if !has(p) {
        Err(format!("this finding needs {p} beside e2; this run ran {}", ran(m)))
    } else {
        m.ratios(a, b)
    };
    e.into()
}

/// Why a finding judged on e2 alone is not checked, when e2 did not run.
fn without_e2(m: &Ms) -> Option<String> {
    (!m.all.iter().any(|x| group_is(&x.group, "e2"))).then(|| format!("this is judged on e2; this run ran {}", ran(m)))
}

/// A finding's draw under the study's protocol (issue 57 item 2): not
/// checked when a run of its presets predates the protocol's figures, outside
/// the protocol when one of them broke it.
fn gated(d: Drawn, rs: &[ThrashResult], presets: &[&str]) -> Drawn {
    match protocol::unchecked(rs, presets) {
        Some(why) if matches!(d.evidence, Some(Ok(_))) => Drawn { evidence: Some(Err(why)), ..d },
        _ => Drawn { outside: protocol::outside(rs, presets), ..d },
    }
}

/// Every e2 repeat, a missing figure counted as unusable rather than dropped
/// (a repeat never overcommitted has no progress to judge).
fn draw_deep(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let e: Evidence = match without_e2(m) {
        Some(why) => Err(why),
        None => Ok(rs
            .iter()
            .filter(|r| group_is(&group(r, rs), "e2"))
            .map(|r| r.progress_overcommitted_median.unwrap_or(f64::NAN))
            .collect()),
    };
    gated(e.into(), rs, &["e2"])
}

fn draw_writes(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside(m, "e1", ("e2", &SWAPPED_OUT), ("e1", &SWAPPED_OUT));
    gated(d, rs, &["e1", "e2"])
}

fn draw_sleep(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside(m, "e3", ("e3", &SWAPPED_OUT), ("e2", &SWAPPED_OUT));
    gated(d, rs, &["e2", "e3"])
}

fn draw_stagger(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside(m, "e4", ("e4", &SWAP_OUT_RATE), ("e2", &SWAP_OUT_RATE));
    gated(d, rs, &["e2", "e4"])
}

fn draw_recovery(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let (recovery, censored) = recovery_evidence(rs, RECOVERY_EDGE_S);
    gated(Drawn { censored, ..without_e2(m).map_or(Ok(recovery), Err).into() }, rs, &["e2"])
}

fn ran(m: &Ms) -> String {
    let mut g: Vec<&str> = m.all.iter().map(|x| x.group.as_str()).collect();
    g.dedup();
    if g.is_empty() { "none".into() } else { g.join(", ") }
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

    #[test]
    fn findings_follow_the_verdict_rules() {
        let r = |p: &str, i: u64, out: f64, rate: f64| {
            // Inside the study's protocol: 5 × 1 page on 2 (2.5), 100 passes,
            // the overflow 3 pages.
            json!({"result": {"preset": p, "repeat_index": i, "pswpout_total": out.round() as u64, "pswpout_per_s_active": rate,
                              "plan": {"consumers": 5, "size_bytes": 4096, "writes": 10, "sleep_ms": 100.0, "scale": 1.0, "time_scale": 1.0}, "limit_bytes": 8192, "consumer_details": [{"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}],
                              "progress_overcommitted_median": 0.3 + 0.02 * i as f64, "consumers": 6, "consumers_completed": 6,
                              "oom_kills": 0, "protocol_breaks": []}})
        };
        let mut all = Vec::new();
        // Four repeats: with two, a 10× coarser floor (0.1) would widen e2's
        // progress interval past 0.5, and the verdict would hang on the
        // floor (issue 57 item 4).
        for i in 0..4 {
            let d = i as f64 * 0.01;
            all.extend([
                r("e1", i, 100.0 * (1.0 + 2.0 * d), 10.0),
                r("e2", i, 500.0 * (1.0 + d), 50.0 * (1.0 + d)),
                r("e3", i, 200.0 * (1.0 - d), 20.0),
                r("e4", i, 400.0, 90.0 * (1.0 + 2.0 * d)),
            ]);
        }
        let md = findings_markdown(&Thrash.parse(&all).unwrap());
        for claim in ["more writes", "a longer sleep", "a faster stagger", "thrash deeply"] {
            let line = md.lines().find(|l| l.contains(claim)).unwrap_or_else(|| panic!("{claim}: {md}"));
            assert!(line.contains("| matches"), "{line}");
        }
        // Without e3 beside e2 that finding is not checked; e2/e1 of 1.2, 1.05, 5
        // and 5 straddles 1.10: inconclusive, however tight e2 alone is.
        let mut few: Vec<Value> = all.iter().filter(|v| v["result"]["preset"] != "e3").cloned().collect();
        let md = findings_markdown(&Thrash.parse(&few).unwrap());
        assert!(md.lines().any(|l| l.contains("a longer sleep") && l.contains("| not checked")), "{md}");
        few[0]["result"]["pswpout_total"] = json!(417);
        few[3]["result"]["pswpout_total"] = json!(480);
        let md = findings_markdown(&Thrash.parse(&few).unwrap());
        assert!(md.lines().any(|l| l.contains("more writes") && l.contains("| inconclusive")), "{md}");
    }
}
