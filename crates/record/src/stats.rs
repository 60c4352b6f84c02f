//! The one place for the summary statistics every experiment and report uses:
//! median, mean, coefficient of variation, percentile, and the stability
//! contract's threshold. Non-finite values are ignored everywhere, so a NaN
//! from a missing figure never turns a median or a CV into garbage.
//! [`claim`] decides claims: intervals, acceptance regions, Holm.

pub mod claim;
pub mod crossover;
pub mod rng;
pub mod welch;

pub use welch::{Welch, welch};

/// The CV above which a figure is flagged as spread widely in tables. A
/// description only: verdicts are decided by intervals ([`claim`]).
pub const CV_STABLE: f64 = 0.05;

pub(crate) fn finite(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| x.is_finite()).collect()
}

/// The median of the finite values (the mean of the middle two for an even
/// count); `None` when there are none.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = finite(v);
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The mean of the finite values; `None` when there are none.
pub fn mean(v: &[f64]) -> Option<f64> {
    let v = finite(v);
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The mean and the sample variance (n − 1) of the finite values; `None`
/// for fewer than two. The one place both are written.
pub fn mean_var(v: &[f64]) -> Option<(f64, f64)> {
    let v = finite(v);
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    Some((m, v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)))
}

/// The sample standard deviation (n − 1) of the finite values; `None` for
/// fewer than two.
pub fn sd(v: &[f64]) -> Option<f64> {
    mean_var(v).map(|(_, var)| var.sqrt())
}

/// The mean of the finite values and the half-width of its two-sided 95 %
/// t interval (Student's t at n − 1 degrees of freedom); `None` for fewer
/// than two.
pub fn mean_ci95(v: &[f64]) -> Option<(f64, f64)> {
    let (m, var) = mean_var(v)?;
    let n = finite(v).len() as f64;
    Some((m, claim::t_quantile(0.95, n - 1.0) * (var / n).sqrt()))
}

/// Coefficient of variation: sample standard deviation ÷ |mean| of the finite
/// values. `None` for fewer than two values; 0 when the mean is 0 and every
/// value is 0; infinite when the mean is 0 but the values differ.
pub fn cv(v: &[f64]) -> Option<f64> {
    let (m, sd) = (mean(v)?, sd(v)?);
    if m == 0.0 {
        return Some(if sd == 0.0 { 0.0 } else { f64::INFINITY });
    }
    Some(sd / m.abs())
}

/// The rank of the nearest-rank percentile q (0..=1) among n sorted values:
/// the smallest value with at least q × n values at or below it.
fn nearest_rank(n: usize, q: f64) -> usize {
    ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// The nearest-rank percentile (q in 0..=1) of the finite values.
pub fn percentile(v: &[f64], q: f64) -> Option<f64> {
    let mut v = finite(v);
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[nearest_rank(v.len(), q)])
}

/// The nearest-rank percentile of integer samples (latencies in ns, sizes),
/// sorting them in place; `None` for none.
pub fn percentile_u64(v: &mut [u64], q: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[nearest_rank(v.len(), q)])
}

/// Whether a figure with these repeats meets the stability contract: at least
/// two repeats and a CV at most [`CV_STABLE`].
pub fn stable(v: &[f64]) -> bool {
    cv(v).is_some_and(|c| c <= CV_STABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_counts_is_the_mean_of_the_middle_two_and_nan_is_ignored() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn cv_is_the_sample_sd_over_the_mean() {
        // sd of [9, 10, 11] (n-1) is 1; mean 10.
        assert!((cv(&[9.0, 10.0, 11.0]).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(cv(&[3.0]), None);
        assert_eq!(cv(&[0.0, 0.0]), Some(0.0));
        assert_eq!(cv(&[-1.0, 1.0]), Some(f64::INFINITY));
        assert!(stable(&[100.0, 101.0, 99.0]));
        assert!(!stable(&[100.0, 120.0, 80.0]));
        assert!(!stable(&[100.0]), "one repeat has no spread to judge");
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
        // The integer form is the same rule.
        let mut u: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile_u64(&mut u, 0.5), Some(50));
        assert_eq!(percentile_u64(&mut u, 0.999), Some(100));
        assert_eq!(percentile_u64(&mut [7], 0.01), Some(7));
        assert_eq!(percentile_u64(&mut [], 0.5), None);
    }
}
