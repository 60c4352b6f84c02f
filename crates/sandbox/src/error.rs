use std::path::PathBuf;

/// What can go wrong when changing the system.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The operation needs a privilege the process lacks. Nothing was changed.
    #[error("{op} needs {need}{hint}")]
    NeedsPrivilege { op: String, need: String, hint: String },
    /// The request itself is unacceptable (exit code 2). Nothing was changed.
    #[error("{0}")]
    Invalid(String),
    /// The kernel lacks a feature. Nothing was changed.
    #[error("{0}")]
    Unsupported(String),
    /// The host guard refused the plan (exit code 2).
    #[error("{0}")]
    HostGuard(String),
    /// Another pagelab run holds the machine (exit code 2). Nothing was changed.
    #[error("{0}")]
    Busy(String),
    #[error("{what}: {path}: {source}")]
    Io { what: String, path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Other(String),
}

impl SandboxError {
    pub fn io(what: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SandboxError::Io { what: what.into(), path: path.into(), source }
    }
    /// Whether this is the user's or the environment's problem (exit 2) rather than
    /// a runtime failure (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SandboxError::NeedsPrivilege { .. }
                | SandboxError::Invalid(_)
                | SandboxError::Unsupported(_)
                | SandboxError::HostGuard(_)
                | SandboxError::Busy(_)
        )
    }
}

pub type Result<T> = std::result::Result<T, SandboxError>;
