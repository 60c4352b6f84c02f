//! `rightsize` in the report: the curve (limit → runtime ratio, with its
//! intervals), the recommendation and its ready lines, service mode's
//! footprint over time, and two claims judged on the run.

use crate::rightsize::results::RightsizeResult;
use workloads::backing::BackingKind;
use record::RunRecord;
use report::charts::{self, Scale, Trace};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use report::verdict::Finding;
use serde_json::Value;
use std::fmt::Write;
use std::path::PathBuf;

const MIB: f64 = units::MIB_F;

pub const LIMIT: Figure =
    Figure::new("recommended limit MiB", "MiB", true, report::headline::PAGE_MIB).export("recommended_limit_bytes", "bytes", MIB);
pub const PEAK: Figure = Figure::new("unlimited peak MiB", "MiB", true, report::headline::PAGE_MIB).export("unlimited_peak_bytes", "bytes", MIB);
pub const RATIO: Figure =
    Figure::new("runtime ratio at the limit", "×", true, 0.001).export("limited_runtime_ratio", "ratio", 1.0);
pub const SETTLED: Figure =
    Figure::new("settled footprint MiB", "MiB", true, report::headline::PAGE_MIB).export("settled_footprint_bytes", "bytes", MIB);

pub fn results(all: &[Value]) -> Result<Vec<RightsizeResult>, record::results::EntryError> {
    record::results::typed(all)
}

/// Whole MiB, rounded up (as the ready lines give them).
fn mib(b: u64) -> String {
    b.div_ceil(1 << 20).to_string()
}

fn pct(x: f64) -> String {
    if x.is_finite() { format!("{:+.1} %", x * 100.0) } else { "-".into() }
}

/// The recommendation's paired ratios (limited ÷ unlimited, one per pair).
pub fn verified_ratios(r: &RightsizeResult) -> Vec<f64> {
    let Some(rec) = &r.recommendation else { return Vec::new() };
    r.runs
        .iter()
        .filter(|x| x.role == "verify" && x.limit_bytes == Some(rec.limit_bytes) && x.ratio.is_finite())
        .map(|x| x.ratio)
        .collect()
}

/// A batch result's store, as the comparison names it: "zram lzo-rle",
/// "zswap", "swapfile".
pub fn store_label(r: &RightsizeResult) -> String {
    match (r.backing, &r.compressor) {
        (Some(b), Some(c)) => format!("{b} {c}"),
        (Some(b), None) => b.to_string(),
        (None, _) => "-".into(),
    }
}

/// The memory in all a batch result asks for, and whether it was verified:
/// the verified limit plus its store's RAM, or else the safe limit (the
/// peak).
fn total_of(r: &RightsizeResult) -> Option<(u64, bool)> {
    match (&r.recommendation, &r.unverified) {
        (Some(rec), _) => Some((rec.total_bytes.max(rec.limit_bytes), rec.verified)),
        (None, Some(u)) => Some((u.safe_limit_bytes, false)),
        _ => None,
    }
}

/// Batch results of several stores side by side: each one's predicted and
/// measured knee and total, and which needs least memory in all (None with
/// fewer than two).
pub fn comparison(rs: &[RightsizeResult]) -> Option<String> {
    let batch: Vec<&RightsizeResult> = rs.iter().filter(|r| r.mode == crate::rightsize::results::Mode::Batch).collect();
    if batch.len() < 2 {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nwhich store, at {:.0} % slower at most (memory in all: the limit plus what the store keeps in RAM):\n{:<16} \
         {:>10} {:>10} {:>12} {:>12} {:>5} {:>7}",
        batch[0].target_slowdown * 100.0,
        "store",
        "knee pred",
        "knee MiB",
        "total pred",
        "total MiB",
        "runs",
        "time s"
    );
    for r in &batch {
        let knee = match (&r.recommendation, &r.unverified) {
            (Some(rec), _) => format!("{}{}", mib(rec.limit_bytes), if rec.verified { "" } else { "?" }),
            (None, Some(u)) => u.best_limit_bytes.map(|b| format!("{}?", mib(b))).unwrap_or_else(|| "-".into()),
            _ => "-".into(),
        };
        let total = total_of(r)
            .map(|(t, v)| format!("{}{}", mib(t), if v { "" } else { " (safe)" }))
            .unwrap_or_else(|| "-".into());
        let p = r.prediction.as_ref();
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>10} {:>12} {:>12} {:>5} {:>7.0}",
            store_label(r),
            p.map(|p| mib(p.knee_bytes)).unwrap_or_else(|| "-".into()),
            knee,
            p.map(|p| mib(p.total_bytes)).unwrap_or_else(|| "-".into()),
            total,
            r.run_count,
            r.seconds
        );
    }
    let mut ranked: Vec<(u64, bool, String)> =
        batch.iter().filter_map(|r| total_of(r).map(|(t, v)| (t, v, store_label(r)))).collect();
    ranked.sort_by_key(|x| (!x.1, x.0));
    let parts: Vec<String> = ranked
        .iter()
        .map(|(t, v, l)| format!("{l} needs {} MiB in all{}", mib(*t), if *v { "" } else { " (nothing verified: the peak)" }))
        .collect();
    match ranked.first() {
        Some((_, true, best)) => {
            let _ = writeln!(s, "{}: {best} needs least.", parts.join("; "));
        }
        Some(_) => {
            let _ = writeln!(s, "{}: no store verified a limit, so none is known to save memory.", parts.join("; "));
        }
        None => {}
    }
    let _ = writeln!(
        s,
        "(knee: the limit verified, ? where none was and the best candidate is shown; predicted from the working set \
         and the cold pages' compressibility before the first limited run)"
    );
    if batch.iter().any(|r| r.backing == Some(BackingKind::Zswap) && r.cgroup_version == Some(probe::cgroup::CgroupVersion::V2)) {
        let _ = writeln!(
            s,
            "(zswap on cgroup v2: its pool is charged inside the group's limit, so its total is the limit, and its knee \
             holds the pool)"
        );
    }
    Some(s)
}

/// The curve, the baseline and the answer, as text; with several stores,
/// their comparison at the end ([`comparison`]).
/// The answer in Kubernetes' terms: the block, then what it relies on.
fn kubernetes_text(s: &mut String, k: &crate::rightsize::kube::Kubernetes) {
    let _ = writeln!(s, "\nkubernetes, for a container:\n");
    for l in k.resources.lines() {
        let _ = writeln!(s, "  {l}");
    }
    let _ = writeln!(s);
    for l in &k.said {
        let _ = writeln!(s, "{l}");
    }
}

/// The answer: the recommendation and its lines, or the safe answer; each
/// `--check`ed limit; the Kubernetes terms.
fn answer_text(s: &mut String, r: &RightsizeResult) {
    match (&r.recommendation, &r.unverified_reason) {
        (Some(rec), _) => {
            let _ = writeln!(s, "\n{}\n", rec.summary);
            for l in &rec.lines {
                let _ = writeln!(s, "  {l}");
            }
            if let Some(k) = &rec.kubernetes {
                kubernetes_text(s, k);
            }
        }
        (None, Some(why)) => match &r.unverified {
            Some(u) => {
                let _ = writeln!(s, "\n{}\n", u.summary);
                for l in &u.lines {
                    let _ = writeln!(s, "  {l}");
                }
            }
            None => {
                let _ = writeln!(s, "\nno recommendation: {why}");
            }
        },
        _ => {}
    }
    if !r.checks.is_empty() {
        let _ = writeln!(s, "\n--check, within {:.0} %:", r.target_slowdown * 100.0);
        for c in &r.checks {
            let _ = writeln!(s, "  {}", c.said);
        }
        for c in &r.checks {
            if let Some(k) = &c.kubernetes {
                let _ = writeln!(s, "\nat {}:", c.asked);
                kubernetes_text(s, k);
            }
        }
    }
}

pub fn text_table(rs: &[RightsizeResult]) -> String {
    let mut s = String::new();
    for r in rs {
        let _ = writeln!(
            s,
            "rightsize ({}) of: {}",
            r.mode,
            if r.command.is_empty() { "-".into() } else { r.command.join(" ") }
        );
        if let Some(p) = &r.prediction {
            let _ = writeln!(s, "{}", p.said);
        }
        if let Some(b) = &r.baseline {
            let _ = writeln!(
                s,
                "unlimited: {} runs, median {:.2} s (CV {:.1} %), CPU {:.2} s, peak {} MiB (largest {} MiB), major faults {}",
                b.n,
                b.seconds_median,
                b.seconds_cv * 100.0,
                b.cpu_s_median,
                mib(b.peak_bytes_median),
                mib(b.peak_bytes_max),
                b.major_faults_median
            );
        }
        if !r.curve.is_empty() {
            let _ = writeln!(
                s,
                "\n{:>9} {:>3} {:>8} {:>17} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9}",
                "limit MiB",
                "n",
                "ratio",
                "95 % CI",
                "outcome",
                "PSI some",
                "PSI full",
                "maj flt",
                "store MiB",
                "total MiB"
            );
            for p in &r.curve {
                let ci = p.ci95.map(|c| format!("{:.3} – {:.3}", c[0], c[1])).unwrap_or_else(|| "-".into());
                let ratio = if p.censored { format!("≥{:.2}", p.ratio) } else { format!("{:.3}", p.ratio) };
                let _ = writeln!(
                    s,
                    "{:>9} {:>3} {:>8} {:>17} {:>9} {:>7.2}% {:>7.2}% {:>9} {:>9} {:>9}",
                    mib(p.limit_bytes),
                    p.n,
                    ratio,
                    ci,
                    p.outcome,
                    p.psi_some_pct,
                    p.psi_full_pct,
                    p.major_faults,
                    p.store_used_bytes.map_or_else(|| "-".into(), mib),
                    p.total_bytes.map_or_else(|| "-".into(), mib)
                );
            }
        }
        if let Some(svc) = &r.service {
            let _ = writeln!(
                s,
                "service: {} by {}, every {:.1} s, PSI threshold {:.3} %: from {} MiB to {} MiB (PSI some {:.3} % over the \
                 last third), {} MiB reclaimed, {} major faults, {}; ended: {}",
                svc.target,
                svc.method,
                svc.interval_s,
                svc.psi_threshold_pct,
                mib(svc.start_bytes),
                svc.settled_bytes.map_or_else(|| "-".into(), mib),
                svc.settled_psi_some_pct,
                mib(svc.reclaimed_bytes),
                svc.major_faults,
                svc.oom_kills.map_or("OOM kills not read".into(), |n| format!("{n} OOM kills")),
                svc.ended
            );
        }
        answer_text(&mut s, r);
        match &r.service {
            Some(svc) => {
                let _ = writeln!(
                    s,
                    "watched for {:.0} s; nothing was restarted",
                    svc.timeline.last().map(|p| p.t_s).unwrap_or(0.0)
                );
            }
            None => {
                let _ = writeln!(s, "{} runs of the program, {:.0} s in all", r.run_count, r.seconds);
            }
        }
    }
    if let Some(c) = comparison(rs) {
        s.push_str(&c);
    }
    s
}

/// The published figures beside this run's.
pub fn reference_markdown(rs: &[RightsizeResult]) -> String {
    let mut s = String::from(
        "| source | program | peak | settled / recommended | cost |\n| --- | --- | --- | --- | --- |\n\
         | senpai (Meta) | make -j4 | 800 MB | about 340 MB | +4 % time |\n\
         | TMO (Meta, ASPLOS'22) | fleet | - | 20–32 % of memory saved | within SLOs |\n\
         | Google far memory (ASPLOS'19) | fleet | - | 32 % of memory cold at 120 s | 0.2 %/min promotions |\n",
    );
    for r in rs {
        let peak = r.baseline.as_ref().map(|b| b.peak_bytes_max).unwrap_or(0);
        match (&r.recommendation, &r.service) {
            (Some(rec), None) => {
                let _ = writeln!(
                    s,
                    "| this run | {} | {} MiB | {} MiB, {} MiB with the store ({:.0} % saved in all) | {} (95 % CI {} to {}) |",
                    r.command.join(" "),
                    mib(peak),
                    mib(rec.limit_bytes),
                    mib(rec.total_bytes),
                    // From the peak and the total (a record from before
                    // saved_bytes has the total too).
                    if peak > 0 {
                        (peak as f64 - rec.total_bytes.max(rec.limit_bytes) as f64) / peak as f64 * 100.0
                    } else {
                        f64::NAN
                    },
                    pct(rec.slowdown),
                    rec.slowdown_ci95.map(|c| pct(c[0])).unwrap_or("-".into()),
                    rec.slowdown_ci95.map(|c| pct(c[1])).unwrap_or("-".into()),
                );
            }
            (_, Some(svc)) => {
                let _ = writeln!(
                    s,
                    "| this run (service) | {} | {} MiB at start | {} MiB settled | PSI some {:.3} % |",
                    svc.target,
                    mib(svc.start_bytes),
                    svc.settled_bytes.map_or_else(|| "-".into(), mib),
                    svc.settled_psi_some_pct
                );
            }
            _ => {}
        }
    }
    s
}

type DynErr = Box<dyn std::error::Error + Send + Sync>;

/// A limit marked on the chart: a line at `limit` from 1 to 1 + the target.
fn marker(name: String, color: usize, limit: u64, target: f64) -> Trace {
    let l = limit as f64 / MIB;
    Trace { name, color, points: vec![(l, 1.0), (l, 1.0 + target)], faint: false, band: vec![] }
}

/// One result's chart: the ratio at each limit with its interval, the
/// target as a band, the verified limits, and what each limit needs in all
/// on a second axis. Its two files.
fn chart(dir: &std::path::Path, r: &RightsizeResult, rs: &[RightsizeResult]) -> Result<[PathBuf; 2], DynErr> {
    let ok: Vec<_> = r.curve.iter().filter(|p| !p.censored).collect();
    let mut tr = vec![Trace {
        name: "runtime ratio (bars: 95 % interval)".into(),
        color: 1,
        points: ok.iter().map(|p| (p.limit_bytes as f64 / MIB, p.ratio)).collect(),
        faint: false,
        band: vec![],
    }];
    // Each limit's interval as a bar of its own (a band would join limits).
    for p in &ok {
        if let Some(c) = p.ci95 {
            let x = p.limit_bytes as f64 / MIB;
            tr.push(Trace {
                name: String::new(),
                color: 1,
                points: vec![(x, c[0]), (x, c[1])],
                faint: true,
                band: vec![],
            });
        }
    }
    let stopped: Vec<(f64, f64)> =
        r.curve.iter().filter(|p| p.censored).map(|p| (p.limit_bytes as f64 / MIB, p.ratio)).collect();
    if !stopped.is_empty() {
        tr.push(Trace {
            name: "stopped (at least)".into(),
            color: 0,
            points: stopped,
            faint: false,
            band: vec![],
        });
    }
    let xmax = r.baseline.as_ref().map(|b| b.peak_bytes_max as f64 / MIB).unwrap_or(0.0);
    // The target as a band: every ratio from 1 up to 1 + the target is within it.
    tr.push(Trace {
        name: format!("within the target (≤ 1 + {:.0} %)", r.target_slowdown * 100.0),
        color: 2,
        points: vec![(0.0, 1.0 + r.target_slowdown), (xmax, 1.0 + r.target_slowdown)],
        faint: true,
        band: vec![(0.0, 1.0, 1.0 + r.target_slowdown), (xmax, 1.0, 1.0 + r.target_slowdown)],
    });
    for c in r.checks.iter().filter(|c| c.answer == crate::rightsize::results::CheckAnswer::Verified) {
        tr.push(marker(format!("--check {} verified", c.asked), 2, c.limit_bytes, r.target_slowdown));
    }
    if let Some(x) = &r.recommendation {
        let name = format!("recommended {:.0} MiB", x.limit_bytes as f64 / MIB);
        tr.push(marker(name, 2, x.limit_bytes, r.target_slowdown));
    }
    if let Some(u) = &r.unverified {
        let name = format!("nothing verified: safe limit, the peak, {:.0} MiB", u.safe_limit_bytes as f64 / MIB);
        tr.push(marker(name, 5, u.safe_limit_bytes, r.target_slowdown));
    }
    // One chart per store when several were compared.
    let name = if rs.iter().filter(|x| !x.curve.is_empty()).count() > 1 {
        format!("rightsize-{}", report::plain_name(&store_label(r).replace(' ', "-")))
    } else {
        "rightsize".to_string()
    };
    // On the right: what each limit needs in all (the limit plus the
    // compressed store's RAM).
    let totals = vec![Trace {
        name: "in all, MiB (limit + store; right axis)".into(),
        color: 4,
        points: r
            .curve
            .iter()
            .filter_map(|p| p.total_bytes.map(|t| (p.limit_bytes as f64 / MIB, t as f64 / MIB)))
            .collect(),
        faint: false,
        band: vec![],
    }];
    let secondary = (!totals[0].points.is_empty()).then_some(("memory in all, MiB", totals.as_slice()));
    charts::traces_with(
        &dir.join(&name),
        &if name == "rightsize" {
            "pagelab rightsize: runtime under each limit, over unlimited".to_string()
        } else {
            format!("pagelab rightsize ({}): runtime under each limit, over unlimited", store_label(r))
        },
        "memory limit, MiB",
        "runtime ratio (log)",
        &tr,
        true,
        secondary,
    )?;
    Ok([dir.join(format!("{name}.svg")), dir.join(format!("{name}.png"))])
}

pub fn render(rec: &RunRecord, rs: &[RightsizeResult]) -> Result<Vec<PathBuf>, DynErr> {
    let dir = &rec.dir;
    let mut written = Vec::new();
    for r in rs {
        if !r.curve.is_empty() {
            written.extend(chart(dir, r, rs)?);
        }
        if let Some(svc) = &r.service
            && svc.timeline.len() > 1
        {
            let series = vec![
                (
                    "footprint MiB".to_string(),
                    svc.timeline.iter().map(|p| (p.t_s, p.footprint_bytes as f64 / MIB)).collect(),
                ),
                (
                    "PSI some % × 100".to_string(),
                    svc.timeline.iter().map(|p| (p.t_s, p.psi_some_pct.max(0.0) * 100.0)).collect(),
                ),
            ];
            charts::lines(
                &dir.join("service"),
                "pagelab rightsize: footprint under gentle reclaim",
                "seconds",
                "MiB",
                &series,
                Scale::Linear,
            )?;
            written.extend([dir.join("service.svg"), dir.join("service.png")]);
        }
    }
    report::write_file(dir.join("rightsize.md"), format!("# pagelab rightsize\n\n{}", tables(rs)))?;
    written.push(dir.join("rightsize.md"));
    Ok(written)
}

/// The run's tables in Markdown: `rightsize.md` below its title, and the
/// lab report's tables.
pub fn tables(rs: &[RightsizeResult]) -> String {
    format!("```\n{}```\n\n## Published figures beside this run's\n\n{}", text_table(rs), reference_markdown(rs))
}

/// rightsize has no finding. There is no "within its target" finding: the
/// search accepts a limit when the pairs' upper bound is within the target,
/// so a finding judged on the same pairs could only match (issue 43), and the
/// search has no pairs it did not use to choose. Round three dropped
/// `rightsize.saves` (issue 58): it divided the one limit chosen by peaks
/// that were nearly identical, so its interval left out the limit's own
/// uncertainty, and that uncertainty has no interval to give: the verified
/// limit is an upper bound on what the program needs (at the verification's
/// α), while the bracket's lower side rests on a probe's one or two pairs.
/// The share saved is shown as a figure, not judged.
pub static FINDINGS: [Finding<RightsizeResult>; 0] = [];

/// A result's group: its mode, and its store when several were compared.
fn group(r: &RightsizeResult, several: bool) -> String {
    if several { format!("{} {}", r.mode, store_label(r)) } else { r.mode.to_string() }
}

pub struct Rightsize;

impl Study for Rightsize {
    type Entry = RightsizeResult;
    fn name(&self) -> &'static str {
        "rightsize"
    }
    fn study(&self) -> &'static str {
        "Meta's senpai and TMO; Google's far memory"
    }
    fn parse(&self, results: &[Value]) -> Result<Vec<RightsizeResult>, record::results::EntryError> {
        self::results(results)
    }
    fn render(
        &self,
        rec: &RunRecord,
        r: &[RightsizeResult],
    ) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
        render(rec, r)
    }
    fn tables(&self, _rec: &RunRecord, r: &[RightsizeResult]) -> String {
        tables(r)
    }
    fn figures(&self) -> &'static [Figure] {
        &[LIMIT, PEAK, RATIO, SETTLED]
    }
    fn metrics(&self, results: &[RightsizeResult], b: &mut Builder) {
        let several = results.len() > 1;
        for r in results {
            let g = group(r, several);
            if let Some(rec) = &r.recommendation {
                b.push(&g, &LIMIT, Some(rec.limit_bytes as f64 / MIB));
            }
            for (i, x) in r.runs.iter().filter(|x| x.limit_bytes.is_none()).enumerate() {
                b.push_rep(&g, &PEAK, i as u32 + 1, Some(x.peak_bytes as f64 / MIB));
            }
            for (i, x) in verified_ratios(r).into_iter().enumerate() {
                b.push_rep(&g, &RATIO, i as u32 + 1, Some(x));
            }
            if let Some(s) = &r.service {
                b.push(&g, &SETTLED, s.settled_bytes.map(|b| b as f64 / MIB));
            }
        }
    }
    fn findings(&self) -> &'static [Finding<RightsizeResult>] {
        &FINDINGS
    }
    fn no_findings(&self) -> Option<&'static str> {
        Some(
            "its answer is verified by its own pairs (a finding on them could only match), and the share it saves \
             has no interval (the limit chosen is an upper bound on the need, its lower side a probe's one or two pairs)",
        )
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        m.iter()
            .filter(|x| x.name == LIMIT.name || x.name == PEAK.name || x.name == SETTLED.name)
            .filter_map(|x| Some(format!("{} {:.0}", x.name, x.median()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rightsize::results::{Recommendation, Unverified};

    fn arm(backing: &str, compressor: Option<&str>, total: u64, verified: bool) -> RightsizeResult {
        let mut r = RightsizeResult {
            mode: crate::rightsize::results::Mode::Batch,
            backing: BackingKind::parse(backing),
            compressor: compressor.map(str::to_string),
            target_slowdown: 0.07,
            ..Default::default()
        };
        if verified {
            r.recommendation =
                Some(Recommendation { limit_bytes: total / 2, total_bytes: total, verified: true, ..Default::default() });
        } else {
            r.unverified = Some(Unverified { safe_limit_bytes: total, ..Default::default() });
        }
        r
    }

    #[test]
    fn the_comparison_ranks_verified_totals_first_and_needs_two_stores() {
        let m = 1 << 20;
        let rs = vec![arm("zram", Some("lzo-rle"), 300 * m, true), arm("swapfile", None, 80 * m, true)];
        let c = comparison(&rs).expect("two stores");
        assert!(c.contains("at 7 % slower"), "{c}");
        assert!(c.contains("swapfile needs 80 MiB in all; zram lzo-rle needs 300 MiB in all: swapfile needs least"), "{c}");
        // An unverified store counts at its safe limit, after every verified one,
        // however small its total.
        let rs = vec![arm("zram", None, 300 * m, true), arm("zswap", Some("zstd"), 50 * m, false)];
        let c = comparison(&rs).unwrap();
        assert!(c.contains("zram needs 300 MiB in all; zswap zstd needs 50 MiB in all (nothing verified"), "{c}");
        assert!(c.contains(": zram needs least"), "{c}");
        // Nothing verified anywhere: no store is named.
        let rs = vec![arm("zram", None, 300 * m, false), arm("swapfile", None, 300 * m, false)];
        assert!(comparison(&rs).unwrap().contains("no store verified a limit"));
        // One store: no comparison, and the text is as before.
        assert!(comparison(&rs[..1]).is_none());
        assert!(!text_table(&rs[..1]).contains("which store"));
    }
}
