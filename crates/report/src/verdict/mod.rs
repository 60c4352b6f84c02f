//! Findings: each study's claims, fixed in code before the data, judged from
//! this run's repeats (docs/stability.md).
//!
//! A [`Claim`] names a quantity (a ratio of two arms that ran side by side in
//! each repeat, or one figure against a threshold) and its acceptance region
//! from the study. Its evidence is one value per repeat; the verdict comes from
//! the 95 % interval of their logs against the region
//! ([`record::stats::claim`]): **matches** inside, **differs** wholly outside,
//! otherwise **inconclusive**, with the repeats that would decide it. A report
//! that judges many claims controls the family-wise error across them with
//! Holm ([`family`]). The CV is shown on every figure, and gates nothing.

use crate::experiment::{Experiment, Parsed};
use crate::headline::{Figure, Metric};
use record::stats::claim::{self, ALPHA, Decision, Region, num};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matches,
    Differs,
    /// The interval straddles an edge of the acceptance region (or the run had
    /// one repeat): more repeats would decide it.
    Inconclusive,
    /// The study's protocol did not hold in this run (e.g. a consumer was OOM-killed).
    OutsideProtocol,
    NotChecked,
    /// A check (a value the configuration fixes, [`Kind::Check`]) whose every
    /// repeat lies inside its region.
    CheckPassed,
    /// A check with a repeat outside its region.
    CheckFailed,
}

/// What an entry of the findings is: evidence, or a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A claim that could come out either way on this machine: judged by its
    /// interval, in a family (Holm), counted in the decided share. It names
    /// its controls ([`Claim::control`]): under a negative one the claim is
    /// false, under a positive one true.
    Finding,
    /// A value the configuration alone fixes (identical in every repeat as measured, or declared
    /// so: [`Claim::check`]): shown as passed or failed, outside Holm, the families and the
    /// decided share. An interval of identical values is only the resolution's, at any n.
    Check,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Matches => "matches",
            Outcome::Differs => "differs",
            Outcome::Inconclusive => "inconclusive",
            Outcome::OutsideProtocol => "outside the protocol",
            Outcome::NotChecked => "not checked",
            Outcome::CheckPassed => "check passed",
            Outcome::CheckFailed => "check failed",
        }
    }
    pub fn decided(self) -> bool {
        matches!(self, Outcome::Matches | Outcome::Differs)
    }
}

/// A published finding as a claim this run can confirm or refute, declared
/// before the data: what is measured, and where it must lie.
#[derive(Debug, Clone, Copy)]
pub struct Claim {
    /// Stable identifier, `<experiment>.<name>`.
    pub id: &'static str,
    /// The study's finding, in words.
    pub claim: &'static str,
    /// What the study reported.
    pub study: &'static str,
    /// The quantity judged, one value per repeat.
    pub quantity: &'static str,
    /// Where the quantity must lie for the finding to hold.
    pub region: Region,
    /// The quantity's resolution: a value below it is raised to it (a fraction
    /// of 0 has no logarithm, and a zero is "less than one step", not
    /// nothing), and the values' spread is at least the resolution's
    /// ([`claim::estimate_at`]). Positive for every claim (a test checks).
    pub floor: f64,
    /// pagelab's own check (assess, heap over time, rightsize, thrash.recovery), not a
    /// published study's finding: judged in pagelab's family
    /// ([`PAGELAB_FAMILY`]) rather than its experiment's study's.
    pub own: bool,
    /// A check, not a finding ([`Kind::Check`]): the configuration fixes the
    /// value (a stored fraction of random bytes, a clip in the worker). An
    /// entry whose repeats are all identical as measured is judged as a check too.
    pub check: bool,
    /// Its controls: a configuration, input or perturbation under which the
    /// claim is false (negative) or, where one is known, true (positive),
    /// so that its verdict can turn (`pagelab bench controls`). Empty for a check.
    pub control: &'static str,
    /// Why, when it matches; and when it differs.
    pub yes: &'static str,
    pub no: &'static str,
}

/// One finding as judged: the claim, this run's estimate and interval, and the verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// `experiment.name`.
    #[schemars(pattern(r"^[a-z]+\.[a-z0-9_]+$"))]
    pub id: &'static str,
    /// A finding (evidence) or a check (a value the configuration fixes).
    pub kind: Kind,
    /// A finding's controls ([`Claim::control`]); null for a check.
    pub control: Option<&'static str>,
    /// The claim, in a sentence.
    pub claim: &'static str,
    /// What the study reported.
    pub study: &'static str,
    /// The quantity judged, one value per repeat.
    pub quantity: &'static str,
    /// The acceptance region on the ratio scale; null for an open side.
    pub region: Region,
    /// The region in words ("≥ 100").
    pub acceptance: String,
    /// This run's estimate with its interval, in words.
    pub ours: String,
    /// Geometric mean of the per-repeat values.
    pub estimate: Option<f64>,
    /// Its 95 % interval.
    pub ci95: Option<[f64; 2]>,
    /// The repeats the verdict rests on: `values.len()`.
    pub n: usize,
    /// The per-repeat values the verdict rests on.
    pub values: Vec<f64>,
    /// The quantity's resolution (the claim's floor): a value below it
    /// counts as it, and identical values have at least its spread.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub resolution: f64,
    /// Repeats the run measured but whose value could not be used (not a
    /// number, or an arm of 0 without a resolution): not in `n`, and the
    /// reason says how many.
    pub unusable: usize,
    /// Repeats whose value is a lower bound (a recovery not seen within the
    /// window watched counts at the window's length): they stay in, and a
    /// finding with any cannot match (the true values may lie further out).
    pub censored: usize,
    /// CV of the values (a description, not a gate).
    pub cv: Option<f64>,
    /// The p-value of the decision the interval leans to (this claim alone).
    #[schemars(range(min = 0, max = 1))]
    pub p: Option<f64>,
    /// The p adjusted for the claims judged together ([`family`]; in a later
    /// pass, [`judge_stages`]).
    #[schemars(range(min = 0, max = 1))]
    pub p_adjusted: Option<f64>,
    /// How many claims were judged together.
    pub family: usize,
    /// Which claims were judged together: the study of its experiment (the
    /// experiment's name), or [`PAGELAB_FAMILY`] for pagelab's own checks.
    pub family_name: String,
    #[serde(rename = "verdict")]
    pub outcome: Outcome,
    /// Why, in a sentence.
    #[serde(rename = "reason")]
    pub why: String,
    /// For an inconclusive claim: the repeats its observed spread suggests
    /// would decide it, at the strictest level its family may ask (α ÷ family).
    pub repeats_to_decide: Option<usize>,
    /// The lab pass whose data decided it (1: the first; a budgeted lab's
    /// later passes repeat what the first left inconclusive).
    #[schemars(range(min = 1))]
    pub pass: u32,
    /// Whether the verdict hung on the resolution: a 10× larger or smaller
    /// floor would have decided it otherwise, so it is inconclusive "at the
    /// resolution" (issue 57 item 4).
    pub at_resolution: bool,
    /// Whether the estimate, its interval and p come from a crossover fit
    /// with first-order carryover ([`record::stats::crossover`]: thrash's
    /// presets in a Williams order), not from the mean of `values`, which
    /// are then the per-repeat ratios, shown as measured. In a later pass's
    /// combination: its first pass was judged by the fit.
    pub carryover_fitted: bool,
    /// That fit ([`Verdict::carryover_fitted`]); None once a later pass has
    /// combined it with the passes after. Not in the document.
    #[serde(skip)]
    pub fit: Option<Fit>,
    /// The resolution of the figures the fit read ([`Fit::resolution`]),
    /// for the floor rule's words. Not in the document.
    #[serde(skip)]
    pub fit_resolution: Option<f64>,
    /// The values before the floor (finite, not negative; zeros kept): what a
    /// 10× larger or smaller floor is tried on. Not in the document.
    #[serde(skip)]
    pub raw: Vec<f64>,
    /// Where the arms ran outside the study's protocol: what the same rules
    /// gave on the estimate alone, judged alone (a family of one), with that
    /// decision's p. Only `bench controls` reads it, for a control that
    /// leaves the protocol by design (thrash's CPU-only control removes the
    /// overcommit the protocol requires), and holds it to the family's level
    /// itself. Never a verdict; not in the document.
    #[serde(skip)]
    pub ungated: Option<(Outcome, Option<f64>)>,
}

/// A run's metrics, as its findings look them up.
pub struct Ms<'a> {
    pub all: &'a [Metric],
    /// Err(why) when the run broke the study's protocol.
    pub protocol: Result<(), String>,
}

/// `group` names a configuration: "e2" is also "e2-custom" and "e2 lz4".
pub fn group_is(g: &str, want: &str) -> bool {
    g == want || g.starts_with(&format!("{want} ")) || g.starts_with(&format!("{want}-"))
}

impl<'a> Ms<'a> {
    pub fn metric(&self, group: &str, fig: &Figure) -> Option<&'a Metric> {
        self.all.iter().find(|m| group_is(&m.group, group) && m.name == fig.name)
    }
    /// The median of `name` in the first group that is `group`.
    pub fn get(&self, group: &str, fig: &Figure) -> Option<f64> {
        self.metric(group, fig)?.median()
    }
    /// The per-repeat values of a figure (each at least the figure's
    /// resolution: a zero is "less than one step"), or why there are none.
    pub fn values(&self, group: &str, fig: &Figure) -> Evidence {
        match self.metric(group, fig) {
            Some(m) => Ok(m.values.iter().map(|x| at_resolution(*x, m.resolution)).collect()),
            None => Err(format!("this run did not measure {} of {group}", fig.name)),
        }
    }
    /// a ÷ b per repeat, the arms paired by repeat, or why there is none.
    pub fn ratios(&self, a: (&str, &Figure), b: (&str, &Figure)) -> Evidence {
        let (Some(x), Some(y)) = (self.metric(a.0, a.1), self.metric(b.0, b.1)) else {
            return Err(format!("this run did not measure both {} and {}", a.0, b.0));
        };
        Ok(paired(x, y))
    }
}

/// a ÷ b of two medians (for tables), when both are there and b is positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The quantity's per-repeat values, or why this run cannot test the claim.
pub type Evidence = Result<Vec<f64>, String>;

/// a ÷ b for every repeat both measured, each arm at least its resolution (a
/// repeat whose b paged nothing is "a's pages ÷ under one page", the
/// strongest evidence that a pages more, not a repeat to drop). An arm of 0
/// with no resolution gives NaN, which the verdict counts as unusable
/// ([`Verdict::unusable`]) rather than losing it.
pub fn paired(a: &Metric, b: &Metric) -> Vec<f64> {
    let (ra, rb) = (a.resolution, b.resolution);
    per_repeat(a, &[b], |x, o| Some(ratio_at(x, ra, o[0], rb)))
}

/// x ÷ y, each at least its resolution. NaN (counted as unusable, not
/// dropped) when y is not positive and has no resolution, when either is
/// negative, and when both are under one step: 0 ÷ 0 is no effect to compare,
/// not a ratio of 1 (raised to one step each it would be 1 with almost no
/// spread, a near-certain "differs" from a run where nothing happened).
pub fn ratio_at(x: f64, rx: f64, y: f64, ry: f64) -> f64 {
    if x < rx && y < ry {
        return f64::NAN;
    }
    let (x, y) = (at_resolution(x, rx), at_resolution(y, ry));
    if y > 0.0 { x / y } else { f64::NAN }
}

/// A value read to `resolution`: at least one step (NaN stays NaN; no
/// resolution leaves it as it is). A negative value is no reading of a
/// quantity that cannot be negative (a difference that came out below 0): NaN,
/// counted as unusable, not raised to one step.
pub fn at_resolution(x: f64, resolution: f64) -> f64 {
    if x.is_nan() || resolution <= 0.0 {
        x
    } else if x < 0.0 {
        f64::NAN
    } else {
        x.max(resolution)
    }
}

/// `f(a's value, the others' values)` for every repeat of `a` that each of
/// `others` measured too: how a claim over several arms pairs them.
pub fn per_repeat(a: &Metric, others: &[&Metric], f: impl Fn(f64, &[f64]) -> Option<f64>) -> Vec<f64> {
    a.repeats
        .iter()
        .zip(&a.values)
        .filter_map(|(k, x)| {
            let o: Vec<f64> = others.iter().map(|m| m.at(*k)).collect::<Option<_>>()?;
            f(*x, &o)
        })
        .collect()
}

/// What a finding draws from the runs: one value per repeat (or why there is
/// none), and what the verdict says beside it.
#[derive(Debug, Clone, Default)]
pub struct Drawn {
    pub evidence: Option<Evidence>,
    /// How many of the values are lower bounds ([`Verdict::censored`]).
    pub censored: usize,
    /// The region, where it follows the run's configuration rather than being
    /// one for every run (eat's semi fraction follows the compressor); never
    /// the values.
    pub region: Option<Region>,
    /// Said before this run's estimate ("glibc ÷ mimalloc: …").
    pub label: Option<String>,
    /// Added to the verdict's reason (a figure of pagelab's own beside the study's).
    pub more: Option<String>,
    /// Why the arms this finding compares ran outside the study's protocol
    /// (thrash: a preset that did not overcommit or thrash as the study's
    /// did): the verdict is "outside the protocol", its estimate shown, and
    /// it takes no part in its family.
    pub outside: Option<String>,
    /// The estimate with first-order carryover fitted
    /// ([`record::stats::crossover::contrast`]), where the arms ran as a
    /// crossover that identifies it: the verdict's interval and p are the
    /// fit's, and `evidence` (the per-repeat ratios) is shown beside it.
    pub fit: Option<Fit>,
}

/// A crossover fit of a finding: its estimate with the arms' figures read
/// to their resolution, and again read 10× coarser and 10× finer, so that
/// the floor rule can ask whether the resolution decided it (None where a
/// refit is not identified: that counts as a change).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub at: claim::Estimate,
    pub coarser: Option<claim::Estimate>,
    pub finer: Option<claim::Estimate>,
    /// The arms' figures' resolution (pages, swap-outs/s), which the
    /// refits read 10× coarser and finer.
    pub resolution: f64,
}

impl From<Evidence> for Drawn {
    fn from(evidence: Evidence) -> Drawn {
        Drawn { evidence: Some(evidence), ..Default::default() }
    }
}

/// A finding as one unit: the claim (its text, the study's words, its region)
/// and the function that draws its evidence from the runs' figures and
/// entries. An experiment lists its findings once ([`crate::experiment::Study::findings`]);
/// its claims and its verdicts are derived from that list.
pub struct Finding<E: 'static> {
    pub claim: Claim,
    pub draw: fn(&Ms, &[E]) -> Drawn,
}

impl<E> Finding<E> {
    /// The claim judged alone on what [`Finding::draw`] takes from the runs.
    pub fn judge(&self, m: &Ms, entries: &[E]) -> Verdict {
        let d = (self.draw)(m, entries);
        let c = Claim { region: d.region.unwrap_or(self.claim.region), ..self.claim };
        let evidence = d.evidence.unwrap_or_else(|| Err("this run did not measure it".into()));
        let mut v = judge_fitted(&c, m, evidence, d.censored, d.fit);
        if let Some(l) = d.label
            && v.estimate.is_some()
        {
            v.ours = format!("{l}: {}", v.ours);
        }
        if let Some(more) = d.more {
            v.why += &more;
        }
        if let Some(why) = d.outside
            && v.outcome != Outcome::NotChecked
        {
            v.ungated = Some((v.outcome, v.p));
            (v.outcome, v.why, v.p, v.p_adjusted, v.repeats_to_decide) =
                (Outcome::OutsideProtocol, why, None, None, None);
            v.at_resolution = false;
        }
        v
    }
}

/// Judges one claim alone (a family of one) under the rules, in order:
/// 1. the protocol broke → outside the protocol;
/// 2. the run cannot test the claim (an arm missing) → not checked;
/// 3. fewer than two repeats → inconclusive (no interval);
/// 4. the 95 % interval inside the region → matches; wholly outside → differs;
///    otherwise inconclusive, with the repeats that would decide it.
pub fn judge(c: &Claim, m: &Ms, evidence: Evidence) -> Verdict {
    judge_censored(c, m, evidence, 0)
}

/// [`judge`], where `censored` of the values are lower bounds
/// ([`Verdict::censored`]).
pub fn judge_censored(c: &Claim, m: &Ms, evidence: Evidence, censored: usize) -> Verdict {
    judge_fitted(c, m, evidence, censored, None)
}

/// [`judge_censored`], where `fit` (a crossover's carryover-adjusted
/// estimate of the same quantity) gives the interval and p in place of the
/// values' mean.
fn judge_fitted(c: &Claim, m: &Ms, evidence: Evidence, censored: usize, fit: Option<Fit>) -> Verdict {
    let mut v = Verdict {
        id: c.id,
        kind: if c.check { Kind::Check } else { Kind::Finding },
        control: (!c.check).then_some(c.control),
        claim: c.claim,
        study: c.study,
        quantity: c.quantity,
        region: c.region,
        acceptance: c.region.describe(),
        ours: "-".into(),
        estimate: None,
        ci95: None,
        n: 0,
        values: Vec::new(),
        resolution: c.floor,
        unusable: 0,
        censored: 0,
        cv: None,
        p: None,
        p_adjusted: None,
        family: 1,
        family_name: String::new(),
        outcome: Outcome::NotChecked,
        why: String::new(),
        repeats_to_decide: None,
        pass: 1,
        at_resolution: false,
        carryover_fitted: false,
        fit: None,
        fit_resolution: None,
        raw: Vec::new(),
        ungated: None,
    };
    v.censored = censored;
    if let Err(why) = &m.protocol {
        v.outcome = Outcome::OutsideProtocol;
        v.why = why.clone();
        return v;
    }
    let values = match evidence {
        Ok(x) if !x.is_empty() => x,
        Ok(_) => {
            v.why = "this run did not measure it".into();
            return v;
        }
        Err(why) => {
            v.why = why;
            return v;
        }
    };
    // Every measured repeat is used: a value in [0, resolution) is raised to
    // it; one that is not a number or is negative cannot be, and the reason
    // counts it.
    v.raw = values.iter().copied().filter(|x| x.is_finite() && *x >= 0.0).collect();
    v.values = v.raw.iter().map(|x| x.max(c.floor)).filter(|x| *x > 0.0).collect();
    v.unusable = values.len() - v.values.len();
    v.n = v.values.len();
    if v.n == 0 {
        v.why = format!(
            "none of the {} repeats had a usable value (not measured, negative, or both arms under one step)",
            v.unusable
        );
        return v;
    }
    v.cv = record::stats::cv(&v.values);
    // As measured: values only the floor made alike stay a finding (`floor_changes_of` judges them).
    let measured: Vec<f64> = v.raw.iter().copied().filter(|x| x.max(c.floor) > 0.0).collect();
    let identical = v.n >= 2 && measured.iter().all(|x| *x == measured[0]);
    if c.check || identical {
        judge_check(&mut v, c, identical);
        return v;
    }
    v.fit = fit;
    v.carryover_fitted = fit.is_some();
    v.fit_resolution = fit.map(|f| f.resolution);
    let Some(t) = test_of(&v, &c.region, c.floor) else {
        v.estimate = record::stats::median(&v.values);
        v.ours = v.estimate.map(|x| format!("{} (n = {})", num(x), v.n)).unwrap_or("-".into());
        v.outcome = Outcome::Inconclusive;
        v.why = format!("n = {}: one repeat has no interval; run with --repeat 2 or more{}", v.n, unusable_note(&v));
        return v;
    };
    let e = t.estimate;
    if !representable(&e) {
        v.estimate = None;
        v.ours = format!("- (n = {})", v.n);
        v.why = out_of_range(&v.values);
        return v;
    }
    v.estimate = Some(e.estimate);
    v.ci95 = Some(e.ci95);
    let fitted = if v.carryover_fitted { ", carryover fitted" } else { "" };
    v.ours = format!("{} (95 % CI {} – {}, n = {}{fitted})", num(e.estimate), num(e.ci95[0]), num(e.ci95[1]), e.n);
    v.p = Some(t.p().0);
    v.p_adjusted = v.p;
    let d = t.decide(ALPHA);
    let changed = floor_changes_of(&v, d, c.floor, ALPHA, 1.0);
    settle(&mut v, c, d, ALPHA, "Holm", changed);
    v
}

/// A check: passed when every repeat lies inside the region, failed
/// otherwise; no interval, no p, no family ([`Kind::Check`]).
fn judge_check(v: &mut Verdict, c: &Claim, identical: bool) {
    v.kind = Kind::Check;
    v.control = None;
    v.family = 0;
    v.estimate = record::stats::median(&v.values);
    let inside = v.values.iter().all(|x| c.region.contains(*x));
    // A lower bound cannot show a value under an upper edge.
    if v.censored > 0 && c.region.hi.is_some() && inside {
        v.outcome = Outcome::NotChecked;
        v.why = format!(
            "a check whose {} of {} values are lower bounds (not seen within the window watched): they cannot show it \
             under {}",
            v.censored, v.n, v.acceptance
        );
        return;
    }
    v.outcome = if inside { Outcome::CheckPassed } else { Outcome::CheckFailed };
    let shown = v.estimate.map(num).unwrap_or_else(|| "-".into());
    v.ours = if identical {
        format!("{shown} in every repeat (n = {})", v.n)
    } else {
        format!("{shown} (median, n = {})", v.n)
    };
    let why = if identical {
        format!(
            "every repeat gave the same value ({shown}): the configuration fixes it, so it is a check, not evidence \
             (an interval of identical values is only the resolution's, and would decide at any n)"
        )
    } else {
        "a check, not evidence: the configuration fixes this value".to_string()
    };
    let outcome = if inside { c.yes } else { c.no };
    v.why = format!("{why}; {outcome}{}", unusable_note(v));
}

/// Whether an estimate and its interval are finite, positive numbers: values
/// such as 1e-300 and 1e300 give an interval of [0, ∞], which JSON cannot
/// carry (issue 46 item 12).
fn representable(e: &claim::Estimate) -> bool {
    [e.estimate, e.ci95[0], e.ci95[1]].iter().all(|x| x.is_finite() && *x > 0.0)
}

/// The reason for a finding whose values are out of floating point's range.
fn out_of_range(values: &[f64]) -> String {
    let lo = values.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "the values ({lo:e} to {hi:e}) are too far apart or too extreme for an interval in floating point: not judged"
    )
}

/// "; 1 of 4 repeats had no usable value …", when any had none.
fn unusable_note(v: &Verdict) -> String {
    match v.unusable {
        0 => String::new(),
        k => format!(
            "; {k} of {} repeats had no usable value (not measured, negative, or both arms under one step) and are \
             not in n",
            k + v.n
        ),
    }
}

/// Sets outcome and reason from a decision (at the family's level).
/// A decision that a 10× larger or smaller floor would change (`changed_at`,
/// the floor that changes it) becomes inconclusive at the resolution.
fn settle(v: &mut Verdict, c: &Claim, d: Decision, alpha: f64, correction: &str, changed_at: Option<f64>) {
    let region = v.region;
    v.at_resolution = changed_at.is_some();
    let d = if changed_at.is_some() { Decision::Inconclusive } else { d };
    // A lower bound cannot confirm that a value lies inside a region.
    let d = if d == Decision::Matches && v.censored > 0 { Decision::Inconclusive } else { d };
    v.outcome = match d {
        Decision::Matches => Outcome::Matches,
        Decision::Differs => Outcome::Differs,
        Decision::Inconclusive => Outcome::Inconclusive,
    };
    v.repeats_to_decide = None;
    v.why = match d {
        Decision::Matches => c.yes.to_string(),
        Decision::Differs => c.no.to_string(),
        Decision::Inconclusive => {
            // In a family, at the strictest level Holm may ask (α ÷ the family).
            let level = alpha / v.family.max(1) as f64;
            let e = v.fit.map(|f| f.at).or_else(|| claim::estimate_at(&v.values, v.resolution));
            let need = e.and_then(|e| claim::repeats_to_decide(&e, &region, level));
            v.repeats_to_decide = need;
            let family = if v.family > 1 && v.p.is_some_and(|p| p <= alpha) {
                format!(
                    "decided alone at {} % (p = {:.3}), but not after {correction} over {} findings (adjusted p = {:.3}); ",
                    num(100.0 * (1.0 - alpha)),
                    v.p.unwrap_or(1.0),
                    v.family,
                    v.p_adjusted.unwrap_or(1.0)
                )
            } else {
                String::new()
            };
            match need {
                Some(n) if n > v.n => format!(
                    "{family}the interval straddles an edge of {}; about {n} repeats would decide it{}",
                    v.acceptance,
                    if v.family > 1 { format!(" among {} findings", v.family) } else { String::new() }
                ),
                _ => {
                    format!("{family}the estimate sits on an edge of {}: more repeats may not decide it", v.acceptance)
                }
            }
        }
    };
    if let Some(f) = changed_at {
        v.repeats_to_decide = None;
        v.why = match v.fit_resolution {
            // A crossover fit read its arms' figures, not the ratio.
            Some(r) => format!(
                "at the resolution: with the arms' figures read to {} instead of {}, the fit of the same runs would \
                 judge it otherwise, so the resolution, not the data, would decide it",
                num(r * f / v.resolution),
                num(r)
            ),
            None => format!(
                "at the resolution: read to {} instead of {}, the same repeats would be judged otherwise, so the \
                 floor, not the data, would decide it",
                num(f),
                num(v.resolution)
            ),
        };
    }
    v.why += &unusable_note(v);
    if v.censored > 0 {
        v.why += &format!(
            "; {} of {} repeats are lower bounds (not seen within the window watched, counted at its length), so it \
             cannot match",
            v.censored, v.n
        );
    }
}

/// Judges claims together: Holm's step-down over their p-values, so that the
/// chance of any wrong decision among them is at most `alpha` (5 % in a
/// report of one pass). A claim decided alone but not after the correction
/// becomes inconclusive, and says so.
pub fn family(vs: &mut [&mut Verdict], claims: &dyn Fn(&str) -> Option<Claim>, alpha: f64) {
    let ps: Vec<Option<f64>> = vs.iter().map(|v| v.p).collect();
    let m = ps.iter().flatten().count();
    let adj = claim::holm_adjust(&ps);
    for (v, a) in vs.iter_mut().zip(adj) {
        let Some(a) = a else { continue };
        v.family = m;
        v.p_adjusted = Some(a);
        let Some(c) = claims(v.id) else { continue };
        let lean = test_of(v, &v.region, v.resolution).map_or(Decision::Inconclusive, |t| t.p().1);
        let d = if a <= alpha { lean } else { Decision::Inconclusive };
        // Holm's factor for this claim, applied to the same claim read to
        // another floor.
        let mult = match v.p {
            Some(p) if p > 0.0 => (a / p).max(1.0),
            _ => m as f64,
        };
        let changed = floor_changes_of(v, d, v.resolution, alpha, mult);
        settle(v, &c, d, alpha, "Holm", changed);
    }
}

/// Judges claims in their families ([`Verdict::family_name`]): Holm inside
/// each ([`family`]), so that the chance of any wrong verdict in a family is
/// at most `alpha`.
pub fn families(vs: Vec<&mut Verdict>, claims: &dyn Fn(&str) -> Option<Claim>, alpha: f64) {
    let mut by: std::collections::BTreeMap<String, Vec<&mut Verdict>> = std::collections::BTreeMap::new();
    for v in vs {
        by.entry(v.family_name.clone()).or_default().push(v);
    }
    for (_, mut group) in by {
        family(&mut group, claims, alpha);
    }
}

/// The family of pagelab's own checks (assess, heap over time, rightsize,
/// thrash.recovery):
/// findings of no published study, judged together apart from the studies'.
pub const PAGELAB_FAMILY: &str = "pagelab";

/// The family a claim of `experiment` is judged in: its study's (the
/// experiment's name), or pagelab's own.
pub fn family_of(experiment: &str, c: &Claim) -> String {
    if c.own { PAGELAB_FAMILY.to_string() } else { experiment.to_string() }
}

/// One run's findings, judged in their families (its study's, and
/// pagelab's own checks).
pub fn verdicts(e: &dyn Experiment, p: &Parsed) -> Vec<Verdict> {
    let mut v = verdicts_of_runs(e, &[p]);
    let claim = |id: &str| e.claims().iter().find(|c| c.id == id).copied();
    families(v.iter_mut().collect(), &claim, ALPHA);
    v
}

/// The findings of several runs of one experiment (a lab's passes), each
/// judged alone: arms pair by repeat across all of them. Each carries its
/// family's name.
pub fn verdicts_of_runs(e: &dyn Experiment, runs: &[&Parsed]) -> Vec<Verdict> {
    let all = crate::headline::metrics_of_runs(e, runs);
    let m = Ms { all: &all, protocol: e.protocol(runs) };
    let mut vs = e.verdicts(&m, runs);
    for v in &mut vs {
        v.family_name = match e.claims().iter().find(|c| c.id == v.id) {
            Some(c) => family_of(e.name(), c),
            None => e.name().to_string(),
        };
    }
    vs
}

/// The family-wise error each pass of a lab may spend: all of it in one pass;
/// with later passes (`lab --budget`), 4 % on the first, where most findings
/// are decided, and the last 1 % split evenly among the others. By the union
/// bound the chance of any wrong decision in any pass stays ≤ 5 %, however the
/// later passes were chosen (docs/stability.md, "A budget").
pub fn alpha_by_pass(passes: u32) -> Vec<f64> {
    // Bounded: the count comes from lab.json (Lab::load refuses more).
    match passes.min(crate::lab::MAX_PASSES) {
        0 | 1 => vec![ALPHA],
        n => {
            let first = 0.8 * ALPHA;
            let mut v = vec![first];
            v.extend(std::iter::repeat_n((ALPHA - first) / (n - 1) as f64, n as usize - 1));
            v
        }
    }
}

mod doc;
mod floor;
mod held;
mod passes;
pub use doc::{FamilyDoc, Findings, GUARANTEE, METHOD, Row};
use floor::{floor_changes, floor_changes_of, floored, test_of};
pub use held::held_at;
pub use passes::{judge_later, judge_stages};

#[cfg(test)]
mod tests;
