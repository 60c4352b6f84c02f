//! The floor rule (a verdict that a 10× larger or smaller resolution would
//! change is the resolution's, not the data's) and the test a verdict is
//! decided by.

use super::{Decision, Region, Verdict, claim};

/// The decision `d` taken at `floor`, tried again with the floor 10× larger
/// and 10× smaller (`retry(f)`: the decision with floor f, at the same level):
/// the floor it would change under, or None when it holds under both. A
/// verdict that changes with the floor is the resolution's, not the data's
/// (issue 57 item 4: stored fractions [0 ×6, 0.05 ×2] matched "≤ 0.01" with
/// a floor of 1e-4 and were inconclusive with 1e-3).
pub(super) fn floor_changes(d: Decision, floor: f64, retry: impl Fn(f64) -> Decision) -> Option<f64> {
    if d == Decision::Inconclusive || floor <= 0.0 {
        return None;
    }
    [floor * 10.0, floor / 10.0].into_iter().find(|f| retry(*f) != d)
}

/// The test of a verdict: its crossover fit's ([`Verdict::fit`]) where it
/// has one, else its values' read to `floor`.
pub(super) fn test_of(v: &Verdict, region: &Region, floor: f64) -> Option<claim::Test> {
    match v.fit {
        Some(f) => Some(claim::test_estimate(f.at, region)),
        None => claim::test_at(&v.values, region, floor),
    }
}

/// [`floor_changes`] for a verdict at level `alpha` after a multiplicity
/// factor `mult`. A crossover fit is of the arms' own figures: it was fitted
/// again with them read 10× coarser and 10× finer ([`Fit`]), and those
/// decide at the same level or the verdict hangs on the resolution (the
/// floor named is the claim's, 10× larger or smaller alike).
pub(super) fn floor_changes_of(v: &Verdict, d: Decision, floor: f64, alpha: f64, mult: f64) -> Option<f64> {
    match v.fit {
        Some(fit) => floor_changes(d, floor, |f| {
            let refit = if f > floor { fit.coarser } else { fit.finer };
            match refit.map(|e| claim::test_estimate(e, &v.region).p()) {
                Some((p, lean)) if p * mult <= alpha => lean,
                _ => Decision::Inconclusive,
            }
        }),
        None => floor_changes(d, floor, |f| decide_at_floor(&v.raw, &v.region, f, alpha, mult)),
    }
}

/// `raw` read to `floor`: each value at least one step.
pub(super) fn floored(raw: &[f64], floor: f64) -> Vec<f64> {
    raw.iter().map(|x| x.max(floor)).filter(|x| *x > 0.0).collect()
}

/// The decision of values read to `floor` at level `alpha` after a
/// multiplicity factor `mult` (1 alone; Holm's or Bonferroni's factor in a
/// family).
pub(super) fn decide_at_floor(raw: &[f64], region: &Region, floor: f64, alpha: f64, mult: f64) -> Decision {
    match claim::test_at(&floored(raw, floor), region, floor).map(|t| t.p()) {
        Some((p, lean)) if p * mult <= alpha => lean,
        _ => Decision::Inconclusive,
    }
}
