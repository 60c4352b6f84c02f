//! `pagelab lab`: doctor, a plan fitted to this machine, every experiment in its
//! own child process (so one that fails cannot take the others with it), then
//! one directory with all run directories and a self-contained report.html.

use crate::cli::LabArgs;
use crate::usage;
use anyhow::Context;
pub use experiments::kit::plan::{Machine, Scale};
use report::html::fmt_secs as fmt_s;
use report::lab::{Lab, Step, StepState};
use sandbox::worker::signal_name;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod pace;
pub use pace::{LATER_ROOM, fit_step, later_left, pace_of};

/// The steps for this machine, in the lab's order: each experiment plans its own
/// (`lab_step` in its folder's `cmd.rs`). `Full` comes closer to the studies;
/// the quick plan fits in about 5 minutes on a 2-core VM; the smoke plan in
/// about a minute. `budget` is the one the user gave (`--budget`), which may
/// let in a step the scale's own time leaves out.
pub fn plan(m: &Machine, scale: Scale, budget: Option<f64>, only: &[String]) -> Vec<Step> {
    experiments::ALL
        .iter()
        .filter(|e| only.is_empty() || only.iter().any(|o| o == e.name()))
        .map(|e| (e.lab_step)(m, scale, budget))
        .collect()
}

/// Progress on the terminal (indicatif bars) or as plain lines.
struct Progress {
    bars: Option<(indicatif::MultiProgress, indicatif::ProgressBar)>,
    to_stderr: bool,
    total_ms: u64,
}

impl Progress {
    fn new(total_s: f64, json: bool) -> Progress {
        let total_ms = (total_s * 1e3) as u64;
        let tty = std::io::stdout().is_terminal() && std::io::stderr().is_terminal() && !json;
        let bars = tty.then(|| {
            let mp = indicatif::MultiProgress::new();
            let all = mp.add(indicatif::ProgressBar::new(total_ms.max(1)));
            all.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>8} [{bar:36.green/white}] {percent:>3}%  {elapsed:>4} elapsed, ETA {eta:>4}  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            all.set_prefix("lab");
            (mp, all)
        });
        Progress { bars, to_stderr: json, total_ms }
    }

    fn line(&self, s: &str) {
        match &self.bars {
            Some((mp, _)) => {
                let _ = mp.println(s);
            }
            None if self.to_stderr => say::errln!("{s}"),
            None => say::outln!("{s}"),
        }
    }

    fn step_bar(&self, name: &str, expect_ms: u64) -> Option<indicatif::ProgressBar> {
        let (mp, _) = self.bars.as_ref()?;
        let b = mp.insert(0, indicatif::ProgressBar::new(expect_ms.max(1)));
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix:>8} [{bar:36.cyan/blue}] {percent:>3}%  {elapsed:>4} elapsed, ETA {eta:>4}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_prefix(name.to_string());
        Some(b)
    }

    fn overall(&self, done_ms: u64, msg: &str) {
        if let Some((_, all)) = &self.bars {
            all.set_position(done_ms.min(self.total_ms));
            all.set_message(msg.to_string());
        }
    }

    fn finish(&self) {
        if let Some((_, all)) = &self.bars {
            all.finish_and_clear();
        }
    }
}

fn now_ms() -> u64 {
    probe::sample::realtime_ns() / 1_000_000
}

/// The last non-empty line of a log (why a child failed).
fn last_line(p: &Path) -> Option<String> {
    let t = std::fs::read_to_string(p).ok()?;
    t.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().trim_start_matches("pagelab: ").to_string())
}

/// Why a step that a stop kept from starting was skipped: `--resume` runs
/// such a step, unlike one the plan skipped.
pub(crate) const NOT_STARTED: &str = "the lab was interrupted before it started";

/// The quick lab's budget, seconds: five minutes.
pub const QUICK_BUDGET_S: f64 = 300.0;

/// The most repeats a later pass gives one step ([`choose_more`]).
pub const MORE_MAX: u32 = 10;

/// Time kept back from a budget for the report at the end, seconds.
pub(crate) const REPORT_RESERVE_S: f64 = 5.0;

/// The passes a budgeted lab plans before any data when its budget leaves room
/// for a second ([`passes_for`]): the first, then one of extra repeats for
/// what it left inconclusive (the error is split between them).
pub const BUDGET_PASSES: u32 = 2;

/// What a second pass must be able to buy for `steps`, known from the plan
/// alone: for each experiment, its cheapest second-pass step (two more
/// repeats of the arms of its cheapest finding), and of those the dearest.
/// A budget that leaves this can repeat a finding of any experiment, the one
/// whose findings stay open included.
pub fn second_pass_cost(steps: &[Step]) -> Option<f64> {
    experiments::ALL
        .iter()
        .filter_map(|e| {
            let first = steps.iter().find(|s| s.experiment == e.name() && s.state == StepState::Planned)?;
            e.report
                .claims()
                .iter()
                .filter_map(|c| (e.lab_more)(first, &[c.id], 2))
                .map(|s| s.expect_s)
                .reduce(f64::min)
        })
        .reduce(f64::max)
}

/// The passes a lab with `budget` seconds plans for `steps`, before any data:
/// two when what the budget leaves after the first pass's plan and the report
/// buys [`second_pass_cost`]; else one, at the whole 5 %. A second pass that
/// could buy repeats of some experiments but not of the one whose findings
/// stay open would spend a fifth of the error for little (the smoke lab's
/// budget leaves about half a minute, too little for two more repeats of
/// its dearest experiment). None without a budget: one pass.
pub fn passes_for(budget: Option<f64>, steps: &[Step]) -> u32 {
    let Some(b) = budget else { return 1 };
    let expect: f64 = steps.iter().filter(|s| s.state == StepState::Planned).map(|s| s.expect_s).sum();
    match second_pass_cost(steps) {
        Some(c) if b - REPORT_RESERVE_S - expect >= c => BUDGET_PASSES,
        _ => 1,
    }
}

/// The steps of one running lab, written to lab.json after each.
struct Runner {
    exe: PathBuf,
    out: PathBuf,
    lab: Lab,
    progress: Progress,
    lock_env: (&'static str, String),
    done_ms: u64,
}

impl Runner {
    /// Runs step `i` (the `k`-th of `n` in its pass) as a child, and records how it ended.
    fn run_step(&mut self, i: usize, k: usize, n: usize) -> anyhow::Result<()> {
        let steps = &mut self.lab.steps;
        if record::stop::requested() {
            steps[i].state = StepState::Skipped;
            steps[i].reason = Some(NOT_STARTED.into());
            return Ok(());
        }
        let s = steps[i].clone();
        let name = if s.pass > 1 { format!("{}-pass{}", s.experiment, s.pass) } else { s.experiment.clone() };
        let rel = PathBuf::from(&name);
        let log = self.out.join("logs").join(format!("{name}.log"));
        self.progress.line(&format!(
            "[{k}/{n}] {name}: running, expect ~{} (log: {})",
            fmt_s(s.expect_s),
            log.display()
        ));
        steps[i].state = StepState::Running;
        steps[i].dir = Some(rel.clone());
        self.lab.save(&self.out)?;
        let started = Instant::now();
        let lock = (self.lock_env.0, self.lock_env.1.clone());
        let r = run_child(&self.exe, &s, &self.out.join(&rel), &log, &self.progress, self.done_ms, lock);
        let st = &mut self.lab.steps[i];
        st.seconds = Some(started.elapsed().as_secs_f64());
        settle_step(st, r, &self.out.join(&rel), &log);
        self.done_ms += (s.expect_s * 1e3) as u64;
        self.progress.overall(self.done_ms, "");
        self.progress.line(&format!(
            "[{k}/{n}] {name}: {} in {}{}",
            st.state.word(),
            fmt_s(st.seconds.unwrap_or(0.0)),
            st.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
        ));
        self.lab.save(&self.out)?;
        Ok(())
    }

    /// The passes after the first, while the budget `b` (seconds from `t0`)
    /// lasts: each repeats what is still inconclusive ([`plan_more`]).
    fn later_passes(&mut self, b: f64, t0: Instant, from: u32) -> anyhow::Result<()> {
        for pass in from.max(2)..=self.lab.passes {
            if record::stop::requested() {
                break;
            }
            let left = b - t0.elapsed().as_secs_f64() - REPORT_RESERVE_S;
            // Fitted at the first pass's pace, with room (`later_left`).
            let (fit, pace) = later_left(&self.lab.steps, left);
            if (pace - 1.0).abs() > 0.05 {
                self.progress.line(&format!(
                    "pass {pass}: the first pass ran at {}× its plan, so {} of plan is fitted into the {} left",
                    record::stats::claim::num(pace),
                    fmt_s(fit.max(0.0)),
                    fmt_s(left.max(0.0))
                ));
            }
            let more = plan_more(&self.out, &self.lab, pass, fit);
            if more.is_empty() {
                self.progress.line(&format!(
                    "pass {pass}: nothing to repeat in the {} left (every finding decided, or none can be in that time)",
                    fmt_s(left.max(0.0))
                ));
                break;
            }
            for s in &more {
                self.progress.line(&format!(
                    "pass {pass}: {} ~{}  pagelab {} {}  ({})",
                    s.experiment,
                    fmt_s(s.expect_s),
                    s.experiment,
                    s.argv().join(" "),
                    s.note.as_deref().unwrap_or("")
                ));
            }
            let from = self.lab.steps.len();
            self.lab.steps.extend(more);
            let idx: Vec<usize> = (from..self.lab.steps.len()).collect();
            self.run_pass(&idx)?;
        }
        Ok(())
    }

    /// Runs the steps `idx` as one pass.
    fn run_pass(&mut self, idx: &[usize]) -> anyhow::Result<()> {
        for (k, &i) in idx.iter().enumerate() {
            if self.lab.steps[i].state != StepState::Planned {
                continue;
            }
            self.run_step(i, k + 1, idx.len())?;
        }
        Ok(())
    }

    /// The first pass, fitted to the budget `b` (seconds from `t0`) as it
    /// goes: before each step, the pace of the steps so far ([`pace_of`])
    /// projects the rest, and a step that would carry the pass past
    /// the budget runs fewer repeats ([`fit_step`]).
    fn first_pass(&mut self, idx: &[usize], budget: Option<(f64, Instant)>) -> anyhow::Result<()> {
        for (k, &i) in idx.iter().enumerate() {
            // Run already (a resumed lab keeps what finished).
            if self.lab.steps[i].state != StepState::Planned {
                continue;
            }
            if let Some((b, t0)) = budget {
                let done: Vec<&Step> = idx[..k].iter().map(|&j| &self.lab.steps[j]).collect();
                let planned: f64 = done.iter().filter(|s| s.seconds.is_some()).map(|s| s.expect_s).sum();
                let actual: f64 = done.iter().filter_map(|s| s.seconds).sum();
                let rest: f64 = idx[k + 1..].iter().map(|&j| self.lab.steps[j].expect_s).sum();
                if planned > 0.0 {
                    let left = b - REPORT_RESERVE_S - t0.elapsed().as_secs_f64();
                    if let Some(fit) = fit_step(&self.lab.steps[i], pace_of(actual, planned), rest, left) {
                        self.progress.line(&format!(
                            "{}: {}",
                            fit.experiment,
                            fit.note.as_deref().unwrap_or("fewer repeats to fit the budget")
                        ));
                        self.lab.steps[i] = fit;
                    }
                }
            }
            self.run_step(i, k + 1, idx.len())?;
        }
        Ok(())
    }
}

/// A step's state from how its child ended.
fn settle_step(st: &mut Step, r: anyhow::Result<(i32, Option<i32>)>, dir: &Path, log: &Path) {
    match r {
        Ok((code, Some(sig))) if !record::stop::requested() => {
            // Killed by someone other than the lab (the OOM killer, a user's
            // kill -9): a failure, not an interruption. Whatever it changed is
            // undone now, through its journal, before the next step.
            st.exit_code = Some(code);
            st.state = StepState::Failed;
            st.reason = Some(format!("killed by signal {sig} ({})", signal_name(sig)));
            crate::restore_stale_runs();
        }
        Ok((code, _)) => {
            st.exit_code = Some(code);
            // A child that died without restoring (a signal) left its journal.
            crate::restore_stale_runs();
            let status = record::RunRecord::load(dir).ok().map(|r| r.run.status);
            let interrupted = |rs: &record::rundir::RunStatus| rs.state == record::rundir::State::Interrupted;
            match (code, status) {
                (0, _) => st.state = StepState::Complete,
                (130, rs) => {
                    st.state = StepState::Interrupted;
                    st.reason = rs.filter(interrupted).and_then(|r| r.reason).or(Some("interrupted".into()));
                }
                // A child that failed (exit 1) may not have written its
                // status (a full disk): its record then reads interrupted,
                // and its own last line says why it failed.
                (_, rs) => {
                    st.state = StepState::Failed;
                    st.reason = rs
                        .filter(|r| !interrupted(r))
                        .and_then(|r| r.reason)
                        .or_else(|| last_line(log))
                        .or(Some(format!("exit {code}")));
                }
            }
        }
        Err(e) => {
            st.state = StepState::Failed;
            st.reason = Some(format!("{e:#}"));
        }
    }
}

/// An extra pass, fitted into `left` seconds: for each experiment with
/// inconclusive findings, the repeats that the spread seen so far suggests
/// would decide the most of them per second, at the level pass `pass` may
/// spend. The best buys first, one step per experiment.
fn plan_more(out: &Path, lab: &Lab, pass: u32, left: f64) -> Vec<Step> {
    let Ok(r) = report::html::Report::load(out, report::html::Render::Never, experiments::catalog()) else {
        return Vec::new();
    };
    let open: Vec<(&str, &report::verdict::Verdict)> =
        r.findings().into_iter().filter(|(_, v)| v.outcome == report::verdict::Outcome::Inconclusive).collect();
    let mut steps: Vec<Step> = choose_more(lab, &open, pass, left)
        .into_iter()
        .map(|m| {
            let mut s = m.step;
            s.note = Some(format!("pass {pass}: {} more repeat(s) for {}", m.k, m.ids.join(", ")));
            s
        })
        .collect();
    // In the lab's order.
    steps.sort_by_key(|s| experiments::ALL.iter().position(|e| e.name() == s.experiment));
    steps
}

/// One experiment's step of a later pass: `k` more repeats for the open
/// findings `ids`.
pub struct More {
    pub step: Step,
    pub ids: Vec<&'static str>,
    pub k: u32,
}

/// [`plan_more`]'s choice, from the findings still `open` (inconclusive) and
/// the first pass's steps in `lab`, with no file read: the whole-lab
/// simulation (`lab_sim`) calls it as the lab does.
pub fn choose_more(lab: &Lab, open: &[(&str, &report::verdict::Verdict)], pass: u32, left: f64) -> Vec<More> {
    let alpha = lab.alpha_by_pass().get(pass as usize - 1).copied().unwrap_or(0.0);
    let mut options: Vec<(f64, Step, Vec<&'static str>, u32)> = Vec::new();
    for e in experiments::ALL {
        let Some(first) = lab.steps.iter().find(|s| s.experiment == e.name() && s.pass == 1) else { continue };
        if first.state != StepState::Complete {
            continue;
        }
        // Each open claim of this experiment with the repeats it still needs.
        let needs: Vec<(&'static str, u32)> = open
            .iter()
            .filter(|(x, _)| *x == e.name())
            .filter_map(|(_, v)| {
                // A later pass decides at its share ÷ the family's size
                // (report::verdict::judge_stages), and tests its own repeats
                // alone: at least two, for a spread of their own.
                let level = alpha / v.family.max(1) as f64;
                let est = record::stats::claim::estimate_at(&v.values, v.resolution)?;
                let need = record::stats::claim::repeats_to_decide(&est, &v.region, level)?;
                Some((v.id, need.saturating_sub(v.n).clamp(2, MORE_MAX as usize) as u32))
            })
            .collect();
        for &(_, k) in &needs {
            let ids: Vec<&'static str> = needs.iter().filter(|(_, kk)| *kk <= k).map(|(id, _)| *id).collect();
            if let Some(mut s) = (e.lab_more)(first, &ids, k) {
                s.pass = pass;
                options.push((ids.len() as f64 / s.expect_s.max(1.0), s, ids, k));
            }
        }
    }
    options.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut chosen: Vec<(Step, Vec<&'static str>, u32)> = Vec::new();
    let mut spent = 0.0;
    for (_, s, ids, k) in options {
        if spent + s.expect_s <= left && !chosen.iter().any(|c| c.0.experiment == s.experiment) {
            spent += s.expect_s;
            chosen.push((s, ids, k));
        }
    }
    // The spread seen so far is itself uncertain: time left over buys the
    // chosen steps one more repeat each, in turn, while it lasts.
    let mut grew = true;
    while grew {
        grew = false;
        for (s, ids, k) in chosen.iter_mut().filter(|c| c.2 < MORE_MAX) {
            let e = experiments::ALL.iter().find(|e| e.name() == s.experiment);
            let first = lab.steps.iter().find(|f| f.experiment == s.experiment && f.pass == 1);
            if let (Some(e), Some(first)) = (e, first)
                && let Some(mut more) = (e.lab_more)(first, ids, *k + 1)
                && spent - s.expect_s + more.expect_s <= left
            {
                spent += more.expect_s - s.expect_s;
                more.pass = pass;
                *s = more;
                *k += 1;
                grew = true;
            }
        }
    }
    chosen.into_iter().map(|(step, ids, k)| More { step, ids, k }).collect()
}

pub fn run(a: &LabArgs) -> anyhow::Result<()> {
    if let Some(dir) = &a.resume {
        return resume::run(a, dir);
    }
    let scale = if a.full {
        Scale::Full
    } else if a.smoke {
        Scale::Smoke
    } else {
        Scale::Quick
    };
    let mode = scale.name();
    if let Some(out) = &a.out
        && out.exists()
        && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true)
    {
        let what = if out.is_dir() { "exists and is not empty" } else { "exists and is not a directory" };
        return Err(usage(format!("--out {}: {what}; give a new directory", out.display())));
    }
    let m = Machine::here();
    let findings = crate::doctor::examine();
    let steps = plan(&m, scale, a.budget.map(|d| d.as_secs_f64()), &a.only);
    let expect: f64 = steps.iter().map(|s| s.expect_s).sum();
    // The whole quick lab spends 5 minutes; the whole smoke lab half as long
    // again as its first pass (so that its second pass runs too); the full
    // one, and a part of any (--only), runs its plan once unless given a budget.
    let default_budget = match scale {
        Scale::Quick => Some(QUICK_BUDGET_S),
        Scale::Smoke => Some((1.5 * expect).ceil()),
        Scale::Full => None,
    };
    let budget = a.budget.map(|d| d.as_secs_f64()).or(default_budget.filter(|_| a.only.is_empty()));
    if let Some(b) = budget
        && b < expect
    {
        return Err(usage(format!(
            "--budget {}: the first pass alone is planned at ~{}; give at least that (e.g. --budget {}s), or fewer experiments with --only",
            fmt_s(b),
            fmt_s(expect),
            expect.ceil()
        )));
    }
    let say = |s: &str| if a.json { say::errln!("{s}") } else { say::outln!("{s}") };
    let passes = passes_for(budget, &steps);
    print_plan(&say, &m, mode, &findings, &steps, expect, budget.map(|b| (b, passes)));
    if a.dry_run {
        if a.json {
            let plan = LabPlan {
                kind: "lab-plan".into(),
                mode: mode.into(),
                root: m.root,
                cpus: m.cpus,
                ram_bytes: m.ram_bytes,
                expect_s: expect,
                budget_s: budget,
                passes,
                doctor: serde_json::to_value(&findings.json)?,
                steps,
            };
            experiments::kit::print_json(&plan)?;
        }
        return Ok(());
    }

    // One lab at a time, and no other experiment beside it; its children run
    // under this lock (they inherit it), and nobody else's run slips in between steps.
    let lock = crate::experiment::take_run_lock("lab", a.lock.no_wait)?;
    // The output of every planned step (and of the budget's later passes)
    // must fit before anything runs: a full disk at 1 h 50 min costs the lab.
    let planned_bytes = experiments::kit::plan::output_estimate(
        steps.iter().filter(|s| s.state == StepState::Planned).count() * passes as usize,
        budget.unwrap_or(expect),
    );
    let at = a.out.clone().unwrap_or_else(|| PathBuf::from("runs"));
    sandbox::guard::check_disk(&at, planned_bytes, sandbox::guard::disk_free(&at), "the lab")?;
    let out = match &a.out {
        Some(o) => o.clone(),
        None => crate::record_cmd::default_out("lab")?,
    };
    // 0755 whatever the umask allows beyond it: `--resume` refuses a lab
    // directory others may write (links could be planted in it).
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o755)
        .create(out.join("logs"))
        .map_err(|e| usage(format!("--out {}: {e}", out.display())))?;
    crate::write_output(&out.join("doctor.json"), &serde_json::to_vec_pretty(&findings.json)?, None)?;
    let (pid, pid_starttime) = record::rundir::this_process();
    let plan_digest = Some(resume::digest(mode, &a.only, &steps, budget, passes));
    let lab = Lab {
        pid: Some(pid),
        pid_starttime,
        only: a.only.clone(),
        plan_digest,
        host: Some(resume::host_here()),
        resumed: Vec::new(),
        format: record::rundir::FORMAT_VERSION,
        kind: "lab".into(),
        mode: mode.into(),
        pagelab_version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        started_unix_ms: now_ms(),
        ended_unix_ms: None,
        wall_s: None,
        root: m.root,
        cpus: m.cpus,
        ram_bytes: m.ram_bytes,
        expect_s: expect,
        budget_s: budget,
        passes,
        // Fixed before any data: each pass's p-values count alike when a
        // later pass combines them (report::verdict::judge_stages).
        pass_weights: if passes > 1 { vec![1.0; passes as usize] } else { Vec::new() },
        doctor: serde_json::to_value(&findings.json)?,
        steps,
        notes: Vec::new(),
        findings: None,
    };
    lab.save(&out)?;
    execute(a, lab, &out, &lock, 0.0)
}

/// Runs what `lab` has not run yet, under `lock`: the first pass's planned
/// steps, the rest of a later pass cut midway, then the later passes while
/// the budget lasts; `spent` seconds of it went to the steps already run
/// (a resumed lab). Then the report.
fn execute(a: &LabArgs, lab: Lab, out: &Path, lock: &sandbox::runlock::RunLock, spent: f64) -> anyhow::Result<()> {
    let budget = lab.budget_s;
    let started = Instant::now();
    let t0 = Duration::try_from_secs_f64(spent).ok().and_then(|d| started.checked_sub(d)).unwrap_or(started);
    let lock_env = lock.for_child();
    let mut run = Runner {
        exe: std::env::current_exe().context("finding the pagelab binary")?,
        out: out.to_path_buf(),
        progress: Progress::new((budget.unwrap_or(lab.expect_s) - spent).max(1.0), a.json),
        lab,
        lock_env: (lock_env.0, lock_env.1),
        done_ms: 0,
    };
    // The first pass: its steps not run yet (all of them in a new lab).
    let first: Vec<usize> = (0..run.lab.steps.len())
        .filter(|&i| run.lab.steps[i].pass == 1 && run.lab.steps[i].state != StepState::Skipped)
        .collect();
    run.first_pass(&first, budget.map(|b| (b, t0)))?;
    // A later pass cut midway: the rest of it, as it was chosen.
    let last = run.lab.steps.iter().map(|s| s.pass).max().unwrap_or(1);
    if last > 1 {
        let rest: Vec<usize> = (0..run.lab.steps.len())
            .filter(|&i| run.lab.steps[i].pass == last && run.lab.steps[i].state == StepState::Planned)
            .collect();
        run.run_pass(&rest)?;
    }
    if let Some(b) = budget {
        run.later_passes(b, t0, last + 1)?;
    }
    run.progress.finish();
    let wall = spent + started.elapsed().as_secs_f64();
    let mut lab = run.lab;
    lab.ended_unix_ms = Some(now_ms());
    lab.wall_s = Some(wall);
    lab.save(out)?;
    finish(a, lab, out, wall, budget)
}

/// A lab directory's lab.json; `pagelab lab --json` prints the same document
/// with `dir` and `report_html` added (schema/lab.schema.json is generated
/// from this type).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct LabOutput {
    #[serde(flatten)]
    pub lab: Lab,
    /// The lab directory (lab --json only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Its report.html (lab --json only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_html: Option<String>,
}

/// `pagelab lab --dry-run --json`: the plan, as lab.json would begin it,
/// before anything runs (schema/lab-plan.schema.json is generated from this
/// type). The plan is made as a run makes it (the same machine, doctor and
/// budget), so a skipped step's reason is the one the run would record.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct LabPlan {
    /// Always "lab-plan".
    #[schemars(extend("const" = "lab-plan"))]
    pub kind: String,
    /// The lab's mode.
    #[schemars(extend("enum" = ["smoke", "quick", "full"]))]
    pub mode: String,
    pub root: bool,
    pub cpus: u32,
    pub ram_bytes: u64,
    /// The first pass's estimate, seconds.
    pub expect_s: f64,
    /// The budget, seconds (`--budget`, or the quick and smoke labs' own);
    /// absent where the plan runs once.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub budget_s: Option<f64>,
    /// The passes the budget plans before any data.
    #[schemars(range(min = 1))]
    pub passes: u32,
    /// `pagelab doctor --json`, taken before the plan
    /// (schema/doctor-output.schema.json).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub doctor: serde_json::Value,
    /// Each experiment's step: "planned", or "skipped" with its reason.
    pub steps: Vec<Step>,
}

/// The report, the summary (or lab.json on stdout), and the lab's exit: an
/// interruption or a failed step after everything is written.
fn finish(a: &LabArgs, mut lab: Lab, out: &Path, wall: f64, budget: Option<f64>) -> anyhow::Result<()> {
    let expect = lab.expect_s;
    let r = report::html::Report::load(out, report::html::Render::IfMissing, experiments::catalog())
        .map_err(anyhow::Error::msg)?;
    lab.findings = Some(serde_json::to_value(r.findings_doc())?);
    lab.save(out)?;
    let html = crate::report_cmd::write_html(&r, out)?;
    if a.json {
        crate::print_json(&LabOutput {
            lab: lab.clone(),
            dir: Some(out.display().to_string()),
            report_html: Some(html.display().to_string()),
        })?;
    } else {
        say::outln!();
        say::out!("{}", crate::report_cmd::summary_text(&r));
        let plan = match budget {
            Some(b) => format!("first pass planned ~{}, budget {}", fmt_s(expect), fmt_s(b)),
            None => format!("planned ~{}", fmt_s(expect)),
        };
        say::outln!("\nwall time {} ({plan}); report: {}", fmt_s(wall), html.display());
    }
    let states: Vec<StepState> = lab.steps.iter().map(|s| s.state).collect();
    if record::stop::requested() || states.contains(&StepState::Interrupted) {
        return Err(crate::interrupted());
    }
    if let Some(f) = lab.steps.iter().find(|s| s.state == StepState::Failed) {
        anyhow::bail!("{} failed: {}", f.experiment, f.reason.as_deref().unwrap_or("see its log"));
    }
    Ok(())
}

/// The plan, before anything runs.
fn print_plan(
    say: &dyn Fn(&str),
    m: &Machine,
    mode: &str,
    findings: &crate::doctor::Findings,
    steps: &[Step],
    expect: f64,
    budget: Option<(f64, u32)>,
) {
    say(&format!(
        "pagelab lab --{mode}: {} CPUs, {:.1} GiB RAM, {}",
        m.cpus,
        m.ram_bytes as f64 / (1u64 << 30) as f64,
        if m.root { "root" } else { "not root" }
    ));
    for c in findings.checks.iter().filter(|c| !c.affects.is_empty()) {
        say(&format!("  doctor: {}: {} (affects {})", c.name, c.detail, c.affects.join(", ")));
    }
    for s in steps {
        match s.state {
            StepState::Skipped => say(&format!("  skip {:<8} {}", s.experiment, s.reason.as_deref().unwrap_or(""))),
            _ => {
                say(&format!(
                    "  plan {:<8} ~{:>10}  pagelab {} {}",
                    s.experiment,
                    fmt_s(s.expect_s),
                    s.experiment,
                    s.argv().join(" ")
                ));
            }
        }
    }
    match budget {
        Some((b, passes)) if passes > 1 => say(&format!(
            "expected time: about {} ({} experiments), then up to {} more repeating what is still inconclusive (budget {})",
            fmt_s(expect),
            steps.len(),
            fmt_s(b - expect),
            fmt_s(b)
        )),
        Some((b, _)) => say(&format!(
            "expected time: about {} ({} experiments), one pass judged at 5 % (budget {}: the {} it leaves would buy \
             too little for a second pass)",
            fmt_s(expect),
            steps.len(),
            fmt_s(b),
            fmt_s((b - REPORT_RESERVE_S - expect).max(0.0))
        )),
        _ => say(&format!("expected time: about {} ({} experiments)", fmt_s(expect), steps.len())),
    }
}

/// Runs one experiment as a child process with its output in `log`, and shows its
/// progress against the plan's estimate. Forwards a stop to the child. Returns
/// its exit code (128 + the signal for a signal) and the signal that killed it.
fn run_child(
    exe: &Path,
    s: &Step,
    dir: &Path,
    log: &Path,
    p: &Progress,
    done_ms: u64,
    lock_env: (&str, String),
) -> anyhow::Result<(i32, Option<i32>)> {
    let f = record::safe::create(log).with_context(|| format!("creating {}", log.display()))?;
    // Its own process group, and told to stop if the lab dies (crate::child).
    let mut child = crate::child::command(exe)
        .arg(&s.experiment)
        .args(s.argv())
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(f.try_clone()?)
        .stderr(f)
        .env(lock_env.0, lock_env.1)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let expect_ms = (s.expect_s * 1e3) as u64;
    let bar = p.step_bar(&s.experiment, expect_ms);
    let mut next_line = Duration::from_secs(30);
    let status = crate::child::wait(&mut child, |el| {
        let el_ms = el.as_millis() as u64;
        if let Some(b) = &bar {
            // Hold at 99 % past the estimate: the ETA then says "any moment".
            b.set_position(el_ms.min(expect_ms * 99 / 100));
            if el_ms > expect_ms {
                b.set_message(format!("{} over the estimate", fmt_s((el_ms - expect_ms) as f64 / 1e3)));
            }
            p.overall(done_ms + el_ms.min(expect_ms), &s.experiment);
        } else if el >= next_line {
            p.line(&format!("    {}: {} elapsed of ~{}", s.experiment, fmt_s(el.as_secs_f64()), fmt_s(s.expect_s)));
            next_line += Duration::from_secs(30);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    use std::os::unix::process::ExitStatusExt;
    Ok((status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)), status.signal()))
}

pub(crate) mod resume;
#[cfg(test)]
mod tests;
