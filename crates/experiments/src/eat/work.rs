//! `eat`: fill private memory with data of a given compressibility, trim the
//! working set into (compressed) swap, read it back, free it, and time each phase.
//!
//! Reproduces the test application of Mangan's 2016 study of Windows 10 memory
//! compression ("Performance versus Data"). The target runs in a worker process
//! (the pagelab binary in worker mode), placed in a memory cgroup when pagelab may
//! create one. The parent drives the phases over the control pipe, trims the worker
//! from outside when asked (`process_madvise`, or the cgroup), waits for the store
//! to settle, and measures the store.

use sandbox::worker::EventKind;
use crate::kit::store::{Store, store_size};
use sandbox::Sandbox;
use sandbox::cgroup::{Limits, MemCgroup};
use sandbox::error::SandboxError;
use sandbox::worker::{Processes, Request, Spawn, WorkerLink, WorkerSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use workloads::backing::{self, Backing, BackingKind};
use workloads::fill::Pattern;
use workloads::mm;
use workloads::procsnap::{PhaseResult, ProcSnap, phase_between};

/// How the worker's region leaves its working set (`--trim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Trim {
    /// The worker calls madvise(MADV_PAGEOUT) on its own region.
    #[value(name = "self")]
    SelfTrim,
    /// The parent calls process_madvise(MADV_PAGEOUT) on the worker through a pidfd.
    External,
    /// v2 memory.reclaim; v1: lower the group's limit, then restore it.
    Cgroup,
    None,
}
crate::serde_by_name!(Trim, "trim");


#[derive(Debug, Clone)]
pub struct EatConfig {
    pub size: u64,
    pub patterns: Vec<Pattern>,
    pub block: usize,
    pub backing: BackingKind,
    /// One entry per compressor to compare; `None` is the kernel's default.
    pub compressors: Vec<Option<String>>,
    pub trim: Trim,
    pub repeat: u32,
    pub seed: u64,
    /// The pagelab binary, for workers.
    pub exe: PathBuf,
    pub host_floor: Option<u64>,
    /// Upper bound of the settle phase.
    pub settle_max: Duration,
    /// Where a swap file goes when one is needed.
    pub swapfile_dir: PathBuf,
}

pub use crate::eat::results::{EatResult, StoreStats};

use workloads::observe::ExperimentError;
pub use workloads::observe::Observer;

/// Checks the configuration, and the machine as `p` reads it (the host at
/// the command's edge, a fake tree in tests), before anything is changed.
pub fn validate(cfg: &EatConfig, p: &mut probe::Probe) -> Result<(), SandboxError> {
    if cfg.size == 0 {
        return Err(SandboxError::Invalid("--size must be greater than zero".into()));
    }
    let page = probe::environment::page_size();
    if cfg.size < page {
        return Err(SandboxError::Invalid(format!("--size {} is smaller than one page ({page} bytes)", cfg.size)));
    }
    for c in &cfg.compressors {
        backing::validate_with_dir(cfg.backing, c.as_deref(), &cfg.swapfile_dir, p)?;
    }
    if cfg.compressors.is_empty() {
        backing::validate_with_dir(cfg.backing, None, &cfg.swapfile_dir, p)?;
    }
    backing::check_room(cfg.backing, cfg.size, &cfg.swapfile_dir, p)?;
    if cfg.trim == Trim::Cgroup {
        sandbox::privilege::require_admin("--trim cgroup (creating a memory cgroup)", "use --trim self or external")?;
        if p.memory_controller().ok().flatten().is_none() {
            return Err(SandboxError::Unsupported(
                "--trim cgroup needs a memory cgroup controller; none is mounted".into(),
            ));
        }
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    let store = backing::resolve(cfg.backing, p) != BackingKind::None;
    guard.check_plan(planned_bytes(cfg.size, store), "eat", &meminfo)?;
    Ok(())
}

/// What a run takes from the host at most: the worker's region, plus a compressed
/// store that may hold as much again (random data does not compress) and lives
/// outside the worker's cgroup, plus 64 MiB for the worker itself. In u128, so
/// that no size wraps it.
pub fn planned_bytes(size: u64, store: bool) -> u128 {
    size as u128 * if store { 2 } else { 1 } + (64 << 20)
}

fn cgroup_target(cg: &MemCgroup) -> probe::CgroupTarget {
    probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() }
}

/// The worker's faults and memory now; an error when it cannot be read
/// (it is gone, or going): its faults and swap are unknown, not zero.
fn snap_of(m: &probe::Roots, pid: i32) -> Result<ProcSnap, ExperimentError> {
    ProcSnap::read(&mut probe::Probe::new(m.clone()), pid)
        .ok_or_else(|| ExperimentError::Gone(format!("the eat worker (pid {pid}) could not be read in /proc")))
}

/// A worker that could not be read: how it ended, as its link knows it (an
/// OOM kill, a signal), not only that it could not be read.
fn ended(e: ExperimentError, w: &mut dyn WorkerLink) -> ExperimentError {
    match e {
        ExperimentError::Gone(m) => ExperimentError::Worker(format!("{m}: {}", w.failure())),
        e => e,
    }
}

/// The store and the worker now; an error when the worker cannot be read
/// (it is gone): what it swapped is not zero.
fn store_stats(m: &probe::Roots, b: &Backing, pid: i32) -> Result<StoreStats, ExperimentError> {
    let mut p = probe::Probe::new(m.clone());
    let snap = snap_of(m, pid)?;
    let mut s = StoreStats { swapped_bytes: snap.swap_bytes, resident_bytes: snap.anon_bytes, ..Default::default() };
    if let Some(id) = b.zram_id
        && let Some(z) = store_size(&mut p, Store::Zram(id))
    {
        s.orig_data_bytes = z.orig_bytes;
        s.compr_data_bytes = Some(z.compr_bytes);
        s.mem_used_bytes = Some(z.ram_bytes);
        s.same_pages = z.same_pages;
        s.huge_pages = z.huge_pages;
    }
    if let Some(z) = store_size(&mut p, Store::Zswap) {
        s.zswap_bytes = Some(z.ram_bytes);
        s.zswapped_bytes = z.orig_bytes;
    }
    if let Ok(Some(v)) = p.vmstat() {
        s.zswpout_pages = v.get("zswpout");
        s.swpout_zero_pages = v.get("swpout_zero");
    }
    Ok(s)
}

/// The store's memory in use, bytes, for the backing kind.
fn store_used(b: &Backing, s: &StoreStats) -> Option<u64> {
    match b.kind {
        BackingKind::Zram => s.mem_used_bytes,
        BackingKind::Zswap => s.zswap_bytes,
        _ if b.compressor.is_some() => s.zswap_bytes,
        _ => None,
    }
}

struct Run<'a, O: Observer<Entry = EatResult>> {
    cfg: &'a EatConfig,
    obs: &'a mut O,
    stop: fn() -> bool,
    spawn: &'a mut dyn Spawn,
    /// The machine it reads: its sandbox's ([`Sandbox::probe`]; a fake tree in tests).
    machine: probe::Roots,
}

/// What one worker command produced: its phase (if it was one) and its reply.
struct Reply<T> {
    phase: PhaseResult,
    data: T,
}

/// The eat worker's commands (issue 60: each with its reply, as types).
/// None takes an argument: the spec said everything at the start.
macro_rules! units {
    ($($(#[$doc:meta])* $ty:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $ty;
    )*};
}
units! {
    /// memset of a separate region of the size, twice.
    Calibrate;
    /// Map the region (a phase).
    Alloc;
    /// Write the pattern (a phase), then refill, hash and estimate.
    Fill;
    /// MADV_PAGEOUT of the region (a phase).
    SelfTrim;
    /// Read the region back and hash it (a phase).
    Read;
    /// Unmap the region (a phase).
    Free;
    /// The worker ends.
    Exit;
}
sandbox::commands! {
    /// What the eat worker is told, each with its reply.
    pub enum Command {
        Calibrate(Calibrate) -> Calibrated,
        Alloc(Alloc) -> Allocated,
        Fill(Fill) -> Filled,
        Trim(SelfTrim) -> (),
        Read(Read) -> ReadBack,
        Free(Free) -> (),
        Exit(Exit) -> (),
    }
}

/// The worker kind.
pub const WORKER: &str = "eat";

/// The worker's start (`--spec`): what to fill and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub size: u64,
    pub pattern: Pattern,
    pub block: usize,
    pub seed: u64,
}

/// The reply to `calibrate`: memset over a region of the same size, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibrated {
    pub memset_first_touch_seconds: f64,
    pub memset_refill_seconds: f64,
}

/// The reply to `alloc`: where the region lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allocated {
    pub addr: usize,
    pub len: usize,
}

/// The reply to `fill`: the refill's time, the reference hash and the estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filled {
    pub refill_seconds: f64,
    pub hash_written: String,
    pub estimate: crate::eat::results::Estimate,
}

/// The reply to `read`: the hash of what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadBack {
    pub hash_read: String,
}

/// `R`'s reply from its `done` event: a missing field is an error naming the command.
fn reply<R: Request>(v: Value) -> Result<R::Reply, ExperimentError> {
    sandbox::worker::reply::<R>(v).map_err(|e| ExperimentError::Worker(format!("the eat worker: {e}")))
}

/// What one worker's commands returned, in order, with the store around the trim.
struct Drove {
    cal: Calibrated,
    alloc: PhaseResult,
    fill: (PhaseResult, Filled),
    trim: PhaseResult,
    settle: PhaseResult,
    read: (PhaseResult, ReadBack),
    free: PhaseResult,
    before_trim: StoreStats,
    after_trim: StoreStats,
    after_settle: StoreStats,
}

impl<O: Observer<Entry = EatResult>> Run<'_, O> {
    /// Sends a command and waits for its `done` event, forwarding phase events.
    fn command<R: Request>(&mut self, w: &mut dyn WorkerLink, r: &R, timeout: Duration) -> Result<Reply<R::Reply>, ExperimentError> {
        let cmd = sandbox::worker::Commands::label(&r.command());
        // A failed send means the worker is gone: say how it ended, not "broken pipe".
        let sent = sandbox::worker::send(w, r).map_err(|_| ExperimentError::Failed(w.failure()))?;
        let obs = &mut *self.obs;
        let mut phase = PhaseResult::default();
        // A phase_end that cannot be read is not a phase of zeros.
        let mut unread = None;
        let r = w.wait_for(
            sent.want(),
            timeout,
            &mut |ev| {
                if matches!(ev.kind, EventKind::PhaseStart | EventKind::PhaseEnd) {
                    obs.event(&ev.kind.to_string(), &ev.name, ev.t_ns, ev.data.clone());
                    if ev.kind == EventKind::PhaseEnd {
                        match serde_json::from_value(ev.data.clone()) {
                            Ok(p) => phase = p,
                            Err(e) => unread = Some(e.to_string()),
                        }
                    }
                }
            },
            &self.stop,
        );
        if let Some(e) = unread {
            return Err(ExperimentError::Worker(format!("the eat worker's phase_end of {cmd} could not be read: {e}")));
        }
        match r {
            Ok(done) => Ok(Reply { phase, data: reply::<R>(done.data)? }),
            Err(_) if (self.stop)() => Err(ExperimentError::Interrupted),
            Err(f) => Err(ExperimentError::Failed(f)),
        }
    }

    fn parent_phase(
        &mut self,
        name: &str,
        pid: i32,
        f: impl FnOnce() -> Result<(), ExperimentError>,
    ) -> Result<PhaseResult, ExperimentError> {
        let a = snap_of(&self.machine, pid)?;
        self.obs.event("phase_start", name, a.t_ns, Value::Null);
        f()?;
        let b = snap_of(&self.machine, pid)?;
        let r = phase_between(&a, &b);
        self.obs.event("phase_end", name, b.t_ns, serde_json::to_value(r).unwrap_or(Value::Null));
        Ok(r)
    }

    fn one(
        &mut self,
        pattern: Pattern,
        repeat: u32,
        back: &Backing,
        cg: Option<&MemCgroup>,
    ) -> Result<EatResult, ExperimentError> {
        let seed = self.cfg.seed.wrapping_add(repeat as u64 - 1);
        let d = self.drive(pattern, seed, back, cg)?;
        result(self.cfg, pattern, seed, repeat, back, d)
    }

    /// Starts the worker and drives it through calibrate, alloc, fill, trim,
    /// settle, read and free.
    fn drive(
        &mut self,
        pattern: Pattern,
        seed: u64,
        back: &Backing,
        cg: Option<&MemCgroup>,
    ) -> Result<Drove, ExperimentError> {
        let cfg = self.cfg;
        let mut w = self.spawn.spawn(WorkerSpec {
            exe: cfg.exe.clone(),
            args: sandbox::worker::argv_spec(WORKER, &Spec { size: cfg.size, pattern, block: cfg.block, seed }),
            cgroup: cg,
            env: vec![],
            label: format!("eat {pattern}"),
        })?;
        let pid = w.pid();
        self.obs.targets(vec![pid], cg.map(cgroup_target), back.zram_id.into_iter().collect());
        let long = Duration::from_secs(3600);
        let cal = self.command(&mut *w, &Calibrate, long)?.data;
        let alloc = self.command(&mut *w, &Alloc, long)?;
        let at = alloc.data;
        let region = (at.addr, at.len);
        let fill = self.command(&mut *w, &Fill, long)?;
        let fill = (fill.phase, fill.data);
        let m = self.machine.clone();
        let before_trim = store_stats(&m, back, pid).map_err(|e| ended(e, &mut *w))?;
        let trim = match cfg.trim {
            Trim::SelfTrim => self.command(&mut *w, &SelfTrim, long)?.phase,
            Trim::External => self
                .parent_phase("trim", pid, || {
                    let fd = mm::PidFd::open(pid)
                        .map_err(|e| ExperimentError::Worker(format!("pidfd_open({pid}): {e}")))?;
                    mm::process_madvise(&fd, &[region], mm::MADV_PAGEOUT).map_err(|e| {
                        ExperimentError::Worker(format!("process_madvise(MADV_PAGEOUT) on pid {pid}: {e}"))
                    })?;
                    Ok(())
                })
                .map_err(|e| ended(e, &mut *w))?,
            Trim::Cgroup => {
                let cg = cg.ok_or_else(|| ExperimentError::Worker("--trim cgroup without a cgroup".into()))?;
                self.parent_phase("trim", pid, || Ok(cg.reclaim(cfg.size + (16 << 20))?)).map_err(|e| ended(e, &mut *w))?
            }
            Trim::None => self.parent_phase("trim", pid, || Ok(())).map_err(|e| ended(e, &mut *w))?,
        };
        let after_trim = store_stats(&m, back, pid).map_err(|e| ended(e, &mut *w))?;
        let settle = self
            .parent_phase("settle", pid, || settle_store(&m, back, pid, cfg.settle_max))
            .map_err(|e| ended(e, &mut *w))?;
        let after_settle = store_stats(&m, back, pid).map_err(|e| ended(e, &mut *w))?;
        let read = self.command(&mut *w, &Read, long)?;
        let read = (read.phase, read.data);
        let free = self.command(&mut *w, &Free, long)?.phase;
        let _ = sandbox::worker::send(&mut *w, &Exit);
        if let Err(f) = w.finish(Duration::from_secs(10)) {
            return Err(ExperimentError::Failed(f));
        }
        Ok(Drove { cal, alloc: alloc.phase, fill, trim, settle, read, free, before_trim, after_trim, after_settle })
    }
}

/// One repeat's result from what its worker returned.
fn result(
    cfg: &EatConfig,
    pattern: Pattern,
    seed: u64,
    repeat: u32,
    back: &Backing,
    d: Drove,
) -> Result<EatResult, ExperimentError> {
    let Drove { cal, alloc, fill, trim, settle, read, free, before_trim, after_trim, after_settle } = d;
    let page = probe::environment::page_size() as f64;
    let size = cfg.size as f64;
    let trimmed = after_settle.swapped_bytes.saturating_sub(before_trim.swapped_bytes);
    let stored = match (store_used(back, &before_trim), store_used(back, &after_settle)) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let hash_written = fill.1.hash_written.clone();
    let hash_read = read.1.hash_read.clone();
    let gbps = |s: f64| if s > 0.0 { size / s / 1e9 } else { 0.0 };
    let mut notes = Vec::new();
    if !back.has_swap() && cfg.trim != Trim::None {
        notes.push(
                "no swap backs this run: a trim can only drop clean file pages or move nothing; anonymous pages stayed resident"
                    .to_string(),
            );
    }
    if back.has_swap() && cfg.trim != Trim::None && trimmed == 0 {
        // With a store behind it, a trim that moved nothing means the store
        // was not this run's to fill (full, or taken away): no figure of
        // this repeat would mean anything, so the run fails rather than say
        // complete.
        return Err(ExperimentError::Worker(format!(
            "the trim moved nothing of {} into the store ({}): this repeat measured nothing",
            pattern.name(),
            back.swap_areas.join(", ")
        )));
    }
    let trimmed_pages = trimmed as f64 / page;
    let kernel_compr_ratio = match (after_settle.orig_data_bytes, after_settle.compr_data_bytes) {
        (Some(o), Some(c)) if o > 0 => Some(c as f64 / o as f64),
        _ => None,
    };
    let phases: BTreeMap<String, PhaseResult> =
        [("alloc", alloc), ("fill", fill.0), ("trim", trim), ("settle", settle), ("read", read.0), ("free", free)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    Ok(EatResult {
        pattern: pattern.name().into(),
        size_bytes: cfg.size,
        block_bytes: cfg.block,
        seed,
        repeat,
        backing: back.kind,
        compressor: back.compressor.clone(),
        swap_areas: back.swap_areas.clone(),
        trim: crate::kit::names::name(&cfg.trim),
        verified: !hash_written.is_empty() && hash_written == hash_read,
        hash_written,
        hash_read,
        stored_fraction: match stored {
            Some(s) if trimmed > 0 => Some(s as f64 / trimmed as f64),
            _ => None,
        },
        stored_bytes: stored,
        trimmed_bytes: trimmed,
        after_trim,
        after_settle,
        fill_gbps_first_touch: gbps(fill.0.seconds),
        fill_gbps_refill: gbps(fill.1.refill_seconds),
        memset_gbps_first_touch: gbps(cal.memset_first_touch_seconds),
        memset_gbps_refill: gbps(cal.memset_refill_seconds),
        estimated_ratio: fill.1.estimate,
        kernel_compr_ratio,
        trim_us_per_page: (trimmed_pages > 0.0).then(|| trim.seconds * 1e6 / trimmed_pages),
        restore_us_per_page: (trimmed_pages > 0.0).then(|| read.0.seconds * 1e6 / trimmed_pages),
        phases,
        notes,
    })
}

/// Waits until the store stops changing (three equal readings 20 ms apart) and no
/// writeback is in flight, or `max` has passed.
fn settle_store(m: &probe::Roots, b: &Backing, pid: i32, max: Duration) -> Result<(), ExperimentError> {
    if !b.has_swap() {
        return Ok(());
    }
    // Writeback matters only where pages go to a disk (a swap file, the user's swap,
    // zswap writing back); zram is memory, and unrelated file writeback is not ours.
    let disk = matches!(b.kind, BackingKind::Swapfile | BackingKind::Existing | BackingKind::Zswap);
    let t0 = Instant::now();
    let mut last = None;
    let mut same = 0;
    while t0.elapsed() < max {
        let s = store_stats(m, b, pid)?;
        // Unread writeback is not none: the settle then waits to its end.
        let wb = if disk {
            probe::Probe::new(m.clone()).meminfo().ok().flatten().and_then(|m| m.get("Writeback"))
        } else {
            Some(0)
        };
        let key = (s.mem_used_bytes, s.orig_data_bytes, s.zswap_bytes, s.swapped_bytes, wb);
        if Some(key) == last && wb == Some(0) {
            same += 1;
            if same >= 2 {
                return Ok(());
            }
        } else {
            same = 0;
        }
        last = Some(key);
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Runs the experiment: for each compressor, set up the backing in a fresh
/// sandbox, run every pattern `repeat` times, and restore.
pub fn run<O: Observer<Entry = EatResult>>(cfg: &EatConfig, obs: &mut O, stop: fn() -> bool) -> Result<Vec<EatResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut Processes, &|| Sandbox::new("eat"))
}

/// [`run`], its workers started by `spawn` (tests: [`sandbox::worker::Threads`],
/// which needs no root, no process and no cgroup) and each compressor's
/// sandbox made by `sandbox` (tests: one on a fake tree), whose probe is
/// what the run reads.
pub fn run_with<O: Observer<Entry = EatResult>>(
    cfg: &EatConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn Spawn,
    sandbox: &dyn Fn() -> Sandbox,
) -> Result<Vec<EatResult>, ExperimentError> {
    let mut results = Vec::new();
    let compressors = if cfg.compressors.is_empty() { vec![None] } else { cfg.compressors.clone() };
    for comp in &compressors {
        let mut sb = sandbox();
        let back = backing::setup(&mut sb, cfg.backing, comp.as_deref(), cfg.size, &cfg.swapfile_dir)?;
        obs.event("info", "backing", probe::sample::monotonic_ns(), serde_json::to_value(&back).unwrap_or(Value::Null));
        for n in &back.notes {
            obs.note(n);
        }
        if !back.has_swap() && cfg.trim != Trim::None {
            obs.note("no swap backs this run: trimming can only move pages into page cache or nowhere; running anyway");
        }
        // A group to contain the worker, when pagelab may make one: the region, the
        // worker's own pages, and room to spare.
        let cg =
            if spawn.containable()
                && sandbox::privilege::is_root()
                && sb.probe().memory_controller().ok().flatten().is_some()
            {
                let limit = cfg.size + cfg.size / 16 + (64 << 20);
                Some(sb.memory_cgroup("eat", &Limits { max: Some(limit), ..Default::default() })?)
            } else {
                None
            };
        for repeat in 1..=cfg.repeat {
            // ABBA: what one pattern leaves in the store falls on each alike.
            for p in workloads::order::abba(&cfg.patterns, repeat as usize - 1) {
                if stop() {
                    sb.restore()?;
                    return Err(ExperimentError::Interrupted);
                }
                obs.note(&format!(
                    "eat {p} ({}, repeat {repeat}/{}) on {}{}",
                    units::bytes(cfg.size),
                    cfg.repeat,
                    back.kind.name(),
                    back.compressor.as_deref().map(|c| format!(" {c}")).unwrap_or_default()
                ));
                let mut run = Run { cfg, obs, stop, spawn: &mut *spawn, machine: sb.roots().clone() };
                let r = run.one(p, repeat, &back, cg.as_ref())?;
                obs.result(&r)?;
                results.push(r);
            }
        }
        obs.targets(vec![], None, vec![]);
        drop(cg);
        sb.restore()?;
    }
    Ok(results)
}

// ---------------------------------------------------------------------------
// The worker's side.

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// `pagelab __worker eat --spec JSON` ([`Spec`]): obeys the
/// commands calibrate, alloc, fill, trim, read, free, exit. Each command ends with
/// a `done` event named after it; phases also emit phase_start and phase_end.
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let Spec { size, pattern, block, seed } = sandbox::worker::spec_of(WORKER, args)?;
    let size = usize::try_from(size).map_err(|_| format!("the eat worker: {size} bytes do not fit this machine"))?;
    let page = probe::environment::page_size() as usize;
    let mut region: Option<mm::Mapping> = None;
    // Runs `f` as a timed phase with fault and memory deltas.
    fn phase<T>(io: &mut sandbox::worker::child::WorkerIo, name: &str, f: impl FnOnce() -> T) -> Result<T, String> {
        let me = std::process::id() as i32;
        let unread = || "the eat worker could not read its own /proc/self/stat and status".to_string();
        let a = ProcSnap::read(io.probe(), me).ok_or_else(unread)?;
        io.emit(EventKind::PhaseStart, name, Value::Null);
        let v = f();
        let b = ProcSnap::read(io.probe(), me).ok_or_else(unread)?;
        io.emit(EventKind::PhaseEnd, name, serde_json::to_value(phase_between(&a, &b)).unwrap_or(Value::Null));
        Ok(v)
    }
    while let Some(c) = io.command::<Command>() {
        match c? {
            Command::Calibrate(_) => {
                // memset over a separate region of the same size, before the main
                // region exists, so peak memory stays at one region.
                let mut m = mm::Mapping::anon(size, 0).map_err(|e| format!("mmap of {size} bytes: {e}"))?;
                let (_, first) = timed(|| m.as_mut_slice().fill(0x5a));
                let (_, refill) = timed(|| m.as_mut_slice().fill(0xa5));
                std::hint::black_box(m.as_slice()[size / 2]);
                drop(m);
                io.reply::<Calibrate>(&Calibrated { memset_first_touch_seconds: first, memset_refill_seconds: refill });
            }
            Command::Alloc(_) => {
                let m = phase(io, "alloc", || mm::Mapping::anon(size, 0))?
                    .map_err(|e| format!("mmap of {size} bytes: {e}"))?;
                io.reply::<Alloc>(&Allocated { addr: m.ptr as usize, len: m.len });
                region = Some(m);
            }
            Command::Fill(_) => {
                let m = region.as_mut().ok_or("fill before alloc")?;
                phase(io, "fill", || workloads::fill::fill(m.as_mut_slice(), pattern, block, seed))?;
                // Re-fill of resident memory (same data), then the reference hash and
                // the compressibility estimate; none of these is part of a phase.
                let (_, refill) = timed(|| workloads::fill::fill(m.as_mut_slice(), pattern, block, seed));
                let h = workloads::fill::hash(m.as_slice());
                let est = workloads::compress::estimate(m.as_slice(), page);
                io.reply::<Fill>(&Filled { refill_seconds: refill, hash_written: format!("{h:016x}"), estimate: est });
            }
            Command::Trim(_) => {
                let m = region.as_ref().ok_or("trim before alloc")?;
                phase(io, "trim", || m.madvise(mm::MADV_PAGEOUT))?.map_err(|e| format!("madvise(MADV_PAGEOUT): {e}"))?;
                io.reply::<SelfTrim>(&());
            }
            Command::Read(_) => {
                let m = region.as_ref().ok_or("read before alloc")?;
                let h = phase(io, "read", || workloads::fill::hash(m.as_slice()))?;
                io.reply::<Read>(&ReadBack { hash_read: format!("{h:016x}") });
            }
            Command::Free(_) => {
                phase(io, "free", || region = None)?;
                io.reply::<Free>(&());
            }
            Command::Exit(_) => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
