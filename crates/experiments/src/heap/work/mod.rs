//! `heap`: how allocators scale with threads, per call.
//!
//! Reproduces the HeapPerf study ("Windows 7 Heap Performance Analysis"): a
//! container-like workload in 1..N threads, every allocation and free timed on
//! its own with the calibrated TSC, averaged over repeats; plus what that study
//! did not show: per-call tail latency (p99, p99.9) and peak memory. Each
//! allocator × heap mode × thread count × repeat runs in a fresh worker process.

pub mod alloc;
pub mod overtime;
pub mod script;
pub mod timer;
mod affinity;
mod repeats;
mod worker;
use affinity::*;
pub use repeats::*;
pub use worker::*;

use sandbox::worker::Want;
use alloc::{Allocator, ThreadHeap};
use hdrhistogram::Histogram;
use serde_json::Value;
use std::sync::{Arc, Barrier};
use workloads::observe::ExperimentError;

#[derive(Debug, Clone)]
pub struct HeapConfig {
    pub threads: Vec<u32>,
    pub allocators: Vec<Allocator>,
    pub heap_mode: alloc::HeapMode,
    pub workload: alloc::Workload,
    /// Allocations per thread.
    pub ops: u64,
    pub repeat: u32,
    pub seed: u64,
    pub baseline: String,
    /// heap.growth's step starts here (`--growth-from`): from N threads to
    /// 2N. None: from as many threads as CPUs.
    pub growth_from: Option<u32>,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
}

pub const MAX_THREADS: u32 = 1024;

/// Fresh processes per repeat, each making 1/[`PROCS`] of the warm calls. A
/// process's figure can be off for its whole life (a disturbance of the host
/// that outlasts it, or its address-space layout): on the project's 2-vCPU VM,
/// mimalloc at 2 threads spread 5.2–7.2 ns over the processes of one run. So a
/// repeat's figure is the trimmed mean of its processes' (the highest and the
/// lowest left out), and the processes of a repeat run far apart in time.
pub const PROCS: u32 = 7;

pub use crate::heap::results::{HeapResult, Repeat, Unsupported};

/// Processes per repeat for `ops` warm calls per thread: [`PROCS`], or fewer
/// so that each process makes at least [`MIN_PROC_OPS`] (a tiny run is one
/// process per repeat, as it always was).
pub fn procs_for(ops: u64) -> u32 {
    (ops / MIN_PROC_OPS).clamp(1, PROCS as u64) as u32
}

/// The fewest warm calls a process makes when a repeat is split: 8 rounds.
pub const MIN_PROC_OPS: u64 = 8 * script::ROUND as u64;

const TOO_FEW: &str = "too few warm allocations to time a mean (raise --ops)";

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

pub fn validate(cfg: &HeapConfig, p: &mut probe::Probe) -> Result<(), sandbox::SandboxError> {
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
            alloc::check_preload(p).map_err(|e| Invalid(format!("--allocators {e}")))?;
        }
    }
    if cfg.ops == 0 || cfg.repeat == 0 {
        return Err(Invalid("--ops and --repeat must be at least 1".into()));
    }
    if let Some(n) = cfg.growth_from
        && !(cfg.threads.contains(&n) && cfg.threads.contains(&(2 * n)))
    {
        return Err(Invalid(format!(
            "--growth-from {n}: the step is from {n} threads to {}, so --threads must hold both (it has {})",
            2 * n,
            cfg.threads.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )));
    }
    let names: Vec<String> = cfg.allocators.iter().map(Allocator::name).collect();
    if !names.contains(&cfg.baseline) {
        return Err(Invalid(format!(
            "--baseline {}: expected one of the allocators run: {}",
            cfg.baseline,
            names.join(", ")
        )));
    }
    if cfg.heap_mode.glibc_only() && !cfg.allocators.contains(&Allocator::Glibc) {
        return Err(Invalid(format!(
            "--heap-mode {}: changes glibc alone, which is not among --allocators ({}); add glibc, or give \
             --heap-mode default",
            crate::kit::names::name(&cfg.heap_mode),
            names.join(", ")
        )));
    }
    if cfg.allocators.iter().all(|a| a.unsupported(cfg.heap_mode).is_some()) {
        let why: Vec<String> = cfg
            .allocators
            .iter()
            .map(|a| format!("{}: {}", a.name(), a.unsupported(cfg.heap_mode).unwrap()))
            .collect();
        return Err(Invalid(format!(
            "--heap-mode {}: no allocator given supports it ({}); shared: glibc, jemalloc; per-thread: mimalloc, jemalloc",
            crate::kit::names::name(&cfg.heap_mode),
            why.join("; ")
        )));
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    // A thread's live set settles near 5 MiB (4096 long-lived objects, a third of
    // them vectors of 3 KiB on average; see script.rs), plus its stack.
    let most = *cfg.threads.iter().max().unwrap() as u64;
    guard.check_plan((most * (8 << 20) + (64 << 20)) as u128, "heap", &meminfo)?;
    Ok(())
}

/// Runs every thread count × repeat × allocator, each in a fresh worker; the
/// allocators are interleaved within a repeat so that drift hits them alike.
pub fn run<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<HeapResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut sandbox::worker::Processes)
}

/// [`run`], its workers started by `spawn` (tests: [`sandbox::worker::Threads`],
/// no process; it refuses a preloaded allocator, whose environment a thread
/// cannot take).
pub fn run_with<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
) -> Result<Vec<HeapResult>, ExperimentError> {
    let supported: Vec<&Allocator> =
        cfg.allocators.iter().filter(|a| a.unsupported(cfg.heap_mode).is_none()).collect();
    let mode = cfg.heap_mode;
    for a in cfg.allocators.iter().filter(|a| a.unsupported(cfg.heap_mode).is_some()) {
        let why = a.unsupported(cfg.heap_mode).unwrap_or_default();
        obs.note(&format!("{} does not support heap mode {mode}: {why}", a.name()));
        let unsupported =
            crate::heap::results::Unsupported { allocator: a.name(), heap_mode: cfg.heap_mode.of(a), reason: why.to_string() };
        obs.result(&crate::heap::results::Entry {
            unsupported: Some(unsupported),
            ..Default::default()
        })?;
    }
    let mut out = Vec::new();
    let total = cfg.threads.len() * cfg.repeat as usize * procs_for(cfg.ops) as usize * supported.len();
    let mut done = 0usize;
    for &threads in &cfg.threads {
        // Per allocator and repeat, its processes. A repeat's processes are
        // spread over the whole sweep (process 1 of every repeat, then process
        // 2 of every repeat, ...), so that a disturbance of a few seconds hits
        // one process of several repeats rather than every process of one, and
        // each repeat's trimmed mean sets it aside.
        let mut procs: Vec<Vec<Vec<Repeat>>> = vec![vec![Vec::new(); cfg.repeat as usize]; supported.len()];
        let nprocs = procs_for(cfg.ops);
        let proc_ops = cfg.ops.div_ceil(nprocs as u64);
        for sub in 0..nprocs {
            for rep in 0..cfg.repeat {
                // ABBA: the allocators' order flips every other repeat.
                let order = workloads::order::abba(&(0..supported.len()).collect::<Vec<_>>(), rep as usize);
                for (k, a) in order.into_iter().map(|k| (k, &supported[k])) {
                    if stop() {
                        return Err(ExperimentError::Interrupted);
                    }
                    let (name, env, preload) = match a {
                        Allocator::Preload(p) => (
                            "preload".to_string(),
                            vec![("LD_PRELOAD".to_string(), p.display().to_string())],
                            Some(p.display().to_string()),
                        ),
                        // glibc-cached: glibc's workers alone get the deep cache.
                        other if cfg.heap_mode.of(other) == alloc::HeapMode::GlibcCached => (
                            other.name(),
                            vec![("GLIBC_TUNABLES".to_string(), alloc::deep_tcache_tunables())],
                            None,
                        ),
                        other => (other.name(), vec![], None),
                    };
                    let spec = Spec {
                        allocator: name,
                        mode: cfg.heap_mode.of(a),
                        threads,
                        ops: proc_ops,
                        seed: cfg.seed,
                        preload,
                    };
                    let label = format!(
                        "heap {} {} threads, repeat {} process {}/{nprocs}",
                        a.name(),
                        threads,
                        rep + 1,
                        sub + 1
                    );
                    let r = one_process(cfg, &spec, env, &label, obs, stop, &mut *spawn)?;
                    done += 1;
                    obs.note(&format!(
                        "[{done}/{total}] {label}: alloc {:.1} ns, free {:.1} ns, peak RSS {:.1} MiB",
                        r.alloc_ns_mean,
                        r.free_ns_mean,
                        units::mib(r.peak_rss_bytes)
                    ));
                    procs[k][rep as usize].push(r);
                }
            }
        }
        for (k, a) in supported.iter().enumerate() {
            let runs: Vec<Repeat> = procs[k].iter().map(|p| merge_repeats(p)).collect();
            let r = aggregate(cfg, a, threads, runs);
            obs.result(&crate::heap::results::Entry {
                result: Some(r.clone()),
                ..Default::default()
            })?;
            out.push(r);
        }
    }
    obs.targets(vec![], None, vec![]);
    Ok(out)
}

/// One worker process of the speed sweep: started, waited for, its report read.
fn one_process<O: workloads::observe::Observer<Entry = crate::heap::results::Entry>>(
    cfg: &HeapConfig,
    spec: &Spec,
    env: Vec<(String, String)>,
    label: &str,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
) -> Result<Repeat, ExperimentError> {
    let mut w = spawn.spawn(sandbox::worker::WorkerSpec {
        exe: cfg.exe.clone(),
        args: sandbox::worker::argv_spec(WORKER, spec),
        cgroup: None,
        env,
        label: label.to_string(),
    })?;
    obs.targets(vec![w.pid()], None, vec![]);
    let t0 = probe::sample::monotonic_ns();
    obs.event("phase_start", label, t0, Value::Null);
    let d = w
        .wait_for(Want::Report, std::time::Duration::from_secs(3600), &mut |_| {}, &stop)
        .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) })?
        .data;
    let _ = w.finish(std::time::Duration::from_secs(10));
    obs.event("phase_end", label, probe::sample::monotonic_ns(), Value::Null);
    serde_json::from_value(d).map_err(|e| ExperimentError::Worker(format!("{label}: bad report: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_runs_in_process_from_its_spec() {
        let spec = Spec {
            allocator: "jemalloc".into(),
            mode: alloc::HeapMode::PerThread,
            threads: 2,
            ops: 20_000,
            seed: 3,
            preload: None,
        };
        let argv = sandbox::worker::argv_spec(WORKER, &spec);
        assert_eq!(sandbox::worker::spec_of::<Spec>(WORKER, &argv[2..]).unwrap(), spec);
        let r = run_config(&spec, &mut probe::Probe::default()).unwrap();
        // Both threads ran the script: every allocation was freed, and the
        // warm phase's means are times, not NaN or zero.
        assert!(r.allocs >= 20_000 && r.allocs == r.frees, "{} allocs, {} frees", r.allocs, r.frees);
        assert!(r.alloc_ns_mean > 0.0 && r.alloc_ns_mean.is_finite());
        assert!(r.alloc_ns_p50 <= r.alloc_ns_p99 && r.alloc_ns_p99 <= r.alloc_ns_max);
        assert_eq!(r.processes, 1);
        assert!(r.peak_rss_bytes >= r.baseline_rss_bytes);
        // A mode the allocator has not is refused by name.
        let bad = Spec { allocator: "mimalloc".into(), mode: alloc::HeapMode::Shared, ..spec };
        assert_eq!(run_config(&bad, &mut probe::Probe::default()).unwrap_err(), "allocator mimalloc cannot run heap mode shared");
    }

    /// heap's whole sweep with no process: each worker's main on a thread.
    /// The allocators alternate ABBA within the repeats, each allocator's
    /// result is written once its repeats are in, one the mode does not
    /// support is written as such, a stop ends it, a result that cannot be
    /// written fails it, and a preloaded allocator (an environment a thread
    /// cannot take) is refused rather than run as glibc.
    #[test]
    fn the_sweep_drives_its_workers_without_a_process() {
        use workloads::observe::{ExperimentError, Recorder};
        let cfg = HeapConfig {
            threads: vec![1],
            allocators: vec![Allocator::Glibc, Allocator::Jemalloc, Allocator::Mimalloc],
            heap_mode: alloc::HeapMode::Shared,
            workload: alloc::Workload::Containers,
            ops: 4_000,
            repeat: 2,
            seed: 7,
            baseline: "glibc".into(),
            growth_from: None,
            exe: "/nonexistent".into(),
            host_floor: None,
        };
        let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
        let mut obs = Recorder::default();
        let rs = run_with(&cfg, &mut obs, || false, &mut threads).unwrap();
        let ran: Vec<&str> = obs.notes.iter().filter_map(|n| n.split_once("] heap ")?.1.split(' ').next()).collect();
        assert_eq!(ran, ["glibc", "jemalloc", "jemalloc", "glibc"], "{:?}", obs.notes);
        let names: Vec<(&str, u32)> = rs.iter().map(|r| (r.allocator.as_str(), r.repeat)).collect();
        assert_eq!(names, [("glibc", 2), ("jemalloc", 2)]);
        assert!(rs.iter().all(|r| r.alloc_ns_mean > 0.0 && r.free_ns_mean > 0.0), "{rs:?}");
        assert_eq!(obs.results.len(), 3, "mimalloc's refusal, then the two results");
        assert!(obs.results[0].unsupported.as_ref().is_some_and(|u| u.allocator == "mimalloc"));
        assert_eq!(obs.results[1].result.as_ref(), Some(&rs[0]));
        let e = run_with(&cfg, &mut Recorder::default(), || true, &mut threads).unwrap_err();
        assert!(matches!(e, ExperimentError::Interrupted), "{e}");
        let mut refusing = Recorder { refuse_results: true, ..Default::default() };
        let e = run_with(&cfg, &mut refusing, || false, &mut threads).unwrap_err();
        assert!(matches!(e, ExperimentError::Record(_)), "{e}");
        let preload = HeapConfig {
            allocators: vec![Allocator::Preload("/x/libfast.so".into())],
            heap_mode: alloc::HeapMode::Default,
            ..cfg
        };
        let e = run_with(&preload, &mut Recorder::default(), || false, &mut threads).unwrap_err();
        assert!(e.to_string().contains("cannot be given LD_PRELOAD"), "{e}");
        // glibc-shared runs mimalloc too, each result in the mode it ran in.
        let gs = HeapConfig {
            allocators: vec![Allocator::Glibc, Allocator::Mimalloc],
            heap_mode: alloc::HeapMode::GlibcShared,
            repeat: 1,
            ..preload
        };
        let rs = run_with(&gs, &mut Recorder::default(), || false, &mut threads).unwrap();
        let modes: Vec<(&str, alloc::HeapMode)> = rs.iter().map(|r| (r.allocator.as_str(), r.heap_mode)).collect();
        assert_eq!(modes, [("glibc", alloc::HeapMode::Shared), ("mimalloc", alloc::HeapMode::Default)]);
    }

    #[test]
    fn repeats_split_into_processes_only_when_each_gets_eight_rounds() {
        assert_eq!(procs_for(3_000), 1);
        assert_eq!(procs_for(2 * MIN_PROC_OPS), 2);
        assert_eq!(procs_for(1_000_000), PROCS);
        assert_eq!(procs_for(2_000_000), PROCS);
    }

    #[test]
    fn the_trimmed_mean_drops_one_from_each_end_of_five_to_nine() {
        assert_eq!(trimmed_mean(&[1.0, 2.0, 3.0]), Some(2.0));
        assert_eq!(trimmed_mean(&[10.0, 1.0, 2.0, 3.0, 100.0]), Some(5.0));
        assert_eq!(trimmed_mean(&[9.0, 5.0, 5.0, 5.0, 5.0, 5.0, 1.0]), Some(5.0));
        assert_eq!(trimmed_mean(&[f64::NAN, 4.0]), Some(4.0));
        assert_eq!(trimmed_mean(&[]), None);
    }
}
