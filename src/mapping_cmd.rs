//! `pagelab mapping`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::MappingArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
use crate::lab::{MIB, Machine, arg, mib, step};
use report::lab::Step;
use workloads::mapping::MappingConfig;

pub fn run(a: &MappingArgs) -> anyhow::Result<()> {
    let cfg = MappingConfig {
        size: a.size,
        stride: a.stride,
        touch: a.touch.clone(),
        iterations: a.iterations,
        warmup: a.warmup,
        repeat: a.repeat,
        methods: a.methods.clone(),
        hugepages: a.hugepages.clone(),
        pressure: a.pressure,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
    };
    workloads::mapping::validate(&cfg)?;
    let config = serde_json::json!({
        "size_bytes": cfg.size, "stride_bytes": cfg.stride, "touch": cfg.touch, "iterations": cfg.iterations,
        "warmup": cfg.warmup, "repeat": cfg.repeat, "methods": cfg.methods, "hugepages": cfg.hugepages, "pressure": cfg.pressure,
    });
    let run = ExperimentRun::start("mapping", &a.run, config)?;
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        workloads::mapping::run(&cfg, &mut obs, record::stop::requested).map_err(exp_error)
    };
    conclude(
        run,
        r,
        a.run.json,
        report::mapping::render,
        |all| {
            let results: Vec<&serde_json::Value> = all.iter().map(|r| &r["result"]).collect();
            let baseline = all.first().map(|r| r["baseline"].clone()).unwrap_or_default();
            serde_json::json!({"experiment": "mapping", "baseline": baseline, "results": results})
        },
        |all| {
            format!(
                "{}\n{}\npublished figures beside ours:\n{}",
                report::mapping::text_table(all),
                report::mapping::semantics_markdown(all),
                report::mapping::reference_markdown(all).split("\n\n").next().unwrap_or("")
            )
        },
    )
}

/// The lab's `mapping` step for this machine.
pub fn lab_step(m: &Machine, full: bool) -> Step {
    // mapping: the study's 300 MiB (full) or 128 MiB (quick), as RAM allows.
    let map_size =
        if full { (300 * MIB).min(m.ram_bytes / 16) } else { (128 * MIB).min(m.ram_bytes / 32) }.max(16 * MIB);
    // Repeats are separate runs of every method (the verdicts' unit); the
    // iterations inside one run only make its median.
    let (iters, warm, reps) = if full { (10u32, 2u32, 5u32) } else { (2, 1, 4) };
    step(
        "mapping",
        vec![
            arg("--size"),
            mib(map_size),
            arg("--iterations"),
            iters.to_string(),
            arg("--warmup"),
            warm.to_string(),
            arg("--repeat"),
            reps.to_string(),
        ],
        1.0 + 7.0 * reps as f64 * (0.15 + (iters + warm) as f64 * (map_size / MIB) as f64 * 0.0009),
    )
}
