//! `pagelab thrash`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod carryover;
pub mod cmd;
pub mod findings;
pub mod protocol;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// thrash, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Thrash,
    needs: &[
        (Need::Root, "thrash"),
        (Need::MemoryCgroup, "thrash"),
        (Need::Zram, "thrash --backing zram"),
        (Need::QuietDamon, "thrash"),
    ],
    lab_step: cmd::lab_step,
    lab_more: cmd::lab_more,
    lab_args: crate::kit::lab_args::round_trip::<cmd::ThrashLab>,
    workers: &[(work::CONSUMER, work::consumer_main), (work::PROBE, work::probe_main)],
    command: || crate::kit::command::<cmd::ThrashArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::thrash::results::Entry, crate::thrash::cmd::Output>("thrash"),
};

/// Its help line.
const ABOUT: &str = "Many processes whose working sets exceed their memory, in a cgroup: paging, CPU, PSI, responsiveness inside and outside, and recovery";
