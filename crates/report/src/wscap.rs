//! Rendering `wscap` runs: the table per mode, scans/s per mode (log scale), the
//! timeline, the slowdown-against-cap sweep, and Dawson's figures beside ours.

use crate::charts::{self, BarGroup};
use crate::summary::{bytes, median};
use record::rundir::RunRecord;
use serde_json::Value;
use std::fmt::Write as _;

fn by_mode(results: &[Value]) -> Vec<(String, Vec<&Value>)> {
    let mut out: Vec<(String, Vec<&Value>)> = Vec::new();
    for r in results.iter().filter(|r| r["sweep"] != true) {
        let m = r["mode"].as_str().unwrap_or("?").to_string();
        match out.iter_mut().find(|(k, _)| *k == m) {
            Some((_, v)) => v.push(r),
            None => out.push((m, vec![r])),
        }
    }
    out
}

fn med(rs: &[&Value], k: &str) -> Option<f64> {
    median(rs.iter().filter_map(|r| r[k].as_f64()).collect())
}

fn o(v: Option<f64>, p: usize) -> String {
    v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into())
}

pub fn text_table(results: &[Value]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<17} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>6} {:>3}",
        "mode",
        "cap",
        "scans/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "slowdown",
        "majflt/sc",
        "RSS max",
        "charged",
        "cpu s",
        "n"
    );
    for (m, rs) in by_mode(results) {
        if rs[0]["supported"] == false {
            let _ = writeln!(s, "{m:<17} unsupported: {}", rs[0]["reason"].as_str().unwrap_or(""));
            continue;
        }
        if rs.iter().any(|r| r["outcome"] != "ok") {
            let _ = writeln!(s, "{m:<17} {}", rs[0]["outcome"].as_str().unwrap_or(""));
        }
        let _ = writeln!(
            s,
            "{:<17} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>6} {:>3}",
            m,
            rs[0]["cap_bytes"].as_u64().map(bytes).unwrap_or("-".into()),
            o(med(&rs, "scans_per_sec"), 1),
            o(med(&rs, "ms_per_scan_p50"), 3),
            o(med(&rs, "ms_per_scan_p99"), 3),
            o(med(&rs, "ms_per_scan_max"), 3),
            o(med(&rs, "slowdown"), 1),
            o(med(&rs, "major_faults_per_scan"), 1),
            bytes(med(&rs, "rss_max_bytes").unwrap_or(0.0) as u64),
            med(&rs, "charged_max_bytes").map(|b| bytes(b as u64)).unwrap_or("-".into()),
            o(
                median(
                    rs.iter()
                        .map(|r| r["cpu_user_s"].as_f64().unwrap_or(0.0) + r["cpu_system_s"].as_f64().unwrap_or(0.0))
                        .collect()
                ),
                2
            ),
            rs.len()
        );
    }
    let rs: Vec<&Value> = results.iter().filter(|r| r["minimal_scans_per_sec"].is_number()).collect();
    if let (Some(minimal), Some(inst), Some(ratio)) =
        (med(&rs, "minimal_scans_per_sec"), med(&rs, "instrumented_scans_per_sec"), med(&rs, "instrumented_vs_minimal"))
    {
        let _ = writeln!(
            s,
            "scan loop as measured (timestamp per scan): {inst:.0} scans/s; minimal loop over the same buffer: {minimal:.0} scans/s; 20 alternating window pairs in the same worker, median ratio {ratio:.3} ({:+.1} %)",
            (ratio - 1.0) * 100.0
        );
    }
    let sweep: Vec<&Value> = results.iter().filter(|r| r["sweep"] == true).collect();
    if !sweep.is_empty() {
        s += "sweep (cap-max): ";
        for r in sweep {
            let _ = write!(
                s,
                "{}→{}× ",
                r["cap_bytes"].as_u64().map(bytes).unwrap_or_default(),
                o(r["slowdown"].as_f64(), 1)
            );
        }
        s.push('\n');
    }
    s
}

pub fn reference_markdown(results: &[Value]) -> String {
    let modes = by_mode(results);
    let get = |m: &str, k: &str| modes.iter().find(|(n, _)| n == m).and_then(|(_, rs)| med(rs, k));
    let mut s = String::from("| figure | Dawson (Windows, 64 MiB, 32 MiB cap) | pagelab (this run) |\n|---|---|---|\n");
    let _ = writeln!(s, "| uncapped scans/s | about 4400 | {} |", o(get("none", "scans_per_sec"), 0));
    let _ = writeln!(s, "| uncapped ms per scan | about 0.2 | {} |", o(get("none", "ms_per_scan_p50"), 3));
    let _ = writeln!(s, "| capped scans/s | 6 to 17 | {} (cap-max) |", o(get("cap-max", "scans_per_sec"), 1));
    let _ = writeln!(
        s,
        "| capped slowdown | about 250×, sometimes 800× | {} (cap-max) |",
        o(get("cap-max", "slowdown"), 0)
    );
    let _ =
        writeln!(s, "| capped ms per scan (worst) | 160 | {} (cap-max p99) |", o(get("cap-max", "ms_per_scan_p99"), 1));
    let _ = writeln!(
        s,
        "| periodic trim instead of a cap | argued strictly better, not measured | pageout {}×, cold {}×, reclaim {}× |",
        o(get("periodic-pageout", "slowdown"), 2),
        o(get("periodic-cold", "slowdown"), 2),
        o(get("periodic-reclaim", "slowdown"), 2)
    );
    s += "\nOn Windows the capped pages went to the standby list and came back as soft faults; \
on Linux they go to (compressed) swap and come back as major faults, each a decompression. \
Dawson's figures are from a different machine and OS, so compare the ratios, not the rates.\n";
    s
}

pub fn render(rec: &RunRecord) -> Result<Vec<std::path::PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let results: Vec<Value> = rec.run.results.as_array().cloned().unwrap_or_default();
    let dir = &rec.dir;
    let mut written = Vec::new();
    let iv = record::derive::intervals(&rec.samples);
    let t0 = rec.samples.first().map(|s| s.t_ns).unwrap_or(rec.run.start_monotonic_ns);
    if !iv.is_empty() {
        charts::timeline(
            &dir.join("timeline"),
            "pagelab wscap: memory over time (modes numbered)",
            &iv,
            &charts::markers(&rec.run.phases, t0),
        )?;
        written.extend([dir.join("timeline.svg"), dir.join("timeline.png")]);
    }
    let groups: Vec<BarGroup> = by_mode(&results)
        .into_iter()
        .filter_map(|(m, rs)| Some(BarGroup { label: m, bars: vec![("scans/s".into(), med(&rs, "scans_per_sec")?)] }))
        .collect();
    if !groups.is_empty() {
        charts::bars(
            &dir.join("scans"),
            "pagelab wscap: scans per second by mode (log scale)",
            "scans/s",
            &groups,
            true,
        )?;
        written.extend([dir.join("scans.svg"), dir.join("scans.png")]);
    }
    let sweep: Vec<(f64, f64)> = results
        .iter()
        .filter(|r| r["sweep"] == true)
        .filter_map(|r| Some((r["cap_bytes"].as_f64()? / r["size_bytes"].as_f64()?, r["slowdown"].as_f64()?)))
        .collect();
    if !sweep.is_empty() {
        charts::lines(
            &dir.join("sweep"),
            "pagelab wscap: slowdown against cap ÷ size (cap-max)",
            "cap ÷ size",
            "slowdown (×, log)",
            &[("cap-max".into(), sweep)],
            charts::Scale::LogY,
        )?;
        written.extend([dir.join("sweep.svg"), dir.join("sweep.png")]);
    }
    std::fs::write(
        dir.join("wscap.md"),
        format!(
            "# pagelab wscap\n\n```\n{}```\n\n## Published figures beside ours\n\n{}",
            text_table(&results),
            reference_markdown(&results)
        ),
    )?;
    written.push(dir.join("wscap.md"));
    Ok(written)
}
