//! The sampler thread.
//!
//! It schedules by absolute deadline (`clock_nanosleep(CLOCK_MONOTONIC,
//! TIMER_ABSTIME)`), so sleeping never accumulates drift, and records its own
//! lateness (wake-up time minus deadline) with each sample. If it falls more than
//! an interval behind it skips the missed deadlines instead of bursting to catch up.
//!
//! The process's memory is locked with `mlockall` so that the sampler keeps time
//! while the machine swaps: an experiment that thrashes inside a cgroup must not be
//! able to page out the thread that watches it. Where mlockall is not permitted the
//! sampler warns (through [`SamplerStats::lock`]) and carries on.

use probe::{Probe, Roots, Sample, Targets};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Smallest supported interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub interval: Duration,
    pub roots: Roots,
    /// Lock the process's memory (mlockall). Tests may turn it off.
    pub lock_memory: bool,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig { interval: Duration::from_secs(1), roots: Roots::default(), lock_memory: true }
    }
}

/// Outcome of trying to lock memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum LockStatus {
    Locked,
    NotRequested,
    /// mlockall was refused or not attempted, with the reason.
    Failed(String),
}

/// Locks all current and future pages of this process, if permitted.
///
/// Without CAP_IPC_LOCK the lock is only attempted when RLIMIT_MEMLOCK is
/// unlimited: with MCL_FUTURE and a small limit, later allocations would fail.
pub fn lock_memory() -> LockStatus {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    // SAFETY: no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && rl.rlim_cur != libc::RLIM_INFINITY {
        return LockStatus::Failed(format!(
            "mlockall not permitted (RLIMIT_MEMLOCK is {} KiB and no CAP_IPC_LOCK): the sampler may be delayed under memory pressure",
            rl.rlim_cur / 1024
        ));
    }
    // SAFETY: mlockall takes flags only.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if r == 0 {
        LockStatus::Locked
    } else {
        LockStatus::Failed(format!(
            "mlockall failed ({}): the sampler may be delayed under memory pressure",
            std::io::Error::last_os_error()
        ))
    }
}

/// Summary of a sampler's run, recorded in run.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SamplerStats {
    pub interval_ms: f64,
    pub samples: u64,
    /// Deadlines skipped because the sampler was more than an interval late.
    pub missed_deadlines: u64,
    pub errors: u64,
    pub last_error: Option<String>,
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
    pub lateness_max_ms: f64,
    /// CPU time the sampler thread used per sample, microseconds (median).
    pub cpu_us_per_sample_p50: f64,
    pub lock: Option<LockStatus>,
}

/// What the sink tells the sampler after each sample.
pub enum Verdict {
    Continue,
    /// Stop sampling and request a process-wide stop with this reason.
    Abort(String),
}

/// A running sampler. Targets can change while it runs (workers start later).
pub struct Sampler {
    lock: LockStatus,
    stop: Arc<AtomicBool>,
    targets: Arc<Mutex<Targets>>,
    handle: Option<JoinHandle<SamplerStats>>,
}

impl Sampler {
    /// Starts the thread. The sink runs on the sampler thread for every sample.
    pub fn start(
        cfg: SamplerConfig,
        targets: Targets,
        mut sink: impl FnMut(&Sample) -> Verdict + Send + 'static,
    ) -> std::io::Result<Sampler> {
        let interval = cfg.interval.max(MIN_INTERVAL);
        let lock = if cfg.lock_memory { lock_memory() } else { LockStatus::NotRequested };
        let stop = Arc::new(AtomicBool::new(false));
        let targets = Arc::new(Mutex::new(targets));
        let (stop2, targets2) = (stop.clone(), targets.clone());
        let lock2 = lock.clone();
        let handle = std::thread::Builder::new().name("pagelab-sampler".into()).spawn(move || {
            let lock = lock2;
            let mut probe = Probe::new(cfg.roots);
            let mut stats =
                SamplerStats { interval_ms: interval.as_secs_f64() * 1e3, lock: Some(lock), ..Default::default() };
            let mut lateness = Vec::with_capacity(4096);
            let mut cpu = Vec::with_capacity(4096);
            let step = interval.as_nanos() as u64;
            let mut deadline = probe::sample::monotonic_ns();
            while !stop2.load(Ordering::SeqCst) {
                let woke = probe::sample::monotonic_ns();
                let late = woke.saturating_sub(deadline);
                let c0 = probe::sample::thread_cpu_ns();
                let t = targets2.lock().map(|t| t.clone()).unwrap_or_default();
                match probe.sample(&t) {
                    Ok(mut s) => {
                        s.lateness_ns = Some(late);
                        lateness.push(late);
                        stats.samples += 1;
                        cpu.push(probe::sample::thread_cpu_ns().saturating_sub(c0));
                        if let Verdict::Abort(reason) = sink(&s) {
                            crate::stop::request(reason);
                            break;
                        }
                    }
                    Err(e) => {
                        stats.errors += 1;
                        stats.last_error = Some(e.to_string());
                    }
                }
                deadline += step;
                let now = probe::sample::monotonic_ns();
                if now > deadline + step {
                    let missed = (now - deadline) / step;
                    stats.missed_deadlines += missed;
                    deadline += missed * step;
                }
                sleep_until(deadline, &stop2);
            }
            // A closing sample, so the record covers the whole run.
            if stats.samples > 0
                && !crate::stop::requested()
                && let Ok(s) = probe.sample(&targets2.lock().map(|t| t.clone()).unwrap_or_default())
            {
                stats.samples += 1;
                let _ = sink(&s);
            }
            stats.lateness_p50_ms = percentile(&mut lateness, 0.50) / 1e6;
            stats.lateness_p99_ms = percentile(&mut lateness, 0.99) / 1e6;
            stats.lateness_max_ms = lateness.iter().copied().max().unwrap_or(0) as f64 / 1e6;
            stats.cpu_us_per_sample_p50 = percentile(&mut cpu, 0.50) / 1e3;
            stats
        })?;
        Ok(Sampler { lock, stop, targets, handle: Some(handle) })
    }

    /// Whether the process's memory is locked.
    pub fn lock_status(&self) -> &LockStatus {
        &self.lock
    }

    /// Replaces what is sampled besides the system.
    pub fn set_targets(&self, t: Targets) {
        if let Ok(mut g) = self.targets.lock() {
            *g = t;
        }
    }

    pub fn targets(&self) -> Targets {
        self.targets.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Stops the thread (within ~50 ms) and returns its statistics.
    pub fn stop(mut self) -> SamplerStats {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> SamplerStats {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.stop_inner();
        }
    }
}

/// Sleeps to an absolute CLOCK_MONOTONIC deadline, in slices of at most 50 ms so a
/// stop request is seen promptly.
fn sleep_until(deadline_ns: u64, stop: &AtomicBool) {
    const SLICE: u64 = 50_000_000;
    loop {
        let now = probe::sample::monotonic_ns();
        if now >= deadline_ns || stop.load(Ordering::SeqCst) {
            return;
        }
        let target = if deadline_ns - now > SLICE { now + SLICE } else { deadline_ns };
        let ts = libc::timespec { tv_sec: (target / 1_000_000_000) as _, tv_nsec: (target % 1_000_000_000) as _ };
        // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// Nearest-rank percentile of u64 values, as f64; 0 for an empty slice
/// ([`crate::stats::percentile_u64`]).
pub fn percentile(v: &mut [u64], q: f64) -> f64 {
    crate::stats::percentile_u64(v, q).unwrap_or(0) as f64
}
