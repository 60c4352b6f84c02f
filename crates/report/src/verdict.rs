//! Plain statements of what matches the published studies and what does not,
//! computed from a run's results: the top of each section of the lab report.

use crate::headline::{Figure, Metric, metrics};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matches,
    Differs,
    /// A figure the claim rests on has a CV above 5 % (or a single repeat).
    Unstable,
    /// The study's protocol did not hold in this run (e.g. a consumer was OOM-killed).
    OutsideProtocol,
    NotChecked,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Matches => "matches",
            Outcome::Differs => "differs",
            Outcome::Unstable => "unstable",
            Outcome::OutsideProtocol => "outside the protocol",
            Outcome::NotChecked => "not checked",
        }
    }
}

/// What a verdict rests on, besides the comparison itself.
#[derive(Debug, Clone)]
pub struct Basis<'a> {
    /// The figures the claim compares (each with its repeats).
    pub figures: Vec<Option<&'a Metric>>,
    /// Err(why) when the study's protocol did not hold in this run.
    pub protocol: Result<(), String>,
    /// Err(why) when this run's configuration cannot test the claim at all.
    pub tested: Result<(), String>,
}

/// The verdict rules, in order (docs/stability.md):
/// 1. the protocol broke → outside the protocol;
/// 2. the run's configuration cannot test the claim → not checked;
/// 3. a figure is missing → not checked;
/// 4. a figure has one repeat, or a CV above [`record::stats::CV_STABLE`] (and
///    a spread above its metric's absolute resolution) → unstable;
/// 5. otherwise matches or differs, as the comparison says.
pub fn decide(b: &Basis, ok: Option<bool>) -> (Outcome, Option<String>) {
    if let Err(why) = &b.protocol {
        return (Outcome::OutsideProtocol, Some(why.clone()));
    }
    if let Err(why) = &b.tested {
        return (Outcome::NotChecked, Some(why.clone()));
    }
    if b.figures.iter().any(Option::is_none) || ok.is_none() {
        return (Outcome::NotChecked, Some("this run did not measure it".into()));
    }
    let shaky: Vec<String> = b
        .figures
        .iter()
        .flatten()
        .filter(|m| !m.stable())
        .map(|m| match m.cv() {
            None => format!("{} {}: n = 1, no spread to judge", m.group, m.name),
            Some(c) => format!("{} {}: CV {:.1} % over n = {}", m.group, m.name, 100.0 * c, m.values.len()),
        })
        .collect();
    if !shaky.is_empty() {
        return (Outcome::Unstable, Some(format!("{} (a verdict needs CV ≤ 5 %)", shaky.join("; "))));
    }
    match ok {
        Some(true) => (Outcome::Matches, None),
        _ => (Outcome::Differs, None),
    }
}

/// One published observation, what this run measured, and whether they agree.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub claim: &'static str,
    pub study: &'static str,
    pub ours: String,
    pub outcome: Outcome,
    /// Why they agree or not, in a sentence.
    pub why: String,
}

/// A run's metrics, as its verdicts look them up.
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
    pub fn basis(&self, figures: Vec<Option<&'a Metric>>) -> Basis<'a> {
        Basis { figures, protocol: self.protocol.clone(), tested: Ok(()) }
    }
}

/// Builds one verdict under the rules of [`decide`].
pub fn judge(
    claim: &'static str,
    study: &'static str,
    ours: String,
    basis: Basis,
    ok: Option<bool>,
    yes: &str,
    no: &str,
) -> Verdict {
    let (outcome, why) = decide(&basis, ok);
    let why = match (outcome, why) {
        (_, Some(w)) => w,
        (Outcome::Matches, None) => yes.to_string(),
        (_, None) => no.to_string(),
    };
    let shown = matches!(outcome, Outcome::NotChecked) && ours.is_empty();
    Verdict { claim, study, ours: if shown { "-".into() } else { ours }, outcome, why }
}

pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The study each experiment reproduces.
pub fn study(experiment: &str) -> &'static str {
    crate::experiment::find(experiment).map_or("", |e| e.study())
}

/// The statements for one run of `experiment`.
pub fn verdicts(experiment: &str, results: &[Value]) -> Vec<Verdict> {
    let Some(e) = crate::experiment::find(experiment) else { return Vec::new() };
    let all = metrics(experiment, results);
    let m = Ms { all: &all, protocol: e.protocol(results) };
    e.verdicts(&m, results)
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

    fn eat_result(pattern: &str, frac: f64, trim: f64, read: f64) -> Value {
        json!({"pattern": pattern, "backing": "zram", "compressor": "lz4", "stored_fraction": frac,
               "trim_us_per_page": trim, "restore_us_per_page": read})
    }

    #[test]
    fn eat_statements_follow_the_numbers() {
        let one = vec![
            eat_result("random", 1.0, 10.0, 4.0),
            eat_result("semi", 0.21, 5.0, 4.5),
            eat_result("const", 0.0, 2.0, 4.2),
        ];
        // One repeat each: nothing to judge the spread by.
        let v = verdicts("eat", &one);
        assert!(v.iter().all(|x| x.outcome == Outcome::Unstable), "{v:?}");
        // Two repeats of the same figures: CV 0, judged.
        let rs: Vec<Value> = one.iter().chain(one.iter()).cloned().collect();
        let v = verdicts("eat", &rs);
        let by = |claim: &str| v.iter().find(|x| x.claim.contains(claim)).unwrap().outcome;
        assert_eq!(by("semi pattern"), Outcome::Matches);
        assert_eq!(by("twice as long"), Outcome::Matches);
        assert_eq!(by("reading back"), Outcome::Matches);
        let one = [
            eat_result("random", 1.0, 4.0, 4.0),
            eat_result("semi", 0.5, 5.0, 12.0),
            eat_result("const", 0.0, 2.0, 4.0),
        ];
        let rs: Vec<Value> = one.iter().chain(one.iter()).cloned().collect();
        let v = verdicts("eat", &rs);
        let by = |claim: &str| v.iter().find(|x| x.claim.contains(claim)).unwrap().outcome;
        assert_eq!(by("semi pattern"), Outcome::Differs);
        assert_eq!(by("twice as long"), Outcome::Differs);
        assert_eq!(by("reading back"), Outcome::Differs);
    }

    #[test]
    fn without_a_store_eat_checks_no_fractions() {
        let rs = vec![json!({"pattern": "semi", "backing": "none", "trim_us_per_page": 1.0})];
        let v = verdicts("eat", &rs);
        assert_eq!(v.iter().find(|x| x.claim.contains("semi pattern")).unwrap().outcome, Outcome::NotChecked);
    }

    #[test]
    fn heap_growth_needs_more_than_one_thread_count() {
        let run = |t: u64, ns: &[f64], a: &str| {
            let runs: Vec<Value> = ns.iter().map(|x| json!({"alloc_ns_mean": x})).collect();
            json!({"result": {"allocator": a, "heap_mode": "default", "threads": t, "runs": runs}})
        };
        let v = verdicts("heap", &[run(1, &[40.0, 40.5], "glibc")]);
        assert_eq!(v[0].outcome, Outcome::NotChecked);
        assert!(v[0].why.contains("one thread count"), "{}", v[0].why);
        let v = verdicts(
            "heap",
            &[run(1, &[40.0, 40.4], "glibc"), run(8, &[400.0, 401.0], "glibc"), run(8, &[100.0, 101.0], "jemalloc")],
        );
        assert_eq!(v[0].outcome, Outcome::Matches);
        assert_eq!(v[1].outcome, Outcome::Matches);
        assert!(v[1].ours.contains("jemalloc"), "{}", v[1].ours);
    }

    fn metric(values: &[f64]) -> Metric {
        Metric {
            experiment: "x".into(),
            group: "g".into(),
            name: "m",
            unit: "",
            lower_is_better: true,
            values: values.to_vec(),
            resolution: 0.0,
            export: crate::headline::Figure::new("m", "", true).export,
        }
    }

    #[test]
    fn the_rules_apply_in_order() {
        let stable = metric(&[100.0, 101.0, 99.0]);
        let shaky = metric(&[100.0, 140.0, 70.0]);
        let single = metric(&[100.0]);
        fn b(f: Vec<Option<&Metric>>) -> Basis<'_> {
            Basis { figures: f, protocol: Ok(()), tested: Ok(()) }
        }
        // Stable figures: the comparison decides.
        assert_eq!(decide(&b(vec![Some(&stable)]), Some(true)).0, Outcome::Matches);
        assert_eq!(decide(&b(vec![Some(&stable)]), Some(false)).0, Outcome::Differs);
        // CV above 5 %, or one repeat: unstable, whatever the comparison says.
        let (o, why) = decide(&b(vec![Some(&stable), Some(&shaky)]), Some(true));
        assert_eq!(o, Outcome::Unstable);
        assert!(why.unwrap().contains("CV 34.0 %"), "the reason names the CV");
        let (o, why) = decide(&b(vec![Some(&single)]), Some(true));
        assert_eq!(o, Outcome::Unstable);
        assert!(why.unwrap().contains("n = 1"));
        // A missing figure: not checked.
        assert_eq!(decide(&b(vec![Some(&stable), None]), Some(true)).0, Outcome::NotChecked);
        // An untested claim beats instability; a broken protocol beats everything.
        let mut x = b(vec![Some(&shaky)]);
        x.tested = Err("needs e1".into());
        assert_eq!(decide(&x, Some(true)), (Outcome::NotChecked, Some("needs e1".into())));
        x.protocol = Err("consumer OOM-killed".into());
        assert_eq!(decide(&x, Some(true)).0, Outcome::OutsideProtocol);
    }

    #[test]
    fn a_near_zero_fraction_is_stable_within_its_resolution() {
        let mut m = metric(&[0.0001, 0.0003, 0.0002]);
        assert!(!m.stable(), "CV is 50 % without a resolution");
        m.resolution = 0.005;
        assert!(m.stable());
    }

    fn thrash_run(preset: &str, rep: u64, out: f64, peak: f64, progress: f64, breaks: &[&str]) -> Value {
        json!({"result": {"preset": preset, "repeat_index": rep, "consumers": 8, "consumers_completed": 8,
            "oom_kills": 0, "pswpout_total": out.round() as u64, "pswpout_per_s_active": peak, "progress_overcommitted_median": progress,
            "recovery_s": 1.0, "protocol_breaks": breaks}})
    }

    #[test]
    fn thrash_findings_need_their_presets_and_the_protocol() {
        // e2 alone (the old quick lab): no finding is tested, nothing "matches".
        let e2 = [thrash_run("e2", 0, 1e5, 5e3, 0.4, &[]), thrash_run("e2", 1, 1.01e5, 5.05e3, 0.41, &[])];
        let v = verdicts("thrash", &e2);
        let by = |v: &[Verdict], c: &str| v.iter().find(|x| x.claim.contains(c)).unwrap().outcome;
        for c in ["more writes", "longer sleep", "faster stagger"] {
            assert_eq!(by(&v, c), Outcome::NotChecked, "{c}");
        }
        assert_eq!(by(&v, "thrash deeply"), Outcome::Matches);
        // With e1, e3 and e4 beside e2 (custom-sized presets count too).
        let mut all = e2.to_vec();
        for (p, out, peak) in [("e1-custom", 2e4, 1e3), ("e3-custom", 3e4, 2e3), ("e4-custom", 6e4, 9e3)] {
            all.push(thrash_run(p, 0, out, peak, 0.9, &[]));
            all.push(thrash_run(p, 1, out * 1.01, peak * 1.01, 0.9, &[]));
        }
        let v = verdicts("thrash", &all);
        for c in ["more writes", "longer sleep", "faster stagger"] {
            assert_eq!(by(&v, c), Outcome::Matches, "{c}");
        }
        // One OOM-killed consumer in one repeat: every verdict is outside the protocol.
        all.push(thrash_run(
            "e2",
            2,
            1e5,
            5e3,
            0.4,
            &["1 consumer(s) OOM-killed by the kernel (memcg OOM in /pagelab/x)"],
        ));
        let v = verdicts("thrash", &all);
        assert!(v.iter().all(|x| x.outcome == Outcome::OutsideProtocol), "{v:?}");
        assert!(v[0].why.contains("e2 repeat 3") && v[0].why.contains("OOM"), "{}", v[0].why);
    }

    #[test]
    fn old_thrash_records_without_the_protocol_field_are_judged_from_their_counts() {
        let r = json!({"result": {"preset": "e2", "repeat_index": 0, "consumers": 12, "consumers_completed": 11, "oom_kills": 1}});
        let p = protocol("thrash", &[r]).unwrap_err();
        assert!(p.contains("1 consumer(s) OOM-killed") && p.contains("1 of 12"), "{p}");
        assert!(protocol("heap", &[]).is_ok());
    }
}
