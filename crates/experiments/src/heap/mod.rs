//! `pagelab heap`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod report;
pub mod results;
pub mod work;

use crate::Experiment;

/// heap, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Heap,
    needs: &[],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::HeapLab>,
    workers: &[(work::WORKER, work::worker_main), (work::overtime::WORKER, work::overtime::worker_main)],
    command: || crate::kit::command::<cmd::HeapArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::heap::results::Entry, crate::heap::cmd::Output>("heap"),
};

/// Its help line.
const ABOUT: &str = "How allocators scale with threads: per-call time, tail latency, peak memory";
