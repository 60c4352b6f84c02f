//! `eat`: fill private memory with data of a given compressibility, trim the
//! working set into (compressed) swap, read it back, free it, and time each phase.
//!
//! Reproduces the test application of Mangan's 2016 study of Windows 10 memory
//! compression ("Performance versus Data"). The target runs in a worker process
//! (the pagelab binary in worker mode), placed in a memory cgroup when pagelab may
//! create one. The parent drives the phases over the control pipe, trims the worker
//! from outside when asked (`process_madvise`, or the cgroup), waits for the store
//! to settle, and measures the store.

use crate::backing::{self, Backing, BackingKind};
use crate::fill::Pattern;
use crate::mm;
use crate::procsnap::{PhaseResult, ProcSnap, phase_between};
use sandbox::Sandbox;
use sandbox::cgroup::{Limits, MemCgroup};
use sandbox::error::SandboxError;
use sandbox::worker::{Worker, WorkerSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trim {
    /// The worker calls madvise(MADV_PAGEOUT) on its own region.
    #[serde(rename = "self")]
    SelfTrim,
    /// The parent calls process_madvise(MADV_PAGEOUT) on the worker through a pidfd.
    External,
    /// v2 memory.reclaim; v1: lower the group's limit, then restore it.
    Cgroup,
    None,
}

impl Trim {
    pub const NAMES: &'static str = "self, external, cgroup, none";
    pub fn parse(s: &str) -> Option<Trim> {
        Some(match s {
            "self" => Trim::SelfTrim,
            "external" => Trim::External,
            "cgroup" => Trim::Cgroup,
            "none" => Trim::None,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Trim::SelfTrim => "self",
            Trim::External => "external",
            Trim::Cgroup => "cgroup",
            Trim::None => "none",
        }
    }
}

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

pub use record::results::eat::{EatResult, StoreStats};

use crate::observe::ExperimentError;
pub use crate::observe::Observer;

/// Checks the configuration and the machine before anything is changed.
pub fn validate(cfg: &EatConfig) -> Result<(), SandboxError> {
    if cfg.size == 0 {
        return Err(SandboxError::Invalid("--size must be greater than zero".into()));
    }
    let page = probe::environment::page_size();
    if cfg.size < page {
        return Err(SandboxError::Invalid(format!("--size {} is smaller than one page ({page} bytes)", cfg.size)));
    }
    for c in &cfg.compressors {
        backing::validate_with_dir(cfg.backing, c.as_deref(), &cfg.swapfile_dir)?;
    }
    if cfg.compressors.is_empty() {
        backing::validate_with_dir(cfg.backing, None, &cfg.swapfile_dir)?;
    }
    if cfg.trim == Trim::Cgroup {
        sandbox::privilege::require_admin("--trim cgroup (creating a memory cgroup)", "use --trim self or external")?;
        if probe::Probe::default().memory_controller().ok().flatten().is_none() {
            return Err(SandboxError::Unsupported(
                "--trim cgroup needs a memory cgroup controller; none is mounted".into(),
            ));
        }
    }
    let meminfo = probe::Probe::default().meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    let store = backing::resolve(cfg.backing) != BackingKind::None;
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

fn store_stats(b: &Backing, pid: i32) -> StoreStats {
    let mut p = probe::Probe::default();
    let snap = ProcSnap::of(pid);
    let mut s = StoreStats { swapped_bytes: snap.swap_bytes, resident_bytes: snap.anon_bytes, ..Default::default() };
    if let Some(id) = b.zram_id
        && let Ok(Some(m)) = p.zram_mm_stat(id)
    {
        s.orig_data_bytes = Some(m.orig_data_size);
        s.compr_data_bytes = Some(m.compr_data_size);
        s.mem_used_bytes = Some(m.mem_used_total);
        s.same_pages = Some(m.same_pages);
        s.huge_pages = m.huge_pages;
    }
    if let Ok(Some(mi)) = p.meminfo() {
        s.zswap_bytes = mi.get("Zswap");
        s.zswapped_bytes = mi.get("Zswapped");
    }
    if let Ok(Some(v)) = p.vmstat() {
        s.zswpout_pages = v.get("zswpout");
        s.swpout_zero_pages = v.get("swpout_zero");
    }
    s
}

/// The store's memory in use, bytes, for the backing kind.
fn store_used(b: &Backing, s: &StoreStats) -> Option<u64> {
    match b.kind.as_str() {
        "zram" => s.mem_used_bytes,
        "zswap" => s.zswap_bytes,
        _ if b.compressor.is_some() => s.zswap_bytes,
        _ => None,
    }
}

struct Run<'a, O: Observer> {
    cfg: &'a EatConfig,
    obs: &'a mut O,
    stop: fn() -> bool,
}

/// What one worker command produced: its phase (if it was one) and its `done` data.
struct Reply {
    phase: PhaseResult,
    data: Value,
}

impl<O: Observer> Run<'_, O> {
    /// Sends a command and waits for its `done` event, forwarding phase events.
    fn command(&mut self, w: &mut Worker, cmd: &str, timeout: Duration) -> Result<Reply, ExperimentError> {
        // A failed send means the worker is gone: say how it ended, not "broken pipe".
        w.send(cmd, Value::Null).map_err(|_| ExperimentError::Worker(w.failure().to_string()))?;
        let obs = &mut *self.obs;
        let mut phase = PhaseResult::default();
        let r = w.wait_for(
            "done",
            Some(cmd),
            timeout,
            |ev| {
                if matches!(ev.kind.as_str(), "phase_start" | "phase_end") {
                    obs.event(&ev.kind, &ev.name, ev.t_ns, ev.data.clone());
                    if ev.kind == "phase_end" {
                        phase = serde_json::from_value(ev.data.clone()).unwrap_or_default();
                    }
                }
            },
            self.stop,
        );
        match r {
            Ok(done) => Ok(Reply { phase, data: done.data }),
            Err(_) if (self.stop)() => Err(ExperimentError::Interrupted),
            Err(f) => Err(ExperimentError::Worker(f.to_string())),
        }
    }

    fn parent_phase(
        &mut self,
        name: &str,
        pid: i32,
        f: impl FnOnce() -> Result<(), ExperimentError>,
    ) -> Result<PhaseResult, ExperimentError> {
        let a = ProcSnap::of(pid);
        self.obs.event("phase_start", name, a.t_ns, Value::Null);
        f()?;
        let b = ProcSnap::of(pid);
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
        let cfg = self.cfg;
        let seed = cfg.seed.wrapping_add(repeat as u64 - 1);
        let (size_s, block_s, seed_s) = (cfg.size.to_string(), cfg.block.to_string(), seed.to_string());
        let mut w = Worker::spawn(WorkerSpec {
            exe: cfg.exe.clone(),
            args: [
                "__worker",
                "eat",
                "--size",
                &size_s,
                "--pattern",
                pattern.name(),
                "--block",
                &block_s,
                "--seed",
                &seed_s,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            cgroup: cg,
            env: vec![],
            label: format!("eat {pattern}"),
        })?;
        let pid = w.pid;
        self.obs.targets(vec![pid], cg.map(cgroup_target), back.zram_id.into_iter().collect());
        let long = Duration::from_secs(3600);
        let cal = self.command(&mut w, "calibrate", long)?.data;
        let alloc = self.command(&mut w, "alloc", long)?;
        let region =
            (alloc.data["addr"].as_u64().unwrap_or(0) as usize, alloc.data["len"].as_u64().unwrap_or(0) as usize);
        let fill = self.command(&mut w, "fill", long)?;
        let before_trim = store_stats(back, pid);
        let trim = match cfg.trim {
            Trim::SelfTrim => self.command(&mut w, "trim", long)?.phase,
            Trim::External => self.parent_phase("trim", pid, || {
                let fd =
                    mm::PidFd::open(pid).map_err(|e| ExperimentError::Worker(format!("pidfd_open({pid}): {e}")))?;
                mm::process_madvise(&fd, &[region], mm::MADV_PAGEOUT)
                    .map_err(|e| ExperimentError::Worker(format!("process_madvise(MADV_PAGEOUT) on pid {pid}: {e}")))?;
                Ok(())
            })?,
            Trim::Cgroup => {
                let cg = cg.ok_or_else(|| ExperimentError::Worker("--trim cgroup without a cgroup".into()))?;
                self.parent_phase("trim", pid, || Ok(cg.reclaim(cfg.size + (16 << 20))?))?
            }
            Trim::None => self.parent_phase("trim", pid, || Ok(()))?,
        };
        let after_trim = store_stats(back, pid);
        let settle = self.parent_phase("settle", pid, || {
            settle_store(back, pid, cfg.settle_max);
            Ok(())
        })?;
        let after_settle = store_stats(back, pid);
        let read = self.command(&mut w, "read", long)?;
        let free = self.command(&mut w, "free", long)?;
        let _ = w.send("exit", Value::Null);
        if let Err(f) = w.finish(Duration::from_secs(10)) {
            return Err(ExperimentError::Worker(f.to_string()));
        }

        let page = probe::environment::page_size() as f64;
        let size = cfg.size as f64;
        let trimmed = after_settle.swapped_bytes.saturating_sub(before_trim.swapped_bytes);
        let stored = match (store_used(back, &before_trim), store_used(back, &after_settle)) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        let hash_written = fill.data["hash_written"].as_str().unwrap_or("").to_string();
        let hash_read = read.data["hash_read"].as_str().unwrap_or("").to_string();
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
        let phases: BTreeMap<String, PhaseResult> = [
            ("alloc", alloc.phase),
            ("fill", fill.phase),
            ("trim", trim),
            ("settle", settle),
            ("read", read.phase),
            ("free", free.phase),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Ok(EatResult {
            pattern: pattern.name().into(),
            size_bytes: cfg.size,
            block_bytes: cfg.block,
            seed,
            repeat,
            backing: back.kind.clone(),
            compressor: back.compressor.clone(),
            swap_areas: back.swap_areas.clone(),
            trim: cfg.trim.name().into(),
            verified: !hash_written.is_empty() && hash_written == hash_read,
            hash_written,
            hash_read,
            stored_fraction: match stored {
                Some(s) if trimmed > 0 => Some(s as f64 / trimmed as f64),
                _ => None,
            },
            stored_bytes: stored.unwrap_or(0),
            trimmed_bytes: trimmed,
            after_trim,
            after_settle,
            fill_gbps_first_touch: gbps(fill.phase.seconds),
            fill_gbps_refill: gbps(fill.data["refill_seconds"].as_f64().unwrap_or(0.0)),
            memset_gbps_first_touch: gbps(cal["memset_first_touch_seconds"].as_f64().unwrap_or(0.0)),
            memset_gbps_refill: gbps(cal["memset_refill_seconds"].as_f64().unwrap_or(0.0)),
            estimated_ratio: serde_json::from_value(fill.data["estimate"].clone()).unwrap_or_default(),
            kernel_compr_ratio,
            trim_us_per_page: (trimmed_pages > 0.0).then(|| trim.seconds * 1e6 / trimmed_pages),
            restore_us_per_page: (trimmed_pages > 0.0).then(|| read.phase.seconds * 1e6 / trimmed_pages),
            phases,
            notes,
        })
    }
}

/// Waits until the store stops changing (three equal readings 20 ms apart) and no
/// writeback is in flight, or `max` has passed.
fn settle_store(b: &Backing, pid: i32, max: Duration) {
    if !b.has_swap() {
        return;
    }
    // Writeback matters only where pages go to a disk (a swap file, the user's swap,
    // zswap writing back); zram is memory, and unrelated file writeback is not ours.
    let disk = matches!(b.kind.as_str(), "swapfile" | "existing" | "zswap");
    let t0 = Instant::now();
    let mut last = None;
    let mut same = 0;
    while t0.elapsed() < max {
        let s = store_stats(b, pid);
        let wb = if disk {
            probe::Probe::default().meminfo().ok().flatten().and_then(|m| m.get("Writeback")).unwrap_or(0)
        } else {
            0
        };
        let key = (s.mem_used_bytes, s.orig_data_bytes, s.zswap_bytes, s.swapped_bytes, wb);
        if Some(key) == last && wb == 0 {
            same += 1;
            if same >= 2 {
                return;
            }
        } else {
            same = 0;
        }
        last = Some(key);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the experiment: for each compressor, set up the backing in a fresh
/// sandbox, run every pattern `repeat` times, and restore.
pub fn run<O: Observer>(cfg: &EatConfig, obs: &mut O, stop: fn() -> bool) -> Result<Vec<EatResult>, ExperimentError> {
    let mut results = Vec::new();
    let compressors = if cfg.compressors.is_empty() { vec![None] } else { cfg.compressors.clone() };
    for comp in &compressors {
        let mut sb = Sandbox::new("eat");
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
            if sandbox::privilege::is_root() && probe::Probe::default().memory_controller().ok().flatten().is_some() {
                let limit = cfg.size + cfg.size / 16 + (64 << 20);
                Some(sb.memory_cgroup("eat", &Limits { max: Some(limit), ..Default::default() })?)
            } else {
                None
            };
        for repeat in 1..=cfg.repeat {
            // ABBA: what one pattern leaves in the store falls on each alike.
            for p in crate::order::abba(&cfg.patterns, repeat as usize - 1) {
                if stop() {
                    sb.restore()?;
                    return Err(ExperimentError::Interrupted);
                }
                obs.note(&format!(
                    "eat {p} ({}, repeat {repeat}/{}) on {}{}",
                    fmt_size(cfg.size),
                    cfg.repeat,
                    back.kind,
                    back.compressor.as_deref().map(|c| format!(" {c}")).unwrap_or_default()
                ));
                let mut run = Run { cfg, obs, stop };
                let r = run.one(p, repeat, &back, cg.as_ref())?;
                obs.result(serde_json::to_value(&r).unwrap_or(Value::Null));
                results.push(r);
            }
        }
        obs.targets(vec![], None, vec![]);
        drop(cg);
        sb.restore()?;
    }
    Ok(results)
}

fn fmt_size(b: u64) -> String {
    if b >= 1 << 30 && b % (1 << 30) == 0 { format!("{} GiB", b >> 30) } else { format!("{} MiB", b >> 20) }
}

// ---------------------------------------------------------------------------
// The worker's side.

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// `pagelab __worker eat --size N --pattern P --block B --seed S`: obeys the
/// commands calibrate, alloc, fill, trim, read, free, exit. Each command ends with
/// a `done` event named after it; phases also emit phase_start and phase_end.
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let size: usize = arg(args, "--size").and_then(|v| v.parse().ok()).ok_or("eat worker needs --size")?;
    let pattern = arg(args, "--pattern").and_then(Pattern::parse).ok_or("eat worker needs --pattern")?;
    let block: usize = arg(args, "--block").and_then(|v| v.parse().ok()).unwrap_or(20);
    let seed: u64 = arg(args, "--seed").and_then(|v| v.parse().ok()).unwrap_or(1);
    let page = probe::environment::page_size() as usize;
    let mut region: Option<mm::Mapping> = None;
    // Runs `f` as a timed phase with fault and memory deltas.
    fn phase<T>(io: &mut sandbox::worker::child::WorkerIo, name: &str, f: impl FnOnce() -> T) -> T {
        let a = ProcSnap::own();
        io.emit("phase_start", name, Value::Null);
        let v = f();
        let b = ProcSnap::own();
        io.emit("phase_end", name, serde_json::to_value(phase_between(&a, &b)).unwrap_or(Value::Null));
        v
    }
    while let Some(c) = io.command() {
        let done = match c.cmd.as_str() {
            "calibrate" => {
                // memset over a separate region of the same size, before the main
                // region exists, so peak memory stays at one region.
                let mut m = mm::Mapping::anon(size, 0).map_err(|e| format!("mmap of {size} bytes: {e}"))?;
                let (_, first) = timed(|| m.as_mut_slice().fill(0x5a));
                let (_, refill) = timed(|| m.as_mut_slice().fill(0xa5));
                std::hint::black_box(m.as_slice()[size / 2]);
                drop(m);
                json!({"memset_first_touch_seconds": first, "memset_refill_seconds": refill})
            }
            "alloc" => {
                let m = phase(io, "alloc", || mm::Mapping::anon(size, 0))
                    .map_err(|e| format!("mmap of {size} bytes: {e}"))?;
                let v = json!({"addr": m.ptr as usize, "len": m.len});
                region = Some(m);
                v
            }
            "fill" => {
                let m = region.as_mut().ok_or("fill before alloc")?;
                phase(io, "fill", || crate::fill::fill(m.as_mut_slice(), pattern, block, seed));
                // Re-fill of resident memory (same data), then the reference hash and
                // the compressibility estimate; none of these is part of a phase.
                let (_, refill) = timed(|| crate::fill::fill(m.as_mut_slice(), pattern, block, seed));
                let h = crate::fill::hash(m.as_slice());
                let est = crate::compress::estimate(m.as_slice(), page);
                json!({"refill_seconds": refill, "hash_written": format!("{h:016x}"), "estimate": est})
            }
            "trim" => {
                let m = region.as_ref().ok_or("trim before alloc")?;
                phase(io, "trim", || m.madvise(mm::MADV_PAGEOUT)).map_err(|e| format!("madvise(MADV_PAGEOUT): {e}"))?;
                Value::Null
            }
            "read" => {
                let m = region.as_ref().ok_or("read before alloc")?;
                let h = phase(io, "read", || crate::fill::hash(m.as_slice()));
                json!({"hash_read": format!("{h:016x}")})
            }
            "free" => {
                phase(io, "free", || region = None);
                Value::Null
            }
            "exit" => break,
            other => return Err(format!("unknown command '{other}'")),
        };
        io.emit("done", &c.cmd, done);
    }
    Ok(())
}
