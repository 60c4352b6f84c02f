//! thrash's findings: the study's (Maziero et al.) and pagelab's own
//! recovery check, each a claim fixed before the data with the function that
//! draws its evidence from the runs ([`FINDINGS`]; docs/stability.md).

use crate::thrash::report::{SWAP_OUT_RATE, SWAPPED_OUT, group};
use crate::thrash::results::ThrashResult;
use crate::thrash::{carryover, protocol};
use record::stats::claim::Region;
use report::headline::Figure;
use report::verdict::{Claim, Drawn, Evidence, Finding, Ms, group_is};

/// e2's recovery per repeat for `thrash.recovery`, and how many of the values
/// are censored. A repeat that did not recover within its after-window counts
/// at the window's length, a lower bound (issue 43: it was dropped, so the
/// finding could not differ for that reason); one whose window was no longer
/// than the region's edge says nothing about "within 10 s" and is unusable
/// (NaN); a run recorded without its window's edges watched for at most
/// RECOVERY_MAX.
pub fn recovery_evidence(rs: &[ThrashResult], edge: f64) -> (Vec<f64>, usize) {
    let max = crate::thrash::work::RECOVERY_MAX.as_secs_f64();
    let mut censored = 0;
    let values = rs
        .iter()
        .filter(|r| group_is(&group(r, rs), "e2"))
        .map(|r| match r.recovery_s {
            Some(x) => x,
            // Not measured is no evidence either way.
            None if r.psi_unread => f64::NAN,
            // Consumers alive, but their load never went above the room (or
            // never fell under it): no moment to count from.
            None if r.recovery_alive && r.recovery_from_s.is_none() => f64::NAN,
            None => {
                let from = if r.recovery_alive { r.recovery_from_s.unwrap_or(f64::NAN) } else { r.thrash_end_s };
                let window = r.end_s - from;
                let window = if window.is_finite() && window > 0.0 { window } else { max };
                if window > edge {
                    censored += 1;
                    window
                } else {
                    f64::NAN
                }
            }
        })
        .collect();
    (values, censored)
}

/// "Within seconds", as pagelab reads it: 10 s from when the load fell back
/// enough to fit.
const RECOVERY_EDGE_S: f64 = 10.0;

/// thrash's findings by name: the one list of the presets each compares
/// ([`Which::presets`], an exhaustive match), which its draw gates on and a
/// lab's later pass reruns. A finding added to [`FINDINGS`] without a
/// variant here fails `every_finding_names_its_presets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Deep,
    Writes,
    Sleep,
    Stagger,
    Recovery,
}

impl Which {
    pub const ALL: [Which; 5] = [Which::Deep, Which::Writes, Which::Sleep, Which::Stagger, Which::Recovery];

    /// Its claim's id.
    pub fn id(self) -> &'static str {
        match self {
            Which::Deep => "thrash.deep",
            Which::Writes => "thrash.writes",
            Which::Sleep => "thrash.sleep",
            Which::Stagger => "thrash.stagger",
            Which::Recovery => "thrash.recovery",
        }
    }

    /// The presets it compares.
    pub fn presets(self) -> &'static [&'static str] {
        match self {
            Which::Deep | Which::Recovery => &["e2"],
            Which::Writes => &["e1", "e2"],
            Which::Sleep => &["e2", "e3"],
            Which::Stagger => &["e2", "e4"],
        }
    }

    /// The finding called `id`, None for an id that is not thrash's.
    pub fn of(id: &str) -> Option<Which> {
        Which::ALL.into_iter().find(|w| w.id() == id)
    }
}

/// Direction claims need a 10 % minimum effect (docs/stability.md).
pub static FINDINGS: [Finding<ThrashResult>; 5] = [
    Finding {
        claim: Claim {
            id: "thrash.deep",
            claim: "the consumers thrash deeply: they progress slowly",
            study: "deep thrashing by design (parameters chosen to reach it without exhausting memory)",
            quantity: "e2's median progress while overcommitted, per repeat (deep: ≤ 0.5)",
            region: Region::at_most(0.5),
            floor: 0.01,
            own: false,
            check: false,
            control: "negative: a limit above N x S (the CPU-only arm): nothing pages, so the consumers progress at full \
                      speed, far above 0.5; positive: e2 at five times the size factor (--scale 0.1, inside the \
                      protocol): W scales with the size factor and t_s does not, so each cycle faults five times the \
                      pages within the same sleep, and the consumers progress at most half as fast as unthrashed",
            yes: "while memory was overcommitted the median consumer completed at most half the cycles it would have \
                  unthrashed",
            no: "the consumers were slowed too little to call it deep thrashing (a fast store such as zram makes each \
                 fault cheap)",
        },
        draw: draw_deep,
    },
    Finding {
        claim: Claim {
            id: "thrash.writes",
            claim: "more writes per cycle mean more paging",
            study: "e2 (W = 10000) pages more than e1 (W = 1000)",
            quantity: "pages swapped out, e2 ÷ e1, paired by repeat (more: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e1 and e2 with no sleep between cycles (--sleep 0s), overcommitted as the study's: each \
                      consumer writes nonstop, so W no longer sets how fast it writes, and both page about alike: the \
                      ratio is not above 1.10",
            yes: "more writes touch more of each working set per cycle, so more of it must be paged in and out",
            no: "e1 paged about as much as e2",
        },
        draw: draw_writes,
    },
    Finding {
        claim: Claim {
            id: "thrash.sleep",
            claim: "a longer sleep means less paging",
            study: "e3 (t_s = 1 s) pages less than e2 (t_s = 0.1 s)",
            quantity: "pages swapped out, e3 ÷ e2, paired by repeat (less: ≤ 0.91)",
            region: Region::at_most(1.0 / 1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e2 and e3 under a limit above N x S (--cpu-only): neither pages beyond a few pages of noise, so the \
                      ratio of two near-zero counts is no longer less paging for the longer sleep: it scatters about \
                      1, and is not checked where neither paged at all (0 ÷ 0)",
            yes: "longer sleeps spread the same writes over more time",
            no: "e3 paged about as much as e2",
        },
        draw: draw_sleep,
    },
    Finding {
        claim: Claim {
            id: "thrash.stagger",
            claim: "a faster stagger means more aggressive thrashing",
            study: "e4 (t_c = 1 s) reaches a higher paging rate than e2 (t_c = 30 s)",
            quantity: "swap-outs/s while the consumers ran, e4 ÷ e2, paired by repeat (higher: ≥ 1.10)",
            region: Region::at_least(1.1),
            floor: 0.001,
            own: false,
            check: false,
            control: "e2 and e4 under a limit above N x S (--cpu-only): neither pages beyond a few pages of noise, so the \
                      ratio of two near-zero rates is no longer a faster thrash for the faster stagger: it scatters \
                      about 1, and is not checked where neither paged at all (0 ÷ 0)",
            yes: "consumers that start close together overcommit memory at once",
            no: "e4's consumers paged no faster than e2's while they ran",
        },
        draw: draw_stagger,
    },
    Finding {
        claim: Claim {
            id: "thrash.recovery",
            claim: "Linux recovers within seconds once the load ends (pagelab's own check: the study gives no figure)",
            study: "Linux seemed to recover fastest of the four systems, which the authors call \"only a subjective \
                    estimation, not backed by concrete results\"",
            quantity: "e2's recovery, the consumers alive and their load fallen back to a fifth of their regions (as the \
                       study brought each system back to normality): seconds from the last fall-back until paging, PSI \
                       and the probe inside the group stay calm for 1 s, per repeat (within seconds: ≤ 10 s; read on \
                       0.1 s intervals, so under 0.1 s counts as 0.1 s; a repeat that did not recover within its \
                       window counts as the window's length, censored)",
            region: Region::at_most(RECOVERY_EDGE_S),
            floor: 0.1,
            own: true,
            check: false,
            control: "consumers whose load stays (--after-load stays: each keeps writing its whole region, N × S ÷ limit = 2.5): paging does not calm down within 10 s",
            yes: "paging, memory pressure and the probe inside come back to normal within seconds once the load falls back",
            no: "paging, memory pressure or the probe inside stayed above the recovery rule's threshold for more than 10 s after the load fell back",
        },
        draw: draw_recovery,
    },
];

/// Maziero et al.'s three findings compare e2 with e1 (fewer writes), e3 (a
/// longer sleep) and e4 (a faster stagger); a run without that preset beside
/// e2 has not tested the finding.
fn beside(m: &Ms, p: &str, a: (&str, &Figure), b: (&str, &Figure)) -> Drawn {
    let has = |p: &str| m.all.iter().any(|x| group_is(&x.group, p));
    let e: Evidence = if !has("e2") {
        Err("the findings compare against e2, which this run did not run".into())
    } else if !has(p) {
        Err(format!("this finding needs {p} beside e2; this run ran {}", ran(m)))
    } else {
        m.ratios(a, b)
    };
    e.into()
}

/// Why a finding judged on e2 alone is not checked, when e2 did not run.
fn without_e2(m: &Ms) -> Option<String> {
    (!m.all.iter().any(|x| group_is(&x.group, "e2"))).then(|| format!("this is judged on e2; this run ran {}", ran(m)))
}

/// A finding's draw under the study's protocol (issue 57 item 2): not
/// checked when a run of its presets predates the protocol's figures, outside
/// the protocol when one of them broke it.
fn gated(d: Drawn, rs: &[ThrashResult], presets: &[&str]) -> Drawn {
    match protocol::unchecked(rs, presets) {
        Some(why) if matches!(d.evidence, Some(Ok(_))) => Drawn { evidence: Some(Err(why)), ..d },
        _ => Drawn { outside: protocol::outside(rs, presets), ..d },
    }
}

/// Every e2 repeat, a missing figure counted as unusable rather than dropped
/// (a repeat never overcommitted has no progress to judge).
fn draw_deep(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let e: Evidence = match without_e2(m) {
        Some(why) => Err(why),
        None => Ok(rs
            .iter()
            .filter(|r| group_is(&group(r, rs), "e2"))
            .map(|r| r.progress_overcommitted_median.unwrap_or(f64::NAN))
            .collect()),
    };
    gated(e.into(), rs, Which::Deep.presets())
}

/// [`beside`], with the presets' carryover fitted where this run's order
/// identifies it (issue 57 item 5: [`carryover::fitted`]); the per-repeat
/// ratios stay the values shown.
fn beside_fitted(m: &Ms, rs: &[ThrashResult], a: &str, b: &str, fig: &Figure, value: fn(&ThrashResult) -> f64) -> Drawn {
    let d = beside(m, if a == "e2" { b } else { a }, (a, fig), (b, fig));
    let fit = matches!(d.evidence, Some(Ok(_))).then(|| carryover::fit(rs, a, b, fig, value)).flatten();
    Drawn { fit, ..d }
}

fn draw_writes(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside_fitted(m, rs, "e2", "e1", &SWAPPED_OUT, carryover::swapped_out);
    gated(d, rs, Which::Writes.presets())
}

fn draw_sleep(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside_fitted(m, rs, "e3", "e2", &SWAPPED_OUT, carryover::swapped_out);
    gated(d, rs, Which::Sleep.presets())
}

fn draw_stagger(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let d = beside_fitted(m, rs, "e4", "e2", &SWAP_OUT_RATE, carryover::swap_out_rate);
    gated(d, rs, Which::Stagger.presets())
}

fn draw_recovery(m: &Ms, rs: &[ThrashResult]) -> Drawn {
    let e2: Vec<&ThrashResult> = rs.iter().filter(|r| group_is(&group(r, rs), "e2")).collect();
    if e2.iter().any(|r| !r.recovery_alive) {
        let e: Evidence = Err("recorded before the recovery was measured with the consumers alive (it ran from the last \
                               exit, on 1 s intervals): not judged"
            .into());
        return e.into();
    }
    let (recovery, censored) = recovery_evidence(rs, RECOVERY_EDGE_S);
    let mut d = gated(Drawn { censored, ..without_e2(m).map_or(Ok(recovery), Err).into() }, rs, Which::Recovery.presets());
    if e2.iter().any(|r| r.plan.as_ref().is_some_and(|p| p.after_share >= 1.0)) {
        d.label = Some("the load stayed (--after-load stays, a control)".into());
    }
    d
}

fn ran(m: &Ms) -> String {
    let mut g: Vec<&str> = m.all.iter().map(|x| x.group.as_str()).collect();
    g.dedup();
    if g.is_empty() { "none".into() } else { g.join(", ") }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_finding_names_its_presets() {
        use super::{FINDINGS, Which};
        let ids: Vec<&str> = FINDINGS.iter().map(|f| f.claim.id).collect();
        let named: Vec<&str> = Which::ALL.iter().map(|w| w.id()).collect();
        assert_eq!(ids, named, "a thrash finding without its presets (findings::Which), or one named twice");
        assert!(Which::ALL.iter().all(|w| w.presets().contains(&"e2")), "every finding compares against e2");
        assert_eq!(Which::of("thrash.sleep"), Some(Which::Sleep));
        assert_eq!(Which::of("eat.random_fraction"), None);
    }

    use crate::thrash::report::{Thrash, findings_markdown};
    use report::experiment::Study;
    use serde_json::{Value, json};

    #[test]
    fn findings_follow_the_verdict_rules() {
        let r = |p: &str, i: u64, out: f64, rate: f64| {
            // Inside the study's protocol: 5 × 1 page on 2 (2.5), 100 passes,
            // the overflow 3 pages.
            json!({"result": {"preset": p, "repeat_index": i, "pswpout_total": out.round() as u64, "pswpout_per_s_active": rate,
                              "plan": {"consumers": 5, "size_bytes": 4096, "writes": 10, "sleep_ms": 100.0, "scale": 1.0, "time_scale": 1.0}, "limit_bytes": 8192, "consumer_details": [{"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}],
                              "progress_overcommitted_median": 0.3 + 0.02 * i as f64, "consumers": 6, "consumers_completed": 6,
                              "oom_kills": 0, "protocol_breaks": []}})
        };
        let mut all = Vec::new();
        // Four repeats: with two, a 10× coarser floor (0.1) would widen e2's
        // progress interval past 0.5, and the verdict would hang on the
        // floor (issue 57 item 4).
        for i in 0..4 {
            let d = i as f64 * 0.01;
            all.extend([
                r("e1", i, 100.0 * (1.0 + 2.0 * d), 10.0),
                r("e2", i, 500.0 * (1.0 + d), 50.0 * (1.0 + d)),
                r("e3", i, 200.0 * (1.0 - d), 20.0),
                r("e4", i, 400.0, 90.0 * (1.0 + 2.0 * d)),
            ]);
        }
        let md = findings_markdown(&Thrash.parse(&all).unwrap());
        for claim in ["more writes", "a longer sleep", "a faster stagger", "thrash deeply"] {
            let line = md.lines().find(|l| l.contains(claim)).unwrap_or_else(|| panic!("{claim}: {md}"));
            assert!(line.contains("| matches"), "{line}");
        }
        // Without e3 beside e2 that finding is not checked; e2/e1 of 1.2, 1.05, 5
        // and 5 straddles 1.10: inconclusive, however tight e2 alone is.
        let mut few: Vec<Value> = all.iter().filter(|v| v["result"]["preset"] != "e3").cloned().collect();
        let md = findings_markdown(&Thrash.parse(&few).unwrap());
        assert!(md.lines().any(|l| l.contains("a longer sleep") && l.contains("| not checked")), "{md}");
        few[0]["result"]["pswpout_total"] = json!(417);
        few[3]["result"]["pswpout_total"] = json!(480);
        let md = findings_markdown(&Thrash.parse(&few).unwrap());
        assert!(md.lines().any(|l| l.contains("more writes") && l.contains("| inconclusive")), "{md}");
    }

    #[test]
    fn a_williams_square_is_judged_with_its_carryover_fitted() {
        // Four presets in thrash's own order over four repeats: the ratio
        // findings take the fit (its degrees of freedom in the words), and
        // the per-repeat ratios stay the values shown. The same runs in one
        // order every repeat (position and preset confounded) keep the
        // per-repeat analysis.
        let run = |p: &str, i: u32, out: f64| {
            json!({"result": {"preset": p, "repeat_index": i, "pswpout_total": out.round() as u64, "pswpout_per_s_active": out / 10.0,
                              "plan": {"consumers": 5, "size_bytes": 4096, "writes": 10, "sleep_ms": 100.0, "scale": 1.0, "time_scale": 1.0}, "limit_bytes": 8192, "consumer_details": [{"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}, {"cycles": 10}],
                              "progress_overcommitted_median": 0.3, "consumers": 6, "consumers_completed": 6,
                              "oom_kills": 0, "protocol_breaks": []}})
        };
        let base = |p: &str| match p {
            "e1" => 100.0,
            "e2" => 500.0,
            "e3" => 200.0,
            _ => 900.0,
        };
        let wobble = [1.0, 1.04, 0.97, 1.02, 0.99, 1.05, 0.96, 1.01];
        let mut k = 0;
        let mut williams = Vec::new();
        for i in 0..4u32 {
            for p in workloads::order::balanced(&["e1", "e2", "e3", "e4"], i as usize, 4) {
                williams.push(run(p, i, base(p) * wobble[k % 8] * (1.0 + 0.1 * f64::from(i))));
                k += 1;
            }
        }
        let vs = report::verdict::verdicts(&Thrash, &report::experiment::Parsed::of(Thrash.parse(&williams).unwrap()));
        for id in ["thrash.writes", "thrash.sleep", "thrash.stagger"] {
            let v = vs.iter().find(|v| v.id == id).unwrap();
            assert!(v.carryover_fitted && v.ours.contains("n = 4, carryover fitted)"), "{id}: {v:?}");
            assert_eq!((v.n, v.outcome), (4, report::verdict::Outcome::Matches), "{id}: {v:?}");
        }
        let deep = vs.iter().find(|v| v.id == "thrash.deep").unwrap();
        assert!(!deep.carryover_fitted, "{deep:?}");
        let mut fixed: Vec<Value> = williams.clone();
        fixed.sort_by_key(|v| (v["result"]["repeat_index"].as_u64(), v["result"]["preset"].as_str().map(String::from)));
        let vs = report::verdict::verdicts(&Thrash, &report::experiment::Parsed::of(Thrash.parse(&fixed).unwrap()));
        assert!(vs.iter().all(|v| !v.carryover_fitted), "{vs:?}");
        // The floor rule reads a fit again with the figures 10× coarser:
        // e2's and e4's swap-out rates under 0.1/s (read to 0.01) become
        // 0.1/s each, and "a faster stagger" would no longer match, so it
        // hangs on the resolution.
        let mut k = 0;
        let mut slow = Vec::new();
        for i in 0..4u32 {
            for p in workloads::order::balanced(&["e1", "e2", "e3", "e4"], i as usize, 4) {
                let mut v = run(p, i, base(p) * wobble[k % 8] * (1.0 + 0.1 * f64::from(i)));
                let rate = match p {
                    "e2" => 0.03 + 0.001 * (k % 3) as f64,
                    "e4" => 0.06 + 0.002 * (k % 5) as f64,
                    _ => 1.0,
                };
                v["result"]["pswpout_per_s_active"] = json!(rate);
                slow.push(v);
                k += 1;
            }
        }
        let vs = report::verdict::verdicts(&Thrash, &report::experiment::Parsed::of(Thrash.parse(&slow).unwrap()));
        let st = vs.iter().find(|v| v.id == "thrash.stagger").unwrap();
        assert!(st.carryover_fitted && st.at_resolution, "{st:?}");
        assert_eq!(st.outcome, report::verdict::Outcome::Inconclusive, "{st:?}");
        // The pages, far above a page, do not hang on it.
        let w = vs.iter().find(|v| v.id == "thrash.writes").unwrap();
        assert!(!w.at_resolution && w.outcome == report::verdict::Outcome::Matches, "{w:?}");
    }
}
