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

use crate::headline::{Figure, Metric};
use record::stats::claim::{self, ALPHA, Decision, Region, num};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Matches => "matches",
            Outcome::Differs => "differs",
            Outcome::Inconclusive => "inconclusive",
            Outcome::OutsideProtocol => "outside the protocol",
            Outcome::NotChecked => "not checked",
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
    /// Values below this are raised to it (a fraction of 0 has no logarithm);
    /// 0 for none.
    pub floor: f64,
    /// Why, when it matches; and when it differs.
    pub yes: &'static str,
    pub no: &'static str,
}

/// One finding as judged: the claim, this run's estimate and interval, and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub id: &'static str,
    pub claim: &'static str,
    pub study: &'static str,
    pub quantity: &'static str,
    pub region: Region,
    /// The region in words ("≥ 100").
    pub acceptance: String,
    /// This run's estimate with its interval, in words.
    pub ours: String,
    /// Geometric mean of the per-repeat values.
    pub estimate: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    pub n: usize,
    /// The per-repeat values the verdict rests on.
    pub values: Vec<f64>,
    /// CV of the values (a description, not a gate).
    pub cv: Option<f64>,
    /// The p-value of the decision the interval leans to (this claim alone).
    pub p: Option<f64>,
    /// Holm's adjusted p over the claims judged together ([`family`]).
    pub p_adjusted: Option<f64>,
    /// How many claims were judged together.
    pub family: usize,
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
    pub pass: u32,
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
    /// The per-repeat values of a figure, or why there are none.
    pub fn values(&self, group: &str, fig: &Figure) -> Evidence {
        match self.metric(group, fig) {
            Some(m) => Ok(m.values.clone()),
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

/// a ÷ b for every repeat both measured.
pub fn paired(a: &Metric, b: &Metric) -> Vec<f64> {
    per_repeat(a, &[b], |x, o| (o[0] > 0.0).then(|| x / o[0]))
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

/// Judges one claim alone (a family of one) under the rules, in order:
/// 1. the protocol broke → outside the protocol;
/// 2. the run cannot test the claim (an arm missing) → not checked;
/// 3. fewer than two repeats → inconclusive (no interval);
/// 4. the 95 % interval inside the region → matches; wholly outside → differs;
///    otherwise inconclusive, with the repeats that would decide it.
pub fn judge(c: &Claim, m: &Ms, evidence: Evidence) -> Verdict {
    let mut v = Verdict {
        id: c.id,
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
        cv: None,
        p: None,
        p_adjusted: None,
        family: 1,
        outcome: Outcome::NotChecked,
        why: String::new(),
        repeats_to_decide: None,
        pass: 1,
    };
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
    v.values = values.iter().map(|x| x.max(c.floor)).collect();
    v.n = v.values.len();
    v.cv = record::stats::cv(&v.values);
    let Some(t) = claim::test(&v.values, &c.region) else {
        v.estimate = record::stats::median(&v.values);
        v.ours = v.estimate.map(|x| format!("{} (n = {})", num(x), v.n)).unwrap_or("-".into());
        v.outcome = Outcome::Inconclusive;
        v.why = format!("n = {}: one repeat has no interval; run with --repeat 2 or more", v.n);
        return v;
    };
    let e = t.estimate;
    v.estimate = Some(e.estimate);
    v.ci95 = Some(e.ci95);
    v.ours = format!("{} (95 % CI {} – {}, n = {})", num(e.estimate), num(e.ci95[0]), num(e.ci95[1]), e.n);
    v.p = Some(t.p().0);
    v.p_adjusted = v.p;
    settle(&mut v, c, t.decide(ALPHA), ALPHA);
    v
}

/// Sets outcome and reason from a decision (at the family's level).
fn settle(v: &mut Verdict, c: &Claim, d: Decision, alpha: f64) {
    let region = v.region;
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
            let e = claim::estimate(&v.values);
            let need = e.and_then(|e| claim::repeats_to_decide(&e, &region, level));
            v.repeats_to_decide = need;
            let family = if v.family > 1 && v.p.is_some_and(|p| p <= alpha) {
                format!(
                    "decided alone at {} % (p = {:.3}), but not after Holm over {} findings (adjusted p = {:.3}); ",
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
        let lean = claim::test(&v.values, &v.region).map_or(Decision::Inconclusive, |t| t.p().1);
        settle(v, &c, if a <= alpha { lean } else { Decision::Inconclusive }, alpha);
    }
}

/// How verdicts are reached, in a line (`report --json`, lab.json).
pub const METHOD: &str = "95 % t interval of the per-repeat log values (arms paired by repeat) against an acceptance \
                          region fixed before the data; Holm's step-down over every finding of the report keeps the \
                          family-wise error at 5 % (in a budgeted lab, split between its passes: alpha_by_pass)";

/// A report's findings as a document (`pagelab report DIR --json`, lab.json's
/// `findings`; schema/findings.schema.json).
#[derive(Debug, Clone, Serialize)]
pub struct Findings<'a> {
    pub method: &'static str,
    /// Family-wise error rate across the findings.
    pub alpha: f64,
    /// The part of it each pass spent ([`alpha_by_pass`]): one entry unless a
    /// budgeted lab planned later passes.
    pub alpha_by_pass: Vec<f64>,
    /// Findings with an interval (the family Holm corrects over).
    pub family: usize,
    /// Findings the run could check (not "not checked", not outside the protocol).
    pub checkable: usize,
    /// Of those, decided (matches or differs).
    pub decided: usize,
    pub findings: Vec<Row<'a>>,
}

/// One finding with its experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Row<'a> {
    pub experiment: &'a str,
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

impl<'a> Findings<'a> {
    pub fn of(rows: Vec<(&'a str, &'a Verdict)>) -> Findings<'a> {
        let checkable =
            rows.iter().filter(|(_, v)| !matches!(v.outcome, Outcome::NotChecked | Outcome::OutsideProtocol)).count();
        Findings {
            method: METHOD,
            alpha: ALPHA,
            alpha_by_pass: vec![ALPHA],
            family: rows.iter().filter(|(_, v)| v.p.is_some()).count(),
            checkable,
            decided: rows.iter().filter(|(_, v)| v.outcome.decided()).count(),
            findings: rows.into_iter().map(|(experiment, verdict)| Row { experiment, verdict }).collect(),
        }
    }
    /// The same, for a lab that split its error between passes.
    pub fn with_passes(mut self, alphas: Vec<f64>) -> Findings<'a> {
        self.alpha_by_pass = alphas;
        self
    }
}

/// The claim with this id, from any experiment.
pub fn claim_by_id(id: &str) -> Option<Claim> {
    crate::experiment::ALL.iter().flat_map(|e| e.claims()).find(|c| c.id == id).copied()
}

/// The study each experiment reproduces.
pub fn study(experiment: &str) -> &'static str {
    crate::experiment::find(experiment).map_or("", |e| e.study())
}

/// One run's findings, judged as one family.
pub fn verdicts(experiment: &str, results: &[Value]) -> Vec<Verdict> {
    let mut v = verdicts_alone(experiment, results);
    family(&mut v.iter_mut().collect::<Vec<_>>(), &claim_by_id, ALPHA);
    v
}

/// One run's findings, each judged alone (before a family is formed).
pub fn verdicts_alone(experiment: &str, results: &[Value]) -> Vec<Verdict> {
    verdicts_of_runs(experiment, &[results])
}

/// The findings of several runs of one experiment (a lab's passes), each
/// judged alone: arms pair by repeat across all of them.
pub fn verdicts_of_runs(experiment: &str, runs: &[&[Value]]) -> Vec<Verdict> {
    let Some(e) = crate::experiment::find(experiment) else { return Vec::new() };
    let all = crate::headline::metrics_of_runs(experiment, runs);
    let results: Vec<Value> = runs.iter().flat_map(|r| r.iter().cloned()).collect();
    let m = Ms { all: &all, protocol: e.protocol(&results) };
    e.verdicts(&m, &results)
}

/// The family-wise error each pass of a lab may spend: all of it in one pass;
/// with later passes (`lab --budget`), 4 % on the first, where most findings
/// are decided, and the last 1 % split evenly among the others. By the union
/// bound the chance of any wrong decision in any pass stays ≤ 5 %, however the
/// later passes were chosen (docs/stability.md, "A budget").
pub fn alpha_by_pass(passes: u32) -> Vec<f64> {
    match passes {
        0 | 1 => vec![ALPHA],
        n => {
            let first = 0.8 * ALPHA;
            let mut v = vec![first];
            v.extend(std::iter::repeat_n((ALPHA - first) / (n - 1) as f64, n as usize - 1));
            v
        }
    }
}

/// Whether a run kept the study's protocol (docs/stability.md); Ok for an
/// experiment whose study set no conditions this run could break.
pub fn protocol(experiment: &str, results: &[Value]) -> Result<(), String> {
    crate::experiment::find(experiment).map_or(Ok(()), |e| e.protocol(results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eat_result(pattern: &str, repeat: u32, frac: f64, trim: f64, read: f64) -> Value {
        json!({"pattern": pattern, "backing": "zram", "compressor": "lzo-rle", "stored_fraction": frac,
               "trim_us_per_page": trim, "restore_us_per_page": read, "repeat": repeat})
    }

    fn eat_run(rows: &[(f64, f64, f64, f64)]) -> Vec<Value> {
        // (semi fraction, random trim, semi trim, const trim) per repeat.
        let mut v = Vec::new();
        for (i, (f, r, s, c)) in rows.iter().enumerate() {
            let i = i as u32 + 1;
            v.push(eat_result("random", i, 1.0, *r, 4.0));
            v.push(eat_result("semi", i, *f, *s, 4.4));
            v.push(eat_result("const", i, 0.0, *c, 4.2));
        }
        v
    }

    #[test]
    fn eat_findings_follow_the_intervals() {
        // One repeat: nothing has an interval.
        let v = verdicts("eat", &eat_run(&[(0.21, 10.0, 5.0, 2.5)]));
        assert!(v.iter().all(|x| x.outcome == Outcome::Inconclusive), "{v:?}");
        assert!(v[0].why.contains("n = 1"), "{}", v[0].why);
        // Three repeats close to the study: every claim matches.
        let v = verdicts("eat", &eat_run(&[(0.21, 10.0, 5.0, 2.5), (0.20, 10.4, 5.1, 2.4), (0.215, 9.8, 4.9, 2.5)]));
        let by = |v: &[Verdict], id: &str| v.iter().find(|x| x.id == id).unwrap().clone();
        for id in ["eat.semi_fraction", "eat.const_fraction", "eat.random_fraction", "eat.trim_random_semi"] {
            assert_eq!(by(&v, id).outcome, Outcome::Matches, "{id}: {:?}", by(&v, id));
        }
        assert_eq!(by(&v, "eat.semi_fraction").family, v.iter().filter(|x| x.p.is_some()).count());
        // Random trims cheaper than semi (as lzo-rle does here): that claim differs.
        let v = verdicts("eat", &eat_run(&[(0.21, 3.0, 5.0, 2.5), (0.20, 3.1, 5.1, 2.4), (0.215, 2.9, 4.9, 2.5)]));
        assert_eq!(by(&v, "eat.trim_random_semi").outcome, Outcome::Differs);
        let ci = by(&v, "eat.trim_random_semi").ci95.unwrap();
        assert!(ci[0] > 0.5 && ci[1] < 0.7, "{ci:?}");
    }

    #[test]
    fn without_a_store_eat_checks_no_fractions() {
        let rs = vec![json!({"pattern": "semi", "backing": "none", "trim_us_per_page": 1.0})];
        let v = verdicts("eat", &rs);
        assert_eq!(v.iter().find(|x| x.id == "eat.semi_fraction").unwrap().outcome, Outcome::NotChecked);
    }

    fn metric(values: &[f64], repeats: &[u32]) -> Metric {
        Metric {
            experiment: "x".into(),
            group: "g".into(),
            name: "m",
            unit: "",
            lower_is_better: true,
            values: values.to_vec(),
            repeats: repeats.to_vec(),
            resolution: 0.0,
            export: crate::headline::Figure::new("m", "", true).export,
        }
    }

    #[test]
    fn arms_pair_by_repeat_not_by_position() {
        // b lost its repeat 1: a's repeats 0 and 2 pair with b's 0 and 2.
        let a = metric(&[10.0, 20.0, 30.0], &[0, 1, 2]);
        let b = metric(&[5.0, 10.0], &[0, 2]);
        assert_eq!(paired(&a, &b), vec![2.0, 3.0]);
    }

    const C: Claim = Claim {
        id: "x.c",
        claim: "A is at least 10 % costlier than B",
        study: "",
        quantity: "A ÷ B",
        region: Region::at_least(1.1),
        floor: 0.0,
        yes: "yes",
        no: "no",
    };

    #[test]
    fn the_rules_apply_in_order() {
        let all: Vec<Metric> = Vec::new();
        let ok = Ms { all: &all, protocol: Ok(()) };
        assert_eq!(judge(&C, &ok, Ok(vec![1.5, 1.6, 1.55])).outcome, Outcome::Matches);
        assert_eq!(judge(&C, &ok, Ok(vec![0.9, 0.95, 0.92])).outcome, Outcome::Differs);
        let v = judge(&C, &ok, Ok(vec![1.05, 1.2, 1.12]));
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert!(v.why.contains("straddles") && v.repeats_to_decide.is_some(), "{}", v.why);
        assert_eq!(judge(&C, &ok, Err("needs e1".into())).outcome, Outcome::NotChecked);
        assert_eq!(judge(&C, &ok, Ok(vec![1.5])).outcome, Outcome::Inconclusive);
        // A broken protocol beats everything.
        let broken = Ms { all: &all, protocol: Err("consumer OOM-killed".into()) };
        assert_eq!(judge(&C, &broken, Ok(vec![1.5, 1.6, 1.55])).outcome, Outcome::OutsideProtocol);
        // A wide spread far from the edge decides; a CV says nothing against it.
        let v = judge(&C, &ok, Ok(vec![3.0, 9.0, 5.0]));
        assert_eq!(v.outcome, Outcome::Matches, "{v:?}");
        assert!(v.cv.unwrap() > 0.4);
    }

    #[test]
    fn a_budget_splits_the_error_between_passes() {
        assert_eq!(alpha_by_pass(1), vec![ALPHA]);
        for n in 2..6 {
            let a = alpha_by_pass(n);
            assert_eq!(a.len(), n as usize);
            assert!((a.iter().sum::<f64>() - ALPHA).abs() < 1e-12, "{a:?}");
            assert!(a[0] > a[1] && a.iter().all(|&x| x > 0.0), "{a:?}");
        }
    }

    #[test]
    fn a_second_run_pairs_after_the_first() {
        // Two runs, two repeats each: by repeat number (push_of) and by position (push).
        let fig = crate::mapping::TOTAL;
        let mut b = crate::headline::Builder::new("mapping");
        for (run, scale) in [(0, 1.0), (1, 2.0)] {
            b.next_run();
            for rep in [2u32, 1] {
                b.push_of("free", &fig, rep, Some(scale * rep as f64));
                b.push_of("dontneed", &fig, rep, Some(4.0 * scale * rep as f64 + run as f64));
                b.push("other", &fig, Some(scale));
            }
        }
        let all = b.finish();
        let free = all.iter().find(|m| m.group == "free").unwrap();
        assert_eq!(free.repeats, vec![1, 0, 3, 2]);
        let other = all.iter().find(|m| m.group == "other").unwrap();
        assert_eq!(other.repeats, vec![0, 1, 2, 3]);
        let m = Ms { all: &all, protocol: Ok(()) };
        let r = m.ratios(("dontneed", &fig), ("free", &fig)).unwrap();
        // In the order of the first arm's values: repeats 1, 0, 3, 2.
        assert_eq!(r, vec![4.0, 4.0, 4.25, 4.5]);
    }

    #[test]
    fn holm_turns_a_marginal_claim_inconclusive_in_a_large_family() {
        let all: Vec<Metric> = Vec::new();
        let ok = Ms { all: &all, protocol: Ok(()) };
        // Decided alone (p under 0.05), not in a family of 12 where it ranks
        // second (Holm's threshold 0.05 / 11).
        let marginal = judge(&C, &ok, Ok(vec![1.3, 1.17, 1.45, 1.22]));
        assert_eq!(marginal.outcome, Outcome::Matches, "{marginal:?}");
        let p = marginal.p.unwrap();
        assert!(p > 0.05 / 11.0 && p < 0.05, "{p}");
        let strong = judge(&C, &ok, Ok(vec![50.0, 55.0, 52.0, 51.0]));
        let null = judge(&C, &ok, Ok(vec![1.0, 1.3, 0.9, 1.2]));
        assert_eq!(null.outcome, Outcome::Inconclusive);
        let mut vs: Vec<Verdict> = [strong, marginal].into_iter().chain(std::iter::repeat_n(null, 10)).collect();
        let lookup = |_: &str| Some(C);
        family(&mut vs.iter_mut().collect::<Vec<_>>(), &lookup, ALPHA);
        assert!(vs[0].outcome == Outcome::Matches && vs.iter().all(|v| v.family == 12));
        assert_eq!(vs[1].outcome, Outcome::Inconclusive);
        assert!(vs[1].why.contains("Holm over 12"), "{}", vs[1].why);
    }

    fn thrash_run(preset: &str, rep: u64, out: f64, peak: f64, progress: f64, breaks: &[&str]) -> Value {
        json!({"result": {"preset": preset, "repeat_index": rep, "consumers": 8, "consumers_completed": 8,
            "oom_kills": 0, "pswpout_total": out.round() as u64, "pswpout_per_s_active": peak, "progress_overcommitted_median": progress,
            "recovery_s": 1.0, "protocol_breaks": breaks}})
    }

    #[test]
    fn thrash_findings_need_their_presets_and_the_protocol() {
        let e2: Vec<Value> = (0..3)
            .map(|i| thrash_run("e2", i, 1e5 * (1.0 + 0.01 * i as f64), 5e3, 0.3 + 0.01 * i as f64, &[]))
            .collect();
        let v = verdicts("thrash", &e2);
        let by = |v: &[Verdict], id: &str| v.iter().find(|x| x.id == id).unwrap().outcome;
        for id in ["thrash.writes", "thrash.sleep", "thrash.stagger"] {
            assert_eq!(by(&v, id), Outcome::NotChecked, "{id}");
        }
        assert_eq!(by(&v, "thrash.deep"), Outcome::Matches);
        let mut all = e2.clone();
        for (p, out, peak) in [("e1-custom", 2e4, 1e3), ("e3-custom", 3e4, 2e3), ("e4-custom", 6e4, 9e3)] {
            for i in 0..3 {
                all.push(thrash_run(p, i, out * (1.0 + 0.02 * i as f64), peak, 0.9, &[]));
            }
        }
        let v = verdicts("thrash", &all);
        for id in ["thrash.writes", "thrash.sleep", "thrash.stagger"] {
            assert_eq!(by(&v, id), Outcome::Matches, "{id}");
        }
        all.push(thrash_run(
            "e2",
            3,
            1e5,
            5e3,
            0.4,
            &["1 consumer(s) OOM-killed by the kernel (memcg OOM in /pagelab/x)"],
        ));
        let v = verdicts("thrash", &all);
        assert!(v.iter().all(|x| x.outcome == Outcome::OutsideProtocol), "{v:?}");
        assert!(v[0].why.contains("e2 repeat 4") && v[0].why.contains("OOM"), "{}", v[0].why);
    }

    #[test]
    fn old_thrash_records_without_the_protocol_field_are_judged_from_their_counts() {
        let r = json!({"result": {"preset": "e2", "repeat_index": 0, "consumers": 12, "consumers_completed": 11, "oom_kills": 1}});
        let p = protocol("thrash", &[r]).unwrap_err();
        assert!(p.contains("1 consumer(s) OOM-killed") && p.contains("1 of 12"), "{p}");
        assert!(protocol("heap", &[]).is_ok());
    }

    #[test]
    fn every_claim_has_a_unique_id_in_its_experiment_and_a_region() {
        let mut seen = Vec::new();
        for e in crate::experiment::ALL {
            for c in e.claims() {
                assert!(c.id.starts_with(&format!("{}.", e.name())), "{}", c.id);
                assert!(!seen.contains(&c.id), "{} twice", c.id);
                assert!(c.region.lo.is_some() || c.region.hi.is_some(), "{}: no region", c.id);
                assert!(c.region.lo.is_none_or(|x| x > 0.0) && c.region.hi.is_none_or(|x| x > 0.0), "{}", c.id);
                seen.push(c.id);
            }
        }
    }
}
