//! `--check`: is a limit someone else chose safe? Each limit gets pairs under
//! the verification's own rules ([`State::verify`]: fresh pairs side by side,
//! looks after `pairs` pairs and then about half as many again, α spent by
//! the share of its pairs used, the candidate's own spread with the stall
//! floor), its own α, and its own share of the budget, fixed before the
//! first pair. Then one of four answers: verified, too slow, OOM-killed, or
//! undecided with the budget that would decide.

use super::*;

/// A limit's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// The one-sided upper bound (at the look's share of α) is within the target.
    Verified,
    /// The one-sided lower bound, at the look's share of α, is above the
    /// target (`capped` limited runs passed the time cap, each counted at
    /// the cap, which only lowers that bound).
    TooSlow { capped: u32 },
    /// Limited runs killed by the OOM killer in their group, of those made.
    OomKilled { killed: u32, runs: u32 },
    /// Neither bound crossed the target in the pairs the budget gave; about
    /// this many pairs would decide, if the ratio holds where it is (None:
    /// fewer than two pairs, or the ratio sits on the target). A limit with
    /// a run past the time cap is never verified (its ratio there is only a
    /// lower bound).
    Undecided { pairs_to_decide: Option<u32>, capped: u32 },
}

/// One limit checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub limit: u64,
    pub verification: Verification,
    pub answer: Answer,
}

/// Every run of a check, and each limit's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    pub runs: Vec<Done>,
    pub pairs: Vec<Pair>,
    /// The unlimited runs' largest peak, rounded up to a MiB.
    pub peak: u64,
    /// The pairs each limit may take (the budget after the baselines, split evenly).
    pub pairs_each: u32,
    pub checked: Vec<Checked>,
    /// The unlimited runs' median runtime, seconds.
    pub reference_s: f64,
}

/// Pairs that would decide a limit whose mean log ratio is `m` with pair
/// spread `sd` (the floor included), if that held: the fewest n at which a
/// verification spending `alpha` over n pairs, looking after `first` and
/// about half as many again (as `--check` would, with a budget of n), has 80
/// % power to move its bound across `theta` ([`power`], mirrored for "too
/// slow"). Rough: `m` is an estimate. None when `m` sits on the target or
/// no n up to 2000 does.
pub fn pairs_to_decide(m: f64, sd: f64, theta: f64, first: u32, alpha: f64) -> Option<u32> {
    let gap = (theta - m).abs();
    if !(gap > 1e-9 && sd.is_finite()) {
        return None;
    }
    let ok = |n: u32| power(n, n, first, theta, theta - gap, sd, alpha, 0.0) >= 0.8;
    let mut hi = first.max(2);
    while hi <= 2000 && !ok(hi) {
        hi *= 2;
    }
    if hi > 2000 && !ok(hi) {
        return None;
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    Some(hi.max(first))
}

/// Checks each of `limits` in turn, after `cfg.baselines` unlimited runs.
/// Fails only when a run fails (the runner's error).
pub fn check<R: Runner>(cfg: SearchConfig, limits: &[u64], runner: &mut R) -> Result<CheckResult, R::Error> {
    let mut st = State { cfg, runner, runs: Vec::new(), pairs: Vec::new(), spent_s: 0.0, spread_runs: 0..0, check_mode: true };
    for _ in 0..cfg.baselines.max(1) {
        st.run(Role::Baseline, None)?;
    }
    let nb = st.runs.len();
    st.spread_runs = if nb >= 3 { 1..nb } else { 0..nb };
    let peak = round_mib_up(st.runs.iter().map(|d| d.trial.peak_bytes).max().unwrap_or(0).max(MIB));
    let pairs_each = st.pairs_affordable() / limits.len().max(1) as u32;
    let first = cfg.pairs.max(2);
    let msg = format!(
        "check: {} limit{}, up to {pairs_each} pairs each (α {:.0} % each, looks after {})",
        limits.len(),
        if limits.len() == 1 { "" } else { "s" },
        cfg.alpha * 100.0,
        looks(first, pairs_each).iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
    );
    st.runner.progress(&msg);
    let theta = (1.0 + cfg.slowdown).ln();
    let mut checked = Vec::new();
    for &limit in limits {
        let mut used = 0;
        let v = st.verify(limit, pairs_each, &mut used)?;
        let limited = st.pairs.iter().filter(|p| p.limit == limit && p.role == Role::Verify).count() as u32;
        let ys: Vec<f64> = v.ratios.iter().map(|r| r.ln()).collect();
        let answer = match v.ended {
            "verified" => Answer::Verified,
            "oom" => Answer::OomKilled { killed: v.oom, runs: limited },
            "too slow" => Answer::TooSlow { capped: v.capped },
            _ => {
                let m = record::stats::mean(&ys).unwrap_or(f64::NAN);
                let sd = verify_sd(log_sd(&ys));
                let need = (ys.len() >= 2).then(|| pairs_to_decide(m, sd, theta, first, cfg.alpha)).flatten();
                Answer::Undecided { pairs_to_decide: need, capped: v.capped }
            }
        };
        let said = match answer {
            Answer::Verified => "verified".to_string(),
            Answer::TooSlow { .. } => "too slow".to_string(),
            Answer::OomKilled { killed, runs } => format!("OOM-killed in {killed} of {runs} runs"),
            Answer::Undecided { .. } => "undecided".to_string(),
        };
        let n = v.ratios.len();
        let msg = format!("{} MiB: {said} after {n} pair{}", limit / MIB, if n == 1 { "" } else { "s" });
        st.runner.progress(&msg);
        checked.push(Checked { limit, verification: v, answer });
    }
    let reference_s = st.reference();
    Ok(CheckResult { runs: st.runs, pairs: st.pairs, peak, pairs_each, checked, reference_s })
}
