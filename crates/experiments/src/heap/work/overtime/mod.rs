//! `heap --over-time`: what allocators keep, give back and waste over time.
//!
//! Each worker runs one arm (an allocator, or an allocator with one documented
//! memory setting changed) through four phases (see [`phases`]): grow to a live
//! size L, churn at L, shrink to a scattered tenth, idle with no calls. The
//! worker samples its own anonymous RSS (and, as root, its memory cgroup's
//! charge) all along, and folds the samples into figures ([`fold`]): peak,
//! steady ÷ live, right after shrink, after idle, and the half-life of what
//! idle gave back. The arms of a repeat run side by side, in ABBA order.

pub mod fold;
pub mod phases;

use sandbox::worker::{EventKind, Want};
use super::alloc::Allocator;
use crate::heap::results::{OverTimeResult, OverTimeRun};
use crate::kit::store::{Store, StoreSize, store_size};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use workloads::observe::{ExperimentError, Observer};

/// The allocation pattern of the grow and churn phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pattern {
    /// 16 B – 1 KiB, log-uniform: the many small objects of a server.
    Small,
    /// Mostly small, with 8 % of 4 – 128 KiB and 2 % of 128 KiB – 2 MiB:
    /// across glibc's mmap threshold (128 KiB, raised as large blocks are freed).
    Mixed,
    /// Small objects freed by the next thread (producer → consumer).
    CrossThread,
    /// Larson's server: small objects, and every 10 000 allocations each
    /// thread's table passes to the next thread, which frees what others allocated.
    Larson,
}

crate::serde_by_name!(Pattern, "pattern");

impl Pattern {
    pub fn name(self) -> String {
        crate::kit::names::name(&self)
    }

    pub fn parse(s: &str) -> Result<Pattern, String> {
        crate::kit::names::parse("pattern", s.trim())
    }

    /// The fewest threads it means anything with.
    pub fn min_threads(self) -> u32 {
        if self == Pattern::CrossThread { 2 } else { 1 }
    }

    /// (share of objects, smallest, largest size) of its log-uniform bands.
    fn bands(self) -> &'static [(f64, f64, f64)] {
        match self {
            Pattern::Mixed => &[(0.90, 16.0, 4096.0), (0.08, 4096.0, 131072.0), (0.02, 131072.0, 2097152.0)],
            _ => &[(1.0, 16.0, 1024.0)],
        }
    }

    /// Mean object size, bytes.
    pub fn mean_size(self) -> f64 {
        self.bands().iter().map(|&(w, a, b)| w * (b - a) / (b / a).ln()).sum()
    }

    /// A size drawn from the pattern's bands.
    pub(crate) fn size(self, rng: &mut super::script::Rng) -> usize {
        let unit = |r: &mut super::script::Rng| (r.next() >> 11) as f64 / (1u64 << 53) as f64;
        let mut u = unit(rng);
        let bands = self.bands();
        let mut band = bands[bands.len() - 1];
        for &b in bands {
            if u < b.0 {
                band = b;
                break;
            }
            u -= b.0;
        }
        let (a, b) = (band.1, band.2);
        ((a.ln() + unit(rng) * (b / a).ln()).exp() as usize).max(1)
    }
}

/// A call the arm makes right after shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// glibc's malloc_trim(0): gives back free memory at the top of the heap
    /// and whole free pages inside it.
    MallocTrim,
    /// mimalloc's mi_collect(true).
    MiCollect,
}

/// One setting changed: an environment variable the allocator reads at start,
/// or a call after shrink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// As given, without the allocator: `MALLOC_ARENA_MAX=1`, `malloc_trim`, `dirty_decay_ms:0`.
    pub text: String,
    pub env: Option<(String, String)>,
    pub call: Option<Call>,
}

pub const KNOB_FORMS: &str = "glibc:malloc_trim, glibc:MALLOC_ARENA_MAX=N, glibc:MALLOC_TRIM_THRESHOLD_=N, \
glibc:MALLOC_MMAP_THRESHOLD_=N, glibc:MALLOC_TOP_PAD_=N, mimalloc:mi_collect, mimalloc:MIMALLOC_NAME=N \
(e.g. MIMALLOC_PURGE_DELAY=0), jemalloc:KEY:VALUE (KEY dirty_decay_ms, muzzy_decay_ms, background_thread or narenas)";

const GLIBC_ENV: [&str; 5] =
    ["MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"];
const JEMALLOC_KEYS: [&str; 4] = ["dirty_decay_ms", "muzzy_decay_ms", "background_thread", "narenas"];

/// An arm: an allocator, with or without one knob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    pub allocator: Allocator,
    pub knob: Option<Knob>,
}

impl Arm {
    /// `glibc`, `glibc+malloc_trim`, `jemalloc+dirty_decay_ms:0`.
    pub fn label(&self) -> String {
        match &self.knob {
            Some(k) => format!("{}+{}", self.allocator.name(), k.text),
            None => self.allocator.name(),
        }
    }

    /// Parses `ALLOC:SETTING` (see [`KNOB_FORMS`]).
    pub fn parse_knob(s: &str) -> Result<Arm, String> {
        let bad = |why: &str| format!("--knobs {s}: {why} (expected {KNOB_FORMS})");
        let (a, setting) = s.trim().split_once(':').ok_or_else(|| bad("no allocator"))?;
        let int = |v: &str, neg: bool| {
            let ok = v.parse::<i64>().is_ok_and(|n| neg || n >= 0);
            if ok { Ok(()) } else { Err(bad(&format!("'{v}' is not a whole number"))) }
        };
        let (allocator, knob) = match a {
            "glibc" if setting == "malloc_trim" => {
                (Allocator::Glibc, Knob { text: setting.into(), env: None, call: Some(Call::MallocTrim) })
            }
            "glibc" => {
                let (k, v) = setting.split_once('=').ok_or_else(|| bad("no value"))?;
                if !GLIBC_ENV.contains(&k) {
                    return Err(bad(&format!("glibc has no setting '{k}' here")));
                }
                int(v, false)?;
                (Allocator::Glibc, Knob { text: setting.into(), env: Some((k.into(), v.into())), call: None })
            }
            "mimalloc" if setting == "mi_collect" => {
                (Allocator::Mimalloc, Knob { text: setting.into(), env: None, call: Some(Call::MiCollect) })
            }
            "mimalloc" => {
                let (k, v) = setting.split_once('=').ok_or_else(|| bad("no value"))?;
                let name_ok = k.strip_prefix("MIMALLOC_").is_some_and(|n| {
                    !n.is_empty() && n.bytes().all(|c| c.is_ascii_uppercase() || c == b'_' || c.is_ascii_digit())
                });
                if !name_ok {
                    return Err(bad(&format!("'{k}' is not a MIMALLOC_ setting")));
                }
                int(v, true)?;
                (Allocator::Mimalloc, Knob { text: setting.into(), env: Some((k.into(), v.into())), call: None })
            }
            "jemalloc" => {
                let (k, v) = setting.split_once(':').ok_or_else(|| bad("no value"))?;
                if !JEMALLOC_KEYS.contains(&k) {
                    return Err(bad(&format!("jemalloc has no setting '{k}' here")));
                }
                if k == "background_thread" {
                    if v != "true" && v != "false" {
                        return Err(bad("background_thread is true or false"));
                    }
                } else {
                    int(v, k != "narenas")?;
                }
                // The linked jemalloc is prefixed (_rjem_), and so is the
                // variable it reads its options from.
                let env = Some(("_RJEM_MALLOC_CONF".to_string(), setting.to_string()));
                (Allocator::Jemalloc, Knob { text: setting.into(), env, call: None })
            }
            _ => return Err(bad(&format!("'{a}' takes no knobs here"))),
        };
        Ok(Arm { allocator, knob: Some(knob) })
    }
}

/// What the parent tells a worker: one arm, pattern and thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// glibc, mimalloc, jemalloc, or preload (plain malloc from LD_PRELOAD).
    pub allocator: String,
    pub pattern: Pattern,
    pub threads: u32,
    pub live_bytes: u64,
    pub churn_ms: u64,
    pub idle_ms: u64,
    /// The share of the objects shrink frees, 0 to 1.
    pub shrink_frees: f64,
    pub sample_ms: u64,
    pub seed: u64,
    pub repeat: u32,
    pub after_shrink: Option<Call>,
    /// The run's cgroup's charge file (memory.current or memory.usage_in_bytes).
    pub charge_file: Option<PathBuf>,
    /// After idle, ask the parent to squeeze the cgroup, then regrow.
    pub pressure: bool,
}

/// glibc's environment name for a fixed mmap threshold (mallopt's M_MMAP_THRESHOLD).
pub const GLIBC_MMAP_THRESHOLD: &str = "MALLOC_MMAP_THRESHOLD_";

/// The worker's request to be squeezed (event `squeeze`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqueezeAsk {
    /// The cgroup's charge before the first allocation.
    pub base_charge: Option<u64>,
    pub kept_bytes: u64,
    /// Anonymous RSS now.
    pub rss_bytes: u64,
}

/// The parent's answer (command `squeezed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Squeezed {
    pub limit_bytes: u64,
    pub swapped_bytes: u64,
    pub stored_bytes: Option<u64>,
    pub compressed_bytes: Option<u64>,
}

sandbox::commands! {
    /// What the heap-over-time worker is told: the parent's answer to its
    /// squeeze (the worker goes on; its report is the run's `done`).
    pub enum Command {
        Squeezed(Squeezed) -> (),
    }
}

/// One reading of the sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    pub t_ns: u64,
    /// Anonymous RSS, bytes.
    pub rss: u64,
    pub charge: Option<u64>,
}

/// The plan of `heap --over-time`.
#[derive(Debug, Clone)]
pub struct OverTimeConfig {
    pub threads: Vec<u32>,
    pub arms: Vec<Arm>,
    pub patterns: Vec<Pattern>,
    pub live_bytes: u64,
    pub churn: Duration,
    pub idle: Duration,
    /// The share of the objects shrink frees (0 to 1; 0.9 by default).
    pub shrink_frees: f64,
    /// Every glibc arm's fixed mmap threshold (`--glibc-mmap-threshold`).
    pub glibc_mmap_threshold: Option<u64>,
    pub repeat: u32,
    pub sample: Duration,
    pub seed: u64,
    pub exe: PathBuf,
    pub host_floor: Option<u64>,
    /// Each worker in a memory cgroup of its own, for its charge (root).
    pub charge: bool,
    /// Squeeze each worker's cgroup after idle, with zram behind it (root).
    pub pressure: bool,
}

impl OverTimeConfig {
    /// The record's view of the plan.
    pub fn record(&self) -> crate::heap::results::OverTimeConfig {
        crate::heap::results::OverTimeConfig {
            threads: self.threads.clone(),
            arms: self.arms.iter().map(Arm::label).collect(),
            patterns: self.patterns.iter().map(|p| p.name()).collect(),
            live_bytes: self.live_bytes,
            churn_s: self.churn.as_secs_f64(),
            idle_s: self.idle.as_secs_f64(),
            shrink_frees: self.shrink_frees,
            glibc_mmap_threshold: self.glibc_mmap_threshold,
            repeat: self.repeat,
            sample_ms: self.sample.as_millis() as u64,
            charge: self.charge,
            pressure: self.pressure,
            store: self.pressure.then(|| "zram".to_string()),
        }
    }

    /// Seconds the plan should take: each worker's phases plus its start and grow.
    pub fn expect_s(&self) -> f64 {
        let runs = self.runs().len() as f64;
        let grow = 1.0 + self.live_bytes as f64 / 1e9;
        runs * (self.churn.as_secs_f64() + self.idle.as_secs_f64() + grow)
    }

    /// Every worker in order: (threads, pattern, repeat, arm index); the arms
    /// of a repeat side by side, ABBA.
    pub fn runs(&self) -> Vec<(u32, Pattern, u32, usize)> {
        let mut v = Vec::new();
        for &t in &self.threads {
            for &p in self.patterns.iter().filter(|p| t >= p.min_threads()) {
                for rep in 0..self.repeat {
                    let order = workloads::order::abba(&(0..self.arms.len()).collect::<Vec<_>>(), rep as usize);
                    v.extend(order.into_iter().map(|k| (t, p, rep + 1, k)));
                }
            }
        }
        v
    }
}

pub fn validate(cfg: &OverTimeConfig, p: &mut probe::Probe) -> Result<(), sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    if cfg.arms.is_empty() {
        return Err(Invalid(format!(
            "--allocators and --knobs give no arm: expected {}",
            super::alloc::ALLOCATOR_FORMS
        )));
    }
    if cfg.live_bytes < (1 << 20) {
        return Err(Invalid(format!("--live {}: expected at least 1MiB, e.g. 256MiB", cfg.live_bytes)));
    }
    if cfg.threads.iter().all(|&t| cfg.patterns.iter().all(|p| t < p.min_threads())) {
        return Err(Invalid(
            "--patterns cross-thread needs at least 2 threads: add a count to --over-time-threads, e.g. 1,4".into(),
        ));
    }
    if cfg.pressure {
        sandbox::privilege::require_admin("--pressure (a memory cgroup and zram)", "run without --pressure")?;
        if p.memory_controller().ok().flatten().is_none() {
            return Err(sandbox::SandboxError::Unsupported(
                "--pressure needs a memory cgroup controller; none is mounted".into(),
            ));
        }
        workloads::backing::validate(workloads::backing::BackingKind::Zram, None, p)?;
    }
    if cfg.sample.is_zero() || cfg.sample > Duration::from_secs(10) {
        return Err(Invalid("--sample-every: expected 1ms to 10s, e.g. 50ms".into()));
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    // The live set, the allocators' overhead on it (up to 2× for the mixed
    // sizes), the tables, and the worker itself.
    guard.check_plan(3 * cfg.live_bytes as u128 + (128 << 20), "heap --over-time", &meminfo)?;
    Ok(())
}

/// Runs every worker of the plan; returns one result per arm × pattern × threads.
pub fn run<O: Observer<Entry = crate::heap::results::Entry>>(
    cfg: &OverTimeConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<OverTimeResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut sandbox::worker::Processes, &|| sandbox::Sandbox::new("heap"))
}

/// [`run`], its workers started by `spawn` (processes, or in tests threads
/// of this process) and its groups and store made by the sandbox `sandbox`
/// gives (in tests, one over a fake tree).
pub fn run_with<O: Observer<Entry = crate::heap::results::Entry>>(
    cfg: &OverTimeConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
    sandbox: &dyn Fn() -> sandbox::Sandbox,
) -> Result<Vec<OverTimeResult>, ExperimentError> {
    if (cfg.charge || cfg.pressure) && !spawn.containable() {
        return Err(ExperimentError::Worker(
            "a worker that cannot be placed in a cgroup cannot be charged or squeezed".into(),
        ));
    }
    for &t in &cfg.threads {
        for p in cfg.patterns.iter().filter(|p| t < p.min_threads()) {
            obs.note(&format!("pattern {} needs at least {} threads: not run at {t}", p.name(), p.min_threads()));
        }
    }
    let plan = cfg.runs();
    let mut sb = sandbox();
    let zram = if cfg.pressure {
        // Room for everything a worker holds at its peak.
        let b = workloads::backing::setup(
            &mut sb,
            workloads::backing::BackingKind::Zram,
            None,
            3 * cfg.live_bytes + (64 << 20),
            std::path::Path::new("/var/tmp"),
        )?;
        b.notes.iter().for_each(|n| obs.note(n));
        b.zram_id
    } else {
        None
    };
    let mut got: Vec<((u32, Pattern, usize), OverTimeRun)> = Vec::new();
    for (done, &(t, p, rep, k)) in plan.iter().enumerate() {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        let arm = &cfg.arms[k];
        let label = format!("heap over time {} {} ×{t}, repeat {rep}/{}", arm.label(), p.name(), cfg.repeat);
        let r = one(cfg, &mut sb, &mut *spawn, zram, arm, p, t, rep, &label, obs, stop)?;
        obs.note(&format!(
            "[{}/{}] {label}: peak {:.0} MiB, steady/live {:.2}, after shrink {:.0} MiB, after idle {:.0} MiB, half-life {}",
            done + 1,
            plan.len(),
            units::mib(r.peak_rss_bytes),
            r.steady_rss_bytes as f64 / r.live_bytes.max(1) as f64,
            units::mib(r.after_shrink_rss_bytes),
            units::mib(r.after_idle_rss_bytes),
            r.half_life_s.map_or("never".into(), |h| format!("{h:.2} s")),
        ));
        got.push(((t, p, k), r));
    }
    obs.targets(vec![], None, vec![]);
    sb.restore().map_err(ExperimentError::from)?;
    let mut out = Vec::new();
    for &t in &cfg.threads {
        for &p in cfg.patterns.iter().filter(|p| t >= p.min_threads()) {
            for (k, arm) in cfg.arms.iter().enumerate() {
                let runs: Vec<OverTimeRun> =
                    got.iter().filter(|(key, _)| *key == (t, p, k)).map(|(_, r)| r.clone()).collect();
                let r = fold::aggregate(arm, p, t, cfg, runs);
                obs.result(&crate::heap::results::Entry {
                    over_time: Some(r.clone()),
                    ..Default::default()
                })?;
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// One worker: spawned (in its own cgroup as root), waited for, its report parsed.
#[allow(clippy::too_many_arguments)]
fn one<O: Observer<Entry = crate::heap::results::Entry>>(
    cfg: &OverTimeConfig,
    sb: &mut sandbox::Sandbox,
    spawn: &mut dyn sandbox::worker::Spawn,
    zram: Option<u32>,
    arm: &Arm,
    pattern: Pattern,
    threads: u32,
    repeat: u32,
    label: &str,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<OverTimeRun, ExperimentError> {
    let cg = if cfg.charge || cfg.pressure {
        Some(sb.memory_cgroup("heap", &sandbox::cgroup::Limits::default())?)
    } else {
        None
    };
    let charge_file = cg.as_ref().map(|c| {
        c.dir.join(match c.version {
            probe::cgroup::CgroupVersion::V2 => "memory.current",
            probe::cgroup::CgroupVersion::V1 => "memory.usage_in_bytes",
        })
    });
    let (name, mut env) = match &arm.allocator {
        Allocator::Preload(p) => ("preload".to_string(), vec![("LD_PRELOAD".to_string(), p.display().to_string())]),
        other => (other.name(), vec![]),
    };
    env.extend(arm.knob.as_ref().and_then(|k| k.env.clone()));
    if let (Some(t), Allocator::Glibc) = (cfg.glibc_mmap_threshold, &arm.allocator) {
        env.push((GLIBC_MMAP_THRESHOLD.to_string(), t.to_string()));
    }
    let spec = Spec {
        allocator: name,
        pattern,
        threads,
        live_bytes: cfg.live_bytes,
        churn_ms: cfg.churn.as_millis() as u64,
        idle_ms: cfg.idle.as_millis() as u64,
        shrink_frees: cfg.shrink_frees,
        sample_ms: cfg.sample.as_millis() as u64,
        seed: cfg.seed ^ u64::from(repeat),
        repeat,
        after_shrink: arm.knob.as_ref().and_then(|k| k.call),
        charge_file,
        pressure: cfg.pressure,
    };
    let mut w = spawn.spawn(sandbox::worker::WorkerSpec {
        exe: cfg.exe.clone(),
        args: sandbox::worker::argv_spec(WORKER, &spec),
        cgroup: cg.as_ref(),
        env,
        label: label.to_string(),
    })?;
    obs.targets(
        vec![w.pid()],
        cg.as_ref().map(|c| probe::CgroupTarget { version: c.version, dir: c.dir.clone(), name: c.name.clone() }),
        vec![],
    );
    obs.event("phase_start", label, probe::sample::monotonic_ns(), Value::Null);
    let limit = cfg.churn + cfg.idle + Duration::from_secs(600);
    let failed = |f: sandbox::worker::WorkerFailure| {
        if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) }
    };
    if let (true, Some(cg)) = (cfg.pressure, &cg) {
        let ask = w.wait_for(Want::Kind(EventKind::Squeeze), limit, &mut |_| {}, &stop).map_err(failed)?.data;
        let ask: SqueezeAsk = serde_json::from_value(ask)
            .map_err(|e| ExperimentError::Worker(format!("{label}: bad squeeze request: {e}")))?;
        let answer = squeeze(&mut sb.probe(), cg, w.pid(), zram, &ask)?;
        sandbox::worker::send(&mut *w, &answer).map_err(|e| ExperimentError::Worker(format!("{label}: {e}")))?;
    }
    let d = w.wait_for(Want::Report, limit, &mut |_| {}, &stop).map_err(failed)?.data;
    let _ = w.finish(Duration::from_secs(10));
    obs.event("phase_end", label, probe::sample::monotonic_ns(), Value::Null);
    serde_json::from_value(d).map_err(|e| ExperimentError::Worker(format!("{label}: bad report: {e}")))
}

/// Limits the worker's cgroup to what it had before its first allocation,
/// plus the bytes it still holds live and a margin, for a moment: what the
/// allocator kept but the program no longer uses goes to the store. Then the
/// limit is lifted. (Only this run's own group is touched.)
fn squeeze(
    p: &mut probe::Probe,
    cg: &sandbox::cgroup::MemCgroup,
    pid: i32,
    zram: Option<u32>,
    ask: &SqueezeAsk,
) -> Result<Squeezed, ExperimentError> {
    let store = |p: &mut probe::Probe| zram.and_then(|z| store_size(p, Store::Zram(z)));
    let before = store(p);
    let base = ask.base_charge.unwrap_or(0);
    let margin = (ask.kept_bytes / 8).max(8 << 20);
    let mut limit = base + ask.kept_bytes + margin;
    // A limit the kernel cannot reach (the live bytes are pinned, e.g. by
    // mlock, or the store is full) is refused: raise it in steps.
    let now = cg.usage().unwrap_or(u64::MAX);
    while limit < now && cg.set_max(limit).is_err() {
        limit += 16 << 20;
    }
    std::thread::sleep(Duration::from_millis(300));
    let swapped = p.pid_status(pid).ok().flatten().and_then(|s| s.vm_swap).ok_or_else(|| {
        ExperimentError::Worker(format!("the heap worker (pid {pid}) could not be read under the squeeze: it is gone"))
    })?;
    let after = store(p);
    cg.write(
        match cg.version {
            probe::cgroup::CgroupVersion::V2 => "memory.max",
            probe::cgroup::CgroupVersion::V1 => "memory.limit_in_bytes",
        },
        match cg.version {
            probe::cgroup::CgroupVersion::V2 => "max",
            probe::cgroup::CgroupVersion::V1 => "-1",
        },
    )?;
    let grew = |f: fn(&StoreSize) -> Option<u64>| Some(f(after.as_ref()?)?.saturating_sub(f(before.as_ref()?)?));
    Ok(Squeezed {
        limit_bytes: limit.min(now),
        swapped_bytes: swapped,
        stored_bytes: grew(|m| m.orig_bytes),
        compressed_bytes: grew(|m| Some(m.compr_bytes)),
    })
}

/// The worker kind.
pub const WORKER: &str = "heap-time";

/// `pagelab __worker heap-time --spec JSON`.
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let spec: Spec = sandbox::worker::spec_of(WORKER, args)?;
    // A preloaded library must be the allocator, or its curves are libc's.
    if spec.allocator == "preload" {
        let lib =
            std::env::var("LD_PRELOAD").map_err(|_| "heap-time worker: preload without LD_PRELOAD".to_string())?;
        crate::heap::work::provides_malloc(&lib)?;
    }
    // Opened before the arm allocates: its readings allocate nothing.
    let statm = io.probe().open_statm(None).map_err(|e| format!("heap-time worker: opening its statm: {e}"))?;
    let seen = phases::run(&spec, &statm, &mut |ask| {
        io.emit(EventKind::Squeeze, WORKER, serde_json::to_value(ask).map_err(|e| e.to_string())?);
        match io.command::<Command>() {
            Some(Ok(Command::Squeezed(s))) => Ok(s),
            Some(Err(e)) => Err(format!("heap-time worker: bad squeeze answer: {e}")),
            None => Err("heap-time worker: the parent closed the control pipe".into()),
        }
    })?;
    let mut r = fold::fold(&spec, &seen);
    r.knob_readback = phases::readback(&spec.allocator);
    io.report(&r)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// heap over time without root (issue 60 item 3): its run drives each
    /// worker, a thread of this process here, through the worker-link seam,
    /// reads its report and writes one result per arm; a stop and a result
    /// that cannot be written end the run, and a charge that a thread cannot
    /// be given is refused before anything starts.
    #[test]
    fn the_run_drives_its_workers_without_root() {
        use workloads::observe::Recorder;
        let tree = tempfile::tempdir().unwrap();
        sandbox::testing::fake_cgroup_v2(tree.path()).unwrap();
        let sandbox = || {
            sandbox::Sandbox::with_journal_dir("heap", &tree.path().join("journal"))
                .with_roots(probe::Roots::under(tree.path()))
        };
        let cfg = OverTimeConfig {
            threads: vec![1],
            arms: vec![Arm { allocator: Allocator::Glibc, knob: None }, Arm::parse_knob("glibc:malloc_trim").unwrap()],
            patterns: vec![Pattern::Small],
            live_bytes: 2 << 20,
            churn: Duration::from_millis(200),
            idle: Duration::from_millis(300),
            shrink_frees: 0.9,
            glibc_mmap_threshold: None,
            repeat: 2,
            sample: Duration::from_millis(10),
            seed: 7,
            exe: "/nonexistent".into(),
            host_floor: None,
            charge: false,
            pressure: false,
        };
        let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
        let mut obs = Recorder::default();
        let rs = run_with(&cfg, &mut obs, || false, &mut threads, &sandbox).unwrap();
        let arms: Vec<&str> = rs.iter().map(|r| r.arm.as_str()).collect();
        assert_eq!(arms, ["glibc", "glibc+malloc_trim"]);
        assert_eq!(obs.results.len(), 2, "each arm's result written");
        for r in &rs {
            assert_eq!((r.pattern.as_str(), r.threads, r.live_target_bytes), ("small", 1, 2 << 20));
            // Both repeats' reports were read: a peak is the process's RSS, never 0.
            assert_eq!(r.peak_mib.n, 2, "{r:?}");
            assert!(r.peak_mib.median.is_some_and(|m| m > 0.0), "{r:?}");
            assert_eq!(r.churn_ns_per_op.n, 2, "{r:?}");
        }
        let ran = obs.notes.iter().filter(|n| n.contains("heap over time glibc")).count();
        assert_eq!(ran, 4, "two arms, two repeats: {:?}", obs.notes);
        let e = run_with(&cfg, &mut Recorder::default(), || true, &mut threads, &sandbox).unwrap_err();
        assert!(matches!(e, ExperimentError::Interrupted), "{e}");
        let mut refusing = Recorder { refuse_results: true, ..Default::default() };
        let e = run_with(&cfg, &mut refusing, || false, &mut threads, &sandbox).unwrap_err();
        assert!(matches!(e, ExperimentError::Record(_)), "{e}");
        // --glibc-mmap-threshold is the glibc workers' environment (which a
        // thread cannot be given: the in-process spawner refuses it by name);
        // another allocator's workers get none.
        let fixed = OverTimeConfig { glibc_mmap_threshold: Some(128 << 10), ..cfg.clone() };
        let e = run_with(&fixed, &mut Recorder::default(), || false, &mut threads, &sandbox).unwrap_err();
        assert!(e.to_string().contains("MALLOC_MMAP_THRESHOLD_"), "{e}");
        let mi = OverTimeConfig { arms: vec![Arm { allocator: Allocator::Mimalloc, knob: None }], repeat: 1, ..fixed };
        run_with(&mi, &mut Recorder::default(), || false, &mut threads, &sandbox).unwrap();
        let charged = OverTimeConfig { charge: true, ..cfg };
        let e = run_with(&charged, &mut Recorder::default(), || false, &mut threads, &sandbox).unwrap_err();
        assert!(e.to_string().contains("cannot be placed in a cgroup"), "{e}");
    }

    #[test]
    fn knobs_parse_into_an_environment_setting_or_a_call() {
        let a = Arm::parse_knob("glibc:MALLOC_ARENA_MAX=2").unwrap();
        assert_eq!(a.allocator, Allocator::Glibc);
        assert_eq!(a.knob.as_ref().unwrap().env, Some(("MALLOC_ARENA_MAX".into(), "2".into())));
        assert_eq!(a.label(), "glibc+MALLOC_ARENA_MAX=2");
        let t = Arm::parse_knob("glibc:malloc_trim").unwrap();
        assert_eq!(t.knob.unwrap().call, Some(Call::MallocTrim));
        let j = Arm::parse_knob("jemalloc:dirty_decay_ms:0").unwrap();
        assert_eq!(j.knob.unwrap().env, Some(("_RJEM_MALLOC_CONF".into(), "dirty_decay_ms:0".into())));
        let m = Arm::parse_knob("mimalloc:MIMALLOC_PURGE_DELAY=-1").unwrap();
        assert_eq!(m.knob.unwrap().env, Some(("MIMALLOC_PURGE_DELAY".into(), "-1".into())));
        for bad in [
            "glibc",
            "glibc:MALLOC_ARENA_MAX",
            "glibc:MALLOC_ARENA_MAX=-1",
            "glibc:LD_PRELOAD=/x.so",
            "mimalloc:PATH=1",
            "jemalloc:junk:true",
            "jemalloc:background_thread:1",
            "tcmalloc:x=1",
        ] {
            let e = Arm::parse_knob(bad).unwrap_err();
            assert!(e.contains("--knobs") && e.contains("expected"), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_stay_in_their_bands_and_the_mean_is_near_the_formula() {
        for p in <Pattern as clap::ValueEnum>::value_variants().iter().copied() {
            let mut rng = crate::heap::work::script::Rng::new(7);
            let n = 200_000;
            let sizes: Vec<usize> = (0..n).map(|_| p.size(&mut rng)).collect();
            assert!(sizes.iter().all(|&s| (16..=2 << 20).contains(&s)), "{p:?}");
            let mean = sizes.iter().sum::<usize>() as f64 / n as f64;
            let want = p.mean_size();
            assert!((mean / want - 1.0).abs() < 0.05, "{p:?}: mean {mean} vs {want}");
            let over = sizes.iter().filter(|&&s| s > 128 << 10).count() as f64 / n as f64;
            if p == Pattern::Mixed {
                assert!((over - 0.02).abs() < 0.003, "{over}");
            } else {
                assert_eq!(over, 0.0);
            }
        }
    }

    #[test]
    fn the_plan_runs_arms_side_by_side_abba_and_skips_cross_thread_at_one_thread() {
        let cfg = OverTimeConfig {
            threads: vec![1, 4],
            arms: vec![
                Arm { allocator: Allocator::Glibc, knob: None },
                Arm { allocator: Allocator::Jemalloc, knob: None },
            ],
            patterns: vec![Pattern::Mixed, Pattern::CrossThread],
            live_bytes: 64 << 20,
            churn: Duration::from_secs(1),
            idle: Duration::from_secs(2),
            shrink_frees: 0.9,
            glibc_mmap_threshold: None,
            repeat: 2,
            sample: Duration::from_millis(50),
            seed: 1,
            exe: "/bin/true".into(),
            host_floor: None,
            charge: false,
            pressure: false,
        };
        let r = cfg.runs();
        // 1 thread: mixed only; 4 threads: both patterns; 2 repeats × 2 arms each.
        assert_eq!(r.len(), 3 * 2 * 2);
        assert_eq!(
            &r[..4],
            &[
                (1, Pattern::Mixed, 1, 0),
                (1, Pattern::Mixed, 1, 1),
                (1, Pattern::Mixed, 2, 1),
                (1, Pattern::Mixed, 2, 0)
            ]
        );
        assert!(!r.iter().any(|x| x.0 == 1 && x.1 == Pattern::CrossThread));
        assert!(cfg.expect_s() > 12.0 * 3.0);
    }
}
