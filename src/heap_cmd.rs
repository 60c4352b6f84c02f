//! `pagelab heap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::HeapArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
use crate::lab::{Machine, arg, list, step};
use report::lab::Step;
use workloads::heap::HeapConfig;

pub fn run(a: &HeapArgs) -> anyhow::Result<()> {
    let cfg = HeapConfig {
        threads: a.threads.clone(),
        allocators: a.allocators.clone(),
        heap_mode: a.heap_mode.clone(),
        workload: a.workload.clone(),
        ops: a.ops,
        repeat: a.repeat,
        seed: a.seed,
        baseline: a.baseline.clone().unwrap_or_else(|| {
            let names: Vec<String> = a.allocators.iter().map(|x| x.name()).collect();
            if names.iter().any(|n| n == "glibc") { "glibc".into() } else { names.first().cloned().unwrap_or_default() }
        }),
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
    };
    workloads::heap::validate(&cfg)?;
    // The parent's own calibration: the timer as this machine gives it.
    let timer = workloads::heap::timer::calibrate(60, 100_000);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let names: Vec<String> = cfg.allocators.iter().map(|a| a.name()).collect();
    let config = serde_json::to_value(record::results::heap::Config {
        threads: cfg.threads.clone(),
        allocators: names,
        heap_mode: cfg.heap_mode.clone(),
        workload: cfg.workload.clone(),
        ops_per_thread: cfg.ops,
        repeat: cfg.repeat,
        seed: cfg.seed,
        baseline: cfg.baseline.clone(),
        cores: cores as u64,
        timer: serde_json::to_value(timer)?,
        timer_overhead_ns: timer.overhead_ns,
    })?;
    let run = ExperimentRun::start("heap", &a.run, config)?;
    run.note(&format!(
        "timer: {} at {:.3} ns/tick, overhead {:.1} ns per call (subtracted){}; {cores} cores",
        timer.source,
        timer.ns_per_tick,
        timer.overhead_ns,
        if timer.invariant { "" } else { "; the CPU does not advertise an invariant TSC" }
    ));
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        workloads::heap::run(&cfg, &mut obs, record::stop::requested).map_err(exp_error)
    };
    let baseline = cfg.baseline.clone();
    conclude(
        run,
        r,
        a.run.json,
        report::heap::render,
        |all| {
            let results: Vec<&serde_json::Value> = all.iter().filter_map(|r| r.get("result")).collect();
            let unsupported: Vec<&serde_json::Value> = all.iter().filter_map(|r| r.get("unsupported")).collect();
            serde_json::json!({"experiment": "heap", "timer_overhead_ns": timer.overhead_ns, "timer": timer,
                "cores": cores, "baseline": baseline, "results": results, "unsupported": unsupported})
        },
        |all| {
            format!(
                "timer overhead {:.1} ns per call (subtracted); {cores} cores\n{}\n{}\npublished figures beside ours:\n{}",
                timer.overhead_ns,
                report::heap::text_table(all),
                report::heap::relative_table(all, &baseline),
                report::heap::reference_markdown(all)
            )
        },
    )
}

/// The lab's `heap` step for this machine.
pub fn lab_step(m: &Machine, full: bool) -> Step {
    // heap: thread counts up to 128 (full) or 4 × cores (quick: past the core
    // count, where the study's wall-time measure grows, at half the time of 8 ×).
    let c = m.cpus;
    let mut threads: Vec<u32> =
        if full { vec![1, 2, 4, 8, 16, 32, 64, 128] } else { vec![1, c, 2 * c, (4 * c).min(64)] };
    threads.sort_unstable();
    threads.dedup();
    let (ops, hrep) = if full { (2_000_000u64, 3u32) } else { (1_000_000u64, 3u32) };
    let thread_ops: f64 = threads.iter().map(|&t| t as f64 * (1.0 + t as f64 / c as f64 * 0.1)).sum();
    // Each repeat runs PROCS processes, each with its own growth phase (about
    // 300 000 allocations per thread) before its share of the warm calls.
    let procs = workloads::heap::PROCS as f64;
    let calls = ops as f64 + procs * 300_000.0;
    let heap_expect =
        1.0 + 3.0 * hrep as f64 * (threads.len() as f64 * 0.08 * procs + calls * thread_ops * 40e-9 / c as f64);
    step(
        "heap",
        vec![arg("--threads"), list(&threads), arg("--ops"), ops.to_string(), arg("--repeat"), hrep.to_string()],
        heap_expect,
    )
}
