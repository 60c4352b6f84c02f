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
/// A figure judged alone (not a ratio of arms) drifts from repeat to repeat:
/// a random walk of this step (log scale).
const DRIFT_STEP: f64 = 0.02;
/// The quick lab's budget (`lab --quick`).
const BUDGET_S: f64 = 300.0;

/// One finding of the simulated lab.
#[derive(Clone)]
struct Finding {
    exp: &'static str,
    claim: Claim,
    /// Repeats in the first pass (its step's `--repeat`).
    n1: usize,
    /// A ratio of arms that ran side by side ("÷" in its quantity).
    ratio: bool,
}

/// What a finding is in one simulated lab: its true value (log) and its
/// noise (log sd of one repeat).
#[derive(Clone, Copy)]
struct Truth {
    log: f64,
    sd: f64,
    /// With the order effect, the trend and the drift on top of `sd` (false
    /// where `sd` was measured: a measured spread holds them already).
    effects: bool,
}

/// The quick lab as planned on a 2-core machine with root: its steps, each
/// as having completed, and its findings.
fn quick_lab() -> (Lab, Vec<Finding>) {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let mut steps: Vec<Step> = plan(&m, Scale::Quick, &[]);
    let mut fs = Vec::new();
    for s in &mut steps {
        if s.state != StepState::Planned {
            continue;
        }
        s.state = StepState::Complete;
        let n1 = s.args.iter().position(|a| a == "--repeat").and_then(|i| s.args.get(i + 1)?.parse().ok());
        let e = experiments::ALL.iter().find(|e| e.name() == s.experiment).expect("a planned experiment");
        for c in e.report.claims() {
            fs.push(Finding { exp: e.name(), claim: c.clone(), n1: n1.unwrap_or(1), ratio: c.quantity.contains('÷') });
        }
    }
    let expect_s = steps.iter().map(|s| s.expect_s).sum();
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
        budget_s: Some(BUDGET_S),
        passes: crate::lab::BUDGET_PASSES,
        pass_weights: vec![1.0; crate::lab::BUDGET_PASSES as usize],
        doctor: serde_json::Value::Null,
        steps,
        notes: Vec::new(),
        findings: None,
    };
    (lab, fs)
}

/// A truth for `region` with noise `sd`: near an edge (chosen at random),
/// from 3 sds inside to 3 sds outside, exactly on it one time in six, and
/// far (8 sds) one time in five; inside a two-sided region it stays inside.
fn draw_truth(rng: &mut SplitMix64, region: &Region, sd: f64) -> f64 {
    let edges: Vec<(f64, f64)> =
        [region.lo.map(|x| (x.ln(), 1.0)), region.hi.map(|x| (x.ln(), -1.0))].into_iter().flatten().collect();
    let (edge, inward) = edges[rng.below(edges.len())];
    let u = rng.unit();
    let d = if u < 1.0 / 6.0 {
        0.0
    } else if u < 1.0 / 6.0 + 0.2 {
        if rng.unit() < 0.5 { 8.0 } else { -8.0 }
    } else {
        rng.between(-3.0, 3.0)
    } * sd;
    let log = edge + inward * d;
    // Inside a two-sided region, at most its middle.
    match (region.lo, region.hi) {
        (Some(lo), Some(hi)) if d > 0.0 => {
            let mid = (lo.ln() + hi.ln()) / 2.0;
            if inward > 0.0 { log.min(mid) } else { log.max(mid) }
        }
        _ => log,
    }
}

/// `n` repeats of a finding, in ABBA order from the first: a ratio's arm run
/// second reads higher by the order effect and the trend; a figure alone
/// drifts by a random walk (`walk`, carried from pass to pass).
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
                *walk += DRIFT_STEP * rng.normal();
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

/// How one simulated lab ended, finding by finding (in `fs`' order).
struct Outcomes {
    verdicts: Vec<Verdict>,
    /// The first pass's intervals (before the planner chose anything).
    first: Vec<Option<[f64; 2]>>,
}

/// One lab: the first pass, the planner's second pass within what the budget
/// leaves (the first pass took 80–105 % of its plan), and the passes judged
/// as `report` judges them.
fn one_lab(rng: &mut SplitMix64, lab: &Lab, fs: &[Finding], truths: &[Truth]) -> Outcomes {
    let claim = |id: &str| fs.iter().find(|f| f.claim.id == id).map(|f| f.claim.clone());
    let mut walks = vec![0.0; fs.len()];
    let pass1: Vec<Vec<f64>> =
        fs.iter().zip(truths).zip(&mut walks).map(|((f, t), w)| repeats(rng, f, *t, f.n1, w)).collect();
    let mut vs: Vec<Verdict> = fs.iter().zip(&pass1).map(|(f, v)| judged(f, v.clone())).collect();
    let alphas = lab.alpha_by_pass();
    verdict::families(vs.iter_mut().collect(), &claim, alphas[0]);
    let first = vs.iter().map(|v| v.ci95).collect();
    let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
    for v in vs.iter().filter(|v| v.p.is_some()) {
        *sizes.entry(v.family_name.clone()).or_default() += 1;
    }
    let left = BUDGET_S - crate::lab::REPORT_RESERVE_S - lab.expect_s * rng.between(0.8, 1.05);
    let open: Vec<(&str, &Verdict)> =
        fs.iter().zip(&vs).filter(|(_, v)| v.outcome == Outcome::Inconclusive).map(|(f, v)| (f.exp, v)).collect();
    let more: Vec<(&'static str, u32)> =
        choose_more(lab, &open, 2, left).into_iter().flat_map(|m| m.ids.into_iter().map(move |id| (id, m.k))).collect();
    let weights = lab.pass_weights();
    for (i, f) in fs.iter().enumerate() {
        let Some(&(_, k)) = more.iter().find(|(id, _)| *id == f.claim.id) else { continue };
        let second = judged(f, repeats(rng, f, truths[i], k as usize, &mut walks[i]));
        let alone = judged(f, pass1[i].clone());
        let family = sizes.get(&vs[i].family_name).copied().unwrap_or(1);
        verdict::judge_later(&mut vs[i], &f.claim, &[Some(&alone), Some(&second)], &weights, alphas[1], family, 2);
    }
    Outcomes { verdicts: vs, first }
}

/// Tallies over many labs.
#[derive(Default)]
struct Tally {
    labs: usize,
    /// Per family: labs with any wrong verdict.
    family_wrong: BTreeMap<String, usize>,
    /// Per finding: (labs with the truth outside its region, of them "matches").
    outside: BTreeMap<&'static str, (usize, usize)>,
    /// Intervals shown, and of them covering the truth: final, first pass.
    intervals: usize,
    covered: usize,
    first_intervals: usize,
    first_covered: usize,
    /// Findings judged, and decided.
    findings: usize,
    decided: usize,
    second_pass_labs: usize,
}

fn covers(ci: Option<[f64; 2]>, log: f64) -> Option<bool> {
    ci.map(|[lo, hi]| lo <= log.exp() && log.exp() <= hi)
}

impl Tally {
    fn add(&mut self, fs: &[Finding], truths: &[Truth], o: &Outcomes) {
        self.labs += 1;
        let mut wrong: BTreeMap<String, bool> = BTreeMap::new();
        for ((f, t), (v, first)) in fs.iter().zip(truths).zip(o.verdicts.iter().zip(&o.first)) {
            let inside = f.claim.region.contains(t.log.exp());
            let bad = (v.outcome == Outcome::Matches && !inside) || (v.outcome == Outcome::Differs && inside);
            *wrong.entry(v.family_name.clone()).or_default() |= bad;
            if !inside {
                let e = self.outside.entry(f.claim.id).or_default();
                e.0 += 1;
                e.1 += usize::from(v.outcome == Outcome::Matches);
            }
            if let Some(c) = covers(v.ci95, t.log) {
                self.intervals += 1;
                self.covered += usize::from(c);
            }
            if let Some(c) = covers(*first, t.log) {
                self.first_intervals += 1;
                self.first_covered += usize::from(c);
            }
            self.findings += 1;
            self.decided += usize::from(v.outcome.decided());
        }
        self.second_pass_labs += usize::from(o.verdicts.iter().any(|v| v.pass > 1));
        for (fam, w) in wrong {
            *self.family_wrong.entry(fam).or_default() += usize::from(w);
        }
    }
}

/// `labs` labs with truths near the edges (in one lab in four, every truth
/// on an edge) and noise of 8–15 % an arm.
fn simulate(seed: u64, labs: usize) -> Tally {
    let (lab, fs) = quick_lab();
    let mut rng = SplitMix64(seed);
    let mut tally = Tally::default();
    for _ in 0..labs {
        // One lab in four is the worst case for a family: every truth
        // exactly on an edge of its region.
        let worst = rng.unit() < 0.25;
        let truths: Vec<Truth> = fs
            .iter()
            .map(|f| {
                let arm = rng.between(0.08, 0.15);
                let sd = if f.ratio { arm * std::f64::consts::SQRT_2 } else { arm };
                let log = draw_truth(&mut rng, &f.claim.region, if worst { 0.0 } else { sd });
                Truth { log, sd, effects: true }
            })
            .collect();
        let o = one_lab(&mut rng, &lab, &fs, &truths);
        tally.add(&fs, &truths, &o);
    }
    tally
}

/// The quick lab measured on this project's VM (2 vCPUs, Intel Xeon,
/// 2026-11-26, `pagelab lab --quick`): each finding's estimate and the log sd
/// of its repeats. A finding absent here was not checked there.
const MEASURED: &[(&str, f64, f64)] = &[
    ("eat.semi_fraction", 0.2082, 0.000775),
    ("eat.const_fraction", 0.0001, 0.0),
    ("eat.random_fraction", 1.0, 0.0),
    ("eat.trim_random_semi", 0.6893, 0.0518),
    ("eat.trim_const_semi", 0.4938, 0.0704),
    ("eat.read_back_alike", 2.58, 0.0125),
    ("wscap.cap_slowdown", 1255.0, 0.0809),
    ("wscap.periodic_cheaper", 654.5, 0.00475),
    ("wscap.cap_saves_no_memory", 0.9233, 0.00124),
    ("heap.growth", 1.0, 0.0393),
    ("heap.concurrent_linux", 6.828, 0.212),
    ("heap.glibc_keeps", 0.8581, 0.0577),
    ("heap.malloc_trim", 0.195, 0.33),
    ("heap.idle_gives_nothing", 1.0, 0.0),
    ("mapping.lazy_reset", 0.384, 0.161),
    ("mapping.fresh_cheapest", 2.744, 0.135),
    ("mapping.shared_costlier", 1.319, 0.0349),
    ("thrash.deep", 0.2879, 0.0475),
    ("thrash.writes", 1.727, 0.099),
    ("thrash.sleep", 0.5846, 0.0312),
    ("thrash.stagger", 1.355, 0.243),
    ("thrash.recovery", 1.0, 0.0),
    ("assess.zstd_better", 4.145, 0.0),
];

/// The decided share of labs like the one measured here ([`MEASURED`]), under
/// the current plan's repeats: its estimates as truths, its spreads as noise.
fn decided_here(seed: u64, labs: usize) -> (f64, Vec<String>) {
    let (lab, all) = quick_lab();
    let fs: Vec<Finding> = all.into_iter().filter(|f| MEASURED.iter().any(|m| m.0 == f.claim.id)).collect();
    let truths: Vec<Truth> = fs
        .iter()
        .map(|f| {
            let &(_, est, sd) = MEASURED.iter().find(|m| m.0 == f.claim.id).expect("filtered");
            Truth { log: est.ln(), sd, effects: false }
        })
        .collect();
    let mut rng = SplitMix64(seed);
    let mut tally = Tally::default();
    let mut each = vec![0usize; fs.len()];
    for _ in 0..labs {
        let o = one_lab(&mut rng, &lab, &fs, &truths);
        for (d, v) in each.iter_mut().zip(&o.verdicts) {
            *d += usize::from(v.outcome.decided());
        }
        tally.add(&fs, &truths, &o);
    }
    let undecided: Vec<String> = fs
        .iter()
        .zip(&each)
        .filter(|(_, d)| **d < labs)
        .map(|(f, d)| format!("{} {:.0} %", f.claim.id, 100.0 * *d as f64 / labs as f64))
        .collect();
    (tally.decided as f64 / tally.findings as f64, undecided)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-lab simulation: 10 000 quick labs (two threads of 5 000).
    #[test]
    fn ten_thousand_simulated_labs_keep_every_promise() {
        let labs = 5_000;
        let tallies: Vec<Tally> = std::thread::scope(|s| {
            let hs: Vec<_> = [43u64, 4343].iter().map(|&seed| s.spawn(move || simulate(seed, labs))).collect();
            hs.into_iter().map(|h| h.join().expect("a simulation thread")).collect()
        });
        let mut t = Tally::default();
        for x in tallies {
            t.labs += x.labs;
            for (k, v) in x.family_wrong {
                *t.family_wrong.entry(k).or_default() += v;
            }
            for (k, (a, b)) in x.outside {
                let e = t.outside.entry(k).or_default();
                e.0 += a;
                e.1 += b;
            }
            t.intervals += x.intervals;
            t.covered += x.covered;
            t.first_intervals += x.first_intervals;
            t.first_covered += x.first_covered;
            t.findings += x.findings;
            t.decided += x.decided;
            t.second_pass_labs += x.second_pass_labs;
        }
        let n = t.labs as f64;
        let edge = 0.05 + 3.0 * (0.05 * 0.95 / n).sqrt();
        println!("{} simulated quick labs; {} had a second pass", t.labs, t.second_pass_labs);
        for (fam, w) in &t.family_wrong {
            println!(
                "  family {fam:8} any wrong verdict: {:.2} % (bound {:.2} %)",
                100.0 * *w as f64 / n,
                100.0 * edge
            );
        }
        let cov = t.covered as f64 / t.intervals as f64;
        let cov1 = t.first_covered as f64 / t.first_intervals as f64;
        println!(
            "  coverage of the 95 % intervals: {:.2} % as reported, {:.2} % after the first pass",
            100.0 * cov,
            100.0 * cov1
        );
        let worst = t
            .outside
            .iter()
            .map(|(id, (a, b))| (*b as f64 / *a as f64, *id, *a))
            .fold((0.0, "", 0), |m, x| if x.0 > m.0 { x } else { m });
        println!(
            "  'matches' with the truth outside: at most {:.2} % ({}, of {} labs)",
            100.0 * worst.0,
            worst.1,
            worst.2
        );
        println!("  decided: {:.1} % of findings", 100.0 * t.decided as f64 / t.findings as f64);
        let (here, open) = decided_here(7, 1000);
        println!(
            "  decided at this machine's measured noise (MEASURED): {:.1} %; decided in fewer than all labs: {}",
            100.0 * here,
            open.join(", ")
        );
        for (fam, w) in &t.family_wrong {
            assert!((*w as f64 / n) <= edge, "family {fam}: {w} of {} labs had a wrong verdict", t.labs);
        }
        assert!(cov >= 0.93 && cov1 >= 0.93, "coverage {cov} (first pass {cov1})");
        for (id, (a, b)) in &t.outside {
            let p = *b as f64 / *a as f64;
            let se = (0.05 * 0.95 / *a as f64).sqrt();
            assert!(p <= 0.05 + 3.0 * se, "{id}: 'matches' in {b} of {a} labs whose truth is outside");
        }
        // The simulation could have failed: some truths sat outside, and a
        // second pass ran in some labs.
        assert!(t.outside.values().all(|(a, _)| *a > 100), "every finding had truths outside its region");
        assert!(t.second_pass_labs > 0, "the planner never chose a second pass");
    }

    /// The simulation can fail: with every truth on an edge and each finding
    /// judged alone at 5 % (no family), a study's chance of a wrong verdict
    /// exceeds 5 %.
    #[test]
    fn without_families_the_simulated_error_exceeds_five_percent() {
        let (_, fs) = quick_lab();
        let mut rng = SplitMix64(99);
        let labs = 2_000;
        let mut wrong: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..labs {
            let mut any: BTreeMap<String, bool> = BTreeMap::new();
            for f in &fs {
                let t = Truth { log: draw_truth(&mut rng, &f.claim.region, 0.0), sd: 0.12, effects: true };
                let v = judged(f, repeats(&mut rng, f, t, f.n1.max(3), &mut 0.0));
                let inside = f.claim.region.contains(t.log.exp());
                *any.entry(v.family_name.clone()).or_default() |=
                    (v.outcome == Outcome::Differs && inside) || (v.outcome == Outcome::Matches && !inside);
            }
            for (k, w) in any {
                *wrong.entry(k).or_default() += usize::from(w);
            }
        }
        let worst = wrong.values().max().copied().unwrap_or(0) as f64 / labs as f64;
        let se = (0.05 * 0.95 / labs as f64).sqrt();
        assert!(worst > 0.05 + 3.0 * se, "worst family without a correction: {worst}");
    }
}
