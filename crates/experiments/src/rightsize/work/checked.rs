//! `--check`'s answer for one limit, from its pairs.

use super::BatchConfig;
use super::search::{MIB, log_sd, t_upper, verify_sd};
use super::search::check::{Answer, CheckResult, Checked};
use crate::rightsize::kube;
use workloads::backing::BackingKind;
use crate::rightsize::results::{CheckAnswer, LimitCheck, RightsizeResult};

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
    let ys: Vec<f64> = v.ratios.iter().map(|r| r.ln()).collect();
    let n = ys.len();
    let mean = record::stats::mean(&ys).unwrap_or(f64::NAN);
    let ratio = mean.exp();
    // The interval the bounds use: the limit's own spread, at least the stall
    // floor (so an interval wholly under the target can still be undecided).
    let ci = (n >= 2).then(|| {
        let sd = verify_sd(log_sd(&ys));
        let h = t_upper(0.025, n as f64 - 1.0) * sd / (n as f64).sqrt();
        [(mean - h).exp(), (mean + h).exp()]
    });
    let look = v.last().copied();
    let limited: Vec<_> = res.runs.iter().filter(|r| r.limit_bytes == Some(c.limit)).collect();
    let oom_killed = limited.iter().filter(|r| r.outcome == "oom").count() as u32;
    let shown = format!("{asked} ({} MiB)", c.limit.div_ceil(MIB));
    let figures = match ci {
        Some([lo, hi]) => format!(
            "ratio {ratio:.3} (95 % interval {lo:.3} to {hi:.3}, stall floor included) after {n} pairs"
        ),
        None => format!("ratio {ratio:.3} after {n} pair{}", if n == 1 { "" } else { "s" }),
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
            let swap_known = swap.or((res.backing == Some(BackingKind::None)).then_some(0));
            out.kubernetes =
                swap_known.map(|s| kube::kubernetes(c.limit, s, res.backing, res.cgroup_version == Some(probe::cgroup::CgroupVersion::V2), cfg.node, found.peak));
            (
                CheckAnswer::Verified,
                format!(
                    "{shown}: verified within {target:.0} %: {figures}; one-sided upper bound {:.3} at α {:.4}",
                    l.upper, l.alpha
                ),
            )
        }
        Answer::TooSlow { capped } => {
            out.stopped_at_cap = capped > 0;
            let cap = if capped > 0 {
                format!(
                    "; {capped} run{} passed the time cap ({}× the unlimited median), counted at the cap",
                    if capped == 1 { "" } else { "s" },
                    cfg.search.cap_factor
                )
            } else {
                String::new()
            };
            (
                CheckAnswer::TooSlow,
                format!(
                    "{shown}: too slow: {figures}; its one-sided lower bound {:.3} at α {:.4} is above 1 + {target:.0} \
                     %{cap}",
                    look.map_or(f64::NAN, |l| l.lower_spent),
                    look.map_or(f64::NAN, |l| l.alpha)
                ),
            )
        }
        Answer::OomKilled { killed, runs } => (
            CheckAnswer::OomKilled,
            format!("{shown}: OOM-killed in {killed} of {runs} runs under the limit (the pairs up to its first look)"),
        ),
        Answer::Undecided { pairs_to_decide, capped } => {
            out.stopped_at_cap = capped > 0;
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
            (
                CheckAnswer::Undecided,
                format!(
                    "{shown}: undecided within the budget ({} pairs allowed): {figures}{}{}",
                    found.pairs_each,
                    if capped > 0 {
                        format!("; {capped} run(s) passed the time cap, so it cannot be verified, only found too slow")
                    } else {
                        String::new()
                    },
                    budget.unwrap_or_else(|| "; too few pairs to say what would decide".into())
                ),
            )
        }
    };
    out.answer = answer;
    out.said = said;
    out
}
