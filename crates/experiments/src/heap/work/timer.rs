//! Per-call timing: the time-stamp counter, calibrated against CLOCK_MONOTONIC,
//! with its own overhead measured so that it can be subtracted and reported.
//!
//! On x86-64 a call is bracketed by `rdtsc` and `lfence; rdtsc`: the lfence makes
//! the second read wait until the call's instructions have completed. More fences
//! (`lfence; rdtsc; lfence` before, `rdtscp; lfence` after, the textbook form)
//! keep the call from starting before the first read too, but on this project's
//! 2-vCPU Xeon VM they cost 76 ticks an empty pair against 56 here (38 against
//! 28 ns; an unfenced pair is 44 ticks), for an error of a few cycles that the
//! subtracted overhead, measured the same way, mostly cancels. Elsewhere the
//! counter is CLOCK_MONOTONIC itself, read through the vDSO.

/// Reads the counter before a timed call.
#[inline(always)]
pub fn start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        crate::heap::work::timer::mono_ns()
    }
}

/// Reads the counter after a timed call, once the call's instructions are done.
#[inline(always)]
pub fn stop() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence/rdtsc have no preconditions on x86-64.
    unsafe {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        _mm_lfence();
        _rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        crate::heap::work::timer::mono_ns()
    }
}

pub fn mono_ns() -> u64 {
    probe::sample::monotonic_ns()
}

/// What the counter is and what it costs.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Calibration {
    /// Nanoseconds per counter tick.
    pub ns_per_tick: f64,
    /// The median cost of a start()/stop() pair with nothing between, in ticks.
    pub overhead_ticks: u64,
    pub overhead_ns: f64,
    /// The fastest pair seen.
    pub overhead_min_ns: f64,
    /// "tsc" or "clock_monotonic".
    pub source: &'static str,
    /// The CPU advertises constant_tsc and nonstop_tsc (the TSC rate does not follow
    /// frequency changes or stop in idle states); false where that is unknown.
    pub invariant: bool,
}

/// Calibrates over about `spin_ms` of busy-waiting, then measures the overhead of
/// `pairs` empty start/stop pairs.
pub fn calibrate(p: &mut probe::Probe, spin_ms: u64, pairs: usize) -> Calibration {
    let source = if cfg!(target_arch = "x86_64") { "tsc" } else { "clock_monotonic" };
    // Best of three spins: a preemption in one only stretches that one.
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let (m0, t0) = (mono_ns(), start());
        while mono_ns() - m0 < spin_ms * 1_000_000 / 3 {
            std::hint::spin_loop();
        }
        let (t1, m1) = (stop(), mono_ns());
        if t1 > t0 {
            ratios.push((m1 - m0) as f64 / (t1 - t0) as f64);
        }
    }
    let ns_per_tick = record::stats::median(&ratios).unwrap_or(1.0);
    let mut d: Vec<u64> = (0..pairs.max(1))
        .map(|_| {
            let a = start();
            let b = stop();
            b.saturating_sub(a)
        })
        .collect();
    let overhead_ticks = record::stats::percentile_u64(&mut d, 0.5).unwrap_or(0);
    let flags = p.cpu_flags();
    let has = |f: &str| flags.iter().any(|x| x == f);
    Calibration {
        ns_per_tick,
        overhead_ticks,
        overhead_ns: overhead_ticks as f64 * ns_per_tick,
        overhead_min_ns: d[0] as f64 * ns_per_tick,
        source,
        invariant: source == "clock_monotonic" || (has("constant_tsc") && has("nonstop_tsc")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_matches_the_monotonic_clock() {
        let c = calibrate(&mut probe::Probe::default(), 60, 10_000);
        // Time a 20 ms spin with the counter and convert: it must agree with the
        // monotonic clock within 5 % (a wrong ratio would be off by GHz/1).
        let (m0, t0) = (mono_ns(), start());
        while mono_ns() - m0 < 20_000_000 {
            std::hint::spin_loop();
        }
        let (t1, m1) = (stop(), mono_ns());
        let by_counter = (t1 - t0) as f64 * c.ns_per_tick;
        let by_clock = (m1 - m0) as f64;
        assert!((by_counter / by_clock - 1.0).abs() < 0.05, "counter {by_counter} ns, clock {by_clock} ns");
        assert!(c.overhead_ns > 0.0 && c.overhead_ns < 1000.0, "overhead {} ns", c.overhead_ns);
        assert!(c.overhead_min_ns <= c.overhead_ns);
    }
}
