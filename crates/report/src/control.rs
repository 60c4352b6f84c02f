//! A control run's mark: `control.json`, which `pagelab bench controls`
//! writes into each run it makes under a control. A report of such a run
//! says so first, in every form (text, JSON, HTML, Markdown): its verdicts
//! say whether a finding can turn under the control, not what this machine
//! gives as the study ran, and a reader who found the directory alone would
//! not know.

use crate::error::LoadError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The mark's file name in a run directory.
pub const FILE: &str = "control.json";

/// The most a mark may hold (one is a few hundred bytes).
const MAX_BYTES: u64 = 64 << 10;

/// Who writes marks: the one value `made_by` may hold.
pub const MADE_BY: &str = "pagelab bench controls";

/// A control run's mark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mark {
    /// Always "pagelab bench controls".
    pub made_by: String,
    /// The control, in words, its flags first.
    pub control: String,
    /// The findings it is the control of, each with its role.
    pub findings: Vec<MarkedFinding>,
}

/// One finding a control run is the control of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkedFinding {
    /// `experiment.name`.
    pub id: String,
    /// "negative", "positive" or "instrument".
    pub role: String,
    /// A negative control's side of the region: "above" or "below".
    pub side: Option<String>,
}

impl Mark {
    /// The mark in `dir`, if it has one: None without the file, an error
    /// naming it when it is not a mark (too large, malformed, a link, or
    /// not made by `bench controls`).
    pub fn load(dir: &Path) -> Result<Option<Mark>, LoadError> {
        let path = dir.join(FILE);
        let Some(text) = record::rundir::read_bounded(&path, MAX_BYTES)? else { return Ok(None) };
        let invalid = |why: String| LoadError::Invalid { file: path.clone(), why };
        let m: Mark = serde_json::from_str(&text).map_err(|e| invalid(format!("not a control's mark: {e}")))?;
        if m.made_by != MADE_BY {
            return Err(invalid(format!("made_by: expected \"{MADE_BY}\"")));
        }
        Ok(Some(m))
    }

    /// What a report says first, on one line (control characters escaped,
    /// the control's words and the list of findings cut short).
    pub fn sentence(&self) -> String {
        let short = |s: &str, n: usize| {
            let c: String = s.chars().take(n).collect();
            record::rundir::one_line(if s.chars().count() > n { c + "…" } else { c })
        };
        let mut of: Vec<String> = self
            .findings
            .iter()
            .take(20)
            .map(|f| match &f.side {
                Some(side) => format!("{} ({}, {})", short(&f.id, 60), short(&f.role, 12), short(side, 8)),
                None => format!("{} ({})", short(&f.id, 60), short(&f.role, 12)),
            })
            .collect();
        if self.findings.len() > 20 {
            of.push(format!("and {} more", self.findings.len() - 20));
        }
        format!(
            "a control run, made by {MADE_BY} for {}: {}. Its verdicts say whether each finding can turn under the \
             control; they are not what this machine gives as the study ran.",
            if of.is_empty() { "no finding".to_string() } else { of.join(", ") },
            short(&self.control, 300)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark() -> Mark {
        Mark {
            made_by: MADE_BY.into(),
            control: "--backing zswap --compressor deflate: a compressor with no skip".into(),
            findings: vec![MarkedFinding { id: "eat.trim_random_semi".into(), role: "positive".into(), side: None }],
        }
    }

    #[test]
    fn a_mark_is_read_back_and_said_in_one_line() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(Mark::load(tmp.path()).unwrap(), None, "no file, no mark");
        std::fs::write(tmp.path().join(FILE), serde_json::to_vec(&mark()).unwrap()).unwrap();
        let m = Mark::load(tmp.path()).unwrap().unwrap();
        assert_eq!(m, mark());
        let s = m.sentence();
        assert!(
            s.starts_with(
                "a control run, made by pagelab bench controls for eat.trim_random_semi (positive): --backing zswap"
            ),
            "{s}"
        );
        // A crafted mark stays one line and short.
        let evil = Mark {
            control: format!("a\nb\r{}", "x".repeat(10_000)),
            findings: (0..30)
                .map(|i| MarkedFinding { id: format!("e.f{i}\n"), role: "negative".into(), side: Some("above".into()) })
                .collect(),
            ..mark()
        };
        let s = evil.sentence();
        assert!(!s.chars().any(char::is_control) && s.chars().count() < 2000, "{s}");
        assert!(s.contains("e.f0\\n (negative, above)") && s.contains("and 10 more") && s.contains("x…"), "{s}");
    }

    #[test]
    fn what_is_not_a_mark_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join(FILE);
        for (text, needle) in [
            ("{", "not a control's mark"),
            (
                "{\"made_by\": \"pagelab bench controls\", \"control\": \"c\", \"findings\": [], \"x\": 1}",
                "unknown field",
            ),
            ("{\"made_by\": \"someone\", \"control\": \"c\", \"findings\": []}", "made_by: expected"),
        ] {
            std::fs::write(&f, text).unwrap();
            let e = Mark::load(tmp.path()).unwrap_err().to_string();
            assert!(e.contains("control.json") && e.contains(needle), "{text}: {e}");
        }
        std::fs::write(&f, vec![b' '; (MAX_BYTES + 1) as usize]).unwrap();
        assert!(Mark::load(tmp.path()).unwrap_err().to_string().contains("more than the"));
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &f).unwrap();
        assert!(Mark::load(tmp.path()).is_err(), "a link is not read");
    }
}
