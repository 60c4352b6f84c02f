//! How a control moved a finding's verdict: each (finding, control) pair's
//! [`Turn`], the rule that reads it by role ([`turned`]), the count over
//! findings and the table `bench controls` prints.

use super::Role;
use super::role::{Instrument, Negative};
use serde::Serialize;
use std::path::Path;

/// One finding judged on a run and on its control.
#[derive(Debug, Serialize)]
pub struct Turn {
    pub id: String,
    pub control: String,
    /// What the control does to the claim, fixed before the run (in JSON:
    /// `role`, "negative", "positive" or "instrument", and a negative
    /// one's `side`, "above" or "below" the region).
    #[serde(flatten, serialize_with = "super::role::flat")]
    pub role: Role,
    pub verdict: String,
    pub estimate: Option<f64>,
    /// The pass that gave `verdict`: 2 where the first left it open and the
    /// lab's second pass was run and combined with it.
    pub pass: u32,
    pub control_verdict: String,
    pub control_estimate: Option<f64>,
    /// The pass that gave `control_verdict`.
    pub control_pass: u32,
    /// The control left the study's protocol by design, and its verdict is
    /// what the rules give on its estimate alone.
    pub control_gate_lifted: bool,
    /// Turned the way its role says: a negative control from matches to
    /// differs on the side it predicts, a positive one from differs to
    /// matches. Never the other way, never into a check's result, and
    /// never an instrument check.
    pub turned: bool,
    /// It moved its way into a check's result: every value of the control
    /// was the same ([`report::verdict`]: the configuration alone fixed
    /// it). Shown, never counted as a turn: a check is no evidence, on the
    /// control's side as on the lab's.
    pub turned_as_check: bool,
    /// It moved its way from a check's result: every value of the run as
    /// the lab makes it was the same (thrash.recovery's four repeats all
    /// under its 0.1 s step), which read "check passed" (or "check failed")
    /// where a spread would have read matches (or differs). Shown, never
    /// counted as a turn: a check is no evidence, so neither is its turn.
    pub turned_from_check: bool,
    /// An instrument check read the other way (not a turn).
    pub reads_other_way: bool,
    /// The run as the lab makes it already gave the verdict the control
    /// should give: this control cannot turn it (it needs one of the other
    /// role).
    pub cannot_turn: bool,
}

/// How a control moved a finding's verdict ([`turned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Moved {
    /// Turned its way (never into a check's result, never an instrument
    /// check).
    pub(super) turned: bool,
    /// It moved its way into a check's result (shown, not a turn).
    pub(super) as_check: bool,
    /// It moved its way from a check's result (shown, not a turn).
    pub(super) from_check: bool,
    /// An instrument check read the other way.
    pub(super) reads_other_way: bool,
    /// The run as the lab makes it already gave the control's verdict.
    pub(super) cannot: bool,
}

/// How a control of `role` moved `base` to `control`. `side` says whether
/// the control's estimate lay on the side a negative control predicts.
/// A base that is a check's result of the same direction (every value of
/// the run as the lab makes it the same), or a control that moved into
/// one (every value of the control the same), is shown as moved, never
/// counted: a check is no evidence. Inconclusive, not checked and the rest
/// never turn.
pub(super) fn turned(base: &str, control: &str, role: Role, side: bool) -> Moved {
    use report::verdict::Outcome::*;
    if role == Instrument {
        // Either way between two decided verdicts; a check is no evidence.
        let (m, d) = (Matches.word(), Differs.word());
        let other = (base == m && control == d) || (base == d && control == m);
        return Moved { turned: false, as_check: false, from_check: false, reads_other_way: other, cannot: false };
    }
    let (want, want_check) = role.expects();
    let (from, from_check) = if want == Matches { (Differs, CheckFailed) } else { (Matches, CheckPassed) };
    let side = side || !matches!(role, Negative(_));
    let moved = |b: &str| b == from.word() && (control == want.word() || control == want_check.word()) && side;
    let as_check = base == from.word() && control == want_check.word() && side;
    Moved {
        turned: moved(base) && !as_check,
        as_check,
        from_check: base == from_check.word() && moved(from.word()),
        reads_other_way: false,
        cannot: base == want.word() || base == want_check.word(),
    }
}

/// The count the table ends with: the findings with a control run (one
/// whose only control is an instrument check counts, and never turns), and
/// those a control turned its way.
pub(super) fn count(turns: &[Turn]) -> (usize, usize) {
    let mut run: Vec<&str> = turns.iter().map(|t| t.id.as_str()).collect();
    run.sort();
    run.dedup();
    let turned = run.iter().filter(|id| turns.iter().any(|t| t.id == **id && t.turned)).count();
    (turned, run.len())
}

/// The text table of `turns`, what was not run and why, and the count.
pub(super) fn print_table(turns: &[Turn], not_run: &[(String, String)], out: &Path) {
    say::outln!("| finding | as the lab runs it | under its control | role | turned | control |");
    say::outln!("|---|---|---|---|---|---|");
    for t in turns {
        say::outln!("{}", row(t));
    }
    say::outln!("\nNot run here:");
    for (id, why) in not_run {
        say::outln!("- {id}: {why}");
    }
    let (turned, run) = count(turns);
    say::outln!(
        "\n{turned} of {run} findings with a control run here were turned by one, the way its role says (a negative \
         control from matches to differs on the side it predicts, a positive one from differs to matches; an \
         instrument check never counts); runs in {}",
        out.display()
    );
}

/// One row of the table.
pub(super) fn row(t: &Turn) -> String {
    let f = |x: Option<f64>| x.map_or("-".into(), record::stats::claim::num);
    let lifted = if t.control_gate_lifted { " (estimate alone)" } else { "" };
    let turned = match (t.turned, t.turned_as_check, t.reads_other_way, t.cannot_turn) {
        _ if t.turned_from_check => {
            "no: it moved its way from a check (every value of the lab's run the same), which is no evidence"
                .to_string()
        }
        (_, _, true, _) => "it reads the other way (an instrument check, not a turn)".to_string(),
        (_, true, ..) => {
            "no: it moved its way into a check (every value of the control the same), which is no evidence".to_string()
        }
        (true, false, ..) => "yes".to_string(),
        (false, _, _, true) => format!("cannot: the lab's run already {}", t.verdict),
        _ => "no".to_string(),
    };
    let role = match t.role.side() {
        Some(side) => format!("{} ({side})", t.role.word()),
        None => t.role.word().to_string(),
    };
    let pass = |p: u32| if p > 1 { format!(" in pass {p}") } else { String::new() };
    format!(
        "| {} | {}{} ({}) | {}{lifted}{} ({}) | {role} | {turned} | {} |",
        t.id,
        t.verdict,
        pass(t.pass),
        f(t.estimate),
        t.control_verdict,
        pass(t.control_pass),
        f(t.control_estimate),
        t.control
    )
}
