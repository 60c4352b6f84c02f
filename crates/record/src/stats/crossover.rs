//! A crossover's contrast with first-order carryover fitted (issue 57 item 5).
//!
//! When several arms run one after another in each repeat (thrash's four
//! presets in a Williams order), what a run leaves behind falls on the run
//! after it. The per-repeat paired ratio does not cancel that carryover: in a
//! Williams square no arm follows itself, so each arm's mean carries every
//! other arm's carryover but its own, and the mean log of a ÷ b is off by a
//! share of λ_b − λ_a. Fitting the direct effects and the carryover effects
//! together removes it (Jones and Kenward, *Design and Analysis of Cross-Over
//! Trials*, ch. 5): on the log scale,
//!
//! ```text
//! ln y = μ + ρ_repeat + π_position + τ_arm + λ_arm before + ε
//! ```
//!
//! fitted by least squares over every run of the sequence. Each run's
//! predecessor is the run before it in the order they ran (the first run of
//! a repeat follows the last of the repeat before). The very first run
//! follows none of the arms: its carryover is taken as the arms' mean (the λ
//! are coded to sum to zero, and that run's codes are all 0). That is an
//! assumption; the simulation's carryover (none after the light presets, λ
//! after the heavy ones, none on the first run) does not hold it, and the
//! fit's error stays within the bound there. The interval's spread is the
//! paired ratios' own, scaled by the design's cost of fitting the carryover
//! ([`contrast`] says why).

use super::claim::{Estimate, t_quantile};

/// One run of the sequence: its repeat (row), its position in the repeat,
/// its arm, the arm of the run before it (None for the first run), and the
/// value it measured (positive; others are left out of the fit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    pub repeat: usize,
    pub position: usize,
    pub arm: usize,
    pub before: Option<usize>,
    pub value: f64,
}

/// The estimate of arm `a` ÷ arm `b` with first-order carryover fitted, as
/// an [`Estimate`] over the n repeats that measured both arms:
///
/// - the estimate is least squares' τ_a − τ_b ([`effects`], every run of
///   the sequence);
/// - its standard error is the paired ratios' own (the sample standard
///   deviation of ln(a ÷ b) over the repeats, ÷ √n), scaled by what fitting
///   the carryover costs in this design: √(c'(X'X)⁻¹c ÷ (2 ÷ n)), the
///   variance of the fitted contrast over that of the mean paired ratio for
///   runs of equal spread, a constant of the order alone (never below 1);
/// - n − 1 degrees of freedom, as the paired ratios have.
///
/// Least squares' own standard error pools every arm's residuals, and
/// paging makes the arms' spreads unequal (slow outliers on one arm): in the
/// simulation (experiments' thrash::carryover tests) its interval covered
/// 90 % where this one covers 95 %; a jackknife over the repeats covered
/// too, but at four repeats (one square) leaving one out wrecks the
/// design's balance and it decided a quarter as often. None where the runs
/// do not identify the contrast: fewer than three arms (two in ABBA order
/// cancel a first-order carryover in the paired ratio already), fewer than
/// two repeats with both arms, a design whose columns are not independent,
/// or fewer runs than columns.
pub fn contrast(runs: &[Run], a: usize, b: usize) -> Option<Estimate> {
    let ok: Vec<Run> = runs.iter().filter(|r| r.value.is_finite() && r.value > 0.0).copied().collect();
    if a == b {
        return None;
    }
    let f = effects(&ok)?;
    let (ia, ib) = (f.index(a)?, f.index(b)?);
    let mut repeats: Vec<usize> = ok.iter().map(|r| r.repeat).collect();
    repeats.sort_unstable();
    repeats.dedup();
    let d: Vec<f64> = repeats
        .iter()
        .filter_map(|k| {
            let ra = ok.iter().find(|r| r.repeat == *k && r.arm == a)?;
            let rb = ok.iter().find(|r| r.repeat == *k && r.arm == b)?;
            Some((ra.value / rb.value).ln())
        })
        .collect();
    if d.len() < 2 {
        return None;
    }
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let cost = (f.unit_variance(ia, ib) / (2.0 / n)).max(1.0);
    let m = f.tau[ia] - f.tau[ib];
    let log_sd = sd * cost.sqrt();
    let half = t_quantile(0.95, n - 1.0) * log_sd / n.sqrt();
    if !m.is_finite() || !half.is_finite() {
        return None;
    }
    Some(Estimate { n: d.len(), estimate: m.exp(), ci95: [(m - half).exp(), (m + half).exp()], log_mean: m, log_sd })
}

/// The fitted effects of a crossover ([`effects`]): each arm's direct effect
/// (the first arm's is 0) on the log scale, and the inverse of X'X for the
/// variance of a contrast.
struct Effects {
    arms: Vec<usize>,
    tau: Vec<f64>,
    /// Column of each arm's τ in X (None for the first arm's, fixed at 0).
    columns: Vec<Option<usize>>,
    inv: Vec<Vec<f64>>,
}

impl Effects {
    fn index(&self, arm: usize) -> Option<usize> {
        self.arms.iter().position(|a| *a == arm)
    }
    /// c'(X'X)⁻¹c for c the contrast τ_i − τ_j: its variance for runs of
    /// unit variance.
    fn unit_variance(&self, i: usize, j: usize) -> f64 {
        let k = self.inv.len();
        let mut c = vec![0.0; k];
        if let Some(ci) = self.columns[i] {
            c[ci] += 1.0;
        }
        if let Some(cj) = self.columns[j] {
            c[cj] -= 1.0;
        }
        (0..k).map(|p| (0..k).map(|q| c[p] * self.inv[p][q] * c[q]).sum::<f64>()).sum()
    }
}

/// The least-squares fit of every run ([`Effects`]), or None when the
/// design does not identify it.
fn effects(runs: &[Run]) -> Option<Effects> {
    let levels = |f: &dyn Fn(&Run) -> usize| {
        let mut v: Vec<usize> = runs.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let repeats = levels(&|r| r.repeat);
    let positions = levels(&|r| r.position);
    let arms = levels(&|r| r.arm);
    if arms.len() < 3 {
        return None;
    }
    let at = |v: &[usize], x: usize| v.iter().position(|y| *y == x);
    // Columns: the mean, a repeat's and a position's shift from the first,
    // an arm's from the first arm, and the carryover of each arm but the
    // last, less the last's (coded to sum to zero).
    let (nr, np, na) = (repeats.len(), positions.len(), arms.len());
    let k = 1 + (nr - 1) + (np - 1) + (na - 1) + (na - 1);
    let col_arm = 1 + (nr - 1) + (np - 1);
    let col_carry = col_arm + (na - 1);
    if runs.len() < k {
        return None;
    }
    let mut x = vec![vec![0.0; k]; runs.len()];
    let mut y = Vec::with_capacity(runs.len());
    for (row, r) in x.iter_mut().zip(runs) {
        row[0] = 1.0;
        let i = at(&repeats, r.repeat)?;
        if i > 0 {
            row[i] = 1.0;
        }
        let i = at(&positions, r.position)?;
        if i > 0 {
            row[nr - 1 + i] = 1.0;
        }
        let i = at(&arms, r.arm)?;
        if i > 0 {
            row[col_arm + i - 1] = 1.0;
        }
        if let Some(before) = r.before {
            match at(&arms, before) {
                Some(j) if j + 1 < na => row[col_carry + j] = 1.0,
                Some(_) => row[col_carry..].iter_mut().for_each(|c| *c = -1.0),
                // An arm left out of the fit (no usable value) still ran: no
                // code for it, as for the first run.
                None => {}
            }
        }
        y.push(r.value.ln());
    }
    // The normal equations X'X β = X'y, solved by inverting X'X.
    let mut xtx = vec![vec![0.0; k]; k];
    let mut xty = vec![0.0; k];
    for (row, yi) in x.iter().zip(&y) {
        for i in 0..k {
            xty[i] += row[i] * yi;
            for j in 0..k {
                xtx[i][j] += row[i] * row[j];
            }
        }
    }
    let inv = invert(xtx)?;
    let beta = |i: usize| (0..k).map(|j| inv[i][j] * xty[j]).sum::<f64>();
    let columns: Vec<Option<usize>> = (0..na).map(|i| (i > 0).then(|| col_arm + i - 1)).collect();
    let tau: Vec<f64> = columns.iter().map(|c| c.map_or(0.0, beta)).collect();
    Some(Effects { arms, tau, columns, inv })
}

/// The inverse of a symmetric positive definite matrix (Gauss–Jordan with
/// partial pivoting); None when it is singular: a column that the others
/// make (a pivot under 1e-9 of the largest diagonal).
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let k = a.len();
    let scale = (0..k).map(|i| a[i][i].abs()).fold(0.0, f64::max);
    if scale <= 0.0 {
        return None;
    }
    let mut inv: Vec<Vec<f64>> = (0..k).map(|i| (0..k).map(|j| f64::from(i == j)).collect()).collect();
    for col in 0..k {
        let p = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[p][col].abs() < 1e-9 * scale {
            return None;
        }
        a.swap(col, p);
        inv.swap(col, p);
        let d = a[col][col];
        for j in 0..k {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for i in 0..k {
            if i != col {
                let f = a[i][col];
                if f != 0.0 {
                    for j in 0..k {
                        a[i][j] -= f * a[col][j];
                        inv[i][j] -= f * inv[col][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Williams square of four arms (the rows thrash runs), repeated
    /// `squares` times, as one sequence.
    fn square(squares: usize) -> Vec<(usize, usize, usize)> {
        let rows = [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]];
        let mut out = Vec::new();
        for s in 0..squares {
            for (r, row) in rows.iter().enumerate() {
                for (p, arm) in row.iter().enumerate() {
                    out.push((s * 4 + r, p, *arm));
                }
            }
        }
        out
    }

    fn runs(
        design: &[(usize, usize, usize)],
        mut value: impl FnMut(usize, usize, usize, Option<usize>) -> f64,
    ) -> Vec<Run> {
        let mut before = None;
        design
            .iter()
            .map(|&(repeat, position, arm)| {
                let r = Run { repeat, position, arm, before, value: value(repeat, position, arm, before) };
                before = Some(arm);
                r
            })
            .collect()
    }

    #[test]
    fn a_carryover_the_paired_ratio_keeps_is_fitted_away() {
        // Arm effects (log) 0, 0.2, 0.1, 0.4; a carryover after arms 1 and 3
        // only; repeat and position shifts; a little noise so that the
        // residual has a spread.
        let tau = [0.0, 0.2, 0.1, 0.4];
        let lambda = [0.0, 0.3, 0.0, 0.3];
        let mut rng = crate::stats::rng::SplitMix64(7);
        let noise: Vec<f64> = (0..32).map(|_| 1e-4 * rng.normal()).collect();
        let d = square(2);
        let mut i = 0;
        let rs = runs(&d, |rep, pos, arm, before| {
            i += 1;
            (1.0 + 0.1 * rep as f64 + 0.03 * pos as f64 + tau[arm] + before.map_or(0.15, |b| lambda[b]) + noise[i - 1])
                .exp()
        });
        let e = contrast(&rs, 2, 1).unwrap();
        assert!((e.log_mean - (0.1 - 0.2)).abs() < 1e-3, "fitted {}", e.log_mean);
        assert_eq!(e.n, 8);
        // The paired ratio of the same runs is off by the carryover.
        let by = |rep: usize, arm: usize| rs.iter().find(|r| r.repeat == rep && r.arm == arm).unwrap().value;
        let paired: f64 = (0..8).map(|rep| (by(rep, 2) / by(rep, 1)).ln()).sum::<f64>() / 8.0;
        assert!((paired - (0.1 - 0.2)).abs() > 0.05, "paired {paired}");
    }

    #[test]
    fn the_spread_is_the_paired_ratios_scaled_by_the_designs_cost() {
        // One square: 16 runs, 13 columns. The spread is the paired log
        // ratios' standard deviation times √cost, where the cost (a constant
        // of the order) is at least 1: never narrower than the paired ratios'.
        let mut rng = crate::stats::rng::SplitMix64(3);
        let rs = runs(&square(1), |_, _, arm, _| (arm as f64 * 0.1 + 0.1 * rng.normal()).exp());
        let e = contrast(&rs, 3, 0).unwrap();
        assert_eq!(e.n, 4);
        let by = |rep: usize, arm: usize| rs.iter().find(|r| r.repeat == rep && r.arm == arm).unwrap().value;
        let d: Vec<f64> = (0..4).map(|rep| by(rep, 3) / by(rep, 0)).collect();
        let paired = crate::stats::claim::estimate(&d).unwrap();
        let cost = (e.log_sd / paired.log_sd).powi(2);
        println!("the cost of fitting the carryover in one square: {cost:.3}");
        assert!((1.0..3.0).contains(&cost), "cost {cost}");
        // The same cost for any values in the same order: the design's alone.
        let other = runs(&square(1), |r, p, arm, _| (arm as f64 + 0.3 * ((r * 7 + p * 3) % 5) as f64).exp());
        let e2 = contrast(&other, 3, 0).unwrap();
        let d2: Vec<f64> = (0..4)
            .map(|rep| {
                let v = |arm| other.iter().find(|r| r.repeat == rep && r.arm == arm).unwrap().value;
                v(3) / v(0)
            })
            .collect();
        let cost2 = (e2.log_sd / crate::stats::claim::estimate(&d2).unwrap().log_sd).powi(2);
        assert!((cost - cost2).abs() < 1e-9, "{cost} against {cost2}");
        assert!(e.ci95[0] < e.estimate && e.estimate < e.ci95[1], "{e:?}");
    }

    #[test]
    fn what_the_runs_cannot_identify_is_none() {
        // Two arms: the per-repeat ratio of ABBA is the analysis.
        let two: Vec<(usize, usize, usize)> =
            (0..4).flat_map(|r| if r % 2 == 0 { [(r, 0, 0), (r, 1, 1)] } else { [(r, 0, 1), (r, 1, 0)] }).collect();
        assert!(contrast(&runs(&two, |_, _, a, _| 1.0 + a as f64), 1, 0).is_none());
        // Three arms in two repeats: more parameters than runs.
        let three = [(0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 0, 2), (1, 1, 1), (1, 2, 0)];
        assert!(contrast(&runs(&three, |_, _, a, _| 1.0 + a as f64), 2, 1).is_none());
        // An arm that is not there, or a contrast with itself.
        let rs = runs(&square(1), |_, p, a, _| 1.0 + a as f64 + 0.01 * p as f64);
        assert!(contrast(&rs, 5, 1).is_none() && contrast(&rs, 1, 1).is_none());
        // Values that are not positive are left out, not fitted as logs.
        let mut bad = runs(&square(2), |r, p, a, _| 1.0 + a as f64 + 0.01 * (p + r) as f64 + 0.001 * (r * p) as f64);
        bad[5].value = 0.0;
        bad[6].value = f64::NAN;
        assert!(contrast(&bad, 2, 1).is_some_and(|e| e.log_mean.is_finite()));
    }
}
