//! From a worker's samples to its figures ([`fold`]), and from the repeats of
//! an arm to its result ([`aggregate`]). Pure, so that the rules are tested
//! on made-up samples.

use super::phases::Seen;
use super::{Arm, OverTimeConfig, Pattern, Sample, Spec};
use crate::heap::results::{OverTimeResult, OverTimeRun, PressureRun, Spread};

/// Points kept of a worker's timeline.
pub const TIMELINE_POINTS: usize = 400;

/// Idle gave back nothing when it gave back less than this share of the freed bytes.
pub const NOTHING_BACK: f64 = 0.01;

const MIB: f64 = units::MIB_F;

/// Seconds from the start of idle until heap RSS had fallen by half of what
/// idle gave back in all; None when idle gave back less than [`NOTHING_BACK`]
/// of `returnable` (see [`fold`]). `start` is the reading that opened idle, `end` the one that
/// closed it; `idle` the samples between, all as heap RSS (baseline taken off).
pub fn half_life(start: (u64, u64), idle: &[(u64, u64)], end: (u64, u64), returnable: u64) -> Option<f64> {
    let back = start.1.saturating_sub(end.1);
    if returnable == 0 || (back as f64) < NOTHING_BACK * returnable as f64 {
        return None;
    }
    let half = start.1 - back / 2;
    idle.iter()
        .chain(std::iter::once(&end))
        .filter(|(t, _)| *t >= start.0)
        .find(|(_, r)| *r <= half)
        .map(|(t, _)| (t - start.0) as f64 / 1e9)
}

/// A worker's figures from what it saw.
pub fn fold(spec: &Spec, seen: &Seen) -> OverTimeRun {
    let heap = |x: u64| x.saturating_sub(seen.baseline);
    let m = &seen.marks;
    let secs = |t: u64| (t as f64 - m[0] as f64) / 1e9;
    let between = |a: u64, b: u64| seen.samples.iter().filter(move |s| s.t_ns > a && s.t_ns <= b);
    let mid_churn = m[1] + (m[2] - m[1]) / 2;
    let steady: Vec<f64> = between(mid_churn, m[2]).map(|s| heap(s.rss) as f64).collect();
    let steady = record::stats::median(&steady).map_or(heap(seen.before_shrink), |x| x as u64);
    let direct = [seen.after_shrink, seen.after_idle];
    let peak = seen.samples.iter().chain(&direct).map(|s| heap(s.rss)).max().unwrap_or(0).max(heap(seen.before_shrink));
    let idle: Vec<(u64, u64)> = between(m[3], m[4]).map(|s| (s.t_ns, heap(s.rss))).collect();
    let (r0, r1) = (heap(seen.after_shrink.rss), heap(seen.after_idle.rss));
    // What the allocator could give back once shrink is over: all it held
    // before shrink but the bytes still live.
    let returnable = heap(seen.before_shrink).saturating_sub(seen.kept);
    let share = |x: u64| x as f64 / returnable.max(1) as f64;
    let charge = |s: &Sample| s.charge;
    OverTimeRun {
        repeat: spec.repeat,
        baseline_rss_bytes: seen.baseline,
        live_bytes: seen.live,
        freed_bytes: seen.freed,
        kept_bytes: seen.kept,
        peak_rss_bytes: peak,
        steady_rss_bytes: steady,
        before_shrink_rss_bytes: heap(seen.before_shrink),
        after_shrink_rss_bytes: r0,
        after_idle_rss_bytes: r1,
        half_life_s: half_life((m[3], r0), &idle, (m[4], r1), returnable),
        idle_returned_fraction: share(r0.saturating_sub(r1)),
        returned_fraction: share(heap(seen.before_shrink).saturating_sub(r1)),
        churn_ops: seen.ops,
        churn_ns_per_op: (m[2] - m[1]) as f64 * f64::from(spec.threads) / seen.ops.max(1) as f64,
        grow_s: (m[1] - m[0]) as f64 / 1e9,
        shrink_ms: (m[3] - m[2]) as f64 / 1e6,
        trim_ms: seen.trim_ms,
        peak_charge_bytes: seen.samples.iter().chain(&direct).filter_map(charge).max(),
        after_idle_charge_bytes: seen.after_idle.charge,
        phase_ends_s: [secs(m[1]), secs(m[2]), secs(m[3]), secs(m[4])],
        timeline: timeline(seen, &heap, &secs),
        knob_readback: None,
        pressure: seen.pressure.as_ref().map(|p| PressureRun {
            limit_bytes: p.squeezed.limit_bytes,
            swapped_bytes: p.squeezed.swapped_bytes,
            stored_bytes: p.squeezed.stored_bytes,
            compressed_bytes: p.squeezed.compressed_bytes,
            after_squeeze_rss_bytes: heap(p.after_squeeze_rss),
            regrow_s: p.regrow_ns as f64 / 1e9,
            regrow_major_faults: p.regrow_major_faults,
            after_regrow_rss_bytes: heap(p.after_regrow_rss),
        }),
    }
}

/// The samples from grow on, with the direct readings, thinned to
/// [`TIMELINE_POINTS`] (the direct readings always kept).
fn timeline(seen: &Seen, heap: &dyn Fn(u64) -> u64, secs: &dyn Fn(u64) -> f64) -> Vec<(f64, f64, Option<f64>)> {
    // From grow on, to the end of idle (or of the regrow after the squeeze).
    let end = seen.pressure.as_ref().map_or(seen.marks[4], |p| p.regrow_end_ns);
    let mut all: Vec<(Sample, bool)> =
        seen.samples.iter().filter(|s| s.t_ns >= seen.marks[0] && s.t_ns <= end).map(|s| (*s, false)).collect();
    all.extend([(seen.after_shrink, true), (seen.after_idle, true)]);
    all.sort_by_key(|(s, _)| s.t_ns);
    let stride = all.len().div_ceil(TIMELINE_POINTS - 2).max(1);
    all.iter()
        .enumerate()
        .filter(|(i, (_, direct))| *direct || i % stride == 0)
        .map(|(_, (s, _))| (secs(s.t_ns), heap(s.rss) as f64 / MIB, s.charge.map(|c| c as f64 / MIB)))
        .collect()
}

/// A figure of the squeezed repeats, if any was.
fn pressed(
    runs: &[OverTimeRun],
    spread: fn(&[f64]) -> Spread,
    f: fn(&PressureRun, &OverTimeRun) -> f64,
) -> Option<Spread> {
    let v: Vec<f64> = runs.iter().filter_map(|r| r.pressure.as_ref().map(|p| f(p, r))).collect();
    (!v.is_empty()).then(|| spread(&v))
}

/// An arm's repeats as one result.
pub fn aggregate(arm: &Arm, p: Pattern, threads: u32, cfg: &OverTimeConfig, runs: Vec<OverTimeRun>) -> OverTimeResult {
    let of = |f: fn(&OverTimeRun) -> f64| Spread::of(&runs.iter().map(f).collect::<Vec<_>>());
    let halves: Vec<f64> = runs.iter().filter_map(|r| r.half_life_s).collect();
    OverTimeResult {
        arm: arm.label(),
        allocator: arm.allocator.name(),
        knob: arm.knob.as_ref().map(|k| k.text.clone()),
        pattern: p.name(),
        threads,
        live_target_bytes: cfg.live_bytes,
        churn_s: cfg.churn.as_secs_f64(),
        idle_s: cfg.idle.as_secs_f64(),
        shrink_frees: cfg.shrink_frees,
        peak_mib: of(|r| r.peak_rss_bytes as f64 / MIB),
        steady_over_live: of(|r| r.steady_rss_bytes as f64 / r.live_bytes.max(1) as f64),
        after_shrink_mib: of(|r| r.after_shrink_rss_bytes as f64 / MIB),
        after_idle_mib: of(|r| r.after_idle_rss_bytes as f64 / MIB),
        half_life_s: Spread::of(&halves),
        half_life_never: runs.len() - halves.len(),
        idle_returned_fraction: Spread::of_share(&runs.iter().map(|r| r.idle_returned_fraction).collect::<Vec<_>>()),
        returned_fraction: Spread::of_share(&runs.iter().map(|r| r.returned_fraction).collect::<Vec<_>>()),
        churn_ns_per_op: of(|r| r.churn_ns_per_op),
        grow_s: of(|r| r.grow_s),
        swapped_mib: pressed(&runs, Spread::of_amount, |p, _| p.swapped_bytes as f64 / MIB),
        regrow_over_grow: pressed(&runs, Spread::of, |p, r| p.regrow_s / r.grow_s),
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn the_half_life_is_when_half_of_what_idle_gave_back_was_gone() {
        // 100 MiB right after shrink, falling 10 MiB a second to 50 MiB at 5 s.
        let mib = 1 << 20;
        let idle: Vec<(u64, u64)> = (1..5).map(|k| (10 * S + k * S, (100 - 10 * k) * mib)).collect();
        let h = half_life((10 * S, 100 * mib), &idle, (15 * S, 50 * mib), 200 * mib).unwrap();
        // Half of 50 MiB is gone at 75 MiB: the sample at 3 s (70 MiB) is the first at or below.
        assert!((h - 3.0).abs() < 1e-9, "{h}");
        // Nothing given back (less than 1 % of what was freed): never.
        assert_eq!(half_life((10 * S, 100 * mib), &[], (15 * S, 99 * mib), 200 * mib), None);
        // Everything at once: the first reading.
        assert_eq!(half_life((0, 100 * mib), &[(S / 10, mib)], (S, mib), 99 * mib), Some(0.1));
    }

    fn seen() -> Seen {
        let mib = 1u64 << 20;
        let base = 10 * mib;
        // grow 0–1 s to 100 MiB, churn 1–3 s at 120 MiB, shrink to 60 MiB at
        // 3.1 s, idle 3.1–5.1 s falling to 40 MiB.
        let mut samples = Vec::new();
        for k in 0..=50u64 {
            let t = k * S / 10;
            let heap = match t {
                t if t <= S => 100 * mib * t / S,
                t if t <= 3 * S => 120 * mib,
                t if t <= 31 * S / 10 => 60 * mib,
                _ => 40 * mib,
            };
            samples.push(Sample { t_ns: 100 + t, rss: base + heap, charge: Some(base + heap + mib) });
        }
        Seen {
            baseline: base,
            samples,
            marks: [100, 100 + S, 100 + 3 * S, 100 + 31 * S / 10, 100 + 51 * S / 10],
            before_shrink: base + 120 * mib,
            after_shrink: Sample { t_ns: 100 + 31 * S / 10, rss: base + 60 * mib, charge: None },
            after_idle: Sample { t_ns: 100 + 51 * S / 10, rss: base + 40 * mib, charge: Some(base + 41 * mib) },
            trim_ms: None,
            pressure: None,
            ops: 1_000_000,
            freed: 90 * mib,
            kept: 10 * mib,
            live: 100 * mib,
        }
    }

    fn spec() -> Spec {
        Spec {
            allocator: "glibc".into(),
            pattern: Pattern::Small,
            threads: 2,
            live_bytes: 100 << 20,
            churn_ms: 2000,
            idle_ms: 2000,
            shrink_frees: 0.9,
            sample_ms: 100,
            seed: 1,
            repeat: 1,
            after_shrink: None,
            charge_file: None,
            pressure: false,
        }
    }

    #[test]
    fn a_worker_folds_into_its_phase_figures() {
        let r = fold(&spec(), &seen());
        let mib = 1u64 << 20;
        assert_eq!(r.peak_rss_bytes, 120 * mib);
        assert_eq!(r.steady_rss_bytes, 120 * mib);
        assert_eq!(r.after_shrink_rss_bytes, 60 * mib);
        assert_eq!(r.after_idle_rss_bytes, 40 * mib);
        // 120 MiB before shrink, 10 MiB still live: 110 MiB could come back.
        assert!((r.idle_returned_fraction - 20.0 / 110.0).abs() < 1e-9);
        assert!((r.returned_fraction - 80.0 / 110.0).abs() < 1e-9);
        // Idle's 20 MiB were back by the first sample after 3.1 s (3.2 s).
        assert!((r.half_life_s.unwrap() - 0.1).abs() < 1e-6, "{:?}", r.half_life_s);
        // 2 s of churn × 2 threads ÷ 1 M allocations = 4 µs.
        assert!((r.churn_ns_per_op - 4000.0).abs() < 1e-6);
        assert!((r.grow_s - 1.0).abs() < 1e-9 && (r.shrink_ms - 100.0).abs() < 1e-6);
        assert_eq!(r.phase_ends_s, [1.0, 3.0, 3.1, 5.1]);
        assert_eq!(r.peak_charge_bytes, Some(10 * mib + 121 * mib));
        assert!(r.timeline.len() <= TIMELINE_POINTS && r.timeline.first().unwrap().0 == 0.0);
        assert!(r.timeline.iter().any(|p| p.0 == 5.1 && p.1 == 40.0));
    }

    #[test]
    fn an_arm_aggregates_its_repeats_with_an_interval_and_counts_never() {
        let mut a = fold(&spec(), &seen());
        let mut b = a.clone();
        b.after_idle_rss_bytes = 50 << 20;
        b.half_life_s = None;
        a.after_idle_rss_bytes = 30 << 20;
        let c = a.clone();
        let cfg = OverTimeConfig {
            threads: vec![2],
            arms: vec![],
            patterns: vec![Pattern::Small],
            live_bytes: 100 << 20,
            churn: std::time::Duration::from_secs(2),
            idle: std::time::Duration::from_secs(2),
            shrink_frees: 0.9,
            glibc_mmap_threshold: None,
            repeat: 3,
            sample: std::time::Duration::from_millis(100),
            seed: 1,
            exe: "/bin/true".into(),
            host_floor: None,
            charge: false,
            pressure: false,
        };
        let arm = Arm { allocator: crate::heap::work::alloc::Allocator::Glibc, knob: None };
        let r = aggregate(&arm, Pattern::Small, 2, &cfg, vec![a, b, c]);
        assert_eq!(r.after_idle_mib.median, Some(30.0));
        assert_eq!(r.after_idle_mib.n, 3);
        let ci = r.after_idle_mib.ci95.unwrap();
        assert!(ci[0] < 30.0 && ci[1] > 50.0 * 0.9, "{ci:?}");
        assert_eq!(r.half_life_never, 1);
        assert_eq!(r.half_life_s.n, 2);
        assert_eq!(r.steady_over_live.median, Some(1.2));
    }
}
