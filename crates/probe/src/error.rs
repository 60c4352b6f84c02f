//! Errors: a parse error names the line; a probe error adds the path.

use std::path::PathBuf;

/// A file's text did not have the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number where the problem was found (0 when the file is empty).
    pub line: usize,
    /// What was wrong, with the offending text.
    pub message: String,
}

impl ParseError {
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        ParseError { line, message: message.into() }
    }
}

/// Reading or parsing one kernel file failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{path}: {source}")]
    Parse { path: PathBuf, source: ParseError },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

impl ProbeError {
    pub fn path(&self) -> &std::path::Path {
        match self {
            ProbeError::Parse { path, .. } | ProbeError::Io { path, .. } => path,
        }
    }
}
