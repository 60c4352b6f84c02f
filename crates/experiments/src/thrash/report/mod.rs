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

mod plots;
mod table;
pub use plots::*;
pub use table::*;

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
    fn tables(&self, rec: &RunRecord, r: &[ThrashResult]) -> String {
        tables(&record::results::typed_one(&rec.run.config).unwrap_or_default(), r)
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
