use super::*;

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
        export: crate::headline::Figure::new("m", "", true, 0.001).export,
    }
}

#[test]
fn arms_pair_by_repeat_not_by_position() {
    // b lost its repeat 1: a's repeats 0 and 2 pair with b's 0 and 2.
    let a = metric(&[10.0, 20.0, 30.0], &[0, 1, 2]);
    let b = metric(&[5.0, 10.0], &[0, 2]);
    assert_eq!(paired(&a, &b), vec![2.0, 3.0]);
}

#[test]
fn a_zero_arm_is_one_step_not_a_lost_repeat() {
    // Issue 43: thrash.writes when e1 paged nothing was dropped, though it
    // is the strongest evidence that e2 pages more.
    let mut e2 = metric(&[500.0, 400.0, 450.0], &[0, 1, 2]);
    let mut e1 = metric(&[100.0, 0.0, 120.0], &[0, 1, 2]);
    e2.resolution = 1.0;
    e1.resolution = 1.0;
    assert_eq!(paired(&e2, &e1), vec![5.0, 400.0, 3.75]);
    // Without a resolution the zero is no ratio: NaN, which the verdict counts.
    e1.resolution = 0.0;
    let r = paired(&e2, &e1);
    assert_eq!(r.len(), 3);
    assert!(r[1].is_nan());
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let v = judge(&C, &ok, Ok(r));
    assert_eq!((v.n, v.unusable, v.values.len()), (2, 1, 2), "{v:?}");
    assert!(v.why.contains("1 of 3 repeats had no usable value"), "{}", v.why);
    // A value below the claim's resolution is raised to it, and counted.
    let v = judge(&C, &ok, Ok(vec![1.5, 0.0, 1.6]));
    assert_eq!((v.n, v.unusable), (3, 0), "{v:?}");
    assert_eq!(v.values[1], C.floor);
    // A negative value (a difference below 0) is not raised: unusable.
    let v = judge(&C, &ok, Ok(vec![1.5, -0.2, 1.6]));
    assert_eq!((v.n, v.unusable), (2, 1), "{v:?}");
    // Both arms under one step: no effect to compare, not a ratio of 1
    // (which would "differ" from ≥ 1.10 with almost no spread).
    e1.resolution = 1.0;
    let none = metric(&[0.0, 0.0, 0.0], &[0, 1, 2]);
    let mut none = none;
    none.resolution = 1.0;
    assert!(paired(&none, &e1).iter().zip([false, true, false]).all(|(r, nan)| r.is_nan() == nan));
    let both_zero = paired(&none, &none.clone());
    assert!(both_zero.iter().all(|r| r.is_nan()), "{both_zero:?}");
    let v = judge(&C, &ok, Ok(both_zero));
    assert_eq!((v.outcome, v.n, v.unusable), (Outcome::NotChecked, 0, 3), "{v:?}");
}

#[test]
fn identical_values_are_not_a_certainty() {
    // A figure read to 1e-4: [1e-4, 1e-4] and [1e-4, 2e-4] now decide alike
    // (they were p = 0, matches, against inconclusive).
    let c = Claim { region: Region::at_most(2e-4), floor: 1e-4, ..C };
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let step = judge(&c, &ok, Ok(vec![1e-4, 2e-4, 1e-4]));
    assert!(step.p.unwrap() > 0.0, "{step:?}");
    assert!(step.ci95.unwrap()[1] > step.ci95.unwrap()[0], "{step:?}");
    // Identical values are what the configuration fixes (issue 57): a check,
    // passed or failed, with no p and no family, whatever n.
    for n in [2, 4, 40] {
        let same = judge(&c, &ok, Ok(vec![1e-4; n]));
        assert_eq!((same.kind, same.outcome, same.p, same.family), (Kind::Check, Outcome::CheckPassed, None, 0));
        assert!(same.why.contains("same value"), "{}", same.why);
        let over = judge(&c, &ok, Ok(vec![3e-4; n]));
        assert_eq!((over.kind, over.outcome), (Kind::Check, Outcome::CheckFailed), "{over:?}");
    }
}

#[test]
fn values_the_floor_made_identical_stay_a_finding() {
    // thrash.recovery read on 0.1 s steps: four recoveries under a step
    // differed as measured, so no configuration fixed them. They are raised
    // to 0.1 s and judged as a finding, far under its 10 s edge.
    let c = Claim { region: Region::at_most(10.0), floor: 0.1, ..C };
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let v = judge(&c, &ok, Ok(vec![0.007, 0.02, 0.09, 0.05]));
    assert_eq!(v.values, vec![0.1; 4]);
    assert_eq!((v.kind, v.outcome), (Kind::Finding, Outcome::Matches), "{v:?}");
    assert!(v.p.is_some() && v.family != 0, "{v:?}");
    // The same values measured alike are what the configuration fixes.
    let same = judge(&c, &ok, Ok(vec![0.05; 4]));
    assert_eq!((same.kind, same.outcome), (Kind::Check, Outcome::CheckPassed), "{same:?}");
    // Zeros in every repeat are identical as measured too.
    let zeros = judge(&c, &ok, Ok(vec![0.0; 3]));
    assert_eq!(zeros.kind, Kind::Check, "{zeros:?}");
}

const C: Claim = Claim {
    id: "x.c",
    claim: "A is at least 10 % costlier than B",
    study: "",
    quantity: "A ÷ B",
    region: Region::at_least(1.1),
    floor: 0.001,
    own: false,
    check: false,
    control: "",
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
    let fig = crate::headline::Figure::new("total ms", "ms", true, 0.001);
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

/// The same twelve findings as above, but the marginal one's study has
/// only it and the strong one: judged in its own family of two, it stays
/// decided; the ten others are another family.
#[test]
fn each_study_is_its_own_family() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let mut strong = judge(&C, &ok, Ok(vec![50.0, 55.0, 52.0, 51.0]));
    let mut marginal = judge(&C, &ok, Ok(vec![1.3, 1.17, 1.45, 1.22]));
    let mut null = judge(&C, &ok, Ok(vec![1.0, 1.3, 0.9, 1.2]));
    strong.family_name = "a".into();
    marginal.family_name = "a".into();
    null.family_name = PAGELAB_FAMILY.into();
    let mut vs: Vec<Verdict> = [strong, marginal].into_iter().chain(std::iter::repeat_n(null, 10)).collect();
    let lookup = |_: &str| Some(C);
    families(vs.iter_mut().collect(), &lookup, ALPHA);
    assert_eq!(vs[1].outcome, Outcome::Matches, "{}", vs[1].why);
    assert!(vs[..2].iter().all(|v| v.family == 2) && vs[2..].iter().all(|v| v.family == 10));
    let f = Findings::of(vs.iter().map(|v| ("x", v)).collect());
    let names: Vec<(&str, usize, usize)> = f.families.iter().map(|x| (x.name.as_str(), x.size, x.decided)).collect();
    assert_eq!(names, [("a", 2, 2), (PAGELAB_FAMILY, 10, 0)]);
    assert_eq!(f.guarantee, GUARANTEE);
}

/// A later pass combines each pass's own test: the first pass's three
/// repeats straddle the edge, the second's two lie well inside; combined
/// (equal weights) it matches at the second pass's 1 % ÷ a family of 3.
/// Without a spread of its own (one repeat) the second pass decides
/// nothing, and says why.
#[test]
fn a_later_pass_combines_each_pass_alone() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let first = vec![1.05, 1.3, 1.2];
    let v1 = judge(&C, &ok, Ok(first.clone()));
    assert_eq!(v1.outcome, Outcome::Inconclusive);
    let mut v = v1.clone();
    let stages = [first.clone(), vec![1.6, 1.7, 1.65]];
    judge_stages(&mut v, &C, &stages, &[], &[1.0, 1.0], 0.01, 1, 2);
    assert_eq!(v.outcome, Outcome::Matches, "{v:?}");
    assert_eq!((v.n, v.family, v.pass), (6, 1, 2));
    let p = v.p.unwrap();
    // In a family of three, Bonferroni asks p ≤ 1 % ÷ 3: not this one.
    let mut in3 = v1.clone();
    judge_stages(&mut in3, &C, &stages, &[], &[1.0, 1.0], 0.01, 3, 2);
    assert!(p > 0.01 / 3.0 && in3.outcome == Outcome::Inconclusive, "{in3:?}");
    assert!((in3.p_adjusted.unwrap() - (3.0 * p).min(1.0)).abs() < 1e-12);
    assert!(in3.why.contains("Bonferroni over 3"), "{}", in3.why);
    // The p is the combination of each pass's own one-sided p (doubled,
    // as an interval's), not a pooled t test of all six (p = 0.032 here:
    // the passes differ, so the pooled spread is wide).
    let side = |v: &[f64]| claim::Sides::of(&claim::estimate(v).unwrap(), &C.region).above_lo;
    let want = 2.0 * claim::combine(&[side(&stages[0]), side(&stages[1])], &[1.0, 1.0]);
    assert!((p - want).abs() < 1e-12, "combined {p}, by hand {want}");
    let pooled = claim::test(&v.values, &C.region).unwrap().p().0;
    assert!((pooled - p).abs() > 0.01, "combined {p}, pooled {pooled}");
    // One repeat in the second pass: no test, the verdict stays.
    let mut w = v1.clone();
    judge_stages(&mut w, &C, &[first, vec![1.6]], &[], &[1.0, 1.0], 0.01, 3, 2);
    assert_eq!((w.outcome, w.n, w.pass), (Outcome::Inconclusive, 3, 1));
    assert!(w.why.contains("each needs two"), "{}", w.why);
}

/// Issue 57 item 1: a declared check is passed or failed from its values
/// (every repeat inside the region), has no p, and stays out of Holm, the
/// families and the decided share; a finding beside it keeps its family.
#[test]
fn a_check_stays_out_of_holm_and_the_decided_share() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let chk = Claim { id: "x.k", check: true, region: Region::at_least(0.95), ..C };
    let passed = judge(&chk, &ok, Ok(vec![0.99, 1.0, 1.01]));
    assert_eq!(
        (passed.kind, passed.outcome, passed.p, passed.control),
        (Kind::Check, Outcome::CheckPassed, None, None)
    );
    let failed = judge(&chk, &ok, Ok(vec![0.99, 0.9, 1.01]));
    assert_eq!(failed.outcome, Outcome::CheckFailed, "{failed:?}");
    let mut f1 = judge(&C, &ok, Ok(vec![1.3, 1.17, 1.45, 1.22]));
    assert_eq!((f1.kind, f1.control), (Kind::Finding, Some(C.control)));
    let mut p = passed.clone();
    f1.family_name = "x".into();
    p.family_name = "x".into();
    let lookup = |id: &str| Some(if id == "x.k" { chk } else { C });
    families(vec![&mut f1, &mut p], &lookup, ALPHA);
    assert_eq!((f1.family, p.family, p.outcome), (1, 0, Outcome::CheckPassed), "{f1:?} {p:?}");
    let doc = Findings::of(vec![("x", &f1), ("x", &p), ("x", &failed)]);
    assert_eq!((doc.checkable, doc.decided, doc.checks, doc.checks_passed, doc.family), (1, 1, 2, 1, 1));
    assert_eq!(doc.checks_failed, 1);
    // A lower bound cannot pass a check under an upper edge.
    let under = Claim { id: "x.u", check: true, region: Region::at_most(10.0), ..C };
    let v = judge_censored(&under, &ok, Ok(vec![4.0, 5.0, 6.0]), 1);
    assert_eq!((v.kind, v.outcome), (Kind::Check, Outcome::NotChecked), "{v:?}");
    assert_eq!(judge_censored(&under, &ok, Ok(vec![4.0, 5.0, 6.0]), 0).outcome, Outcome::CheckPassed);
    assert_eq!(doc.families.iter().map(|f| f.size).sum::<usize>(), 1);
    let json = serde_json::to_value(&doc).unwrap();
    assert_eq!(json["findings"][1]["kind"], "check");
    assert_eq!(json["findings"][1]["verdict"], "check_passed");
    assert!(json["findings"][0]["control"].is_string() && json["findings"][1]["control"].is_null());
}

/// A later pass whose arms ran outside the study's protocol decides
/// nothing: the finding is outside the protocol (review of issue 57).
#[test]
fn a_later_pass_outside_the_protocol_decides_nothing() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let first = judge(&C, &ok, Ok(vec![1.05, 1.3, 1.2]));
    assert_eq!(first.outcome, Outcome::Inconclusive);
    let broken = Ms { all: &all, protocol: Err("e2 repeat 5: overcommit 1.6".into()) };
    let second = judge(&C, &broken, Ok(vec![1.6, 1.7, 1.65]));
    assert_eq!(second.outcome, Outcome::OutsideProtocol);
    let mut v = first.clone();
    judge_later(&mut v, &C, &[Some(&first), Some(&second)], &[1.0, 1.0], 0.01, 1, 2);
    assert_eq!((v.outcome, v.p, v.pass), (Outcome::OutsideProtocol, None, 2), "{v:?}");
    assert!(v.why.contains("overcommit"), "{}", v.why);
    // The same second pass inside the protocol decides it.
    let mut w = first.clone();
    let inside = judge(&C, &ok, Ok(vec![1.6, 1.7, 1.65]));
    judge_later(&mut w, &C, &[Some(&first), Some(&inside)], &[1.0, 1.0], 0.01, 1, 2);
    assert_eq!(w.outcome, Outcome::Matches, "{w:?}");
}

/// Issue 57 item 4: stored fractions [0 ×6, 0.05 ×2] against "≤ 0.01"
/// matched with a floor of 1e-4 (upper bound 0.0052) and were inconclusive
/// with 1e-3 (0.012): the floor decided. Now inconclusive at the
/// resolution; a verdict far from its floor is untouched.
#[test]
fn the_floor_never_decides() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let c = Claim { region: Region::at_most(0.01), floor: 1e-4, ..C };
    let values = vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.05, 0.05];
    let coarse = judge(&Claim { floor: 1e-3, ..c }, &ok, Ok(values.clone()));
    assert_eq!(coarse.outcome, Outcome::Inconclusive, "{coarse:?}");
    let v = judge(&c, &ok, Ok(values.clone()));
    assert_eq!((v.outcome, v.at_resolution), (Outcome::Inconclusive, true), "{v:?}");
    assert!(v.why.contains("at the resolution"), "{}", v.why);
    // Without the check this would match: the interval alone is inside.
    let t = claim::test_at(&v.values, &c.region, c.floor).unwrap();
    assert_eq!(t.decide(ALPHA), Decision::Matches);
    // In a family the same rule holds at the family's level.
    let mut w = v.clone();
    let lookup = |_: &str| Some(c);
    family(&mut [&mut w], &lookup, ALPHA);
    assert_eq!((w.outcome, w.at_resolution), (Outcome::Inconclusive, true), "{w:?}");
    // Far from the floor nothing changes.
    let far = judge(&C, &ok, Ok(vec![1.5, 1.6, 1.55]));
    assert_eq!((far.outcome, far.at_resolution), (Outcome::Matches, false));
    // In a later pass, too: the passes' raw values are read to each floor.
    let mut later = v.clone();
    let stages = [values.clone(), values];
    judge_stages(&mut later, &c, &stages, &[], &[1.0, 1.0], 0.05, 1, 2);
    let at = |f: f64| {
        let s: Vec<Vec<f64>> = stages.iter().map(|x| x.iter().map(|v| v.max(f)).collect()).collect();
        claim::test_stages(&[&s[0], &s[1]], &c.region, &[1.0, 1.0], f).map(|t| t.decide(0.05))
    };
    // Two passes of the same values decide alike at all three floors: the
    // combined verdict stands, and is not at the resolution.
    let hangs = at(1e-3) != at(1e-4) || at(1e-5) != at(1e-4);
    assert_eq!(later.at_resolution, hangs, "{later:?}");
    assert_eq!((later.outcome, later.pass), (Outcome::Matches, 2), "{later:?}");
    // A second pass with half its values above the edge: the combination
    // matches read to 1e-4 and not to 1e-3, so the floor decides again.
    let mut mixed = v.clone();
    let stages = [stages[0].clone(), vec![0.0, 0.0, 0.05, 0.05]];
    judge_stages(&mut mixed, &c, &stages, &[], &[1.0, 1.0], 0.05, 1, 2);
    let at = |f: f64| {
        let s: Vec<Vec<f64>> = stages.iter().map(|x| x.iter().map(|v| v.max(f)).collect()).collect();
        claim::test_stages(&[&s[0], &s[1]], &c.region, &[1.0, 1.0], f).map(|t| t.decide(0.05))
    };
    assert_eq!((at(1e-4), at(1e-3)), (Some(Decision::Matches), Some(Decision::Inconclusive)));
    assert_eq!((mixed.outcome, mixed.at_resolution), (Outcome::Inconclusive, true), "{mixed:?}");
}

/// `bench controls` holds every control's verdict to its finding's family
/// as the lab's run judged it (Holm over that family's size), not to
/// whatever family the control's own run judged it in: the review of
/// 2026-11-30 found controls decided in families shrunk by findings their
/// runs could not judge.
#[test]
fn a_control_is_held_to_its_findings_family() {
    let all: Vec<Metric> = Vec::new();
    let ok = Ms { all: &all, protocol: Ok(()) };
    let v = judge(&C, &ok, Ok(vec![1.4, 1.3, 1.5, 1.35]));
    assert_eq!(v.outcome, Outcome::Matches, "{v:?}");
    let p = v.p.unwrap();
    assert!(p > 1e-4 && p < 0.05, "{p}");
    assert_eq!(held_at(&v, &[], 1, 1.0, ALPHA), Outcome::Matches);
    // The largest family it survives alone, and one more: the members the
    // control's run did not judge count, as p = 1.
    let m = (0.05 / p).floor() as usize;
    assert!(m >= 2, "{m}");
    assert_eq!(held_at(&v, &[], m, 1.0, ALPHA), Outcome::Matches, "p × {m} = {}", p * m as f64);
    assert_eq!(held_at(&v, &[], m + 1, 1.0, ALPHA), Outcome::Inconclusive, "p × {} = {}", m + 1, p * (m + 1) as f64);
    assert_eq!(held_at(&v, &vec![0.9; m], m + 1, 1.0, ALPHA), Outcome::Inconclusive, "larger p's change nothing");
    // Holm's credit for the others' smaller p's: v is tested last, at α
    // alone, where its finding was too.
    assert_eq!(held_at(&v, &vec![p / 100.0; m], m + 1, 1.0, ALPHA), Outcome::Matches);
    // Not where its finding was decided at a larger factor: the others'
    // small p's in a control's run may be the control's own doing.
    assert_eq!(held_at(&v, &vec![p / 100.0; m], m + 1, (m + 1) as f64, ALPHA), Outcome::Inconclusive);
    assert_eq!(held_at(&v, &vec![p / 100.0; m], m + 1, m as f64, ALPHA), Outcome::Matches);
    // At the first pass's share where the lab plans a second (4 %): the
    // largest family it survives there, and one more.
    let first = alpha_by_pass(2)[0];
    let m4 = (first / p).floor() as usize;
    if m4 >= 1 {
        assert_eq!(held_at(&v, &[], m4, 1.0, first), Outcome::Matches);
    }
    assert_eq!(held_at(&v, &[], m4 + 1, 1.0, first), Outcome::Inconclusive, "p × {} at {first}", m4 + 1);
    // A family larger in the control's run than in the lab's keeps its size.
    assert_eq!(held_at(&v, &vec![0.9; m], 1, 1.0, ALPHA), Outcome::Inconclusive);
    // A differs is held alike.
    let d = judge(&C, &ok, Ok(vec![0.5, 0.55, 0.52, 0.48]));
    assert_eq!((d.outcome, held_at(&d, &[], 10, 1.0, ALPHA)), (Outcome::Differs, Outcome::Differs));
    // Outside the protocol: decided as if inside where the run kept what
    // the rules gave (the caller says whether the control may lift it).
    let mut out = v.clone();
    (out.ungated, out.outcome) = (Some((out.outcome, out.p)), Outcome::OutsideProtocol);
    assert_eq!(
        (held_at(&out, &[], 1, 1.0, ALPHA), held_at(&out, &[], m + 1, 1.0, ALPHA)),
        (Outcome::Matches, Outcome::Inconclusive)
    );
    out.ungated = None;
    assert_eq!(held_at(&out, &[], 1, 1.0, ALPHA), Outcome::OutsideProtocol);
    // A check's result has no p to hold: it stays, at any family.
    let c = judge(&C, &ok, Ok(vec![1.5; 4]));
    assert_eq!((c.kind, held_at(&c, &[], 1_000, 1.0, ALPHA)), (Kind::Check, Outcome::CheckPassed));
    // A lower bound never matches, whatever the level.
    let cens = judge_censored(&C, &ok, Ok(vec![1.4, 1.3, 1.5, 1.35]), 1);
    assert_ne!(held_at(&cens, &[], 1, 1.0, ALPHA), Outcome::Matches);
    // A later pass's p is a combination the values do not give.
    let mut later = v.clone();
    later.pass = 2;
    assert_eq!(held_at(&later, &[], 1, 1.0, ALPHA), Outcome::Inconclusive);
    // Not checked stays not checked.
    let none = judge(&C, &ok, Err("no arm".into()));
    assert_eq!(held_at(&none, &[], 1, 1.0, ALPHA), Outcome::NotChecked);
}
