//! A finding judged on the run as the lab makes it and under its control:
//! each verdict read by the report's own code, the control's held to how
//! its finding was decided ([`report::verdict::held_at`]), and the gates a
//! control may lift by design.

use super::later::Rules;
use super::{Control, Negative, Turn, turned};
use experiments::thrash::findings::Which;
use std::path::Path;

/// A finding's verdict in one run, as the table shows it.
struct Judged {
    verdict: String,
    estimate: Option<f64>,
    /// How many findings its family judged (the Holm family it was decided in).
    family: usize,
    /// The others in that family with a p (their ids).
    members: Vec<&'static str>,
    /// The factor it was decided at: adjusted p ÷ p (Holm's, in its family);
    /// without a p, the family's size (Bonferroni's).
    factor: f64,
    /// The region it was judged against.
    region: Option<record::stats::claim::Region>,
    /// Inconclusive after the first pass on a test the lab's second pass
    /// would take up ([`super::later`]).
    open: bool,
    /// The pass that gave the verdict: 2 where the passes were combined.
    pass: u32,
}

/// A run's report, judged by the report's own code.
fn load(dir: &Path) -> anyhow::Result<report::html::Report> {
    report::html::Report::load(dir, report::html::Render::Never, experiments::catalog())
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The verdict of `id` in the run at `dir` at the lab's first pass's share
/// of the error (`rules`): as the lab would judge it (`held` None: the run
/// as the lab makes it, `b` below: Holm in its run's family), or held to
/// how its finding was decided there, `b` ([`report::verdict::held_at`]):
/// its p times the larger of its Holm factor among `b`'s family's members
/// (each one the control's run could not judge at p = 1) and the factor `b`
/// was decided at, the floor rule at that factor; so that no control turns
/// more easily than its finding was decided, whichever findings the
/// control's own run could judge and however the control moved them. With
/// a [`Lift`], a verdict the protocol made "outside the protocol" is
/// decided on its estimate alone where the lift accepts every run of the
/// directory (it broke the protocol only as the control must); the other
/// members' p's are only those their run gave inside the protocol.
///
/// `later`: the run of the lab's second pass for this directory, where
/// one was made ([`super::later`]). A verdict the first pass left open is
/// judged again on both passes' repeats, each pass tested alone and
/// combined as the lab combines them ([`report::verdict::judge_later`]), at
/// the second pass's share ÷ the family's size (Bonferroni: for a control,
/// the size of its finding's family as the lab's run had it, or its own
/// run's, the larger).
fn verdict_of(
    dir: &Path,
    later: Option<&Path>,
    id: &str,
    held: Option<(Option<Lift>, &Judged)>,
    rules: &Rules,
) -> anyhow::Result<Judged> {
    let r = load(dir)?;
    let f = r.findings();
    let Some(v) = f.iter().find(|(_, v)| v.id == id).map(|(_, v)| *v) else {
        return Ok(Judged {
            verdict: "not judged".into(),
            estimate: None,
            family: 0,
            members: Vec::new(),
            factor: 1.0,
            region: None,
            open: false,
            pass: 1,
        });
    };
    // The others of its family this run judged, with their p's.
    let family: Vec<(&'static str, f64)> = f
        .iter()
        .map(|(_, o)| *o)
        .filter(|o| o.id != id && o.family_name == v.family_name)
        .filter_map(|o| o.p.map(|p| (o.id, p)))
        .collect();
    use report::verdict::Outcome::{Differs, Inconclusive, Matches, OutsideProtocol};
    let tested = matches!(v.outcome, Matches | Differs | Inconclusive) && v.pass == 1;
    // Bonferroni's family for a later pass.
    let mut size = v.family.max(1 + family.len());
    let (verdict, open) = match held {
        None if tested => {
            // Holm in its run's family, at the first pass's share.
            let ps: Vec<f64> = family.iter().map(|(_, p)| *p).collect();
            let at = report::verdict::held_at(v, &ps, size, 1.0, rules.first());
            (at.word().to_string(), at == Inconclusive)
        }
        None => (v.outcome.word().to_string(), false),
        Some((lift, b)) => {
            size = size.max(b.family);
            let lifted = lift.filter(|_| v.outcome == OutsideProtocol && v.ungated.is_some());
            if let Some(Err(why)) = lifted.map(|ok| ok(dir)) {
                (format!("outside the protocol beyond what the control removes: {why}"), false)
            } else if v.outcome == OutsideProtocol && lifted.is_none() {
                (v.outcome.word().to_string(), false)
            } else {
                let own = v.ungated.filter(|_| lifted.is_some()).map_or(v.outcome, |(o, _)| o);
                // Only the members of the family its finding was decided in.
                let others: Vec<f64> = family.iter().filter(|(o, _)| b.members.contains(o)).map(|(_, p)| *p).collect();
                let at = report::verdict::held_at(v, &others, b.family.max(1), b.factor, rules.first());
                // A verdict on its estimate alone gets no later pass.
                let open = at == Inconclusive && tested && lifted.is_none();
                if at == Inconclusive && matches!(own, Matches | Differs) {
                    ("inconclusive at the family's level".into(), open)
                } else {
                    (at.word().to_string(), open)
                }
            }
        }
    };
    // As the lab's planner: a later pass only for what a number of repeats
    // could decide at its level (not an estimate on an edge, nor one
    // needing more than a thousand).
    let open = open
        && rules.second().is_some_and(|a| {
            record::stats::claim::estimate_at(&v.values, v.resolution)
                .and_then(|e| record::stats::claim::repeats_to_decide(&e, &v.region, a / size as f64))
                .is_some()
        });
    let (family_n, factor) = decided_at(v.p, v.p_adjusted, v.family, family.len());
    let mut j = Judged {
        verdict,
        estimate: v.estimate,
        family: family_n,
        members: family.iter().map(|(o, _)| *o).collect(),
        factor,
        region: Some(v.region),
        open,
        pass: 1,
    };
    if let (true, Some(later), Some(alpha)) = (open, later, rules.second()) {
        let r2 = load(later)?;
        let f2 = r2.findings();
        let v2 = f2.iter().find(|(_, x)| x.id == id).map(|(_, x)| *x);
        let c = experiments::catalog().claim(id).ok_or_else(|| anyhow::anyhow!("{id}: no such claim"))?;
        let mut w = v.clone();
        w.outcome = Inconclusive;
        report::verdict::judge_later(&mut w, &c, &[Some(v), v2], &rules.weights, alpha, size, 2);
        if w.pass == 2 {
            // `family` and `factor` stay the first pass's: a control's first
            // pass is held to its finding's first pass, whichever pass
            // decided the finding (`open` asks the same before the second
            // pass runs), and its second pass to Bonferroni over `size`.
            j.pass = 2;
            j.estimate = w.estimate;
            j.verdict = w.outcome.word().to_string();
            j.open = !w.outcome.decided();
        } else {
            // The second pass ran and could not be combined: said in the
            // row, never silently the first pass's verdict alone.
            let why = if v2.is_none() { "its run did not judge it".to_string() } else { w.why.clone() };
            j.verdict = format!("{} (pass 2 not combined: {why})", j.verdict);
        }
    }
    Ok(j)
}

/// Whether the first pass left the run as the lab makes it (`base`) and
/// the control (`ctl`) open for any finding of `c`: each then gets the
/// lab's second pass ([`super::later`]).
pub(super) fn open(c: &Control, base: &Path, ctl: &Path, rules: &Rules) -> anyhow::Result<(bool, bool)> {
    let (mut b_open, mut k_open) = (false, false);
    for &(id, _) in c.ids {
        let b = verdict_of(base, None, id, None, rules)?;
        let k = verdict_of(ctl, None, id, Some((c.lifts_gate, &b)), rules)?;
        b_open |= b.open;
        k_open |= k.open;
    }
    Ok((b_open, k_open))
}

/// The size of the family a verdict was decided in and the factor it was
/// decided at, from its p, its adjusted p, the family the report gave it
/// and the `others` of that family with a p. With a p: that family, and
/// Holm's factor (adjusted p ÷ p; the family's size where Holm capped the
/// adjusted p at 1, which understates it). Without one (a check, a claim
/// not judged, one outside the protocol: the report leaves its family at
/// 1, or 0 for a check): its family is itself and the others, at
/// Bonferroni's factor, its size.
pub(super) fn decided_at(p: Option<f64>, adjusted: Option<f64>, family: usize, others: usize) -> (usize, f64) {
    match (p, adjusted) {
        (Some(p), Some(a)) if p > 0.0 && a < 1.0 => (family.max(1), (a / p).max(1.0)),
        (Some(_), Some(_)) => (family.max(1), family.max(1) as f64),
        _ => (1 + others, (1 + others) as f64),
    }
}

/// Whether every run in a control's directory broke the protocol only as
/// the control must (Err: which did not).
pub(super) type Lift = fn(&Path) -> Result<(), String>;

/// thrash's CPU-only control: every run in `dir` only had its paging
/// taken away ([`experiments::thrash::protocol::only_paging_removed`]).
pub(super) fn thrash_cpu_only(dir: &Path) -> Result<(), String> {
    each_thrash_run(dir, &["e1", "e2", "e3", "e4"], experiments::thrash::protocol::only_paging_removed)
}

/// thrash.writes' control: every run of the presets writes reads (e1 and
/// e2) in `dir` only had its sleep taken away
/// ([`experiments::thrash::protocol::only_sleep_removed`]). e4's short life
/// with no sleep is a fill burst that breaks depth (every e4 run on
/// 2026-11-29/30), which says nothing of e1 and e2.
pub(super) fn thrash_sleep_removed(dir: &Path) -> Result<(), String> {
    each_thrash_run(dir, Which::Writes.presets(), experiments::thrash::protocol::only_sleep_removed)
}

/// Whether every thrash run of `presets` in `dir` passes `ok` (Err: the
/// first that does not).
pub(super) fn each_thrash_run(
    dir: &Path,
    presets: &[&str],
    ok: fn(&experiments::thrash::results::ThrashResult) -> bool,
) -> Result<(), String> {
    let b = std::fs::read(dir.join("run.json")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let run: serde_json::Value = serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", dir.display()))?;
    let entries: Vec<experiments::thrash::results::Entry> = serde_json::from_value(run["results"].clone())
        .map_err(|e| format!("{}: its results are not thrash's: {e}", dir.display()))?;
    let read: Vec<_> =
        entries.iter().filter(|e| presets.iter().any(|p| report::verdict::group_is(&e.result.preset, p))).collect();
    match read.iter().find(|e| !ok(&e.result)) {
        Some(e) => Err(format!("{} repeat {} broke more", e.result.preset, e.result.repeat_index + 1)),
        None if read.is_empty() => Err("it has no runs".into()),
        None => Ok(()),
    }
}

/// Judges each finding of `c` on the run as the lab makes it (`base`) and
/// on its control (`ctl`), each with its second pass where one was made
/// (`later`: the base's, the control's), and adds a row per finding to
/// `turns`.
pub(super) fn judge(
    c: &Control,
    (base, ctl): (&Path, &Path),
    later: (Option<&Path>, Option<&Path>),
    rules: &Rules,
    turns: &mut Vec<Turn>,
) -> anyhow::Result<()> {
    for &(id, role) in c.ids {
        let b = verdict_of(base, later.0, id, None, rules)?;
        let k = verdict_of(ctl, later.1, id, Some((c.lifts_gate, &b)), rules)?;
        let (verdict, estimate, control_verdict, control_estimate) = (b.verdict, b.estimate, k.verdict, k.estimate);
        // The side against both regions: the one the finding was judged by
        // on the run as the lab makes it, and the one the control's verdict
        // was (a region may depend on the run: eat.semi_fraction's
        // compressor).
        let side = match (role, &b.region, &k.region) {
            (Negative(side), Some(rb), Some(rk)) => {
                side.holds(control_estimate, rb) && side.holds(control_estimate, rk)
            }
            (Negative(_), ..) => false,
            _ => true,
        };
        let m = turned(&verdict, &control_verdict, role, side);
        turns.push(Turn {
            id: id.to_string(),
            control: c.what.to_string(),
            role,
            verdict,
            estimate,
            pass: b.pass,
            control_verdict,
            control_estimate,
            control_pass: k.pass,
            control_gate_lifted: c.lifts_gate.is_some(),
            turned: m.turned,
            turned_as_check: m.as_check,
            turned_from_check: m.from_check,
            reads_other_way: m.reads_other_way,
            cannot_turn: m.cannot,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::{Machine, Scale, plan};

    /// A verdict the first pass left open is judged again on both passes
    /// where the second pass's run judged it; where that run did not, the
    /// row says the second pass was not combined, never the first pass's
    /// verdict alone.
    #[test]
    fn a_second_pass_that_cannot_be_combined_says_so() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        let budget = experiments::jank::cmd::quick_budget_s();
        let rules = Rules::of(&m, budget, &plan(&m, Scale::Quick, Some(budget), &[]));
        let dirs = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/crates/experiments/tests/fixtures/run-dirs"));
        let (eat, mapping) = (dirs.join("eat"), dirs.join("mapping"));
        // The fixture leaves read_back_alike inconclusive, four repeats from a decision.
        let first = verdict_of(&eat, None, "eat.read_back_alike", None, &rules).unwrap();
        assert!(first.open && first.pass == 1, "{}", first.verdict);
        let combined = verdict_of(&eat, Some(&eat), "eat.read_back_alike", None, &rules).unwrap();
        assert_eq!(combined.pass, 2, "{}", combined.verdict);
        assert!(!combined.verdict.contains("not combined"), "{}", combined.verdict);
        let lone = verdict_of(&eat, Some(&mapping), "eat.read_back_alike", None, &rules).unwrap();
        assert_eq!(lone.pass, 1);
        assert_eq!(lone.verdict, format!("{} (pass 2 not combined: its run did not judge it)", first.verdict));
    }
}
