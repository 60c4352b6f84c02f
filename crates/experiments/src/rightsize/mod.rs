//! `pagelab rightsize`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod kube;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// rightsize, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Rightsize,
    needs: &[
        (Need::Root, "rightsize (batch)"),
        (Need::MemoryCgroup, "rightsize (batch)"),
        (Need::Zram, "rightsize --backing zram"),
        (Need::ProcessMadvise, "rightsize --pid"),
    ],
    lab_step: cmd::lab_step,
    // Its runs are its own search: more of them is a longer --runs, not a
    // second pass.
    lab_more: |_, _, _| None,
    lab_args: crate::kit::lab_args::round_trip::<cmd::RightsizeLab>,
    workers: &[],
    command: || crate::kit::command::<cmd::RightsizeArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::rightsize::results::RightsizeResult, crate::kit::run::Doc<crate::rightsize::results::RightsizeResult>>("rightsize"),
};

/// Its help line.
const ABOUT: &str = "How much memory to give a program: the smallest limit whose slowdown's 95 % upper bound is within --slowdown, verified, with the curve (batch, `-- CMD`); or where a running service's footprint settles under gentle reclaim (--pid, --cgroup)";
