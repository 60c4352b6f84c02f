//! Welch's unequal-variance t-test: `compare`'s test of one metric between
//! two runs (Holm's correction over the metrics is [`super::claim::holm`]).

use super::claim::t_sf;
use super::{finite, mean_var};

/// The outcome of Welch's t-test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of `a` against `b` (two-sided), over their finite values.
/// None when either side has fewer than two. When both sides have no spread at all, the p-value is 1 for
/// equal means and 0 for different ones (a deterministic quantity that changed).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (a, b) = (finite(a), finite(b));
    let (ma, va) = mean_var(&a)?;
    let (mb, vb) = mean_var(&b)?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 <= 0.0 || !se2.is_finite() {
        let same = (ma - mb).abs() <= f64::EPSILON * ma.abs().max(mb.abs()).max(1.0);
        return Some(Welch {
            t: if same { 0.0 } else { f64::INFINITY.copysign(ma - mb) },
            df: na + nb - 2.0,
            p: if same { 1.0 } else { 0.0 },
        });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    if !df.is_finite() || df <= 0.0 {
        return None;
    }
    let p = (2.0 * t_sf(t.abs(), df)).clamp(0.0, 1.0);
    Some(Welch { t, df, p })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Welch's own example data as printed in many textbooks; the reference figures
    // (t, df, p) were computed with scipy.stats.ttest_ind(a, b, equal_var=False).
    const A: [f64; 15] = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4];
    const B: [f64; 15] = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4];

    #[test]
    fn welch_matches_scipy() {
        let w = welch(&A, &B).unwrap();
        assert!((w.t - REF_T).abs() < 1e-6, "t = {}", w.t);
        assert!((w.df - REF_DF).abs() < 1e-6, "df = {}", w.df);
        assert!((w.p - REF_P).abs() < 1e-6, "p = {}", w.p);
    }

    const REF_T: f64 = -2.455356398286006;
    const REF_DF: f64 = 24.988529290231416;
    const REF_P: f64 = 0.021378001462866992;

    #[test]
    fn welch_is_symmetric_and_needs_two_values() {
        let ab = welch(&A, &B).unwrap();
        let ba = welch(&B, &A).unwrap();
        assert!((ab.t + ba.t).abs() < 1e-12 && (ab.p - ba.p).abs() < 1e-12);
        assert!(welch(&[1.0], &B).is_none());
        assert!(welch(&A, &[]).is_none());
    }

    #[test]
    fn welch_without_spread() {
        assert_eq!(welch(&[2.0, 2.0], &[2.0, 2.0, 2.0]).unwrap().p, 1.0);
        assert_eq!(welch(&[2.0, 2.0], &[3.0, 3.0]).unwrap().p, 0.0);
    }
}
