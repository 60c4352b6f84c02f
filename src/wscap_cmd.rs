//! `pagelab wscap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::WscapArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
use crate::lab::{Machine, arg, skip, step};
use crate::usage;
use report::lab::Step;
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

/// The lab's `wscap` step for this machine.
pub fn lab_step(m: &Machine, full: bool) -> Step {
    // wscap: the study's 64 MiB scan under a 32 MiB cap.
    let (dur, rep) = if full { (5.0, 3u32) } else { (1.0, 3u32) };
    let mut w_args = vec![
        arg("--size"),
        arg("64MiB"),
        arg("--cap"),
        arg("32MiB"),
        arg("--duration"),
        format!("{dur}s"),
        arg("--repeat"),
        rep.to_string(),
    ];
    let mut modes = 6.0;
    let mut w_note = None;
    if full {
        w_args.extend([arg("--sweep-cap"), arg("56MiB,48MiB,40MiB,24MiB,16MiB")]);
        modes += 5.0 / rep as f64;
    }
    let wscap = if m.root {
        Some(step("wscap", w_args, 1.0 + modes * rep as f64 * (dur + 0.3)))
    } else if m.swap_active {
        w_args.extend([arg("--backing"), arg("existing"), arg("--modes"), arg("none,periodic-pageout,periodic-cold")]);
        w_note = Some("the cap modes need a memory cgroup, which needs root: only the periodic modes ran".into());
        Some(step("wscap", w_args, 1.0 + 3.0 * rep as f64 * (dur + 0.3)))
    } else {
        None
    };
    match wscap {
        Some(mut w) => {
            w.note = w_note;
            w
        }
        None => skip(
            step("wscap", vec![], 0.0),
            "needs root: a capped working set needs swap to go to, and without root pagelab can neither \
             create zram nor a memory cgroup (and no swap is active)",
        ),
    }
}
