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
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One control run: the findings it is the control of, the experiment, and
/// how the lab step's arguments change.
struct Control {
    ids: &'static [&'static str],
    experiment: &'static str,
    /// The change, in words.
    what: &'static str,
    change: fn(&[String]) -> Option<Vec<String>>,
}

/// `args` with `flag` set to `value` (replaced where given, else added).
fn set(args: &[String], flag: &str, value: &str) -> Vec<String> {
    let mut a = args.to_vec();
    match a.iter().position(|x| x == flag) {
        Some(i) if i + 1 < a.len() => a[i + 1] = value.to_string(),
        _ => a.extend([flag.to_string(), value.to_string()]),
    }
    a
}

/// The value after `flag`.
fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|x| x == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

const CONTROLS: &[Control] = &[
    Control {
        ids: &["eat.trim_random_semi", "eat.trim_const_semi"],
        experiment: "eat",
        what: "--backing swapfile: a store that neither compresses nor detects same-value pages",
        change: |a| Some(set(a, "--backing", "swapfile")),
    },
    Control {
        ids: &["wscap.cap_slowdown", "wscap.periodic_cheaper"],
        experiment: "wscap",
        what: "--cap at twice --size: a cap above the working set",
        change: |a| {
            let size = experiments::kit::units::parse_size(value(a, "--size")?).ok()?;
            Some(set(a, "--cap", &(2 * size).to_string()))
        },
    },
    Control {
        ids: &["wscap.cap_saves_no_memory"],
        experiment: "wscap",
        what: "--memory-store zram: the memory arm on a store that keeps the capped pages in RAM",
        change: |a| Some(set(a, "--memory-store", "zram")),
    },
    Control {
        ids: &["mapping.lazy_reset", "mapping.fresh_cheapest"],
        experiment: "mapping",
        what: "--pressure: the lazily freed pages are reclaimed before they are used again",
        change: |a| Some([a, &["--pressure".to_string()]].concat()),
    },
    Control {
        ids: &["heap.concurrent_linux"],
        experiment: "heap",
        what: "--heap-mode shared: one heap for every thread (glibc with one arena)",
        change: |a| Some(set(a, "--heap-mode", "shared")),
    },
];

/// Why thrash's study findings' control is not run.
const THRASH_NOT_RUN: &str = "their control (a limit above N × S, nothing pages) is outside the study's protocol by \
                              its definition, so it cannot be judged there";

/// The findings whose control is named but not run here, and why.
const NOT_RUN: &[(&str, &str)] = &[
    ("eat.semi_fraction", "needs the semi pattern's label on random bytes; eat has no such pattern"),
    ("eat.read_back_alike", "its control (a slow decompressor) is not known to remove the fault path's share"),
    ("mapping.shared_costlier", "needs a memfd kept resident between cycles; mapping has no such method"),
    ("heap.growth", "needs more CPUs than twice the thread counts judged: its control is the step within the cores"),
    ("heap.glibc_keeps", "its control is glibc+malloc_trim, an arm of the same over-time run"),
    ("heap.malloc_trim", "needs a program that frees nothing before the trim"),
    ("thrash.deep", THRASH_NOT_RUN),
    ("thrash.writes", THRASH_NOT_RUN),
    ("thrash.sleep", THRASH_NOT_RUN),
    ("thrash.stagger", THRASH_NOT_RUN),
    (
        "thrash.recovery",
        "its control is `thrash --after-load stays` (the load does not fall back); this benchmark runs the quick \
         lab's steps, and the quick lab cannot hold thrash's protocol",
    ),
    ("assess.far_memory", "needs a synthetic program that touches what was trimmed"),
];

/// The heap step without its over-time part (the control is about the
/// speed sweep; the over-time arms take most of the step's time).
fn heap_speed_only(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--over-time" | "--speed" => i += 1,
            "--over-time-threads" | "--live" | "--churn" | "--idle" | "--patterns" | "--knobs" => i += 2,
            _ => {
                out.push(args[i].clone());
                i += 1;
            }
        }
    }
    out
}

/// One finding judged on a run and on its control.
#[derive(Debug, Serialize)]
pub struct Turn {
    pub id: String,
    pub control: String,
    pub verdict: String,
    pub estimate: Option<f64>,
    pub control_verdict: String,
    pub control_estimate: Option<f64>,
    /// matches on one side and differs on the other.
    pub turned: bool,
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

/// The verdict of `id` in the run at `dir`: (verdict, estimate).
fn verdict_of(dir: &Path, id: &str) -> anyhow::Result<(String, Option<f64>)> {
    let r = report::html::Report::load(dir, report::html::Render::Never, experiments::catalog())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let f = r.findings();
    let v = f.iter().find(|(_, v)| v.id == id).map(|(_, v)| *v);
    Ok(v.map_or(("not judged".into(), None), |v| (v.outcome.word().to_string(), v.estimate)))
}

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    if let Some(o) = a.only.iter().find(|o| !CONTROLS.iter().any(|c| c.experiment == o.as_str())) {
        return Err(crate::usage(format!("--only {o}: expected experiments with controls: eat, wscap, mapping, heap")));
    }
    let m = Machine::here();
    if !m.root {
        return Err(crate::usage("bench controls: needs root (the controls make memory cgroups and swap stores)"));
    }
    let out = match &a.out {
        Some(o) if o.exists() => {
            return Err(crate::usage(format!("--out {}: exists; give a new directory", o.display())));
        }
        Some(o) => {
            std::fs::create_dir_all(o).with_context(|| format!("creating {}", o.display()))?;
            o.clone()
        }
        None => experiments::kit::run::default_out("controls")?,
    };
    let exe = std::env::current_exe().context("finding pagelab's own binary")?;
    let steps = plan(&m, Scale::Quick, None, &[]);
    let mut turns: Vec<Turn> = Vec::new();
    let mut base_dirs: Vec<(&str, PathBuf)> = Vec::new();
    for (k, c) in CONTROLS.iter().enumerate() {
        if !a.only.is_empty() && !a.only.iter().any(|o| o == c.experiment) {
            continue;
        }
        let Some(step) =
            steps.iter().find(|s| s.experiment == c.experiment && s.state == report::lab::StepState::Planned)
        else {
            eprintln!("{}: not planned on this machine; skipped", c.experiment);
            continue;
        };
        let args = if c.experiment == "heap" { heap_speed_only(&step.args) } else { step.args.clone() };
        let Some(changed) = (c.change)(&args) else {
            anyhow::bail!("{}: the lab step's arguments have no value to change ({})", c.experiment, c.what);
        };
        eprintln!("{}: {}", c.ids.join(", "), c.what);
        let base = match base_dirs.iter().find(|(e, _)| *e == c.experiment) {
            Some((_, d)) => d.clone(),
            None => {
                let d = out.join(format!("{}-as-the-lab", c.experiment));
                run_one(&exe, c.experiment, &args, &d)?;
                base_dirs.push((c.experiment, d.clone()));
                d
            }
        };
        let ctl = out.join(format!("{}-control-{k}", c.experiment));
        run_one(&exe, c.experiment, &changed, &ctl)?;
        for id in c.ids {
            let (verdict, estimate) = verdict_of(&base, id)?;
            let (control_verdict, control_estimate) = verdict_of(&ctl, id)?;
            let turned =
                matches!((verdict.as_str(), control_verdict.as_str()), ("matches", "differs") | ("differs", "matches"));
            turns.push(Turn {
                id: id.to_string(),
                control: c.what.to_string(),
                verdict,
                estimate,
                control_verdict,
                control_estimate,
                turned,
            });
        }
    }
    let doc = serde_json::json!({
        "out": out,
        "controls": turns,
        "not_run": NOT_RUN.iter().map(|(id, why)| serde_json::json!({"id": id, "why": why})).collect::<Vec<_>>(),
    });
    // As root: never through a link swapped in, never over what is not a
    // regular file of ours (record::safe).
    record::safe::write(&out.join("controls.json"), &serde_json::to_vec_pretty(&doc)?)
        .with_context(|| format!("writing {}", out.join("controls.json").display()))?;
    if a.json {
        return crate::print_json(&doc);
    }
    let f = |x: Option<f64>| x.map_or("-".into(), record::stats::claim::num);
    println!("| finding | as the lab runs it | under its control | turned | control |");
    println!("|---|---|---|---|---|");
    for t in &turns {
        println!(
            "| {} | {} ({}) | {} ({}) | {} | {} |",
            t.id,
            t.verdict,
            f(t.estimate),
            t.control_verdict,
            f(t.control_estimate),
            if t.turned { "yes" } else { "no" },
            t.control
        );
    }
    println!("\nNot run here:");
    for (id, why) in NOT_RUN {
        println!("- {id}: {why}");
    }
    println!(
        "\n{} of {} controls run turned their finding's verdict; runs in {}",
        turns.iter().filter(|t| t.turned).count(),
        turns.len(),
        out.display()
    );
    Ok(())
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

    #[test]
    fn each_control_changes_its_lab_steps_arguments() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        let steps = plan(&m, Scale::Quick, None, &[]);
        for c in CONTROLS {
            let s = steps.iter().find(|s| s.experiment == c.experiment).unwrap();
            let args = if c.experiment == "heap" { heap_speed_only(&s.args) } else { s.args.clone() };
            let changed = (c.change)(&args).unwrap_or_else(|| panic!("{}: {:?}", c.experiment, args));
            assert_ne!(changed, args, "{}: the control changes nothing", c.what);
            // Every finding named exists, and names a control of its own.
            for id in c.ids {
                let e = experiments::catalog().find(c.experiment).unwrap();
                let claim = e.claims().into_iter().find(|x| x.id == *id).unwrap_or_else(|| panic!("{id}"));
                assert!(!claim.check && !claim.control.is_empty(), "{id}");
            }
        }
        let heap = heap_speed_only(&steps.iter().find(|s| s.experiment == "heap").unwrap().args);
        assert!(!heap.iter().any(|a| a.starts_with("--over-time") || a == "--idle"), "{heap:?}");
        assert_eq!(set(&["--cap".into(), "1".into()], "--cap", "2"), ["--cap", "2"]);
        assert_eq!(set(&[], "--pressure", "x"), ["--pressure", "x"]);
    }
}
