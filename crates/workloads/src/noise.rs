//! The machine's own noise: how much a fixed piece of CPU work varies from run
//! to run here, and how much CPU time the hypervisor took (steal). `doctor`
//! measures it and the lab records it (lab.json's `doctor.noise`), so a reader
//! can set a finding's effect against the noise floor of the machine it ran on.

use serde::Serialize;
use std::time::Instant;

/// The machine's noise, measured.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Noise {
    /// Runs of the calibration loop.
    pub runs: usize,
    /// Each run's time, ms.
    pub run_ms: Vec<f64>,
    pub median_ms: f64,
    /// Sample standard deviation ÷ mean of the runs.
    pub cv: f64,
    /// Slowest ÷ fastest run.
    pub max_over_min: f64,
    /// Steal time (/proc/stat) as a share of all CPU time during the runs; None
    /// where /proc/stat could not be read.
    pub steal_fraction: Option<f64>,
}

/// A fixed amount of integer work (xorshift and a multiply per step): the
/// same instructions every run, so its time varies only with the machine.
#[inline(never)]
fn work(steps: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut acc = 0u64;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        acc = acc.wrapping_add(x.wrapping_mul(0x2545_f491_4f6c_dd1d));
    }
    std::hint::black_box(acc)
}

/// Steps that take about `ms` here, found once (doubling from a small count).
fn calibrate(ms: f64) -> u64 {
    let mut steps = 1u64 << 16;
    loop {
        let t = Instant::now();
        work(steps);
        let took = t.elapsed().as_secs_f64() * 1e3;
        if took >= ms / 4.0 || steps >= 1 << 40 {
            return ((steps as f64) * ms / took.max(1e-6)).max(1.0) as u64;
        }
        steps *= 2;
    }
}

/// Runs the calibration loop `runs` times (each about `ms` long) and reads
/// steal from /proc/stat around them.
pub fn measure(runs: usize, ms: f64) -> Noise {
    let steps = calibrate(ms);
    let mut p = probe::Probe::default();
    let before = p.stat().ok().flatten();
    let run_ms: Vec<f64> = (0..runs.max(2))
        .map(|_| {
            let t = Instant::now();
            work(steps);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let after = p.stat().ok().flatten();
    let steal_fraction = before.zip(after).and_then(|(a, b)| {
        let total = b.total.total().checked_sub(a.total.total())?;
        let steal = b.total.steal.checked_sub(a.total.steal)?;
        (total > 0).then(|| steal as f64 / total as f64)
    });
    summarize(run_ms, steal_fraction)
}

fn summarize(run_ms: Vec<f64>, steal_fraction: Option<f64>) -> Noise {
    let lo = run_ms.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = run_ms.iter().cloned().fold(0.0, f64::max);
    Noise {
        runs: run_ms.len(),
        median_ms: record::stats::median(&run_ms).unwrap_or(f64::NAN),
        cv: record::stats::cv(&run_ms).unwrap_or(f64::NAN),
        max_over_min: if lo > 0.0 { hi / lo } else { f64::NAN },
        run_ms,
        steal_fraction,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_describes_the_runs() {
        let n = summarize(vec![10.0, 11.0, 12.0, 10.5], Some(0.02));
        assert_eq!(n.runs, 4);
        assert!((n.max_over_min - 1.2).abs() < 1e-12);
        assert!((n.median_ms - 10.75).abs() < 1e-12);
        assert!(n.cv > 0.05 && n.cv < 0.1, "{}", n.cv);
    }

    #[test]
    fn the_loop_is_fixed_work_that_takes_time() {
        // Twice the steps is about twice the time (not a loop the compiler removed).
        let steps = calibrate(5.0);
        let time = |s: u64| {
            let t = Instant::now();
            work(s);
            t.elapsed().as_secs_f64()
        };
        let one = (0..5).map(|_| time(steps)).fold(f64::INFINITY, f64::min);
        let two = (0..5).map(|_| time(2 * steps)).fold(f64::INFINITY, f64::min);
        assert!(two > 1.3 * one, "{one} s for {steps} steps, {two} s for twice as many");
        assert_eq!(work(1000), work(1000), "the same work every time");
    }
}
