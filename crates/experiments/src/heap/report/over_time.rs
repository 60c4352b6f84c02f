//! `heap --over-time` in the report: the RSS-over-time charts with their phase
//! markers, the table of figures with intervals, the metrics, and the findings
//! (claims fixed here, before any data, judged on each run).

use crate::heap::results::{Entry, OverTimeResult, Spread};
use record::stats::claim::Region;
use report::charts::{self, Trace};
use report::headline::{Builder, Figure};
use report::verdict::{Claim, Drawn, Evidence, Finding, Ms, per_repeat};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub fn results(all: &[Entry]) -> Vec<OverTimeResult> {
    all.iter().filter_map(|e| e.over_time.clone()).collect()
}

pub const PEAK: Figure =
    Figure::new("peak heap MiB (over time)", "MiB", true, report::headline::PAGE_MIB).export("over_time_peak_bytes", "bytes", units::MIB_F);
pub const STEADY: Figure =
    Figure::new("steady ÷ live", "ratio", true, 0.001).export("over_time_steady_over_live_ratio", "ratio", 1.0);
pub const AFTER_SHRINK: Figure =
    Figure::new("after shrink MiB", "MiB", true, report::headline::PAGE_MIB).export("over_time_after_shrink_bytes", "bytes", units::MIB_F);
pub const AFTER_IDLE: Figure =
    Figure::new("after idle MiB", "MiB", true, report::headline::PAGE_MIB).export("over_time_after_idle_bytes", "bytes", units::MIB_F);
pub const HALF_LIFE: Figure =
    Figure::new("return half-life s", "s", true, 0.001).export("over_time_return_half_life_seconds", "seconds", 1.0);
/// (before shrink − after idle) ÷ (before shrink − bytes kept).
pub const RETURNED: Figure =
    Figure::new("share given back", "ratio", false, 0.001).export("over_time_returned_ratio", "ratio", 1.0);
/// (after shrink − after idle) ÷ (before shrink − bytes kept).
pub const IDLE_RETURNED: Figure =
    Figure::new("share given back while idle", "ratio", false, 0.001).export("over_time_idle_returned_ratio", "ratio", 1.0);
pub const CHURN_NS: Figure = Figure::new("churn ns per allocation", "ns", true, 0.01).export(
    "over_time_churn_per_allocation_seconds",
    "seconds",
    1e-9,
);

/// --pressure: swapped in the squeeze, and the regrow's time ÷ grow's.
pub const SWAPPED: Figure = Figure::new("swapped MiB in the squeeze", "MiB", true, report::headline::PAGE_MIB).export(
    "over_time_squeeze_swapped_bytes",
    "bytes",
    units::MIB_F,
);
pub const REGROW: Figure =
    Figure::new("regrow ÷ grow", "ratio", true, 0.001).export("over_time_regrow_over_grow_ratio", "ratio", 1.0);

pub const FIGURES: [Figure; 10] =
    [PEAK, STEADY, AFTER_SHRINK, AFTER_IDLE, HALF_LIFE, RETURNED, IDLE_RETURNED, CHURN_NS, SWAPPED, REGROW];

/// The metric group of an arm × pattern × thread count.
pub fn group(arm: &str, pattern: &str, threads: u32) -> String {
    format!("{arm} {pattern} ×{threads}")
}

pub fn metrics(all: &[Entry], b: &mut Builder) {
    const MIB: f64 = units::MIB_F;
    for r in results(all) {
        let g = group(&r.arm, &r.pattern, r.threads);
        for x in &r.runs {
            let v: [(Figure, Option<f64>); 8] = [
                (PEAK, Some(x.peak_rss_bytes as f64 / MIB)),
                (STEADY, Some(x.steady_rss_bytes as f64 / x.live_bytes.max(1) as f64)),
                (AFTER_SHRINK, Some(x.after_shrink_rss_bytes as f64 / MIB)),
                (AFTER_IDLE, Some(x.after_idle_rss_bytes as f64 / MIB)),
                (HALF_LIFE, x.half_life_s),
                (RETURNED, Some(x.returned_fraction)),
                (IDLE_RETURNED, Some(x.idle_returned_fraction)),
                (CHURN_NS, Some(x.churn_ns_per_op)),
            ];
            for (f, val) in v {
                b.push_of(&g, &f, x.repeat, val);
            }
            if let Some(p) = &x.pressure {
                b.push_of(&g, &SWAPPED, x.repeat, Some(p.swapped_bytes as f64 / MIB));
                b.push_of(&g, &REGROW, x.repeat, (x.grow_s > 0.0).then(|| p.regrow_s / x.grow_s));
            }
        }
    }
}

/// The headline: heap RSS after idle of the allocators at their defaults, at
/// the most threads of the first pattern.
pub fn summary(m: &[report::headline::Metric]) -> Option<String> {
    let idle: Vec<&report::headline::Metric> = m.iter().filter(|x| x.name == AFTER_IDLE.name).collect();
    let first = idle.first()?;
    let (head, _) = first.group.rsplit_once(" ×")?;
    let pattern = head.rsplit_once(' ')?.1;
    let most = idle
        .iter()
        .filter_map(|x| {
            let (h, t) = x.group.rsplit_once(" ×")?;
            h.ends_with(&format!(" {pattern}")).then(|| t.parse::<u32>().ok())?
        })
        .max()?;
    let here: Vec<String> = idle
        .iter()
        .filter(|x| !x.group.contains('+') && x.group.ends_with(&format!(" {pattern} ×{most}")))
        .filter_map(|x| Some(format!("{} {:.0}", x.group.split(' ').next()?, x.median()?)))
        .collect();
    (!here.is_empty()).then(|| format!("after idle ({pattern} ×{most}): {} MiB", here.join(", ")))
}

fn cell(s: &Spread, digits: usize) -> String {
    let Some(m) = s.median else { return "-".into() };
    match s.ci95 {
        Some([lo, hi]) => format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})"),
        None => format!("{m:.digits$}"),
    }
}

/// The figures per arm, each the median of its repeats with the verdicts' 95 % interval.
pub fn over_time_table(all: &[Entry]) -> String {
    let rs = results(all);
    if rs.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nheap over time (median of n repeats, 95 % CI in brackets; heap RSS = anonymous RSS above the worker's own before it allocates):\n",
    );
    let _ = writeln!(
        s,
        "{:<32} {:<12} {:>3} {:>2} {:>20} {:>18} {:>20} {:>20} {:>18} {:>18} {:>16}",
        "arm",
        "pattern",
        "thr",
        "n",
        "peak MiB",
        "steady÷live",
        "after shrink MiB",
        "after idle MiB",
        "half-life s",
        "given back",
        "churn ns/alloc"
    );
    for r in &rs {
        let half = if r.half_life_never == r.runs.len() {
            "never".to_string()
        } else if r.half_life_never > 0 {
            format!("{} ({} never)", cell(&r.half_life_s, 2), r.half_life_never)
        } else {
            cell(&r.half_life_s, 2)
        };
        let _ = writeln!(
            s,
            "{:<32} {:<12} {:>3} {:>2} {:>20} {:>18} {:>20} {:>20} {:>18} {:>18} {:>16}",
            r.arm,
            r.pattern,
            r.threads,
            r.runs.len(),
            cell(&r.peak_mib, 0),
            cell(&r.steady_over_live, 2),
            cell(&r.after_shrink_mib, 0),
            cell(&r.after_idle_mib, 0),
            half,
            // Recomputed from the runs, so that a run recorded before the
            // share's interval was linear shows it as it is now.
            cell(&Spread::of_share(&r.runs.iter().map(|x| x.returned_fraction).collect::<Vec<_>>()), 2),
            cell(&r.churn_ns_per_op, 0),
        );
    }
    if let Some(r) = rs.first() {
        let _ = writeln!(
            s,
            "live {} MiB; churn {:.1} s; idle {:.1} s; shrink frees {:.0} % of the objects ({}); \
given back = (before shrink − after idle) ÷ (before shrink − bytes still live); half-life: of what idle gave back (never: less than 1 % of that)",
            units::whole_mib(r.live_target_bytes),
            r.churn_s,
            r.idle_s,
            r.shrink_frees * 100.0,
            match r.shrink_frees {
                x if x <= 0.0 => "every object survives".to_string(),
                x if x >= 1.0 => "none survives".to_string(),
                x => format!("a scattered {:.0} % survives", (1.0 - x) * 100.0),
            }
        );
    }
    if rs.iter().any(|r| r.swapped_mib.is_some()) {
        s += &pressure_table(&rs);
    }
    let mut said: Vec<&str> = Vec::new();
    for r in rs.iter().filter(|r| r.knob.is_some()) {
        if let Some(rb) = r.runs.iter().find_map(|x| x.knob_readback.clone())
            && !said.contains(&r.arm.as_str())
        {
            said.push(&r.arm);
            let _ = writeln!(s, "{}: the allocator reports {rb}", r.arm);
        }
    }
    s
}

/// --pressure: what the squeeze sent to the store and what the regrow paid.
fn pressure_table(rs: &[OverTimeResult]) -> String {
    let mut s = String::from(
        "\nsqueezed after idle to the bytes still live (zram behind the cgroup), then regrown to the live size:\n",
    );
    let _ = writeln!(
        s,
        "{:<32} {:<12} {:>3} {:>20} {:>18} {:>20} {:>14}",
        "arm", "pattern", "thr", "swapped MiB", "stored÷compressed", "regrow ÷ grow", "regrow majflt"
    );
    for r in rs {
        let (Some(sw), Some(rg)) = (&r.swapped_mib, &r.regrow_over_grow) else { continue };
        let ps: Vec<_> = r.runs.iter().filter_map(|x| x.pressure.as_ref()).collect();
        let ratio: Vec<f64> = ps
            .iter()
            .filter_map(|p| Some(p.stored_bytes? as f64 / p.compressed_bytes.filter(|&c| c > 0)? as f64))
            .collect();
        let maj: Vec<f64> = ps.iter().map(|p| p.regrow_major_faults as f64).collect();
        let _ = writeln!(
            s,
            "{:<32} {:<12} {:>3} {:>20} {:>18} {:>20} {:>14}",
            r.arm,
            r.pattern,
            r.threads,
            cell(sw, 0),
            record::stats::median(&ratio).map_or("-".into(), |x| format!("{x:.1}")),
            cell(rg, 2),
            record::stats::median(&maj).map_or("-".into(), |x| format!("{x:.0}")),
        );
    }
    s
}

/// One chart per pattern × thread count: every arm's heap RSS over time (its
/// first repeat), with grey lines at the ends of grow, churn, shrink and idle.
pub fn charts(dir: &Path, all: &[Entry]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let rs = results(all);
    let mut keys: Vec<(String, u32)> = Vec::new();
    for r in &rs {
        if !keys.contains(&(r.pattern.clone(), r.threads)) {
            keys.push((r.pattern.clone(), r.threads));
        }
    }
    let mut written = Vec::new();
    for (pattern, threads) in keys {
        let here: Vec<&OverTimeResult> = rs.iter().filter(|r| r.pattern == pattern && r.threads == threads).collect();
        let mut tr: Vec<Trace> = Vec::new();
        let mut ends: Vec<[f64; 4]> = Vec::new();
        let mut top = 0f64;
        for (k, r) in here.iter().enumerate() {
            let Some(run) = r.runs.first() else { continue };
            top = run.timeline.iter().map(|p| p.1).fold(top, f64::max);
            ends.push(run.phase_ends_s);
            tr.push(Trace {
                name: r.arm.clone(),
                // Grey (5) is the phase markers'.
                color: if k >= 5 { k + 1 } else { k },
                points: run.timeline.iter().map(|p| (p.0, p.1)).collect(),
                ..Default::default()
            });
        }
        // The phase ends, as the median over the arms (grow's length differs by allocator).
        for i in 0..4 {
            let v: Vec<f64> = ends.iter().map(|e| e[i]).collect();
            if let Some(x) = record::stats::median(&v) {
                tr.push(Trace { color: 5, points: vec![(x, 0.0), (x, top)], faint: true, ..Default::default() });
            }
        }
        let stem = dir.join(format!("heap_over_time_{}_{threads}", report::plain_name(&pattern.to_string())));
        let title =
            format!("heap RSS over time: {pattern}, {threads} threads (grey: ends of grow, churn, shrink, idle)");
        charts::traces(&stem, &title, "seconds since grow began", "heap RSS MiB", &tr, false)?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
    }
    Ok(written)
}

/// heap's own finding: glibc keeps what the program frees.
pub const KEEPS: Finding<Entry> = Finding {
    claim: Claim {
        id: "heap.glibc_keeps",
        claim: "glibc gives back less than half of the memory a program frees, within the idle time, without malloc_trim",
        study: "a common production report (e.g. glibc's arenas holding freed memory until malloc_trim); no figure published",
        quantity: "glibc (its defaults), the share it kept: 1 − (heap RSS before shrink − after idle) ÷ (before shrink \
                   − bytes still live), per repeat, at the most threads (keeps more than half: ≥ 0.5)",
        region: Region::at_least(0.5),
        floor: 0.001,
        own: true,
        check: false,
        control: "glibc with its default mmap threshold fixed (--glibc-mmap-threshold 128KiB: no dynamic raise as large blocks are freed): blocks of 128 KiB and up, most of the mixed pattern's bytes, are mmap'd on their own and go back on free, so the share kept falls below 0.5",
        yes: "glibc kept more than half of what the program freed: freeing large blocks raises its mmap \
              threshold, so later ones live in the heap, and free() gives a heap's pages back only from its top",
        no: "glibc gave back more than half of what the program freed (large blocks are mmap'd and return on free)",
    },
    draw: draw_keeps,
};

/// heap's own finding: malloc_trim lowers glibc's heap RSS.
pub const TRIM: Finding<Entry> = Finding {
    claim: Claim {
        id: "heap.malloc_trim",
        claim: "malloc_trim after the program frees lowers glibc's heap RSS",
        study: "glibc's manual: malloc_trim releases free memory at the heap's top and, since 2.8, whole free pages in it",
        quantity: "heap RSS right after shrink, glibc+malloc_trim ÷ glibc, paired by repeat, at the most threads \
                   (lowers: ≤ 0.9)",
        region: Region::at_most(0.9),
        floor: 0.001,
        own: true,
        check: false,
        control: "a program that frees next to nothing before the trim (--shrink-frees 0 --churn 1ms: no shrink, a millisecond of churn): malloc_trim has almost no free pages to give back, so the ratio is about 1",
        yes: "malloc_trim gave back free pages that glibc's free() kept",
        no: "malloc_trim changed glibc's heap RSS after shrink by less than 10 %",
    },
    draw: draw_trim,
};

/// heap's own finding: no allocator gives memory back while idle.
pub const IDLE: Finding<Entry> = Finding {
    claim: Claim {
        id: "heap.idle_gives_nothing",
        claim: "at their defaults, no allocator gives memory back while the program makes no calls",
        study: "ours: the allocators' docs describe purge delays and decay times, not what happens when no call comes",
        quantity: "the smallest share kept through idle, 1 − (heap RSS after shrink − after idle) ÷ (before shrink − \
                   bytes still live), over glibc, mimalloc and jemalloc at their defaults, per repeat, at the most \
                   threads (nothing given back: ≥ 0.95)",
        region: Region::at_least(0.95),
        floor: 0.001,
        own: true,
        check: true,
        control: "",
        yes: "what a program frees and then leaves alone stays resident in every allocator at its defaults: \
              purging and decay run inside allocator calls, and an idle program makes none",
        no: "an allocator at its defaults gave memory back while the program made no calls",
    },
    draw: draw_idle,
};

/// The group the findings judge for `arm`: its first pattern (as run) at the
/// most threads the run had.
fn judged(rs: &[OverTimeResult], arm: &str) -> Option<String> {
    let pattern = rs.first()?.pattern.clone();
    let t = rs.iter().filter(|r| r.pattern == pattern && r.arm == arm).map(|r| r.threads).max()?;
    Some(group(arm, &pattern, t))
}

/// Where it was judged: the first pattern at the most threads, said before
/// the estimate.
fn drawn(rs: &[OverTimeResult], evidence: Evidence) -> Drawn {
    let label = judged(rs, "glibc").map(|g| g.split_once(' ').map_or(g.as_str(), |x| x.1).to_string());
    Drawn { label, ..evidence.into() }
}

fn none() -> Evidence {
    Err("this run had no --over-time part".into())
}

/// Why a share of what was freed means nothing here: shrink freed nothing
/// (`--shrink-frees 0`, malloc_trim's control), so what "could come back"
/// is only the allocator's overhead.
fn nothing_freed(rs: &[OverTimeResult]) -> Option<Evidence> {
    let freed = rs.iter().flat_map(|r| &r.runs).any(|x| x.freed_bytes > 0);
    (!rs.is_empty() && !freed).then(|| Err("shrink freed nothing in this run (--shrink-frees 0): no share of what was freed to judge".into()))
}

fn draw_keeps(m: &Ms, all: &[Entry]) -> Drawn {
    let rs = results(all);
    let keeps: Evidence = if rs.is_empty() {
        none()
    } else if let Some(e) = nothing_freed(&rs) {
        e
    } else {
        match judged(&rs, "glibc") {
            // Judged as the share kept: near 1 its logarithm is steady, where
            // a share given back near 0 would make the interval span decades.
            Some(g) => m.values(&g, &RETURNED).map(|v| v.iter().map(|x| 1.0 - x).collect()),
            None => Err("glibc did not run over time".into()),
        }
    };
    drawn(&rs, keeps)
}

fn draw_trim(m: &Ms, all: &[Entry]) -> Drawn {
    let rs = results(all);
    let trim: Evidence = if rs.is_empty() {
        none()
    } else {
        match (judged(&rs, "glibc+malloc_trim"), judged(&rs, "glibc")) {
            (Some(a), Some(b)) => m.ratios((&a, &AFTER_SHRINK), (&b, &AFTER_SHRINK)),
            _ => Err("this needs the arms glibc and glibc+malloc_trim (--knobs glibc:malloc_trim)".into()),
        }
    };
    drawn(&rs, trim)
}

fn draw_idle(m: &Ms, all: &[Entry]) -> Drawn {
    let rs = results(all);
    let idle: Evidence = if rs.is_empty() {
        none()
    } else if let Some(e) = nothing_freed(&rs) {
        e
    } else {
        let groups: Vec<String> = ["glibc", "mimalloc", "jemalloc"].iter().filter_map(|a| judged(&rs, a)).collect();
        let ms: Vec<_> = groups.iter().filter_map(|g| m.metric(g, &IDLE_RETURNED)).collect();
        match ms.split_first() {
            Some((first, rest)) if !rest.is_empty() => {
                Ok(per_repeat(first, rest, |x, o| Some(1.0 - o.iter().copied().fold(x, f64::max))))
            }
            _ => Err("this needs at least two of glibc, mimalloc and jemalloc at their defaults".into()),
        }
    };
    drawn(&rs, idle)
}
