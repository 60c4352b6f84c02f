//! Rendering `mapping` runs: steps per method, the grouped bar charts (with and
//! without the touch baseline subtracted), RSS after each step, and Gerstmann's
//! Windows figures beside ours.

use crate::charts::{self, BarGroup};
use crate::summary::bytes;
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
