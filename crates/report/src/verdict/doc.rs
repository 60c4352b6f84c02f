//! A report's findings as one document (`report --json`, lab.json).

use super::{Kind, Outcome, Verdict};
use record::stats::claim::ALPHA;
use serde::Serialize;

/// How verdicts are reached, in a line (`report --json`, lab.json).
pub const METHOD: &str = "95 % t interval of the per-repeat log values (arms paired by repeat) against an acceptance \
                          region fixed before the data; one family per study, and one for pagelab's own checks, with \
                          Holm's step-down inside each keeping its family-wise error at 5 % (in a budgeted lab, split \
                          between its passes: alpha_by_pass; a later pass tests each still open finding on each pass's \
                          repeats alone and combines the one-sided p-values with weights fixed before any data, \
                          inverse normal, Bonferroni inside the family)";

/// A report's findings as a document (`pagelab report DIR --json`, lab.json's
/// `findings`; schema/findings.schema.json).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Findings<'a> {
    pub method: &'static str,
    /// Family-wise error rate across the findings.
    #[schemars(range(min = 0, max = 1))]
    pub alpha: f64,
    /// The part of it each pass spent ([`alpha_by_pass`]): one entry unless a
    /// budgeted lab planned later passes.
    #[schemars(length(min = 1))]
    pub alpha_by_pass: Vec<f64>,
    /// Findings with an interval.
    pub family: usize,
    /// What the families guarantee, in a sentence.
    pub guarantee: &'static str,
    /// The families, each with its findings that had a test.
    pub families: Vec<FamilyDoc>,
    /// Findings the run could check (not "not checked", not outside the
    /// protocol; checks apart).
    pub checkable: usize,
    /// Of those, decided (matches or differs).
    pub decided: usize,
    /// Checks ([`Kind::Check`]): values the configuration fixes, apart from
    /// the findings and their decided share.
    pub checks: usize,
    /// Of those, passed.
    pub checks_passed: usize,
    /// Of those, failed (the rest were not checked or outside the protocol).
    pub checks_failed: usize,
    pub findings: Vec<Row<'a>>,
}

/// One family of findings judged together.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FamilyDoc {
    /// The experiment's name (its study), or [`PAGELAB_FAMILY`].
    pub name: String,
    /// Its findings with a test.
    pub size: usize,
    /// Of its findings, decided.
    pub decided: usize,
}

/// What the families guarantee ([`Findings::guarantee`]).
pub const GUARANTEE: &str = "per study, and for pagelab's own findings, the chance of any wrong verdict is at most 5 % \
                             (each family on its own: over a lab's six families together it can be up to about 26 %), \
                             as simulated over whole labs with right-skewed run times of 8-15 % an arm, slow outliers \
                             on one arm (15 % of runs, +30-40 %) and a carryover of 0.05 (docs/stability.md); checks \
                             are apart";

/// One finding with its experiment.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Row<'a> {
    pub experiment: &'a str,
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

impl<'a> Findings<'a> {
    pub fn of(rows: Vec<(&'a str, &'a Verdict)>) -> Findings<'a> {
        let checkable = rows
            .iter()
            .filter(|(_, v)| v.kind == Kind::Finding)
            .filter(|(_, v)| !matches!(v.outcome, Outcome::NotChecked | Outcome::OutsideProtocol))
            .count();
        let checks = rows.iter().filter(|(_, v)| v.kind == Kind::Check).count();
        let checks_passed = rows.iter().filter(|(_, v)| v.outcome == Outcome::CheckPassed).count();
        let mut families: Vec<FamilyDoc> = Vec::new();
        for (_, v) in &rows {
            if v.family_name.is_empty() {
                continue;
            }
            let i = match families.iter().position(|f| f.name == v.family_name) {
                Some(i) => i,
                None => {
                    families.push(FamilyDoc { name: v.family_name.clone(), size: 0, decided: 0 });
                    families.len() - 1
                }
            };
            families[i].size += usize::from(v.p.is_some());
            families[i].decided += usize::from(v.outcome.decided());
        }
        Findings {
            method: METHOD,
            alpha: ALPHA,
            alpha_by_pass: vec![ALPHA],
            family: rows.iter().filter(|(_, v)| v.p.is_some()).count(),
            guarantee: GUARANTEE,
            families,
            checkable,
            decided: rows.iter().filter(|(_, v)| v.outcome.decided()).count(),
            checks,
            checks_passed,
            checks_failed: rows.iter().filter(|(_, v)| v.outcome == Outcome::CheckFailed).count(),
            findings: rows.into_iter().map(|(experiment, verdict)| Row { experiment, verdict }).collect(),
        }
    }
    /// The same, for a lab that split its error between passes.
    pub fn with_passes(mut self, alphas: Vec<f64>) -> Findings<'a> {
        self.alpha_by_pass = alphas;
        self
    }
}
