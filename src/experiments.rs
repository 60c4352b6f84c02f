//! The binary's list of experiments: for each, what the lab plans and which
//! worker processes it runs. The report's side (rendering, metrics, verdicts,
//! the study) is [`report::experiment::ALL`], in the same order; a test holds
//! the two lists together, so an experiment added to one and not the other
//! fails `cargo test` instead of silently going missing.
//!
//! A new experiment needs: its workload module (workloads/src/<x>.rs), its
//! report module (report/src/<x>.rs, with `impl report::experiment::Experiment`
//! and a line in report's `ALL`), its command (src/<x>_cmd.rs: the CLI glue and
//! `lab_step`), a line here, and its `Cmd` variant in src/cli.rs.

use crate::lab::Machine;
use report::lab::Step;
use sandbox::worker::child::WorkerIo;

/// A worker process's entry point (`pagelab __worker KIND ARGS...`).
pub type WorkerMain = fn(&mut WorkerIo, &[String]) -> Result<(), String>;

pub struct Experiment {
    /// The report's side: name, study, renderer, metrics and verdicts.
    pub report: &'static dyn report::experiment::Experiment,
    /// The lab's step for this machine (`full` or quick).
    pub lab_step: fn(&Machine, bool) -> Step,
    /// The worker kinds it starts, and their entry points.
    pub workers: &'static [(&'static str, WorkerMain)],
}

impl Experiment {
    pub fn name(&self) -> &'static str {
        self.report.name()
    }
}

/// Every experiment, in the lab's order.
pub static ALL: [Experiment; 5] = [
    Experiment {
        report: &report::eat::Eat,
        lab_step: crate::eat_cmd::lab_step,
        workers: &[("eat", workloads::eat::worker_main)],
    },
    Experiment {
        report: &report::wscap::Wscap,
        lab_step: crate::wscap_cmd::lab_step,
        workers: &[("wscap", workloads::wscap::worker_main)],
    },
    Experiment {
        report: &report::heap::Heap,
        lab_step: crate::heap_cmd::lab_step,
        workers: &[("heap", workloads::heap::worker_main)],
    },
    Experiment {
        report: &report::mapping::Mapping,
        lab_step: crate::mapping_cmd::lab_step,
        workers: &[("mapping", workloads::mapping::worker_main)],
    },
    Experiment {
        report: &report::thrash::Thrash,
        lab_step: crate::thrash_cmd::lab_step,
        workers: &[
            ("thrash-consumer", workloads::thrash::consumer_main),
            ("thrash-probe", workloads::thrash::probe_main),
        ],
    },
];

/// The worker entry point called `kind`, among every experiment's.
pub fn worker(kind: &str) -> Option<WorkerMain> {
    ALL.iter().flat_map(|e| e.workers).find(|(k, _)| *k == kind).map(|(_, f)| *f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binarys_list_is_the_reports() {
        let ours: Vec<&str> = ALL.iter().map(Experiment::name).collect();
        assert_eq!(ours, report::experiment::names());
    }

    #[test]
    fn each_step_is_its_own_experiments() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        for e in &ALL {
            for full in [false, true] {
                assert_eq!((e.lab_step)(&m, full).experiment, e.name());
            }
        }
    }

    #[test]
    fn worker_kinds_are_unique_and_found() {
        let kinds: Vec<&str> = ALL.iter().flat_map(|e| e.workers).map(|(k, _)| *k).collect();
        let mut d = kinds.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), kinds.len(), "{kinds:?}");
        assert!(kinds.iter().all(|k| worker(k).is_some()));
        assert!(worker("nope").is_none());
    }
}
