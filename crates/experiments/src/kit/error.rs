//! The error of every experiment command, and what exit code it calls for.

use sandbox::SandboxError;
use workloads::observe::ExperimentError;

/// What an experiment command failed with. The binary turns the kind into
/// its exit code ([`Error::exit_code`]): 2 for input or a machine refused
/// before anything changed, 130 for a stop, 1 for a run that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag, a file or a plan refused: the user's to fix (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Stopped by a signal (exit 130).
    #[error("interrupted")]
    Interrupted,
    /// The sandbox refused (bad input when [`SandboxError::is_usage`]) or failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The run failed: its worker, a result not recorded, a record not read.
    #[error("{0}")]
    Failed(String),
    /// A file could not be written or read, saying which. (The cause is in
    /// the message, not a source of its own: a chain printed whole would
    /// say it twice.)
    #[error("{what}: {cause}")]
    File { what: String, cause: std::io::Error },
    /// A file of the run (its directory, run.json, its samples) could not be written or read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The machine could not be read.
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    /// A record could not be read back.
    #[error(transparent)]
    Read(#[from] record::rundir::ReadError),
    /// What was being done when `inner` came (its message in this one's).
    #[error("{context}: {inner}")]
    Context { context: String, inner: Box<Error> },
    /// A result or document that could not be turned into JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The run went through, and a limit it checked was not verified
    /// (`rightsize --check`: exit 3).
    #[error("{0}")]
    Unverified(String),
}

/// An experiment command's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The same error, saying what was being done.
    pub fn context(self, context: impl Into<String>) -> Self {
        Error::Context { context: context.into(), inner: Box::new(self) }
    }

    /// The error under any context.
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { inner, .. } => inner.root(),
            e => e,
        }
    }

    /// Input or a machine refused, before anything changed.
    pub fn is_usage(&self) -> bool {
        match self.root() {
            Error::Usage(_) => true,
            Error::Sandbox(s) => s.is_usage(),
            _ => false,
        }
    }

    /// Whether a file could not be written because its disk is full.
    pub fn disk_full(&self) -> bool {
        match self.root() {
            Error::File { cause, .. } | Error::Io(cause) => cause.kind() == std::io::ErrorKind::StorageFull,
            _ => false,
        }
    }

    /// The exit code the binary ends with.
    pub fn exit_code(&self) -> i32 {
        match self.root() {
            Error::Interrupted => 130,
            Error::Unverified(_) => 3,
            _ if self.is_usage() => 2,
            _ => 1,
        }
    }
}

impl From<ExperimentError> for Error {
    fn from(e: ExperimentError) -> Self {
        match e {
            ExperimentError::Interrupted => Error::Interrupted,
            ExperimentError::Sandbox(s) => Error::Sandbox(s),
            ExperimentError::Worker(w) | ExperimentError::Record(w) | ExperimentError::Gone(w) => Error::Failed(w),
            ExperimentError::Failed(f) => Error::Failed(f.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code follows the kind under any context: a sandbox refusal
    /// is bad input, a sandbox failure is not.
    #[test]
    fn exit_codes_follow_the_kind_under_context() {
        assert_eq!(Error::Usage("--size".into()).context("eat").exit_code(), 2);
        assert_eq!(Error::Interrupted.context("a").context("b").exit_code(), 130);
        assert_eq!(Error::Failed("worker died".into()).exit_code(), 1);
        let refused = SandboxError::Unsupported("no swap".into());
        assert!(refused.is_usage(), "the fixture is a refusal");
        assert_eq!(Error::from(ExperimentError::Sandbox(refused)).context("store 1 of 2").exit_code(), 2);
        let e = Error::Usage("--size: not a size".into()).context("store 1 of 2");
        assert_eq!(e.to_string(), "store 1 of 2: --size: not a size");
        // Said once: the message holds the cause, and no source repeats it.
        assert!(std::error::Error::source(&e).is_none());
        let f = Error::File { what: "writing x".into(), cause: std::io::Error::other("disk full") };
        assert_eq!((f.to_string().as_str(), std::error::Error::source(&f).is_none()), ("writing x: disk full", true));
    }
}
