//! What every experiment command shares: a run directory, the mlocked sampler
//! with the host guard in its sink, events and results written as they happen,
//! and the final status.

use crate::kit::cli::{LockArgs, RunArgs};
use crate::kit::usage;
use probe::{CgroupTarget, Probe, Targets};
use record::rundir::{Event, RunDir, RunJson, RunStatus, State};
use record::sampler::{Sampler, SamplerConfig, Verdict};
use sandbox::guard::HostGuard;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct ExperimentRun {
    pub dir: RunDir,
    sampler: Option<Sampler>,
    /// Held for the whole run: no other pagelab run's store or figures mix with ours.
    _lock: sandbox::runlock::RunLock,
    /// Whether this run made its directory (it did not exist before).
    made_dir: bool,
    /// The samples so far, in memory, for experiments that analyse their own
    /// collector's record (`keep_samples`); None for the others.
    kept: Option<Arc<Mutex<Vec<probe::Sample>>>>,
}

/// Takes the machine's run lock for `what`, waiting for another run (and saying
/// so) unless `no_wait`; then undoes anything a run that died while we waited
/// left behind, so that `--backing auto` never mistakes it for the user's swap.
pub fn take_run_lock(what: &str, no_wait: bool) -> crate::Result<sandbox::runlock::RunLock> {
    let lock = sandbox::runlock::acquire(what, !no_wait, &record::stop::requested, &mut |h| {
        say::errln!("pagelab: waiting for {} to finish (--no-wait refuses instead)", h.describe());
    })
    .map_err(|e| if record::stop::requested() { crate::Error::Interrupted } else { crate::Error::Sandbox(e) })?;
    crate::kit::restore_stale_runs();
    Ok(lock)
}

impl ExperimentRun {
    /// Creates the run directory and starts sampling. The sampler aborts the run
    /// (a process-wide stop with the reason) if MemAvailable drops below the floor.
    /// The machine's environment and memory are read through `p`, the
    /// command's probe.
    pub fn start(
        experiment: &str,
        args: &RunArgs,
        config: &impl Serialize,
        p: &mut Probe,
    ) -> crate::Result<ExperimentRun> {
        Self::start_with(experiment, args, config, false, p)
    }

    /// [`ExperimentRun::start`], also keeping every sample in memory
    /// ([`ExperimentRun::samples`]) when `keep_samples`.
    pub fn start_with(
        experiment: &str,
        args: &RunArgs,
        config: &impl Serialize,
        keep_samples: bool,
        p: &mut Probe,
    ) -> crate::Result<ExperimentRun> {
        // Typed where it is made (each command's `Recorded`), a value here.
        let config = serde_json::to_value(config)?;
        let RunArgs { out, interval, host_floor, lock: LockArgs { no_wait }, .. } = args;
        let lock = take_run_lock(experiment, *no_wait)?;
        let env = p.environment();
        let damon: Vec<String> = env.damon.iter().filter(|k| k.moves_pages()).map(|k| k.describe()).collect();
        let meminfo = p.meminfo()?.unwrap_or_default();
        let guard = HostGuard::new(*host_floor, &meminfo);
        // Room for the run's own files and a minute of samples; a longer run
        // that fills the disk stops with the file it could not write.
        let at = out.clone().unwrap_or_else(|| PathBuf::from("runs"));
        let planned = crate::kit::plan::output_estimate(1, 60.0);
        sandbox::guard::check_disk(&at, planned, sandbox::guard::disk_free(&at), experiment)?;
        let made_dir = out.as_ref().is_none_or(|o| !o.exists());
        let dir =
            create_run_dir(out.as_deref(), "--out", RunJson::new(experiment, env!("CARGO_PKG_VERSION"), env, config))?;
        dir.update(|r| r.notes.push(format!("host guard floor: {} bytes of MemAvailable", guard.floor)))?;
        for k in damon {
            let msg = format!(
                "a DAMON worker that is not pagelab's is running ({k}): it may move this run's pages behind its back"
            );
            say::errln!("pagelab: {msg}");
            dir.update(|r| r.notes.push(msg))?;
        }
        let mut w = dir.sample_writer()?;
        let samples_at = dir.path().join("samples.jsonl");
        let kept = keep_samples.then(|| Arc::new(Mutex::new(Vec::new())));
        let keep = kept.clone();
        let sampler = Sampler::start(
            SamplerConfig { interval: *interval, ..Default::default() },
            Targets::default(),
            move |s| {
                if let Err(e) = w.write(s) {
                    let why = if e.kind() == std::io::ErrorKind::StorageFull {
                        "the disk is full".into()
                    } else {
                        e.to_string()
                    };
                    return Verdict::Abort(format!("{}: {why} (the samples before it are kept)", samples_at.display()));
                }
                if let Some(k) = &keep
                    && let Ok(mut v) = k.lock()
                {
                    v.push(s.clone());
                }
                match guard.check_sample(s) {
                    Some(reason) => Verdict::Abort(reason),
                    None => Verdict::Continue,
                }
            },
        )?;
        if let record::sampler::LockStatus::Failed(why) = sampler.lock_status() {
            say::errln!("pagelab: warning: {why}");
        }
        Ok(ExperimentRun { dir, sampler: Some(sampler), _lock: lock, made_dir, kept })
    }

    /// The time of the latest sample kept, when the run keeps them.
    pub fn last_sample_ns(&self) -> Option<u64> {
        self.kept.as_ref().and_then(|k| k.lock().ok().and_then(|v| v.last().map(|s| s.t_ns)))
    }

    /// The samples so far, when the run keeps them (`start_with(.., true)`);
    /// none otherwise.
    pub fn samples(&self) -> Vec<probe::Sample> {
        self.kept.as_ref().and_then(|k| k.lock().ok().map(|v| v.clone())).unwrap_or_default()
    }

    pub fn event(&self, kind: &str, name: &str, t_ns: u64, detail: serde_json::Value) {
        let _ = self.dir.event(&Event { t_ns, kind: kind.into(), name: name.into(), detail });
    }

    pub fn targets(&self, pids: Vec<i32>, cgroup: Option<CgroupTarget>, zram: Vec<u32>) {
        if let Some(s) = &self.sampler {
            s.set_targets(Targets { pids, cgroup, zram, smaps: false });
        }
    }

    /// Appends one result to run.json's `results` array, now.
    /// Appends a result to run.json, written at once. An error, naming the
    /// file, when it cannot be: the run then fails.
    pub fn push_result<T: serde::Serialize>(&self, r: &T) -> Result<(), workloads::observe::ExperimentError> {
        push_result(&self.dir, r)
    }

    /// A warning or a fact about the run: always on stderr (stdout may carry
    /// JSON), and kept in run.json.
    pub fn note(&self, msg: &str) {
        say::errln!("pagelab: {msg}");
        let _ = self.dir.update(|r| r.notes.push(msg.to_string()));
    }

    /// Stops the sampler and records the final status.
    pub fn finish(&mut self, status: RunStatus) -> crate::Result<()> {
        if let Some(s) = self.sampler.take() {
            let st = s.stop();
            self.dir.update(|r| r.sampler = Some(st))?;
        }
        self.dir.finish(status)?;
        Ok(())
    }

    /// The status for an outcome: complete, interrupted (with the stop reason) or failed.
    pub fn status_for<T>(r: &crate::Result<T>) -> RunStatus {
        match r {
            Ok(_) => RunStatus::new(State::Complete, None),
            Err(_) if record::stop::requested() => RunStatus::new(
                State::Interrupted,
                Some(record::stop::reason().unwrap_or_else(|| "interrupted by a signal".into())),
            ),
            Err(e) => RunStatus::new(State::Failed, Some(format!("{e:#}"))),
        }
    }
}

impl Drop for ExperimentRun {
    fn drop(&mut self) {
        if self.sampler.is_some() {
            let _ = self.finish(RunStatus::new(State::Failed, Some("ended without a status".into())));
        }
    }
}

/// Carries an experiment's events, targets, results and notes into its run
/// directory; `quiet` keeps the phase lines off stderr (under --json).
/// `E` is the experiment's run.json entry: the only type its results can be.
pub struct RunObserver<'a, E> {
    run: &'a ExperimentRun,
    quiet: bool,
    /// Every result written to run.json, as the experiment made it: what
    /// [`conclude`] renders, typed (run.json's JSON is the file's edge, not
    /// the way back).
    entries: Vec<E>,
}

impl<'a, E> RunObserver<'a, E> {
    pub fn new(run: &'a ExperimentRun, quiet: bool) -> Self {
        Self { run, quiet, entries: Vec::new() }
    }

    /// The results written, in order.
    pub fn into_entries(self) -> Vec<E> {
        self.entries
    }
}

impl<E: Serialize + Clone> workloads::observe::Observer for RunObserver<'_, E> {
    type Entry = E;
    fn event(&mut self, kind: &str, name: &str, t_ns: u64, detail: serde_json::Value) {
        self.run.event(kind, name, t_ns, detail.clone());
        if !self.quiet && kind == "phase_end" {
            let secs = detail["seconds"].as_f64().unwrap_or(0.0);
            say::errln!("  {name:<7} {secs:>9.4} s  major faults {}", detail["major_faults"].as_u64().unwrap_or(0));
        }
    }
    fn targets(&mut self, pids: Vec<i32>, cgroup: Option<probe::CgroupTarget>, zram: Vec<u32>) {
        self.run.targets(pids, cgroup, zram);
    }
    fn result(&mut self, r: &E) -> Result<(), workloads::observe::ExperimentError> {
        self.run.push_result(r)?;
        self.entries.push(r.clone());
        Ok(())
    }
    fn note(&mut self, msg: &str) {
        self.run.note(msg);
    }
    fn samples(&mut self) -> Vec<probe::Sample> {
        self.run.samples()
    }
    fn last_sample_ns(&mut self) -> Option<u64> {
        self.run.last_sample_ns()
    }
}

/// Appends a result to `dir`'s run.json, written at once; an error naming
/// the file when it cannot be.
fn push_result<T: serde::Serialize>(dir: &RunDir, r: &T) -> Result<(), workloads::observe::ExperimentError> {
    let v = serde_json::to_value(r)
        .map_err(|e| workloads::observe::ExperimentError::Record(format!("a result could not be recorded: {e}")))?;
    dir.update(|run| match &mut run.results {
        serde_json::Value::Array(a) => a.push(v),
        other => *other = serde_json::Value::Array(vec![v]),
    })
    .map_err(|e| {
        workloads::observe::ExperimentError::Record(format!(
            "writing a result to {}: {e}",
            dir.path().join("run.json").display()
        ))
    })
}

/// The `--json` document of an experiment whose results print as run.json
/// holds them.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Doc<R: Serialize> {
    pub experiment: &'static str,
    pub results: Vec<R>,
}

/// What an experiment prints with `--json`: its results (for eat, wscap and
/// rightsize, run.json's entries; for the others, each entry's result), the
/// experiment's own fields where it has more, and the
/// run directory.
#[derive(Serialize, schemars::JsonSchema)]
pub struct WithDir<D> {
    #[serde(flatten)]
    pub doc: D,
    /// The run directory.
    pub dir: String,
}

/// What every experiment command does after the run: record the status, render
/// the charts, then print JSON (`json_doc` of the results) or text (`text`).
///
/// `entries` are the results as the experiment made them
/// ([`RunObserver::into_entries`]): rendered and printed typed, not read
/// back from run.json's JSON (the record is read for its timeline, notes and
/// configuration, which the charts draw). run.json's results are still
/// parsed once, so that a run whose file `pagelab report` could not read
/// fails now, naming the file, rather than later.
pub fn conclude<T, S: report::experiment::Study, D: Serialize>(
    mut run: ExperimentRun,
    r: crate::Result<T>,
    entries: Vec<S::Entry>,
    json: bool,
    study: &S,
    json_doc: impl FnOnce(&[S::Entry]) -> D,
    text: impl FnOnce(&[S::Entry]) -> String,
) -> crate::Result<()> {
    run.finish(ExperimentRun::status_for(&r))?;
    // A refusal (bad input or environment, exit 2) before any result measured
    // nothing and changed nothing: it leaves no run directory behind either.
    if let Err(e) = &r
        && entries.is_empty()
        && run.made_dir
        && matches!(e.root(), crate::Error::Sandbox(s) if s.is_usage())
    {
        let _ = std::fs::remove_dir_all(run.dir.path());
        return r.map(|_| ());
    }
    // A run that failed keeps its own error (and exit code) even if its
    // record cannot be read back.
    let rec = match record::RunRecord::load(run.dir.path()) {
        Ok(rec) => rec,
        Err(e) => {
            r?;
            return Err(e.into());
        }
    };
    if let Err(e) = study.parse(rec.run.results.as_array().map_or(&[][..], Vec::as_slice)) {
        r?;
        return Err(crate::Error::Failed(format!("{}: {e}", run.dir.path().join("run.json").display())));
    }
    match study.render(&rec, &entries) {
        Ok(files) if !json => files.iter().for_each(|f| say::errln!("wrote {}", f.display())),
        Ok(_) => {}
        Err(e) => say::errln!("pagelab: warning: charts not written: {e}"),
    }
    if json {
        crate::kit::print_json(&WithDir { doc: json_doc(&entries), dir: run.dir.path().display().to_string() })?;
    } else if !entries.is_empty() {
        say::out!("{}", text(&entries));
        say::outln!("\nrun directory: {}", run.dir.path().display());
    }
    r.map(|_| ())
}
/// Creates the run directory: `--out` as given (flag named in every error, exit
/// 2), or a new `runs/<UTC timestamp>-<experiment>[-n]`, unique even for runs
/// started in the same second.
pub fn create_run_dir(out: Option<&Path>, flag: &str, run: RunJson) -> crate::Result<RunDir> {
    let path = match out {
        Some(p) => p.to_path_buf(),
        None => {
            let stem = format!("{}-{}", crate::kit::units::utc_stamp(), run.experiment);
            record::rundir::create_unique_dir(Path::new("runs"), &stem).map_err(|e| {
                usage(format!("cannot create the default run directory under runs/ ({e}); give one with {flag}"))
            })?
        }
    };
    RunDir::create(&path, run).map_err(|e| usage(format!("{flag} {}: {e}", path.display())))
}

/// A new default directory `runs/<UTC timestamp>-<what>[-n]` (for lab).
pub fn default_out(what: &str) -> crate::Result<PathBuf> {
    let stem = format!("{}-{what}", crate::kit::units::utc_stamp());
    record::rundir::create_unique_dir(Path::new("runs"), &stem)
        .map_err(|e| usage(format!("cannot create the default directory under runs/ ({e}); give one with --out")))
}

/// Finds a program the way execvp would, so a typo is a usage error before
/// anything is created.
pub fn resolve_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if name.contains('/') {
        let p = PathBuf::from(name);
        return exec(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| exec(p)))
        .unwrap_or(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_that_cannot_be_written_is_an_error_naming_run_json() {
        // A fresh directory of its own: nothing at a guessable name is
        // removed or written through.
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let tmp = scratch.path().join("run");
        let run = RunJson::new("eat", "test", probe::environment::Environment::default(), serde_json::json!({}));
        let dir = RunDir::create(&tmp, run).expect("a run directory");
        push_result(&dir, &serde_json::json!({"n": 1})).expect("written");
        let back: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.join("run.json")).expect("run.json")).expect("JSON");
        assert_eq!(back["results"], serde_json::json!([{"n": 1}]));
        // The directory gone: the write fails, and says where.
        std::fs::remove_dir_all(&tmp).expect("removed");
        let e = push_result(&dir, &serde_json::json!({"n": 2})).expect_err("nowhere to write");
        assert!(e.to_string().contains("run.json"), "{e}");
        assert!(matches!(e, workloads::observe::ExperimentError::Record(_)));
    }
}
