//! A control's later pass: the lab's own rule for what its first pass left
//! open (issue 57: "the same repeats and rules"). A quick lab spends 4 % of
//! its 5 % on the first pass and the rest on a second pass of up to ten
//! more repeats for the findings the first left inconclusive, the passes
//! combined with weights fixed before the data
//! ([`report::verdict::judge_later`]). heap.growth is decided in that
//! second pass in every quick lab measured since 2026-12-01 (ten more
//! repeats), so a bench that judged one pass could not show its turn;
//! and a control judged at the first pass alone was held to less data than
//! the lab would have taken for it.

use crate::lab::{LATER_ROOM, Machine, REPORT_RESERVE_S, Scale, passes_for, plan};
use report::lab::{Step, StepState};

/// The lab's rules a finding is judged by, fixed from the plan before any
/// data: the share of the error each pass spends, the weight of each
/// pass's p-values in a later pass's combination, and the seconds of plan a
/// later pass may buy for each experiment.
pub(super) struct Rules {
    pub(super) alphas: Vec<f64>,
    pub(super) weights: Vec<f64>,
    /// Each experiment's seconds for a later pass: what its lab's budget
    /// leaves after the first pass's plan and the report, at the plan's
    /// pace with the later pass's room ([`crate::lab::later_left`]).
    left: Vec<(String, f64)>,
}

impl Rules {
    /// The rules of the lab each experiment is judged in: the quick lab
    /// (its 5 minutes) for the experiments it plans, the lab at `budget`
    /// (thrash's and jank's, beside the quick steps) for the rest. A lab
    /// plans a second pass only where its budget leaves room for one
    /// ([`passes_for`]); both plans here leave it on a machine like the
    /// project's, and then the passes split the error alike.
    pub(super) fn of(m: &Machine, budget: f64, steps: &[Step]) -> Rules {
        let quick = plan(m, Scale::Quick, None, &[]);
        let lab_of = |e: &str| {
            if quick.iter().any(|s| s.experiment == e && s.state == StepState::Planned) {
                (crate::lab::QUICK_BUDGET_S, &quick[..])
            } else {
                (budget, steps)
            }
        };
        let mut left = Vec::new();
        let mut passes = u32::MAX;
        for s in steps.iter().filter(|s| s.state == StepState::Planned) {
            let (b, those) = lab_of(&s.experiment);
            let planned: f64 = those.iter().filter(|s| s.state == StepState::Planned).map(|s| s.expect_s).sum();
            passes = passes.min(passes_for(Some(b), those));
            left.push((s.experiment.clone(), (b - REPORT_RESERVE_S - planned).max(0.0) / (1.0 + LATER_ROOM)));
        }
        let passes = if passes == u32::MAX { 1 } else { passes };
        Rules { alphas: report::verdict::alpha_by_pass(passes), weights: vec![1.0; passes as usize], left }
    }

    /// The first pass's share of the error.
    pub(super) fn first(&self) -> f64 {
        self.alphas[0]
    }

    /// The second pass's share, where the lab plans one.
    pub(super) fn second(&self) -> Option<f64> {
        self.alphas.get(1).copied()
    }

    /// The step of a later pass for `first` (the run as the lab makes it, or
    /// its control, of `experiment`) and the findings `ids`: the most
    /// repeats, up to the ten a later pass of the lab gives a step
    /// ([`crate::lab::choose_more`]: what a finding still needs, at least
    /// two and at most ten, then one more at a time while time is left),
    /// whose plan fits what `experiment`'s lab leaves; None where two do not
    /// fit, or the lab plans no second pass. Independent of the data, so that
    /// every control that shares a run as the lab makes it asks for the same
    /// later pass of it (`--resume` keeps it).
    pub(super) fn later_step(&self, experiment: &str, first: &Step, ids: &[&str]) -> Option<Step> {
        self.second()?;
        let left = self.left.iter().find(|(e, _)| e == experiment)?.1;
        let e = experiments::ALL.iter().find(|e| e.name() == experiment)?;
        (2..=crate::lab::MORE_MAX).rev().filter_map(|k| (e.lab_more)(first, ids, k)).find(|s| s.expect_s <= left).map(
            |mut s| {
                s.pass = 2;
                s
            },
        )
    }
}

/// The directory of `dir`'s second pass: `<dir>-pass2`, beside it.
pub(super) fn dir_of(dir: &std::path::Path) -> std::path::PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push("-pass2");
    dir.with_file_name(name)
}
