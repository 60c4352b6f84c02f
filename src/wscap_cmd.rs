//! `pagelab wscap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::WscapArgs;
use crate::eat_cmd::Obs;
use crate::experiment::ExperimentRun;
use crate::{Interrupted, usage};
use workloads::eat::EatError;
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
        host_floor: a.host_floor,
        swapfile_dir: a.swapfile_dir.clone(),
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
    let mut run = ExperimentRun::start("wscap", a.out.clone(), config, a.interval, a.host_floor)?;
    let r = {
        let mut obs = Obs { run: &run, quiet: true };
        workloads::wscap::run(&cfg, &mut obs, record::stop::requested).map_err(|e| match e {
            EatError::Interrupted => anyhow::Error::new(Interrupted),
            EatError::Sandbox(s) => anyhow::Error::new(s),
            EatError::Worker(w) => anyhow::anyhow!(w),
        })
    };
    run.finish(ExperimentRun::status_for(&r))?;
    let rec = record::RunRecord::load(run.dir.path())?;
    let results = rec.run.results.as_array().cloned().unwrap_or_default();
    match report::wscap::render(&rec) {
        Ok(files) if !a.json => files.iter().for_each(|f| eprintln!("wrote {}", f.display())),
        Ok(_) => {}
        Err(e) => eprintln!("pagelab: warning: charts not written: {e}"),
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"experiment": "wscap", "dir": run.dir.path(), "results": results})
            )?
        );
    } else if !results.is_empty() {
        print!("{}", report::wscap::text_table(&results));
        println!("\npublished figures beside ours:");
        print!("{}", report::wscap::reference_markdown(&results).split("\n\n").next().unwrap_or(""));
        println!("\nrun directory: {}", run.dir.path().display());
    }
    r.map(|_| ())
}
