//! Rendering `mapping` runs: steps per method, the grouped bar charts (with and
//! without the touch baseline subtracted), RSS after each step, and Gerstmann's
//! Windows figures beside ours.

use crate::charts::{self, BarGroup};
use crate::experiment::Experiment;
use crate::headline::{self, Builder, Figure, Metric};
use crate::html::Renderer;
use crate::summary::bytes;
use crate::verdict::{Ms, Verdict, judge};
use record::rundir::RunRecord;
use serde_json::Value;
use std::fmt::Write as _;

/// Gerstmann, "Memory Mapping on Windows" (i7-5960X, 64 GiB, 300 MiB), ms, after
/// subtracting the touch: (Windows method, Linux method here, whole-region memset, first byte per 64 KiB).
pub const REFERENCE: &[(&str, &str, f64, f64)] = &[
    ("VirtualAlloc/VirtualFree", "mmap-munmap", 64.4, 4.4),
    ("MEM_DECOMMIT", "dontneed", 116.8, 4.6),
    ("MEM_RESET", "free", 77.3, 4.4),
    ("UnmapViewOfFile", "memfd", 103.6, 5.6),
];
pub const REFERENCE_TOUCH: (f64, f64) = (21.9, 0.1);

fn results(rec_results: &[Value]) -> Vec<&Value> {
    rec_results.iter().map(|r| if r["result"].is_object() { &r["result"] } else { r }).collect()
}

fn f(v: &Value, k: &str) -> String {
    v[k].as_f64().map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

fn step(v: &Value, k: &str) -> String {
    let s = &v[k];
    match (s["ms_p50"].as_f64(), s["ms_min"].as_f64(), s["ms_max"].as_f64()) {
        (Some(p), Some(lo), Some(hi)) => format!("{p:.3} [{lo:.3}..{hi:.3}]"),
        _ => "-".into(),
    }
}

pub fn baseline(rec_results: &[Value]) -> Option<f64> {
    rec_results.iter().find_map(|r| r["baseline"]["touch_ms_p50"].as_f64())
}

pub fn text_table(rec_results: &[Value]) -> String {
    let rs = results(rec_results);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:>24} {:>24} {:>24} {:>24} {:>9} {:>10} {:>9} {:>11}",
        "method",
        "obtain ms [min..max]",
        "touch ms",
        "release ms",
        "re-touch ms",
        "total",
        "minus base",
        "ns/page",
        "RSS after rel"
    );
    for r in &rs {
        let pages = r["size_bytes"].as_f64().unwrap_or(0.0) / 4096.0;
        let _ = writeln!(
            s,
            "{:<12} {:>24} {:>24} {:>24} {:>24} {:>9} {:>10} {:>9.1} {:>11}",
            r["method"].as_str().unwrap_or("?"),
            step(r, "obtain"),
            step(r, "touch_step"),
            step(r, "release"),
            step(r, "retouch"),
            f(r, "total_ms_p50"),
            f(r, "normalized_ms_p50"),
            r["total_ms_p50"].as_f64().unwrap_or(0.0) * 1e6 / pages.max(1.0),
            bytes(r["rss_after_release_bytes"].as_u64().unwrap_or(0)),
        );
    }
    if let Some(b) = baseline(rec_results) {
        let _ = writeln!(s, "touch alone on resident memory (subtracted, once per touch): {b:.3} ms median");
    }
    s
}

/// Faults and RSS after each step, to show what each release means.
pub fn semantics_markdown(rec_results: &[Value]) -> String {
    let mut s = String::from(
        "| method | RSS after touch | RSS after release | RSS after re-touch | shmem after touch | re-touch minor faults | re-touch major faults |\n|---|---|---|---|---|---|---|\n",
    );
    for r in results(rec_results) {
        let b = |k: &str, f: &str| r[k][f].as_f64().map(|x| bytes(x as u64)).unwrap_or("-".into());
        let n = |k: &str, f: &str| r[k][f].as_f64().map(|x| format!("{x:.0}")).unwrap_or("-".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r["method"].as_str().unwrap_or("?"),
            b("touch_step", "rss_after_bytes"),
            b("release", "rss_after_bytes"),
            b("retouch", "rss_after_bytes"),
            b("touch_step", "shmem_after_bytes"),
            n("retouch", "minor_faults_p50"),
            n("retouch", "major_faults_p50"),
        );
    }
    s
}

pub fn reference_markdown(rec_results: &[Value]) -> String {
    let rs = results(rec_results);
    let touch = rs.first().and_then(|r| r["touch"].as_str()).unwrap_or("all");
    let col = if touch == "all" { "whole-region memset" } else { "first byte per 64 KiB" };
    let mut s = format!(
        "| Windows (Gerstmann) | ms, {col} | Linux here | ms, touch {touch}, minus the touch alone |\n|---|---|---|---|\n"
    );
    let _ = writeln!(
        s,
        "| touch alone (subtracted) | {} | touch alone | {} |",
        if touch == "all" { REFERENCE_TOUCH.0 } else { REFERENCE_TOUCH.1 },
        baseline(rec_results).map(|b| format!("{b:.3}")).unwrap_or("-".into())
    );
    for (win, lin, all, first) in REFERENCE {
        let ours = rs.iter().find(|r| r["method"] == *lin).map(|r| f(r, "normalized_ms_p50")).unwrap_or("-".into());
        let _ = writeln!(s, "| {win} | {} | {lin} | {ours} |", if touch == "all" { all } else { first });
    }
    s += "\nGerstmann's figures are from Windows on an i7-5960X with 64 GiB; compare the order of the methods, \
not the milliseconds. MADV_FREE, like MEM_RESET, is lazy: pages are dropped only under memory pressure \
(run with --pressure to see that case).\n";
    s
}

pub fn render(rec: &RunRecord) -> Result<Vec<std::path::PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let all: Vec<Value> = rec.run.results.as_array().cloned().unwrap_or_default();
    let rs = results(&all);
    let dir = &rec.dir;
    let mut written = Vec::new();
    let groups: Vec<BarGroup> = rs
        .iter()
        .map(|r| BarGroup {
            label: r["method"].as_str().unwrap_or("?").into(),
            bars: ["obtain", "touch_step", "release", "retouch"]
                .iter()
                .filter_map(|k| Some((k.trim_end_matches("_step").to_string(), r[*k]["ms_p50"].as_f64()?)))
                .collect(),
        })
        .collect();
    if !groups.is_empty() {
        charts::bars(&dir.join("steps"), "pagelab mapping: median time per step (unnormalized)", "ms", &groups, false)?;
        let norm: Vec<BarGroup> = rs
            .iter()
            .map(|r| BarGroup {
                label: r["method"].as_str().unwrap_or("?").into(),
                bars: vec![
                    ("total".into(), r["total_ms_p50"].as_f64().unwrap_or(0.0)),
                    ("minus touch alone".into(), r["normalized_ms_p50"].as_f64().unwrap_or(0.0)),
                ],
            })
            .collect();
        charts::bars(
            &dir.join("totals"),
            "pagelab mapping: total per iteration, and minus the touch alone",
            "ms",
            &norm,
            false,
        )?;
        written.extend([dir.join("steps.svg"), dir.join("steps.png"), dir.join("totals.svg"), dir.join("totals.png")]);
    }
    std::fs::write(
        dir.join("mapping.md"),
        format!(
            "# pagelab mapping\n\n```\n{}```\n\n## What each release leaves behind\n\n{}\n## Published figures beside ours\n\n{}",
            text_table(&all),
            semantics_markdown(&all),
            reference_markdown(&all)
        ),
    )?;
    written.push(dir.join("mapping.md"));
    Ok(written)
}

// ---- The experiment, as the report sees it (crate::experiment).

pub const TOTAL: Figure = Figure::new("total ms", "ms", true);

/// `mapping` in the report's list of experiments.
pub struct Mapping;

impl Experiment for Mapping {
    fn name(&self) -> &'static str {
        "mapping"
    }
    fn study(&self) -> &'static str {
        "Gerstmann, Memory Mapping on Windows: 300 MiB regions on an i7-5960X"
    }
    fn renderer(&self) -> Renderer {
        render
    }
    fn metrics(&self, results: &[Value], b: &mut Builder) {
        for r in results.iter().filter_map(|r| r.get("result")) {
            let g = r["method"].as_str().unwrap_or("?").to_string();
            let per_iteration = r["total_ms"].as_array().map(Vec::as_slice).unwrap_or_default();
            if per_iteration.is_empty() {
                b.push(&g, &TOTAL, headline::num(r, &["total_ms_p50"]));
            }
            for x in per_iteration {
                b.push(&g, &TOTAL, x.as_f64());
            }
        }
    }
    fn verdicts(&self, m: &Ms, results: &[Value]) -> Vec<Verdict> {
        findings(m, results)
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        let mut v: Vec<(String, f64)> =
            m.iter().filter(|x| x.name == TOTAL.name).filter_map(|x| Some((x.group.clone(), x.median()?))).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v.iter().take(4).map(|(g, x)| format!("{g} {x:.1} ms")).collect()
    }
}

fn findings(m: &Ms, _results: &[Value]) -> Vec<Verdict> {
    let tm = |meth: &str| m.metric(meth, &TOTAL);
    let t = |meth: &str| m.get(meth, &TOTAL);
    let (mm, dn, fr, fd) = (t("mmap-munmap"), t("dontneed"), t("free"), t("memfd"));
    let both = |a: Option<f64>, b: Option<f64>| a.zip(b);
    let cheapest = match (mm, dn, fr, fd) {
        (Some(a), Some(b), Some(c), Some(d)) => Some(a <= b.min(c).min(d)),
        _ => None,
    };
    vec![
        judge(
            "a lazy reset (MEM_RESET, MADV_FREE) is cheaper than decommitting (MEM_DECOMMIT, MADV_DONTNEED)",
            "77.3 against 116.8 ms",
            both(fr, dn).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("free"), tm("dontneed")]),
            both(fr, dn).map(|(a, b)| a < b),
            "a lazy release leaves the pages in place until memory is short, so touching them again is cheap",
            "the lazy release cost as much as the eager one here",
        ),
        judge(
            "allocating fresh and freeing (VirtualAlloc/VirtualFree, mmap/munmap) is the cheapest cycle",
            "64.4 ms, the lowest of the four",
            mm.map(|a| format!("{a:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("mmap-munmap"), tm("dontneed"), tm("free"), tm("memfd")]),
            cheapest,
            "creating and destroying mappings is cheap on both systems",
            "on Linux MADV_FREE and MADV_DONTNEED keep the mapping and avoid its setup and teardown, so they \
             beat a fresh mmap; on Windows decommit and re-commit were the slow path",
        ),
        judge(
            "shared-memory views cost more than private memory",
            "103.6 against 64.4 ms",
            both(fd, mm).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("memfd"), tm("mmap-munmap")]),
            both(fd, mm).map(|(a, b)| a > b),
            "shared pages go through the page cache (shmem) on both systems",
            "shared pages were as cheap as private ones here",
        ),
    ]
}
