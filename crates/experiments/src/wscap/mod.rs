//! `pagelab wscap`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// wscap, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Wscap,
    needs: &[(Need::Root, "wscap"), (Need::MemoryCgroup, "wscap"), (Need::Zram, "wscap"), (Need::QuietDamon, "wscap")],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::WscapLab>,
    workers: &[(work::WORKER, work::worker_main)],
    command: || crate::kit::command::<cmd::WscapArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::wscap::results::WscapResult, crate::kit::run::Doc<crate::wscap::results::WscapResult>>("wscap"),
};

/// Its help line.
const ABOUT: &str = "What a working-set cap costs: scans/s under hard caps against periodic reclaim";
