//! A finding judged again in a later pass of a lab: each pass's repeats
//! tested alone and combined with weights fixed before the data.

use super::{Claim, Verdict, floor_changes, floored, out_of_range, representable, settle};
use record::stats::claim::{self, Decision, num};

/// Judges a claim that the passes before left inconclusive on every pass's
/// repeats: each pass tested on its own repeats alone, and the one-sided
/// p-values combined with the weights `ws` fixed before any data
/// ([`claim::test_stages`]), so that the test keeps its level however each
/// pass's size was chosen. It is decided at `alpha ÷ family` (Bonferroni
/// over the claims of its family that had a test in the first pass: the set
/// still open in a later pass depends on the first pass's data, and
/// Bonferroni holds whatever that set is). The estimate and interval shown
/// are those of every repeat together, unadjusted. A pass with fewer than two
/// repeats of the claim has no spread of its own: the claim stays as it was,
/// and says so.
///
/// A pass whose finding was judged by a crossover fit (`fits`, by pass:
/// thrash's four presets with their carryover) is tested by that fit, and
/// read to another floor by its refits with the arms' figures 10× coarser
/// or finer ([`super::Fit`]; a refit that is not identified leaves no test,
/// which counts as a change).
#[allow(clippy::too_many_arguments)]
pub fn judge_stages(
    v: &mut Verdict,
    c: &Claim,
    raw: &[Vec<f64>],
    fits: &[Option<super::Fit>],
    ws: &[f64],
    alpha: f64,
    family: usize,
    pass: u32,
) {
    // A fitted stage read to another floor is its fit with the arms' figures
    // read as much coarser or finer ([`super::Fit`]).
    let test = |floor: f64| {
        let stages: Vec<Vec<f64>> = raw.iter().map(|s| floored(s, floor)).collect();
        let slices: Vec<&[f64]> = stages.iter().map(Vec::as_slice).collect();
        let mut at: Vec<Option<claim::Estimate>> = Vec::new();
        for f in fits {
            at.push(match f {
                Some(f) if floor > c.floor => Some(f.coarser?),
                Some(f) if floor < c.floor => Some(f.finer?),
                Some(f) => Some(f.at),
                None => None,
            });
        }
        claim::test_stages_fitted(&slices, &at, &c.region, ws, floor)
    };
    let stages: Vec<Vec<f64>> = raw.iter().map(|s| floored(s, c.floor)).collect();
    let Some(t) = test(c.floor) else {
        let sizes: Vec<String> = stages.iter().map(|s| s.len().to_string()).collect();
        v.why = format!(
            "{}; pass {pass} could not be combined with the passes before (repeats per pass: {}; each needs two)",
            v.why,
            sizes.join(", ")
        );
        return;
    };
    if !representable(&t.estimate) {
        v.why = format!("{}; pass {pass}: {}", v.why, out_of_range(&stages.concat()));
        return;
    }
    v.values = stages.concat();
    v.raw = raw.concat();
    v.n = v.values.len();
    v.cv = record::stats::cv(&v.values);
    let e = t.estimate;
    v.estimate = Some(e.estimate);
    v.ci95 = Some(e.ci95);
    v.ours = format!(
        "{} (95 % CI {} – {} of all {} pooled; the verdict is the passes' combination test)",
        num(e.estimate),
        num(e.ci95[0]),
        num(e.ci95[1]),
        e.n
    );
    let (p, lean) = t.p();
    let family = family.max(1);
    v.p = Some(p);
    v.p_adjusted = Some((p * family as f64).min(1.0));
    v.family = family;
    v.pass = pass;
    let d = if p * family as f64 <= alpha { lean } else { Decision::Inconclusive };
    let changed = floor_changes(d, c.floor, |f| match test(f).map(|t| t.p()) {
        Some((p, lean)) if p * family as f64 <= alpha => lean,
        _ => Decision::Inconclusive,
    });
    // The estimate shown is every pass's together now: the first pass's fit
    // alone no longer describes it.
    v.fit = None;
    settle(v, c, d, alpha, "Bonferroni", changed);
}

/// A finding still inconclusive, judged again in pass `pass` from its
/// verdict in each pass so far (`each[p]`: pass p + 1's, on that pass's
/// repeats alone; None where the pass did not measure it): the passes'
/// combination test ([`judge_stages`]) at `alpha ÷ family`. Its unusable and
/// censored counts become every pass's together when the passes were
/// combined. [`crate::model::Report::judge`] and the whole-lab simulation
/// call it.
pub fn judge_later(
    v: &mut Verdict,
    c: &Claim,
    each: &[Option<&Verdict>],
    ws: &[f64],
    alpha: f64,
    family: usize,
    pass: u32,
) {
    // A pass whose arms ran outside the study's protocol cannot decide it:
    // the finding is outside the protocol, as that pass's own verdict says.
    if let Some(out) = each.iter().flatten().find(|x| x.outcome == super::Outcome::OutsideProtocol) {
        (v.outcome, v.why, v.p, v.p_adjusted, v.repeats_to_decide) =
            (super::Outcome::OutsideProtocol, format!("pass {pass}: {}", out.why), None, None, None);
        v.pass = pass;
        return;
    }
    // Each pass's values before the floor: judge_stages reads them to the
    // claim's floor, and tries 10× either way.
    let values: Vec<Vec<f64>> = each.iter().map(|x| x.map(|x| x.raw.clone()).unwrap_or_default()).collect();
    let fits: Vec<Option<super::Fit>> = each.iter().map(|x| x.and_then(|x| x.fit)).collect();
    let unusable: usize = each.iter().flatten().map(|x| x.unusable).sum();
    let censored: usize = each.iter().flatten().map(|x| x.censored).sum();
    let first = (v.unusable, v.censored);
    (v.unusable, v.censored) = (unusable, censored);
    // The region the finding was judged against: a region that follows the
    // run's configuration (eat's semi fraction by compressor) stays the one
    // its draw gave, not the claim's default.
    let c = &Claim { region: v.region, ..*c };
    judge_stages(v, c, &values, &fits, ws, alpha, family, pass);
    if !v.outcome.decided() && v.pass < pass {
        // Not combined: the verdict is still the first pass's.
        (v.unusable, v.censored) = first;
    }
    if v.outcome.decided() {
        v.why = format!(
            "{} (decided in pass {pass}, passes combined, with its {} % share of the error)",
            v.why,
            num(100.0 * alpha)
        );
    }
}
