//! `pagelab bench controls` (issue 57 item 1): a finding is evidence only if
//! it could have come out the other way. Each finding whose control pagelab
//! can run is judged twice, at the quick lab's scale and repeats (its lab
//! step's own arguments): on a run as the lab makes it, and on the same run
//! with the control in place. A control's [`Role`] for each finding, fixed
//! from the mechanism before any run, says which way it may turn the
//! verdict: a negative one (the mechanism removed) from matches to differs,
//! on the side of the region it predicts; a positive one (the mechanism made
//! to hold) from differs to matches. A control that ends inconclusive, or
//! goes the other way, has not turned.
//!
//! Runs are made as `lab` makes them (the binary, one experiment at a time,
//! under its lock), into `--out DIR` (one directory per run), and judged by
//! the report's own code. Findings whose control needs a mode pagelab does
//! not have yet are listed with why.

use crate::cli::BenchArgs;
use crate::lab::{Machine, Scale, plan};
use anyhow::Context;
use experiments::eat::cmd::EatLab;
use experiments::heap::cmd::HeapLab;
use experiments::heap::work::alloc::HeapMode;
use experiments::jank::cmd::JankLab;
use experiments::jank::work::Store;
use experiments::kit::lab_args::{Dur, LabArgs, Size};
use experiments::mapping::cmd::MappingLab;
use experiments::thrash::cmd::ThrashLab;
use experiments::thrash::findings::Which;
use experiments::thrash::work::AfterLoad;
use experiments::wscap::cmd::{MemoryStore, WscapLab};
use report::lab::Step;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use workloads::backing::BackingKind;

/// One control run: the findings it is the control of, the experiment, and
/// how the lab step's typed arguments change.
struct Control {
    /// The findings it is the control of, each with what the control does
    /// to its claim (fixed from the mechanism, before any run).
    ids: &'static [(&'static str, Role)],
    experiment: &'static str,
    /// Appended to its run's directory (`<experiment>-control-<first
    /// finding><tag>`), where a finding has more than one control.
    tag: &'static str,
    /// The change, in words.
    what: &'static str,
    /// The part of the lab step the finding is judged on (the step as it
    /// is, or heap's speed sweep or memory over time alone): both the run
    /// as the lab makes it and the control start from this.
    base: Base,
    /// The control's step from the base's; None where this machine's step
    /// cannot make it (heap.growth's on one CPU).
    change: fn(&Step) -> anyhow::Result<Option<Step>>,
    /// Why this machine cannot make the control (Some), though its lab step
    /// runs: a swap file where zswap compresses in front of it
    /// ([`swap_file_compresses`]), a compressor the kernel does not offer.
    unavailable: Option<fn(&Here) -> Option<String>>,
    /// The control leaves the study's protocol by design (thrash's CPU-only
    /// control removes the overcommit the protocol requires): its verdict is
    /// what the same rules give on its estimate alone
    /// ([`report::verdict::Verdict::ungated`]), where every run broke only
    /// what this accepts; the table says so.
    lifts_gate: Option<Lift>,
}

/// Step `s` with its typed arguments ([`LabArgs`]) changed by `f`; None
/// where `f` finds nothing to change. Err where the step is not `L`'s or its
/// command would refuse it (a bug of the plan, not of this machine).
fn with<L: LabArgs>(s: &Step, f: impl FnOnce(&mut L) -> Option<()>) -> anyhow::Result<Option<Step>> {
    let mut a = L::of(s).map_err(|e| anyhow::anyhow!("the lab's {} step: {e}", s.experiment))?;
    Ok(f(&mut a).map(|()| a.step(s.repeat, s.expect_s)))
}

/// [`with`], for a change every such step can take.
fn set<L: LabArgs>(s: &Step, f: impl FnOnce(&mut L)) -> anyhow::Result<Option<Step>> {
    with(s, |a: &mut L| {
        f(a);
        Some(())
    })
}

mod judged;
mod later;
mod mark;
mod role;
mod turn;
#[cfg(test)]
use judged::each_thrash_run;
use judged::{Lift, judge, open, thrash_cpu_only, thrash_sleep_removed};
pub use role::Role;
use role::{Above, Below};
use role::{Instrument, Negative, Positive};
use turn::{Turn, count, print_table, turned};

/// What this machine offers that a control may need, read once.
struct Here {
    zswap: probe::environment::Zswap,
    zswap_compressors: Vec<String>,
}

/// eat.semi_fraction's instrument check's block, bytes: small enough that
/// the literal and match an LZ compressor spends per block come to more
/// than 0.30 of it, large enough that the page still compresses (a block of
/// 1 is the random pattern, stored at full size in every repeat: a check's
/// value, the same fact as eat.random_fraction's, which the review of
/// 2026-11-30 found counted as a turn; 2 or 3 bytes leave lzo's and lz4's
/// shortest matches of 3 and 4 bytes nothing to match). Fixed from the
/// encodings, before any run.
const SEMI_CONTROL_BLOCK: u32 = 8;

/// eat.trim_random_semi's positive control's compressor.
const DEFLATE: &str = "deflate";

/// The presets a thrash finding compares, for a control that runs those
/// alone.
fn presets_of(w: Which) -> Vec<String> {
    w.presets().iter().map(|p| p.to_string()).collect()
}

/// thrash.deep's positive control's size factor: the full lab's on a
/// machine under 8 GiB, five times the budgeted step's 0.02. Chosen before
/// its run for the mechanism (W scales with the size factor, t_s only with
/// the time factor, so the faults a cycle takes grow against its sleep),
/// and checked to hold the protocol (docs/bench.md), not from its estimate.
const DEEP_SCALE: f64 = 0.1;

/// Why zswap with deflate cannot be made here (None: it can).
fn no_zswap_deflate(h: &Here) -> Option<String> {
    if !h.zswap.present {
        Some("needs zswap, which this kernel does not have (/sys/module/zswap)".into())
    } else if !h.zswap_compressors.iter().any(|c| c == DEFLATE) {
        Some(format!(
            "needs zswap's deflate, which this kernel does not offer (it offers: {})",
            if h.zswap_compressors.is_empty() { "none".into() } else { h.zswap_compressors.join(", ") }
        ))
    } else {
        None
    }
}

const CONTROLS: &[Control] = &[
    Control {
        ids: &[
            ("eat.trim_random_semi", Negative(Below)),
            ("eat.trim_const_semi", Negative(Above)),
            ("eat.read_back_alike", Positive),
        ],
        experiment: "eat",
        tag: "",
        what: "--backing swapfile: a store that neither compresses nor detects same-value pages (every pattern is \
               written out and read back from the file alike)",
        change: |s| set(s, |a: &mut EatLab| a.backing = BackingKind::Swapfile),
        unavailable: Some(|h| swap_file_compresses(&h.zswap)),
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("eat.trim_random_semi", Positive)],
        experiment: "eat",
        tag: "-zswap-deflate",
        what: "--backing zswap --compressor deflate: a compressor with no skip over incompressible input (every \
               byte of a random page is searched for a match and Huffman-coded as a literal, where the semi \
               pattern's repeats are coded as matches), so random pages cost more to compress than semi ones, the \
               direction the study found; lzo, lzo-rle and lz4 skip ahead through data that does not compress",
        change: |s| {
            set(s, |a: &mut EatLab| (a.backing, a.compressor) = (BackingKind::Zswap, Some(DEFLATE.to_string())))
        },
        unavailable: Some(no_zswap_deflate),
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("eat.semi_fraction", Instrument)],
        experiment: "eat",
        tag: "",
        what: "--block 8: an instrument check, not a negative control (it removes no mechanism: the compressor \
               still finds every block's repeat): the semi pattern in blocks of 8 bytes, so each literal and match \
               an LZ compressor spends on a block is paid every 8 bytes, not every 20 (lzo, lzo-rle: a byte and a \
               two-byte match, about 3/8; lz4: a token, a byte and an offset, about 1/2), above 0.30",
        change: |s| set(s, |a: &mut EatLab| a.block = SEMI_CONTROL_BLOCK),
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("wscap.cap_slowdown", Negative(Below)), ("wscap.periodic_cheaper", Negative(Below))],
        experiment: "wscap",
        tag: "",
        what: "--cap at twice --size: a cap above the working set",
        change: |s| set(s, |a: &mut WscapLab| a.cap = Size(2 * a.size.0)),
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("wscap.cap_saves_no_memory", Positive)],
        experiment: "wscap",
        tag: "",
        what: "--memory-store zram: the memory arm on a store that keeps the capped pages in RAM",
        change: |s| set(s, |a: &mut WscapLab| a.memory_store = MemoryStore::Zram),
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("mapping.lazy_reset", Negative(Above)), ("mapping.fresh_cheapest", Instrument)],
        experiment: "mapping",
        tag: "",
        what: "--free-pageout: each MADV_FREE is followed at once by MADV_PAGEOUT inside the timed release, so the \
               lazy release gives its pages up as an eager one does, and the re-touch faults them in anew (for \
               fresh_cheapest an instrument check: no positive control is known)",
        change: |s| set(s, |a: &mut MappingLab| a.free_pageout = true),
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("mapping.shared_costlier", Negative(Below))],
        experiment: "mapping",
        tag: "",
        what: "--memfd-keep: one memfd, its pages allocated once, mapped and unmapped each cycle, so the page-cache \
               allocation is not paid per cycle",
        change: |s| set(s, |a: &mut MappingLab| a.memfd_keep = true),
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("heap.glibc_keeps", Negative(Below))],
        experiment: "heap",
        tag: "",
        what: "--glibc-mmap-threshold 128KiB: glibc's default mmap threshold, fixed, so blocks of 128 KiB and up are \
               mmap'd on their own and go back on free (no dynamic raise keeps them in the heap)",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                a.over_time.as_mut()?.glibc_mmap_threshold = Some(Size(128 << 10));
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: HEAP_OVER_TIME,
    },
    Control {
        ids: &[("heap.concurrent_linux", Negative(Above))],
        experiment: "heap",
        tag: "",
        what: "--heap-mode glibc-shared: glibc with one arena for every thread (M_ARENA_MAX=1), mimalloc as it is, \
               so every glibc call that misses its thread cache contends for one lock and glibc falls more than 10 % \
               behind",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                a.sweep.as_mut()?.heap_mode = HeapMode::GlibcShared;
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: HEAP_SPEED,
    },
    Control {
        ids: &[("heap.concurrent_linux", Positive)],
        experiment: "heap",
        tag: "-cached",
        what: "--heap-mode glibc-cached: glibc with a thread cache deep enough for the workload's batches \
               (GLIBC_TUNABLES glibc.malloc.tcache_count=65535; 7 blocks a size by default), mimalloc as it is, so \
               glibc too serves from per-thread memory, without a lock, every call of up to 1032 B that finds a \
               block cached, as a heap built for concurrency does",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                a.sweep.as_mut()?.heap_mode = HeapMode::GlibcCached;
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: HEAP_SPEED,
    },
    Control {
        ids: &[("heap.growth", Negative(Below))],
        experiment: "heap",
        tag: "",
        what: "--growth-from at half the CPUs: the step from N threads to 2N stays within the cores, each thread pinned \
               to its own CPU, so no thread waits for one (Table 2 within the cores: 80 → 89 ms, 1.11)",
        change: |s| with(s, growth_within_the_cores),
        unavailable: None,
        lifts_gate: None,
        base: HEAP_SPEED,
    },
    Control {
        ids: &[("heap.malloc_trim", Negative(Above))],
        experiment: "heap",
        tag: "",
        what: "--shrink-frees 0 --churn 1ms: a program that frees next to nothing before the trim (no shrink, a \
               millisecond of churn), so malloc_trim has nothing to give back",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                let ot = a.over_time.as_mut()?;
                (ot.shrink_frees, ot.churn) = (0.0, Dur(std::time::Duration::from_millis(1)));
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: HEAP_OVER_TIME,
    },
    Control {
        ids: &[
            ("thrash.deep", Negative(Above)),
            ("thrash.sleep", Negative(Above)),
            ("thrash.stagger", Negative(Below)),
        ],
        experiment: "thrash",
        tag: "",
        what: "--cpu-only: a limit that holds every consumer twice over, so nothing pages (outside the protocol by \
               design, so judged on its estimate alone)",
        change: |s| set(s, |a: &mut ThrashLab| a.cpu_only = true),
        unavailable: None,
        lifts_gate: Some(thrash_cpu_only),
        base: WHOLE,
    },
    Control {
        ids: &[("thrash.deep", Positive)],
        experiment: "thrash",
        tag: "-scale",
        what: "--scale 0.1, e2 alone: five times the sizes (S and W) at the same time factor. W scales with the size \
               factor and t_s does not, so each cycle faults five times the pages within the same sleep, nearer the \
               study's 100 MB; the study's preset under its two factors, inside the protocol",
        change: |s| {
            with(s, |a: &mut ThrashLab| {
                (a.scale, a.preset) = (DEEP_SCALE, presets_of(Which::Deep));
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("thrash.writes", Negative(Below))],
        experiment: "thrash",
        tag: "",
        what: "--sleep 0s: no sleep between cycles, so each consumer writes nonstop and W no longer sets its write \
               rate; the paging stays (outside the protocol only by its custom t_s in e1 and e2, the runs it reads, \
               so judged on its estimate alone)",
        change: |s| set(s, |a: &mut ThrashLab| a.sleep = Some(Dur(std::time::Duration::ZERO))),
        unavailable: None,
        lifts_gate: Some(thrash_sleep_removed),
        base: WHOLE,
    },
    Control {
        ids: &[("thrash.recovery", Negative(Above))],
        experiment: "thrash",
        tag: "",
        what: "--after-load stays, e2 alone: each consumer keeps writing its whole region after t_p, so the load never \
               falls back",
        change: |s| {
            with(s, |a: &mut ThrashLab| {
                (a.after_load, a.preset) = (AfterLoad::Stays, presets_of(Which::Recovery));
                Some(())
            })
        },
        unavailable: None,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &[("jank.zram_tenfold", Positive)],
        experiment: "jank",
        tag: "-slow-disk",
        what: "--arms zram:lz4,swapfile --swap-iops 3000: the swap file on a drive as slow as a memory card (the \
               disk under it limited, for the hog's group, to 3000 reads and 3000 writes a second, between the \
               SD card classes A1's and A2's least random reads, 1500 and 4000 a second, about 30 times a hard \
               disk's and far below an SSD's; on cgroup v1 only the reads wait), so that \
               every page the consumers fault back waits on a drive, as drive-based swap does; zram as it is. 3000 \
               is the slowest of 100, 1000 and 3000 at which thrash's e2 stayed inside the protocol here: slower \
               drives held the consumers back (one run each: 1.4 and 2.5 times the fill's overflow paged out, \
               under the protocol's 3)",
        change: |s| {
            with(s, |a: &mut JankLab| {
                (a.arms, a.swap_iops) = (vec![Store::Zram(Some("lz4".into())), Store::Swapfile], Some(SLOW_DISK_IOPS));
                Some(())
            })
        },
        unavailable: Some(|h| zswap_before_the_drive(&h.zswap)),
        lifts_gate: None,
        base: WHOLE,
    },
];

/// jank.zram_tenfold's positive control: the slowest drive, of 100, 1000
/// and 3000 I/Os a second, at which the hog held thrash's protocol (one run
/// of each on the project's VM, 2026-11-30, cgroup v1; on the two slower
/// ones it paged out 1.4 and 2.5 times the fill's overflow, under the
/// protocol's 3, so nothing there could be judged). Chosen with those runs'
/// p99s in view: docs/jank.md gives them all.
const SLOW_DISK_IOPS: u64 = 3000;

/// heap.growth's control from the lab's speed sweep (`--threads 1,C,2C`):
/// the sweep at N = C/2 and 2N = C threads, judged from N (`--growth-from`).
/// None on one CPU, where no step of two counts stays within the cores.
fn growth_within_the_cores(a: &mut HeapLab) -> Option<()> {
    let sweep = a.sweep.as_mut()?;
    let n = sweep.threads.as_ref()?.iter().max()? / 4;
    (n >= 1).then(|| (sweep.threads, sweep.growth_from) = (Some(vec![n, 2 * n]), Some(n)))
}

/// The findings whose control is named but not run here, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "jank.zstd_stutters",
        "needs zram's zstd beside lz4 (the project's VM offers lzo-rle, lzo and lz4); where zstd is offered its control \
         is `pagelab jank --arms zram:lz4,zram:zstd --cpu-only`",
    ),
    ("jank.min_ttl", "not checked anywhere: min_ttl_ms acts only in global reclaim, which pagelab never causes"),
    ("assess.far_memory", "needs a synthetic program that touches what was trimmed"),
];

/// The part of a lab step a control starts from, and the suffix of its
/// run's directory (`<experiment>-as-the-lab<suffix>`): named, so that a
/// control added later renames no run (`--resume` finds them).
#[derive(Clone, Copy)]
struct Base {
    suffix: &'static str,
    part: fn(&Step) -> anyhow::Result<Option<Step>>,
}

/// The lab step as it is.
const WHOLE: Base = Base { suffix: "", part: |s| Ok(Some(s.clone())) };
/// The heap step without its over-time part (the control is about the
/// speed sweep; the over-time arms take most of the step's time).
const HEAP_SPEED: Base = Base { suffix: "-speed", part: |s| set(s, |a: &mut HeapLab| a.over_time = None) };
/// The heap step's memory over time alone (its speed sweep is another
/// finding's, and most of the step's time).
const HEAP_OVER_TIME: Base = Base { suffix: "-over-time", part: |s| set(s, |a: &mut HeapLab| a.sweep = None) };

/// Runs `experiment` with `args` into `dir`; Err naming the run and its log
/// when it fails.
fn run_one(exe: &Path, experiment: &str, args: &[String], dir: &Path) -> anyhow::Result<()> {
    let log = dir.with_extension("log");
    let f = record::safe::create(&log).with_context(|| format!("creating {}", log.display()))?;
    say::errln!("  pagelab {experiment} {} --out {}", args.join(" "), dir.display());
    // Its own process group, told to stop if this process dies, and passed
    // one SIGINT when a stop is requested (crate::child).
    let mut child = crate::child::command(exe)
        .arg(experiment)
        .args(args)
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(f.try_clone()?)
        .stderr(f)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    // A line a minute, so that a long run (thrash's take half an hour) shows
    // it is alive; the runs' own progress is in their logs.
    let mut next = std::time::Duration::from_secs(60);
    let st = crate::child::wait(&mut child, |el| {
        if el >= next {
            // say's, which never panics when stderr is gone (a dropped ssh
            // session, a `| tee` stopped by the same Ctrl-C): the run would
            // lose its parent while it restores.
            say::errln!("    {experiment}: {} so far", report::html::fmt_secs(el.as_secs_f64()));
            next += std::time::Duration::from_secs(60);
        }
    })?;
    if record::stop::requested() {
        say::errln!(
            "pagelab: bench controls stopped; pagelab {experiment} into {} was passed the stop (its log: {}). `--resume` \
             with the same --out keeps the runs that completed; move that directory away first",
            dir.display(),
            log.display()
        );
        return Err(crate::interrupted());
    }
    if !st.success() {
        anyhow::bail!("pagelab {experiment} into {} failed ({st}); its output: {}", dir.display(), log.display());
    }
    Ok(())
}

/// [`run_one`], unless `dir` holds a complete run of the same command (a
/// `--resume` after a control failed or was stopped): its run.json says
/// `complete`, by this version of pagelab, with exactly these arguments. A
/// directory with anything else in it (a failed or interrupted run, another
/// command's) is an error that names it; pagelab never deletes it.
fn run_or_keep(exe: &Path, experiment: &str, args: &[String], dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        return run_one(exe, experiment, args, dir);
    }
    // As root: only a directory of ours that nobody else may write.
    crate::lab::resume::check_dir(dir).map_err(|e| anyhow::anyhow!("--resume: {e}"))?;
    let kept = std::fs::read(dir.join("run.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .filter(|r| r["status"]["state"] == "complete" && r["pagelab_version"] == env!("CARGO_PKG_VERSION"))
        .and_then(|r| {
            let line: Vec<String> =
                r["command_line"].as_array()?.iter().filter_map(|x| x.as_str().map(String::from)).collect();
            let want: Vec<&str> = [experiment].into_iter().chain(args.iter().map(String::as_str)).collect();
            // The recorded line: the binary, the experiment, the arguments, then --out DIR.
            let got: Vec<&str> = line.iter().skip(1).map(String::as_str).collect();
            Some(got.len() == want.len() + 2 && got[..want.len()] == want[..] && got[want.len()] == "--out")
        })
        .unwrap_or(false);
    if !kept {
        anyhow::bail!(
            "{}: exists but holds no complete run of `pagelab {experiment} {}`; move it away to run it again",
            dir.display(),
            args.join(" ")
        );
    }
    say::errln!("  kept {} (complete before)", dir.display());
    Ok(())
}

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    if let Some(o) = a.only.iter().find(|o| !CONTROLS.iter().any(|c| selected(c, std::slice::from_ref(o)))) {
        let mut with: Vec<&str> = CONTROLS.iter().map(|c| c.experiment).collect();
        with.dedup();
        return Err(crate::usage(format!(
            "--only {o}: expected experiments with controls ({}) or findings with one (e.g. heap.growth)",
            with.join(", ")
        )));
    }
    let m = Machine::here();
    if !m.root {
        return Err(crate::usage("bench controls: needs root (the controls make memory cgroups and swap stores)"));
    }
    let out = match &a.out {
        Some(o) if a.resume && o.is_dir() => {
            crate::lab::resume::check_dir(o).map_err(|e| crate::usage(format!("--out {}: {e}", o.display())))?;
            o.clone()
        }
        Some(o) if o.exists() => {
            return Err(crate::usage(format!(
                "--out {}: exists; give a new directory, or --resume to keep its finished runs",
                o.display()
            )));
        }
        Some(o) => {
            std::fs::create_dir_all(o).with_context(|| format!("creating {}", o.display()))?;
            o.clone()
        }
        None => experiments::kit::run::default_out("controls")?,
    };
    let exe = std::env::current_exe().context("finding pagelab's own binary")?;
    // The quick lab's steps, thrash's and jank's at the budget that holds them.
    let budget = experiments::jank::cmd::quick_budget_s();
    let steps = plan(&m, Scale::Quick, Some(budget), &[]);
    // The lab's rules: the error each pass spends, and what a later pass buys.
    let rules = later::Rules::of(&m, budget, &steps);
    let mut turns: Vec<Turn> = Vec::new();
    // Controls this machine cannot make, and why (beside NOT_RUN's).
    let mut not_here: Vec<(String, String)> = Vec::new();
    let mut p = probe::Probe::default();
    let here = Here { zswap: p.environment().zswap, zswap_compressors: workloads::backing::zswap_compressors(&mut p) };
    // One run as the lab makes it per experiment and part of its step.
    let mut base_dirs: Vec<PathBuf> = Vec::new();
    for c in CONTROLS {
        if !a.only.is_empty() && !selected(c, &a.only) {
            continue;
        }
        if record::stop::requested() {
            return Err(crate::interrupted());
        }
        let Some(step) =
            steps.iter().find(|s| s.experiment == c.experiment && s.state == report::lab::StepState::Planned)
        else {
            say::errln!("{}: not planned on this machine; skipped", c.experiment);
            continue;
        };
        let part = (c.base.part)(step)?
            .ok_or_else(|| anyhow::anyhow!("the lab's {} step has no such part ({})", c.experiment, c.base.suffix))?;
        let why_not = match (c.change)(&part)? {
            None => Err(format!("its control cannot be made from this machine's lab step ({})", c.what)),
            Some(changed) => c.unavailable.and_then(|u| u(&here)).map_or(Ok(changed), Err),
        };
        let changed = match why_not {
            Ok(changed) => changed,
            Err(why) => {
                let why = format!("{}: {why}", c.flags());
                say::errln!("{}: {why}; skipped", c.names());
                not_here
                    .extend(c.ids.iter().map(|(id, role)| (id.to_string(), format!("{} control, {why}", role.word()))));
                continue;
            }
        };
        say::errln!("{}: {}", c.names(), c.what);
        let base = out.join(format!("{}-as-the-lab{}", c.experiment, c.base.suffix));
        if !base_dirs.contains(&base) {
            run_or_keep(&exe, c.experiment, &part.argv(), &base)?;
            base_dirs.push(base.clone());
        }
        // Named after its first finding (and its tag), so that a control
        // added to the list does not rename the others' directories
        // (--resume finds them).
        let first = c.ids[0].0.split_once('.').map_or(c.ids[0].0, |x| x.1);
        let ctl = out.join(format!("{}-control-{first}{}", c.experiment, c.tag));
        run_or_keep(&exe, c.experiment, &changed.argv(), &ctl)?;
        mark::mark(c, &ctl)?;
        // What the first pass left open gets the lab's second pass: the
        // same later step for every control that shares the base (its size
        // is fixed by the plan, not the data).
        let (base_open, ctl_open) = open(c, &base, &ctl, &rules)?;
        let base_later = run_later(&exe, c, &rules, (&part, &base), base_open)?;
        let ctl_later = run_later(&exe, c, &rules, (&changed, &ctl), ctl_open)?;
        if let Some(l) = &ctl_later {
            mark::mark(c, l)?;
        }
        judge(c, (&base, &ctl), (base_later.as_deref(), ctl_later.as_deref()), &rules, &mut turns)?;
    }
    // A stop while the last control's verdicts were read: no table.
    if record::stop::requested() {
        return Err(crate::interrupted());
    }
    let not_run: Vec<(String, String)> =
        not_here.into_iter().chain(NOT_RUN.iter().map(|(id, why)| (id.to_string(), why.to_string()))).collect();
    let (turned_n, findings_n) = count(&turns);
    let doc = serde_json::json!({
        "out": out,
        "findings_run": findings_n,
        "findings_turned": turned_n,
        "controls": turns,
        "not_run": not_run.iter().map(|(id, why)| serde_json::json!({"id": id, "why": why})).collect::<Vec<_>>(),
    });
    // As root: never through a link swapped in, never over what is not a
    // regular file of ours (record::safe).
    record::safe::write(&out.join("controls.json"), &serde_json::to_vec_pretty(&doc)?)
        .with_context(|| format!("writing {}", out.join("controls.json").display()))?;
    if a.json {
        return crate::print_json(&doc);
    }
    print_table(&turns, &not_run, &out);
    Ok(())
}

/// The lab's second pass of the step `first` (run into `dir`) where the
/// first pass left it `open`, into `dir`'s `-pass2` beside it, or kept
/// from before (`--resume`); None where it is not open or the lab would
/// buy no second pass ([`later::Rules::later_step`]).
fn run_later(
    exe: &Path,
    c: &Control,
    rules: &later::Rules,
    (first, dir): (&Step, &Path),
    open: bool,
) -> anyhow::Result<Option<PathBuf>> {
    let ids: Vec<&str> = c.ids.iter().map(|(id, _)| *id).collect();
    let Some(step) = open.then(|| rules.later_step(c.experiment, first, &ids)).flatten() else {
        return Ok(None);
    };
    let later = later::dir_of(dir);
    run_or_keep(exe, c.experiment, &step.argv(), &later)?;
    Ok(Some(later))
}

/// `--only`: the control runs when its experiment or one of its findings
/// is named (`heap`, `heap.growth`).
fn selected(c: &Control, only: &[String]) -> bool {
    only.iter().any(|o| o == c.experiment || c.ids.iter().any(|(id, _)| id == o))
}

impl Control {
    /// Its findings' names, comma-separated.
    fn names(&self) -> String {
        self.ids.iter().map(|(id, _)| *id).collect::<Vec<_>>().join(", ")
    }
    /// Its flags: `what` up to the first colon.
    fn flags(&self) -> &'static str {
        self.what.split_once(':').map_or(self.what, |x| x.0)
    }
}

/// Why a control on a swap file would not be one here: with zswap on,
/// pages bound for the file are compressed (and same-value ones kept) in
/// RAM first, so the file is no longer "a store that neither compresses nor
/// detects same-value pages". pagelab leaves the host's zswap as it is.
fn swap_file_compresses(zswap: &probe::environment::Zswap) -> Option<String> {
    (zswap.enabled == Some(true)).then(|| {
        "zswap is on here: pages bound for the swap file are compressed in RAM first, so the swap file is not a store \
         that neither compresses nor detects same-value pages"
            .to_string()
    })
}

/// Why jank's slow-drive control cannot run here: with zswap on, the pages
/// bound for the swap file are kept compressed in RAM first.
fn zswap_before_the_drive(zswap: &probe::environment::Zswap) -> Option<String> {
    (zswap.enabled == Some(true)).then(|| {
        "zswap is on here: pages bound for the swap file are compressed in RAM first, so they would not wait on the \
         slowed drive"
            .to_string()
    })
}

#[cfg(test)]
mod tests;
