//! Whole labs, simulated (issue 43 item 6): every finding of the quick lab's
//! plan, with truths on and near its region's edges, heavy-tailed noise of
//! the size real machines show (8–15 % an arm, run to run), an order effect
//! and drift, judged by the report's own code in its families, with the real
//! planner choosing the second pass ([`crate::lab::choose_more`]) and the
//! passes combined as `report` combines them
//! ([`report::verdict::judge_later`]). The tests check what docs/stability.md
//! promises: per study the chance of any wrong verdict ≤ 5 %, the unadjusted
//! 95 % intervals cover the truth, and a finding whose truth lies outside its
//! region is almost never called "matches".

use crate::lab::{Machine, Scale, choose_more, plan};
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
/// The quick lab's budget (`lab --quick`): one pass at 5 %
/// ([`crate::lab::passes_for`]).
const BUDGET_S: f64 = 300.0;
/// A budget a minute longer: two passes, the second chosen by the planner.
const LONGER_BUDGET_S: f64 = 360.0;

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
/// (seconds), and its findings.
fn quick_lab(budget: f64) -> (Lab, Vec<Finding>) {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let steps: Vec<Step> = plan(&m, Scale::Quick, &[]);
    let mut fs = Vec::new();
    for s in steps.iter().filter(|s| s.state == StepState::Planned) {
        let e = experiments::ALL.iter().find(|e| e.name() == s.experiment).expect("a planned experiment");
        for c in e.report.claims() {
            let presets = if e.name() == "thrash" { experiments::thrash::cmd::presets_of(c.id) } else { &[] };
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

/// `n` repeats of a finding, in ABBA order from the first: a ratio's arm run
/// second reads higher by the order effect and the trend (together 4 %, so
/// an odd n leaves a third of it); a figure alone drifts by a random walk
/// (`walk`, carried from pass to pass).
fn repeats(rng: &mut SplitMix64, f: &Finding, t: Truth, n: usize, walk: &mut f64) -> Vec<f64> {
    (0..n)
        .map(|r| {
            let noise = t.sd * rng.t_unit(3);
            let y = if !t.effects {
                t.log + noise
            } else if f.ratio {
                let sign = if r % 2 == 0 { 1.0 } else { -1.0 };
                t.log + noise + sign * (ORDER_EFFECT + TREND)
            } else {
                *walk += t.walk_step * rng.normal();
                t.log + noise + *walk
            };
            y.exp()
        })
        .collect()
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
    experiments::kit::plan::repeat_of(s).map_or(1, |r| r.1 as usize)
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
fn one_lab(rng: &mut SplitMix64, lab: &Lab, fs: &[Finding], truths: &[Truth], pace: f64, correct: bool) -> Outcomes {
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
    let mut walks = vec![0.0; fs.len()];
    let pass1: Vec<Vec<f64>> =
        fs.iter().zip(truths).zip(&mut walks).map(|((f, t), w)| repeats(rng, f, *t, n1(f), w)).collect();
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
        .map(|m| {
            let presets =
                m.step.args.iter().position(|a| a == "--preset").map_or_else(Vec::new, |i| {
                    m.step.args[i + 1].split(',').map(str::to_string).collect::<Vec<String>>()
                });
            (m.step.experiment.clone(), m.k, presets)
        })
        .collect();
    let weights = lab.pass_weights();
    for (i, f) in fs.iter().enumerate() {
        let Some((_, k, presets)) = more.iter().find(|(e, _, _)| e == f.exp) else { continue };
        let ran = f.presets.iter().all(|p| presets.is_empty() || presets.iter().any(|x| x == p));
        if vs[i].outcome != Outcome::Inconclusive || !ran {
            continue;
        }
        let second = judged(f, repeats(rng, f, truths[i], *k as usize, &mut walks[i]));
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
fn simulate(seed: u64, labs: usize, correct: bool, walk_step: f64, budget: f64) -> Tally {
    let (lab, fs) = quick_lab(budget);
    let lab = &lab;
    let mut rng = SplitMix64(seed);
    let mut tally = Tally::default();
    for _ in 0..labs {
        let how = match rng.unit() {
            u if u < 0.5 => Truths::Near,
            u if u < 0.75 => Truths::OnEdge,
            _ => Truths::JustOutside,
        };
        let truths: Vec<Truth> = fs
            .iter()
            .map(|f| {
                let arm = rng.between(0.08, 0.15);
                let sd = if f.ratio { arm * std::f64::consts::SQRT_2 } else { arm };
                Truth { log: draw_truth(&mut rng, &f.claim.region, sd, how), sd, walk_step, effects: true }
            })
            .collect();
        let pace = rng.between(0.8, 1.3);
        let o = one_lab(&mut rng, lab, &fs, &truths, pace, correct);
        tally.add(&fs, &truths, &o, how);
    }
    tally
}

/// [`simulate`] on two threads (the seeds `seed` and `seed + 1`).
fn simulate_both(seed: u64, labs: usize, correct: bool, walk_step: f64, budget: f64) -> Tally {
    let parts: Vec<Tally> = std::thread::scope(|s| {
        let hs: Vec<_> = [seed, seed + 1]
            .iter()
            .map(|&x| s.spawn(move || simulate(x, labs / 2, correct, walk_step, budget)))
            .collect();
        hs.into_iter().map(|h| h.join().expect("a simulation thread")).collect()
    });
    let mut t = Tally::default();
    for p in parts {
        t.merge(p);
    }
    t
}

/// The pace of the first pass measured with [`MEASURED`]: its seconds ÷ its
/// plan's (270–272 s of 280.5 s).
const MEASURED_PACE: f64 = 0.96;

/// The quick lab measured on this project's VM (2 vCPUs, Intel Xeon,
/// 2026-11-26, four `pagelab lab --quick` with the plan of this commit):
/// each finding's estimate (the geometric mean of the four labs') and the
/// log sd of its repeats, pooled over the four labs (the root of the mean
/// variance: the median of four spreads of three degrees of freedom each
/// would understate it). A finding absent here was not checked there.
const MEASURED: &[(&str, f64, f64)] = &[
    ("eat.semi_fraction", 0.2084, 0.000862),
    ("eat.const_fraction", 0.0001, 0.0),
    ("eat.random_fraction", 1.0, 0.000122),
    ("eat.trim_random_semi", 0.694, 0.108),
    ("eat.trim_const_semi", 0.4886, 0.0885),
    ("eat.read_back_alike", 2.49, 0.0343),
    ("wscap.cap_slowdown", 734.4, 0.35),
    ("wscap.periodic_cheaper", 711.2, 0.346),
    ("wscap.cap_saves_no_memory", 0.9223, 0.00136),
    ("heap.growth", 1.029, 0.0348),
    ("heap.concurrent_linux", 4.852, 0.281),
    ("heap.glibc_keeps", 0.9267, 0.0513),
    ("heap.malloc_trim", 0.147, 0.295),
    ("heap.idle_gives_nothing", 1.0, 0.0),
    ("mapping.lazy_reset", 0.3647, 0.0425),
    ("mapping.fresh_cheapest", 2.782, 0.0669),
    ("mapping.shared_costlier", 1.44, 0.0894),
    ("thrash.deep", 0.3188, 0.128),
    ("thrash.writes", 1.394, 0.093),
    ("thrash.sleep", 0.7748, 0.0802),
    ("thrash.stagger", 1.893, 0.107),
    ("thrash.recovery", 1.0, 0.0),
    ("assess.zstd_better", 4.145, 0.0),
];

/// The decided share of labs like the one measured here ([`MEASURED`]), under
/// the current plan: its estimates as truths, its spreads as noise (no order
/// effect or drift on top: a measured spread holds them), at the pace
/// measured here. Also the share among findings whose repeats had a spread
/// (the others, identical values, are decided whatever the noise model), and
/// the findings not decided in every lab.
/// The fourth figure: the share of labs that decided at least 90 % of their
/// findings (issue 43's target for one lab).
fn decided_here(seed: u64, labs: usize) -> (f64, f64, Vec<String>, f64) {
    let (lab, all) = quick_lab(BUDGET_S);
    let fs: Vec<Finding> = all.into_iter().filter(|f| MEASURED.iter().any(|m| m.0 == f.claim.id)).collect();
    let truths: Vec<Truth> = fs
        .iter()
        .map(|f| {
            let &(_, est, sd) = MEASURED.iter().find(|m| m.0 == f.claim.id).expect("filtered");
            Truth { log: est.ln(), sd, walk_step: 0.0, effects: false }
        })
        .collect();
    let mut rng = SplitMix64(seed);
    let mut each = vec![0usize; fs.len()];
    let mut ninety = 0;
    for _ in 0..labs {
        let o = one_lab(&mut rng, &lab, &fs, &truths, MEASURED_PACE, true);
        for (d, v) in each.iter_mut().zip(&o.verdicts) {
            *d += usize::from(v.outcome.decided());
        }
        let decided = o.verdicts.iter().filter(|v| v.outcome.decided()).count();
        ninety += usize::from(decided as f64 >= 0.9 * fs.len() as f64);
    }
    let share = |keep: &dyn Fn(&Truth) -> bool| {
        let (d, n) = each
            .iter()
            .zip(&truths)
            .filter(|(_, t)| keep(t))
            .fold((0usize, 0usize), |(d, n), (x, _)| (d + x, n + labs));
        d as f64 / n.max(1) as f64
    };
    let open: Vec<String> = fs
        .iter()
        .zip(&each)
        .filter(|(_, d)| **d < labs)
        .map(|(f, d)| format!("{} {:.0} %", f.claim.id, 100.0 * *d as f64 / labs as f64))
        .collect();
    (share(&|_| true), share(&|t| t.sd > 0.0), open, ninety as f64 / labs as f64)
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
        // A verdict needs its two-sided interval wholly on one side, a
        // one-sided error of half the level: 2.5 % in a lab of one pass; 2 %
        // in the first of two (Holm at 4 %) and 0.5 % in the second. In the
        // worst labs that is the bound.
        let worst_bound = bound(0.025, t.worst.labs);
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
            println!("  the finding wrong most often in the worst-case labs: {id}, {b} of {a}");
        }
        for (fam, w) in &t.all.wrong {
            assert!(
                (*w as f64 / t.all.labs as f64) <= bound(0.05, t.all.labs),
                "{budget} s, family {fam}: {w} of {} labs",
                t.all.labs
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
        assert_eq!(quick_lab(BUDGET_S).0.passes, 1);
        assert_eq!(quick_lab(LONGER_BUDGET_S).0.passes, crate::lab::BUDGET_PASSES);
        let one = simulate_both(43, 5_000, true, 0.0, BUDGET_S);
        check(&one, BUDGET_S, false);
        let two = simulate_both(45, 5_000, true, 0.0, LONGER_BUDGET_S);
        check(&two, LONGER_BUDGET_S, true);
        // The diagnostic: figures alone drifting (not asserted).
        let rate = |c: (usize, usize)| c.1 as f64 / c.0.max(1) as f64;
        let d = simulate_both(44, 2_000, true, DRIFT_STEP, LONGER_BUDGET_S);
        println!(
            "diagnostic, two passes, figures alone drifting {:.0} % a repeat: pooled coverage {:.2} % (ratios {:.2} %, figures alone {:.2} %); worst-case labs: {}",
            100.0 * DRIFT_STEP,
            100.0 * rate(d.pooled),
            100.0 * rate(d.pooled_kind[0]),
            100.0 * rate(d.pooled_kind[1]),
            d.worst.describe()
        );
        let (here, spread, open, ninety) = decided_here(7, 1000);
        println!(
            "decided at the noise measured here (MEASURED): {:.1} % ({:.1} % of those with a spread), at least 90 % in {:.1} % of labs; not in every lab: {}",
            100.0 * here,
            100.0 * spread,
            100.0 * ninety,
            open.join(", ")
        );
    }

    /// The negative control: the same labs judged without the families'
    /// correction (each finding alone at 5 %) break the worst-case bound the
    /// test above holds, so that test would catch a correction gone missing.
    #[test]
    fn without_families_the_simulated_error_exceeds_the_bound() {
        let t = simulate_both(99, 4_000, false, 0.0, BUDGET_S);
        println!("without a family correction, the {} worst-case labs: {}", t.worst.labs, t.worst.describe());
        let (worst, fam) = t.worst.worst();
        assert!(worst > bound(0.025, t.worst.labs), "worst family {fam}: {worst}");
    }
}
