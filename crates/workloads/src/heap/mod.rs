//! `heap`: how allocators scale with threads, per call.
//!
//! Reproduces the HeapPerf study ("Windows 7 Heap Performance Analysis"): a
//! container-like workload in 1..N threads, every allocation and free timed on
//! its own with the calibrated TSC, averaged over repeats; plus what that study
//! did not show: per-call tail latency (p99, p99.9) and peak memory. Each
//! allocator × heap mode × thread count × repeat runs in a fresh worker process.

pub mod alloc;
pub mod script;
pub mod timer;

use crate::eat::EatError;
use alloc::{Allocator, ThreadHeap};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Barrier};

#[derive(Debug, Clone)]
pub struct HeapConfig {
    pub threads: Vec<u32>,
    pub allocators: Vec<Allocator>,
    pub heap_mode: String,
    pub workload: String,
    /// Allocations per thread.
    pub ops: u64,
    pub repeat: u32,
    pub seed: u64,
    pub baseline: String,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
}

pub const MAX_THREADS: u32 = 1024;

/// What one worker (one repeat of one configuration) measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    pub alloc_ns_mean: f64,
    pub free_ns_mean: f64,
    pub alloc_ns_p50: f64,
    pub alloc_ns_p99: f64,
    pub alloc_ns_p999: f64,
    pub alloc_ns_max: f64,
    pub free_ns_p50: f64,
    pub free_ns_p99: f64,
    pub free_ns_p999: f64,
    pub free_ns_max: f64,
    pub allocs: u64,
    pub frees: u64,
    pub peak_rss_bytes: u64,
    pub baseline_rss_bytes: u64,
    /// Wall time of the slowest thread.
    pub wall_ms: f64,
    /// The largest share of a thread's wall time spent inside timed calls (≤ 1).
    pub timed_fraction_max: f64,
    pub timer_overhead_ns: f64,
    pub minor_faults: u64,
    pub malloc_provider: Option<String>,
    pub preload_mapped: Option<bool>,
}

/// One allocator × heap mode × thread count, averaged over its repeats (the study's
/// "averages over 10 runs").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapResult {
    pub allocator: String,
    pub heap_mode: String,
    pub workload: String,
    pub threads: u32,
    pub ops_per_thread: u64,
    pub repeat: u32,
    pub alloc_ns_mean: f64,
    pub alloc_ns_p50: f64,
    pub alloc_ns_p99: f64,
    pub alloc_ns_p999: f64,
    pub alloc_ns_max: f64,
    pub free_ns_mean: f64,
    pub free_ns_p50: f64,
    pub free_ns_p99: f64,
    pub free_ns_p999: f64,
    pub free_ns_max: f64,
    /// The original's unit: milliseconds per million calls (numerically equal to
    /// the mean ns per call).
    pub alloc_ms_per_million: f64,
    pub free_ms_per_million: f64,
    pub peak_rss_bytes: u64,
    /// Coefficient of variation of the per-repeat means, across repeats.
    pub alloc_ns_mean_cv: f64,
    pub free_ns_mean_cv: f64,
    pub timed_fraction_max: f64,
    pub timer_overhead_ns: f64,
    pub malloc_provider: Option<String>,
    pub runs: Vec<Repeat>,
}

pub fn validate(cfg: &HeapConfig) -> Result<(), sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    if cfg.threads.is_empty() || cfg.threads.iter().any(|&t| t == 0 || t > MAX_THREADS) {
        return Err(Invalid(format!(
            "--threads {:?}: expected a comma-separated list of counts from 1 to {MAX_THREADS}, e.g. 1,2,4,8",
            cfg.threads
        )));
    }
    if cfg.allocators.is_empty() {
        return Err(Invalid(format!("--allocators is empty: expected {}", alloc::ALLOCATOR_FORMS)));
    }
    for a in &cfg.allocators {
        if let Allocator::Preload(p) = a {
            if !p.is_file() {
                return Err(Invalid(format!(
                    "--allocators preload:{}: no such file (expected preload:PATH to a shared library, e.g. preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)",
                    p.display()
                )));
            }
        }
    }
    if !alloc::MODES.contains(&cfg.heap_mode.as_str()) {
        return Err(Invalid(format!("--heap-mode {}: expected default, shared or per-thread", cfg.heap_mode)));
    }
    if cfg.workload != "containers" {
        return Err(Invalid(format!("--workload {}: expected containers", cfg.workload)));
    }
    if cfg.ops == 0 || cfg.repeat == 0 {
        return Err(Invalid("--ops and --repeat must be at least 1".into()));
    }
    let names: Vec<String> = cfg.allocators.iter().map(Allocator::name).collect();
    if !names.contains(&cfg.baseline) {
        return Err(Invalid(format!(
            "--baseline {}: expected one of the allocators run: {}",
            cfg.baseline,
            names.join(", ")
        )));
    }
    if cfg.allocators.iter().all(|a| a.unsupported(&cfg.heap_mode).is_some()) {
        let why: Vec<String> = cfg
            .allocators
            .iter()
            .map(|a| format!("{}: {}", a.name(), a.unsupported(&cfg.heap_mode).unwrap()))
            .collect();
        return Err(Invalid(format!(
            "--heap-mode {}: no allocator given supports it ({}); shared: glibc, jemalloc; per-thread: mimalloc, jemalloc",
            cfg.heap_mode,
            why.join("; ")
        )));
    }
    let meminfo = probe::Probe::default().meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    // A thread's live set settles near 5 MiB (4096 long-lived objects, a third of
    // them vectors of 3 KiB on average; see script.rs), plus its stack.
    let most = *cfg.threads.iter().max().unwrap() as u64;
    guard.check_plan(most * (8 << 20) + (64 << 20), "heap", &meminfo)?;
    Ok(())
}

fn stat_line(h: &Histogram<u64>, ns_per_tick: f64) -> [f64; 4] {
    [
        h.value_at_quantile(0.5) as f64 * ns_per_tick,
        h.value_at_quantile(0.99) as f64 * ns_per_tick,
        h.value_at_quantile(0.999) as f64 * ns_per_tick,
        h.max() as f64 * ns_per_tick,
    ]
}

fn status_kb(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn minflt() -> u64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u.ru_minflt as u64
}

/// Runs `threads` threads of the script, each with a heap from `make`.
fn run_threads<H: ThreadHeap, F>(
    threads: u32,
    ops: u64,
    seed: u64,
    overhead: u64,
    make: F,
) -> Result<Vec<script::ThreadStats>, String>
where
    F: Fn(usize) -> Result<H, String> + Sync,
{
    let barrier = Arc::new(Barrier::new(threads as usize));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as usize)
            .map(|i| {
                let b = barrier.clone();
                let make = &make;
                std::thread::Builder::new()
                    .name(format!("heap-{i}"))
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || {
                        let heap = make(i);
                        match heap {
                            Ok(mut h) => script::run(&mut h, ops, seed, overhead, || {
                                b.wait();
                            }),
                            Err(e) => {
                                b.wait();
                                Err(e)
                            }
                        }
                    })
                    .map_err(|e| format!("starting thread {i}: {e}"))
            })
            .collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h?.join().map_err(|_| "a workload thread panicked".to_string())??);
        }
        Ok(out)
    })
}

/// One configuration in this (worker) process.
pub fn run_config(
    allocator: &str,
    mode: &str,
    threads: u32,
    ops: u64,
    seed: u64,
    preload: Option<&str>,
) -> Result<Repeat, String> {
    let cal = timer::calibrate(30, 20_000);
    let oh = cal.overhead_ticks;
    let base_rss = status_kb("VmRSS:");
    let f0 = minflt();
    let stats = match (allocator, mode) {
        ("glibc" | "preload", "default") => run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?,
        ("glibc", "shared") => {
            // SAFETY: mallopt before any workload thread exists.
            if unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) } != 1 {
                return Err("mallopt(M_ARENA_MAX, 1) failed".into());
            }
            run_threads(threads, ops, seed, oh, |_| Ok(alloc::Libc))?
        }
        ("mimalloc", "default") => run_threads(threads, ops, seed, oh, |_| Ok(alloc::MiDefault))?,
        ("mimalloc", "per-thread") => run_threads(threads, ops, seed, oh, |_| alloc::MiHeap::new())?,
        ("jemalloc", "default") => run_threads(threads, ops, seed, oh, |_| Ok(alloc::Je))?,
        ("jemalloc", "shared") => {
            let a = alloc::je_create_arena()?;
            run_threads(threads, ops, seed, oh, |_| alloc::je_bind(a).map(|_| alloc::Je))?
        }
        ("jemalloc", "per-thread") => run_threads(threads, ops, seed, oh, |_| {
            alloc::je_create_arena().and_then(alloc::je_bind).map(|_| alloc::Je)
        })?,
        (a, m) => return Err(format!("allocator {a} cannot run heap mode {m}")),
    };
    let faults = minflt() - f0;
    let mut ah = Histogram::<u64>::new_with_bounds(1, 1 << 36, 3).map_err(|e| e.to_string())?;
    let mut fh = Histogram::<u64>::new_with_bounds(1, 1 << 36, 3).map_err(|e| e.to_string())?;
    let (mut allocs, mut frees, mut at, mut ft, mut wall, mut frac) = (0u64, 0u64, 0u64, 0u64, 0u64, 0f64);
    for s in &stats {
        ah.add(&s.alloc_hist).map_err(|e| e.to_string())?;
        fh.add(&s.free_hist).map_err(|e| e.to_string())?;
        allocs += s.allocs;
        frees += s.frees;
        at += s.alloc_ticks;
        ft += s.free_ticks;
        wall = wall.max(s.wall_ns);
        let timed = (s.alloc_ticks + s.free_ticks) as f64 * cal.ns_per_tick;
        frac = frac.max(timed / s.wall_ns.max(1) as f64);
    }
    let a = stat_line(&ah, cal.ns_per_tick);
    let f = stat_line(&fh, cal.ns_per_tick);
    let provider = alloc::malloc_provider();
    let preload_mapped = preload.map(|p| {
        let want = std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        maps.lines().any(|l| l.split_whitespace().nth(5).is_some_and(|f| std::path::Path::new(f) == want))
    });
    Ok(Repeat {
        alloc_ns_mean: at as f64 * cal.ns_per_tick / allocs.max(1) as f64,
        free_ns_mean: ft as f64 * cal.ns_per_tick / frees.max(1) as f64,
        alloc_ns_p50: a[0],
        alloc_ns_p99: a[1],
        alloc_ns_p999: a[2],
        alloc_ns_max: a[3],
        free_ns_p50: f[0],
        free_ns_p99: f[1],
        free_ns_p999: f[2],
        free_ns_max: f[3],
        allocs,
        frees,
        peak_rss_bytes: status_kb("VmHWM:"),
        baseline_rss_bytes: base_rss,
        wall_ms: wall as f64 / 1e6,
        timed_fraction_max: frac,
        timer_overhead_ns: cal.overhead_ns,
        minor_faults: faults,
        malloc_provider: provider,
        preload_mapped,
    })
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 }
}

/// Sample standard deviation over the mean.
pub fn cv(v: &[f64]) -> f64 {
    let m = mean(v);
    if v.len() < 2 || m == 0.0 {
        return 0.0;
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    var.sqrt() / m
}

/// Averages the repeats of one configuration.
pub fn aggregate(cfg: &HeapConfig, allocator: &Allocator, threads: u32, runs: Vec<Repeat>) -> HeapResult {
    let m = |f: fn(&Repeat) -> f64| mean(&runs.iter().map(f).collect::<Vec<_>>());
    let alloc_means: Vec<f64> = runs.iter().map(|r| r.alloc_ns_mean).collect();
    let free_means: Vec<f64> = runs.iter().map(|r| r.free_ns_mean).collect();
    HeapResult {
        allocator: allocator.name(),
        heap_mode: cfg.heap_mode.clone(),
        workload: cfg.workload.clone(),
        threads,
        ops_per_thread: cfg.ops,
        repeat: runs.len() as u32,
        alloc_ns_mean: m(|r| r.alloc_ns_mean),
        alloc_ns_p50: m(|r| r.alloc_ns_p50),
        alloc_ns_p99: m(|r| r.alloc_ns_p99),
        alloc_ns_p999: m(|r| r.alloc_ns_p999),
        alloc_ns_max: runs.iter().map(|r| r.alloc_ns_max).fold(0.0, f64::max),
        free_ns_mean: m(|r| r.free_ns_mean),
        free_ns_p50: m(|r| r.free_ns_p50),
        free_ns_p99: m(|r| r.free_ns_p99),
        free_ns_p999: m(|r| r.free_ns_p999),
        free_ns_max: runs.iter().map(|r| r.free_ns_max).fold(0.0, f64::max),
        alloc_ms_per_million: m(|r| r.alloc_ns_mean),
        free_ms_per_million: m(|r| r.free_ns_mean),
        peak_rss_bytes: m(|r| r.peak_rss_bytes as f64) as u64,
        alloc_ns_mean_cv: cv(&alloc_means),
        free_ns_mean_cv: cv(&free_means),
        timed_fraction_max: runs.iter().map(|r| r.timed_fraction_max).fold(0.0, f64::max),
        timer_overhead_ns: m(|r| r.timer_overhead_ns),
        malloc_provider: runs.first().and_then(|r| r.malloc_provider.clone()),
        runs,
    }
}

/// Runs every thread count × repeat × allocator, each in a fresh worker; the
/// allocators are interleaved within a repeat so that drift hits them alike.
pub fn run<O: crate::observe::Observer>(
    cfg: &HeapConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<HeapResult>, EatError> {
    let supported: Vec<&Allocator> =
        cfg.allocators.iter().filter(|a| a.unsupported(&cfg.heap_mode).is_none()).collect();
    for a in cfg.allocators.iter().filter(|a| a.unsupported(&cfg.heap_mode).is_some()) {
        let why = a.unsupported(&cfg.heap_mode).unwrap_or_default();
        obs.note(&format!("{} does not support heap mode {}: {why}", a.name(), cfg.heap_mode));
        obs.result(json!({"unsupported": {"allocator": a.name(), "heap_mode": cfg.heap_mode, "reason": why}}));
    }
    let mut out = Vec::new();
    let total = cfg.threads.len() * cfg.repeat as usize * supported.len();
    let mut done = 0usize;
    for &threads in &cfg.threads {
        let mut runs: Vec<Vec<Repeat>> = vec![Vec::new(); supported.len()];
        for rep in 0..cfg.repeat {
            for (k, a) in supported.iter().enumerate() {
                if stop() {
                    return Err(EatError::Interrupted);
                }
                let (name, env, preload) = match a {
                    Allocator::Preload(p) => (
                        "preload".to_string(),
                        vec![("LD_PRELOAD".to_string(), p.display().to_string())],
                        Some(p.display().to_string()),
                    ),
                    other => (other.name(), vec![], None),
                };
                let mut args: Vec<String> = vec![
                    "__worker".into(),
                    "heap".into(),
                    "--allocator".into(),
                    name,
                    "--mode".into(),
                    cfg.heap_mode.clone(),
                    "--threads".into(),
                    threads.to_string(),
                    "--ops".into(),
                    cfg.ops.to_string(),
                    "--seed".into(),
                    cfg.seed.to_string(),
                ];
                if let Some(p) = &preload {
                    args.extend(["--preload".into(), p.clone()]);
                }
                let label = format!("heap {} {} threads, repeat {}", a.name(), threads, rep + 1);
                let mut w = sandbox::worker::Worker::spawn(sandbox::worker::WorkerSpec {
                    exe: cfg.exe.clone(),
                    args,
                    cgroup: None,
                    env,
                    label: label.clone(),
                })?;
                obs.targets(vec![w.pid], None, vec![]);
                let t0 = probe::sample::monotonic_ns();
                obs.event("phase_start", &label, t0, Value::Null);
                let d = w
                    .wait_for("done", Some("heap"), std::time::Duration::from_secs(3600), |_| {}, stop)
                    .map_err(|f| if stop() { EatError::Interrupted } else { EatError::Worker(f.to_string()) })?
                    .data;
                let _ = w.finish(std::time::Duration::from_secs(10));
                obs.event("phase_end", &label, probe::sample::monotonic_ns(), Value::Null);
                let r: Repeat =
                    serde_json::from_value(d).map_err(|e| EatError::Worker(format!("{label}: bad report: {e}")))?;
                done += 1;
                obs.note(&format!(
                    "[{done}/{total}] {label}: alloc {:.1} ns, free {:.1} ns, peak RSS {:.1} MiB",
                    r.alloc_ns_mean,
                    r.free_ns_mean,
                    r.peak_rss_bytes as f64 / 1048576.0
                ));
                runs[k].push(r);
            }
        }
        for (k, a) in supported.iter().enumerate() {
            let r = aggregate(cfg, a, threads, std::mem::take(&mut runs[k]));
            obs.result(json!({"result": r}));
            out.push(r);
        }
    }
    obs.targets(vec![], None, vec![]);
    Ok(out)
}

/// `pagelab __worker heap --allocator A --mode M --threads T --ops N --seed S [--preload PATH]`.
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let arg = |n: &str| args.iter().position(|a| a == n).and_then(|i| args.get(i + 1)).cloned();
    let num = |n: &str| arg(n).and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| format!("heap worker needs {n} N"));
    let r = run_config(
        &arg("--allocator").ok_or("heap worker needs --allocator")?,
        &arg("--mode").unwrap_or_else(|| "default".into()),
        num("--threads")? as u32,
        num("--ops")?,
        num("--seed")?,
        arg("--preload").as_deref(),
    )?;
    io.emit("done", "heap", serde_json::to_value(&r).map_err(|e| e.to_string())?);
    Ok(())
}
