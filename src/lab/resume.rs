//! `pagelab lab --resume DIR`: a lab that was killed or stopped continues
//! where it was cut (issue 59). What lab.json fixed before the data (the
//! plan, the passes and their weights) is checked, not redone: a resumed lab
//! that planned differently would judge its findings against a plan it did not
//! run. Steps that finished are kept; a step cut midway runs again whole, its
//! partial run directory and log moved aside (kept, never deleted).

use super::{NOT_STARTED, Scale, execute, plan};
use crate::cli::LabArgs;
use crate::usage;
use report::lab::{Host, Lab, Resumed, Step, StepState};
use sha2::Digest;
use std::path::Path;

/// A digest of what a lab fixes before its data: the mode, `--only`, the
/// first pass as planned (each step's experiment, arguments, estimate and
/// state), the budget, the passes, and pagelab's version.
pub fn digest(mode: &str, only: &[String], steps: &[Step], budget: Option<f64>, passes: u32) -> String {
    let plan: Vec<(&str, Vec<String>, String, &str)> =
        steps.iter().map(|s| (s.experiment.as_str(), s.argv(), format!("{:.3}", s.expect_s), s.state.word())).collect();
    let doc = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "mode": mode,
        "only": only,
        "steps": plan,
        "budget_s": budget.map(|b| format!("{b:.3}")),
        "passes": passes,
    });
    let h = sha2::Sha256::digest(doc.to_string().as_bytes());
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// The host as a lab records it.
pub fn host_here() -> Host {
    let env = probe::Probe::default().environment();
    Host { cpu_model: env.cpu_model, cpus: env.cpus.max(1) as u32, kernel: env.kernel, ram_bytes: env.ram_bytes }
}

/// Why `lab` cannot be resumed here, in one line; None when it can. `now`
/// is this host, `planned` the first pass this pagelab plans here and
/// `digest_now` its digest.
pub fn refusal(lab: &Lab, now: &Host, planned: &[Step], digest_now: &str) -> Option<String> {
    let (Some(was), Some(digest)) = (&lab.host, &lab.plan_digest) else {
        return Some("its lab.json has no plan digest or host (a lab from before --resume); run a new lab".into());
    };
    let host = was.differences(now);
    if !host.is_empty() {
        return Some(format!(
            "the host has changed since the lab started: {}; its figures would mix two machines. Run a new lab",
            host.join("; ")
        ));
    }
    if digest != digest_now {
        let mut what: Vec<String> = Vec::new();
        for p in planned {
            match lab.steps.iter().find(|s| s.pass == 1 && s.experiment == p.experiment) {
                None => what.push(format!("{} is planned now, and was not", p.experiment)),
                // A step fitted to the budget runs fewer repeats by design; its other arguments still count.
                Some(s) if s.argv() != p.argv() && s.note.is_none() => what.push(format!(
                    "{} was planned as `{}`, now as `{}`",
                    p.experiment,
                    s.argv().join(" "),
                    p.argv().join(" ")
                )),
                Some(s) if s.state == StepState::Skipped && p.state != StepState::Skipped => {
                    what.push(format!("{} was skipped, and would run now", p.experiment))
                }
                _ => {}
            }
        }
        for s in lab.steps.iter().filter(|s| s.pass == 1) {
            if !planned.iter().any(|p| p.experiment == s.experiment) {
                what.push(format!("{} was planned, and is not now", s.experiment));
            }
        }
        if lab.pagelab_version != env!("CARGO_PKG_VERSION") {
            what.push(format!("pagelab was {}, is {}", lab.pagelab_version, env!("CARGO_PKG_VERSION")));
        }
        if what.is_empty() {
            what.push("its passes, budget or estimates".into());
        }
        return Some(format!(
            "the plan this pagelab makes here differs from the one the lab fixed before its data ({}); \
             its findings would be judged against a plan it did not run. Run a new lab",
            what.join("; ")
        ));
    }
    None
}

/// Whether step `s` is run (again) by a resume, and why.
pub fn to_rerun(s: &Step) -> Option<&'static str> {
    match s.state {
        StepState::Running => Some("cut midway when the lab was killed"),
        StepState::Interrupted => Some("interrupted midway"),
        StepState::Planned => Some("not started"),
        StepState::Skipped if s.reason.as_deref() == Some(NOT_STARTED) => Some("not started"),
        _ => None,
    }
}

/// The most seconds a step of a lab may say it took or was planned at (30
/// days): a larger figure is not a lab's.
const MAX_STEP_S: f64 = 30.0 * 86400.0;

/// The name the lab gives step `s`'s run directory and log.
fn step_name(s: &Step) -> String {
    if s.pass > 1 { format!("{}-pass{}", s.experiment, s.pass) } else { s.experiment.clone() }
}

/// A later pass's step as the lab plans one: `lab_more` of the first step
/// this pagelab plans for its experiment (`planned`), for the findings and
/// the 2 – 10 repeats its note names. None when the note names none of its
/// experiment's findings.
fn later_step(planned: &[Step], s: &Step) -> Option<Step> {
    let e = experiments::ALL.iter().find(|e| e.name() == s.experiment)?;
    let first = planned.iter().find(|f| f.experiment == s.experiment && f.state == StepState::Planned)?;
    // "pass 2: 3 more repeat(s) for eat.x, eat.y"
    let (k, ids) = s.note.as_deref()?.split_once(": ")?.1.split_once(" more repeat(s) for ")?;
    let k: u32 = k.parse().ok().filter(|k| (2..=10).contains(k))?;
    let claims = e.report.claims();
    let ids: Vec<&'static str> =
        ids.split(", ").map(|id| claims.iter().find(|c| c.id == id).map(|c| c.id)).collect::<Option<_>>()?;
    let mut more = (e.lab_more)(first, &ids, k)?;
    (more.pass, more.note) = (s.pass, s.note.clone());
    Some(more)
}

/// Whether first-pass step `s` is `plan` as the lab ran it: the same
/// arguments, or fitted to the budget (an even, smaller `--repeat`, and a note).
fn as_planned(s: &Step, plan: &Step) -> bool {
    if s.args != plan.args {
        return false;
    }
    match (plan.repeat, s.repeat) {
        (n, m) if n == m => true,
        (Some(n), Some(m)) => m % 2 == 0 && (2..n).contains(&m) && s.note.is_some(),
        _ => false,
    }
}

/// Whether what `lab` holds is what pagelab plans, and nothing a lab.json
/// could be made to say (a resume runs as root): every step of a known
/// experiment, in its own directory, with figures a lab can have; the first
/// pass this pagelab's plan here (`planned`, whose digest matched), step by
/// step, as planned or fitted to the budget, skipped where the plan skips;
/// a later pass's step to run exactly what the lab plans for the findings it
/// names. Why not, in one line.
pub fn check_steps(lab: &Lab, planned: &[Step]) -> Result<(), String> {
    if lab.steps.len() > report::lab::MAX_STEPS {
        return Err(format!("{} steps; a lab has at most {}", lab.steps.len(), report::lab::MAX_STEPS));
    }
    let first: Vec<&Step> = lab.steps.iter().filter(|s| s.pass == 1).collect();
    if first.len() != planned.len() || first.iter().zip(planned).any(|(a, b)| a.experiment != b.experiment) {
        return Err("its first pass is not the plan its digest names".into());
    }
    for (s, p) in first.iter().zip(planned) {
        let skipped_by_plan = s.state == StepState::Skipped && s.reason.as_deref() != Some(NOT_STARTED);
        if skipped_by_plan != (p.state == StepState::Skipped) || !as_planned(s, p) {
            return Err(format!("its step {} is not the one the plan makes", s.experiment));
        }
    }
    let mut names = std::collections::HashSet::new();
    for (i, s) in lab.steps.iter().enumerate() {
        let n = i + 1;
        if !experiments::ALL.iter().any(|e| e.name() == s.experiment) {
            return Err(format!("step {n} is of no experiment pagelab knows"));
        }
        if s.pass == 0 || s.pass > lab.passes.max(1) {
            return Err(format!("step {n} is of pass {}; the lab planned {}", s.pass, lab.passes));
        }
        let figures = [Some(s.expect_s), s.seconds];
        if figures.into_iter().flatten().any(|x| !(0.0..=MAX_STEP_S).contains(&x)) {
            return Err(format!("step {n} ({}) has a time no lab step takes", s.experiment));
        }
        if !names.insert(step_name(s)) {
            return Err(format!("step {n} ({}) is there twice", step_name(s)));
        }
        if s.dir.as_ref().is_some_and(|d| d.as_os_str() != step_name(s).as_str()) {
            return Err(format!("step {n} ({}) names a directory the lab does not give it", s.experiment));
        }
        let runs = s.state == StepState::Planned || to_rerun(s).is_some();
        if s.pass > 1 && runs && later_step(planned, s).is_none_or(|m| m.argv() != s.argv()) {
            return Err(format!("step {n} ({}, pass {}) is not what the lab plans for it", s.experiment, s.pass));
        }
    }
    Ok(())
}

/// The lab directory as a resume may write in it as root: a directory (not
/// a link) of this user's that nobody else may write, and so its `logs`.
/// Another user's directory could have links planted in it between a check
/// and a write.
pub(crate) fn check_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid takes nothing and cannot fail.
    let me = unsafe { libc::geteuid() };
    for d in [dir.to_path_buf(), dir.join("logs")] {
        let m = match d.symlink_metadata() {
            Ok(m) => m,
            Err(_) if d != dir => continue,
            Err(e) => return Err(format!("{}: {e}", d.display())),
        };
        if !m.file_type().is_dir() {
            return Err(format!("{} is not a directory (a link is not followed)", d.display()));
        }
        if m.uid() != me || m.mode() & 0o022 != 0 {
            return Err(format!(
                "{} belongs to uid {} or may be written by others (mode {:o}): a lab others can change is not \
                 resumed",
                d.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Renames `from` to `to` unless `to` exists (renameat2's
/// RENAME_NOREPLACE): a name planted in between is not replaced.
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths; no descriptor is used (AT_FDCWD).
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Resets the steps a resume runs (again) in `lab`: what their names hold in
/// `dir` (a cut step's run directory and log, whatever lab.json says) moved
/// aside as `NAME.cut-K`, kept; a first-pass step as `planned` plans it now
/// (the pace fits it again), a later pass's as the lab plans it. Every name
/// is checked before anything is renamed: a link there is refused.
fn reset_cut_steps(lab: &mut Lab, dir: &Path, planned: &[Step]) -> anyhow::Result<Resumed> {
    let mut r = Resumed { at_unix_ms: super::now_ms(), ..Resumed::default() };
    let mut moves = Vec::new();
    for s in lab.steps.iter().filter(|s| to_rerun(s).is_some() || s.state == StepState::Planned) {
        let name = step_name(s);
        for (p, ext) in [(dir.join(&name), ""), (dir.join("logs").join(format!("{name}.log")), ".log")] {
            match p.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    anyhow::bail!("{}: a symbolic link where the lab writes a step; nothing was moved", p.display())
                }
                Ok(_) => moves.push((p, ext)),
                Err(_) => {}
            }
        }
    }
    for (p, ext) in moves {
        let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let to = (1..1000)
            .map(|k| p.with_file_name(format!("{stem}.cut-{k}{ext}")))
            .find(|t| rename_noreplace(&p, t).is_ok())
            .ok_or_else(|| anyhow::anyhow!("{}: could not be moved aside", p.display()))?;
        r.set_aside.push(to.strip_prefix(dir).map(Path::to_path_buf).unwrap_or(to));
    }
    let mut k = 0;
    for s in &mut lab.steps {
        let plan = (s.pass == 1).then(|| planned.get(k)).flatten();
        k += usize::from(s.pass == 1);
        let why = match to_rerun(s) {
            Some(why) => why,
            None => continue,
        };
        let again = match plan {
            Some(p) => Some(p.clone()),
            None => later_step(planned, s),
        };
        if let Some(p) = again {
            (s.args, s.repeat, s.expect_s, s.note) = (p.args, p.repeat, p.expect_s, p.note);
        }
        r.rerun.push(format!("{} ({why})", step_name(s)));
        s.state = StepState::Planned;
        s.reason = None;
        s.seconds = None;
        s.exit_code = None;
        s.dir = None;
    }
    Ok(r)
}

pub fn run(a: &LabArgs, dir: &Path) -> anyhow::Result<()> {
    let bad = |why: String| usage(format!("--resume {}: {why}", dir.display()));
    // The lock first: a second resume waiting for it reads lab.json as the
    // first left it. A child still leaving after the kill holds the lock
    // until it has restored what it changed.
    let lock = crate::experiment::take_run_lock("lab", a.lock.no_wait)?;
    check_dir(dir).map_err(bad)?;
    let mut lab = Lab::load(dir).map_err(|e| bad(e.to_string()))?;
    if lab.plan_digest.is_none() {
        return Err(bad("its lab.json has no plan digest (a lab from before --resume); run a new lab".into()));
    }
    if lab.live() {
        return Err(bad(format!(
            "the lab is still running (pid {}); stop it first, or let it finish",
            lab.pid.unwrap_or(0)
        )));
    }
    if !lab.steps.iter().any(|s| to_rerun(s).is_some()) {
        return Err(bad("every step has finished (complete, failed or skipped by the plan); nothing to resume".into()));
    }
    let scale = match lab.mode.as_str() {
        "quick" => Scale::Quick,
        "smoke" => Scale::Smoke,
        "full" => Scale::Full,
        m => return Err(bad(format!("lab.json has mode '{m}': expected quick, smoke or full"))),
    };
    let m = super::Machine::here();
    // The budget it ran under (a quick lab's own 300 s lets in no more than none).
    let planned = plan(&m, scale, lab.budget_s, &lab.only);
    let passes = super::passes_for(lab.budget_s, &planned);
    let now = digest(&lab.mode, &lab.only, &planned, lab.budget_s, passes);
    if let Some(why) = refusal(&lab, &host_here(), &planned, &now) {
        return Err(bad(why));
    }
    let weights = if passes > 1 { vec![1.0; passes as usize] } else { Vec::new() };
    if let Err(why) = check_steps(&lab, &planned).and_then(|()| {
        (lab.pass_weights == weights).then_some(()).ok_or_else(|| "its pass weights are not the plan's".to_string())
    }) {
        return Err(bad(format!("lab.json: {why}; run a new lab")));
    }
    let done = reset_cut_steps(&mut lab, dir, &planned)?;
    let spent: f64 = lab.steps.iter().filter_map(|s| s.seconds).sum();
    let say = |s: &str| if a.json { say::errln!("{s}") } else { say::outln!("{s}") };
    say(&format!(
        "pagelab lab --resume {}: {} kept, running again: {}",
        dir.display(),
        lab.steps.iter().filter(|s| s.state != StepState::Planned).count(),
        done.rerun.join(", ")
    ));
    lab.notes.push(format!(
        "resumed {}; run again whole: {}{}",
        report::html::utc(done.at_unix_ms),
        done.rerun.join(", "),
        if done.set_aside.is_empty() {
            String::new()
        } else {
            format!(
                " (what they left moved aside, kept: {})",
                done.set_aside.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        }
    ));
    lab.resumed.push(done);
    let (pid, start) = record::rundir::this_process();
    lab.pid = Some(pid);
    lab.pid_starttime = start;
    lab.command_line = std::env::args().collect();
    lab.ended_unix_ms = None;
    lab.wall_s = None;
    lab.findings = None;
    lab.save(dir)?;
    execute(a, lab, dir, &lock, spent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(e: &str, args: &[&str], state: StepState) -> Step {
        Step { state, ..Step::from_argv(e, args.iter().map(|s| s.to_string()).collect(), 10.0) }
    }

    fn host() -> Host {
        Host { cpu_model: "AMD EPYC".into(), cpus: 2, kernel: "6.1.0".into(), ram_bytes: 24 << 30 }
    }

    fn lab_of(steps: Vec<Step>) -> Lab {
        let plan: Vec<Step> = steps.iter().map(|s| Step { state: StepState::Planned, ..s.clone() }).collect();
        let mut l: Lab = serde_json::from_value(serde_json::json!({
            "format": record::rundir::FORMAT_VERSION, "kind": "lab", "mode": "smoke",
            "pagelab_version": env!("CARGO_PKG_VERSION"), "command_line": [], "started_unix_ms": 0,
            "root": true, "cpus": 2, "ram_bytes": 1, "expect_s": 20.0, "doctor": null, "steps": []
        }))
        .unwrap();
        l.plan_digest = Some(digest("smoke", &[], &plan, None, 1));
        l.host = Some(host());
        l.steps = steps;
        l
    }

    #[test]
    fn the_digest_moves_with_the_plan_and_only_with_it() {
        let a = vec![step("eat", &["--repeat", "2"], StepState::Planned)];
        let b = vec![step("eat", &["--repeat", "3"], StepState::Planned)];
        assert_eq!(digest("smoke", &[], &a, None, 1), digest("smoke", &[], &a.clone(), None, 1));
        assert_ne!(digest("smoke", &[], &a, None, 1), digest("smoke", &[], &b, None, 1));
        assert_ne!(digest("smoke", &[], &a, None, 1), digest("smoke", &[], &a, None, 2));
        assert_ne!(digest("smoke", &[], &a, Some(60.0), 1), digest("smoke", &[], &a, None, 1));
        assert_eq!(digest("smoke", &[], &a, None, 1).len(), 64);
    }

    #[test]
    fn a_resume_is_refused_naming_what_changed() {
        let planned = vec![step("eat", &["--repeat", "2"], StepState::Planned)];
        let lab = lab_of(vec![step("eat", &["--repeat", "2"], StepState::Running)]);
        let same = digest("smoke", &[], &planned, None, 1);
        assert_eq!(refusal(&lab, &host(), &planned, &same), None);
        // Another kernel.
        let other = Host { kernel: "6.12.0".into(), ..host() };
        let why = refusal(&lab, &other, &planned, &same).unwrap();
        assert!(why.contains("the kernel was 6.1.0, is 6.12.0"), "{why}");
        // Another plan: the step's arguments are named.
        let now = vec![step("eat", &["--repeat", "4"], StepState::Planned)];
        let why = refusal(&lab, &host(), &now, &digest("smoke", &[], &now, None, 1)).unwrap();
        assert!(why.contains("eat was planned as `--repeat 2`, now as `--repeat 4`"), "{why}");
        // An experiment more.
        let more = vec![planned[0].clone(), step("heap", &[], StepState::Planned)];
        let why = refusal(&lab, &host(), &more, &digest("smoke", &[], &more, None, 1)).unwrap();
        assert!(why.contains("heap is planned now, and was not"), "{why}");
        // A lab from before --resume has no digest.
        let mut old = lab.clone();
        old.plan_digest = None;
        assert!(refusal(&old, &host(), &planned, &same).unwrap().contains("no plan digest"));
    }

    /// A lab.json is input, and a resume runs as root what it names: only
    /// what pagelab itself plans may run.
    #[test]
    fn a_crafted_lab_json_cannot_choose_what_a_resume_runs() {
        let m = super::super::Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        let planned = plan(&m, Scale::Smoke, None, &["eat".to_string()]);
        let lab = lab_of(planned.clone());
        assert_eq!(check_steps(&lab, &planned), Ok(()));
        // A later pass's step as the lab plans it, for a finding of eat's.
        let eat = experiments::ALL.iter().find(|e| e.name() == "eat").unwrap();
        let claim = eat.report.claims()[0].id;
        let mut more = (eat.lab_more)(&planned[0], &[claim], 3).unwrap();
        (more.pass, more.note) = (2, Some(format!("pass 2: 3 more repeat(s) for {claim}")));
        let mut ok = lab.clone();
        ok.passes = 2;
        ok.steps.push(more.clone());
        assert_eq!(check_steps(&ok, &planned), Ok(()));
        // The same step with an argument of its own: refused.
        let mut bad = ok.clone();
        bad.steps[1].args.push("--swapfile-dir=/etc".into());
        assert!(check_steps(&bad, &planned).unwrap_err().contains("not what the lab plans"));
        // A finding that is not eat's, or none.
        let mut bad = ok.clone();
        bad.steps[1].note = Some("pass 2: 3 more repeat(s) for heap.x".into());
        assert!(check_steps(&bad, &planned).is_err());
        // An experiment pagelab does not know, a directory it does not give.
        let mut bad = lab.clone();
        bad.steps.push(Step { experiment: "../../etc/cron".into(), pass: 2, ..more.clone() });
        assert!(check_steps(&bad, &planned).unwrap_err().contains("no experiment pagelab knows"));
        let mut bad = lab.clone();
        bad.steps[0].dir = Some("../outside".into());
        assert!(check_steps(&bad, &planned).unwrap_err().contains("a directory the lab does not give it"));
        // A first pass that is not the plan's: another experiment, a kept
        // step with arguments of its own, a step the plan skips made to run.
        let mut bad = lab.clone();
        bad.steps[0].experiment = "heap".into();
        assert!(check_steps(&bad, &planned).is_err());
        let mut bad = ok.clone();
        bad.steps[0].state = StepState::Complete;
        bad.steps[0].args.extend(["--".into(), "/bin/sh".into()]);
        assert!(check_steps(&bad, &planned).unwrap_err().contains("not the one the plan makes"));
        let skip = plan(&m, Scale::Quick, None, &["thrash".to_string()]);
        assert_eq!(skip[0].state, StepState::Skipped, "the quick lab skips thrash");
        let mut bad = lab_of(skip.clone());
        bad.steps[0].state = StepState::Planned;
        assert!(check_steps(&bad, &skip).is_err());
        // Fitted to the budget: an even, smaller --repeat with its note.
        let mut fitted = lab.clone();
        let n = experiments::kit::plan::repeat_of(&planned[0]).unwrap();
        assert!(n >= 2);
        fitted.steps[0].repeat = Some(1);
        fitted.steps[0].note = Some("fewer".into());
        assert!(check_steps(&fitted, &planned).is_err(), "an odd count is no fit");
        // Figures no lab has, a pass it did not plan, a step twice.
        let mut bad = lab.clone();
        bad.steps[0].seconds = Some(1e20);
        assert!(check_steps(&bad, &planned).unwrap_err().contains("a time no lab step takes"));
        let mut bad = ok.clone();
        bad.steps[1].pass = 0;
        assert!(check_steps(&bad, &planned).is_err());
        let mut bad = ok.clone();
        bad.steps.push(bad.steps[1].clone());
        assert!(check_steps(&bad, &planned).unwrap_err().contains("there twice"));
        // A first-pass step runs again as planned now, whatever lab.json says.
        let mut cut = lab.clone();
        cut.steps[0].args = vec!["--size".into(), "1TiB".into()];
        cut.steps[0].state = StepState::Running;
        let d = tempfile::tempdir().unwrap();
        reset_cut_steps(&mut cut, d.path(), &planned).unwrap();
        assert_eq!(cut.steps[0].args, planned[0].args);
    }

    #[test]
    fn a_lab_directory_others_may_write_is_not_resumed() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        assert_eq!(check_dir(d.path()), Ok(()));
        std::fs::create_dir(d.path().join("logs")).unwrap();
        std::fs::set_permissions(d.path().join("logs"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_dir(d.path()).unwrap_err().contains("may be written by others"));
        std::fs::remove_dir(d.path().join("logs")).unwrap();
        std::os::unix::fs::symlink("/tmp", d.path().join("logs")).unwrap();
        assert!(check_dir(d.path()).unwrap_err().contains("not a directory"));
        let link = d.path().join("lab");
        std::os::unix::fs::symlink(tempfile::tempdir().unwrap().path(), &link).unwrap();
        assert!(check_dir(&link).is_err());
    }

    #[test]
    fn only_cut_or_unstarted_steps_run_again() {
        let mut skipped_by_plan = step("thrash", &[], StepState::Skipped);
        skipped_by_plan.reason = Some("needs root".into());
        let mut skipped_by_stop = step("heap", &[], StepState::Skipped);
        skipped_by_stop.reason = Some(NOT_STARTED.into());
        for (s, again) in [
            (step("eat", &[], StepState::Running), true),
            (step("eat", &[], StepState::Interrupted), true),
            (step("eat", &[], StepState::Planned), true),
            (skipped_by_stop, true),
            (step("eat", &[], StepState::Complete), false),
            (step("eat", &[], StepState::Failed), false),
            (skipped_by_plan, false),
        ] {
            assert_eq!(to_rerun(&s).is_some(), again, "{:?} {:?}", s.state, s.reason);
        }
    }

    #[test]
    fn a_cut_steps_directory_is_moved_aside_and_a_link_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("eat")).unwrap();
        std::fs::create_dir_all(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("logs/eat.log"), "half").unwrap();
        let mut cut = step("eat", &[], StepState::Running);
        cut.dir = Some("eat".into());
        cut.seconds = Some(3.0);
        let mut lab = lab_of(vec![step("heap", &[], StepState::Complete), cut]);
        let r = reset_cut_steps(&mut lab, d.path(), &[]).unwrap();
        assert_eq!(r.rerun, ["eat (cut midway when the lab was killed)"]);
        assert!(d.path().join("eat.cut-1").is_dir() && !d.path().join("eat").exists());
        assert_eq!(std::fs::read_to_string(d.path().join("logs/eat.cut-1.log")).unwrap(), "half");
        assert_eq!((lab.steps[1].state, lab.steps[1].seconds, &lab.steps[1].dir), (StepState::Planned, None, &None));
        assert_eq!(lab.steps[0].state, StepState::Complete);
        // A link where the step's directory was: refused, and left as it is.
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join("wscap")).unwrap();
        let mut cut = step("wscap", &[], StepState::Interrupted);
        cut.dir = Some("wscap".into());
        let mut lab = lab_of(vec![cut]);
        let e = reset_cut_steps(&mut lab, d.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("a symbolic link"), "{e}");
        assert!(d.path().join("wscap").symlink_metadata().unwrap().file_type().is_symlink());
    }
}
