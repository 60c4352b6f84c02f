//! `lab.json`: what `pagelab lab` planned, ran and skipped. A lab directory holds
//! it, `doctor.json`, one run directory per experiment, their logs and
//! `report.html`.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "lab.json";

/// The most steps a lab.json may have: every experiment in each of a few
/// passes, with room to spare. A larger one is refused, not read.
pub const MAX_STEPS: usize = 64;

/// The most passes a lab.json may plan (pagelab plans two): each pass is a
/// judging round and an entry of `alpha_by_pass`, so a crafted count (issue
/// 46: 4294967295 made `report` allocate 32 GiB and abort) is refused, not read.
pub const MAX_PASSES: u32 = 8;

/// Whether a step's `dir` names a place inside the lab directory: one plain
/// name (no `/`, no `..`, no root, no `.`; pagelab names its steps `eat`,
/// `eat-pass2`), so that a lab.json from elsewhere cannot make pagelab read or
/// write outside it. With one component the only link on the way is the name
/// itself, which the loader refuses too (issue 46 item 2: `x/sub` with `x` a
/// link to a directory outside the lab was read and written through).
///
/// The raw name is checked, not its components: `Path::components` drops a
/// trailing `/` or `/.`, and the kernel follows a link at a name with a
/// trailing slash even under `O_NOFOLLOW`, so `eat/` (with `eat` a link) was
/// read through.
pub fn inside(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let b = dir.as_os_str().as_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    Planned,
    Running,
    Complete,
    Interrupted,
    Failed,
    Skipped,
}

impl StepState {
    pub fn word(self) -> &'static str {
        match self {
            StepState::Planned => "planned",
            StepState::Running => "running",
            StepState::Complete => "complete",
            StepState::Interrupted => "interrupted",
            StepState::Failed => "failed",
            StepState::Skipped => "skipped",
        }
    }
}

/// A lab's step: an experiment's command, with its `--repeat` typed (what
/// a later pass, the budget's fit, a resume and the lab's simulation read
/// and change); lab.json keeps it as [`StepFile`], its whole command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StepFile", into = "StepFile")]
pub struct Step {
    pub experiment: String,
    /// The arguments after `pagelab <experiment>` but `--repeat` (without --out).
    pub args: Vec<String>,
    /// `--repeat N`: the step's repeats, where it takes any.
    pub repeat: Option<u32>,
    /// The plan's estimate of the wall time, seconds.
    pub expect_s: f64,
    pub state: StepState,
    /// Why it was skipped, failed or interrupted; or what ran only in part.
    pub reason: Option<String>,
    /// Wall time, seconds.
    pub seconds: Option<f64>,
    /// The run directory, relative to the lab directory.
    pub dir: Option<PathBuf>,
    pub exit_code: Option<i32>,
    /// What ran only in part on this machine, and why (e.g. no store without root).
    pub note: Option<String>,
    /// The lab's pass it belongs to: 1, the plan; 2 and on, the extra repeats a
    /// budget bought for findings the first pass left inconclusive.
    pub pass: u32,
}

/// A step as lab.json keeps it: its whole command line after `pagelab
/// <experiment>`, the repeats among them (the lab's `Step` types them).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "Step")]
pub struct StepFile {
    pub experiment: String,
    /// The arguments after `pagelab <experiment>` (without --out), `--repeat N` among them.
    pub args: Vec<String>,
    /// The plan's estimate of the wall time, seconds.
    pub expect_s: f64,
    pub state: StepState,
    /// Why it was skipped, failed or interrupted; or what ran only in part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall time, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The run directory, relative to the lab directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What ran only in part on this machine, and why (e.g. no store without root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The lab's pass it belongs to: 1, the plan; 2 and on, the extra repeats a
    /// budget bought for findings the first pass left inconclusive.
    #[serde(default = "first_pass", skip_serializing_if = "is_first_pass")]
    #[schemars(range(min = 1))]
    pub pass: u32,
}

impl Step {
    /// A planned step: `experiment`'s `args` (without `--repeat`) and its
    /// repeats, expected to take `expect_s` seconds.
    pub fn planned(experiment: &str, args: Vec<String>, repeat: Option<u32>, expect_s: f64) -> Step {
        Step {
            experiment: experiment.into(),
            args,
            repeat,
            expect_s,
            state: StepState::Planned,
            reason: None,
            seconds: None,
            dir: None,
            exit_code: None,
            note: None,
            pass: 1,
        }
    }

    /// A planned step from an experiment's whole command line (`argv` after
    /// `pagelab <experiment>`): its `--repeat N`, where it has one with a
    /// count, typed. The edge where a command line becomes a step (lab.json,
    /// tests).
    pub fn from_argv(experiment: &str, argv: Vec<String>, expect_s: f64) -> Step {
        Step::from(StepFile::from(Step::planned(experiment, argv, None, expect_s)))
    }

    /// Its whole command line after `pagelab <experiment>` (without --out):
    /// the arguments, then `--repeat N`.
    pub fn argv(&self) -> Vec<String> {
        let mut v = self.args.clone();
        if let Some(n) = self.repeat {
            v.extend(["--repeat".to_string(), n.to_string()]);
        }
        v
    }
}

impl From<StepFile> for Step {
    fn from(f: StepFile) -> Step {
        let mut args = f.args;
        let at = args
            .iter()
            .position(|a| a == "--repeat")
            .filter(|&i| args.get(i + 1).is_some_and(|n| n.parse::<u32>().is_ok()));
        let repeat = at.map(|i| {
            let n = args[i + 1].parse().expect("checked above");
            args.drain(i..i + 2);
            n
        });
        Step {
            experiment: f.experiment,
            args,
            repeat,
            expect_s: f.expect_s,
            state: f.state,
            reason: f.reason,
            seconds: f.seconds,
            dir: f.dir,
            exit_code: f.exit_code,
            note: f.note,
            pass: f.pass,
        }
    }
}

impl From<Step> for StepFile {
    fn from(s: Step) -> StepFile {
        StepFile {
            args: s.argv(),
            experiment: s.experiment,
            expect_s: s.expect_s,
            state: s.state,
            reason: s.reason,
            seconds: s.seconds,
            dir: s.dir,
            exit_code: s.exit_code,
            note: s.note,
            pass: s.pass,
        }
    }
}

impl schemars::JsonSchema for Step {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        StepFile::schema_name()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        StepFile::json_schema(g)
    }
}

fn first_pass() -> u32 {
    1
}

fn is_first_pass(p: &u32) -> bool {
    *p == 1
}

/// One of `pagelab doctor --json`'s checks, as lab.json keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DoctorCheck {
    pub name: String,
    /// available, missing, needs_root or info.
    pub status: String,
    pub detail: String,
    /// The experiments (or their modes) that cannot run fully without it.
    pub affects: Vec<String>,
}

/// The part of `pagelab doctor --json` the report reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Doctor {
    pub checks: Vec<DoctorCheck>,
    /// The machine's noise, as doctor measured it before the lab.
    pub noise: Option<Noise>,
}

/// How much a fixed CPU loop's time varied over a few runs (doctor's `noise`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Noise {
    pub cv: Option<f64>,
    /// The slowest run ÷ the fastest.
    pub max_over_min: Option<f64>,
    pub runs: Option<u64>,
    /// The share of CPU time the hypervisor took.
    pub steal_fraction: Option<f64>,
}

impl Doctor {
    /// Reads lab.json's `doctor` (no checks where it has none, or another shape).
    pub fn from_json(v: &serde_json::Value) -> Doctor {
        let mut d: Doctor = record::results::typed_one(v).unwrap_or_default();
        // The noise on its own: a check of another shape does not lose it.
        d.noise = d.noise.or_else(|| record::results::typed_one(&v["noise"]));
        d
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lab {
    pub format: u32,
    pub kind: String,
    /// The lab's mode.
    #[schemars(extend("enum" = ["smoke", "quick", "full"]))]
    pub mode: String,
    pub pagelab_version: String,
    pub command_line: Vec<String>,
    pub started_unix_ms: u64,
    #[serde(default)]
    pub ended_unix_ms: Option<u64>,
    #[serde(default)]
    pub wall_s: Option<f64>,
    pub root: bool,
    pub cpus: u32,
    pub ram_bytes: u64,
    /// The plan's total estimate, seconds (the first pass).
    pub expect_s: f64,
    /// `--budget`, seconds: the first pass, then extra repeats of what it left
    /// inconclusive while time is left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub budget_s: Option<f64>,
    /// The passes planned before any data: the family-wise error is split
    /// between them ([`crate::verdict::alpha_by_pass`]).
    #[serde(default = "first_pass")]
    #[schemars(range(min = 1))]
    pub passes: u32,
    /// The weight of each pass's p-values when a later pass combines them
    /// (inverse normal), written before any data; empty in labs from before
    /// the combination, which read as equal weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_weights: Vec<f64>,
    /// `pagelab doctor --json`, taken before the plan
    /// (schema/doctor-output.schema.json).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub doctor: serde_json::Value,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The lab's own process (pid and start time in clock ticks since boot):
    /// while it lives, a step marked running is running; once it is gone, that
    /// step was killed with it (issue 59). Absent in labs from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_starttime: Option<u64>,
    /// `--only`, as given: what `--resume` plans again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// A digest of the first pass as planned, with the passes and their
    /// weights, written before any data: `--resume` refuses a plan that
    /// differs from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    /// The host the plan was made on: `--resume` refuses another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// Each time `pagelab lab --resume` continued this lab.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumed>,
    /// The findings as the report judged them when the lab ended
    /// ([`crate::verdict::Findings`]); absent in labs from before verdicts by interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::verdict::Findings<'static>>")]
    pub findings: Option<serde_json::Value>,
}

/// The host a lab's plan was made on: the facts that move its figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Host {
    pub cpu_model: String,
    pub cpus: u32,
    pub kernel: String,
    pub ram_bytes: u64,
}

impl Host {
    /// What differs between the host a lab was planned on (`self`) and
    /// `now`, in words; empty when nothing does.
    pub fn differences(&self, now: &Host) -> Vec<String> {
        let mut d = Vec::new();
        let mut one = |what: &str, was: String, is: String| {
            if was != is {
                d.push(format!("{what} was {was}, is {is}"));
            }
        };
        one("the CPU model", format!("'{}'", self.cpu_model), format!("'{}'", now.cpu_model));
        one("the CPU count", self.cpus.to_string(), now.cpus.to_string());
        one("the kernel", self.kernel.clone(), now.kernel.clone());
        one("the memory", format!("{} bytes", self.ram_bytes), format!("{} bytes", now.ram_bytes));
        d
    }
}

/// One `pagelab lab --resume` of a lab.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resumed {
    pub at_unix_ms: u64,
    /// The steps run again whole, each with why (`eat: killed midway`).
    pub rerun: Vec<String>,
    /// Where each cut step's partial run directory was moved (kept, never deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<PathBuf>,
}

impl Lab {
    /// Whether the process that runs this lab is alive (its pid with the same
    /// start time). A lab with no pid recorded is judged by its end alone.
    pub fn live(&self) -> bool {
        match self.pid {
            Some(pid) => self.ended_unix_ms.is_none() && record::rundir::process_alive(pid, self.pid_starttime),
            None => self.ended_unix_ms.is_none(),
        }
    }

    /// The family-wise error each planned pass may spend.
    pub fn alpha_by_pass(&self) -> Vec<f64> {
        crate::verdict::alpha_by_pass(self.passes)
    }

    /// The weight of each pass in a later pass's combination: as written
    /// before the data, or equal.
    pub fn pass_weights(&self) -> Vec<f64> {
        if self.pass_weights.len() >= self.passes as usize
            && self.pass_weights.iter().all(|w| w.is_finite() && *w > 0.0)
        {
            self.pass_weights.clone()
        } else {
            // Bounded here too, for a Lab not read by `load`.
            vec![1.0; self.passes.clamp(1, MAX_PASSES) as usize]
        }
    }

    pub fn load(dir: &Path) -> Result<Lab, crate::error::LoadError> {
        Lab::load_within(dir, &record::weight::Budget::default())
    }

    /// [`Lab::load`], lab.json charged to `budget` (the report's, which its
    /// runs share).
    pub fn load_within(dir: &Path, budget: &record::weight::Budget) -> Result<Lab, crate::error::LoadError> {
        use crate::error::LoadError;
        let p = dir.join(FILE);
        let text = record::rundir::read_bounded(&p, record::rundir::MAX_JSON_BYTES)?
            .ok_or_else(|| LoadError::Invalid { file: p.clone(), why: "no such file".into() })?;
        record::rundir::check_format(&p, &text)?;
        budget.charge(&p, record::weight::estimate(text.as_bytes()))?;
        let lab: Lab = serde_json::from_str(&text).map_err(|e| LoadError::Invalid {
            file: p.clone(),
            why: format!("not a pagelab lab record: {}", record::rundir::brief(&e)),
        })?;
        if lab.passes > MAX_PASSES || lab.pass_weights.len() > MAX_PASSES as usize {
            return Err(LoadError::Invalid {
                file: p,
                why: format!(
                    "passes {} with {} weights; a lab plans at most {MAX_PASSES}",
                    lab.passes,
                    lab.pass_weights.len()
                ),
            });
        }
        Ok(lab)
    }

    /// Writes lab.json atomically (a rename), so a reader never sees half a file.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        record::safe::write(&dir.join(FILE), &serde_json::to_vec_pretty(self)?)
    }
}

#[cfg(test)]
mod step_tests {
    use super::*;

    /// lab.json's command line becomes a typed count as it is read (wherever
    /// `--repeat` stood) and is written back whole; a `--repeat` without a
    /// count stays an argument (the command refuses it, not the reader).
    #[test]
    fn a_steps_repeat_is_typed_at_the_files_edge() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = Step::from_argv("eat", argv(&["--size", "64MiB", "--repeat", "8", "--backing", "none"]), 1.0);
        assert_eq!((s.args.clone(), s.repeat), (argv(&["--size", "64MiB", "--backing", "none"]), Some(8)));
        assert_eq!(s.argv(), argv(&["--size", "64MiB", "--backing", "none", "--repeat", "8"]));
        let text = serde_json::to_string(&s).unwrap();
        let back: Step = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["args"], serde_json::json!(s.argv()));
        assert!(v.get("repeat").is_none(), "lab.json keeps the command line, not a second count");
        let odd = Step::from_argv("eat", argv(&["--repeat", "many"]), 1.0);
        assert_eq!((odd.args, odd.repeat), (argv(&["--repeat", "many"]), None));
    }
}
