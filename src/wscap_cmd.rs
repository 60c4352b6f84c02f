//! `pagelab wscap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::WscapArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
use crate::usage;
use workloads::wscap::WscapConfig;

pub fn run(a: &WscapArgs) -> anyhow::Result<()> {
    let cfg = WscapConfig {
        size: a.size,
        cap: a.cap,
        duration: a.duration,
        modes: a.modes.0.clone(),
        period: a.period,
        write: a.access == "write",
        backing: a.backing,
        compressor: a.compressor.clone(),
        repeat: a.repeat,
        sweep_caps: a.sweep_cap.clone(),
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
    };
    if a.period < std::time::Duration::from_millis(10) {
        return Err(usage("--period must be at least 10ms"));
    }
    workloads::wscap::validate(&cfg)?;
    let config = serde_json::json!({
        "size_bytes": cfg.size, "cap_bytes": cfg.cap, "duration_s": cfg.duration.as_secs_f64(),
        "modes": cfg.modes, "period_s": cfg.period.as_secs_f64(), "access": a.access, "backing": cfg.backing,
        "compressor": cfg.compressor, "repeat": cfg.repeat, "sweep_caps": cfg.sweep_caps,
    });
    let run = ExperimentRun::start("wscap", &a.run, config)?;
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        workloads::wscap::run(&cfg, &mut obs, record::stop::requested).map_err(exp_error)
    };
    conclude(
        run,
        r,
        a.run.json,
        report::wscap::render,
        |results| serde_json::json!({"experiment": "wscap", "results": results}),
        |results| {
            format!(
                "{}\npublished figures beside ours:\n{}",
                report::wscap::text_table(results),
                report::wscap::reference_markdown(results).split("\n\n").next().unwrap_or("")
            )
        },
    )
}
