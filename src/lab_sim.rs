//! Whole labs, simulated (issue 43 item 6, issue 57 item 3): every finding
//! of the quick lab's plan, with truths on and near its region's edges (never
//! a lab's own estimates), judged by the report's own code in its families,
//! with the real planner choosing the second pass
//! ([`crate::lab::choose_more`]) and the passes combined as `report` combines
//! them ([`report::verdict::judge_later`]).
//!
//! Runs, not finding values: each repeat of a ratio is two arms run side by
//! side in ABBA order across repeats, each arm's log time right-skewed (a
//! shifted exponential, 8–15 % an arm), slow outliers on one arm only (15 %
//! of its runs, +30–40 %, as a reclaim stall lands on the paging arm), an
//! order effect and a trend on the arm run second, and a carryover of
//! λ = 0.05 from the heavier arm into the run after it. The per-repeat value
//! is the estimator every finding now uses, the paired ratio of two arms
//! named before the data. The truth is the mean log ratio a user would see
//! over many runs, outliers included. The tests check what docs/stability.md
//! promises: per study the chance of any wrong verdict ≤ 5 %, the unadjusted
//! 95 % intervals cover the truth, and a finding whose truth lies outside its
//! region is almost never called "matches"; and three mutants (a max ÷ min
//! estimator, a pooled second look, a design that ignores carryover) each
//! break those bounds, so the simulation can fail.

use crate::lab::{Machine, Scale, choose_more, plan};
use experiments::jank::cmd::{JankLab, judged_in};
use experiments::kit::lab_args::LabArgs;
use record::stats::claim::Region;
use record::stats::rng::SplitMix64;
use report::lab::{Lab, Step, StepState};
use report::verdict::{self, Claim, Ms, Outcome, Verdict};
use std::collections::BTreeMap;

/// The arm run second in a repeat reads this much higher (log scale): what
/// the first arm leaves behind (a warm cache, a half-drained swap store).
const ORDER_EFFECT: f64 = 0.03;
/// The machine's speed drifts between the two arms of a repeat by this much
/// (log scale, the second arm's share): it falls on the arm run second.
const TREND: f64 = 0.01;
/// The drift of a figure judged alone (not a ratio of arms) from repeat to
/// repeat, in the diagnostic run only: a random walk of this step (log
/// scale). pagelab's figures judged alone are shares within one run (a
/// stored fraction, a progress ratio, a recovery in seconds), which the
/// machine's speed drift does not move; the asserted simulation gives them
/// none, and the diagnostic shows what a drifting one would cost.
const DRIFT_STEP: f64 = 0.02;
/// The quick lab's budget (`lab --quick`): two passes, as its plan decides
/// ([`crate::lab::passes_for`]; asserted in the simulation's tests).
const BUDGET_S: f64 = 300.0;
/// A budget a minute longer: two passes too, the second with more room.
const LONGER_BUDGET_S: f64 = 360.0;

/// A budget with just the quick plan's first pass in it (and seconds to
/// spare): one pass, and a slow lab cuts its later steps' repeats.
fn one_pass_budget() -> f64 {
    quick_lab(BUDGET_S).0.expect_s + crate::lab::REPORT_RESERVE_S + 5.0
}
/// Slow outliers on one arm: this share of its runs (issue 57 item 3).
const OUTLIER_SHARE: f64 = 0.15;
/// Their size: the run takes 1.3 to 1.4 times as long.
const OUTLIER_SIZE: (f64, f64) = (1.3, 1.4);
/// The carryover of the heavier arm into the run after it (log scale).
const CARRYOVER: f64 = 0.05;

/// The mean log of an outlier's factor, uniform on [a, b]:
/// (b ln b − b − a ln a + a) ÷ (b − a).
fn outlier_log_mean() -> f64 {
    let (a, b) = OUTLIER_SIZE;
    (b * b.ln() - b - a * a.ln() + a) / (b - a)
}

/// What the simulated labs judge with: the report's procedure, or a mutant
/// that the simulation must catch (issue 57 item 3).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Procedure {
    /// As `report` judges: paired ratios of arms named before the data, ABBA
    /// order, the passes combined with weights fixed before the data.
    Report,
    /// A ratio to the largest of the arms (as eat.read_back_alike once took
    /// slowest ÷ fastest of three, and mapping.fresh_cheapest the cheapest):
    /// a third arm like the reference runs beside, and the value is the
    /// first arm ÷ the smaller of the two others.
    MaxMin,
    /// The second pass pooled with the first into one t test at the full
    /// 5 % (the second look of round one).
    PooledLook,
    /// The arms always in the same order (AB every repeat): the carryover and
    /// the order effect never cancel.
    IgnoresCarryover,
}

/// One finding of the simulated lab.
#[derive(Clone)]
struct Finding {
    exp: &'static str,
    claim: Claim,
    /// A ratio of arms that ran side by side ("÷" in its quantity).
    ratio: bool,
    /// Thrash's presets it compares: a later pass of thrash runs only the
    /// presets its chosen findings compare.
    presets: &'static [&'static str],
}

/// What a finding is in one simulated lab: its true value (log) and its
/// noise (log sd of one repeat).
#[derive(Clone, Copy)]
struct Truth {
    log: f64,
    sd: f64,
    /// A figure alone drifts by a random walk of this step (log scale).
    walk_step: f64,
    /// With the order effect, the trend and the drift on top of `sd` (false
    /// where `sd` was measured: a measured spread holds them already).
    effects: bool,
    /// The arm that takes the slow outliers: the first of the ratio (true)
    /// or the reference.
    outliers_first: bool,
    /// The heavier arm, whose carryover lands on the run after it: the
    /// first (true) or the reference.
    heavy_first: bool,
}

impl Truth {
    /// Whether it lies in the region (closed), compared on the log scale the
    /// truth was drawn on: exp(ln x) is not always x, and an edge must stay
    /// an edge.
    fn inside(&self, r: &Region) -> bool {
        r.lo.is_none_or(|lo| self.log >= lo.ln()) && r.hi.is_none_or(|hi| self.log <= hi.ln())
    }
    fn covered_by(&self, ci: Option<[f64; 2]>) -> Option<bool> {
        ci.map(|[lo, hi]| lo.ln() <= self.log && self.log <= hi.ln())
    }
}

/// The quick lab as planned on a 2-core machine with root for a `budget`
/// (seconds), and its findings (thrash's too, at the budget that holds its
/// protocol: [`experiments::thrash::cmd::quick_budget_s`]).
fn quick_lab(budget: f64) -> (Lab, Vec<Finding>) {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let steps: Vec<Step> = plan(&m, Scale::Quick, Some(budget), &[]);
    let mut fs = Vec::new();
    for s in steps.iter().filter(|s| s.state == StepState::Planned) {
        let e = experiments::ALL.iter().find(|e| e.name() == s.experiment).expect("a planned experiment");
        // Checks are no evidence and take no part in a family: they are
        // not simulated (issue 57 item 1).
        for c in e.report.claims().into_iter().filter(|c| !c.check) {
            // jank judges only the findings whose two arms its step runs.
            if e.name() == "jank" && !judged_in(&JankLab::of(s).expect("the lab's jank step"), c.id) {
                continue;
            }
            let presets = if e.name() == "thrash" {
                experiments::thrash::cmd::presets_of(c.id).expect("every thrash finding names its presets")
            } else {
                &[]
            };
            fs.push(Finding { exp: e.name(), claim: c, ratio: c.quantity.contains('÷'), presets });
        }
    }
    let expect_s = steps.iter().map(|s| s.expect_s).sum();
    let passes = crate::lab::passes_for(Some(budget), &steps);
    let lab = Lab {
        format: record::rundir::FORMAT_VERSION,
        kind: "lab".into(),
        mode: "quick".into(),
        pagelab_version: String::new(),
        command_line: Vec::new(),
        started_unix_ms: 0,
        ended_unix_ms: None,
        wall_s: None,
        root: true,
        cpus: 2,
        ram_bytes: m.ram_bytes,
        expect_s,
        budget_s: Some(budget),
        passes,
        pass_weights: if passes > 1 { vec![1.0; passes as usize] } else { Vec::new() },
        doctor: serde_json::Value::Null,
        steps,
        notes: Vec::new(),
        pid: None,
        pid_starttime: None,
        only: Vec::new(),
        plan_digest: None,
        host: None,
        resumed: Vec::new(),
        findings: None,
    };
    (lab, fs)
}

/// Where a lab's truths lie.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Truths {
    /// Near an edge chosen at random: uniform from 3 sds inside to 3 sds
    /// outside, exactly on it one time in six, 8 sds away (inside a
    /// two-sided region: at most its middle) one time in five.
    Near,
    /// Every truth exactly on an edge: the worst case for "differs".
    OnEdge,
    /// Every truth a hundredth of an sd outside an edge: the worst case for
    /// "matches".
    JustOutside,
}

/// A truth for `region` with noise `sd`.
fn draw_truth(rng: &mut SplitMix64, region: &Region, sd: f64, how: Truths) -> f64 {
    let edges: Vec<(f64, f64)> =
        [region.lo.map(|x| (x.ln(), 1.0)), region.hi.map(|x| (x.ln(), -1.0))].into_iter().flatten().collect();
    let (edge, inward) = edges[rng.below(edges.len())];
    let d = match how {
        Truths::OnEdge => 0.0,
        Truths::JustOutside => -0.01,
        Truths::Near => {
            let u = rng.unit();
            if u < 1.0 / 6.0 {
                0.0
            } else if u < 1.0 / 6.0 + 0.2 {
                if rng.unit() < 0.5 { 8.0 } else { -8.0 }
            } else {
                rng.between(-3.0, 3.0)
            }
        }
    } * sd;
    let log = edge + inward * d;
    match (region.lo, region.hi) {
        (Some(lo), Some(hi)) if d > 0.0 => {
            let mid = (lo.ln() + hi.ln()) / 2.0;
            if inward > 0.0 { log.min(mid) } else { log.max(mid) }
        }
        _ => log,
    }
}

/// One arm's noise on the log scale: right-skewed (an exponential less its
/// mean, skewness 2), of standard deviation `sd`.
fn skewed(rng: &mut SplitMix64, sd: f64) -> f64 {
    sd * (-(1.0 - rng.unit()).ln() - 1.0)
}

/// A slow outlier (log scale): 0 in most runs, ln(1.3–1.4) in 15 %.
fn outlier(rng: &mut SplitMix64) -> f64 {
    if rng.unit() < OUTLIER_SHARE { rng.between(OUTLIER_SIZE.0, OUTLIER_SIZE.1).ln() } else { 0.0 }
}

/// `n` repeats of a finding, as runs. A ratio: two arms (the first at the
/// truth, the reference at 0, on the log scale) in ABBA order across repeats
/// (`IgnoresCarryover`: AB always), each right-skewed; slow outliers on one
/// arm; the arm run second reads higher by the order effect and the trend;
/// each run carries λ from the heavier arm when it ran just before (`prev`:
/// whether the last run, carried from repeat to repeat and pass to pass, was
/// the heavy one). The value is the first arm ÷ the reference, less the
/// outliers' mean so that the truth is the mean log ratio with them. A
/// figure alone: one run, skewed, with its outliers, drifting by a random
/// walk (`walk`).
fn repeats(rng: &mut SplitMix64, f: &Finding, t: Truth, n: usize, state: &mut ArmState, how: Procedure) -> Vec<f64> {
    let shift = OUTLIER_SHARE * outlier_log_mean();
    (0..n)
        .map(|_| {
            if !t.effects {
                return (t.log + t.sd * rng.t_unit(3)).exp();
            }
            if !f.ratio {
                state.walk += t.walk_step * rng.normal();
                return (t.log + skewed(rng, t.sd) + outlier(rng) - shift + state.walk).exp();
            }
            // The arm's own spread: a ratio's sd is √2 an arm's.
            let arm = t.sd / std::f64::consts::SQRT_2;
            let first_first = match how {
                Procedure::IgnoresCarryover => true,
                _ => state.runs % 2 == 0,
            };
            state.runs += 1;
            let mut x = [t.log + skewed(rng, arm), skewed(rng, arm)];
            let o = outlier(rng);
            x[if t.outliers_first { 0 } else { 1 }] += o;
            // The outliers' mean is part of the truth: the first arm's adds
            // to the ratio, the reference's takes from it.
            let centre = if t.outliers_first { shift } else { -shift };
            let order = if first_first { [0, 1] } else { [1, 0] };
            for (k, &i) in order.iter().enumerate() {
                if state.prev_heavy {
                    x[i] += CARRYOVER;
                }
                if k == 1 {
                    x[i] += ORDER_EFFECT + TREND;
                }
                state.prev_heavy = (i == 0) == t.heavy_first;
            }
            if how == Procedure::MaxMin {
                // A third arm, like the reference, run beside: the ratio to
                // the smaller of the two (the cheapest, the fastest).
                let third = skewed(rng, arm) + if t.outliers_first { 0.0 } else { outlier(rng) };
                return (x[0] - x[1].min(third) - centre).exp();
            }
            (x[0] - x[1] - centre).exp()
        })
        .collect()
}

/// What a finding's runs carry from repeat to repeat and pass to pass.
#[derive(Clone, Copy, Default)]
struct ArmState {
    /// A figure alone's random walk.
    walk: f64,
    /// Runs of a ratio so far (ABBA: which arm goes first).
    runs: usize,
    /// Whether the last run was the heavier arm.
    prev_heavy: bool,
}

/// One finding judged alone on `values`, in its family (not yet adjusted).
fn judged(f: &Finding, values: Vec<f64>) -> Verdict {
    let ms = Ms { all: &[], protocol: Ok(()) };
    let mut v = verdict::judge(&f.claim, &ms, Ok(values));
    v.family_name = verdict::family_of(f.exp, &f.claim);
    v
}

/// `--repeat` of a step.
fn repeat_of(s: &Step) -> usize {
    experiments::kit::plan::repeat_of(s).map_or(1, |n| n as usize)
}

/// How one simulated lab ended, finding by finding (in `fs`' order).
struct Outcomes {
    verdicts: Vec<Verdict>,
    /// The first pass's intervals (before the planner chose anything).
    first: Vec<Option<[f64; 2]>>,
    /// The planner chose a second pass.
    second_pass: bool,
    /// The first pass cut a step's repeats (`lab::fit_step`).
    cut: bool,
}

/// One lab: the first pass at `pace` (its steps' actual ÷ planned seconds;
/// above 1 the lab cuts later steps' repeats as `lab` does, `fit_step`),
/// the planner's second pass within what the budget leaves, and the passes
/// judged as `report` judges them: Holm in each family when `correct`,
/// each finding alone at 5 % when not (the negative control).
fn one_lab(
    rng: &mut SplitMix64,
    lab: &Lab,
    fs: &[Finding],
    truths: &[Truth],
    pace: f64,
    correct: bool,
    how: Procedure,
) -> Outcomes {
    let claim = |id: &str| fs.iter().find(|f| f.claim.id == id).map(|f| f.claim);
    // The first pass, step by step, fitted to the budget as the lab fits it.
    let mut lab = lab.clone();
    let budget = lab.budget_s.unwrap_or(BUDGET_S);
    let mut elapsed = 0.0;
    let mut planned_so_far = 0.0;
    let mut cut = false;
    let planned: Vec<usize> = (0..lab.steps.len()).filter(|&i| lab.steps[i].state == StepState::Planned).collect();
    for (k, &i) in planned.iter().enumerate() {
        if k > 0 {
            let rest: f64 = planned[k + 1..].iter().map(|&j| lab.steps[j].expect_s).sum();
            let left = budget - crate::lab::REPORT_RESERVE_S - elapsed;
            let seen = crate::lab::pace_of(elapsed, planned_so_far);
            if let Some(s) = crate::lab::fit_step(&lab.steps[i], seen, rest, left) {
                lab.steps[i] = s;
                cut = true;
            }
        }
        elapsed += lab.steps[i].expect_s * pace;
        planned_so_far += lab.steps[i].expect_s;
        lab.steps[i].state = StepState::Complete;
    }
    let n1 = |f: &Finding| lab.steps.iter().find(|s| s.experiment == f.exp).map_or(1, repeat_of);
    let mut states = vec![ArmState::default(); fs.len()];
    let pass1: Vec<Vec<f64>> =
        fs.iter().zip(truths).zip(&mut states).map(|((f, t), w)| repeats(rng, f, *t, n1(f), w, how)).collect();
    let mut vs: Vec<Verdict> = fs.iter().zip(&pass1).map(|(f, v)| judged(f, v.clone())).collect();
    let alphas = lab.alpha_by_pass();
    if correct {
        verdict::families(vs.iter_mut().collect(), &claim, alphas[0]);
    }
    let first = vs.iter().map(|v| v.ci95).collect();
    let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
    for v in vs.iter().filter(|v| v.p.is_some()) {
        *sizes.entry(v.family_name.clone()).or_default() += 1;
    }
    // The second pass, where the lab planned one: what the planner chose,
    // and every open finding of a chosen experiment whose arms it ran gets
    // its k new repeats, as `report` combines every open finding with data
    // in the later pass.
    let left = if lab.passes > 1 { budget - crate::lab::REPORT_RESERVE_S - elapsed } else { 0.0 };
    let open: Vec<(&str, &Verdict)> =
        fs.iter().zip(&vs).filter(|(_, v)| v.outcome == Outcome::Inconclusive).map(|(f, v)| (f.exp, v)).collect();
    let more: Vec<(String, u32, Vec<String>)> = choose_more(&lab, &open, 2, left)
        .into_iter()
        .map(|m| (m.step.experiment.clone(), m.k, experiments::thrash::cmd::step_presets(&m.step)))
        .collect();
    let weights = lab.pass_weights();
    for (i, f) in fs.iter().enumerate() {
        let Some((_, k, presets)) = more.iter().find(|(e, _, _)| e == f.exp) else { continue };
        let ran = f.presets.iter().all(|p| presets.is_empty() || presets.iter().any(|x| x == p));
        if vs[i].outcome != Outcome::Inconclusive || !ran {
            continue;
        }
        let more = repeats(rng, f, truths[i], *k as usize, &mut states[i], how);
        if how == Procedure::PooledLook {
            // The mutant: every repeat pooled into one t test at the full
            // 5 %, as if the first look had not happened.
            let mut v = judged(f, [pass1[i].clone(), more].concat());
            v.pass = 2;
            vs[i] = v;
            continue;
        }
        let second = judged(f, more);
        let alone = judged(f, pass1[i].clone());
        let family = sizes.get(&vs[i].family_name).copied().unwrap_or(1);
        verdict::judge_later(&mut vs[i], &f.claim, &[Some(&alone), Some(&second)], &weights, alphas[1], family, 2);
    }
    Outcomes { verdicts: vs, first, second_pass: !more.is_empty(), cut }
}

/// Wrong verdicts per family, in some labs.
#[derive(Default)]
struct Errors {
    labs: usize,
    wrong: BTreeMap<String, usize>,
}

impl Errors {
    fn add(&mut self, fs: &[Finding], truths: &[Truth], o: &Outcomes) {
        self.labs += 1;
        let mut any: BTreeMap<String, bool> = BTreeMap::new();
        for ((f, t), v) in fs.iter().zip(truths).zip(&o.verdicts) {
            let inside = t.inside(&f.claim.region);
            let bad = (v.outcome == Outcome::Matches && !inside) || (v.outcome == Outcome::Differs && inside);
            *any.entry(v.family_name.clone()).or_default() |= bad;
        }
        for (fam, w) in any {
            *self.wrong.entry(fam).or_default() += usize::from(w);
        }
    }
    fn merge(&mut self, o: Errors) {
        self.labs += o.labs;
        for (k, v) in o.wrong {
            *self.wrong.entry(k).or_default() += v;
        }
    }
    /// The largest family's share of labs with a wrong verdict.
    fn worst(&self) -> (f64, String) {
        self.wrong
            .iter()
            .map(|(k, v)| (*v as f64 / self.labs.max(1) as f64, k.clone()))
            .fold((0.0, String::new()), |m, x| if x.0 > m.0 { x } else { m })
    }
    fn describe(&self) -> String {
        let l = self.labs.max(1) as f64;
        self.wrong.iter().map(|(k, v)| format!("{k} {:.2} %", 100.0 * *v as f64 / l)).collect::<Vec<_>>().join(", ")
    }
}

/// Tallies over many labs.
#[derive(Default)]
struct Tally {
    labs: usize,
    /// Any wrong verdict per family: in all labs, and in the labs whose
    /// truths all sat on an edge or just outside (the worst cases).
    all: Errors,
    worst: Errors,
    /// Per finding: (labs with the truth outside its region within one sd of
    /// an edge, of them "matches").
    near_outside: BTreeMap<&'static str, (usize, usize)>,
    /// Intervals shown, and of them covering the truth: as reported, after
    /// the first pass, and those pooled over both passes.
    intervals: (usize, usize),
    first: (usize, usize),
    pooled: (usize, usize),
    /// Findings judged, and decided.
    findings: usize,
    decided: usize,
    second_pass_labs: usize,
    cut_labs: usize,
    /// Per finding, in the worst-case labs: (labs, wrong verdicts).
    worst_by: BTreeMap<&'static str, (usize, usize)>,
    /// Pooled intervals of ratios and of figures alone: (shown, covering).
    pooled_kind: [(usize, usize); 2],
}

fn count(c: &mut (usize, usize), hit: Option<bool>) {
    if let Some(h) = hit {
        c.0 += 1;
        c.1 += usize::from(h);
    }
}

impl Tally {
    fn add(&mut self, fs: &[Finding], truths: &[Truth], o: &Outcomes, how: Truths) {
        self.labs += 1;
        self.all.add(fs, truths, o);
        if how != Truths::Near {
            self.worst.add(fs, truths, o);
        }
        for ((f, t), (v, first)) in fs.iter().zip(truths).zip(o.verdicts.iter().zip(&o.first)) {
            let r = &f.claim.region;
            let near = [r.lo, r.hi].iter().flatten().any(|e| (t.log - e.ln()).abs() <= t.sd);
            if !t.inside(r) && near {
                let e = self.near_outside.entry(f.claim.id).or_default();
                e.0 += 1;
                e.1 += usize::from(v.outcome == Outcome::Matches);
            }
            count(&mut self.intervals, t.covered_by(v.ci95));
            count(&mut self.first, t.covered_by(*first));
            if v.pass > 1 {
                count(&mut self.pooled, t.covered_by(v.ci95));
                count(&mut self.pooled_kind[usize::from(!f.ratio)], t.covered_by(v.ci95));
            }
            if how != Truths::Near {
                let inside = t.inside(r);
                let bad = (v.outcome == Outcome::Matches && !inside) || (v.outcome == Outcome::Differs && inside);
                let e = self.worst_by.entry(f.claim.id).or_default();
                e.0 += 1;
                e.1 += usize::from(bad);
            }
            self.findings += 1;
            self.decided += usize::from(v.outcome.decided());
        }
        self.second_pass_labs += usize::from(o.second_pass);
        self.cut_labs += usize::from(o.cut);
    }
    fn merge(&mut self, o: Tally) {
        self.labs += o.labs;
        self.all.merge(o.all);
        self.worst.merge(o.worst);
        for (k, (a, b)) in o.near_outside {
            let e = self.near_outside.entry(k).or_default();
            e.0 += a;
            e.1 += b;
        }
        for (x, y) in [(&mut self.intervals, o.intervals), (&mut self.first, o.first), (&mut self.pooled, o.pooled)] {
            x.0 += y.0;
            x.1 += y.1;
        }
        self.findings += o.findings;
        self.decided += o.decided;
        self.second_pass_labs += o.second_pass_labs;
        self.cut_labs += o.cut_labs;
        for (k, (a, b)) in o.worst_by {
            let e = self.worst_by.entry(k).or_default();
            e.0 += a;
            e.1 += b;
        }
        for i in 0..2 {
            self.pooled_kind[i].0 += o.pooled_kind[i].0;
            self.pooled_kind[i].1 += o.pooled_kind[i].1;
        }
    }
}

/// `labs` labs with a `budget` (seconds): in half, truths near the edges; in
/// a quarter, every truth on an edge; in a quarter, every truth just outside
/// one. Noise of 8–15 % an arm; the first pass at a pace of 0.8–1.3 times its
/// plan. `correct`: families with Holm (false: each finding alone, the
/// negative control).
fn simulate(seed: u64, labs: usize, correct: bool, walk_step: f64, budget: f64, how: Procedure) -> Tally {
    let (lab, fs) = quick_lab(budget);
    let lab = &lab;
    let mut rng = SplitMix64(seed);
    let mut tally = Tally::default();
    for _ in 0..labs {
        let placed = match rng.unit() {
            u if u < 0.5 => Truths::Near,
            u if u < 0.75 => Truths::OnEdge,
            _ => Truths::JustOutside,
        };
        let truths: Vec<Truth> = fs
            .iter()
            .map(|f| {
                let arm = rng.between(0.08, 0.15);
                let sd = if f.ratio { arm * std::f64::consts::SQRT_2 } else { arm };
                let (outliers_first, heavy_first) = (rng.unit() < 0.5, rng.unit() < 0.5);
                Truth {
                    log: draw_truth(&mut rng, &f.claim.region, sd, placed),
                    sd,
                    walk_step,
                    effects: true,
                    outliers_first,
                    heavy_first,
                }
            })
            .collect();
        let pace = rng.between(0.8, 1.3);
        let o = one_lab(&mut rng, lab, &fs, &truths, pace, correct, how);
        tally.add(&fs, &truths, &o, placed);
    }
    tally
}

/// [`simulate`] on two threads (the seeds `seed` and `seed + 1`).
fn simulate_both(seed: u64, labs: usize, correct: bool, walk_step: f64, budget: f64, how: Procedure) -> Tally {
    let parts: Vec<Tally> = std::thread::scope(|s| {
        let hs: Vec<_> = [seed, seed + 1]
            .iter()
            .map(|&x| s.spawn(move || simulate(x, labs / 2, correct, walk_step, budget, how)))
            .collect();
        hs.into_iter().map(|h| h.join().expect("a simulation thread")).collect()
    });
    let mut t = Tally::default();
    for p in parts {
        t.merge(p);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound on the share of `labs` labs with a wrong verdict in a family,
    /// for a procedure whose rate is `rate`: three standard errors above it.
    fn bound(rate: f64, labs: usize) -> f64 {
        rate + 3.0 * (rate * (1.0 - rate) / labs.max(1) as f64).sqrt()
    }

    /// One budget's simulated labs: printed, and every promise asserted on
    /// them alone (`two`: the budget plans a second pass, which must occur).
    fn check(t: &Tally, budget: f64, two: bool) {
        println!(
            "{} simulated quick labs with a budget of {budget} s; {} had a second pass, {} cut a step's repeats",
            t.labs, t.second_pass_labs, t.cut_labs
        );
        println!(
            "  any wrong verdict, per family, all labs: {} (bound {:.2} %)",
            t.all.describe(),
            100.0 * bound(0.05, t.all.labs)
        );
        // The promise (docs/stability.md): per family, any wrong verdict in
        // at most 5 % of labs, also in the worst labs, where every truth sits
        // on an edge or just outside (issue 57 item 3). Under normal noise a
        // verdict's one-sided error is half the level (2.5 %); under the
        // skewed, one-armed noise simulated here it is more (printed below),
        // and the family's 5 % is what holds.
        let worst_bound = bound(0.05, t.worst.labs);
        println!(
            "  any wrong verdict, per family, the {} labs with every truth on an edge or just outside: {} (bound {:.2} %)",
            t.worst.labs,
            t.worst.describe(),
            100.0 * worst_bound
        );
        let rate = |c: (usize, usize)| c.1 as f64 / c.0.max(1) as f64;
        println!(
            "  coverage of the 95 % intervals: {:.2} % as reported, {:.2} % after the first pass, {:.2} % of the {} pooled over both passes",
            100.0 * rate(t.intervals),
            100.0 * rate(t.first),
            100.0 * rate(t.pooled),
            t.pooled.0
        );
        let (worst_m, worst_id, worst_n) = t
            .near_outside
            .iter()
            .map(|(id, c)| (c.1 as f64 / c.0.max(1) as f64, *id, c.0))
            .fold((0.0, "", 0), |m, x| if x.0 > m.0 { x } else { m });
        println!(
            "  'matches' with the truth outside, within one sd of an edge: at most {:.2} % ({worst_id}, of {worst_n} labs)",
            100.0 * worst_m
        );
        println!("  decided: {:.1} % of findings", 100.0 * t.decided as f64 / t.findings as f64);
        if let Some((id, (a, b))) = t.worst_by.iter().max_by_key(|(_, (_, b))| *b) {
            println!(
                "  the finding wrong most often in the worst-case labs: {id}, {b} of {a} ({:.2} %)",
                100.0 * *b as f64 / (*a).max(1) as f64
            );
        }
        let (worst_rate, worst_family) = t.worst.worst();
        println!("  the worst family in the worst-case labs: {worst_family}, {:.2} %", 100.0 * worst_rate);
        for (fam, w) in &t.all.wrong {
            assert!(
                (*w as f64 / t.all.labs as f64) <= bound(0.05, t.all.labs),
                "{budget} s, family {fam}: {w} of {} labs",
                t.all.labs
            );
        }
        // Each finding alone, in the worst-case labs: within the family's 5 %.
        for (id, (a, b)) in &t.worst_by {
            assert!(
                (*b as f64 / *a as f64) <= bound(0.05, *a),
                "{budget} s, {id}: wrong in {b} of {a} worst-case labs"
            );
        }
        for (fam, w) in &t.worst.wrong {
            let share = *w as f64 / t.worst.labs as f64;
            assert!(
                share <= worst_bound,
                "{budget} s, family {fam}: {w} of {} worst-case labs ({share})",
                t.worst.labs
            );
        }
        let shown = [("as reported", t.intervals), ("after the first pass", t.first)];
        let pooled = if two { vec![("pooled", t.pooled)] } else { vec![] };
        for (what, c) in shown.into_iter().chain(pooled) {
            assert!(c.0 > 1000 && rate(c) >= 0.93, "{budget} s, coverage {what}: {} of {}", c.1, c.0);
        }
        for (id, (a, b)) in &t.near_outside {
            assert!(*a > 500, "{budget} s, {id}: only {a} labs with the truth just outside");
            assert!(
                (*b as f64 / *a as f64) <= bound(0.025, *a),
                "{budget} s, {id}: 'matches' in {b} of {a} labs whose truth is outside"
            );
        }
        // It could have failed: where one pass is planned, slow labs cut
        // steps (the quick budget leaves seconds; a minute more leaves room
        // for a slow first pass); where two are, the planner chose second
        // passes, and where one is, none.
        if two {
            assert!(t.second_pass_labs > 100, "{budget} s: {} second passes", t.second_pass_labs);
        } else {
            assert!(t.cut_labs > 100, "{budget} s: {} cuts", t.cut_labs);
            assert_eq!(t.second_pass_labs, 0, "{budget} s: a lab of one pass ran a second");
        }
    }

    /// The whole-lab simulation: 10 000 quick labs on two threads, half with
    /// the quick lab's budget (one pass), half with a minute more (two).
    #[test]
    fn ten_thousand_simulated_labs_keep_every_promise() {
        let tight = one_pass_budget();
        assert_eq!(quick_lab(tight).0.passes, 1);
        assert_eq!(quick_lab(BUDGET_S).0.passes, crate::lab::BUDGET_PASSES);
        let one = simulate_both(43, 5_000, true, 0.0, tight, Procedure::Report);
        check(&one, tight, false);
        let two = simulate_both(45, 5_000, true, 0.0, BUDGET_S, Procedure::Report);
        check(&two, BUDGET_S, true);
        // The diagnostic: figures alone drifting (not asserted).
        let rate = |c: (usize, usize)| c.1 as f64 / c.0.max(1) as f64;
        let d = simulate_both(44, 2_000, true, DRIFT_STEP, LONGER_BUDGET_S, Procedure::Report);
        println!(
            "diagnostic, two passes, figures alone drifting {:.0} % a repeat: pooled coverage {:.2} % (ratios {:.2} %, figures alone {:.2} %); worst-case labs: {}",
            100.0 * DRIFT_STEP,
            100.0 * rate(d.pooled),
            100.0 * rate(d.pooled_kind[0]),
            100.0 * rate(d.pooled_kind[1]),
            d.worst.describe()
        );
    }

    /// The quick lab at the budget that lets thrash and jank in (issue 57
    /// item 2, issue 61): thrash's four study findings and jank's tenfold
    /// finding (the one its step judges) join the simulated families,
    /// thrash's presets paired as its findings pair them. (This plan holds
    /// every step of thrash's own budget and jank's beside them.)
    #[test]
    fn the_budget_that_holds_thrash_and_jank_keeps_every_promise() {
        let b = experiments::jank::cmd::quick_budget_s();
        assert!(b > experiments::thrash::cmd::quick_budget_s());
        let (lab, fs) = quick_lab(b);
        for x in ["thrash", "jank"] {
            assert!(lab.steps.iter().any(|s| s.experiment == x && s.state == StepState::Planned), "{x} planned");
        }
        assert!(fs.iter().filter(|f| f.exp == "thrash").count() >= 4, "thrash's findings are simulated");
        let jank: Vec<&str> = fs.iter().filter(|f| f.exp == "jank").map(|f| f.claim.id).collect();
        assert_eq!(jank, ["jank.zram_tenfold"], "jank's step judges its tenfold finding only");
        let t = simulate_both(61, 4_000, true, 0.0, b, Procedure::Report);
        check(&t, b, lab.passes > 1);
    }

    /// The negative control: the same labs judged without the families'
    /// correction (each finding alone at 5 %) break the worst-case bound the
    /// test above holds, so that test would catch a correction gone missing.
    #[test]
    fn without_families_the_simulated_error_exceeds_the_bound() {
        let t = simulate_both(99, 4_000, false, 0.0, one_pass_budget(), Procedure::Report);
        println!("without a family correction, the {} worst-case labs: {}", t.worst.labs, t.worst.describe());
        let (worst, fam) = t.worst.worst();
        assert!(worst > bound(0.05, t.worst.labs), "worst family {fam}: {worst}");
    }

    /// Issue 57 item 3: three mutants of the procedure each break a bound the
    /// report's own procedure keeps, so the simulation can fail. A max ÷ min
    /// estimator (a ratio to the smaller of two like arms) and a design that
    /// ignores carryover (AB every repeat) break the worst-case family bound
    /// in one pass; a pooled second look (all repeats in one t test at the
    /// full 5 % after a first look) breaks it in two.
    #[test]
    fn three_mutants_each_make_the_simulation_fail() {
        for (how, budget, seed) in [
            (Procedure::MaxMin, one_pass_budget(), 51),
            (Procedure::IgnoresCarryover, one_pass_budget(), 53),
            (Procedure::PooledLook, LONGER_BUDGET_S, 55),
        ] {
            let t = simulate_both(seed, 3_000, true, 0.0, budget, how);
            let (worst, fam) = t.worst.worst();
            println!(
                "{how:?}: the {} worst-case labs: {} (bound {:.2} %)",
                t.worst.labs,
                t.worst.describe(),
                100.0 * bound(0.05, t.worst.labs)
            );
            assert!(worst > bound(0.05, t.worst.labs), "{how:?}: worst family {fam}: {worst}");
        }
    }
}
