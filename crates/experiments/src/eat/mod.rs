//! `pagelab eat`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// eat, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Eat,
    needs: &[
        (Need::Root, "eat (zram, cgroup trim)"),
        (Need::MemoryCgroup, "eat --trim cgroup"),
        (Need::Zram, "eat --backing zram"),
        (Need::QuietDamon, "eat"),
    ],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::EatLab>,
    workers: &[(work::WORKER, work::worker_main)],
    command: || crate::kit::command::<cmd::EatArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::eat::results::EatResult, crate::kit::run::Doc<crate::eat::results::EatResult>>("eat"),
};

/// Its help line.
const ABOUT: &str = "Fill private memory with data of chosen compressibility, trim it into (compressed) swap, read it back, and time each phase";
