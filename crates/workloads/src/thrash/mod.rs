//! `thrash`: many processes whose working sets exceed the memory they are given,
//! contained in a memory cgroup, with recovery and responsiveness measured.
//!
//! Reproduces Maziero, dos Santos and Santin, "Evaluation of desktop operating
//! systems under thrashing conditions" (2012). N consumers start together; consumer
//! i sleeps `initial + i × t_c`, allocates S bytes, and for `t_p = N × t_c + t_c`
//! loops "W writes of a random byte at a random position, then sleep t_s", then
//! frees the memory. Here the consumers are worker processes in one memory cgroup
//! whose limit makes N × S about 2.5 × the limit (the study's 25 × 100 MB on a
//! 1 GB machine), so the host never thrashes.
//!
//! Around them:
//! - the parent's mlocked 1 s collector (the experiment's sampler) records CPU,
//!   paging, major faults and PSI, and its own lateness;
//! - a second, unlocked sampler runs inside the thrashing cgroup, for comparison;
//! - two responsiveness probes wake every 100 ms and touch a few MiB, one outside
//!   the cgroup and one inside; their wake-up-to-done latency is reported for the
//!   windows before, during and after the thrash;
//! - recovery: the time from the last consumer's exit until paging and memory
//!   stalls are back at baseline (see [`RECOVERY`]).

pub mod guard;

use crate::backing::{self, BackingKind};
use crate::observe::ExperimentError;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// A preset: (name, writes per cycle W, sleep t_s, stagger t_c).
pub const PRESETS: [(&str, u64, Duration, Duration); 4] = [
    ("e1", 1_000, Duration::from_millis(100), Duration::from_secs(30)),
    ("e2", 10_000, Duration::from_millis(100), Duration::from_secs(30)),
    ("e3", 10_000, Duration::from_millis(1000), Duration::from_secs(30)),
    ("e4", 10_000, Duration::from_millis(100), Duration::from_secs(1)),
];
pub const PRESET_NAMES: &str = "e1, e2, e3, e4 (or a comma-separated list, or all)";
/// The study's N and S.
pub const DEFAULT_CONSUMERS: u32 = 25;
pub const DEFAULT_SIZE: u64 = 100 << 20;
/// N × S ÷ limit in the study (25 × 100 MB on 1 GB, about 2.5 after the OS's share).
pub const OVERCOMMIT: f64 = 2.5;
/// The quiet window recorded before the consumers start: a sixth of the plan,
/// between [`BASELINE_MIN`] and this (5 s at the study's scale).
pub const BASELINE: Duration = Duration::from_secs(5);
pub const BASELINE_MIN: Duration = Duration::from_secs(3);
/// The probes' period and working set.
pub const PROBE_PERIOD: Duration = Duration::from_millis(100);
pub const PROBE_WS: u64 = 4 << 20;

/// How recovery is decided, documented in docs/thrash.md: after the last consumer
/// exits, the first second from which, for 3 consecutive 1 s intervals, swap-ins
/// plus swap-outs stay at most max(2 × the baseline rate, 16 pages/s) and the
/// system's memory PSI "some" stays at most 1 % of the interval.
pub const RECOVERY: &str =
    "paging (pswpin+pswpout) <= max(2 x baseline, 16 pages/s) and memory PSI some <= 1 % for 3 consecutive seconds";
/// Deep thrashing, as this project defines it (docs/thrash.md): while memory is
/// overcommitted (the running consumers' sizes exceed the room under the
/// limit), the median consumer completes at most this share of the cycles it
/// would have completed unthrashed (its progress ratio in that window). The
/// study's defining observation is that processes progress slowly while user CPU
/// falls; at 0.5 a consumer loses at least as much time to paging as it spends on
/// its own work and sleep.
pub const DEEP_PROGRESS: f64 = 0.5;
/// The consumers count their cycles in bins of this width.
pub const BIN_MS: u64 = 100;
/// A consumer counts towards the overcommitted progress when it ran at least
/// this long while memory was overcommitted.
pub const MIN_OVERCOMMIT_S: f64 = 0.5;
/// glibc registers an rseq area for every thread, and the kernel writes the
/// task's CPU into it on each return to user space after a migration or
/// preemption. In a group at its limit with the OOM killer off (v1), that
/// kernel-mode write can meet a swapped-out page whose charge fails: the fault
/// cannot wait for the guard as a user fault does, the write fails, and the
/// kernel kills the task with SIGSEGV (`force_sigsegv` in kernel/rseq.c).
/// Three consumers died so in 32 quick-lab thrash runs here, with no OOM
/// report. The consumers make no use of rseq, so the thrashing group's workers
/// run with it off.
pub const NO_RSEQ: (&str, &str) = ("GLIBC_TUNABLES", "glibc.pthread.rseq=0");
/// The longest wait for recovery after the last consumer exits.
pub const RECOVERY_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct ThrashConfig {
    /// Preset names, run in order (each `repeat` times); empty for a custom run.
    pub presets: Vec<String>,
    pub consumers: Option<u32>,
    pub size: Option<u64>,
    pub writes: Option<u64>,
    pub sleep: Option<Duration>,
    pub stagger: Option<Duration>,
    pub initial_delay: Duration,
    pub limit: Option<u64>,
    /// The stores to run each plan on, in order (each run gets its own).
    pub backings: Vec<BackingKind>,
    pub scale: f64,
    /// Multiplies the times (t_s, t_c, the initial delay); None: `scale`.
    pub time_scale: Option<f64>,
    pub repeat: u32,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
    pub swapfile_dir: std::path::PathBuf,
}

/// The parameters one experiment actually runs with, after the preset, the flags
/// and `--scale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub preset: String,
    pub consumers: u32,
    pub size_bytes: u64,
    pub writes: u64,
    pub sleep_ms: f64,
    pub stagger_ms: f64,
    pub initial_delay_ms: f64,
    /// t_p = N × t_c + t_c.
    pub active_ms: f64,
    pub scale: f64,
    /// The factor on t_s, t_c and the initial delay.
    #[serde(default = "one")]
    pub time_scale: f64,
    /// The cgroup limit requested (None: computed from the idle workers' usage
    /// plus N × S ÷ 2.5 once they run).
    pub limit_bytes: Option<u64>,
    /// When the last consumer should end, from the start signal.
    pub planned_duration_ms: f64,
}

fn one() -> f64 {
    1.0
}

impl Plan {
    /// N × S, in u128: no count or size wraps it.
    pub fn total_bytes(&self) -> u128 {
        self.consumers as u128 * self.size_bytes as u128
    }

    /// What the plan takes from the host at most: the group's memory, a swap
    /// store that may hold every consumer's data, and the workers' overhead.
    pub fn planned_bytes(&self) -> u128 {
        let total = self.total_bytes();
        let limit = self.limit_bytes.map(u128::from).unwrap_or((total as f64 / OVERCOMMIT) as u128);
        let overhead = (self.consumers as u128 + 3) * WORKER_OVERHEAD as u128 + 2 * PROBE_WS as u128;
        limit + total + overhead
    }

    /// The quiet window before the consumers start (and the shortest "after" window).
    pub fn baseline(&self) -> Duration {
        Duration::from_secs_f64(
            (self.planned_duration_ms / 6e3).clamp(BASELINE_MIN.as_secs_f64(), BASELINE.as_secs_f64()),
        )
    }
}

impl ThrashConfig {
    /// The plans, in run order (one per preset, or one custom plan).
    pub fn plans(&self) -> Vec<Plan> {
        let names: Vec<String> = if self.presets.is_empty() { vec!["e2".into()] } else { self.presets.clone() };
        // A preset with any of its values overridden is not the study's any more.
        let custom = self.consumers.is_some()
            || self.size.is_some()
            || self.writes.is_some()
            || self.sleep.is_some()
            || self.stagger.is_some();
        names
            .iter()
            .map(|name| {
                let p = PRESETS.iter().find(|p| p.0 == name.as_str()).copied().unwrap_or(PRESETS[1]);
                let f = self.scale;
                let ft = self.time_scale.unwrap_or(f);
                let page = crate::mm::page_size() as u64;
                let n = self.consumers.unwrap_or(DEFAULT_CONSUMERS);
                // `as u64` saturates; the page rounding must not wrap either.
                let size =
                    ((self.size.unwrap_or(DEFAULT_SIZE) as f64 * f) as u64).div_ceil(page).max(1).saturating_mul(page);
                let writes = ((self.writes.unwrap_or(p.1) as f64 * f).round() as u64).max(1);
                let sleep = self.sleep.unwrap_or(p.2).as_secs_f64() * 1e3 * ft;
                let stagger = self.stagger.unwrap_or(p.3).as_secs_f64() * 1e3 * ft;
                let initial = self.initial_delay.as_secs_f64() * 1e3 * ft;
                let active = n as f64 * stagger + stagger;
                Plan {
                    preset: if custom { format!("{name}-custom") } else { name.clone() },
                    consumers: n,
                    size_bytes: size,
                    writes,
                    sleep_ms: sleep,
                    stagger_ms: stagger,
                    initial_delay_ms: initial,
                    active_ms: active,
                    scale: f,
                    time_scale: ft,
                    limit_bytes: self.limit,
                    planned_duration_ms: initial + (n.saturating_sub(1)) as f64 * stagger + active,
                }
            })
            .collect()
    }
}

pub fn parse_presets(s: &str) -> Result<Vec<String>, String> {
    if s == "all" {
        return Ok(PRESETS.iter().map(|p| p.0.to_string()).collect());
    }
    s.split(',')
        .map(|p| {
            let p = p.trim();
            if PRESETS.iter().any(|q| q.0 == p) {
                Ok(p.to_string())
            } else {
                Err(format!("unknown preset '{p}': expected {PRESET_NAMES}"))
            }
        })
        .collect()
}

/// Idle anonymous memory a consumer process needs besides its S bytes (measured
/// on the project's machine at about 1.3 MiB; rounded up), used for the plan check.
const WORKER_OVERHEAD: u64 = 3 << 20;

pub fn validate(cfg: &ThrashConfig) -> Result<Vec<Plan>, sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    if !(cfg.scale > 0.0 && cfg.scale <= 10.0) {
        return Err(Invalid(format!("--scale {}: expected a factor above 0 and at most 10, e.g. 0.1", cfg.scale)));
    }
    if let Some(t) = cfg.time_scale {
        if !(t > 0.0 && t <= 10.0) {
            return Err(Invalid(format!("--time-scale {t}: expected a factor above 0 and at most 10, e.g. 0.05")));
        }
    }
    if cfg.backings.is_empty() {
        return Err(Invalid(format!("--backing: expected one or more of {}", BackingKind::NAMES)));
    }
    if cfg.consumers == Some(0) {
        return Err(Invalid("--consumers 0: expected at least 1 consumer (the study used 25)".into()));
    }
    if cfg.size == Some(0) {
        return Err(Invalid("--size 0: expected a size per consumer, e.g. 100MiB".into()));
    }
    if cfg.writes == Some(0) {
        return Err(Invalid("--writes 0: expected at least 1 write per cycle".into()));
    }
    if cfg.repeat == 0 {
        return Err(Invalid("--repeat 0: expected at least 1".into()));
    }
    sandbox::privilege::require_admin(
        "creating the memory cgroup that contains the thrashing",
        "pagelab thrash needs root (CAP_SYS_ADMIN); it never thrashes the host itself",
    )?;
    if probe::Probe::default().memory_controller().ok().flatten().is_none() {
        return Err(sandbox::SandboxError::Unsupported(
            "pagelab thrash needs a memory cgroup controller; none is mounted".into(),
        ));
    }
    for b in &cfg.backings {
        if matches!(b, BackingKind::Zswap | BackingKind::None) {
            return Err(Invalid(
                "--backing: thrash runs on zram, swapfile, existing or auto (a comma-separated list of them)".into(),
            ));
        }
        backing::validate_with_dir(*b, None, &cfg.swapfile_dir)?;
    }
    let plans = cfg.plans();
    let meminfo = probe::Probe::default().meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    for p in &plans {
        let total = p.total_bytes();
        if let Some(l) = p.limit_bytes {
            if total <= l as u128 {
                return Err(Invalid(format!(
                    "--limit {l} bytes holds all {} consumers × {} bytes = {total} bytes: no thrashing would occur; \
give a limit below {total} (the study's ratio is N × S ≈ 2.5 × limit), or omit --limit",
                    p.consumers, p.size_bytes
                )));
            }
        }
        guard.check_plan(p.planned_bytes(), &format!("thrash {}", p.preset), &meminfo)?;
    }
    Ok(plans)
}

/// Latency percentiles of a probe in one window, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub n: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    pub before: Window,
    pub during: Window,
    pub after: Window,
}

/// One consumer's account of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Consumer {
    pub index: u32,
    pub completed: bool,
    pub cycles: u64,
    /// t_p ÷ the fastest cycle this consumer had: what it would have done unthrashed.
    pub expected_cycles: f64,
    pub progress_ratio: f64,
    /// Actual end − planned end, seconds.
    pub lateness_s: f64,
    /// Allocation time − planned start, seconds.
    pub start_lateness_s: f64,
    pub cycle_ms_min: f64,
    pub cycle_ms_p50: f64,
    pub cycle_ms_max: f64,
    pub failure: Option<String>,
    /// This consumer's progress ratio over the bins in which memory was
    /// overcommitted (the consumers' planned sizes exceeded the room the limit
    /// leaves), when it ran at least [`MIN_OVERCOMMIT_S`] of them.
    pub progress_overcommitted: Option<f64>,
    /// Allocation and end, seconds from the start signal.
    pub start_s: f64,
    pub end_s: f64,
    /// Cycles completed per [`BIN_MS`] bin from the start signal (used for the
    /// overcommitted progress; not stored).
    #[serde(skip_serializing)]
    pub bins: Vec<u32>,
}

/// A time series for the charts, one point per collector interval; t in seconds
/// from the start signal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub t_s: Vec<f64>,
    pub cpu_user_pct: Vec<f64>,
    pub cpu_system_pct: Vec<f64>,
    pub cpu_iowait_pct: Vec<f64>,
    pub pswpin_per_s: Vec<f64>,
    pub pswpout_per_s: Vec<f64>,
    pub pgpgin_kib_per_s: Vec<f64>,
    pub pgpgout_kib_per_s: Vec<f64>,
    pub pgmajfault_per_s: Vec<f64>,
    pub psi_some_pct: Vec<f64>,
    pub psi_full_pct: Vec<f64>,
    pub cgroup_psi_some_pct: Vec<f64>,
    pub cgroup_psi_full_pct: Vec<f64>,
    pub collector_lateness_ms: Vec<f64>,
    /// Probe samples: (t_s, latency ms).
    pub probe_outside: Vec<(f64, f64)>,
    pub probe_inside: Vec<(f64, f64)>,
}

/// One run (one repeat) of one plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrashResult {
    pub preset: String,
    pub repeat_index: u32,
    pub plan: Option<Plan>,
    pub backing: String,
    pub limit_bytes: u64,
    /// The idle workers' usage the default limit was built on.
    pub idle_usage_bytes: u64,
    pub consumers: u32,
    pub consumers_completed: u32,
    pub oom_kills: u64,
    pub pswpout_total: u64,
    pub pswpin_total: u64,
    pub pgmajfault_total: u64,
    /// Means over the thrash window (first allocation to last exit).
    pub cpu_user_pct_mean: f64,
    pub cpu_system_pct_mean: f64,
    pub cpu_iowait_pct_mean: f64,
    pub psi_some_pct_mean: f64,
    pub psi_full_pct_mean: f64,
    /// Cgroup PSI (cgroup v2 only).
    pub cgroup_psi_some_pct_mean: Option<f64>,
    pub pswpout_per_s_peak: f64,
    pub progress_ratio_min: f64,
    pub progress_ratio_median: f64,
    /// The median consumer's progress ratio while memory was overcommitted
    /// (None when no consumer ran long enough in that window).
    pub progress_overcommitted_median: Option<f64>,
    /// Seconds (from the start signal) during which the running consumers' sizes
    /// exceeded the room under the limit.
    pub overcommitted_s: f64,
    /// Swap-outs from the start signal to the last consumer's exit, and their
    /// rate over the consumers' span (first allocation to last exit): a paging rate
    /// that does not depend on the collector's interval.
    pub pswpout_active: u64,
    pub pswpout_per_s_active: f64,
    pub lateness_max_s: f64,
    pub recovery_s: Option<f64>,
    pub recovery_rule: String,
    pub collector_lateness_p99_ms: f64,
    pub collector_lateness_max_ms: f64,
    /// The unlocked sampler inside the cgroup, same window.
    pub unlocked_lateness_p99_ms: Option<f64>,
    pub unlocked_lateness_max_ms: Option<f64>,
    pub probe_outside_ms: Windows,
    pub probe_inside_ms: Windows,
    /// Seconds from the start signal: first allocation, last exit, end of the after window.
    pub thrash_start_s: f64,
    pub thrash_end_s: f64,
    pub end_s: f64,
    pub wall_s: f64,
    pub host_mem_available_min_bytes: u64,
    pub consumer_details: Vec<Consumer>,
    pub series: Series,
    pub notes: Vec<String>,
    /// What kept the run inside the study's protocol (see [`guard`]).
    pub guard: guard::GuardReport,
    /// The study's protocol held: every consumer completed, none was OOM-killed.
    pub protocol_held: bool,
    /// Why it did not, each in a sentence (with the kernel's OOM cause).
    pub protocol_breaks: Vec<String>,
    /// Depth: user CPU as a share of the busy CPU (user + system + iowait)
    /// during the thrash; it falls as paging takes over.
    pub cpu_user_share: f64,
    /// progress_overcommitted_median ≤ DEEP_PROGRESS.
    pub deep: bool,
}

/// Percentiles of the probe latencies whose wake-up time falls in [from, to).
pub fn window(samples: &[(f64, f64)], from: f64, to: f64) -> Window {
    let v: Vec<f64> = samples.iter().filter(|(t, _)| *t >= from && *t < to).map(|s| s.1).collect();
    let p = |q: f64| record::stats::percentile(&v, q);
    Window { p50: p(0.5), p99: p(0.99), max: v.iter().copied().reduce(f64::max), n: v.len() }
}

fn windows(samples: &[(f64, f64)], start: f64, end: f64) -> Windows {
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

/// Builds the result's collector figures from the samples of this run.
#[allow(clippy::too_many_arguments)]
fn analyze(
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
        let paging = iv.pswpin_per_s.unwrap_or(0.0) + iv.pswpout_per_s.unwrap_or(0.0);
        calm.push((t, paging, iv.psi_memory_some_pct.unwrap_or(0.0)));
        if t > ts && t - iv.dt_s < te {
            active.push(iv);
        }
    }
    // Means and peaks while the consumers ran (record::derive::totals).
    let a = record::derive::totals(&active);
    r.cpu_user_pct_mean = a.cpu_user_pct_mean.unwrap_or(0.0);
    r.cpu_system_pct_mean = a.cpu_system_pct_mean.unwrap_or(0.0);
    r.cpu_iowait_pct_mean = a.cpu_iowait_pct_mean.unwrap_or(0.0);
    r.cpu_user_share = a.cpu_user_share().unwrap_or(0.0);
    r.psi_some_pct_mean = a.psi_memory_some_pct_mean.unwrap_or(0.0);
    r.psi_full_pct_mean = a.psi_memory_full_pct_mean.unwrap_or(0.0);
    r.cgroup_psi_some_pct_mean = a.cgroup_psi_memory_some_pct_mean;
    r.pswpout_per_s_peak = a.pswpout_per_s_peak.unwrap_or(0.0);
    r.collector_lateness_p99_ms = record::stats::percentile(&a.sampler_lateness_ms, 0.99).unwrap_or(0.0);
    r.collector_lateness_max_ms = a.sampler_lateness_ms.iter().copied().reduce(f64::max).unwrap_or(0.0);
    // Totals over the whole run, start signal to end.
    let inside: Vec<&probe::Sample> = s.iter().filter(|x| x.t_ns >= t0_ns && x.t_ns <= stop_ns).collect();
    if let (Some(a), Some(b)) = (inside.first(), inside.last()) {
        let d = |k: &str| record::derive::vmstat_delta(a, b, k);
        r.pswpout_total = d("pswpout");
        r.pswpin_total = d("pswpin");
        r.pgmajfault_total = d("pgmajfault");
    }
    r.host_mem_available_min_bytes =
        s.iter().filter_map(|x| x.meminfo.as_ref().and_then(|m| m.available())).min().unwrap_or(0);
    r.recovery_s = recovery(&calm, te, baseline_paging);
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

/// What the parent keeps of a worker while the run goes on.
struct Running {
    w: sandbox::worker::Worker,
    index: u32,
    done: Option<Value>,
    alloc_ns: Option<u64>,
    failure: Option<String>,
}

fn spawn(
    cfg: &ThrashConfig,
    kind: &str,
    args: Vec<String>,
    cg: Option<&sandbox::cgroup::MemCgroup>,
    label: String,
) -> Result<sandbox::worker::Worker, ExperimentError> {
    let mut a = vec!["__worker".to_string(), kind.to_string()];
    a.extend(args);
    // Workers in the thrashing group run without glibc's rseq registration
    // ([`NO_RSEQ`]).
    let env = if cg.is_some() { vec![(NO_RSEQ.0.to_string(), NO_RSEQ.1.to_string())] } else { vec![] };
    Ok(sandbox::worker::Worker::spawn(sandbox::worker::WorkerSpec {
        exe: cfg.exe.clone(),
        args: a,
        cgroup: cg,
        env,
        label,
    })?)
}

fn wait_ready(w: &mut sandbox::worker::Worker, stop: fn() -> bool) -> Result<Value, ExperimentError> {
    w.wait_for("ready", None, Duration::from_secs(60), |_| {}, stop)
        .map(|e| e.data)
        .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Worker(f.to_string()) })
}

fn stop_and_collect(w: sandbox::worker::Worker) -> Option<Value> {
    let mut w = w;
    let _ = w.send("exit", Value::Null);
    let d = w.wait_for("done", None, Duration::from_secs(30), |_| {}, || false).ok().map(|e| e.data);
    let _ = w.finish(Duration::from_secs(5));
    d
}

fn probe_points(d: &Option<Value>, t0_ns: u64) -> Vec<(f64, f64)> {
    d.as_ref()
        .and_then(|v| v["samples"].as_array())
        .map(|a| {
            a.iter().filter_map(|p| Some(((p[0].as_u64()? as f64 - t0_ns as f64) / 1e9, p[1].as_f64()?))).collect()
        })
        .unwrap_or_default()
}

/// Runs one plan once.
fn run_once<O: crate::observe::Observer>(
    cfg: &ThrashConfig,
    plan: &Plan,
    kind: BackingKind,
    rep: u32,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<ThrashResult, ExperimentError> {
    let mut sb = sandbox::Sandbox::new("thrash");
    let total = plan.consumers as u64 * plan.size_bytes;
    let back = backing::setup(&mut sb, kind, None, total, &cfg.swapfile_dir)?;
    for n in &back.notes {
        obs.note(n);
    }
    let mut r = ThrashResult {
        preset: plan.preset.clone(),
        repeat_index: rep,
        plan: Some(plan.clone()),
        backing: back.kind.clone(),
        consumers: plan.consumers,
        recovery_rule: RECOVERY.into(),
        ..Default::default()
    };
    if !back.has_swap() {
        r.notes.push("no swap backs this run: consumers beyond the limit can only be OOM-killed".into());
        obs.note(r.notes.last().unwrap());
    }
    // Unlimited at first (bounded by the plan's total, for safety): the idle workers'
    // own usage is measured before the limit is set.
    let start_limit = total + (plan.consumers as u64 + 8) * WORKER_OVERHEAD + (64 << 20);
    let cg = sb.memory_cgroup("thrash", &sandbox::cgroup::Limits { max: Some(start_limit), ..Default::default() })?;
    let cg_target = probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() };
    let zram: Vec<u32> = back.zram_id.into_iter().collect();
    let probe_args = |inside: bool| {
        vec![
            "--ws".to_string(),
            PROBE_WS.to_string(),
            "--period-ms".into(),
            PROBE_PERIOD.as_millis().to_string(),
            "--where".into(),
            if inside { "inside".into() } else { "outside".into() },
        ]
    };
    let mut probe_out = spawn(cfg, "thrash-probe", probe_args(false), None, "probe outside the cgroup".into())?;
    let mut probe_in = spawn(cfg, "thrash-probe", probe_args(true), Some(&cg), "probe inside the cgroup".into())?;
    let mut sampler_in =
        spawn(cfg, "sampler", vec!["--interval-ms".into(), "1000".into()], Some(&cg), "unlocked sampler".into())?;
    let mut cons: Vec<Running> = Vec::new();
    for i in 0..plan.consumers {
        let args = vec![
            "--index".to_string(),
            i.to_string(),
            "--size".into(),
            plan.size_bytes.to_string(),
            "--writes".into(),
            plan.writes.to_string(),
            "--sleep-us".into(),
            ((plan.sleep_ms * 1e3) as u64).to_string(),
            "--delay-us".into(),
            ((plan.initial_delay_ms + i as f64 * plan.stagger_ms) * 1e3).round().to_string(),
            "--active-us".into(),
            ((plan.active_ms * 1e3) as u64).to_string(),
            "--seed".into(),
            (0x5eed_0000 + i as u64 + 1000 * rep as u64).to_string(),
        ];
        let w = spawn(cfg, "thrash-consumer", args, Some(&cg), format!("consumer {i}"))?;
        cons.push(Running { w, index: i, done: None, alloc_ns: None, failure: None });
    }
    wait_ready(&mut probe_out, stop)?;
    wait_ready(&mut probe_in, stop)?;
    wait_ready(&mut sampler_in, stop)?;
    for c in cons.iter_mut() {
        wait_ready(&mut c.w, stop)?;
    }
    std::thread::sleep(Duration::from_millis(200));
    r.idle_usage_bytes = cg.usage().unwrap_or(0);
    r.limit_bytes = plan.limit_bytes.unwrap_or(r.idle_usage_bytes + (total as f64 / OVERCOMMIT) as u64);
    let mut guard = guard::Guard::start(&cg, r.limit_bytes)?;
    let mut pids: Vec<i32> = cons.iter().map(|c| c.w.pid).collect();
    pids.extend([probe_out.pid, probe_in.pid]);
    obs.targets(pids, Some(cg_target), zram);
    obs.note(&format!(
        "thrash {} repeat {}: {} consumers × {:.1} MiB in a {:.1} MiB cgroup (idle workers {:.1} MiB), W={} t_s={} ms t_c={} ms, \
planned {:.0} s plus recovery",
        plan.preset,
        rep + 1,
        plan.consumers,
        plan.size_bytes as f64 / 1048576.0,
        r.limit_bytes as f64 / 1048576.0,
        r.idle_usage_bytes as f64 / 1048576.0,
        plan.writes,
        plan.sleep_ms,
        plan.stagger_ms,
        (plan.baseline().as_secs_f64() + plan.planned_duration_ms / 1e3)
    ));
    // Baseline: the probes and the collector with nothing else going on.
    let base_t = probe::sample::monotonic_ns();
    let vm = || probe::Probe::default().vmstat().ok().flatten();
    let v0 = vm();
    obs.event("phase_start", &format!("{} baseline", plan.preset), base_t, Value::Null);
    record::stop::sleep(plan.baseline());
    if stop() {
        return Err(ExperimentError::Interrupted);
    }
    let v1 = vm();
    let secs = (probe::sample::monotonic_ns() - base_t) as f64 / 1e9;
    let paging = |v: &Option<probe::vmstat::Vmstat>| {
        v.as_ref().map(|v| v.get("pswpin").unwrap_or(0) + v.get("pswpout").unwrap_or(0)).unwrap_or(0)
    };
    let baseline_paging = paging(&v1).saturating_sub(paging(&v0)) as f64 / secs.max(1e-3);
    // Go: every consumer counts its delay from now.
    let t0 = probe::sample::monotonic_ns();
    let out_t0 = vm().and_then(|v| v.get("pswpout")).unwrap_or(0);
    obs.event("phase_start", &format!("{} consumers", plan.preset), t0, json!({"repeat": rep}));
    for c in cons.iter_mut() {
        c.w.send("start", json!({"t0_ns": t0}))
            .map_err(|e| ExperimentError::Worker(format!("consumer {}: {e}", c.index)))?;
    }
    // Wait for every consumer: done, or dead. A consumer far past its planned end
    // (t_p or 2 minutes, whichever is longer) is killed and counted as not completed.
    let give_up = t0 + ((plan.planned_duration_ms + plan.active_ms.max(120_000.0)) * 1e6) as u64;
    loop {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        let mut pending = 0;
        for c in cons.iter_mut().filter(|c| c.done.is_none() && c.failure.is_none()) {
            pending += 1;
            match c.w.recv(Duration::from_millis(2)) {
                Ok(Some(ev)) if ev.kind == "alloc" => {
                    c.alloc_ns = Some(ev.t_ns);
                    obs.event("info", &format!("consumer {} allocated", c.index), ev.t_ns, Value::Null);
                }
                Ok(Some(ev)) if ev.kind == "done" => {
                    obs.event("info", &format!("consumer {} done", c.index), ev.t_ns, Value::Null);
                    c.done = Some(ev.data);
                }
                Ok(Some(ev)) if ev.kind == "error" => c.failure = Some(ev.name),
                Ok(_) => {}
                Err(f) => c.failure = Some(f.to_string()),
            }
        }
        if pending == 0 {
            break;
        }
        guard.tick(&cg);
        if probe::sample::monotonic_ns() > give_up {
            for c in cons.iter_mut().filter(|c| c.done.is_none() && c.failure.is_none()) {
                c.failure = Some("did not finish within the planned time plus max(t_p, 2 min); killed".into());
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out_end = vm().and_then(|v| v.get("pswpout")).unwrap_or(0);
    r.guard = guard.finish(&cg);
    let first_alloc = cons.iter().filter_map(|c| c.alloc_ns).min().unwrap_or(t0);
    let last_exit = cons
        .iter()
        .filter_map(|c| c.done.as_ref().and_then(|d| d["end_ns"].as_u64()))
        .max()
        .unwrap_or_else(probe::sample::monotonic_ns);
    obs.event("phase_end", &format!("{} consumers", plan.preset), last_exit, Value::Null);
    r.oom_kills = cg.oom_kills();
    // Consumers: completed, and their progress and lateness.
    for c in cons {
        let mut x = Consumer { index: c.index, failure: c.failure.clone(), ..Default::default() };
        if let Some(d) = &c.done {
            x = serde_json::from_value(d.clone()).unwrap_or(x);
            x.completed = true;
        }
        if !x.completed {
            c.w.kill();
        } else {
            let _ = c.w.finish(Duration::from_secs(10));
        }
        r.consumer_details.push(x);
    }
    r.consumers_completed = r.consumer_details.iter().filter(|c| c.completed).count() as u32;
    r.pswpout_active = out_end.saturating_sub(out_t0);
    let span = (last_exit as f64 - first_alloc as f64) / 1e9;
    r.pswpout_per_s_active = if span > 0.0 { r.pswpout_active as f64 / span } else { 0.0 };
    let room = r.limit_bytes.saturating_sub(r.idle_usage_bytes);
    (r.progress_overcommitted_median, r.overcommitted_s) =
        overcommitted(&mut r.consumer_details, plan.size_bytes, room);
    if r.oom_kills > 0 {
        let why = probe::kmsg::read_kmsg()
            .map(|t| probe::kmsg::oom_reports(&t, &cg.name))
            .and_then(|v| v.last().map(probe::kmsg::OomReport::line))
            .unwrap_or_else(|| "the kernel log could not be read".into());
        r.protocol_breaks.push(format!("{} consumer(s) OOM-killed by the kernel ({why})", r.oom_kills));
        if r.guard.gave_up {
            r.protocol_breaks.push(format!(
                "the guard let the kernel decide after raising the limit to {:.0} MiB ({}× the target)",
                r.guard.limit_max_bytes as f64 / 1048576.0,
                guard::MAX_RAISE
            ));
        }
    }
    let not_done = r.consumers - r.consumers_completed;
    if not_done > 0 {
        r.protocol_breaks.push(format!("{not_done} of {} consumers did not complete", r.consumers));
    }
    r.protocol_held = r.protocol_breaks.is_empty();
    let mut prog: Vec<f64> = r.consumer_details.iter().filter(|c| c.completed).map(|c| c.progress_ratio).collect();
    prog.sort_by(|a, b| a.partial_cmp(b).unwrap());
    r.progress_ratio_min = prog.first().copied().unwrap_or(0.0);
    r.progress_ratio_median = record::stats::median(&prog).unwrap_or(0.0);
    r.deep = r.progress_overcommitted_median.is_some_and(|p| p <= DEEP_PROGRESS);
    r.lateness_max_s = r.consumer_details.iter().filter(|c| c.completed).map(|c| c.lateness_s).fold(0.0, f64::max);
    // Recovery: watch paging and PSI each second until calm for 3 s (or the maximum).
    let rec_t = probe::sample::monotonic_ns();
    obs.event("phase_start", &format!("{} recovery", plan.preset), rec_t, Value::Null);
    let mut p = probe::Probe::default();
    let mut prev = (paging(&p.vmstat().ok().flatten()), psi_some_us(&mut p), probe::sample::monotonic_ns());
    let mut calm_run = 0;
    while probe::sample::monotonic_ns() - rec_t < RECOVERY_MAX.as_nanos() as u64 && !stop() {
        record::stop::sleep(Duration::from_secs(1));
        let cur = (paging(&p.vmstat().ok().flatten()), psi_some_us(&mut p), probe::sample::monotonic_ns());
        let dt = (cur.2 - prev.2) as f64 / 1e9;
        let rate = cur.0.saturating_sub(prev.0) as f64 / dt;
        let psi = cur.1.saturating_sub(prev.1) as f64 / 1e4 / dt;
        prev = cur;
        calm_run = if rate <= (2.0 * baseline_paging).max(16.0) && psi <= 1.0 { calm_run + 1 } else { 0 };
        // Three calm seconds, and at least as long an "after" window as the baseline.
        if calm_run >= 3 && probe::sample::monotonic_ns() - rec_t >= plan.baseline().as_nanos() as u64 {
            break;
        }
    }
    let stop_t = probe::sample::monotonic_ns();
    obs.event("phase_end", &format!("{} recovery", plan.preset), stop_t, Value::Null);
    // Let the collector take a sample past the end before reading the samples.
    std::thread::sleep(Duration::from_millis(1100));
    let out_d = stop_and_collect(probe_out);
    let in_d = stop_and_collect(probe_in);
    let sam_d = stop_and_collect(sampler_in);
    obs.targets(vec![], None, vec![]);
    let samples = obs.samples();
    analyze(&mut r, &samples, t0, first_alloc, last_exit, stop_t, baseline_paging);
    r.series.probe_outside = probe_points(&out_d, t0);
    r.series.probe_inside = probe_points(&in_d, t0);
    let (ts, te) = (r.thrash_start_s, r.thrash_end_s);
    r.probe_outside_ms = windows(&r.series.probe_outside, ts, te);
    r.probe_inside_ms = windows(&r.series.probe_inside, ts, te);
    if let Some(d) = sam_d {
        let mut lat: Vec<f64> = d["lateness"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| {
                        let t = (p[0].as_u64()? as f64 - t0 as f64) / 1e9;
                        (t > ts && t <= te + 1.0).then_some(p[1].as_f64()?)
                    })
                    .collect()
            })
            .unwrap_or_default();
        lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
        r.unlocked_lateness_p99_ms = record::stats::percentile(&lat, 0.99);
        r.unlocked_lateness_max_ms = lat.last().copied();
    }
    r.end_s = (stop_t as f64 - t0 as f64) / 1e9;
    r.wall_s = (stop_t - base_t) as f64 / 1e9;
    drop(cg);
    sb.restore()?;
    Ok(r)
}

fn psi_some_us(p: &mut probe::Probe) -> u64 {
    p.pressure("memory").ok().flatten().map(|m| m.some.total_us).unwrap_or(0)
}

/// Runs every plan `repeat` times.
pub fn run<O: crate::observe::Observer>(
    cfg: &ThrashConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<ThrashResult>, ExperimentError> {
    let mut out = Vec::new();
    for &kind in &cfg.backings {
        for plan in cfg.plans() {
            for rep in 0..cfg.repeat {
                if stop() {
                    return Err(ExperimentError::Interrupted);
                }
                let r = run_once(cfg, &plan, kind, rep, obs, stop)?;
                obs.note(&format!(
                "thrash {} on {} repeat {}: {}/{} consumers completed, pswpout {} pswpin {}, progress median {:.2}, \
while overcommitted {}{}, recovery {}, {} OOM stalls held by the guard{}",
                r.preset,
                r.backing,
                rep + 1,
                r.consumers_completed,
                r.consumers,
                r.pswpout_total,
                r.pswpin_total,
                r.progress_ratio_median,
                r.progress_overcommitted_median.map(|p| format!("{p:.2}")).unwrap_or("n/a".into()),
                if r.deep { " (deep)" } else { "" },
                r.recovery_s.map(|s| format!("{s:.0} s")).unwrap_or("not within 60 s".into()),
                r.guard.oom_stalls,
                if r.protocol_held {
                    String::new()
                } else {
                    format!("; OUTSIDE the protocol: {}", r.protocol_breaks.join("; "))
                }
            ));
                obs.result(json!({"result": r}));
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// The consumer: `__worker thrash-consumer --index i --size S --writes W
/// --sleep-us T --delay-us D --active-us P --seed X`. Waits for `start` {t0_ns}.
/// Writes "thrash consumer: SIGSEGV at 0x…, code N" to stderr, then dies of the
/// signal as it would have: a consumer the kernel kills with a fault signal
/// says where (the run reports it outside the protocol either way).
extern "C" fn fault_report(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let mut buf = [0u8; 96];
    let mut n = 0;
    let mut put = |b: &[u8]| {
        for &c in b {
            if n < buf.len() {
                buf[n] = c;
                n += 1;
            }
        }
    };
    put(if sig == libc::SIGBUS { b"thrash consumer: SIGBUS at 0x" } else { b"thrash consumer: SIGSEGV at 0x" });
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    for i in (0..16).rev() {
        put(&[b"0123456789abcdef"[(addr >> (i * 4)) & 0xf]]);
    }
    put(b", code ");
    put(&[b'0' + (code.unsigned_abs() % 10) as u8]);
    put(b"\n");
    // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), n);
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn report_fault_signals() {
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: installs a handler that only calls async-signal-safe functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = fault_report as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn consumer_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    report_fault_signals();
    let num = |n: &str| num_arg(args, n, "thrash consumer");
    let (index, size, writes) = (num("--index")?, num("--size")? as usize, num("--writes")?);
    let (sleep_ns, delay_ns, active_ns, seed) =
        (num("--sleep-us")? * 1000, num("--delay-us")? * 1000, num("--active-us")? * 1000, num("--seed")?);
    io.emit("ready", "", Value::Null);
    let t0 = loop {
        match io.command() {
            Some(c) if c.cmd == "start" => break c.arg["t0_ns"].as_u64().ok_or("start needs t0_ns")?,
            Some(_) => continue,
            None => return Ok(()),
        }
    };
    let planned_start = t0 + delay_ns;
    sleep_until(planned_start);
    let mut m = crate::mm::Mapping::anon(size, 0).map_err(|e| format!("allocating {size} bytes: {e}"))?;
    let alloc_ns = probe::sample::monotonic_ns();
    io.emit("alloc", "", Value::Null);
    let planned_end = planned_start + active_ns;
    let buf = m.as_mut_slice();
    let mut x = seed | 1;
    let mut cycles = 0u64;
    let mut cycle_ns: Vec<u64> = Vec::new();
    let mut bins: Vec<u32> = Vec::new();
    // Until t_p has passed (counted from the allocation, as the study's consumer does).
    let end_at = alloc_ns + active_ns;
    while probe::sample::monotonic_ns() < end_at {
        let c0 = probe::sample::monotonic_ns();
        for _ in 0..writes {
            // xorshift64*: position and value from one draw.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            let pos = (((v >> 8) as u128 * size as u128) >> 56) as usize;
            // SAFETY: pos < size; volatile so the writes are not elided.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(pos), v as u8) };
        }
        sleep_until(probe::sample::monotonic_ns() + sleep_ns);
        cycles += 1;
        let now = probe::sample::monotonic_ns();
        cycle_ns.push(now - c0);
        let b = ((now.saturating_sub(t0)) / (BIN_MS * 1_000_000)) as usize;
        if bins.len() <= b {
            bins.resize(b + 1, 0);
        }
        bins[b] += 1;
    }
    drop(m);
    let end_ns = probe::sample::monotonic_ns();
    cycle_ns.sort_unstable();
    let min = cycle_ns.first().copied().unwrap_or(0) as f64;
    let expected = if min > 0.0 { active_ns as f64 / min } else { 0.0 };
    io.emit(
        "done",
        "",
        json!({
            "index": index,
            "cycles": cycles,
            "expected_cycles": expected,
            "progress_ratio": if expected > 0.0 { (cycles as f64 / expected).min(1.0) } else { 0.0 },
            "lateness_s": (end_ns as f64 - planned_end as f64) / 1e9,
            "start_lateness_s": (alloc_ns as f64 - planned_start as f64) / 1e9,
            "cycle_ms_min": min / 1e6,
            "cycle_ms_p50": cycle_ns.get(cycle_ns.len() / 2).copied().unwrap_or(0) as f64 / 1e6,
            "cycle_ms_max": cycle_ns.last().copied().unwrap_or(0) as f64 / 1e6,
            "end_ns": end_ns,
            "start_s": (alloc_ns as f64 - t0 as f64) / 1e9,
            "end_s": (end_ns as f64 - t0 as f64) / 1e9,
            "bins": bins,
        }),
    );
    Ok(())
}

/// The number after `name` in a worker's arguments.
fn num_arg(args: &[String], name: &str, who: &str) -> Result<u64, String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| format!("{who} needs {name} N"))
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec { tv_sec: (t_ns / 1_000_000_000) as libc::time_t, tv_nsec: (t_ns % 1_000_000_000) as _ };
    // SAFETY: absolute sleep on CLOCK_MONOTONIC; EINTR just returns early and we loop.
    while probe::sample::monotonic_ns() < t_ns {
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// Sleeps until `t_ns` or until stdin has input (a command). True if input is waiting.
pub fn wait_input_until(t_ns: u64) -> bool {
    loop {
        let now = probe::sample::monotonic_ns();
        if now >= t_ns {
            return false;
        }
        let d = t_ns - now;
        let ts = libc::timespec { tv_sec: (d / 1_000_000_000) as libc::time_t, tv_nsec: (d % 1_000_000_000) as _ };
        let mut fds = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; a relative timeout.
        let r = unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) };
        if r > 0 {
            return true;
        }
    }
}

/// The responsiveness probe: `__worker thrash-probe --ws BYTES --period-ms P`. Every
/// period it wakes at its planned time, writes one byte in each page of its working
/// set, and records planned-wake-to-done; on `exit` it reports every sample.
pub fn probe_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let num = |n: &str| num_arg(args, n, "thrash probe");
    let (ws, period) = (num("--ws")? as usize, num("--period-ms")? * 1_000_000);
    let page = crate::mm::page_size();
    let mut m = crate::mm::Mapping::anon(ws, 0).map_err(|e| format!("allocating {ws} bytes: {e}"))?;
    let buf = m.as_mut_slice();
    for i in (0..ws).step_by(page) {
        buf[i] = 1;
    }
    let mut samples: Vec<(u64, f64)> = Vec::with_capacity(100_000);
    io.emit("ready", "", Value::Null);
    let mut next = probe::sample::monotonic_ns() + period;
    let mut missed = 0u64;
    loop {
        if wait_input_until(next) {
            match io.command() {
                Some(c) if c.cmd == "exit" => break,
                Some(_) => continue,
                None => break,
            }
        }
        for i in (0..ws).step_by(page) {
            // SAFETY: i < ws.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), (next as u8) | 1) };
        }
        let done = probe::sample::monotonic_ns();
        samples.push((next, (done - next) as f64 / 1e6));
        next += period;
        // Skip wake-ups that are already past: one late wake-up is one sample.
        while next < done {
            next += period;
            missed += 1;
        }
    }
    io.emit("done", "", json!({"samples": samples, "missed": missed}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ThrashConfig {
        ThrashConfig {
            presets: vec!["e2".into()],
            consumers: None,
            size: None,
            writes: None,
            sleep: None,
            stagger: None,
            initial_delay: Duration::from_secs(10),
            limit: None,
            backings: vec![BackingKind::Zram],
            time_scale: None,
            scale: 1.0,
            repeat: 1,
            exe: "/bin/true".into(),
            host_floor: None,
            swapfile_dir: "/tmp".into(),
        }
    }

    #[test]
    fn presets_follow_the_study_and_scale_in_proportion() {
        let p = &cfg().plans()[0];
        assert_eq!((p.consumers, p.size_bytes, p.writes), (25, 100 << 20, 10_000));
        assert_eq!((p.sleep_ms, p.stagger_ms, p.initial_delay_ms), (100.0, 30_000.0, 10_000.0));
        // t_p = N t_c + t_c; the last consumer ends at initial + (N-1) t_c + t_p.
        assert_eq!(p.active_ms, 26.0 * 30_000.0);
        assert_eq!(p.planned_duration_ms, 10_000.0 + 24.0 * 30_000.0 + 780_000.0);
        let mut c = cfg();
        c.scale = 0.1;
        c.presets = vec!["e4".into()];
        let q = &c.plans()[0];
        assert_eq!(q.size_bytes, 10 << 20);
        assert_eq!(q.writes, 1000);
        assert_eq!(q.stagger_ms, 100.0);
        assert!((q.sleep_ms - 10.0).abs() < 1e-9, "t_s scales with W: the paging demand per second is the study's");
        assert!((q.initial_delay_ms - 1000.0).abs() < 1e-9);
        // A separate time scale: sizes at 0.1, times at 0.5.
        c.time_scale = Some(0.5);
        let t = &c.plans()[0];
        assert_eq!((t.size_bytes, t.writes), (10 << 20, 1000));
        assert_eq!((t.sleep_ms, t.stagger_ms, t.time_scale), (50.0, 500.0, 0.5));
        assert_eq!(parse_presets("all").unwrap().len(), 4);
        assert!(parse_presets("e5").unwrap_err().contains("e1, e2"));
    }

    #[test]
    fn windows_split_probe_samples_by_time() {
        let s: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, if (30..60).contains(&i) { 50.0 } else { 1.0 })).collect();
        let w = windows(&s, 30.0, 60.0);
        assert_eq!((w.before.n, w.during.n, w.after.n), (30, 30, 40));
        assert_eq!(w.during.p50, Some(50.0));
        assert_eq!(w.before.max, Some(1.0));
    }

    fn consumer(start_s: f64, end_s: f64, per_bin: u32, cycle_ms_min: f64) -> Consumer {
        let bins =
            (0..(end_s / 0.1).ceil() as usize).map(|b| if b as f64 * 0.1 >= start_s { per_bin } else { 0 }).collect();
        Consumer { completed: true, start_s, end_s, bins, cycle_ms_min, ..Default::default() }
    }

    #[test]
    fn progress_counts_only_the_overcommitted_bins() {
        // Three consumers of 10 bytes in a room of 25: overcommitted only while
        // all three run (2 s to 4 s). Consumer 0 runs 0-4 s at full speed (10
        // cycles per bin of a 10 ms cycle) until 2 s, then at a quarter.
        let mut c0 = consumer(0.0, 4.0, 10, 10.0);
        for b in 20..40 {
            c0.bins[b] = 2;
        }
        let c1 = consumer(1.0, 5.0, 10, 10.0);
        let mut c2 = consumer(2.0, 6.0, 10, 10.0);
        for b in 20..40 {
            c2.bins[b] = 5;
        }
        let mut cs = vec![c0, c1, c2];
        let (median, secs) = overcommitted(&mut cs, 10, 25);
        assert!((secs - 2.0).abs() < 1e-9, "{secs}");
        assert!((cs[0].progress_overcommitted.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(cs[1].progress_overcommitted, Some(1.0));
        assert!((cs[2].progress_overcommitted.unwrap() - 0.5).abs() < 1e-9);
        assert!((median.unwrap() - 0.5).abs() < 1e-9);
        // With room for all, nothing is overcommitted and no ratio is given.
        let (median, secs) = overcommitted(&mut cs, 10, 30);
        assert_eq!((median, secs), (None, 0.0));
        assert!(cs.iter().all(|c| c.progress_overcommitted.is_none()));
        // A consumer that did not complete neither counts nor occupies a bin.
        cs[2].completed = false;
        // Room 15: consumers 0 and 1 overlap from 1 s to 4 s; consumer 0 did
        // 10 × 10 + 20 × 2 = 140 of 300 cycles there, consumer 1 all 300.
        let (median, secs) = overcommitted(&mut cs, 10, 15);
        assert!((secs - 3.0).abs() < 1e-9, "{secs}");
        assert!((cs[0].progress_overcommitted.unwrap() - 140.0 / 300.0).abs() < 1e-9);
        assert_eq!(cs[2].progress_overcommitted, None);
        assert!((median.unwrap() - (140.0 / 300.0 + 1.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn recovery_needs_three_calm_seconds_after_the_end() {
        // Paging stays high until t=14, then calm; PSI spikes at t=16.
        let pts: Vec<(f64, f64, f64)> = (1..=30)
            .map(|t| {
                let t = t as f64;
                (t, if t <= 14.0 { 5000.0 } else { 0.0 }, if t == 16.0 { 5.0 } else { 0.0 })
            })
            .collect();
        // From t=10: calm intervals start at 15 but 16 breaks it; 17,18,19 are calm.
        assert_eq!(recovery(&pts, 10.0, 0.0), Some(17.0 - 1.0 - 10.0));
        // Never calm: None.
        let busy: Vec<(f64, f64, f64)> = (1..=30).map(|t| (t as f64, 1e4, 0.0)).collect();
        assert_eq!(recovery(&busy, 0.0, 0.0), None);
        // A busy baseline raises the threshold.
        assert!(recovery(&busy, 0.0, 6000.0).is_some());
    }
}
