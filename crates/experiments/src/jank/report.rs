//! Rendering `jank` runs: each arm's frames inside and outside the hog's
//! group, paired ratios against the CPU-only control with 95 % intervals,
//! the one-line answer, pagelab's own findings on the stores, and charts (a
//! frame-time line per arm, and the frame-time distribution side by side).

use crate::jank::results::{Config, Entry, JankResult};
use record::results::typed;
use record::rundir::RunRecord;
use record::stats::claim::{Region, estimate};
use report::charts::{self, Trace};
use report::experiment::Study;
use report::headline::{Builder, Figure, Metric};
use report::verdict::{Claim, Drawn, Evidence, Finding, Ms};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

pub const P99_IN: Figure =
    Figure::new("frame p99 inside, ms", "ms", true, 0.001).export("frame_p99_seconds", "seconds", 1e-3);
pub const LONGEST_IN: Figure =
    Figure::new("longest frame inside, ms", "ms", true, 0.001).export("frame_longest_seconds", "seconds", 1e-3);
pub const OVER_100_IN: Figure =
    Figure::new("frames over 100 ms inside, per min", "/min", true, 1.0).export("frames_over_100ms_per_minute", "", 1.0);
pub const BACK_IN: Figure =
    Figure::new("frames on time again after, s", "s", true, 0.01).export("frames_on_time_after_seconds", "seconds", 1.0);
pub const P99_OUT: Figure = Figure::new("frame p99 outside, ms", "ms", true, 0.001)
    .export("frame_p99_outside_seconds", "seconds", 1e-3);
pub const LONGEST_OUT: Figure = Figure::new("longest frame outside, ms", "ms", true, 0.001)
    .export("frame_longest_outside_seconds", "seconds", 1e-3);

pub static FIGURES: [Figure; 6] = [P99_IN, LONGEST_IN, OVER_100_IN, BACK_IN, P99_OUT, LONGEST_OUT];

/// The fewest frames a run of a user's command must draw for its arm to be
/// named in the answer.
pub const MIN_FRAMES: usize = 10;

/// The CPU-only control's arm name.
pub const CPU_ONLY: &str = "cpu-only";

/// pagelab's own findings on the stores (issue 61), each quoting its source;
/// their figure is the p99 frame time inside the group, never zero, so that
/// no floor decides them.
pub static FINDINGS: [Finding<JankResult>; 3] = [
    Finding {
        claim: Claim {
            id: "jank.zram_tenfold",
            claim: "zram keeps a desktop at least ten times more responsive than a disk swap",
            study: "Fedora's SwapOnZRAM change: zram is \"at least an order of magnitude faster than drive based swap\"",
            quantity: "p99 frame time inside the hog's group while it thrashes, swapfile ÷ zram:lz4, paired by \
                       repeat (an order of magnitude: ≥ 10)",
            region: Region::at_least(10.0),
            floor: 0.001,
            own: true,
            check: false,
            control: "negative: a swap file whose drive never waits (a RAM disk under it) would take away the \
                      drive's wait the claim is about; pagelab has no such store, so none is run (the CPU-only limit \
                      named here before 2026-12-02 touched neither store: a relabelled arm, not a control). Positive: the swap \
                      file on a drive as slow as a memory card (jank --swap-iops 3000: the disk under it limited to \
                      3000 reads and writes a second for the hog's group), so that each page faulted back waits on a \
                      drive, as drive-based swap does",
            yes: "frames waited on zram's in-memory store, not on the disk",
            no: "the disk swap's frames were less than ten times slower than zram's at the p99",
        },
        draw: draw_tenfold,
    },
    Finding {
        claim: Claim {
            id: "jank.zstd_stutters",
            claim: "zstd stutters more than lz4 under thrashing",
            study: "Ubuntu's discussion of zram for 26.04 chose lz4 over zstd after \"noticeable stuttering on my laptop\"",
            quantity: "p99 frame time inside the hog's group while it thrashes, zram:zstd ÷ zram:lz4, paired by \
                       repeat (more: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: true,
            check: false,
            control: "both compressors under the CPU-only limit (jank --cpu-only): nothing is compressed, so the \
                      ratio is near 1",
            yes: "zstd's slower compression and decompression lengthened the frames that waited on a fault",
            no: "zstd's frames were not 10 % longer than lz4's at the p99",
        },
        draw: draw_zstd,
    },
    Finding {
        claim: Claim {
            id: "jank.min_ttl",
            claim: "MGLRU's min_ttl_ms=1000 eliminates intolerable lags",
            study: "the MGLRU min_ttl_ms commit: \"N=1000 usually eliminates intolerable lags\" (no measurement given)",
            quantity: "frames over 100 ms per minute with min_ttl_ms=1000 ÷ without (eliminated: ≤ 0.1)",
            region: Region::at_most(0.1),
            floor: 0.01,
            own: true,
            check: false,
            control: "min_ttl_ms=0 in both arms",
            yes: "the working set was kept, so no frame waited on a fault",
            no: "frames still waited on faults with min_ttl_ms set",
        },
        draw: draw_min_ttl,
    },
];

/// Why an arm's run cannot judge a finding: the hog broke the study's
/// protocol (an OOM kill, a consumer that did not complete, an overcommit
/// or depth outside thrash's), in the first such run. A CPU-only run may
/// break only the overcommit and the overflow, which it removes by design
/// ([`crate::thrash::protocol::only_paging_removed`]).
fn outside(rs: &[JankResult], arm: &str) -> Option<String> {
    rs.iter().filter(|r| r.arm == arm).find_map(|r| {
        if r.command.is_some() {
            return Some(format!("{arm}: {}", crate::jank::command::USER_HOG));
        }
        if r.cpu_only && crate::thrash::protocol::only_paging_removed(&r.hog) {
            return None;
        }
        let mut why = r.hog.protocol_breaks.clone();
        if let Some(p) = &r.hog.protocol {
            why.extend(p.breaks.iter().cloned());
        }
        if r.cpu_only {
            why.insert(0, "the CPU-only control broke more than the paging it removes".into());
        }
        (!why.is_empty()).then(|| format!("{arm} (repeat {}): {}", r.repeat_index + 1, why.join("; ")))
    })
}

fn arms(m: &Ms) -> String {
    let mut g: Vec<&str> = Vec::new();
    for x in m.all.iter() {
        if !g.contains(&x.group.as_str()) {
            g.push(&x.group);
        }
    }
    if g.is_empty() { "none".into() } else { g.join(", ") }
}

/// a ÷ b of the p99 inside, where both ran; outside the protocol when
/// either's hog broke it; the CPU-only control (`--cpu-only`) labelled.
fn versus(m: &Ms, rs: &[JankResult], a: &str, b: &str, missing: &str) -> Drawn {
    let has = |g: &str| m.all.iter().any(|x| x.group == g);
    let cpu = |g: &str| rs.iter().any(|r| r.arm == g && r.cpu_only);
    let e: Evidence = if !has(a) || !has(b) {
        Err(format!("this finding compares {a} with {b}; this run ran {}{missing}", arms(m)))
    } else {
        m.ratios((a, &P99_IN), (b, &P99_IN))
    };
    let mut d: Drawn = e.into();
    if cpu(a) && cpu(b) {
        d.label = Some("both under the CPU-only limit (--cpu-only, a control)".into());
    }
    d.outside = outside(rs, a).or_else(|| outside(rs, b));
    d
}

/// The two arms a finding compares, a ÷ b (None: one no run judges,
/// `jank.min_ttl`): what its draw reads, and what a lab step must run for
/// it to be judged ([`crate::jank::cmd::judged_in`]).
pub fn arms_of(id: &str) -> Option<(&'static str, &'static str)> {
    match id {
        "jank.zram_tenfold" => Some(("swapfile", "zram:lz4")),
        "jank.zstd_stutters" => Some(("zram:zstd", "zram:lz4")),
        _ => None,
    }
}

fn draw_tenfold(m: &Ms, rs: &[JankResult]) -> Drawn {
    let (a, b) = arms_of("jank.zram_tenfold").expect("the tenfold finding compares two arms");
    versus(m, rs, a, b, "")
}

fn draw_zstd(m: &Ms, rs: &[JankResult]) -> Drawn {
    // What the machine that ran them offered, as the run recorded it.
    let offered = rs.iter().find(|r| !r.zram_offers.is_empty()).map(|r| r.zram_offers.clone()).unwrap_or_default();
    let why = if offered.iter().any(|a| a == "zstd") {
        " (`--arms zram:lz4,zram:zstd` runs both)".to_string()
    } else if offered.is_empty() {
        " (and zram's compressors could not be read here)".to_string()
    } else {
        format!(" (this kernel's zram offers {}, no zstd)", offered.join(", "))
    };
    let (a, b) = arms_of("jank.zstd_stutters").expect("the zstd finding compares two arms");
    versus(m, rs, a, b, &why)
}

fn draw_min_ttl(_: &Ms, _: &[JankResult]) -> Drawn {
    let e: Evidence = Err("global reclaim only: min_ttl_ms acts in kswapd's reclaim of the whole \
                           machine, which pagelab never causes on the host; the hog's group is reclaimed by its own \
                           limit, where min_ttl_ms does not apply"
        .into());
    e.into()
}

/// A figure of a run, by accessor (None where the run has none).
type Of = fn(&JankResult) -> Option<f64>;

/// The per-repeat values of an arm's figure.
fn values(rs: &[JankResult], arm: &str, f: fn(&JankResult) -> Option<f64>) -> Vec<f64> {
    rs.iter().filter(|r| r.arm == arm).filter_map(f).filter(|v| v.is_finite()).collect()
}

fn med(rs: &[JankResult], arm: &str, f: fn(&JankResult) -> Option<f64>) -> Option<f64> {
    record::stats::median(&values(rs, arm, f))
}

/// a ÷ b paired by repeat: the geometric mean and its 95 % interval (n in
/// the estimate; a pair with a figure missing or zero is left out).
pub fn paired_ratio(rs: &[JankResult], a: &str, b: &str, f: fn(&JankResult) -> Option<f64>) -> Option<record::stats::claim::Estimate> {
    let v: Vec<f64> = rs
        .iter()
        .filter(|r| r.arm == a)
        .filter_map(|x| {
            let y = rs.iter().find(|y| y.arm == b && y.repeat_index == x.repeat_index)?;
            Some(f(x)? / f(y)?)
        })
        .collect();
    estimate(&v)
}

/// The arms in the order they first ran.
pub fn arm_names(rs: &[JankResult]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rs {
        if !v.contains(&r.arm) {
            v.push(r.arm.clone());
        }
    }
    v
}

pub fn p99_in(r: &JankResult) -> Option<f64> {
    r.inside.during.p99_ms
}
pub fn longest_in(r: &JankResult) -> Option<f64> {
    r.inside.during.longest_ms
}
fn over_100_in(r: &JankResult) -> Option<f64> {
    r.inside.during.over_100ms_per_min
}
/// When frames were on time again, or, for a run not within its watch, the
/// watch's length: a lower bound that stays in (censored, never dropped).
fn back_in(r: &JankResult) -> Option<f64> {
    r.inside.back_on_time_s.or(r.inside.watch_s.is_finite().then_some(r.inside.watch_s))
}
fn p99_out(r: &JankResult) -> Option<f64> {
    r.outside.during.p99_ms
}
fn longest_out(r: &JankResult) -> Option<f64> {
    r.outside.during.longest_ms
}

/// One line per run, for the log.
pub fn run_line(r: &JankResult) -> String {
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
    format!(
        "jank {} repeat {}: inside p99 {} ms, longest {} ms, {} frames over 100 ms a minute, on time again after {}; \
         outside p99 {} ms; the hog paged out {} pages{}",
        r.arm,
        r.repeat_index + 1,
        f(p99_in(r)),
        f(longest_in(r)),
        f(over_100_in(r)),
        r.inside.back_on_time_s.map_or("not within the watch".into(), |s| format!("{s:.2} s")),
        f(p99_out(r)),
        r.hog.pswpout_active.map_or("an unread number of".into(), |n| n.to_string()),
        match &r.command {
            Some(c) => format!("; the command: {}", command_said(c)),
            None => outside(std::slice::from_ref(r), &r.arm).map_or(String::new(), |w| format!("; OUTSIDE the protocol: {w}")),
        }
    )
}

/// How a user's command ended, in words: "ok in 12.3 s", "OOM-killed after
/// 3.1 s", "exit code 2 after 0.4 s", "killed at the timeout (600 s)".
pub fn command_said(c: &crate::jank::results::CommandRun) -> String {
    match c.outcome.as_str() {
        "ok" => match c.oom_kills {
            // It ended well, though the OOM killer took a process of the group.
            Some(n) if n > 0 => format!("ok in {:.1} s ({n} OOM kill(s) in the group)", c.seconds),
            _ => format!("ok in {:.1} s", c.seconds),
        },
        "oom" => format!("OOM-killed after {:.1} s", c.seconds),
        "timed_out" => format!("killed at the timeout ({:.0} s)", c.seconds),
        _ => match (c.exit_code, c.signal) {
            (Some(code), _) => format!("exit code {code} after {:.1} s", c.seconds),
            (_, Some(sig)) => format!("killed by signal {sig} after {:.1} s", c.seconds),
            _ => format!("failed after {:.1} s", c.seconds),
        },
    }
}

/// A duration in ms as a person reads it: "1.5 s", "65 ms", "0.7 ms".
fn said(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// The one-line answer: the arm that kept frames best, the one that froze
/// longest, and the CPU-only control beside them.
pub fn answer(rs: &[JankResult]) -> String {
    let arms = arm_names(rs);
    let all: Vec<&String> = arms.iter().filter(|a| !rs.iter().any(|r| &r.arm == *a && r.cpu_only)).collect();
    // The arms whose hog thrashed as the study's did; all of them when none
    // did (the answer then says so). An arm whose hog was OOM-killed (no
    // swap) answers nothing about paging.
    let inside: Vec<&String> = all.iter().copied().filter(|a| outside(rs, a).is_none()).collect();
    // A user's command: the arms where every run of it ended well and the
    // probe drew ten frames or more while it ran (an arm whose command died
    // at once answers nothing about paging).
    let ended_well = |a: &str| {
        rs.iter()
            .filter(|r| r.arm == a)
            .all(|r| r.command.as_ref().is_none_or(|c| c.outcome == "ok") && r.inside.during.frames >= MIN_FRAMES)
    };
    let command = rs.first().is_some_and(|r| r.command.is_some());
    let inside = if command { all.iter().copied().filter(|a| ended_well(a)).collect() } else { inside };
    // thrash's hog: all arms when none held the protocol (the answer says
    // so); a user's command: only the arms where it ended well, or none.
    let paging = if inside.is_empty() && !command { all.clone() } else { inside };
    let best = paging.iter().filter_map(|a| Some((*a, med(rs, a, p99_in)?))).min_by(|x, y| x.1.total_cmp(&y.1));
    let worst = paging.iter().filter_map(|a| Some((*a, med(rs, a, longest_in)?))).max_by(|x, y| x.1.total_cmp(&y.1));
    let preset = rs.first().map_or("e2".into(), |r| r.hog.preset.clone());
    let mut s = if command {
        "on this machine, for your command as the hog".to_string()
    } else {
        format!("on this machine, for thrash's {preset} as the hog")
    };
    match best {
        Some((a, p)) => write!(s, ", {a} kept 99 % of frames under {}", said(p)).unwrap(),
        None if command => {
            write!(s, ", no arm's runs all ended well with {MIN_FRAMES} frames or more, so none is ranked").unwrap()
        }
        None => s += ", no paging arm recorded frames",
    }
    if let Some((a, l)) = worst.filter(|_| paging.len() > 1) {
        write!(s, "; {a} froze for {} at the longest (median of the repeats)", said(l)).unwrap();
    }
    if let Some(c) = med(rs, CPU_ONLY, p99_in).filter(|_| !command || ended_well(CPU_ONLY)) {
        write!(s, "; with nothing paging ({CPU_ONLY}), 99 % were under {}", said(c)).unwrap();
    }
    if command {
        let failed: Vec<&str> = arms
            .iter()
            .filter(|a| rs.iter().any(|r| &r.arm == *a && r.command.as_ref().is_some_and(|c| c.outcome != "ok")))
            .map(String::as_str)
            .collect();
        let short: Vec<&str> = arms.iter().map(String::as_str).filter(|a| !failed.contains(a) && !ended_well(a)).collect();
        if !failed.is_empty() {
            write!(s, " (the command did not end well under {}: see the table)", failed.join(", ")).unwrap();
        }
        if !short.is_empty() {
            write!(s, " (too short to rank, under {MIN_FRAMES} frames in a run: {})", short.join(", ")).unwrap();
        }
    } else if paging.iter().any(|a| outside(rs, a).is_some()) {
        s += " (the hog ran outside the study's protocol: see the table)";
    } else if paging.len() < all.len() {
        s += " (arms whose hog ran outside the study's protocol are left out: see the table)";
    }
    s
}

fn ci(e: Option<record::stats::claim::Estimate>) -> String {
    e.map_or("-".into(), |e| format!("{:.2} [{:.2}, {:.2}] (n = {})", e.estimate, e.ci95[0], e.ci95[1], e.n))
}

/// The arms' table (Markdown): medians over the repeats, and the paired
/// ratios against the CPU-only control with their 95 % intervals.
pub fn arms_markdown(rs: &[JankResult]) -> String {
    let f = |x: Option<f64>, d: usize| x.map_or("-".into(), |v| format!("{v:.d$}"));
    let mut s = String::from(
        "| arm | runs | frames > 100 ms / min | p99 ms | p99.9 ms | longest ms | probe's major faults | on time again after, s | after: p99 ms | p99 ÷ cpu-only [95 % CI] | longest ÷ cpu-only [95 % CI] | outside: p99 ms | outside: longest ms | outside: p99 ÷ cpu-only [95 % CI] | hog |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let has_cpu = rs.iter().any(|r| r.arm == CPU_ONLY);
    for a in arm_names(rs) {
        let n = rs.iter().filter(|r| r.arm == a).count();
        let vs = |g: fn(&JankResult) -> Option<f64>| if has_cpu && a != CPU_ONLY { ci(paired_ratio(rs, &a, CPU_ONLY, g)) } else { "-".into() };
        // A run not on time within its watch counts at the watch's length:
        // when half or more are, the median is only a lower bound.
        let censored = rs.iter().filter(|r| r.arm == a && r.inside.back_on_time_s.is_none()).count();
        let back = match med(rs, &a, back_in) {
            Some(m) if 2 * censored >= n => format!("≥ {m:.2} ({censored} of {n} not within the watch)"),
            m => f(m, 2) + &if censored > 0 { format!(" ({censored} of {n} not within the watch)") } else { String::new() },
        };
        let cpu = rs.iter().any(|r| r.arm == a && r.cpu_only);
        let commands: Vec<String> =
            rs.iter().filter(|r| r.arm == a).filter_map(|r| r.command.as_ref()).map(command_said).collect();
        let hog = match outside(rs, &a) {
            _ if !commands.is_empty() => format!("the command: {}", commands.join("; ")),
            Some(w) => format!("outside: {w}"),
            None if cpu => "no paging, by design".to_string(),
            None => "inside the protocol".to_string(),
        };
        writeln!(
            s,
            "| {a} | {n} | {} | {} | {} | {} | {} | {back} | {} | {} | {} | {} | {} | {} | {hog} |",
            f(med(rs, &a, over_100_in), 1),
            f(med(rs, &a, p99_in), 1),
            f(med(rs, &a, |r| r.inside.during.p999_ms), 1),
            f(med(rs, &a, longest_in), 0),
            f(med(rs, &a, |r| r.inside.during.major_faults.map(|n| n as f64)), 0),
            f(med(rs, &a, |r| r.inside.after.p99_ms), 1),
            vs(p99_in),
            vs(longest_in),
            f(med(rs, &a, p99_out), 1),
            f(med(rs, &a, longest_out), 0),
            vs(p99_out),
        )
        .unwrap();
    }
    s
}

/// The findings' table, judged as the report judges them.
pub fn findings_markdown(rs: &[JankResult]) -> String {
    let mut s = String::from("| the claim | its source | accepted | here (95 % CI) | verdict |\n|---|---|---|---|---|\n");
    for v in report::verdict::verdicts(&Jank, &report::experiment::Parsed::of(rs.to_vec())) {
        let why = if v.why.is_empty() { String::new() } else { format!(": {}", v.why) };
        let _ = writeln!(s, "| {} | {} | {} | {} | {}{why} |", v.claim, v.study, v.acceptance, v.ours, v.outcome.word());
    }
    s
}

/// The run's tables in Markdown: `jank.md` below its title, and the lab report's.
pub fn tables(config: &Config, rs: &[JankResult]) -> String {
    let hog = if config.command.is_empty() {
        String::new()
    } else {
        format!(
            "The hog: `{}`, in a {} group ({} of store room; the CPU-only control's group holds both, with no swap). \
             Thrash's protocol does not apply to it, so no finding is judged. ",
            config.command.join(" "),
            ::units::bytes(config.limit_bytes.unwrap_or(0)),
            ::units::bytes(config.store_bytes.unwrap_or(0))
        )
    };
    let hog = match config.swap_iops {
        Some(n) => format!(
            "{hog}A slow drive: the disk under the swap file was limited, for the hog's group, to {n} reads and {n} \
             writes a second (`--swap-iops`; on cgroup v1 only the swap-ins wait). "
        ),
        None => hog,
    };
    format!(
        "**{}.**\n\n{hog}Frames inside the hog's group while it {} (medians over the repeats; the ratios are paired \
         by repeat). The frame probe: a {:.1} ms frame, a working set of {:.1} MiB ({:.0} % of {}), {} pages touched \
         and {} steps of work a frame.\n\n{}\n## Findings (pagelab's own)\n\n{}",
        answer(rs),
        if config.command.is_empty() { "thrashed" } else { "ran" },
        config.frame_ms,
        units::mib(config.ws_bytes),
        config.share * 100.0,
        if config.command.is_empty() { "the room, counted in the overcommit" } else { "the group's limit, inside it" },
        config.touch_pages,
        config.work,
        arms_markdown(rs),
        findings_markdown(rs)
    )
}



/// The share of frames longer than each bucket's upper edge (ms), from a
/// histogram of [`crate::jank::frames::bucket_edges`], up to the longest
/// frame: a share of 0 has no place on a log axis (it was drawn at 1e-6,
/// out to 16 s, for every arm). Empty when there are no frames.
fn ccdf_points(hist: &[u64]) -> Vec<(f64, f64)> {
    let total: u64 = hist.iter().sum();
    let mut above = total;
    crate::jank::frames::bucket_edges()
        .into_iter()
        .zip(hist)
        .map(|(e, n)| {
            above -= n;
            (e, above as f64 / total as f64)
        })
        .take_while(|p| p.1 > 0.0)
        .collect()
}

/// The charts: each arm's longest frame per 0.25 s inside the group (its
/// first repeat, the hog's start and end marked), and the distribution of
/// frame times over every repeat (the share of frames longer than x).
pub fn render(rec: &RunRecord, rs: &[JankResult]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = &rec.dir;
    let mut written = Vec::new();
    let arms = arm_names(rs);
    let mut line = Vec::new();
    let mut ccdf = Vec::new();
    let (mut ts, mut te, mut ymax) = (f64::NAN, f64::NAN, 1.0f64);
    for (c, a) in arms.iter().enumerate() {
        let color = if c >= 5 { c + 1 } else { c };
        let Some(first) = rs.iter().find(|r| &r.arm == a) else { continue };
        if ts.is_nan() {
            (ts, te) = (first.hog.thrash_start_s, first.hog.thrash_end_s);
        }
        let pts: Vec<(f64, f64)> = first.inside.series.iter().copied().filter(|p| p.1 > 0.0).collect();
        ymax = pts.iter().map(|p| p.1).fold(ymax, f64::max);
        line.push(Trace { name: a.clone(), color, points: charts::thin(&pts, 2000), ..Default::default() });
        let mut hist: Vec<u64> = Vec::new();
        for r in rs.iter().filter(|r| &r.arm == a) {
            for (i, n) in r.inside.during.hist.iter().enumerate() {
                if hist.len() <= i {
                    hist.resize(i + 1, 0);
                }
                hist[i] += *n as u64;
            }
        }
        // Every arm, drawn or not, so that each keeps its colour from the
        // frames chart.
        ccdf.push((a.clone(), ccdf_points(&hist)));
    }
    if !line.is_empty() {
        for x in [ts, te].into_iter().filter(|x| x.is_finite()) {
            line.push(Trace { name: String::new(), color: 5, points: vec![(x, 1.0), (x, ymax)], faint: true, ..Default::default() });
        }
        let stem = dir.join("jank-frames");
        charts::traces(
            &stem,
            &format!("pagelab jank: longest frame per 0.25 s inside the group (run 1; grey: the hog {ts:.0}..{te:.0} s)"),
            "seconds since the start signal",
            "ms (log)",
            &line,
            true,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
    }
    if !ccdf.is_empty() {
        let stem = dir.join("jank-cdf");
        // Both axes log: frames of 1 ms and of seconds, shares of 1 and of 1e-5.
        charts::lines(
            &stem,
            "pagelab jank: share of frames longer than x while the hog ran (every repeat)",
            "frame time, ms (log)",
            "share of frames (log)",
            &ccdf,
            charts::Scale::LogLog,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
    }
    let config: Config = record::results::typed_one(&rec.run.config).unwrap_or_default();
    report::write_file(dir.join("jank.md"), format!("# pagelab jank\n\n{}", tables(&config, rs)))?;
    written.push(dir.join("jank.md"));
    Ok(written)
}

/// `jank` in the report's list of experiments.
pub struct Jank;

impl Study for Jank {
    type Entry = JankResult;
    fn name(&self) -> &'static str {
        "jank"
    }
    fn study(&self) -> &'static str {
        "the thrashing study's open question (Maziero et al. 2012): how responsive a desktop stays when memory runs out, \
         per swap store and setting"
    }
    fn figures(&self) -> &'static [Figure] {
        &FIGURES
    }
    fn findings(&self) -> &'static [Finding<JankResult>] {
        &FINDINGS
    }
    fn parse(&self, results: &[Value]) -> Result<Vec<JankResult>, record::results::EntryError> {
        Ok(typed::<Entry>(results)?.into_iter().map(|e| e.result).collect())
    }
    fn render(&self, rec: &RunRecord, r: &[JankResult]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
        render(rec, r)
    }
    fn tables(&self, rec: &RunRecord, r: &[JankResult]) -> String {
        tables(&record::results::typed_one(&rec.run.config).unwrap_or_default(), r)
    }
    fn metrics(&self, rs: &[JankResult], b: &mut Builder) {
        let rows: [(&Figure, Of); 6] = [
            (&P99_IN, p99_in),
            (&LONGEST_IN, longest_in),
            (&OVER_100_IN, over_100_in),
            (&BACK_IN, back_in),
            (&P99_OUT, p99_out),
            (&LONGEST_OUT, longest_out),
        ];
        for r in rs {
            for (fig, v) in rows {
                b.push_rep(&r.arm, fig, r.repeat_index, v(r));
            }
        }
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        let mut v = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for x in m {
            if seen.contains(&x.group.as_str()) {
                continue;
            }
            seen.push(&x.group);
            if let Some(p) = report::experiment::median_of(m, &x.group, &P99_IN) {
                v.push(format!("{}: p99 {}", x.group, said(p)));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jank::frames::FrameFigures;

    #[test]
    fn the_ccdf_ends_at_the_longest_frame() {
        // 90 frames within 1 ms, 9 within 2 ms, 1 within 4 ms (edges two an
        // octave): 10 % longer than 1 ms, 1 % longer than 2 ms and than
        // 2.83 ms, where the line ends (no share of 0, no floor).
        let mut hist = vec![0u64; 30];
        (hist[0], hist[2], hist[4]) = (90, 9, 1);
        let p = ccdf_points(&hist);
        assert_eq!(p.len(), 4, "{p:?}");
        assert_eq!((p[0].0, p[0].1), (1.0, 0.1));
        assert!((p[3].0 - 2f64.powf(1.5)).abs() < 1e-9 && (p[3].1 - 0.01).abs() < 1e-12, "{p:?}");
        assert!(p.iter().all(|x| x.1 > 0.0));
        assert!(ccdf_points(&[0; 30]).is_empty() && ccdf_points(&[5]).is_empty());
    }
    use crate::jank::results::ProbeFigures;
    use crate::thrash::results::{Plan, ThrashResult};
    use report::verdict::Outcome;

    /// A run of `arm` whose p99 inside is `p99` ms, its hog inside thrash's
    /// protocol (or the CPU-only control's, which removes only the paging).
    fn run(arm: &str, rep: u32, p99: f64, cpu_only: bool) -> JankResult {
        let plan = Plan { preset: "e2".into(), consumers: 4, size_bytes: 10 << 20, writes: 1000, sleep_ms: 2.0, cpu_only, ..Default::default() };
        let room: u64 = if cpu_only { 80 << 20 } else { 16 << 20 };
        let hog = ThrashResult {
            preset: "e2".into(),
            repeat_index: rep,
            plan: Some(plan),
            limit_bytes: room,
            pswpout_total: if cpu_only { 0 } else { 3 * 6144 + 1 },
            consumers: 4,
            consumers_completed: 4,
            protocol_held: true,
            oom_kills: Some(0),
            consumer_details: (0..4).map(|_| crate::thrash::results::Consumer { completed: true, cycles: 100, ..Default::default() }).collect(),
            ..Default::default()
        };
        let during = FrameFigures { frames: 1800, p99_ms: Some(p99), longest_ms: Some(3.0 * p99), over_100ms_per_min: Some(0.0), ..Default::default() };
        let probe = |inside| ProbeFigures { inside, during: during.clone(), back_on_time_s: Some(0.5), watch_s: 12.0, ..Default::default() };
        JankResult { arm: arm.into(), repeat_index: rep, cpu_only, inside: probe(true), outside: probe(false), hog, ..Default::default() }
    }

    fn verdict(rs: &[JankResult], id: &str) -> report::verdict::Verdict {
        report::verdict::verdicts(&Jank, &report::experiment::Parsed::of(rs.to_vec())).into_iter().find(|v| v.id == id).unwrap()
    }

    #[test]
    fn the_tenfold_finding_pairs_the_stores_by_repeat_and_needs_the_protocol() {
        let wobble = [1.0, 1.08, 0.93, 1.04];
        let mut rs: Vec<JankResult> = Vec::new();
        for (i, w) in wobble.iter().enumerate() {
            rs.push(run("zram:lz4", i as u32, 20.0 * w, false));
            rs.push(run("swapfile", i as u32, 300.0 * w * wobble[3 - i], false));
            rs.push(run(CPU_ONLY, i as u32, 0.7, true));
        }
        let v = verdict(&rs, "jank.zram_tenfold");
        assert_eq!(v.outcome, Outcome::Matches, "{v:?}");
        // At 1.5 × it differs: the finding can fail.
        let mut slow = rs.clone();
        slow.iter_mut().filter(|r| r.arm == "swapfile").for_each(|r| r.inside.during.p99_ms = r.inside.during.p99_ms.map(|p| p / 10.0));
        assert_eq!(verdict(&slow, "jank.zram_tenfold").outcome, Outcome::Differs);
        // A hog outside the protocol in one run: outside, not judged.
        let mut broke = rs.clone();
        broke[1].hog.protocol_breaks.push("1 of 4 consumers did not complete".into());
        let v = verdict(&broke, "jank.zram_tenfold");
        assert_eq!(v.outcome, Outcome::OutsideProtocol, "{v:?}");
        // Only the CPU-only control's own breaks are lifted: one that lost
        // a consumer is outside too, and its row says so.
        assert!(outside(&rs, CPU_ONLY).is_none());
        let mut ctl = rs.clone();
        ctl[2].hog.protocol_held = false;
        assert!(outside(&ctl, CPU_ONLY).unwrap().contains("broke more than the paging"));
        assert!(arms_markdown(&ctl).contains("| outside: cpu-only (repeat 1)"));
        // The ratios against the control, paired, with n.
        let md = arms_markdown(&rs);
        assert!(md.lines().any(|l| l.starts_with("| zram:lz4 |") && l.contains("(n = 4)")), "{md}");
        // zstd: not checked here, and says what the machine offered.
        let mut offered = rs.clone();
        offered[0].zram_offers = vec!["lzo".into(), "lz4".into()];
        let z = verdict(&offered, "jank.zstd_stutters");
        assert_eq!(z.outcome, Outcome::NotChecked);
        assert!(z.why.contains("offers lzo, lz4, no zstd"), "{}", z.why);
        assert_eq!(verdict(&rs, "jank.min_ttl").outcome, Outcome::NotChecked);
        let a = answer(&rs);
        assert!(a.contains("zram:lz4 kept 99 % of frames under 20 ms") && a.contains("(cpu-only), 99 % were under 0.7 ms"), "{a}");
    }

    /// A run not on time within its watch counts at the watch's length, a
    /// lower bound: with half the runs such, the median is "≥".
    #[test]
    fn censored_recoveries_stay_in_as_lower_bounds() {
        let mut rs: Vec<JankResult> = (0..4).map(|i| run("zswap", i, 90.0, false)).collect();
        for r in rs.iter_mut().take(2) {
            (r.inside.back_on_time_s, r.inside.watch_s) = (None, 40.0);
        }
        assert_eq!(back_in(&rs[0]), Some(40.0));
        let md = arms_markdown(&rs);
        assert!(md.contains("| ≥ 20.25 (2 of 4 not within the watch) |"), "{md}");
    }

    /// A user's command as the hog: every arm is outside thrash's protocol
    /// (no finding is judged, even one whose figures would match), yet the
    /// answer and the table speak of the command and how it ended.
    #[test]
    fn a_users_command_judges_no_finding_and_the_table_says_how_it_ended() {
        let command = |outcome: &str, code: Option<i32>| crate::jank::results::CommandRun {
            outcome: outcome.into(),
            exit_code: code,
            seconds: 4.25,
            ..Default::default()
        };
        let mut rs: Vec<JankResult> = Vec::new();
        for i in 0..4 {
            for (arm, p99, cpu) in [("zram:lz4", 20.0, false), ("swapfile", 300.0, false), (CPU_ONLY, 0.7, true)] {
                let mut r = run(arm, i, p99, cpu);
                r.hog = ThrashResult { preset: "command".into(), protocol_breaks: vec![crate::jank::command::USER_HOG.into()], ..Default::default() };
                r.command = Some(match (arm, i) {
                    ("swapfile", 2) => command("oom", None),
                    (CPU_ONLY, 3) => command("timed_out", None),
                    _ => command("ok", Some(0)),
                });
                rs.push(r);
            }
        }
        let v = verdict(&rs, "jank.zram_tenfold");
        assert_eq!(v.outcome, Outcome::OutsideProtocol, "{v:?}");
        assert!(v.why.contains("a user's command"), "{}", v.why);
        let a = answer(&rs);
        assert!(a.starts_with("on this machine, for your command as the hog, zram:lz4 kept 99 % of frames under 20 ms"), "{a}");
        // The arm whose command was OOM-killed once is named, not ranked;
        // so is the control's timeout.
        assert!(a.contains("did not end well under swapfile, cpu-only") && !a.contains("protocol"), "{a}");
        assert!(!a.contains("swapfile froze"), "{a}");
        // No arm ended well: none is ranked, and the control is not quoted.
        let mut bad = rs.clone();
        bad.iter_mut().for_each(|r| r.command = Some(command("oom", None)));
        let a = answer(&bad);
        assert!(a.contains("none is ranked") && !a.contains("kept 99 %") && !a.contains("with nothing paging"), "{a}");
        assert!(a.contains("did not end well under zram:lz4, swapfile, cpu-only"), "{a}");
        // An arm whose command drew fewer than ten frames is not ranked either.
        let mut short = rs.clone();
        short.iter_mut().filter(|r| r.arm == "zram:lz4").for_each(|r| r.inside.during.frames = MIN_FRAMES - 1);
        short.iter_mut().filter(|r| r.arm == "swapfile").for_each(|r| r.command = Some(command("ok", Some(0))));
        let a = answer(&short);
        assert!(a.contains("swapfile kept 99 % of frames under 300 ms") && !a.contains("zram:lz4 kept"), "{a}");
        assert!(a.contains("too short to rank, under 10 frames in a run: zram:lz4"), "{a}");
        let md = arms_markdown(&rs);
        let row = md.lines().find(|l| l.starts_with("| swapfile |")).unwrap();
        assert!(row.ends_with("| the command: ok in 4.2 s; ok in 4.2 s; OOM-killed after 4.2 s; ok in 4.2 s |"), "{row}");
        // The control's ratios are still paired and shown.
        assert!(row.contains("(n = 4)"), "{row}");
        assert_eq!(command_said(&command("failed", Some(3))), "exit code 3 after 4.2 s");
        let ok_with_kill = crate::jank::results::CommandRun { oom_kills: Some(1), ..command("ok", Some(0)) };
        assert_eq!(command_said(&ok_with_kill), "ok in 4.2 s (1 OOM kill(s) in the group)");
        assert_eq!(command_said(&crate::jank::results::CommandRun { outcome: "failed".into(), signal: Some(11), seconds: 1.0, ..Default::default() }), "killed by signal 11 after 1.0 s");
    }
}
