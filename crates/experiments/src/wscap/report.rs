//! Rendering `wscap` runs: the table per mode, scans/s per mode (log scale), the
//! timeline, the slowdown-against-cap sweep, and Dawson's figures beside ours.

use crate::wscap::work::Mode;
use crate::wscap::results::WscapResult;
use workloads::backing::BackingKind;
use record::results::typed;
use record::rundir::RunRecord;
use record::stats::claim::Region;
use record::stats::median;
use report::charts::{self, BarGroup};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use units::bytes;
use report::verdict::{Claim, Drawn, Evidence, Finding, Ms};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The memory arm's groups: "mem/none" and "mem/cap-max" (never "none …",
/// which [`report::verdict::group_is`] would take for the mode itself).
const MEMORY_ARM: &str = "mem/";

/// A result's group: its mode, or the memory arm's name for it.
fn group(r: &WscapResult) -> String {
    if r.memory_arm { format!("{MEMORY_ARM}{}", r.mode) } else { r.mode.to_string() }
}

fn by_mode(results: &[WscapResult]) -> Vec<(String, Vec<&WscapResult>)> {
    let mut out: Vec<(String, Vec<&WscapResult>)> = Vec::new();
    for r in results.iter().filter(|r| !r.sweep) {
        let g = group(r);
        match out.iter_mut().find(|(k, _)| *k == g) {
            Some((_, v)) => v.push(r),
            None => out.push((g, vec![r])),
        }
    }
    out
}

/// The median of a figure over the repeats that have it.
fn med(rs: &[&WscapResult], f: impl Fn(&WscapResult) -> Option<f64>) -> Option<f64> {
    median(&rs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

fn o(v: Option<f64>, p: usize) -> String {
    v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into())
}

pub fn text_table(results: &[WscapResult]) -> String {
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
        if !rs[0].supported {
            let _ = writeln!(s, "{m:<17} unsupported: {}", rs[0].reason.as_deref().unwrap_or(""));
            continue;
        }
        if rs.iter().any(|r| r.outcome != "ok") {
            let _ = writeln!(s, "{m:<17} {}", rs[0].outcome);
        }
        let _ = writeln!(
            s,
            "{:<17} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>6} {:>3}",
            m,
            rs[0].cap_bytes.map(bytes).unwrap_or("-".into()),
            o(med(&rs, |r| Some(r.scans_per_sec)), 1),
            o(med(&rs, |r| Some(r.ms_per_scan_p50)), 3),
            o(med(&rs, |r| Some(r.ms_per_scan_p99)), 3),
            o(med(&rs, |r| Some(r.ms_per_scan_max)), 3),
            o(med(&rs, |r| r.slowdown), 1),
            o(med(&rs, |r| Some(r.major_faults_per_scan)), 1),
            med(&rs, |r| r.rss_max_bytes.map(|b| b as f64)).map(|b| bytes(b as u64)).unwrap_or("-".into()),
            med(&rs, |r| r.charged_max_bytes.map(|b| b as f64)).map(|b| bytes(b as u64)).unwrap_or("-".into()),
            o(med(&rs, |r| Some(r.cpu_user_s + r.cpu_system_s)), 2),
            rs.len()
        );
    }
    let rs: Vec<&WscapResult> = results.iter().filter(|r| r.minimal_scans_per_sec.is_some()).collect();
    if let (Some(minimal), Some(inst), Some(ratio)) = (
        med(&rs, |r| r.minimal_scans_per_sec),
        med(&rs, |r| r.instrumented_scans_per_sec),
        med(&rs, |r| r.instrumented_vs_minimal),
    ) {
        let _ = writeln!(
            s,
            "scan loop as measured (timestamp per scan): {inst:.0} scans/s; minimal loop over the same buffer: {minimal:.0} scans/s; 20 alternating window pairs in the same worker, median ratio {ratio:.3} ({:+.1} %)",
            (ratio - 1.0) * 100.0
        );
    }
    if let Some(r) = results.iter().find(|r| r.memory_arm) {
        let _ = writeln!(
            s,
            "{MEMORY_ARM}*: the memory arm, none and cap-max again on {}, for the memory finding{}",
            r.backing,
            if r.backing == BackingKind::Swapfile { " (a store the capped pages can leave RAM for)" } else { "" }
        );
    }
    let sweep: Vec<&WscapResult> = results.iter().filter(|r| r.sweep).collect();
    if !sweep.is_empty() {
        s += "sweep (cap-max): ";
        for r in sweep {
            let _ = write!(s, "{}→{}× ", r.cap_bytes.map(bytes).unwrap_or_default(), o(r.slowdown, 1));
        }
        s.push('\n');
    }
    s
}

pub fn reference_markdown(results: &[WscapResult]) -> String {
    let modes = by_mode(results);
    let get =
        |m: &str, f: fn(&WscapResult) -> Option<f64>| modes.iter().find(|(n, _)| n == m).and_then(|(_, rs)| med(rs, f));
    let rate = |r: &WscapResult| Some(r.scans_per_sec);
    let p50 = |r: &WscapResult| Some(r.ms_per_scan_p50);
    let p99 = |r: &WscapResult| Some(r.ms_per_scan_p99);
    let slow = |r: &WscapResult| r.slowdown;
    let mut s = String::from("| figure | Dawson (Windows, 64 MiB, 32 MiB cap) | pagelab (this run) |\n|---|---|---|\n");
    let _ = writeln!(s, "| uncapped scans/s | about 4400 | {} |", o(get("none", rate), 0));
    let _ = writeln!(s, "| uncapped ms per scan | about 0.2 | {} |", o(get("none", p50), 3));
    let _ = writeln!(s, "| capped scans/s | 6 to 17 | {} (cap-max) |", o(get("cap-max", rate), 1));
    let _ = writeln!(s, "| capped slowdown | about 250×, sometimes 800× | {} (cap-max) |", o(get("cap-max", slow), 0));
    let _ = writeln!(s, "| capped ms per scan (worst) | 160 | {} (cap-max p99) |", o(get("cap-max", p99), 1));
    let _ = writeln!(
        s,
        "| periodic trim instead of a cap | argued strictly better, not measured | pageout {}×, cold {}×, reclaim {}× |",
        o(get("periodic-pageout", slow), 2),
        o(get("periodic-cold", slow), 2),
        o(get("periodic-reclaim", slow), 2)
    );
    s += "\nOn Windows the capped pages went to the standby list and came back as soft faults; \
on Linux they go to (compressed) swap and come back as major faults, each a decompression. \
Dawson's figures are from a different machine and OS, so compare the ratios, not the rates.\n";
    s
}

pub fn render(
    rec: &RunRecord,
    results: &[WscapResult],
) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
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
    let groups: Vec<BarGroup> = by_mode(results)
        .into_iter()
        .filter_map(|(m, rs)| {
            Some(BarGroup { label: m, bars: vec![("scans/s".into(), med(&rs, |r| Some(r.scans_per_sec))?)] })
        })
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
        .filter(|r| r.sweep)
        .filter_map(|r| Some((r.cap_bytes? as f64 / r.size_bytes as f64, r.slowdown?)))
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
    report::write_file(dir.join("wscap.md"), format!("# pagelab wscap\n\n{}", tables(results)))?;
    written.push(dir.join("wscap.md"));
    Ok(written)
}

/// The run's tables in Markdown: `wscap.md` below its title, and the lab
/// report's tables.
pub fn tables(results: &[WscapResult]) -> String {
    format!("```\n{}```\n\n## Published figures beside ours\n\n{}", text_table(results), reference_markdown(results))
}

// ---- The experiment, as the report sees it (report::experiment).

pub const SCANS: Figure = Figure::new("scans/s", "/s", false, 0.01).export("scans_per_second", "", 1.0);
pub const SCAN_P99: Figure = Figure::new("ms per scan p99", "ms", true, 0.001).export("scan_p99_seconds", "seconds", 1e-3);
/// The memory a mode's pages take in RAM ([`WscapResult::held_max_bytes`]:
/// the charge, the zram store and the rise of zswap's pool, summed poll by
/// poll; in older records the charge's and the store's peaks), with and
/// without a cap alike. (The
/// resident set is no measure of it: it also counts the worker's binary and
/// libraries, file pages charged elsewhere, about 9 MiB of a debug build's 75,
/// which made a cap on zram that kept every page look like a saving: 0.88.)
pub const HELD: Figure = Figure::new("memory held MiB", "MiB", true, report::headline::PAGE_MIB).export("memory_held_bytes", "bytes", units::MIB_F);

/// `wscap` in the report's list of experiments.
pub struct Wscap;

impl Study for Wscap {
    type Entry = WscapResult;
    fn figures(&self) -> &'static [Figure] {
        &[SCANS, SCAN_P99, HELD]
    }
    fn name(&self) -> &'static str {
        "wscap"
    }
    fn study(&self) -> &'static str {
        "Dawson, working-set caps on Windows: a 64 MiB scan under a 32 MiB cap"
    }
    fn parse(&self, results: &[Value]) -> Result<Vec<WscapResult>, record::results::EntryError> {
        typed(results)
    }
    fn render(
        &self,
        rec: &RunRecord,
        r: &[WscapResult],
    ) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
        render(rec, r)
    }
    fn tables(&self, _rec: &RunRecord, r: &[WscapResult]) -> String {
        tables(r)
    }
    fn metrics(&self, results: &[WscapResult], b: &mut Builder) {
        for r in results.iter().filter(|r| r.supported && !r.sweep) {
            let g = group(r);
            b.push_of(&g, &SCANS, r.repeat, Some(r.scans_per_sec));
            b.push_of(&g, &SCAN_P99, r.repeat, Some(r.ms_per_scan_p99));
            b.push_of(&g, &HELD, r.repeat, held(r));
        }
    }
    fn findings(&self) -> &'static [Finding<WscapResult>] {
        &FINDINGS
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        let med = |g: &str, fig: &Figure| report::experiment::median_of(m, g, fig);

        let none = med("none", &SCANS);
        ["none", "cap-max", "periodic-pageout"]
            .iter()
            .filter_map(|g| {
                let x = med(g, &SCANS)?;
                Some(match none {
                    Some(n) if *g != "none" && x > 0.0 && n / x >= 10.0 => {
                        format!("{g}: {x:.1} scans/s ({:.0}× slower)", n / x)
                    }
                    Some(n) if *g != "none" && x > 0.0 => format!("{g}: {x:.0} scans/s ({:.2}× slower)", n / x),
                    _ => format!("{g}: {x:.0} scans/s"),
                })
            })
            .collect()
    }
}

/// "Orders of magnitude": at least 100×, the study's lower figure (about 250×,
/// sometimes 800×) rounded down to the order it names.
pub static FINDINGS: [Finding<WscapResult>; 3] = [
    Finding {
        claim: Claim {
            id: "wscap.cap_slowdown",
            claim: "a cap at half the working set slows scanning by orders of magnitude",
            study: "about 250×, sometimes 800×",
            quantity: "scans/s without a cap ÷ under cap-max, paired by repeat",
            region: Region::at_least(100.0),
            floor: 0.001,
            own: false,
            check: false,
            control: "a cap above the working set (--cap at twice --size, what the scan touches): nothing is pushed out, so the slowdown is about 1, far below 100",
            yes: "every scan faults the capped half back in from (compressed) swap, one page at a time",
            no: "the cap here costs far less than orders of magnitude: the swap-in path is much cheaper on this machine \
                 than the study's",
        },
        draw: draw_cap_slowdown,
    },
    Finding {
        claim: Claim {
            id: "wscap.periodic_cheaper",
            claim: "trimming periodically costs far less than a cap",
            study: "argued, not measured",
            quantity: "scans/s under periodic-pageout ÷ under cap-max, paired by repeat (far less: ≥ 10×); \
                       periodic-pageout (MADV_PAGEOUT, the study's EmptyWorkingSet) is named before the data, not \
                       chosen as the slowest periodic mode in the run: a minimum of several arms is biased",
            region: Region::at_least(10.0),
            floor: 0.001,
            own: false,
            check: false,
            control: "a cap above the working set: the cap then costs nothing while the periodic trim still refaults what it trimmed, so the ratio falls below 1",
            yes: "a periodic trim pays the refaults once per period, a cap pays them on every scan",
            no: "a periodic trim cost nearly as much as the cap here",
        },
        draw: draw_periodic_cheaper,
    },
    Finding {
        claim: Claim {
            id: "wscap.cap_saves_no_memory",
            claim: "capping the working set does not save memory",
            study: "the trimmed pages stay in RAM (standby list, compressed store)",
            quantity: "memory held under cap-max ÷ without a cap (each the cgroup's charge + the zram store + the rise \
                       of zswap's pool, summed poll by poll, max), \
                       paired by repeat, on a store the capped pages can leave RAM for (the memory arm: a swap \
                       file, named in the verdict), the pages holding random bytes (no saving: ≥ 0.9)",
            region: Region::at_least(0.9),
            floor: 0.001,
            own: false,
            check: false,
            control: "the memory arm on zram (--memory-store zram): random bytes stay in RAM at full size, so the memory held stays about what it is without a cap, at or above 0.9",
            yes: "the capped pages stayed in RAM although they could leave it, as the study's standby list keeps them",
            no: "the capped pages left RAM: the cap freed memory here, where the study's standby list kept them",
        },
        draw: draw_cap_saves,
    },
];

/// Memory held in RAM by a mode's pages, MiB (see [`HELD`]); None where this
/// run did not record what it needs.
fn held(r: &WscapResult) -> Option<f64> {
    let mib = units::mib;
    match r.mode {
        Mode::None | Mode::CapMax | Mode::CapHigh => match r.held_max_bytes {
            Some(b) => Some(mib(b)),
            None => Some(mib(r.charged_max_bytes.filter(|&b| b > 0)? + r.store_max_bytes.unwrap_or(0))),
        },
        _ => None,
    }
}

fn draw_cap_slowdown(m: &Ms, _: &[WscapResult]) -> Drawn {
    m.ratios(("none", &SCANS), ("cap-max", &SCANS)).into()
}

/// The periodic trim the study's argument is about (EmptyWorkingSet is
/// MADV_PAGEOUT here), named before the data, against the cap in that repeat.
fn draw_periodic_cheaper(m: &Ms, _: &[WscapResult]) -> Drawn {
    let e: Evidence = match (m.metric("cap-max", &SCANS), m.metric("periodic-pageout", &SCANS)) {
        (None, _) => Err("this run had no cap-max mode".into()),
        (Some(_), None) => Err("this run had no periodic-pageout mode (the finding's reference, named before the data)".into()),
        (Some(_), Some(_)) => m.ratios(("periodic-pageout", &SCANS), ("cap-max", &SCANS)),
    };
    e.into()
}

/// The store the memory finding is judged on, and its groups: the memory
/// arm's where the run has one, else the modes' own where their store lets
/// the capped pages leave RAM (a swap file); Err(why not) otherwise.
pub fn memory_store(results: &[WscapResult]) -> Result<(String, String, String), String> {
    if let Some(r) = results.iter().find(|r| r.memory_arm) {
        return Ok((r.backing.to_string(), format!("{MEMORY_ARM}cap-max"), format!("{MEMORY_ARM}none")));
    }
    match results.iter().find(|r| r.mode == Mode::CapMax && !r.sweep) {
        Some(r) if r.backing == BackingKind::Swapfile => Ok((r.backing.to_string(), "cap-max".into(), "none".into())),
        Some(r) => Err(format!(
            "not judged on {}: {}, and this run had no memory arm on a store they could leave (--memory-store \
             swapfile)",
            r.backing,
            if r.backing.compressed() {
                "the capped pages cannot leave RAM there (its store is RAM)"
            } else {
                "pagelab does not know whether that store keeps the capped pages in RAM"
            }
        )),
        None => Err("this run had no cap-max mode".into()),
    }
}

fn draw_cap_saves(m: &Ms, results: &[WscapResult]) -> Drawn {
    let (store, capped, none) = match memory_store(results) {
        Ok(x) => x,
        Err(why) => {
            let e: Evidence = Err(why);
            return e.into();
        }
    };
    let mut d: Drawn = m.ratios((&capped, &HELD), (&none, &HELD)).into();
    d.label = Some(format!(
        "on {store}{}",
        match store.as_str() {
            "swapfile" => ", where the capped pages can leave RAM",
            "zram" | "zswap" => ", where the capped pages stay in RAM (a control)",
            _ => "",
        }
    ));
    d
}
