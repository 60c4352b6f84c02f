//! `pagelab jank`: how responsive a desktop stays when memory runs out. A
//! frame probe (a 60 Hz loop that touches part of its own working set and
//! does a fixed amount of work each frame) runs inside the hog's memory
//! cgroup, counted in its overcommit, and a second one outside it, while
//! thrash's consumers thrash; one arm per swap store and setting, and a
//! CPU-only control where nothing pages. Its arguments and run ([`cmd`]),
//! the frame probe and the arms ([`work`]), the frames' figures
//! ([`frames`]), its typed results ([`results`]) and its part of the report
//! ([`report`]).

pub mod cmd;
pub mod command;
pub mod frames;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// jank, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Jank,
    needs: &[
        (Need::Root, "jank"),
        (Need::MemoryCgroup, "jank"),
        (Need::Zram, "jank --arms zram"),
        (Need::Zswap, "jank --arms zswap"),
        (Need::QuietDamon, "jank"),
    ],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::JankLab>,
    workers: &[(work::FRAME, work::frame_main)],
    command: || crate::kit::command::<cmd::JankArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::jank::results::Entry, crate::jank::cmd::Output>("jank"),
};

/// Its help line.
const ABOUT: &str = "How responsive a desktop stays when memory runs out: frame times inside and outside a thrashing cgroup, per swap store and setting, against a CPU-only control";
