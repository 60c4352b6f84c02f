//! `pagelab assess`: glue between the CLI, the assessment, the run directory and
//! the report.

use crate::cli::AssessArgs;
use crate::experiment::{ExperimentRun, RunObserver, conclude, exp_error};
use crate::lab::{MIB, Machine, arg, mib, step};
use report::lab::Step;
use workloads::assess::AssessConfig;

pub fn run(a: &AssessArgs) -> anyhow::Result<()> {
    let cfg = AssessConfig {
        pid: a.pid,
        command: a.command.clone(),
        synthetic: a.synthetic,
        hot: a.hot,
        warmup: a.warmup,
        windows: a.windows.clone(),
        repeat: a.repeat,
        trim: a.trim,
        compressor: a.compressor.clone(),
        duration: a.duration,
        probe: a.probe.clone(),
        probe_runs: a.probe_runs,
        max_read: a.max_read,
        exe: std::env::current_exe()?,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
        source: a.source,
    };
    if let Some(cmd) = a.command.first()
        && crate::record_cmd::resolve_program(cmd).is_none()
    {
        return Err(crate::usage(format!("cannot run '{cmd}': not found or not executable (looked in PATH)")));
    }
    if a.probe.is_some() && a.trim.is_none() {
        return Err(crate::usage("--probe measures the trim's cost: give --trim with it"));
    }
    workloads::assess::validate(&cfg).map_err(exp_error)?;
    // The synthetic worker's memory is real memory on this machine: the host
    // guard's floor holds for it as for every experiment's plan.
    if let Some(size) = cfg.synthetic {
        let m = probe::Probe::default().meminfo()?.unwrap_or_default();
        sandbox::guard::HostGuard::new(a.run.host_floor, &m)
            .check_plan(size as u128, "--synthetic", &m)
            .map_err(anyhow::Error::new)?;
    }
    let config = serde_json::json!({
        "pid": cfg.pid, "command": cfg.command, "synthetic_bytes": cfg.synthetic, "hot": cfg.hot,
        "warmup_s": cfg.warmup.as_secs_f64(),
        "windows_s": cfg.windows.iter().map(|w| w.as_secs_f64()).collect::<Vec<_>>(), "repeat": cfg.repeat,
        "source": cfg.source,
        "trim": cfg.trim, "compressor": cfg.compressor, "duration_s": cfg.duration.as_secs_f64(),
        "probe": cfg.probe, "probe_runs": cfg.probe_runs, "max_read_bytes": cfg.max_read,
    });
    let run = ExperimentRun::start("assess", &a.run, config)?;
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        workloads::assess::run(&cfg, &mut obs, &record::stop::requested).map_err(exp_error)
    };
    conclude(
        run,
        r,
        a.run.json,
        report::assess::render,
        |all| serde_json::json!({"experiment": "assess", "results": all}),
        |all| {
            format!(
                "{}\npublished compressor ratios beside this program's:\n{}",
                report::assess::text_table(all),
                report::assess::reference_markdown(all)
            )
        },
    )
}

/// The lab's `assess` step: the synthetic worker, whose truth is known (a
/// quarter of it hot); trimmed into a zram made for the run in the full lab.
pub fn lab_step(m: &Machine, full: bool) -> Step {
    let size = if full { (256 * MIB).min(m.ram_bytes / 16) } else { (64 * MIB).min(m.ram_bytes / 32) }.max(16 * MIB);
    let mut args = vec![arg("--synthetic"), mib(size), arg("--hot"), arg("25%"), arg("--warmup"), arg("1s")];
    let (windows, last) = if full { ("1s,10s,60s", 60.0) } else { ("1s,3s", 3.0) };
    args.extend([arg("--windows"), arg(windows), arg("--repeat"), arg("3")]);
    let mut expect = 2.0 + 3.0 * (last + (size / MIB) as f64 * 0.02);
    if full && (m.root || m.swap_active) {
        args.extend([arg("--trim"), arg("auto"), arg("--duration"), arg("30s")]);
        expect += 32.0;
    }
    step("assess", args, expect)
}
