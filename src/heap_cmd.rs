//! `pagelab heap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::HeapArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
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
    let config = serde_json::json!({
        "threads": cfg.threads, "allocators": names, "heap_mode": cfg.heap_mode, "workload": cfg.workload,
        "ops_per_thread": cfg.ops, "repeat": cfg.repeat, "seed": cfg.seed, "baseline": cfg.baseline,
        "cores": cores, "timer": timer, "timer_overhead_ns": timer.overhead_ns,
    });
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
