//! The plan and the looks: what the budget can verify at the noise the
//! unlimited runs show (said before the first limited run), the look
//! schedule and how the looks spend α.

use super::{Plan, SearchConfig};
pub use record::stats::claim::t_upper;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

fn phi(x: f64) -> f64 {
    Normal::new(0.0, 1.0).map(|d| d.cdf(x)).unwrap_or(0.5)
}

/// The α spent by the looks up to `used` of the `n_max` pairs the budget
/// buys: α·(used/n_max)², the shape of Kim and DeMets' power family with
/// ρ = 2 (little at the early looks, most at the last). Each look is tested
/// at its increment alone (a Bonferroni split, wider than a group-sequential
/// boundary that uses the looks' correlation): however the looks fall, what
/// they spend adds up to at most α.
pub fn spend(alpha: f64, used: u32, n_max: u32) -> f64 {
    alpha * (used.min(n_max) as f64 / n_max.max(1) as f64).powi(2)
}

/// The look schedule: after `first` pairs, then after about half as many
/// again each time (3, 5, 7, 10, 15, …), the last at `max`.
pub fn looks(first: u32, max: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut n = first;
    while n < max {
        v.push(n);
        n += (n / 2).max(2);
    }
    if max >= first {
        v.push(max);
    }
    v
}

/// The power of a verification that looks up to `n` pairs, its α spent over
/// the `budget` pairs the budget buys (as the verification spends it), at a
/// limit whose true log ratio is `delta`, against the target `theta`, with
/// pair spread `sd`, judged at the last look (a lower bound on the chance
/// that some look verifies). `df_extra`: degrees of freedom the spread has
/// besides the verification's own.
#[allow(clippy::too_many_arguments)]
pub fn power(n: u32, budget: u32, first: u32, theta: f64, delta: f64, sd: f64, alpha: f64, df_extra: f64) -> f64 {
    let sched = looks(first, n);
    let (Some(&last), prev) = (sched.last(), sched.len().checked_sub(2).map(|i| sched[i]).unwrap_or(0)) else {
        return 0.0;
    };
    let budget = budget.max(n);
    let a = spend(alpha, last, budget) - spend(alpha, prev, budget);
    let df = last as f64 - 1.0 + df_extra;
    phi((theta - delta) * (last as f64).sqrt() / sd - t_upper(a, df))
}

/// The plan: pairs needed for 80 % power, and what the budget buys.
pub fn plan(cfg: &SearchConfig, base_log_sd: f64, base_df: f64, reference_s: f64, spent: u32, probe_pairs: u32) -> Plan {
    let theta = (1.0 + cfg.slowdown).ln();
    // A sample sd from a few runs is usually below the truth (its median is
    // 0.83 σ at 2 degrees of freedom): scaled to be median-unbiased.
    let unbias = if base_df >= 1.0 {
        ChiSquared::new(base_df).map(|c| (base_df / c.inverse_cdf(0.5)).sqrt()).unwrap_or(1.0)
    } else {
        1.0
    };
    let pair_sd = (base_log_sd * unbias * 2f64.sqrt()).max(0.02);
    // The verification's bound never takes a spread below the stalls'.
    let bound_sd = super::verify_sd(pair_sd);
    let first = cfg.pairs.max(2);
    let delta = theta / 4.0;
    // The verification's spread is its candidate's own pairs': no degrees
    // of freedom from elsewhere.
    let df_extra = 0.0;
    let by_time = if reference_s > 0.0 { (cfg.budget_s / (reference_s * 1.1)).floor() as u32 } else { cfg.max_runs };
    let runs_affordable = cfg.max_runs.min(by_time);
    // The verification pairs the budget buys after the probes: the α is
    // spread over them.
    let avail = runs_affordable.saturating_sub(spent + 2 * probe_pairs) / 2;
    let ok = |n: u32| power(n, avail, first, theta, delta, bound_sd, cfg.alpha, df_extra) >= 0.8;
    // Doubling, then bisection (the power grows with n, up to the schedule's steps).
    let pairs_needed = {
        let mut hi = first;
        while hi <= 200 && !ok(hi) {
            hi *= 2;
        }
        (hi <= 400 && ok(hi)).then(|| {
            let mut lo = hi / 2;
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if ok(mid) { hi = mid } else { lo = mid }
            }
            hi.max(first)
        })
    };
    let runs_needed = pairs_needed.map(|n| spent + 2 * probe_pairs + 2 * n);
    let enough = runs_needed.is_some_and(|r| r <= runs_affordable);
    let verifiable_slowdown = (avail >= first).then(|| {
        // The smallest target whose power at `avail` pairs reaches 80 %.
        let (mut lo, mut hi) = (0.0f64, 5.0f64);
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if power(avail, avail, first, mid, mid / 4.0, bound_sd, cfg.alpha, df_extra) >= 0.8 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi.exp() - 1.0
    });
    Plan { pair_sd, pairs_needed, runs_needed, runs_affordable, enough, verifiable_slowdown, probe_pairs }
}

/// Where one unlimited run of those the plan read stands apart (the
/// slowest at 1.25 × their median or more, the next below it), the words
/// that say so: a passing stall reads as noise every pair would have, and
/// another try may plan otherwise. None where the runs are fewer than three
/// or no single one stands apart.
pub fn lone_slow_run(seconds: &[f64]) -> Option<String> {
    let mut s: Vec<f64> = seconds.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect();
    if s.len() < 3 {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let (median, slowest, next) = (s[(s.len() - 1) / 2], s[s.len() - 1], s[s.len() - 2]);
    (slowest >= 1.25 * median && next < 1.25 * median).then(|| {
        format!(
            "one unlimited run took {slowest:.2} s against a median of {median:.2} s: if that was a passing \
             stall, not the program, another try may plan otherwise"
        )
    })
}

impl Plan {
    /// The plan in words, for the user, before the first limited run.
    pub fn describe(&self, cfg: &SearchConfig) -> String {
        let target = cfg.slowdown * 100.0;
        let can = match self.verifiable_slowdown {
            Some(v) => format!("{} runs can verify about {:.0} %", self.runs_affordable, (v * 100.0).ceil()),
            None => format!("{} runs leave no room for a verification", self.runs_affordable),
        };
        match (self.pairs_needed, self.runs_needed) {
            (Some(p), Some(r)) if self.enough => format!(
                "plan: pairs of runs differ by about ±{:.1} % here (the bound allows for unseen stalls: ±{:.0} % at least); verifying {target:.0} % needs about {p} pairs \
                 (about {r} runs in all, {} affordable): the budget buys them",
                self.pair_sd * 100.0,
                super::stall_sd() * 100.0,
                self.runs_affordable
            ),
            (Some(p), Some(r)) => format!(
                "plan: pairs of runs differ by about ±{:.1} % here (the bound allows for unseen stalls: ±{:.0} % at least); verifying {target:.0} % needs about {p} pairs \
                 (about {r} runs in all), and the budget buys {}: at this noise {can}, not {target:.0} %",
                self.pair_sd * 100.0,
                super::stall_sd() * 100.0,
                self.runs_affordable
            ),
            _ => format!(
                "plan: pairs of runs differ by about ±{:.1} % here (the bound allows for unseen stalls: ±{:.0} % at least); verifying {target:.0} % needs more than 400 pairs: \
                 at this noise {can}, not {target:.0} %",
                self.pair_sd * 100.0,
                super::stall_sd() * 100.0
            ),
        }
    }
}
