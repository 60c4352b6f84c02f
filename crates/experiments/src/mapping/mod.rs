//! `pagelab mapping`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// mapping, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Mapping,
    needs: &[(Need::MemoryCgroup, "mapping --pressure"), (Need::QuietDamon, "mapping --pressure")],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::MappingLab>,
    workers: &[(work::WORKER, work::worker_main)],
    command: || crate::kit::command::<cmd::MappingArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::mapping::results::Entry, crate::mapping::cmd::Output>("mapping"),
};

/// Its help line.
const ABOUT: &str = "What each way of obtaining and releasing memory costs, step by step";
