//! Why a run or lab directory could not be loaded. Each kind names the file
//! (and, for an entry, the entry and the field), so the binary prints one
//! line and exits 2. A kind's cause is in its message, not a source of
//! its own, so that a chain printed whole says it once.

use record::results::EntryError;
use record::rundir::ReadError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A run's record could not be read: missing, too large, malformed or refused.
    #[error("{}: {cause}", dir.display())]
    Run { dir: PathBuf, cause: ReadError },
    /// A file could not be read (lab.json); the reader's error names it.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// An entry of run.json is not as its experiment writes them.
    #[error("{}: {cause}", file.display())]
    Entry { file: PathBuf, cause: EntryError },
    /// Well formed, but not what pagelab writes: a limit passed, a wrong
    /// shape, a run directory that is a link.
    #[error("{}: {why}", file.display())]
    Invalid { file: PathBuf, why: String },
    /// Neither a lab nor a run directory.
    #[error("{}: neither a lab directory (lab.json) nor a run directory (run.json)", .0.display())]
    NotARecord(PathBuf),
    /// A run's charts could not be drawn.
    #[error("{}: rendering charts: {why}", dir.display())]
    Render { dir: PathBuf, why: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Catalog;
    use crate::model::{Render, Report};

    fn refused(dir: &std::path::Path) -> LoadError {
        match Report::load(dir, Render::Never, Catalog(&[])) {
            Ok(_) => panic!("{} loaded", dir.display()),
            Err(e) => e,
        }
    }

    /// Each way a directory is refused is its own kind, naming the file.
    #[test]
    fn each_refusal_is_its_kind_and_names_its_file() {
        let d = tempfile::tempdir().unwrap();
        let e = refused(d.path());
        assert!(matches!(&e, LoadError::NotARecord(p) if p == d.path()), "{e:?}");
        assert!(e.to_string().ends_with("neither a lab directory (lab.json) nor a run directory (run.json)"), "{e}");
        // A lab whose step names a directory outside it.
        std::fs::write(
            d.path().join(crate::lab::FILE),
            r#"{"format": 1, "kind": "pagelab-lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
                "started_unix_ms": 0, "root": false, "cpus": 2, "ram_bytes": 1, "expect_s": 1, "doctor": {},
                "steps": [{"experiment": "eat", "args": [], "expect_s": 1, "dir": "../x", "state": "complete"}]}"#,
        )
        .unwrap();
        let e = refused(d.path());
        let LoadError::Invalid { file, why } = &e else { panic!("{e:?}") };
        assert_eq!(file, &d.path().join(crate::lab::FILE));
        assert!(why.contains("is not a name inside the lab directory"), "{why}");
        // A lab.json that is not JSON: the reader's own kind.
        std::fs::write(d.path().join(crate::lab::FILE), "{").unwrap();
        let e = refused(d.path());
        assert!(e.to_string().contains(crate::lab::FILE), "{e}");
    }
}
