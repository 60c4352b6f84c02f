//! `pagelab bench controls` (issue 57 item 1): a finding is evidence only if
//! it could have come out the other way. Each finding whose negative control
//! pagelab can run is judged twice, at the quick lab's scale and repeats
//! (its lab step's own arguments): on a run as the lab makes it, and on the
//! same run with the control in place, which removes the mechanism the claim
//! is about. The control has turned the verdict when one of the two matches
//! and the other differs; a control that ends inconclusive has not turned.
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
use experiments::thrash::work::AfterLoad;
use experiments::wscap::cmd::{MemoryStore, WscapLab};
use report::lab::Step;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use workloads::backing::BackingKind;

/// One control run: the findings it is the control of, the experiment, and
/// how the lab step's typed arguments change.
struct Control {
    ids: &'static [&'static str],
    experiment: &'static str,
    /// The change, in words.
    what: &'static str,
    /// The part of the lab step the finding is judged on (the step as it
    /// is, or heap's speed sweep or memory over time alone): both the run
    /// as the lab makes it and the control start from this.
    base: Base,
    /// The control's step from the base's; None where this machine's step
    /// cannot make it (heap.growth's on one CPU).
    change: fn(&Step) -> anyhow::Result<Option<Step>>,
    /// The control is a store that neither compresses nor detects
    /// same-value pages: a swap file, which is no such store where zswap
    /// compresses in front of it ([`swap_file_compresses`]).
    plain_swap_file: bool,
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

const CONTROLS: &[Control] = &[
    Control {
        ids: &["eat.trim_random_semi", "eat.trim_const_semi", "eat.read_back_alike"],
        experiment: "eat",
        what: "--backing swapfile: a store that neither compresses nor detects same-value pages (every pattern is \
               written out and read back from the file alike)",
        change: |s| set(s, |a: &mut EatLab| a.backing = BackingKind::Swapfile),
        plain_swap_file: true,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["eat.semi_fraction"],
        experiment: "eat",
        what: "--block 1: the semi pattern in blocks of one byte, so nothing in it repeats on purpose",
        change: |s| set(s, |a: &mut EatLab| a.block = 1),
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["wscap.cap_slowdown", "wscap.periodic_cheaper"],
        experiment: "wscap",
        what: "--cap at twice --size: a cap above the working set",
        change: |s| set(s, |a: &mut WscapLab| a.cap = Size(2 * a.size.0)),
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["wscap.cap_saves_no_memory"],
        experiment: "wscap",
        what: "--memory-store zram: the memory arm on a store that keeps the capped pages in RAM",
        change: |s| set(s, |a: &mut WscapLab| a.memory_store = MemoryStore::Zram),
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["mapping.lazy_reset", "mapping.fresh_cheapest"],
        experiment: "mapping",
        what: "--free-pageout: each MADV_FREE is followed at once by MADV_PAGEOUT inside the timed release, so the \
               lazy release gives its pages up as an eager one does, and the re-touch faults them in anew (for \
               fresh_cheapest an instrument check: no positive control is known)",
        change: |s| set(s, |a: &mut MappingLab| a.free_pageout = true),
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["mapping.shared_costlier"],
        experiment: "mapping",
        what: "--memfd-keep: one memfd, its pages allocated once, mapped and unmapped each cycle, so the page-cache \
               allocation is not paid per cycle",
        change: |s| set(s, |a: &mut MappingLab| a.memfd_keep = true),
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["heap.glibc_keeps"],
        experiment: "heap",
        what: "--glibc-mmap-threshold 128KiB: glibc's default mmap threshold, fixed, so blocks of 128 KiB and up are \
               mmap'd on their own and go back on free (no dynamic raise keeps them in the heap)",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                a.over_time.as_mut()?.glibc_mmap_threshold = Some(Size(128 << 10));
                Some(())
            })
        },
        plain_swap_file: false,
        lifts_gate: None,
        base: HEAP_OVER_TIME,
    },
    Control {
        ids: &["heap.concurrent_linux"],
        experiment: "heap",
        what: "--heap-mode shared: one heap for every thread (glibc with one arena)",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                a.sweep.as_mut()?.heap_mode = HeapMode::Shared;
                Some(())
            })
        },
        plain_swap_file: false,
        lifts_gate: None,
        base: HEAP_SPEED,
    },
    Control {
        ids: &["heap.growth"],
        experiment: "heap",
        what: "--growth-from at half the CPUs: the step from N threads to 2N stays within the cores, each thread pinned \
               to its own CPU, so no thread waits for one (Table 2 within the cores: 80 → 89 ms, 1.11)",
        change: |s| with(s, growth_within_the_cores),
        plain_swap_file: false,
        lifts_gate: None,
        base: HEAP_SPEED,
    },
    Control {
        ids: &["heap.malloc_trim"],
        experiment: "heap",
        what: "--shrink-frees 0 --churn 1ms: a program that frees next to nothing before the trim (no shrink, a \
               millisecond of churn), so malloc_trim has nothing to give back",
        change: |s| {
            with(s, |a: &mut HeapLab| {
                let ot = a.over_time.as_mut()?;
                (ot.shrink_frees, ot.churn) = (0.0, Dur(std::time::Duration::from_millis(1)));
                Some(())
            })
        },
        plain_swap_file: false,
        lifts_gate: None,
        base: HEAP_OVER_TIME,
    },
    Control {
        ids: &["thrash.deep", "thrash.sleep", "thrash.stagger"],
        experiment: "thrash",
        what: "--cpu-only: a limit that holds every consumer twice over, so nothing pages (outside the protocol by \
               design, so judged on its estimate alone)",
        change: |s| set(s, |a: &mut ThrashLab| a.cpu_only = true),
        plain_swap_file: false,
        lifts_gate: Some(thrash_cpu_only),
        base: WHOLE,
    },
    Control {
        ids: &["thrash.writes"],
        experiment: "thrash",
        what: "--sleep 0s: no sleep between cycles, so each consumer writes nonstop and W no longer sets its write \
               rate; the paging stays (outside the protocol only by its custom t_s, so judged on its estimate alone)",
        change: |s| set(s, |a: &mut ThrashLab| a.sleep = Some(Dur(std::time::Duration::ZERO))),
        plain_swap_file: false,
        lifts_gate: Some(thrash_sleep_removed),
        base: WHOLE,
    },
    Control {
        ids: &["thrash.recovery"],
        experiment: "thrash",
        what: "--after-load stays, e2 alone: each consumer keeps writing its whole region after t_p, so the load never \
               falls back",
        change: |s| {
            with(s, |a: &mut ThrashLab| {
                (a.after_load, a.preset) = (AfterLoad::Stays, vec!["e2".to_string()]);
                Some(())
            })
        },
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
    Control {
        ids: &["jank.zram_tenfold"],
        experiment: "jank",
        what: "--cpu-only, zram:lz4 and swapfile: both stores under a limit that holds the hog twice over, so \
               nothing pages",
        change: |s| {
            with(s, |a: &mut JankLab| {
                (a.arms, a.cpu_only) = (vec![Store::Zram(Some("lz4".into())), Store::Swapfile], true);
                Some(())
            })
        },
        plain_swap_file: false,
        lifts_gate: None,
        base: WHOLE,
    },
];

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

/// One finding judged on a run and on its control.
#[derive(Debug, Serialize)]
pub struct Turn {
    pub id: String,
    pub control: String,
    pub verdict: String,
    pub estimate: Option<f64>,
    pub control_verdict: String,
    pub control_estimate: Option<f64>,
    /// The control left the study's protocol by design, and its verdict is
    /// what the rules give on its estimate alone.
    pub control_gate_lifted: bool,
    /// matches on one side and differs on the other, or the control's
    /// values were identical (a check, [`report::verdict`]) and its check
    /// came out the other way: the configuration alone made the claim false
    /// (or true), the plainest way a finding can come out otherwise.
    pub turned: bool,
    /// It turned into a check's result, not a finding's.
    pub turned_as_check: bool,
}

/// Runs `experiment` with `args` into `dir`; Err naming the run and its log
/// when it fails.
fn run_one(exe: &Path, experiment: &str, args: &[String], dir: &Path) -> anyhow::Result<()> {
    let log = dir.with_extension("log");
    let f = record::safe::create(&log).with_context(|| format!("creating {}", log.display()))?;
    eprintln!("  pagelab {experiment} {} --out {}", args.join(" "), dir.display());
    let st = Command::new(exe)
        .arg(experiment)
        .args(args)
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(f.try_clone()?)
        .stderr(f)
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
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
    eprintln!("  kept {} (complete before)", dir.display());
    Ok(())
}

/// A finding's verdict in one run, as the table shows it.
struct Judged {
    verdict: String,
    estimate: Option<f64>,
    /// How many findings its family judged (the Holm family it was decided in).
    family: usize,
}

/// The verdict of `id` in the run at `dir`. With `lift`, a verdict the
/// protocol made "outside the protocol" is the one the same rules gave on
/// its estimate alone, where `lift` accepts every run of the directory (it
/// broke the protocol only as the control must), held to `family`'s level
/// (Bonferroni: p × family ≤ 5 %, stricter than the Holm the run as the lab
/// makes it was judged by), so that a control cannot turn more easily than
/// its finding was decided.
fn verdict_of(dir: &Path, id: &str, lift: Option<(Lift, usize)>) -> anyhow::Result<Judged> {
    let r = report::html::Report::load(dir, report::html::Render::Never, experiments::catalog())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let f = r.findings();
    let Some(v) = f.iter().find(|(_, v)| v.id == id).map(|(_, v)| *v) else {
        return Ok(Judged { verdict: "not judged".into(), estimate: None, family: 0 });
    };
    let verdict = match (lift, v.ungated) {
        (Some((ok, family)), Some((o, p))) => {
            if let Err(why) = ok(dir) {
                format!("outside the protocol beyond what the control removes: {why}")
            } else if matches!(o, report::verdict::Outcome::Matches | report::verdict::Outcome::Differs)
                && p.is_none_or(|p| p * family.max(1) as f64 > 0.05)
            {
                "inconclusive at the family's level".into()
            } else {
                o.word().to_string()
            }
        }
        _ => v.outcome.word().to_string(),
    };
    Ok(Judged { verdict, estimate: v.estimate, family: v.family })
}

/// Whether the control turned the verdict (matches ↔ differs), and whether
/// it turned into a check's result (every value of the control the same,
/// [`report::verdict`]'s rule, and the claim false there, or true where it
/// differed). Inconclusive, not checked and the rest never turn.
fn turned(base: &str, control: &str) -> (bool, bool) {
    use report::verdict::Outcome::*;
    let w = |o: report::verdict::Outcome| o.word();
    let as_check =
        (base == w(Matches) && control == w(CheckFailed)) || (base == w(Differs) && control == w(CheckPassed));
    let plain = (base == w(Matches) && control == w(Differs)) || (base == w(Differs) && control == w(Matches));
    (plain || as_check, as_check)
}

/// Whether every run in a control's directory broke the protocol only as
/// the control must (Err: which did not).
type Lift = fn(&Path) -> Result<(), String>;

/// thrash's CPU-only control: every run in `dir` only had its paging
/// taken away ([`experiments::thrash::protocol::only_paging_removed`]).
fn thrash_cpu_only(dir: &Path) -> Result<(), String> {
    each_thrash_run(dir, experiments::thrash::protocol::only_paging_removed)
}

/// thrash.writes' control: every run in `dir` only had its sleep taken
/// away ([`experiments::thrash::protocol::only_sleep_removed`]).
fn thrash_sleep_removed(dir: &Path) -> Result<(), String> {
    each_thrash_run(dir, experiments::thrash::protocol::only_sleep_removed)
}

/// Whether every thrash run in `dir` passes `ok` (Err: the first that does not).
fn each_thrash_run(dir: &Path, ok: fn(&experiments::thrash::results::ThrashResult) -> bool) -> Result<(), String> {
    let b = std::fs::read(dir.join("run.json")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let run: serde_json::Value = serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", dir.display()))?;
    let entries: Vec<experiments::thrash::results::Entry> = serde_json::from_value(run["results"].clone())
        .map_err(|e| format!("{}: its results are not thrash's: {e}", dir.display()))?;
    match entries.iter().find(|e| !ok(&e.result)) {
        Some(e) => Err(format!("{} repeat {} broke more", e.result.preset, e.result.repeat_index + 1)),
        None if entries.is_empty() => Err("it has no runs".into()),
        None => Ok(()),
    }
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
    let steps = plan(&m, Scale::Quick, Some(experiments::jank::cmd::quick_budget_s()), &[]);
    let mut turns: Vec<Turn> = Vec::new();
    // Controls this machine cannot make, and why (beside NOT_RUN's).
    let mut not_here: Vec<(String, String)> = Vec::new();
    let zswap = probe::Probe::default().environment().zswap;
    // One run as the lab makes it per experiment and part of its step.
    let mut base_dirs: Vec<PathBuf> = Vec::new();
    for c in CONTROLS {
        if !a.only.is_empty() && !selected(c, &a.only) {
            continue;
        }
        let Some(step) =
            steps.iter().find(|s| s.experiment == c.experiment && s.state == report::lab::StepState::Planned)
        else {
            eprintln!("{}: not planned on this machine; skipped", c.experiment);
            continue;
        };
        let part = (c.base.part)(step)?
            .ok_or_else(|| anyhow::anyhow!("the lab's {} step has no such part ({})", c.experiment, c.base.suffix))?;
        let Some(changed) = (c.change)(&part)? else {
            let why = format!("its control cannot be made from this machine's lab step ({})", c.what);
            eprintln!("{}: {why}; skipped", c.ids.join(", "));
            not_here.extend(c.ids.iter().map(|id| (id.to_string(), why.clone())));
            continue;
        };
        if let Some(why) = c.plain_swap_file.then(|| swap_file_compresses(&zswap)).flatten() {
            eprintln!("{}: {why}; skipped", c.ids.join(", "));
            not_here.extend(c.ids.iter().map(|id| (id.to_string(), why.clone())));
            continue;
        }
        eprintln!("{}: {}", c.ids.join(", "), c.what);
        let base = out.join(format!("{}-as-the-lab{}", c.experiment, c.base.suffix));
        if !base_dirs.contains(&base) {
            run_or_keep(&exe, c.experiment, &part.argv(), &base)?;
            base_dirs.push(base.clone());
        }
        // Named after its first finding, so that a control added to the
        // list does not rename the others' directories (--resume finds them).
        let first = c.ids[0].split_once('.').map_or(c.ids[0], |x| x.1);
        let ctl = out.join(format!("{}-control-{first}", c.experiment));
        run_or_keep(&exe, c.experiment, &changed.argv(), &ctl)?;
        for id in c.ids {
            let b = verdict_of(&base, id, None)?;
            let k = verdict_of(&ctl, id, c.lifts_gate.map(|l| (l, b.family)))?;
            let (verdict, estimate, control_verdict, control_estimate) = (b.verdict, b.estimate, k.verdict, k.estimate);
            let (turned, turned_as_check) = turned(&verdict, &control_verdict);
            turns.push(Turn {
                id: id.to_string(),
                control: c.what.to_string(),
                verdict,
                estimate,
                control_verdict,
                control_estimate,
                control_gate_lifted: c.lifts_gate.is_some(),
                turned,
                turned_as_check,
            });
        }
    }
    let not_run: Vec<(String, String)> =
        not_here.into_iter().chain(NOT_RUN.iter().map(|(id, why)| (id.to_string(), why.to_string()))).collect();
    let doc = serde_json::json!({
        "out": out,
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

/// `--only`: the control runs when its experiment or one of its findings
/// is named (`heap`, `heap.growth`).
fn selected(c: &Control, only: &[String]) -> bool {
    only.iter().any(|o| o == c.experiment || c.ids.contains(&o.as_str()))
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

/// The text table of `turns`, what was not run and why, and the count.
fn print_table(turns: &[Turn], not_run: &[(String, String)], out: &Path) {
    let f = |x: Option<f64>| x.map_or("-".into(), record::stats::claim::num);
    println!("| finding | as the lab runs it | under its control | turned | control |");
    println!("|---|---|---|---|---|");
    for t in turns {
        println!(
            "| {} | {} ({}) | {} ({}) | {} | {} |",
            t.id,
            t.verdict,
            f(t.estimate),
            if t.control_gate_lifted {
                format!("{} (estimate alone)", t.control_verdict)
            } else {
                t.control_verdict.clone()
            },
            f(t.control_estimate),
            match (t.turned, t.turned_as_check) {
                (true, true) => "yes (as a check: every value the same)",
                (true, false) => "yes",
                _ => "no",
            },
            t.control
        );
    }
    println!("\nNot run here:");
    for (id, why) in not_run {
        println!("- {id}: {why}");
    }
    println!(
        "\n{} of {} controls run turned their finding's verdict; runs in {}",
        turns.iter().filter(|t| t.turned).count(),
        turns.len(),
        out.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finding (checks apart) is in `bench controls`' lists exactly
    /// once: run (CONTROLS) or named with why not (NOT_RUN). The
    /// eighth-experiment trial added a thrash finding that neither list
    /// named, and the benchmark left it out without a word.
    #[test]
    fn every_finding_is_run_or_said_not_run() {
        let mut listed: Vec<&str> = CONTROLS.iter().flat_map(|c| c.ids.iter().copied()).collect();
        listed.extend(NOT_RUN.iter().map(|(id, _)| *id));
        let mut findings: Vec<&str> = Vec::new();
        for e in experiments::ALL {
            findings.extend(e.report.claims().into_iter().filter(|c| !c.check).map(|c| c.id));
        }
        for id in &findings {
            let n = listed.iter().filter(|x| *x == id).count();
            assert_eq!(n, 1, "{id}: in bench controls' lists {n} times (CONTROLS or NOT_RUN, src/controls.rs)");
        }
        for id in &listed {
            assert!(findings.contains(id), "{id}: listed in bench controls but not a finding");
        }
    }

    /// `--resume` keeps a finished run of exactly the same command, and
    /// refuses (naming the directory, deleting nothing) one that is not.
    #[test]
    fn a_resumed_bench_keeps_only_finished_runs_of_the_same_command() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("thrash-as-the-lab");
        std::fs::create_dir(&dir).unwrap();
        let args: Vec<String> = ["--preset", "all", "--repeat", "4"].iter().map(|x| x.to_string()).collect();
        let write = |state: &str, line: &[&str]| {
            let r = serde_json::json!({
                "status": {"state": state},
                "pagelab_version": env!("CARGO_PKG_VERSION"),
                "command_line": line,
            });
            std::fs::write(dir.join("run.json"), r.to_string()).unwrap();
        };
        // No binary to run: a kept run must not need one.
        let exe = tmp.path().join("no-such-pagelab");
        let line = ["/x/pagelab", "thrash", "--preset", "all", "--repeat", "4", "--out", "d"];
        write("complete", &line);
        run_or_keep(&exe, "thrash", &args, &dir).expect("kept");
        // Stopped, failed or still running: refused, and left in place.
        for state in ["interrupted", "failed", "running"] {
            write(state, &line);
            let e = run_or_keep(&exe, "thrash", &args, &dir).unwrap_err().to_string();
            assert!(e.contains("thrash-as-the-lab") && e.contains("no complete run"), "{state}: {e}");
        }
        // Another command (the control's extra flag): refused, either way round.
        write("complete", &["/x/pagelab", "thrash", "--preset", "all", "--repeat", "4", "--cpu-only", "--out", "d"]);
        let more: Vec<String> = args.iter().cloned().chain(["--cpu-only".to_string()]).collect();
        assert!(run_or_keep(&exe, "thrash", &args, &dir).is_err());
        run_or_keep(&exe, "thrash", &more, &dir).expect("the control's own run is kept");
        write("complete", &line);
        assert!(run_or_keep(&exe, "thrash", &more, &dir).is_err());
        // A directory others may write is not trusted.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = run_or_keep(&exe, "thrash", &args, &dir).unwrap_err().to_string();
        assert!(e.contains("written by others"), "{e}");
        assert!(dir.join("run.json").exists(), "nothing was deleted");
    }

    #[test]
    fn each_control_changes_its_lab_steps_arguments() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        let steps = plan(&m, Scale::Quick, Some(experiments::jank::cmd::quick_budget_s()), &[]);
        let step = |e: &str| steps.iter().find(|s| s.experiment == e).unwrap().clone();
        for c in CONTROLS {
            let part = (c.base.part)(&step(c.experiment)).unwrap().unwrap();
            let changed = (c.change)(&part).unwrap().unwrap_or_else(|| panic!("{}: {:?}", c.experiment, part.argv()));
            assert_ne!(changed.argv(), part.argv(), "{}: the control changes nothing", c.what);
            assert_eq!(changed.repeat, part.repeat, "{}: the same repeats", c.what);
            // Both command lines are ones pagelab takes.
            for a in [part.argv(), changed.argv()] {
                let line = ["pagelab", c.experiment].into_iter().chain(a.iter().map(String::as_str));
                crate::cli::command()
                    .try_get_matches_from(line)
                    .unwrap_or_else(|e| panic!("{}: pagelab {} {a:?}: {e}", c.what, c.experiment));
            }
            // Every finding named exists, and names a control of its own.
            for id in c.ids {
                let e = experiments::catalog().find(c.experiment).unwrap();
                let claim = e.claims().into_iter().find(|x| x.id == *id).unwrap_or_else(|| panic!("{id}"));
                assert!(!claim.check && !claim.control.is_empty(), "{id}");
            }
        }
        let heap = |part: &Base, s: &Step| HeapLab::of(&(part.part)(s).unwrap().unwrap()).unwrap();
        let speed = heap(&HEAP_SPEED, &step("heap"));
        assert!(speed.over_time.is_none() && speed.sweep.is_some(), "{speed:?}");
        assert!(!(HEAP_SPEED.part)(&step("heap")).unwrap().unwrap().argv().iter().any(|a| a.starts_with("--over")));
        let ot = heap(&HEAP_OVER_TIME, &step("heap"));
        assert!(ot.sweep.is_none() && ot.over_time.is_some(), "{ot:?}");
        let ot_argv = (HEAP_OVER_TIME.part)(&step("heap")).unwrap().unwrap().argv();
        assert!(ot_argv.contains(&"--over-time".to_string()), "{ot_argv:?}");
        assert!(!ot_argv.iter().any(|a| ["--speed", "--threads", "--ops"].contains(&a.as_str())), "{ot_argv:?}");
        // heap.growth's control: N → 2N within the cores, judged from N.
        let growth = CONTROLS.iter().find(|c| c.ids == ["heap.growth"]).unwrap();
        for (cpus, want) in [(2, (vec![1, 2], 1)), (16, (vec![8, 16], 8)), (3, (vec![1, 2], 1))] {
            let m = Machine { cpus, ..m };
            let s = plan(&m, Scale::Quick, None, &[]).into_iter().find(|s| s.experiment == "heap").unwrap();
            let g = (growth.change)(&(HEAP_SPEED.part)(&s).unwrap().unwrap()).unwrap().unwrap();
            let sw = HeapLab::of(&g).unwrap().sweep.unwrap();
            assert_eq!((sw.threads.unwrap(), sw.growth_from.unwrap()), want, "{cpus}: {:?}", g.argv());
        }
        let mut one = speed.clone();
        one.sweep.as_mut().unwrap().threads = Some(vec![1, 2]);
        assert_eq!(growth_within_the_cores(&mut one), None, "one CPU: no such step");
        // --only names an experiment or a finding.
        let only = |o: &[&str]| -> Vec<&str> {
            let o: Vec<String> = o.iter().map(|x| x.to_string()).collect();
            CONTROLS.iter().filter(|c| selected(c, &o)).map(|c| c.ids[0]).collect()
        };
        assert_eq!(only(&["heap.growth"]), ["heap.growth"]);
        assert_eq!(
            only(&["eat.read_back_alike", "mapping.lazy_reset"]),
            ["eat.trim_random_semi", "mapping.lazy_reset"]
        );
        assert_eq!(only(&["heap"]).len(), CONTROLS.iter().filter(|c| c.experiment == "heap").count());
        assert!(only(&["heap.nothing", "jank.min_ttl"]).is_empty(), "a finding without a control run selects none");
        // A swap-file control is no control where zswap compresses in front of the file.
        let on = probe::environment::Zswap { present: true, enabled: Some(true), ..Default::default() };
        let off = probe::environment::Zswap { enabled: Some(false), ..on.clone() };
        assert!(swap_file_compresses(&on).is_some_and(|w| w.contains("zswap is on")));
        assert_eq!(swap_file_compresses(&off), None);
        let plain: Vec<&str> = CONTROLS.iter().filter(|c| c.plain_swap_file).map(|c| c.ids[0]).collect();
        assert_eq!(plain, ["eat.trim_random_semi"]);
        let eat = CONTROLS.iter().find(|c| c.plain_swap_file).unwrap();
        assert_eq!(EatLab::of(&(eat.change)(&step("eat")).unwrap().unwrap()).unwrap().backing, BackingKind::Swapfile);
        // thrash's CPU-only control is the one that leaves the protocol.
        let th = step("thrash");
        let cpu = (CONTROLS.iter().find(|c| c.lifts_gate.is_some()).unwrap().change)(&th).unwrap().unwrap();
        assert!(ThrashLab::of(&cpu).unwrap().cpu_only && !ThrashLab::of(&th).unwrap().cpu_only);
        // thrash.writes': the step with no sleep, every preset as it is.
        let w = CONTROLS.iter().find(|c| c.ids == ["thrash.writes"]).unwrap();
        let nosleep = ThrashLab::of(&(w.change)(&th).unwrap().unwrap()).unwrap();
        assert_eq!(nosleep.sleep, Some(Dur(std::time::Duration::ZERO)));
        assert_eq!(nosleep.preset, ThrashLab::of(&th).unwrap().preset);
        assert!(w.lifts_gate.is_some());
        assert!(CONTROLS.iter().filter(|c| c.lifts_gate.is_some()).all(|c| c.experiment == "thrash"));
        // A step that is not the control's experiment's is a bug of the
        // plan, said as one, not a control this machine cannot make.
        assert!((w.change)(&step("eat")).unwrap_err().to_string().contains("not thrash's"));
        assert_eq!(turned("matches", "differs"), (true, false));
        assert_eq!(turned("differs", "matches"), (true, false));
        assert_eq!(turned("matches", "check failed"), (true, true));
        assert_eq!(turned("differs", "check passed"), (true, true));
        for (a, b) in [
            ("matches", "inconclusive"),
            ("matches", "check passed"),
            ("differs", "differs"),
            ("matches", "not checked"),
        ] {
            assert_eq!(turned(a, b), (false, false), "{a} -> {b}");
        }
    }
}
