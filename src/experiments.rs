//! The binary's list of experiments: for each, what the lab plans and which
//! worker processes it runs. The report's side (rendering, metrics, verdicts,
//! the study) is [`report::experiment::ALL`], in the same order; a test holds
//! the two lists together, so an experiment added to one and not the other
//! fails `cargo test` instead of silently going missing.
//!
//! A new experiment needs: its workload module (workloads/src/<x>.rs), its
//! typed results (record/src/results/<x>.rs), its report module
//! (report/src/<x>.rs, with `impl report::experiment::Experiment` and a line in
//! report's `ALL`), its command (src/<x>_cmd.rs: the CLI glue and `lab_step`), a
//! line here, and its `Cmd` variant (src/cli.rs) with its arm in src/main.rs.

use crate::lab::Machine;
use report::lab::Step;
use sandbox::worker::child::WorkerIo;

/// A worker process's entry point (`pagelab __worker KIND ARGS...`).
pub type WorkerMain = fn(&mut WorkerIo, &[String]) -> Result<(), String>;

/// What a machine may lack that an experiment (or one of its modes) needs;
/// `doctor` says which experiments each missing piece affects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Root with CAP_SYS_ADMIN.
    Root,
    /// A mounted memory cgroup controller pagelab may use.
    MemoryCgroup,
    /// zram that pagelab can add a device to.
    Zram,
    /// No DAMON worker that moves pages (one that is not pagelab's skews the run).
    QuietDamon,
    /// zswap in the kernel.
    Zswap,
    /// Pressure stall information (/proc/pressure).
    Psi,
    /// madvise(MADV_PAGEOUT) (Linux 5.4).
    Pageout,
    /// process_madvise (Linux 5.10).
    ProcessMadvise,
}

pub struct Experiment {
    /// The report's side: name, study, renderer, metrics and verdicts.
    pub report: &'static dyn report::experiment::Experiment,
    /// What it needs, and which of its modes need it (as doctor names them).
    pub needs: &'static [(Need, &'static str)],
    /// The lab's step for this machine (`full` or quick).
    pub lab_step: fn(&Machine, bool) -> Step,
    /// A budgeted lab's extra pass: `k` more repeats of the first pass's step,
    /// for these inconclusive claims (by id); None when it cannot repeat.
    pub lab_more: fn(&Step, &[&str], u32) -> Option<Step>,
    /// The worker kinds it starts, and their entry points.
    pub workers: &'static [(&'static str, WorkerMain)],
}

impl Experiment {
    pub fn name(&self) -> &'static str {
        self.report.name()
    }
}

/// Every experiment, in the lab's order.
pub static ALL: [Experiment; 7] = [
    Experiment {
        report: &report::eat::Eat,
        needs: &[
            (Need::Root, "eat (zram, cgroup trim)"),
            (Need::MemoryCgroup, "eat --trim cgroup"),
            (Need::Zram, "eat --backing zram"),
            (Need::QuietDamon, "eat"),
        ],
        lab_step: crate::eat_cmd::lab_step,
        lab_more: crate::lab::more_repeats,
        workers: &[(workloads::eat::WORKER, workloads::eat::worker_main)],
    },
    Experiment {
        report: &report::wscap::Wscap,
        needs: &[
            (Need::Root, "wscap"),
            (Need::MemoryCgroup, "wscap"),
            (Need::Zram, "wscap"),
            (Need::QuietDamon, "wscap"),
        ],
        lab_step: crate::wscap_cmd::lab_step,
        lab_more: crate::lab::more_repeats,
        workers: &[(workloads::wscap::WORKER, workloads::wscap::worker_main)],
    },
    Experiment {
        report: &report::heap::Heap,
        needs: &[],
        lab_step: crate::heap_cmd::lab_step,
        lab_more: crate::lab::more_repeats,
        workers: &[
            (workloads::heap::WORKER, workloads::heap::worker_main),
            (workloads::heap::overtime::WORKER, workloads::heap::overtime::worker_main),
        ],
    },
    Experiment {
        report: &report::mapping::Mapping,
        needs: &[(Need::MemoryCgroup, "mapping --pressure"), (Need::QuietDamon, "mapping --pressure")],
        lab_step: crate::mapping_cmd::lab_step,
        lab_more: crate::lab::more_repeats,
        workers: &[(workloads::mapping::WORKER, workloads::mapping::worker_main)],
    },
    Experiment {
        report: &report::thrash::Thrash,
        needs: &[
            (Need::Root, "thrash"),
            (Need::MemoryCgroup, "thrash"),
            (Need::Zram, "thrash --backing zram"),
            (Need::QuietDamon, "thrash"),
        ],
        lab_step: crate::thrash_cmd::lab_step,
        lab_more: crate::thrash_cmd::lab_more,
        workers: &[
            (workloads::thrash::CONSUMER, workloads::thrash::consumer_main),
            (workloads::thrash::PROBE, workloads::thrash::probe_main),
        ],
    },
    Experiment {
        report: &report::assess::Assess,
        needs: &[
            (Need::ProcessMadvise, "assess --trim"),
            (Need::Root, "assess --trim zram"),
            (Need::Zram, "assess --trim zram"),
        ],
        lab_step: crate::assess_cmd::lab_step,
        lab_more: crate::lab::more_repeats,
        workers: &[(workloads::assess::TOUCHER, workloads::assess::toucher_main)],
    },
    Experiment {
        report: &report::rightsize::Rightsize,
        needs: &[
            (Need::Root, "rightsize (batch)"),
            (Need::MemoryCgroup, "rightsize (batch)"),
            (Need::Zram, "rightsize --backing zram"),
            (Need::ProcessMadvise, "rightsize --pid"),
        ],
        lab_step: crate::rightsize_cmd::lab_step,
        // Its runs are its own search: more of them is a longer --runs, not a
        // second pass.
        lab_more: |_, _, _| None,
        workers: &[],
    },
];

/// The experiments (or their modes) that need `need`, in the lab's order.
pub fn affected_by(need: Need) -> Vec<&'static str> {
    ALL.iter().flat_map(|e| e.needs).filter(|(n, _)| *n == need).map(|(_, what)| *what).collect()
}

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
    fn needs_name_their_experiment() {
        for e in &ALL {
            assert!(e.needs.iter().all(|(_, what)| what.starts_with(e.name())), "{}", e.name());
        }
        assert_eq!(
            affected_by(Need::Root),
            ["eat (zram, cgroup trim)", "wscap", "thrash", "assess --trim zram", "rightsize (batch)"]
        );
        assert!(affected_by(Need::MemoryCgroup).contains(&"mapping --pressure"));
    }

    /// Each experiment in the list has every piece the house gives one: its
    /// subcommand with help, its blocks in the schemas, a lab step, its report
    /// section (figures and claims named after it), and its docs page linked
    /// from the README. A piece forgotten (or a docs page removed) fails here.
    #[test]
    fn every_experiment_has_its_help_schema_lab_step_report_and_docs() {
        use clap::CommandFactory;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let mut cli = crate::cli::Cli::command();
        let help = cli.render_long_help().to_string();
        let run_schema: serde_json::Value = serde_json::from_str(&read("schema/run.schema.json")).unwrap();
        let out_schema = read("schema/experiment-output.schema.json");
        let readme = read("README.md");
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        for e in &ALL {
            let name = e.name();
            let sub = cli.find_subcommand(name).unwrap_or_else(|| panic!("{name}: no subcommand"));
            assert!(sub.get_about().is_some_and(|a| !a.to_string().is_empty()), "{name}: no help line");
            assert!(help.contains(&format!("  {name}")), "{name}: not in pagelab --help");
            assert!(
                run_schema["$defs"].get(format!("{name}_result")).is_some(),
                "{name}: no $defs/{name}_result in schema/run.schema.json"
            );
            assert!(
                out_schema.contains(&format!("\"const\": \"{name}\"")),
                "{name}: not in experiment-output.schema.json"
            );
            assert_eq!((e.lab_step)(&m, false).experiment, name, "{name}: lab step");
            assert!(!e.report.study().is_empty(), "{name}: no study");
            assert!(!e.report.claims().is_empty(), "{name}: no claims");
            for c in e.report.claims() {
                assert!(c.id.starts_with(&format!("{name}.")), "{name}: claim {} is not named after it", c.id);
            }
            let page = format!("docs/{name}.md");
            assert!(root.join(&page).is_file(), "{name}: no {page}");
            assert!(read(&page).contains(&format!("pagelab {name}")), "{page} does not show `pagelab {name}`");
            assert!(readme.contains(&format!("]({page})")), "{name}: README does not link {page}");
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
