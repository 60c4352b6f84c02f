//! The lab's planning helpers: what the machine is, and how an experiment
//! writes its lab step (`lab_step` in its `cmd.rs`).

use report::lab::{Step, StepState};
use sandbox::privilege;

pub const MIB: u64 = 1 << 20;

/// What one run writes besides its samples: run.json, events, its Markdown
/// and charts (smoke lab, this VM: mapping 370 KiB, eat 870 KiB), with room.
pub const OUTPUT_FIXED_BYTES: u64 = 2 * MIB;

/// What a run's samples take a second: ten samples of about 8 KiB each
/// (eat, this VM: 152 KiB for 19 samples), with room.
pub const OUTPUT_BYTES_PER_S: u64 = 96 << 10;

/// The output `runs` runs over `seconds` write, about: what the host guard
/// asks the output file system to hold before anything starts (issue 59).
pub fn output_estimate(runs: usize, seconds: f64) -> u64 {
    runs as u64 * OUTPUT_FIXED_BYTES + (seconds.max(0.0) * OUTPUT_BYTES_PER_S as f64) as u64
}

/// How big a lab is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Every experiment and every report section at toy sizes, planned in
    /// seconds: it checks that the lab runs on this machine (the tests use
    /// it). Its figures and verdicts are no evidence about the studies.
    Smoke,
    /// The default: every experiment in about 5 minutes on a 2-core VM.
    Quick,
    /// Closer to the original studies' sizes and durations.
    Full,
}

impl Scale {
    /// The name in lab.json's `mode` and on the command line (`--smoke`).
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// What the plan depends on.
#[derive(Debug, Clone)]
pub struct Machine {
    pub root: bool,
    pub cpus: u32,
    pub ram_bytes: u64,
    /// An active swap area that pagelab did not create (usable without root).
    pub swap_active: bool,
}

impl Machine {
    pub fn here() -> Machine {
        let mut p = probe::Probe::default();
        let env = p.environment();
        let caps = privilege::effective_caps();
        Machine {
            root: privilege::is_root() && caps & (1 << privilege::CAP_SYS_ADMIN) != 0,
            cpus: env.cpus.max(1) as u32,
            ram_bytes: env.ram_bytes,
            swap_active: !env.swaps.is_empty(),
        }
    }
}

/// A planned step that takes no `--repeat` (or whose repeats are no lab's
/// to change).
pub fn step(experiment: &str, args: Vec<String>, expect_s: f64) -> Step {
    Step::planned(experiment, args, None, expect_s)
}

/// A planned step of `repeat` repeats (`--repeat`, typed: what a later
/// pass, the budget's fit and the lab's simulation read and change).
pub fn repeated(experiment: &str, args: Vec<String>, repeat: u32, expect_s: f64) -> Step {
    Step::planned(experiment, args, Some(repeat), expect_s)
}

/// A step that cannot run here, and why.
pub fn skip(mut s: Step, why: &str) -> Step {
    s.state = StepState::Skipped;
    s.reason = Some(why.into());
    s.expect_s = 0.0;
    s
}

/// `k` more repeats of a first pass's step: the same arms with `--repeat k`,
/// its estimate scaled from the first pass's.
pub fn more_repeats(first: &Step, _claims: &[&str], k: u32) -> Option<Step> {
    let n = repeat_of(first).filter(|&n| n >= 1)?;
    Some(repeated(&first.experiment, first.args.clone(), k, first.expect_s * k as f64 / n as f64))
}

/// A step's repeats (its `--repeat`); None for a step without one. The
/// planner, the pacing and the simulated labs read them here.
pub fn repeat_of(s: &Step) -> Option<u32> {
    s.repeat
}
