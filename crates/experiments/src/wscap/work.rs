//! `wscap`: what a working-set cap costs a process that touches more than the cap,
//! and whether periodic reclaim is a better idea.
//!
//! Reproduces Dawson's "32 MiB Working Sets on a 64 GiB machine": a process
//! allocates SIZE and walks over it, one byte per page, again and again; the scans
//! per second with and without a cap are compared. On Linux the cap is a memory
//! cgroup limit (`memory.max`, v1 `memory.limit_in_bytes`) or v2 throttling
//! (`memory.high`); the alternative the original author argued for, trimming once
//! per period instead of at every fault, is `process_madvise(MADV_PAGEOUT)` or
//! `MADV_COLD` on the region, or a `memory.reclaim` write, every PERIOD.

use sandbox::worker::EventKind;
use crate::kit::store::{Store, store_size};
use probe::cgroup::CgroupVersion;
use sandbox::Sandbox;
use sandbox::cgroup::{Limits, MemCgroup};
use sandbox::error::SandboxError;
use sandbox::worker::{Processes, Request, Sent, Spawn, WorkerLink, WorkerSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use workloads::backing::{self, Backing, BackingKind};
use workloads::mm;
use workloads::observe::ExperimentError;
use workloads::observe::Observer;
use workloads::procsnap::ProcSnap;

/// What holds the working set down (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Mode {
    #[default]
    None,
    CapMax,
    CapHigh,
    PeriodicPageout,
    PeriodicCold,
    PeriodicReclaim,
}

impl Mode {
    /// Its name: what `--mode` takes and run.json records.
    pub fn name(self) -> String {
        crate::kit::names::name(&self)
    }
}
crate::serde_by_name!(Mode, "mode");

/// How each page of the working set is touched (`--access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Access {
    /// One byte written per page, as the original.
    Write,
    /// One byte read per page.
    Read,
}
crate::serde_by_name!(Access, "access");

#[derive(Debug, Clone)]
pub struct WscapConfig {
    pub size: u64,
    pub cap: u64,
    pub duration: Duration,
    pub modes: Vec<Mode>,
    pub period: Duration,
    /// Write one byte per page (true) or read it.
    pub write: bool,
    pub backing: BackingKind,
    pub compressor: Option<String>,
    pub repeat: u32,
    /// Extra cap-max runs at these caps, for the slowdown curve.
    pub sweep_caps: Vec<u64>,
    pub exe: PathBuf,
    pub host_floor: Option<u64>,
    pub swapfile_dir: PathBuf,
    /// The memory arm's store (`--memory-store`): after the modes, `none` and
    /// `cap-max` run again, once per repeat, on this store, for the memory
    /// finding, which is judged where the capped pages could leave RAM. None:
    /// no memory arm.
    pub memory_store: Option<BackingKind>,
    /// Why `--memory-store auto` ran no memory arm, said in the run's notes.
    pub memory_store_note: Option<String>,
}

/// The memory arm's scan window: its figure is a peak of memory held, which
/// the first scan under the cap reaches; a mode's full window adds nothing.
pub const MEMORY_ARM_WINDOW: Duration = Duration::from_secs(1);

pub use crate::wscap::results::{Reclaim, WscapResult};

/// Checks the configuration, and the machine as `p` reads it, before
/// anything is changed.
pub fn validate(cfg: &WscapConfig, p: &mut probe::Probe) -> Result<(), SandboxError> {
    if cfg.size == 0 {
        return Err(SandboxError::Invalid("--size must be greater than zero".into()));
    }
    if cfg.cap == 0 || cfg.sweep_caps.contains(&0) {
        return Err(SandboxError::Invalid("--cap must be greater than zero".into()));
    }
    if backing::resolve(cfg.backing, p) == BackingKind::None {
        return Err(SandboxError::Invalid(
            "wscap needs swap behind the cap (a capped working set has nowhere to go otherwise): run as root for a zram swap, or use --backing existing/swapfile"
                .into(),
        ));
    }
    backing::validate_with_dir(cfg.backing, cfg.compressor.as_deref(), &cfg.swapfile_dir, p)?;
    backing::check_room(cfg.backing, cfg.size, &cfg.swapfile_dir, p)?;
    if let Some(k) = cfg.memory_store {
        backing::validate_with_dir(k, None, &cfg.swapfile_dir, p)
            .and_then(|()| backing::check_room(k, cfg.size, &cfg.swapfile_dir, p))
            .map_err(|e| SandboxError::Invalid(format!("--memory-store {}: {e}", k.name())))?;
    }
    sandbox::privilege::require_admin("wscap (creating a memory cgroup for the worker)", "run as root")?;
    if p.memory_controller().ok().flatten().is_none() {
        return Err(SandboxError::Unsupported("wscap needs a memory cgroup controller; none is mounted".into()));
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let ram = meminfo.total().unwrap_or(u64::MAX);
    for (flag, cap) in std::iter::once(("--cap", cfg.cap)).chain(cfg.sweep_caps.iter().map(|c| ("--sweep-cap", *c))) {
        if cap > ram {
            return Err(SandboxError::Invalid(format!(
                "{flag} {cap} bytes is larger than this machine's RAM ({ram} bytes): a cap must be below --size"
            )));
        }
    }
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    guard.check_plan(planned_bytes(cfg.size), "wscap", &meminfo)?;
    Ok(())
}

/// What a run takes from the host at most: the worker's region, a store that may
/// hold all of it, and 64 MiB for the worker (u128: no size wraps it).
pub fn planned_bytes(size: u64) -> u128 {
    2 * size as u128 + (64 << 20)
}

/// The machine's reclaim counters now; an error when /proc/vmstat cannot be
/// read (a mode's reclaim is then unknown, not none).
fn reclaim_counters(p: &mut probe::Probe) -> Result<Reclaim, ExperimentError> {
    let v = p
        .vmstat()
        .ok()
        .flatten()
        .ok_or_else(|| ExperimentError::Worker("/proc/vmstat could not be read: the reclaim is unknown".into()))?;
    // A kernel without swap has no pswp lines: it swapped nothing.
    Ok(Reclaim {
        pgscan: v.sum_prefix("pgscan_"),
        pgsteal: v.sum_prefix("pgsteal_"),
        workingset_refault: v.sum_prefix("workingset_refault"),
        pswpin: v.get("pswpin").unwrap_or(0),
        pswpout: v.get("pswpout").unwrap_or(0),
    })
}

/// The worker's start: how much to map and how to touch it (`--spec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub size: u64,
    pub write: bool,
}

/// `R`'s reply from its `done` event: a missing or mistyped field is an
/// error that names the command, never a 0.
fn reply<R: Request>(data: Value) -> Result<R::Reply, ExperimentError> {
    sandbox::worker::reply::<R>(data).map_err(|e| ExperimentError::Worker(format!("the wscap worker: {e}")))
}

/// A started worker, process or thread.
type Link = Box<dyn WorkerLink>;

struct Ctx<'a, O: Observer<Entry = WscapResult>> {
    cfg: &'a WscapConfig,
    obs: &'a mut O,
    stop: fn() -> bool,
    back: &'a Backing,
    sb: &'a mut Sandbox,
    /// Reads the machine `sb` changes ([`Sandbox::probe`]).
    probe: probe::Probe,
    headroom_limit: u64,
    spawn: &'a mut dyn Spawn,
    /// The memory arm's runs (see [`WscapConfig::memory_store`]).
    memory_arm: bool,
    /// The scan window: the configuration's, or [`MEMORY_ARM_WINDOW`].
    window: Duration,
}

impl<O: Observer<Entry = WscapResult>> Ctx<'_, O> {
    fn worker(&mut self, cg: &MemCgroup) -> Result<(Link, (usize, usize)), ExperimentError> {
        let cfg = self.cfg;
        let mut w = self.spawn.spawn(WorkerSpec {
            exe: cfg.exe.clone(),
            args: sandbox::worker::argv_spec(WORKER, &Spec { size: cfg.size, write: cfg.write }),
            cgroup: Some(cg),
            env: vec![],
            label: "wscap".into(),
        })?;
        self.obs.targets(
            vec![w.pid()],
            Some(probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() }),
            self.back.zram_id.into_iter().collect(),
        );
        let setup = self.call(&mut *w, &Setup, Duration::from_secs(600))?;
        Ok((w, (setup.addr, setup.len)))
    }

    /// Sends `r` and waits for its reply.
    fn call<R: Request>(&mut self, w: &mut dyn WorkerLink, r: &R, timeout: Duration) -> Result<R::Reply, ExperimentError> {
        // A failed send means the worker is gone: say how it ended, not "broken pipe".
        let sent = sandbox::worker::send(w, r).map_err(|_| ExperimentError::Failed(w.failure()))?;
        let stop = self.stop;
        let ev = w
            .wait_for(sent.want(), timeout, &mut |_| {}, &stop)
            .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) })?;
        reply::<R>(ev.data)
    }

    /// One mode's window. `cap` is the cap for cap modes.
    fn mode(&mut self, mode: Mode, cap: u64, repeat: u32, sweep: bool) -> Result<WscapResult, ExperimentError> {
        let cfg = self.cfg;
        let mut r = WscapResult {
            mode,
            supported: true,
            outcome: "ok".into(),
            sweep,
            size_bytes: cfg.size,
            access: crate::kit::names::name(&if cfg.write { Access::Write } else { Access::Read }),
            repeat,
            backing: self.back.kind,
            compressor: self.back.compressor.clone(),
            memory_arm: self.memory_arm,
            ..Default::default()
        };
        let version = self.probe.memory_controller().ok().flatten().map(|(v, _)| v);
        if mode == Mode::CapHigh && version == Some(CgroupVersion::V1) {
            r.supported = false;
            r.outcome = "unsupported".into();
            r.reason = Some("cgroup v1 has no memory.high (throttling without OOM); only cgroup v2 does".into());
            return Ok(r);
        }
        // A fresh group per mode, created with its limit: an empty new group always
        // accepts the limit (a used one may refuse with EBUSY on v1), and a cap too
        // small to run in ends as the kernel's OOM kill while the worker touches its
        // memory.
        let limits = match mode {
            Mode::CapMax => Limits { max: Some(cap), ..Default::default() },
            Mode::CapHigh => Limits { high: Some(cap), max: Some(self.headroom_limit.max(cap)), ..Default::default() },
            _ => Limits { max: Some(self.headroom_limit), ..Default::default() },
        };
        if matches!(mode, Mode::CapMax | Mode::CapHigh) {
            r.cap_bytes = Some(cap);
        }
        let cg = self.sb.memory_cgroup("wscap", &limits)?;
        // zswap's pool before the worker exists: its rise is the mode's.
        let zswap_before = zswap_pool(&mut self.probe);
        let (mut w, region) = match self.worker(&cg) {
            Ok(x) => x,
            Err(ExperimentError::Failed(f)) if f.oom_killed => {
                r.outcome = "OOM-killed inside the cap".into();
                r.notes.push(f.to_string());
                return Ok(r);
            }
            Err(e) => return Err(e),
        };
        let pid = w.pid();
        let t_start = probe::sample::monotonic_ns();
        match mode {
            Mode::CapMax | Mode::CapHigh => {}
            Mode::PeriodicPageout | Mode::PeriodicCold | Mode::PeriodicReclaim => {
                r.period_s = Some(cfg.period.as_secs_f64());
            }
            Mode::None => {}
        }
        if matches!(mode, Mode::CapMax | Mode::CapHigh) && cap >= cfg.size {
            r.notes.push(format!(
                "the cap ({cap} bytes) is not below the size ({} bytes): no slowdown is expected unless the worker's own other pages push its working set over the cap",
                cfg.size
            ));
        }
        if mode == Mode::PeriodicReclaim && cg.version == CgroupVersion::V1 {
            r.notes.push(
                "cgroup v1 has no memory.reclaim: each period lowers the limit below usage and restores it".into(),
            );
        }
        self.obs.event("phase_start", &mode.name(), t_start, json!({"cap_bytes": r.cap_bytes}));
        let before = reclaim_counters(&mut self.probe)?;
        let pidfd = mm::PidFd::open(pid).ok();
        let sent = sandbox::worker::send(&mut *w, &Scan { duration_s: self.window.as_secs_f64() })
            .map_err(|_| ExperimentError::Failed(w.failure()))?;
        let mut peaks = Peaks { zswap_before, ..Default::default() };
        let done = self.watch(mode, &mut *w, &sent, &cg, pid, region, &pidfd, &mut peaks, &mut r)?;
        let after = reclaim_counters(&mut self.probe)?;
        self.obs.event("phase_end", &mode.name(), probe::sample::monotonic_ns(), Value::Null);
        r.reclaim = Reclaim {
            pgscan: after.pgscan.saturating_sub(before.pgscan),
            pgsteal: after.pgsteal.saturating_sub(before.pgsteal),
            workingset_refault: after.workingset_refault.saturating_sub(before.workingset_refault),
            pswpin: after.pswpin.saturating_sub(before.pswpin),
            pswpout: after.pswpout.saturating_sub(before.pswpout),
        };
        peaks.fill(&mut r);
        if let Some(d) = done {
            scanned(&mut r, &d);
            if mode == Mode::None && !self.memory_arm {
                // The same buffer, a minimal loop without per-scan timing.
                let b = self.call(
                    &mut *w,
                    &Baseline { duration_s: cfg.duration.as_secs_f64().min(2.0) },
                    Duration::from_secs(600),
                )?;
                r.minimal_scans_per_sec = Some(b.minimal_scans_per_sec);
                r.instrumented_scans_per_sec = Some(b.instrumented_scans_per_sec);
                r.instrumented_vs_minimal = Some(b.instrumented_vs_minimal);
            }
            let _ = sandbox::worker::send(&mut *w, &Exit);
            let _ = w.finish(Duration::from_secs(10));
        }
        Ok(r)
    }
    /// The scan window: polls the worker's and the group's memory every 50 ms,
    /// trims each period (the periodic modes), and waits for the scan's reply
    /// (None when the cap's OOM kill ended it).
    #[allow(clippy::too_many_arguments)]
    fn watch(
        &mut self,
        mode: Mode,
        w: &mut dyn WorkerLink,
        sent: &Sent<Scan>,
        cg: &MemCgroup,
        pid: i32,
        region: (usize, usize),
        pidfd: &Option<mm::PidFd>,
        peaks: &mut Peaks,
        r: &mut WscapResult,
    ) -> Result<Option<ScanDone>, ExperimentError> {
        let cfg = self.cfg;
        let mut next_action = Instant::now() + cfg.period;
        let mut last_poll = Instant::now() - Duration::from_secs(1);
        let deadline = Instant::now() + self.window + Duration::from_secs(120);
        Ok(loop {
            if (self.stop)() {
                // The caller drops the worker, which kills it.
                return Err(ExperimentError::Interrupted);
            }
            if Instant::now() > deadline {
                return Err(ExperimentError::Worker("wscap worker did not finish its scan window".into()));
            }
            if last_poll.elapsed() >= Duration::from_millis(50) {
                last_poll = Instant::now();
                peaks.poll(&mut self.probe, pid, cg, self.back.zram_id);
            }
            if Instant::now() >= next_action {
                next_action += cfg.period;
                let t = probe::sample::monotonic_ns();
                let res = match (mode, &pidfd) {
                    (Mode::PeriodicPageout, Some(fd)) => {
                        mm::process_madvise(fd, &[region], mm::MADV_PAGEOUT).map(|_| ())
                    }
                    (Mode::PeriodicCold, Some(fd)) => mm::process_madvise(fd, &[region], mm::MADV_COLD).map(|_| ()),
                    (Mode::PeriodicReclaim, _) => cg.reclaim(cfg.size).map_err(std::io::Error::other),
                    _ => Ok(()),
                };
                if matches!(mode, Mode::PeriodicPageout | Mode::PeriodicCold | Mode::PeriodicReclaim) {
                    self.obs.event("trim", &mode.name(), t, json!({"ok": res.is_ok()}));
                    if let Err(e) = res {
                        r.notes.push(format!("{} failed: {e}", mode.name()));
                    }
                }
            }
            match w.recv(Duration::from_millis(10)) {
                Ok(Some(ev)) if sent.want().matches(&ev) => break Some(reply::<Scan>(ev.data)?),
                Ok(Some(ev)) if ev.kind == EventKind::Error => {
                    return Err(ExperimentError::Worker(format!("worker wscap failed: {}", ev.name)));
                }
                Ok(_) => {}
                Err(f) if f.oom_killed => {
                    r.outcome = "OOM-killed inside the cap".into();
                    r.notes.push(f.to_string());
                    break None;
                }
                Err(f) => return Err(ExperimentError::Failed(f)),
            }
        })
    }
}

/// What the window's polls saw: RSS samples and the peaks of anon, swap, the
/// group's charge and the store (none: no poll read it).
#[derive(Default)]
struct Peaks {
    rss: Vec<u64>,
    anon_max: Option<u64>,
    swap_max: Option<u64>,
    charged_max: Option<u64>,
    store_max: Option<u64>,
    /// zswap's pool before the worker started (None: no zswap line).
    zswap_before: Option<u64>,
    /// The peak, poll by poll, of the charge + the zram store + zswap's pool
    /// above `zswap_before`: the mode's pages in RAM, in any of the three.
    held_max: Option<u64>,
}

/// zswap's compressed pool (meminfo's `Zswap`), bytes; None where the kernel
/// has no such line (no zswap, or older than 5.19).
fn zswap_pool(p: &mut probe::Probe) -> Option<u64> {
    p.meminfo().ok().flatten()?.get("Zswap")
}

impl Peaks {
    fn poll(&mut self, p: &mut probe::Probe, pid: i32, cg: &MemCgroup, zram: Option<u32>) {
        // A poll that cannot read the worker keeps nothing (not zeros).
        if let Some(s) = ProcSnap::read(p, pid) {
            self.rss.push(s.rss_bytes);
            self.anon_max = self.anon_max.max(Some(s.anon_bytes));
            self.swap_max = self.swap_max.max(Some(s.swap_bytes));
        }
        let charged = cg.usage();
        if let Some(u) = charged {
            self.charged_max = Some(self.charged_max.unwrap_or(0).max(u));
        }
        let store = zram.and_then(|id| store_size(p, Store::Zram(id))).map(|z| z.ram_bytes);
        if let Some(z) = store {
            self.store_max = Some(self.store_max.unwrap_or(0).max(z));
        }
        // The three at the same poll (their peaks need not coincide); an
        // unread charge keeps nothing.
        if let Some(c) = charged {
            let zswap = zswap_pool(p).zip(self.zswap_before).map_or(0, |(a, b)| a.saturating_sub(b));
            let held = c + store.unwrap_or(0) + zswap;
            self.held_max = Some(self.held_max.unwrap_or(0).max(held));
        }
    }

    fn fill(mut self, r: &mut WscapResult) {
        r.rss_median_bytes = record::stats::percentile_u64(&mut self.rss, 0.5);
        r.rss_max_bytes = self.rss.iter().copied().max();
        r.rss_anon_max_bytes = self.anon_max;
        r.swap_max_bytes = self.swap_max;
        r.charged_max_bytes = self.charged_max;
        r.store_max_bytes = self.store_max;
        r.held_max_bytes = self.held_max;
    }
}

/// The scan's figures into the result.
fn scanned(r: &mut WscapResult, d: &ScanDone) {
    r.duration_s = d.seconds;
    r.scans = d.scans;
    r.scans_per_sec = if r.duration_s > 0.0 { r.scans as f64 / r.duration_s } else { 0.0 };
    r.ms_per_scan_p50 = d.p50_ns as f64 / 1e6;
    r.ms_per_scan_p99 = d.p99_ns as f64 / 1e6;
    r.ms_per_scan_max = d.max_ns as f64 / 1e6;
    let n = r.scans.max(1) as f64;
    r.minor_faults_per_scan = d.minflt as f64 / n;
    r.major_faults_per_scan = d.majflt as f64 / n;
    r.cpu_user_s = d.utime_s;
    r.cpu_system_s = d.stime_s;
    r.scans_per_second_series = d.per_second.clone();
}

/// Runs every mode (`none` first, as the reference), `repeat` times, then the sweep.
pub fn run<O: Observer<Entry = WscapResult>>(
    cfg: &WscapConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<WscapResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut Processes, Sandbox::new("wscap"))
}

/// [`run`], its workers started by `spawn` and its groups made by `sb` (tests:
/// [`sandbox::worker::Threads`] and a sandbox on a fake tree, no root).
pub fn run_with<O: Observer<Entry = WscapResult>>(
    cfg: &WscapConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn Spawn,
    mut sb: Sandbox,
) -> Result<Vec<WscapResult>, ExperimentError> {
    let back = backing::setup(&mut sb, cfg.backing, cfg.compressor.as_deref(), cfg.size, &cfg.swapfile_dir)?;
    obs.event("info", "backing", probe::sample::monotonic_ns(), serde_json::to_value(&back).unwrap_or(Value::Null));
    for n in &back.notes {
        obs.note(n);
    }
    let headroom_limit = cfg.size + cfg.size / 8 + (64 << 20);
    let mut modes = vec![Mode::None];
    modes.extend(cfg.modes.iter().copied().filter(|m| *m != Mode::None));
    let mut results: Vec<WscapResult> = Vec::new();
    let probe = sb.probe();
    let mut ctx = Ctx {
        cfg,
        obs: &mut *obs,
        stop,
        back: &back,
        sb: &mut sb,
        probe,
        headroom_limit,
        spawn: &mut *spawn,
        memory_arm: false,
        window: cfg.duration,
    };
    let mut plan: Vec<(Mode, u64, bool)> = Vec::new();
    for _ in 0..cfg.repeat {
        for &m in &modes {
            plan.push((m, cfg.cap, false));
        }
    }
    for &c in &cfg.sweep_caps {
        plan.push((Mode::CapMax, c, true));
    }
    ctx.plan(&plan, &mut results)?;
    obs.targets(vec![], None, vec![]);
    if let Some(n) = &cfg.memory_store_note {
        obs.note(n);
    }
    let Some(kind) = cfg.memory_store else {
        sb.restore()?;
        return Ok(results);
    };
    // The memory arm: the run's own store is undone first (two stores at once
    // would share the pages), then the arm's store is made in the same sandbox.
    sb.restore()?;
    let back = backing::setup(&mut sb, kind, None, cfg.size, &cfg.swapfile_dir)?;
    obs.event("info", "memory arm backing", probe::sample::monotonic_ns(), serde_json::to_value(&back).unwrap_or(Value::Null));
    obs.note(&format!(
        "the memory arm: none and cap-max again on {} ({} s each), where the capped pages {}",
        back.kind.name(),
        MEMORY_ARM_WINDOW.as_secs_f64(),
        match back.kind {
            k if k.compressed() => "stay in RAM, compressed",
            BackingKind::None => "have nowhere to go",
            _ => "can leave RAM",
        }
    ));
    let probe = sb.probe();
    let mut ctx = Ctx {
        cfg,
        obs,
        stop,
        back: &back,
        sb: &mut sb,
        probe,
        headroom_limit,
        spawn,
        memory_arm: true,
        window: MEMORY_ARM_WINDOW.min(cfg.duration),
    };
    let plan: Vec<(Mode, u64, bool)> =
        (0..cfg.repeat).flat_map(|_| [(Mode::None, cfg.cap, false), (Mode::CapMax, cfg.cap, false)]).collect();
    ctx.plan(&plan, &mut results)?;
    obs.targets(vec![], None, vec![]);
    sb.restore()?;
    Ok(results)
}

impl<O: Observer<Entry = WscapResult>> Ctx<'_, O> {
    /// Runs `plan` in order, each mode's slowdown read against the median
    /// of this arm's `none` runs so far, each result written as it comes.
    fn plan(&mut self, plan: &[(Mode, u64, bool)], results: &mut Vec<WscapResult>) -> Result<(), ExperimentError> {
        let mut rep = std::collections::HashMap::new();
        for &(m, cap, sweep) in plan {
            let n = rep.entry((m.name(), cap, sweep)).or_insert(0u32);
            *n += 1;
            self.obs.note(&format!(
                "wscap {}{}{} ({} s)",
                if self.memory_arm { "memory arm: " } else { "" },
                m.name(),
                if matches!(m, Mode::CapMax | Mode::CapHigh) { format!(" cap {} MiB", units::whole_mib(cap)) } else { String::new() },
                self.window.as_secs_f64()
            ));
            let mut r = self.mode(m, cap, *n, sweep)?;
            let base: Vec<f64> = results
                .iter()
                .filter(|x| x.mode == Mode::None && x.memory_arm == self.memory_arm && x.scans_per_sec > 0.0)
                .map(|x| x.scans_per_sec)
                .collect();
            if m == Mode::None {
                // The reference itself.
                r.slowdown = Some(1.0);
            } else if let Some(b) = record::stats::median(&base)
                && r.scans_per_sec > 0.0
            {
                r.slowdown = Some(b / r.scans_per_sec);
            }
            self.obs.result(&r)?;
            results.push(r);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The worker's side.

fn rusage() -> (u64, u64, f64, f64) {
    let u = workloads::usage::process();
    (u.minflt, u.majflt, u.user_s, u.sys_s)
}

/// One scan: one byte per page, written or read.
#[inline(always)]
fn scan(buf: *mut u8, len: usize, page: usize, write: bool) -> u64 {
    let mut sum = 0u64;
    let mut off = 0;
    while off < len {
        // SAFETY: off < len within our mapping; volatile so every page is touched.
        unsafe {
            let p = buf.add(off);
            let v = std::ptr::read_volatile(p);
            if write {
                std::ptr::write_volatile(p, v.wrapping_add(1));
            }
            sum = sum.wrapping_add(v as u64);
        }
        off += page;
    }
    sum
}

/// The worker kind.
pub const WORKER: &str = "wscap";

/// `pagelab __worker wscap --spec JSON` ([`Spec`]): commands setup, scan,
/// baseline, exit; each ends with a `done` event carrying its typed reply
/// ([`SetupDone`], [`ScanDone`], [`BaselineDone`]).
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let Spec { size, write } = sandbox::worker::spec_of(WORKER, args)?;
    let size = usize::try_from(size).map_err(|_| format!("the wscap worker: {size} bytes do not fit this machine"))?;
    let page = mm::page_size();
    let mut m = mm::Mapping::anon(size, 0).map_err(|e| format!("mmap of {size} bytes: {e}"))?;
    while let Some(c) = io.command::<Command>() {
        match c? {
            Command::Setup(Setup) => {
                // Random bytes, which do not compress: what the cap pushes out
                // costs the store what it cost in RAM (issue 43: one written
                // byte per page let zram keep 32 MiB in about 1 MiB, and the
                // memory finding judged page content rather than caps).
                workloads::fill::fill(m.as_mut_slice(), workloads::fill::Pattern::Random, 0, size as u64);
                io.reply::<Setup>(&SetupDone { addr: m.ptr as usize, len: m.len });
            }
            Command::Scan(Scan { duration_s }) => {
                let dur = Duration::try_from_secs_f64(duration_s).map_err(|e| format!("scan: duration_s {duration_s}: {e}"))?;
                let mut times: Vec<u64> = Vec::with_capacity(1 << 16);
                let mut per_second = vec![0u64];
                let (f0, j0, u0, s0) = rusage();
                let t0 = probe::sample::monotonic_ns();
                let end = t0 + dur.as_nanos() as u64;
                let mut sink = 0u64;
                loop {
                    let a = probe::sample::monotonic_ns();
                    // At least one scan per window: a worker that was not
                    // scheduled for the whole window (a loaded host, or a guest
                    // under emulation) still measures one scan's time, rather
                    // than none and no figure.
                    if a >= end && !times.is_empty() {
                        break;
                    }
                    sink = sink.wrapping_add(scan(m.ptr, m.len, page, write));
                    let b = probe::sample::monotonic_ns();
                    times.push(b - a);
                    let sec = ((b - t0) / 1_000_000_000) as usize;
                    if per_second.len() <= sec {
                        per_second.resize(sec + 1, 0);
                    }
                    per_second[sec] += 1;
                }
                let t1 = probe::sample::monotonic_ns();
                let (f1, j1, u1, s1) = rusage();
                // Whole seconds only: the last bucket holds the window's final moments.
                per_second.truncate(dur.as_secs().max(1) as usize);
                std::hint::black_box(sink);
                let scans = times.len() as u64;
                io.reply::<Scan>(&ScanDone {
                    scans,
                    seconds: (t1 - t0) as f64 / 1e9,
                    p50_ns: record::stats::percentile_u64(&mut times, 0.5).unwrap_or(0),
                    p99_ns: record::stats::percentile_u64(&mut times, 0.99).unwrap_or(0),
                    max_ns: times.last().copied().unwrap_or(0),
                    minflt: f1 - f0,
                    majflt: j1 - j0,
                    utime_s: u1 - u0,
                    stime_s: s1 - s0,
                    per_second,
                });
            }
            Command::Baseline(Baseline { duration_s: dur }) => {
                // Alternating short windows of the instrumented loop (a timestamp per
                // scan, as in `scan`) and a minimal loop (no per-scan timing), so both
                // see the same conditions on a noisy machine; medians of each.
                let pairs = 20;
                let slot = Duration::from_secs_f64(dur / (2 * pairs) as f64);
                let (mut inst, mut min) = (Vec::new(), Vec::new());
                let mut sink = 0u64;
                let mut times: Vec<u64> = Vec::with_capacity(1 << 14);
                for _ in 0..pairs {
                    times.clear();
                    let t0 = Instant::now();
                    while t0.elapsed() < slot {
                        let a = probe::sample::monotonic_ns();
                        sink = sink.wrapping_add(scan(m.ptr, m.len, page, write));
                        times.push(probe::sample::monotonic_ns() - a);
                    }
                    inst.push(times.len() as f64 / t0.elapsed().as_secs_f64());
                    let t0 = Instant::now();
                    let mut n = 0u64;
                    while t0.elapsed() < slot {
                        for _ in 0..16 {
                            sink = sink.wrapping_add(scan(m.ptr, m.len, page, write));
                        }
                        n += 16;
                    }
                    min.push(n as f64 / t0.elapsed().as_secs_f64());
                }
                std::hint::black_box(sink);
                let med = |v: Vec<f64>| record::stats::median(&v).unwrap_or(0.0);
                // Neighbouring windows share conditions: the median of their ratios
                // cancels slow drifts that a ratio of medians would keep.
                let ratios: Vec<f64> = inst.iter().zip(&min).map(|(i, m)| i / m).collect();
                io.reply::<Baseline>(&BaselineDone {
                    instrumented_scans_per_sec: med(inst),
                    minimal_scans_per_sec: med(min),
                    instrumented_vs_minimal: med(ratios),
                });
            }
            Command::Exit(Exit) => break,
        }
    }
    Ok(())
}

mod commands;
pub use commands::*;

#[cfg(test)]
mod tests;
