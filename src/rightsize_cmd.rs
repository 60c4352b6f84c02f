//! `pagelab rightsize`: glue between the CLI, the search (or service mode),
//! the run directory and the report.

use crate::cli::RightsizeArgs;
use crate::experiment::{ExperimentRun, RunObserver, conclude, exp_error};
use crate::lab::{Machine, arg, skip, step};
use crate::usage;
use report::lab::Step;
use workloads::rightsize::search::SearchConfig;
use workloads::rightsize::service::ServiceConfig;
use workloads::rightsize::{self as rs, BatchConfig};

const MIB: u64 = 1 << 20;

fn service_config(a: &RightsizeArgs) -> ServiceConfig {
    ServiceConfig {
        pid: a.pid,
        cgroup: a.cgroup.clone(),
        psi: a.psi,
        probe: a.probe.clone(),
        probe_slowdown: a.probe_slowdown,
        duration: a.duration,
        interval: a.every,
        step: a.step,
        backing: a.backing,
        compressor: a.compressor.clone(),
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
    }
}

/// The command to size: the user's, or pagelab's own hot/cold program.
fn command(a: &RightsizeArgs) -> anyhow::Result<Vec<String>> {
    if let (Some(hot), Some(cold)) = (a.synthetic_hot, a.synthetic_cold) {
        let exe = std::env::current_exe()?.to_string_lossy().to_string();
        return Ok(vec![
            exe,
            "__hotcold".into(),
            "--hot".into(),
            hot.to_string(),
            "--cold".into(),
            cold.to_string(),
            "--passes".into(),
            a.synthetic_passes.to_string(),
        ]);
    }
    let Some(cmd) = a.command.first() else {
        return Err(usage(
            "give the program to size after --, e.g. `pagelab rightsize -- xz -9 -k -c big.tar`, \
             or --pid PID / --cgroup PATH for a running service, or --synthetic-hot/--synthetic-cold",
        ));
    };
    if crate::record_cmd::resolve_program(cmd).is_none() {
        return Err(usage(format!("cannot run '{cmd}': not found or not executable (looked in PATH)")));
    }
    Ok(a.command.clone())
}

pub fn run(a: &RightsizeArgs) -> anyhow::Result<()> {
    let service = a.pid.is_some() || a.cgroup.is_some();
    workloads::backing::validate_with_dir(a.backing, a.compressor.as_deref(), &a.swapfile.swapfile_dir)
        .map_err(anyhow::Error::new)?;
    let m = probe::Probe::default().meminfo()?.unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(a.run.host_floor, &m);
    let avail = m.get("MemAvailable").unwrap_or(0);
    // A fifth below the guard's room: a program that grows without bound meets
    // its group's limit (an OOM kill in the group) before the guard stops the run.
    let guard_max = avail.saturating_sub(guard.floor) / 5 * 4;
    let config;
    let mut mode = None;
    let mut batch = None;
    if service {
        let c = service_config(a);
        workloads::rightsize::service::validate(&c).map_err(exp_error)?;
        config = serde_json::json!({
            "mode": "service", "pid": a.pid, "cgroup": a.cgroup, "psi": a.psi, "probe": a.probe,
            "probe_slowdown": a.probe_slowdown, "duration_s": a.duration.as_secs_f64(),
            "every_s": a.every.as_secs_f64(), "step": a.step, "backing": a.backing, "compressor": a.compressor,
        });
        mode = Some(c);
    } else {
        let command = command(a)?;
        sandbox::privilege::require_admin(
            "creating a memory cgroup for each run",
            "rightsize's batch mode needs root; service mode (--pid) works on a process you own with --backing existing",
        )
        .map_err(anyhow::Error::new)?;
        if guard_max < 64 * MIB {
            return Err(usage(format!(
                "only {} MiB is available above the host guard's floor ({} MiB): too little to run a program in; \
                 free memory or lower --host-floor",
                avail / MIB,
                guard.floor / MIB
            )));
        }
        if let Some(h) = a.synthetic_hot {
            let total = h + a.synthetic_cold.unwrap_or(0);
            guard.check_plan(total as u128, "--synthetic-hot + --synthetic-cold", &m).map_err(anyhow::Error::new)?;
        }
        let search = SearchConfig {
            slowdown: a.slowdown,
            max_runs: a.runs,
            pairs: a.repeat,
            cap_factor: a.time_cap,
            resolution: a.resolution,
            budget_s: a.budget.as_secs_f64(),
        };
        if a.runs < 1 + 2 * a.repeat {
            return Err(usage(format!(
                "--runs {} leaves no room for a verification of --repeat {} pairs: give --runs {} or more",
                a.runs,
                a.repeat,
                1 + 2 * a.repeat
            )));
        }
        config = serde_json::json!({
            "mode": "batch", "command": command, "slowdown": a.slowdown, "backing": a.backing,
            "compressor": a.compressor, "budget_s": a.budget.as_secs_f64(), "runs": a.runs, "repeat": a.repeat,
            "time_cap": a.time_cap, "resolution": a.resolution, "guard_max_bytes": guard_max,
            "synthetic_hot_bytes": a.synthetic_hot, "synthetic_cold_bytes": a.synthetic_cold,
            "synthetic_passes": a.synthetic_hot.map(|_| a.synthetic_passes),
        });
        batch = Some(BatchConfig {
            command,
            search,
            backing: a.backing,
            compressor: a.compressor.clone(),
            swapfile_dir: a.swapfile.swapfile_dir.clone(),
            guard_max,
            synthetic: a.synthetic_hot.zip(a.synthetic_cold),
        });
    }
    let run = ExperimentRun::start("rightsize", &a.run, config)?;
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        let res = match (&mode, &batch) {
            (Some(c), _) => rs::service::run(c, &mut obs, &record::stop::requested),
            (_, Some(b)) => rs::run(b, &mut obs, &record::stop::requested),
            _ => unreachable!("one mode"),
        };
        res.map(|r| run.push_result(&r)).map_err(exp_error)
    };
    conclude(
        run,
        r,
        a.run.json,
        report::rightsize::render,
        |results| serde_json::json!({"experiment": "rightsize", "results": results}),
        |results| {
            format!(
                "{}\npublished figures beside ours:\n{}",
                report::rightsize::text_table(results),
                report::rightsize::reference_markdown(results)
            )
        },
    )
}

/// The lab's `rightsize` step: pagelab's hot/cold program (64 MiB hot, 192
/// MiB cold), whose answer is known, in the full lab; the quick lab leaves it
/// out (a dozen runs of a program do not fit its budget).
pub fn lab_step(m: &Machine, full: bool) -> Step {
    let args = vec![
        arg("--synthetic-hot"),
        arg("64MiB"),
        arg("--synthetic-cold"),
        arg("192MiB"),
        arg("--slowdown"),
        arg("10%"),
    ];
    let s = step("rightsize", args, 180.0);
    if !full {
        skip(s, "the full lab runs it: a dozen runs of a program take about three minutes")
    } else if !m.root {
        skip(s, "needs root: each run goes in a memory cgroup made for it")
    } else {
        s
    }
}
