//! pagelab's experiments, one folder each, and the list of them.
//!
//! An experiment's folder holds all of it: `cmd.rs` (its arguments, the run
//! and its lab step), `work` (the workload and its worker processes, with
//! their typed protocol), `results.rs` (the typed entries of run.json's
//! `results`) and `report` (its figures, claims, verdicts, tables and charts),
//! with `mod.rs` tying them into one [`Experiment`]. [`ALL`] lists them; the
//! binary's subcommands, help, worker dispatch and lab plan, the report's
//! sections and the schema check are all derived from it. Adding an experiment
//! is its folder and one line in [`ALL`] (docs/development.md).
//!
//! [`kit`] is what every experiment's command shares.

pub mod fuzzing;
pub mod kit;
pub use kit::error::{Error, Result};

use crate::kit::plan::{Machine, Scale};
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

/// An experiment as the binary uses it: what [`ALL`] lists, one per folder
/// (each folder's `mod.rs` makes its `EXPERIMENT`).
pub struct Experiment {
    /// The report's side: name, study, renderer, metrics and verdicts.
    pub report: &'static dyn report::experiment::Experiment,
    /// What it needs, and which of its modes need it (as doctor names them).
    pub needs: &'static [(Need, &'static str)],
    /// The lab's step for this machine at this scale, and the budget the
    /// user gave (`lab --budget`; None: the scale's own), which may let in a
    /// step the scale's own time leaves out (thrash in a quick lab).
    pub lab_step: fn(&Machine, Scale, Option<f64>) -> Step,
    /// A budgeted lab's extra pass: `k` more repeats of the first pass's step,
    /// for these inconclusive claims (by id); None when it cannot repeat.
    pub lab_more: fn(&Step, &[&str], u32) -> Option<Step>,
    /// A step's arguments read back through its typed lab arguments
    /// ([`kit::lab_args::LabArgs`]) and rendered again: the round trip that
    /// shows every flag the plan sets is one the command takes, as it takes it.
    pub lab_args: fn(&Step) -> Result<Vec<String>, String>,
    /// The worker kinds it starts, and their entry points.
    pub workers: &'static [(&'static str, WorkerMain)],
    /// Its subcommand: name (the report's), help line and arguments.
    pub command: fn() -> clap::Command,
    /// Runs its subcommand from the parsed arguments.
    pub run: fn(&clap::ArgMatches) -> crate::Result<()>,
    /// Its part of the published schemas, generated from its result and
    /// `--json` types ([`kit::schema::generate`]).
    pub schema: fn() -> serde_json::Value,
}

impl Experiment {
    pub fn name(&self) -> &'static str {
        self.report.name()
    }
}

/// Declares each experiment's folder (`pub mod <x>;`) and lists its
/// `<x>::EXPERIMENT` in [`ALL`], so that the list is written once.
macro_rules! experiments {
    ($($x:ident),* $(,)?) => {
        $(pub mod $x;)*
        /// Every experiment, in the lab's order.
        pub static ALL: &[&Experiment] = &[$(&$x::EXPERIMENT),*];
    };
}

// The list: one line per experiment, in the lab's order.
experiments! {
    eat,
    wscap,
    heap,
    mapping,
    thrash,
    jank,
    assess,
    rightsize,
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static Experiment> {
    ALL.iter().copied().find(|e| e.name() == name)
}

/// Every experiment's schema fragment, in the lab's order.
pub fn schema_fragments() -> Result<Vec<kit::schema::Fragment>, String> {
    ALL.iter().map(|e| kit::schema::Fragment::from_value(e.name(), (e.schema)())).collect()
}

/// The report's view of [`ALL`]: what `report`, `compare` and the lab's
/// report read runs with.
pub fn catalog() -> report::experiment::Catalog {
    static REPORTS: std::sync::OnceLock<Vec<&'static dyn report::experiment::Experiment>> = std::sync::OnceLock::new();
    report::experiment::Catalog(REPORTS.get_or_init(|| ALL.iter().map(|e| e.report).collect()))
}

/// The experiments (or their modes) that need `need`, in the lab's order.
pub fn affected_by(need: Need) -> Vec<&'static str> {
    ALL.iter().flat_map(|e| e.needs).filter(|(n, _)| *n == need).map(|(_, what)| *what).collect()
}

/// The worker entry point called `kind`, among every experiment's.
pub fn worker(kind: &str) -> Option<WorkerMain> {
    ALL.iter().flat_map(|e| e.workers).find(|(k, _)| *k == kind).map(|(_, f)| *f)
}
