//! A lab's pace against its plan, and the steps fitted to a budget by it.
//! Every choice here depends on times only, never on a finding's values, so
//! the verdicts' error is what it was.

use report::lab::Step;

/// Planned seconds of prior weight in a pass's pace ([`pace_of`]).
pub const PACE_PRIOR_S: f64 = 60.0;

/// The pace of a first pass so far: its steps' `actual` ÷ `planned` seconds,
/// shrunk toward the plan by a minute of planned time. The quick lab's first
/// two steps are 26 s of plan: a machine 8 % slower than planned on them
/// (wscap's 20.8 s against 17.5 one day, 19.8 the next) said the pass would
/// overrun by 7 s, and halved heap's repeats, which left its findings open
/// and the lab 50 s under its budget.
pub fn pace_of(actual: f64, planned: f64) -> f64 {
    (actual + PACE_PRIOR_S) / (planned + PACE_PRIOR_S)
}

/// The step `s` of a first pass, with fewer repeats when at the `pace` of
/// the steps before it (their actual ÷ planned seconds, held within 0.25 –
/// 4) it and the `rest` of the pass (planned seconds) would not fit in the
/// `left` seconds of the budget: the most repeats that fit, an even count
/// (ABBA's order effect cancels over pairs), never fewer than two (a finding
/// needs two for an interval). None when it fits, has no
/// `--repeat`, or has two already. The choice depends on times only, never
/// on a finding's values, so the verdicts' error is what it was.
pub fn fit_step(s: &Step, pace: f64, rest: f64, left: f64) -> Option<Step> {
    let pace = if pace.is_finite() { pace.clamp(0.25, 4.0) } else { 1.0 };
    if pace * (s.expect_s + rest) <= left {
        return None;
    }
    let n = experiments::kit::plan::repeat_of(s)?;
    if n <= 2 {
        return None;
    }
    let per = s.expect_s / n as f64;
    // An even count: ABBA's order effect cancels over pairs of repeats.
    let fits = (2..n).rev().filter(|m| m % 2 == 0).find(|&m| pace * (per * m as f64 + rest) <= left).unwrap_or(2);
    let mut t = s.clone();
    t.repeat = Some(fits);
    t.expect_s = per * fits as f64;
    t.note = Some(format!(
        "{fits} of its {n} planned repeats: the steps before it ran at {}× their plan, and {n} would have passed the \
         budget",
        record::stats::claim::num(pace)
    ));
    Some(t)
}

/// Room a later pass keeps beyond the first pass's pace ([`later_left`]): a
/// quarter, as thrash's budgeted step keeps. A quick lab's second pass is one
/// step of up to ten repeats, and on 2026-11-30 one ran at 1.49× its plan
/// after a first pass at 1.31×.
pub const LATER_ROOM: f64 = 0.25;

/// The seconds of plan a later pass may buy in the `left` seconds of its
/// budget, and the first pass's pace (its steps' actual ÷ planned seconds,
/// held within 0.25 – 4; 1 before any step ran): `left` ÷ (pace × (1 +
/// [`LATER_ROOM`])). Unlike [`pace_of`], no prior: the whole first pass has
/// run. A later pass fitted by its plan alone took a quick lab to 5 min 30 s
/// (docs/stability.md).
pub fn later_left(steps: &[Step], left: f64) -> (f64, f64) {
    let first = steps.iter().filter(|s| s.pass == 1);
    let (actual, planned) =
        first.filter_map(|s| Some((s.seconds?, s.expect_s))).fold((0.0, 0.0), |(a, p), (x, y)| (a + x, p + y));
    let pace = if planned > 0.0 && (actual / planned).is_finite() { (actual / planned).clamp(0.25, 4.0) } else { 1.0 };
    (left / (pace * (1.0 + LATER_ROOM)), pace)
}
