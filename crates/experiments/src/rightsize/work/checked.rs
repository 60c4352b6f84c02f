//! `--check`'s answer for one limit, from its pairs.

use super::BatchConfig;
use super::search::MIB;
use super::search::check::{Answer, CheckResult, Checked};
use crate::rightsize::kube;
use crate::rightsize::results::{CheckAnswer, LimitCheck, RightsizeResult};
use record::stats::claim;

/// A duration for a flag: whole minutes, at least one.
fn minutes(s: f64) -> String {
    format!("{}m", (s / 60.0).ceil().max(1.0))
}

pub(super) fn limit_check(
    res: &RightsizeResult,
    cfg: &BatchConfig,
    found: &CheckResult,
    c: &Checked,
    asked: &str,
    swap: Option<u64>,
) -> LimitCheck {
    let v = &c.verification;
    let e = claim::estimate(&v.ratios);
    let ratio = e.map(|e| e.estimate).unwrap_or_else(|| v.ratios.first().copied().unwrap_or(f64::NAN));
    let ci = e.filter(|_| v.ratios.len() >= 2).map(|e| e.ci95);
    let look = v.last().copied();
    let limited: Vec<_> = res.runs.iter().filter(|r| r.limit_bytes == Some(c.limit)).collect();
    let oom_killed = limited.iter().filter(|r| r.outcome == "oom").count() as u32;
    let shown = format!("{asked} ({} MiB)", c.limit.div_ceil(MIB));
    let figures = match ci {
        Some([lo, hi]) => format!("ratio {ratio:.3} (95 % interval {lo:.3} to {hi:.3}) after {} pairs", v.ratios.len()),
        None => format!("ratio {ratio:.3} after {} pair{}", v.ratios.len(), if v.ratios.len() == 1 { "" } else { "s" }),
    };
    let target = cfg.search.slowdown * 100.0;
    let mut out = LimitCheck {
        asked: asked.to_string(),
        limit_bytes: c.limit,
        pairs: v.ratios.len() as u32,
        pairs_allowed: found.pairs_each,
        ratio,
        ratio_ci95: ci,
        upper_bound: look.map(|l| l.upper),
        look_alpha: look.map(|l| l.alpha),
        oom_killed,
        limited_runs: limited.len() as u32,
        swap_bytes: swap,
        ..Default::default()
    };
    let (answer, said) = match c.answer {
        Answer::Verified => {
            let l = look.expect("a verified limit had a look");
            let swap_known = swap.or((res.backing == "none").then_some(0));
            out.kubernetes =
                swap_known.map(|s| kube::kubernetes(c.limit, s, &res.backing, res.cgroup_version == "v2", cfg.node, found.peak));
            (
                CheckAnswer::Verified,
                format!(
                    "{shown}: verified within {target:.0} %: {figures}; one-sided upper bound {:.3} at α {:.4}",
                    l.upper, l.alpha
                ),
            )
        }
        Answer::TooSlow { stopped: true } => {
            out.stopped_at_cap = true;
            (
                CheckAnswer::TooSlow,
                format!(
                    "{shown}: too slow: a run passed the time cap ({}× the unlimited median); {figures}",
                    cfg.search.cap_factor
                ),
            )
        }
        Answer::TooSlow { stopped: false } => (
            CheckAnswer::TooSlow,
            format!(
                "{shown}: too slow: {figures}; its one-sided 95 % lower bound {:.3} is above 1 + {target:.0} %",
                look.map_or(f64::NAN, |l| l.lower)
            ),
        ),
        Answer::OomKilled { killed, runs } => (
            CheckAnswer::OomKilled,
            format!("{shown}: OOM-killed in {killed} of {runs} runs under the limit"),
        ),
        Answer::Undecided { pairs_to_decide } => {
            let budget = pairs_to_decide.map(|n| {
                let runs = cfg.search.baselines + 2 * n;
                let seconds = runs as f64 * found.reference_s * 1.1;
                out.pairs_to_decide = Some(n);
                out.runs_to_decide = Some(runs);
                out.seconds_to_decide = Some(seconds);
                format!(
                    "; about {n} pairs would decide if the ratio holds (--runs {runs} --budget {} for this limit alone)",
                    minutes(seconds)
                )
            });
            // Stopped before its last pair: even every pair left could not
            // have put the bound within the target (verify's futility).
            let early = if (v.ratios.len() as u32) < found.pairs_each && v.ended == "futile" {
                format!(
                    " (stopped after {} of {} pairs: the pairs left could not have verified it)",
                    v.ratios.len(),
                    found.pairs_each
                )
            } else {
                String::new()
            };
            (
                CheckAnswer::Undecided,
                format!(
                    "{shown}: undecided within the budget ({} pairs allowed{early}): {figures}{}",
                    found.pairs_each,
                    budget.unwrap_or_else(|| ": too few pairs to say what would decide".into())
                ),
            )
        }
    };
    out.answer = answer;
    out.said = said;
    out
}
