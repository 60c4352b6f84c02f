//! What a run measured: its result types, and the figures computed from the
//! collector's samples, the probes' latencies and the consumers' cycles.

use super::*;

pub use crate::thrash::results::{Consumer, RecoveryPoint, Series, ThrashResult, Window, Windows};

/// Percentiles of the probe latencies whose wake-up time falls in [from, to).
pub fn window(samples: &[(f64, f64)], from: f64, to: f64) -> Window {
    let v: Vec<f64> = samples.iter().filter(|(t, _)| *t >= from && *t < to).map(|s| s.1).collect();
    let p = |q: f64| record::stats::percentile(&v, q);
    Window { p50: p(0.5), p99: p(0.99), max: v.iter().copied().reduce(f64::max), n: v.len() }
}

pub(crate) fn windows(samples: &[(f64, f64)], start: f64, end: f64) -> Windows {
    Windows {
        before: window(samples, f64::NEG_INFINITY, start),
        during: window(samples, start, end),
        after: window(samples, end, f64::INFINITY),
    }
}

/// Recovery from 1 s intervals (t_s, paging pages/s, psi some %): the first t at
/// or after `from` that starts 3 calm intervals in a row, minus `from`.
pub fn recovery(points: &[(f64, f64, f64)], from: f64, baseline_paging: f64) -> Option<f64> {
    let thr = (2.0 * baseline_paging).max(16.0);
    let calm: Vec<(f64, bool)> =
        points.iter().filter(|p| p.0 > from).map(|p| (p.0, p.1 <= thr && p.2 <= 1.0)).collect();
    calm.windows(3).find(|w| w.iter().all(|c| c.1)).map(|w| {
        // The interval ending at w[0].0 began about one second earlier.
        (w[0].0 - 1.0 - from).max(0.0)
    })
}

/// The recovery with the consumers alive (issue 57, [`RECOVERY`]): from
/// `from` (the moment the load fell back enough to fit, s after the start
/// signal), the start of the first stretch of the watch's intervals, at
/// least [`RECOVERY_CALM`] long, that is calm as a whole: its paging at most
/// max(2 × `baseline_paging`, 16 pages/s) over the stretch, its memory PSI
/// "some" at most 1 % of it (an unread interval is not calm), and the probe
/// inside the group never later than `probe_limit_ms` in it (a wake-up at w
/// late by L ms is late over [w, w + L]). Rates over the stretch, not per
/// interval: a few stray pages in one 0.1 s interval (the host's own
/// reclaim) are not a thrash. None: not calm within the watch. Resolution:
/// one interval ([`RECOVERY_POLL`]).
pub fn recovery_alive(
    watch: &[RecoveryPoint],
    probe: &[(f64, f64)],
    from: f64,
    baseline_paging: f64,
    probe_limit_ms: f64,
) -> Option<f64> {
    let thr = (2.0 * baseline_paging).max(16.0);
    let late: Vec<(f64, f64)> =
        probe.iter().filter(|p| p.1 > probe_limit_ms).map(|&(w, l)| (w, w + l / 1e3)).collect();
    let poll = RECOVERY_POLL.as_secs_f64();
    let pts: Vec<&RecoveryPoint> = watch.iter().filter(|p| p.t_s > from).collect();
    // Each interval as (start, end, pages, stalled s), its start the
    // previous end (the first's one poll earlier), never before `from`.
    let iv: Vec<(f64, f64, f64, f64)> = pts
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let start = if k == 0 { p.t_s - poll } else { pts[k - 1].t_s }.max(from);
            let dt = p.t_s - start;
            (start, p.t_s, p.paging_per_s * dt, p.psi_some_pct / 100.0 * dt)
        })
        .collect();
    let calm_s = RECOVERY_CALM.as_secs_f64() - 1e-9;
    for i in 0..iv.len() {
        let s = iv[i].0;
        let (mut pages, mut stalled) = (0.0, 0.0);
        for x in &iv[i..] {
            pages += x.2;
            stalled += x.3;
            let span = x.1 - s;
            // NaN fails every test below: unread is never calm.
            if !(pages <= thr * span.max(calm_s) && stalled <= 0.01 * span.max(calm_s)) {
                break;
            }
            if span >= calm_s {
                if !late.iter().any(|&(a, b)| a < x.1 && b > s) {
                    return Some(s - from);
                }
                break;
            }
        }
    }
    None
}

/// When the load falls back enough to fit (s after the start signal): the
/// last moment at which the consumers' load went from above `room` to at
/// most it, for good. A consumer's load is its `size` from its start to its
/// t_p's end, and [`FALL_BACK`] of it after, whatever `--after-load` did
/// (so that the control is read from the same moment, where its load did
/// not fall). None: the load never exceeded the room (nothing to recover
/// from), or it never fell under it.
pub fn overcommit_end(cs: &[Consumer], size: u64, room: u64) -> Option<f64> {
    let done: Vec<&Consumer> = cs.iter().filter(|c| c.completed).collect();
    let mut times: Vec<f64> = done.iter().flat_map(|c| [c.start_s, c.end_s]).filter(|t| t.is_finite()).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let load = |t: f64| -> f64 {
        done.iter()
            .map(|c| {
                if t < c.start_s {
                    0.0
                } else if t < c.end_s {
                    size as f64
                } else {
                    FALL_BACK * size as f64
                }
            })
            .sum()
    };
    let over: Vec<bool> = times.iter().map(|&t| load(t) > room as f64).collect();
    if !over.contains(&true) || *over.last()? {
        return None;
    }
    let last_over = over.iter().rposition(|&o| o)?;
    times.get(last_over + 1).copied()
}

/// Builds the result's collector figures from the samples of this run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn analyze(
    r: &mut ThrashResult,
    samples: &[probe::Sample],
    t0_ns: u64,
    start_ns: u64,
    end_ns: u64,
    stop_ns: u64,
    baseline_paging: f64,
) {
    let s: Vec<probe::Sample> = samples
        .iter()
        .filter(|x| x.t_ns + 2_000_000_000 >= t0_ns && x.t_ns <= stop_ns + 2_000_000_000)
        .cloned()
        .collect();
    let rel = |ns: u64| (ns as f64 - t0_ns as f64) / 1e9;
    let (ts, te) = (rel(start_ns), rel(end_ns));
    let mut active = Vec::new();
    let mut calm = Vec::new();
    for w in s.windows(2) {
        let iv = record::derive::interval(&w[0], &w[1], t0_ns);
        let t = rel(w[1].t_ns);
        let se = &mut r.series;
        se.t_s.push(t);
        let cpu = iv.cpu.unwrap_or_default();
        se.cpu_user_pct.push(cpu.user + cpu.nice);
        se.cpu_system_pct.push(cpu.system + cpu.irq + cpu.softirq);
        se.cpu_iowait_pct.push(cpu.iowait);
        se.pswpin_per_s.push(iv.pswpin_per_s.unwrap_or(0.0));
        se.pswpout_per_s.push(iv.pswpout_per_s.unwrap_or(0.0));
        se.pgpgin_kib_per_s.push(iv.pgpgin_kib_per_s.unwrap_or(0.0));
        se.pgpgout_kib_per_s.push(iv.pgpgout_kib_per_s.unwrap_or(0.0));
        se.pgmajfault_per_s.push(iv.pgmajfault_per_s.unwrap_or(0.0));
        se.psi_some_pct.push(iv.psi_memory_some_pct.unwrap_or(0.0));
        se.psi_full_pct.push(iv.psi_memory_full_pct.unwrap_or(0.0));
        se.cgroup_psi_some_pct.push(iv.cgroup_psi_memory_some_pct.unwrap_or(f64::NAN));
        se.cgroup_psi_full_pct.push(iv.cgroup_psi_memory_full_pct.unwrap_or(f64::NAN));
        se.collector_lateness_ms.push(iv.sampler_lateness_ms.unwrap_or(0.0));
        // Paging or PSI not read is not calm (NaN: the interval cannot start a recovery).
        let paging = iv.pswpin_per_s.unwrap_or(f64::NAN) + iv.pswpout_per_s.unwrap_or(f64::NAN);
        calm.push((t, paging, iv.psi_memory_some_pct.unwrap_or(f64::NAN)));
        if t > ts && t - iv.dt_s < te {
            active.push(iv);
        }
    }
    // Means and peaks while the consumers ran (record::derive::totals).
    let a = record::derive::totals(&active);
    // A mean not read is NaN (null in run.json), never a measured 0.
    r.cpu_user_pct_mean = a.cpu_user_pct_mean.unwrap_or(f64::NAN);
    r.cpu_system_pct_mean = a.cpu_system_pct_mean.unwrap_or(f64::NAN);
    r.cpu_iowait_pct_mean = a.cpu_iowait_pct_mean.unwrap_or(f64::NAN);
    r.cpu_user_share = a.cpu_user_share().unwrap_or(f64::NAN);
    r.psi_some_pct_mean = a.psi_memory_some_pct_mean.unwrap_or(f64::NAN);
    r.psi_full_pct_mean = a.psi_memory_full_pct_mean.unwrap_or(f64::NAN);
    r.cgroup_psi_some_pct_mean = a.cgroup_psi_memory_some_pct_mean;
    // No samples to read them from: unknown (NaN, null in run.json), not 0.
    r.pswpout_per_s_peak = a.pswpout_per_s_peak.unwrap_or(f64::NAN);
    r.collector_lateness_p99_ms = record::stats::percentile(&a.sampler_lateness_ms, 0.99).unwrap_or(f64::NAN);
    r.collector_lateness_max_ms = a.sampler_lateness_ms.iter().copied().reduce(f64::max).unwrap_or(f64::NAN);
    // Totals over the whole run, start signal to end.
    let inside: Vec<&probe::Sample> = s.iter().filter(|x| x.t_ns >= t0_ns && x.t_ns <= stop_ns).collect();
    if let (Some(a), Some(b)) = (inside.first(), inside.last()) {
        let d = |k: &str| record::derive::vmstat_delta(a, b, k);
        r.pswpout_total = d("pswpout");
        r.pswpin_total = d("pswpin");
        r.pgmajfault_total = d("pgmajfault");
    }
    // No sample read it: unknown (null), never "none available".
    r.host_mem_available_min_bytes = s.iter().filter_map(|x| x.meminfo.as_ref().and_then(|m| m.available())).min();
    r.recovery_s = recovery(&calm, te, baseline_paging);
    // PSI not read after the run: no interval could be calm, so the recovery
    // was not measured (not "slow").
    r.psi_unread = r.recovery_s.is_none() && calm.iter().any(|p| p.0 > te && p.2.is_nan());
    r.thrash_start_s = ts;
    r.thrash_end_s = te;
}

/// The progress while memory was overcommitted: for each [`BIN_MS`] bin, the
/// consumers running through all of it; the bin is overcommitted when their
/// sizes exceed `room`. Sets each completed consumer's `progress_overcommitted`
/// (cycles in its overcommitted bins ÷ the cycles its fastest cycle would have
/// fitted in them) and returns the median over consumers and the overcommitted
/// seconds.
pub fn overcommitted(cs: &mut [Consumer], size: u64, room: u64) -> (Option<f64>, f64) {
    let bin_s = BIN_MS as f64 / 1e3;
    let done: Vec<usize> = (0..cs.len()).filter(|&i| cs[i].completed).collect();
    let last = done.iter().map(|&i| cs[i].end_s).fold(0.0, f64::max);
    let nbins = (last / bin_s).ceil().max(0.0) as usize;
    let runs = |c: &Consumer, b: usize| c.start_s <= b as f64 * bin_s && c.end_s >= (b + 1) as f64 * bin_s;
    let over: Vec<bool> = (0..nbins)
        .map(|b| {
            let n = done.iter().filter(|&&i| runs(&cs[i], b)).count() as u64;
            n.saturating_mul(size) > room
        })
        .collect();
    let mut ratios = Vec::new();
    for &i in &done {
        let c = &mut cs[i];
        let mine: Vec<usize> = (0..nbins).filter(|&b| over[b] && runs(c, b)).collect();
        let secs = mine.len() as f64 * bin_s;
        c.progress_overcommitted = None;
        if secs + 1e-9 < MIN_OVERCOMMIT_S || c.cycle_ms_min <= 0.0 {
            continue;
        }
        let cycles: u64 = mine.iter().map(|&b| c.bins.get(b).copied().unwrap_or(0) as u64).sum();
        let expected = secs * 1e3 / c.cycle_ms_min;
        let r = (cycles as f64 / expected).min(1.0);
        c.progress_overcommitted = Some(r);
        ratios.push(r);
    }
    (record::stats::median(&ratios), over.iter().filter(|&&o| o).count() as f64 * bin_s)
}
