//! The study's presets and constants, a run's configuration, and its plan
//! (validated before anything changes).

use super::*;
use serde::Serialize;

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
/// The quiet window recorded before the consumers start: a twentieth of the
/// plan, between [`BASELINE_MIN`] and this (5 s at the study's scale; half a
/// second in the quick lab, whose 10 s runs a 3 s window before and after
/// each used to nearly double).
pub const BASELINE: Duration = Duration::from_secs(5);
pub const BASELINE_MIN: Duration = Duration::from_millis(500);
/// The probes' period and working set.
pub const PROBE_PERIOD: Duration = Duration::from_millis(100);
pub const PROBE_WS: u64 = 4 << 20;

/// How recovery is decided, documented in docs/thrash.md (issue 57: the way
/// the study brought each system "back to normality"): the consumers stay
/// alive after t_p, their load fallen back to [`FALL_BACK`] of their regions;
/// from when the load fits under the limit ([`overcommit_end`]), the first
/// moment from which, for
/// [`RECOVERY_CALM`] of [`RECOVERY_POLL`] intervals, swap-ins plus swap-outs
/// stay at most max(2 × the baseline rate, 16 pages/s), the system's memory
/// PSI "some" at most 1 % of the interval, and the probe inside the group
/// on time (at most [`PROBE_CALM_MS`] or twice its p99 before the load).
pub const RECOVERY: &str = "consumers alive, their load falling back to 1/5 of their regions: from when the load \
fits under the limit, until paging (pswpin+pswpout) <= max(2 x baseline, 16 pages/s) and memory PSI some <= 1 % over \
a 1 s stretch of 100 ms intervals, with the probe inside on time (<= max(2 x its p99 before, 10 ms))";
/// The share of its region a consumer keeps writing after t_p, alive, while
/// the recovery is watched: its load falls back, as a desktop's does when
/// the heavy work ends and the programs stay open. A fifth: at the study's
/// overcommit (N × S ÷ limit = 2.5) the fallen-back working sets of all N
/// take half the room.
pub const FALL_BACK: f64 = 0.2;
/// How far past the moment the load fits the recovery watch lasts at least
/// (s): past the recovery finding's 10 s edge and its calm second, so that a
/// run not calm by then is a lower bound beyond the edge, not unusable.
pub const RECOVERY_WATCH_PAST_S: f64 = 11.5;
/// The recovery watch's interval: the recovery's resolution.
pub const RECOVERY_POLL: Duration = Duration::from_millis(100);
/// How long paging, PSI and the probe must stay calm for the recovery to end.
pub const RECOVERY_CALM: Duration = Duration::from_secs(1);
/// The probe inside the group is on time at this lateness or under (ms), or
/// twice its p99 before the load where that is more: a probe that touches
/// its 4 MiB in well under a millisecond when nothing pages.
pub const PROBE_CALM_MS: f64 = 10.0;

/// What the consumers' load does after t_p (`--after-load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AfterLoad {
    /// Falls back to a fifth of each region (the recovery as measured).
    #[default]
    Falls,
    /// Stays on the whole region: nothing recovers while the consumers live
    /// (the recovery finding's negative control).
    Stays,
}

impl AfterLoad {
    /// The share of its region a consumer writes after t_p.
    pub fn share(self) -> f64 {
        match self {
            AfterLoad::Falls => FALL_BACK,
            AfterLoad::Stays => 1.0,
        }
    }
}
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
/// The longest wait for recovery after the last consumer's load falls back.
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
    /// What the consumers' load does after t_p, while the recovery is watched.
    pub after_load: AfterLoad,
    /// The CPU-only control: a limit that holds every consumer ([`Plan::cpu_only`]).
    pub cpu_only: bool,
}

pub use crate::thrash::results::Plan;

/// What a plan takes from the host, and its quiet window.
pub trait PlanExt {
    /// N × S, in u128: no count or size wraps it.
    fn total_bytes(&self) -> u128;
    /// What the plan takes from the host at most: the group's memory, a swap
    /// store that may hold every consumer's data, and the workers' overhead.
    fn planned_bytes(&self) -> u128;
    /// The quiet window before the consumers start (and the shortest "after" window).
    fn baseline(&self) -> Duration;
}

impl PlanExt for Plan {
    fn total_bytes(&self) -> u128 {
        self.consumers as u128 * self.size_bytes as u128
    }

    fn planned_bytes(&self) -> u128 {
        let total = self.total_bytes();
        let limit = match self.limit_bytes {
            Some(l) => u128::from(l),
            None if self.cpu_only => 2 * total,
            None => (total as f64 / OVERCOMMIT) as u128,
        };
        let overhead = (self.consumers as u128 + 3) * WORKER_OVERHEAD as u128 + 2 * PROBE_WS as u128;
        limit + total + overhead
    }

    fn baseline(&self) -> Duration {
        Duration::from_secs_f64(
            (self.planned_duration_ms / 20e3).clamp(BASELINE_MIN.as_secs_f64(), BASELINE.as_secs_f64()),
        )
    }
}

impl ThrashConfig {
    /// The runs, in order: for each backing, `repeat` rounds of every plan.
    /// Round-robin rather than all repeats of one preset in a row, so that a
    /// slow drift in the machine's paging speed falls on every preset alike
    /// instead of on the presets that happened to run last; and the rounds in
    /// a Williams order when they fill whole squares, ABBA otherwise
    /// ([`workloads::order::balanced`]): over four rounds of the four presets
    /// each runs once in each position and once right after each of the
    /// others, so that a position effect, and most of what a run leaves in
    /// the swap store for the next, fall on the pairs the findings compare
    /// alike.
    pub fn schedule(&self) -> Vec<(BackingKind, Plan, u32)> {
        let plans = self.plans();
        let mut out = Vec::new();
        for &b in &self.backings {
            for rep in 0..self.repeat {
                out.extend(workloads::order::balanced(&plans, rep as usize, self.repeat as usize).into_iter().map(|p| (b, p, rep)));
            }
        }
        out
    }

    /// The plans, one per preset in the order given (or one custom plan);
    /// [`ThrashConfig::schedule`] orders the runs.
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
                let page = workloads::mm::page_size() as u64;
                let n = self.consumers.unwrap_or(DEFAULT_CONSUMERS);
                let size = scaled_size(self.size.unwrap_or(DEFAULT_SIZE), f, page);
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
                    after_share: self.after_load.share(),
                    cpu_only: self.cpu_only,
                }
            })
            .collect()
    }
}

/// S under the size factor `f`, whole pages of `page` bytes, at least one.
pub fn scaled_size(size: u64, f: f64, page: u64) -> u64 {
    // `as u64` saturates; the page rounding must not wrap either.
    ((size as f64 * f) as u64).div_ceil(page).max(1).saturating_mul(page)
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
pub(crate) const WORKER_OVERHEAD: u64 = 3 << 20;

pub fn validate(cfg: &ThrashConfig, p: &mut probe::Probe) -> Result<Vec<Plan>, sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    let plans = validate_hog(cfg, p)?;
    if cfg.backings.is_empty() {
        return Err(Invalid(format!("--backing: expected one or more of {}", BackingKind::names())));
    }
    for b in &cfg.backings {
        if matches!(b, BackingKind::Zswap | BackingKind::None) {
            return Err(Invalid(
                "--backing: thrash runs on zram, swapfile, existing or auto (a comma-separated list of them)".into(),
            ));
        }
        backing::validate_with_dir(*b, None, &cfg.swapfile_dir, p)?;
        // The largest store a run makes (N × S; thrash's own runs add nothing).
        let most = plans.iter().map(|pl| pl.consumers as u64 * pl.size_bytes).max().unwrap_or(0);
        backing::check_room(*b, most, &cfg.swapfile_dir, p)?;
    }
    Ok(plans)
}

/// [`validate`] but for the stores: the factors and counts, root, the
/// memory controller and the host's floor (jank checks its arms' stores
/// itself).
pub fn validate_hog(cfg: &ThrashConfig, p: &mut probe::Probe) -> Result<Vec<Plan>, sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    if !(cfg.scale > 0.0 && cfg.scale <= 10.0) {
        return Err(Invalid(format!("--scale {}: expected a factor above 0 and at most 10, e.g. 0.1", cfg.scale)));
    }
    if let Some(t) = cfg.time_scale {
        if !(t > 0.0 && t <= 10.0) {
            return Err(Invalid(format!("--time-scale {t}: expected a factor above 0 and at most 10, e.g. 0.05")));
        }
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
    if p.memory_controller().ok().flatten().is_none() {
        return Err(sandbox::SandboxError::Unsupported(
            "pagelab thrash needs a memory cgroup controller; none is mounted".into(),
        ));
    }
    let plans = cfg.plans();
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
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
