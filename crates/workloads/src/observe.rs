//! What every experiment shares: how it tells its caller what happens, as it
//! happens, and how it fails.

use sandbox::SandboxError;
use serde_json::Value;

/// Every experiment's error. The binary maps the kinds to exit codes: a
/// refusal of the input or the machine (2), a worker that failed or a result
/// that could not be recorded (1), a stop (130).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("{0}")]
    Worker(String),
    /// A worker that failed, as its link saw it end (an OOM kill, a
    /// signal, a status): kept whole, so that a caller asks
    /// [`sandbox::worker::WorkerFailure::oom_killed`] rather than reading
    /// the message.
    #[error("{0}")]
    Failed(sandbox::worker::WorkerFailure),
    /// A worker that could not be read in /proc (gone, or going): its
    /// figures are unknown, not zero. The caller adds how it ended.
    #[error("{0}")]
    Gone(String),
    #[error("interrupted")]
    Interrupted,
    /// A result measured but not written to the record: the run fails
    /// rather than report less than it measured.
    #[error("{0}")]
    Record(String),
}

/// What an experiment's run tells its caller. Each experiment's observer
/// takes that experiment's own entry type: the run hands over a typed result,
/// and only the record turns it into JSON.
pub trait Observer {
    /// The experiment's run.json entry.
    type Entry: serde::Serialize;
    /// A phase boundary or other event, with the monotonic time it happened.
    fn event(&mut self, kind: &str, name: &str, t_ns: u64, detail: Value);
    /// What to sample besides the system (the worker, its cgroup, the zram device).
    fn targets(&mut self, pids: Vec<i32>, cgroup: Option<probe::CgroupTarget>, zram: Vec<u32>);
    /// A finished result: write it out now, a later part may fail. An error
    /// when it could not be written, which fails the run.
    fn result(&mut self, r: &Self::Entry) -> Result<(), ExperimentError>;
    /// A line of progress or a warning.
    fn note(&mut self, msg: &str);
    /// The samples recorded so far (for experiments that analyse their own
    /// collector's record); none where nothing records.
    fn samples(&mut self) -> Vec<probe::Sample> {
        Vec::new()
    }
    /// The time of the latest sample kept ([`Observer::samples`]), without
    /// copying them; none where nothing records.
    fn last_sample_ns(&mut self) -> Option<u64> {
        None
    }
}

/// An observer that keeps what it is told, for tests of an experiment's run
/// without a record: its events (kind, name), targets, results and notes. With
/// `refuse_results`, every result write fails, as a full disk would.
#[derive(Debug)]
pub struct Recorder<E> {
    pub events: Vec<(String, String)>,
    pub pids: Vec<Vec<i32>>,
    pub results: Vec<E>,
    pub notes: Vec<String>,
    pub refuse_results: bool,
}

impl<E> Default for Recorder<E> {
    fn default() -> Self {
        Self { events: Vec::new(), pids: Vec::new(), results: Vec::new(), notes: Vec::new(), refuse_results: false }
    }
}

impl<E: serde::Serialize + Clone> Observer for Recorder<E> {
    type Entry = E;
    fn event(&mut self, kind: &str, name: &str, _t_ns: u64, _detail: Value) {
        self.events.push((kind.into(), name.into()));
    }
    fn targets(&mut self, pids: Vec<i32>, _cgroup: Option<probe::CgroupTarget>, _zram: Vec<u32>) {
        self.pids.push(pids);
    }
    fn result(&mut self, r: &E) -> Result<(), ExperimentError> {
        if self.refuse_results {
            return Err(ExperimentError::Record("the result could not be written (refused by the test)".into()));
        }
        self.results.push(r.clone());
        Ok(())
    }
    fn note(&mut self, msg: &str) {
        self.notes.push(msg.into());
    }
    /// No sampler behind it: a run that waits for a sample past a moment
    /// (thrash's end) has nothing to wait for.
    fn last_sample_ns(&mut self) -> Option<u64> {
        Some(probe::sample::monotonic_ns())
    }
}
