//! How `bench controls` holds a control's verdict to the way its finding
//! was decided ([`held_at`]).

use super::{Decision, Kind, Outcome, Verdict, claim, floor_changes_of, test_of};

/// What `bench controls` holds a control's verdict to, so that no control
/// turns more easily than its finding was decided: `v`'s p times the larger
/// of two factors, ≤ `alpha` (the share of the 5 % the lab's first pass
/// spends: 4 % where it plans a second, [`super::alpha_by_pass`]).
/// - Holm's factor for `v` in its finding's family as the control's run
///   judged it: `others` are the p-values of the other members of the
///   family the finding was decided in (`m` findings, `v` included) that
///   the control's run judged; each member it could not judge counts as
///   p = 1 (it is there and decides nothing), so a run that judged fewer
///   findings gives no smaller family (the review of 2026-11-30: thrash's
///   controls of e2 alone, eat's swap file where semi_fraction has no p).
/// - `base_factor`, the factor its finding was decided at (adjusted p ÷ p
///   on the run as the lab makes it; `m`, Bonferroni's, where that run gave
///   it no p): Holm's step-down credits small p's of the other members,
///   and in a control's run those are often the control's own doing (the
///   swap file moves eat's read_back_alike, `--free-pageout` mapping's
///   fresh_cheapest), which would test `v` at a smaller factor than its
///   finding was decided at (the second review of 2026-12-02).
///
/// The decision is `v`'s own test (its values read to its resolution, or
/// its crossover fit) at that level, the floor rule tried at the same
/// factor, and a censored value never matches. A verdict outside the
/// protocol is decided as if it were inside (its [`Verdict::ungated`]
/// path; whether the control may lift the gate is the caller's question).
/// A check's result stays as it is (no p: no evidence either way), and so
/// does a claim the run could not test. For a verdict of one pass: a
/// later pass's p is a combination that `v`'s values do not give
/// (Inconclusive). The promise holds pass by pass: a control's first pass
/// is held to its finding's first pass, and a later pass of either is
/// judged at the later pass's share ÷ the family's size (Bonferroni), by
/// [`super::judge_later`].
pub fn held_at(v: &Verdict, others: &[f64], m: usize, base_factor: f64, alpha: f64) -> Outcome {
    let own = match (v.outcome, v.ungated) {
        (Outcome::OutsideProtocol, Some((o, _))) => o,
        (o, _) => o,
    };
    if !matches!(own, Outcome::Matches | Outcome::Differs | Outcome::Inconclusive) || v.kind == Kind::Check {
        return own;
    }
    if v.pass > 1 {
        return Outcome::Inconclusive;
    }
    let Some(test) = test_of(v, &v.region, v.resolution) else { return Outcome::Inconclusive };
    let (p, lean) = test.p();
    // v's own p first, then the others', then the family's absent members.
    let n = (1 + others.len()).max(m);
    let ps: Vec<Option<f64>> = std::iter::once(Some(p))
        .chain(others.iter().map(|x| Some(*x)))
        .chain(std::iter::repeat(Some(1.0)))
        .take(n)
        .collect();
    let holm = claim::holm_adjust(&ps)[0].unwrap_or(1.0);
    let mult = if p > 0.0 { (holm / p).max(1.0) } else { n as f64 }.max(base_factor);
    let d = if p * mult <= alpha { lean } else { Decision::Inconclusive };
    let d = if floor_changes_of(v, d, v.resolution, alpha, mult).is_some() { Decision::Inconclusive } else { d };
    match d {
        Decision::Matches if v.censored > 0 => Outcome::Inconclusive,
        Decision::Matches => Outcome::Matches,
        Decision::Differs => Outcome::Differs,
        Decision::Inconclusive => Outcome::Inconclusive,
    }
}
