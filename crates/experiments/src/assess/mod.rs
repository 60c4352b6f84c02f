//! `pagelab assess`: its arguments and run ([`cmd`]), its workload and worker
//! processes ([`work`]), its typed results ([`results`]) and its part of the
//! report ([`report`]).

pub mod cmd;
pub mod report;
pub mod results;
pub mod work;

use crate::{Experiment, Need};

/// assess, as [`crate::ALL`] lists it.
pub static EXPERIMENT: Experiment = Experiment {
    report: &report::Assess,
    needs: &[
        (Need::ProcessMadvise, "assess --trim"),
        (Need::Root, "assess --trim zram"),
        (Need::Zram, "assess --trim zram"),
    ],
    lab_step: cmd::lab_step,
    lab_more: crate::kit::plan::more_repeats,
    lab_args: crate::kit::lab_args::round_trip::<cmd::AssessLab>,
    workers: &[(work::TOUCHER, work::toucher_main)],
    command: || crate::kit::command::<cmd::AssessArgs>(EXPERIMENT.name(), ABOUT),
    run: |m| crate::kit::dispatch(m, cmd::run),
    schema: || crate::kit::schema::generate::<crate::assess::results::AssessResult, crate::kit::run::Doc<crate::assess::results::AssessResult>>("assess"),
};

/// Its help line.
const ABOUT: &str = "What compressed memory would do for a program: how much of its memory is cold, how its real pages compress, and (with --trim) what trimming costs";
