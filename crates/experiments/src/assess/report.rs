//! `assess`: the answer in plain words and figures, the cold-by-age and
//! regrowth charts, and the published compressor ratios beside the program's.

use crate::assess::results::{AssessResult, Compressibility};
use record::rundir::RunRecord;
use record::stats::claim::Region;
use units::bytes;
use report::charts::{self, BarGroup, Scale};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use report::verdict::{Claim, Drawn, Finding, Ms};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

pub const COLD: Figure = Figure::new("cold anon, longest window", "", false, 0.001).export("cold_anon_ratio", "ratio", 1.0);
pub const RATIO_LZ4: Figure = Figure::new("lz4 ratio", "×", false, 0.001).export("lz4_compression_ratio", "ratio", 1.0);
pub const RATIO_ZSTD: Figure = Figure::new("zstd ratio", "×", false, 0.001).export("zstd_compression_ratio", "ratio", 1.0);
pub const SWAP_IN: Figure =
    Figure::new("swap-ins %WS/min", "%/min", true, 0.001).export("swap_in_working_set_per_minute", "", 0.01);
pub const PROBE_AFTER: Figure =
    Figure::new("probe p99 after trim, ms", "ms", true, 0.001).export("probe_p99_after_trim_seconds", "seconds", 1e-3);

/// Google's far memory keeps the rate at which cold pages are faulted back
/// under 0.2 % of the working set per minute (Lagar-Cavilla et al., ASPLOS 2019).
pub const FAR_MEMORY_PCT_PER_MIN: f64 = 0.2;

/// Published compressor ratios: (compressor, ratio, where).
pub const PUBLISHED: [(&str, f64, &str); 6] = [
    ("zstd", 3.96, "a 1.1 GB memory copy"),
    ("lzo-rle", 2.68, "a 1.1 GB memory copy"),
    ("lz4", 2.58, "a 1.1 GB memory copy"),
    ("lz4", 2.63, "fio on zram"),
    ("lzo-rle", 2.74, "fio on zram"),
    ("zstd", 3.37, "fio on zram"),
];

pub fn results(all: &[Value]) -> Result<Vec<AssessResult>, record::results::EntryError> {
    record::results::typed(all)
}

/// The configuration a result is grouped under: the program's name.
pub fn group(r: &AssessResult) -> String {
    match r.target.synthetic_hot_fraction {
        Some(h) => format!("synthetic {:.0}% hot", 100.0 * h),
        None if r.target.comm.is_empty() => format!("pid {}", r.target.pid),
        None => r.target.comm.clone(),
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() { format!("{:.0} %", 100.0 * x) } else { "-".into() }
}

fn part(c: &Compressibility, page: u64) -> String {
    if c.pages == 0 {
        return "no pages".into();
    }
    let orig = c.pages * page;
    format!(
        "{} → {} lz4 (×{:.2}), {} zstd (×{:.2}); {} zero/same-filled; {} over 2990 B with lz4",
        bytes(orig),
        bytes(c.lz4_bytes),
        c.ratio(true, page),
        bytes(c.zstd_bytes),
        c.ratio(false, page),
        pct((c.zero_pages + c.same_filled_pages) as f64 / c.pages as f64),
        pct(c.lz4_over_2990 as f64 / c.pages as f64),
    )
}

/// The answer, in plain words and figures.
pub fn answer(r: &AssessResult) -> String {
    let mut o = format!("pid {} ({})", r.target.pid, if r.target.comm.is_empty() { "?" } else { &r.target.comm });
    let Some(w) = r.longest() else {
        return o + ": nothing was measured";
    };
    let cold_anon = (w.resident.anon as f64 * w.cold_anon.max(0.0)) as u64;
    let _ = write!(
        o,
        ": of {} anon, {} ({}) was not touched within {:.0} s",
        bytes(w.resident.anon),
        bytes(cold_anon),
        pct(w.cold_anon),
        w.seconds
    );
    if w.resident.file + w.resident.shmem > 0 {
        let _ = write!(
            o,
            " (file {}: {} cold; shmem {}: {} cold)",
            bytes(w.resident.file),
            pct(w.cold_file),
            bytes(w.resident.shmem),
            pct(w.cold_shmem)
        );
    }
    if let Some(c) = &r.compress {
        // Not split (MGLRU counts pages, not which): all the anon pages stand for the cold.
        let (part, which) = if c.cold.pages > 0 { (&c.cold, "the cold") } else { (&c.all, "all the") };
        if part.pages > 0 {
            let ratio = part.ratio(true, c.page_size);
            let _ = write!(
                o,
                "; {which} anon pages compress {:.2}× with lz4 and {:.2}× with zstd, so {} cold would take about {} in a store",
                ratio,
                part.ratio(false, c.page_size),
                bytes(cold_anon),
                bytes((cold_anon as f64 / ratio) as u64),
            );
        }
    }
    if let Some(t) = &r.trim {
        let store = format!("{}{}", t.store, t.compressor.as_deref().map(|c| format!(" {c}")).unwrap_or_default());
        let _ = write!(
            o,
            ". Trimmed into {store}: anon {} → {}",
            bytes(t.rss_anon_before_bytes),
            bytes(t.rss_anon_after_bytes)
        );
        if let Some(p) = t.curve.last()
            && let (Some(held), Some(used)) = (p.store_orig_bytes.filter(|&b| b > 0), p.store_used_bytes)
        {
            let _ = write!(
                o,
                "; after {:.0} s the store held {} in {} (×{:.2}) and anon had regrown to {}",
                p.t_s,
                bytes(held),
                bytes(used),
                held as f64 / used.max(1) as f64,
                bytes(p.rss_anon_bytes)
            );
        }
        let _ = write!(
            o,
            "; the trim cost {} major faults in the first 5 s; {} came back from swap, {:.2} % of the {} working set per minute (Google's far memory holds {FAR_MEMORY_PCT_PER_MIN} %)",
            t.major_faults_first_5s,
            bytes(t.swap_in_bytes),
            t.swap_in_pct_ws_per_min,
            bytes(t.working_set_bytes),
        );
        if let (Some(b), Some(a)) = (&t.probe_before, &t.probe_after) {
            let _ = write!(o, "; the probe's p99 went from {:.2} to {:.2} ms", b.p99_ms, a.p99_ms);
        }
    }
    o + "."
}

/// Each target's last repeat (the one a trim followed).
fn lasts(rs: &[AssessResult]) -> Vec<&AssessResult> {
    rs.iter()
        .enumerate()
        .filter(|(i, r)| rs.get(i + 1).is_none_or(|n| n.target.pid != r.target.pid))
        .map(|(_, r)| r)
        .collect()
}

/// The windows and compressibility as a text table.
pub fn text_table(rs: &[AssessResult]) -> String {
    let mut o = String::new();
    // Each target in full at its last repeat, after a line for the repeats.
    for r in lasts(rs) {
        let reps: Vec<&AssessResult> = rs.iter().filter(|x| x.target.pid == r.target.pid).collect();
        if reps.len() > 1 {
            let cold: Vec<String> = reps.iter().filter_map(|x| x.longest()).map(|w| pct(w.cold_anon)).collect();
            let lz: Vec<String> =
                reps.iter().filter_map(|x| x.compress.as_ref()).map(|c| format!("×{:.2}", c.ratio_lz4)).collect();
            let _ = writeln!(o, "{} repeats: cold anon {}; lz4 {}", reps.len(), cold.join(", "), lz.join(", "));
        }
        let _ = writeln!(o, "{}", answer(r));
        let _ = writeln!(o, "  source: {}", r.source);
        if let Some(d) = &r.damon {
            let _ = writeln!(
                o,
                "  DAMON: {} regions ({} idle) after {:.1} s, sampled every {} µs, aggregated every {} ms{}",
                d.regions,
                d.idle_regions,
                d.monitored_s,
                d.sample_us,
                d.aggr_us / 1000,
                if d.pace < 0.95 {
                    format!(
                        "; it kept {:.0} % of that pace (starved of CPU), so its ages were read at {:.0} ms each",
                        d.pace * 100.0,
                        d.aggr_us as f64 / 1000.0 / d.pace
                    )
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(
            o,
            "  {:>8}  {:>10}  {:>6}  {:>10}  {:>6}  {:>10}  {:>6}",
            "window", "anon", "cold", "file", "cold", "shmem", "cold"
        );
        for w in &r.windows {
            let _ = writeln!(
                o,
                "  {:>7}s  {:>10}  {:>6}  {:>10}  {:>6}  {:>10}  {:>6}",
                w.seconds,
                bytes(w.resident.anon),
                pct(w.cold_anon),
                bytes(w.resident.file),
                pct(w.cold_file),
                bytes(w.resident.shmem),
                pct(w.cold_shmem)
            );
        }
        if let Some(c) = &r.compress {
            let _ = writeln!(o, "  anon pages read: {} of {} resident", c.all.pages, c.resident_pages);
            let _ = writeln!(o, "  all:  {}", part(&c.all, c.page_size));
            let _ = writeln!(o, "  cold: {}", part(&c.cold, c.page_size));
            let _ = writeln!(o, "  hot:  {}", part(&c.hot, c.page_size));
            if !c.split.is_empty() {
                let _ = writeln!(o, "  (split {})", c.split);
            }
        }
        if let (Some(p), Some(e)) = (r.target.synthetic_pattern.as_deref(), r.target.synthetic_lz4_estimate) {
            let _ = writeln!(
                o,
                "  the worker's {p} pattern: lz4 keeps {:.3} of it in its own estimate (×{:.2})",
                e,
                1.0 / e
            );
        }
        for n in &r.notes {
            let _ = writeln!(o, "  note: {n}");
        }
        if let Some(t) = &r.trim {
            let _ = writeln!(o, "  store: {}", t.store_note);
        }
    }
    o
}

/// Our ratios beside the published ones.
pub fn reference_markdown(rs: &[AssessResult]) -> String {
    let mut o = String::from("| compressor | published ratio | where | this program's pages |\n|---|---|---|---|\n");
    for (c, ratio, where_) in PUBLISHED {
        let ours: Vec<String> = lasts(rs)
            .into_iter()
            .filter_map(|r| {
                let cp = r.compress.as_ref()?;
                let x = match c {
                    "lz4" => cp.ratio_lz4,
                    "zstd" => cp.ratio_zstd,
                    _ => return None,
                };
                Some(format!("{} ×{x:.2}", group(r)))
            })
            .collect();
        let ours =
            if ours.is_empty() { "not measured (pagelab estimates lz4 and zstd)".into() } else { ours.join(", ") };
        let _ = writeln!(o, "| {c} | ×{ratio} | {where_} | {ours} |");
    }
    o += "\nThe ratio depends on the data: the published figures are for their data, ours for this program's.\n";
    o
}

pub fn render(rec: &RunRecord, rs: &[AssessResult]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = &rec.dir;
    let mut written = Vec::new();
    // Savings against age: what is cold at each window, per kind.
    let groups: Vec<BarGroup> = rs
        .iter()
        .flat_map(|r| {
            r.windows.iter().map(move |w| BarGroup {
                label: format!("{} {}s", group(r), w.seconds),
                bars: vec![
                    ("anon cold MiB".into(), units::mib(w.resident.anon) * w.cold_anon.max(0.0)),
                    ("file cold MiB".into(), units::mib(w.resident.file) * w.cold_file.max(0.0)),
                    ("shmem cold MiB".into(), units::mib(w.resident.shmem) * w.cold_shmem.max(0.0)),
                ],
            })
        })
        .collect();
    if !groups.is_empty() {
        charts::bars(
            &dir.join("cold"),
            "pagelab assess: memory not touched within each window",
            "MiB",
            &groups,
            false,
        )?;
        written.extend([dir.join("cold.svg"), dir.join("cold.png")]);
    }
    // What the pages compress to, cold and hot, with each compressor.
    let comp: Vec<BarGroup> = rs
        .iter()
        .filter_map(|r| {
            let c = r.compress.as_ref()?;
            Some([("all", &c.all), ("cold", &c.cold), ("hot", &c.hot)].into_iter().filter(|(_, x)| x.pages > 0).map(
                move |(k, x)| BarGroup {
                    label: format!("{} {k}", group(r)),
                    bars: vec![
                        ("lz4".into(), x.ratio(true, c.page_size)),
                        ("zstd".into(), x.ratio(false, c.page_size)),
                    ],
                },
            ))
        })
        .flatten()
        .collect();
    if !comp.is_empty() {
        charts::bars(
            &dir.join("ratios"),
            "pagelab assess: compression ratio of the program's anonymous pages",
            "original ÷ compressed",
            &comp,
            false,
        )?;
        written.extend([dir.join("ratios.svg"), dir.join("ratios.png")]);
    }
    let mut series = Vec::new();
    for r in rs {
        if let Some(t) = &r.trim {
            let g = group(r);
            series.push((
                format!("{g} anon RSS MiB"),
                t.curve.iter().map(|p| (p.t_s, units::mib(p.rss_anon_bytes))).collect(),
            ));
            series.push((
                format!("{g} in the store MiB"),
                t.curve.iter().filter_map(|p| Some((p.t_s, units::mib(p.store_orig_bytes?)))).collect(),
            ));
            series.push((
                format!("{g} store memory MiB"),
                t.curve.iter().filter_map(|p| Some((p.t_s, units::mib(p.store_used_bytes?)))).collect(),
            ));
        }
    }
    if series.iter().any(|(_, v): &(String, Vec<(f64, f64)>)| v.len() > 1) {
        charts::lines(
            &dir.join("regrowth"),
            "pagelab assess: after the trim",
            "seconds after the trim",
            "MiB",
            &series,
            Scale::Linear,
        )?;
        written.extend([dir.join("regrowth.svg"), dir.join("regrowth.png")]);
    }
    report::write_file(dir.join("assess.md"), format!("# pagelab assess\n\n{}", tables(rs)))?;
    written.push(dir.join("assess.md"));
    Ok(written)
}

/// The run's tables in Markdown: `assess.md` below its title, and the lab
/// report's tables.
pub fn tables(rs: &[AssessResult]) -> String {
    format!(
        "```\n{}```\n\n## Published compressor ratios beside this program's\n\n{}",
        text_table(rs),
        reference_markdown(rs)
    )
}

const NO_RESULTS: &str = "the run has no results";

fn draw_zstd_better(m: &Ms, rs: &[AssessResult]) -> Drawn {
    let Some(r) = rs.last() else { return Err(NO_RESULTS.to_string()).into() };
    let g = group(r);
    m.ratios((&g, &RATIO_ZSTD), (&g, &RATIO_LZ4)).into()
}

/// The trim follows the last repeat: one value (n = 1) unless repeated.
fn draw_far_memory(m: &Ms, rs: &[AssessResult]) -> Drawn {
    let Some(r) = rs.last() else { return Err(NO_RESULTS.to_string()).into() };
    let rate = if r.trim.is_none() { Err("the run did not trim (--trim)".into()) } else { m.values(&group(r), &SWAP_IN) };
    rate.into()
}

/// A direction claim needs a 10 % minimum effect (docs/stability.md).
pub static FINDINGS: [Finding<AssessResult>; 2] = [
    Finding {
        claim: Claim {
            id: "assess.zstd_better",
            claim: "zstd compresses memory better than lz4",
            study: "×3.96 against ×2.58 on a 1.1 GB memory copy (×3.37 against ×2.63 with fio on zram)",
            quantity: "compression ratio of the program's pages, zstd ÷ lz4, paired by repeat (better: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: true,
            check: true,
            control: "",
            yes: "this program's pages rank the compressors as the published data does",
            no: "on this program's pages zstd did not beat lz4 by 10 %",
        },
        draw: draw_zstd_better,
    },
    Finding {
        claim: Claim {
            id: "assess.far_memory",
            claim: "cold memory can be moved to a compressed store at a promotion rate under 0.2 % of the working set per minute",
            study: "0.2 %/min, Google's far-memory target",
            quantity: "swap-ins after the trim, % of the working set per minute (values under 0.001 count as 0.001)",
            region: Region::at_most(FAR_MEMORY_PCT_PER_MIN),
            floor: 0.001,
            own: true,
            check: false,
            control: "a program that keeps touching what was trimmed (assess --synthetic with its hot set trimmed): its pages come back at once, far above 0.2 % per minute",
            yes: "the trimmed pages stayed out: this program's cold memory is cold",
            no: "the program faulted its trimmed pages back faster than far memory allows: its cold memory is not cold at \
                 this age",
        },
        draw: draw_far_memory,
    },
];

/// `assess` in the report's list of experiments.
pub struct Assess;

impl Study for Assess {
    type Entry = AssessResult;
    fn figures(&self) -> &'static [Figure] {
        &[COLD, RATIO_LZ4, RATIO_ZSTD, SWAP_IN, PROBE_AFTER]
    }
    fn name(&self) -> &'static str {
        "assess"
    }
    fn study(&self) -> &'static str {
        "Mangan's memory eater and ATM's trim; Dawson's working-set caps; Google's far memory (0.2 %/min)"
    }
    fn parse(&self, results: &[Value]) -> Result<Vec<AssessResult>, record::results::EntryError> {
        self::results(results)
    }
    fn render(
        &self,
        rec: &RunRecord,
        r: &[AssessResult],
    ) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
        render(rec, r)
    }
    fn tables(&self, _rec: &RunRecord, r: &[AssessResult]) -> String {
        tables(r)
    }
    fn metrics(&self, results: &[AssessResult], b: &mut Builder) {
        for r in results {
            let g = group(r);
            b.push(&g, &COLD, r.longest().map(|w| w.cold_anon));
            if let Some(c) = &r.compress {
                b.push(&g, &RATIO_LZ4, Some(c.ratio_lz4));
                b.push(&g, &RATIO_ZSTD, Some(c.ratio_zstd));
            }
            if let Some(t) = &r.trim {
                b.push(&g, &SWAP_IN, Some(t.swap_in_pct_ws_per_min));
                b.push(&g, &PROBE_AFTER, t.probe_after.as_ref().map(|p| p.p99_ms));
            }
        }
    }
    fn findings(&self) -> &'static [Finding<AssessResult>] {
        &FINDINGS
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        m.iter()
            .filter(|x| x.name == COLD.name || x.name == RATIO_LZ4.name)
            .filter_map(|x| Some(format!("{} {} {:.2}", x.group, x.name, x.median()?)))
            .collect()
    }
}
