//! The project's one small, seedable generator (SplitMix64, with Box–Muller
//! and Student's t for the simulations that check the statistics): fill
//! patterns seed from it, heap's allocation scripts draw from it, and a test
//! must not depend on a crate's stream changing between versions. Not for
//! anything secret.

/// SplitMix64 (Steele, Lea and Flood 2014): 64 bits of state, one add and two
/// multiplies per draw.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 bits (inlined across crates: heap's allocation script
    /// draws one per call it makes).
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform on [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform on [lo, hi).
    pub fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// One of `n` (n > 0), uniformly.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f64) as usize).min(n.saturating_sub(1))
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (a, b) = (self.unit().max(1e-300), self.unit());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    /// Student's t with `df` (a whole number ≥ 3) degrees of freedom, scaled
    /// to unit variance: heavy-tailed noise with the same spread as
    /// [`SplitMix64::normal`].
    pub fn t_unit(&mut self, df: u32) -> f64 {
        let df = df.max(3);
        let chi2: f64 = (0..df).map(|_| self.normal().powi(2)).sum();
        let t = self.normal() / (chi2 / df as f64).sqrt();
        t / (df as f64 / (df as f64 - 2.0)).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_have_the_moments_they_claim() {
        let mut r = SplitMix64(11);
        let n = 200_000;
        let (u, z, t): (Vec<f64>, Vec<f64>, Vec<f64>) =
            (0..n).map(|_| (r.unit(), r.normal(), r.t_unit(3))).fold((vec![], vec![], vec![]), |mut a, x| {
                a.0.push(x.0);
                a.1.push(x.1);
                a.2.push(x.2);
                a
            });
        let mean = |v: &[f64]| crate::stats::mean(v).unwrap();
        let var = |v: &[f64]| crate::stats::mean_var(v).unwrap().1;
        assert!((mean(&u) - 0.5).abs() < 0.005 && u.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(mean(&z).abs() < 0.01 && (var(&z) - 1.0).abs() < 0.02, "normal: {} {}", mean(&z), var(&z));
        // t(3) has infinite fourth moment, so its sample variance converges
        // slowly: a looser bound, and the tails must be heavier than normal's.
        assert!(mean(&t).abs() < 0.02 && (var(&t) - 1.0).abs() < 0.15, "t: {} {}", mean(&t), var(&t));
        let beyond = |v: &[f64], k: f64| v.iter().filter(|x| x.abs() > k).count();
        assert!(
            beyond(&t, 4.0) > 3 * beyond(&z, 4.0).max(1),
            "t(3) tails {} vs normal {}",
            beyond(&t, 4.0),
            beyond(&z, 4.0)
        );
        assert!((0..1000).all(|_| r.below(7) < 7));
    }
}
