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
//! fitted by least squares over the runs of the sequence. Each run's
//! predecessor is the run before it in the order they ran (the first run of
//! a repeat follows the last of the repeat before); the very first run
//! follows none, and is left out of the fit (its predecessor is whatever ran
//! before the sequence). The interval's spread weighs each arm's own
//! spread by what each run counts in the estimate ([`contrast`] says why).

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
/// - the estimate is least squares' τ_a − τ_b ([`effects`]) from every run
///   that follows another (the very first run follows none: what it
///   carries from before the sequence is unknown, so it is only the second
///   run's predecessor);
/// - its variance is Σ wᵢ² σ²(arm of run i), where w are the weights least
///   squares gives each run in the estimate and σ²(arm) each arm's own
///   spread, from the paired log ratios of every two arms over the repeats
///   (σᵢ² + σⱼ² = their variance, solved for the arms by least squares, none
///   below 0). Paging makes the arms' spreads unequal (slow outliers on one
///   arm), and an arm outside the contrast still moves it through the
///   repeat, position and carryover effects: least squares' own standard
///   error pools every arm's residuals, and in the simulation its interval
///   covered 90 % with outliers on one arm;
/// - never less than the paired ratio's own variance (its spread² ÷ n);
/// - n − 1 degrees of freedom, as each paired ratio's spread has.
///
/// None where the runs do not identify the contrast: fewer than three arms
/// (two in ABBA order cancel a first-order carryover in the paired ratio
/// already), runs out of order (a repeat before the one run before it, an
/// arm twice in a repeat), fewer than two repeats with both arms, a design
/// whose columns are not independent, or fewer runs than columns.
pub fn contrast(runs: &[Run], a: usize, b: usize) -> Option<Estimate> {
    let in_order = runs
        .windows(2)
        .all(|w| w[1].repeat > w[0].repeat || (w[1].repeat == w[0].repeat && w[1].position > w[0].position))
        && runs.iter().enumerate().all(|(i, r)| runs[..i].iter().all(|x| x.repeat != r.repeat || x.arm != r.arm));
    if a == b || !in_order {
        return None;
    }
    let ok: Vec<Run> = runs.iter().filter(|r| r.value.is_finite() && r.value > 0.0).copied().collect();
    let followed: Vec<Run> = ok.iter().filter(|r| r.before.is_some()).copied().collect();
    let f = effects(&followed)?;
    let (ia, ib) = (f.index(a)?, f.index(b)?);
    let var = arm_variances(&ok, &f.arms)?;
    let w = f.weights(ia, ib);
    let v: f64 = followed.iter().zip(&w).map(|(r, wi)| wi * wi * f.index(r.arm).map_or(0.0, |i| var[i])).sum();
    let d = paired(&ok, a, b);
    let n = d.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let m = f.tau[ia] - f.tau[ib];
    // Never narrower than the paired ratio's own: the arms' spreads solved
    // from the pairs can come out 0 for two quiet arms beside two noisy
    // ones (a covariance term of the noisy pair, clamped), and the fit's
    // variance is at least that of a's and b's own runs.
    let own = super::mean_var(&d).map_or(f64::NAN, |(_, var)| var / nf);
    let se = v.max(own).max(0.0).sqrt();
    let half = t_quantile(0.95, nf - 1.0) * se;
    if !m.is_finite() || !half.is_finite() {
        return None;
    }
    // The spread that n repeats would need for this standard error, so that
    // what reads sd ÷ √n reads the fit's.
    Some(Estimate {
        n,
        estimate: m.exp(),
        ci95: [(m - half).exp(), (m + half).exp()],
        log_mean: m,
        log_sd: se * nf.sqrt(),
    })
}

/// ln(a ÷ b) in every repeat that measured both.
fn paired(runs: &[Run], a: usize, b: usize) -> Vec<f64> {
    let mut repeats: Vec<usize> = runs.iter().map(|r| r.repeat).collect();
    repeats.dedup();
    repeats
        .iter()
        .filter_map(|k| {
            let ra = runs.iter().find(|r| r.repeat == *k && r.arm == a)?;
            let rb = runs.iter().find(|r| r.repeat == *k && r.arm == b)?;
            Some((ra.value / rb.value).ln())
        })
        .collect()
}

/// Each arm's variance on the log scale from the paired log ratios of every
/// two arms: σᵢ² + σⱼ² = the variance of ln(i ÷ j) over the repeats, solved
/// by least squares for the arms (none below 0). A drift between repeats
/// cancels in each ratio; a position or carryover effect that differs from
/// repeat to repeat stays in it, which errs wide. None when a pair has
/// fewer than two repeats.
fn arm_variances(runs: &[Run], arms: &[usize]) -> Option<Vec<f64>> {
    let k = arms.len();
    let mut ata = vec![vec![0.0; k]; k];
    let mut atb = vec![0.0; k];
    for i in 0..k {
        for j in i + 1..k {
            let d = paired(runs, arms[i], arms[j]);
            if d.len() < 2 {
                return None;
            }
            let (_, s2) = super::mean_var(&d)?;
            for (p, q) in [(i, i), (i, j), (j, i), (j, j)] {
                ata[p][q] += 1.0;
            }
            atb[i] += s2;
            atb[j] += s2;
        }
    }
    let inv = invert(ata)?;
    Some((0..k).map(|i| (0..k).map(|j| inv[i][j] * atb[j]).sum::<f64>().max(0.0)).collect())
}

/// The fitted effects of a crossover ([`effects`]): each arm's direct effect
/// (the first arm's is 0) on the log scale, with what a contrast's weights
/// need.
struct Effects {
    arms: Vec<usize>,
    tau: Vec<f64>,
    /// Column of each arm's τ in X (None for the first arm's, fixed at 0).
    columns: Vec<Option<usize>>,
    /// X, one row per run fitted, and (X'X)⁻¹.
    x: Vec<Vec<f64>>,
    inv: Vec<Vec<f64>>,
}

impl Effects {
    fn index(&self, arm: usize) -> Option<usize> {
        self.arms.iter().position(|a| *a == arm)
    }
    /// The weight of each run fitted in the estimate of τ_i − τ_j: the
    /// estimate is Σ wᵣ ln yᵣ, w = X (X'X)⁻¹ c.
    fn weights(&self, i: usize, j: usize) -> Vec<f64> {
        let k = self.inv.len();
        let mut c = vec![0.0; k];
        if let Some(ci) = self.columns[i] {
            c[ci] += 1.0;
        }
        if let Some(cj) = self.columns[j] {
            c[cj] -= 1.0;
        }
        let g: Vec<f64> = (0..k).map(|p| (0..k).map(|q| self.inv[p][q] * c[q]).sum()).collect();
        self.x.iter().map(|row| (0..k).map(|p| row[p] * g[p]).sum()).collect()
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
    Some(Effects { arms, tau, columns, x, inv })
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
    fn a_noisy_arm_outside_the_contrast_widens_its_interval() {
        // Least squares leans on every arm's runs (through the repeat,
        // position and carryover effects), so a noisy arm 3 must widen the
        // interval of arm 1 ÷ arm 0 too; a spread pooled over the arms, or
        // the paired ratio's alone, would not say which.
        let interval = |noisy: f64| {
            let mut rng = crate::stats::rng::SplitMix64(11);
            let rs = runs(&square(2), |_, _, arm, _| {
                let sd = if arm == 3 { noisy } else { 0.05 };
                (arm as f64 * 0.1 + sd * rng.normal()).exp()
            });
            contrast(&rs, 1, 0).unwrap()
        };
        let (quiet, noisy) = (interval(0.05), interval(0.5));
        assert!(noisy.log_sd > 1.5 * quiet.log_sd, "{quiet:?} against {noisy:?}");
        assert_eq!((quiet.n, noisy.n), (8, 8));
        assert!(quiet.ci95[0] < quiet.estimate && quiet.estimate < quiet.ci95[1]);
    }

    #[test]
    fn runs_out_of_order_are_not_fitted() {
        let mut rng = crate::stats::rng::SplitMix64(3);
        let mut rs = runs(&square(1), |_, _, arm, _| (arm as f64 * 0.1 + 0.1 * rng.normal()).exp());
        assert!(contrast(&rs, 3, 0).is_some());
        rs.swap(4, 9);
        assert!(contrast(&rs, 3, 0).is_none());
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
