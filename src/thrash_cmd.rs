//! `pagelab thrash`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::cli::ThrashArgs;
use crate::experiment::RunObserver;
use crate::experiment::{ExperimentRun, conclude, exp_error};
use workloads::thrash::ThrashConfig;

pub fn run(a: &ThrashArgs) -> anyhow::Result<()> {
    let presets: Vec<String> = a.preset.0.iter().fold(Vec::new(), |mut v, p| {
        if !v.contains(p) {
            v.push(p.clone());
        }
        v
    });
    let cfg = ThrashConfig {
        presets,
        consumers: a.consumers,
        size: a.size,
        writes: a.writes,
        sleep: a.sleep,
        stagger: a.stagger,
        initial_delay: a.initial_delay,
        limit: a.limit,
        backings: a.backing.0.clone(),
        scale: a.scale,
        time_scale: a.time_scale,
        repeat: a.repeat,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
    };
    let plans = workloads::thrash::validate(&cfg)?;
    let expected_s: f64 = plans
        .iter()
        .map(|p| (p.baseline().as_secs_f64() + p.planned_duration_ms / 1e3 + 10.0) * a.repeat as f64)
        .sum::<f64>()
        * a.backing.0.len() as f64;
    let config = serde_json::json!({
        "plans": plans, "repeat": a.repeat, "backing": a.backing.0.iter().map(|b| format!("{b:?}").to_lowercase()).collect::<Vec<_>>(), "scale": a.scale,
        "time_scale": a.time_scale.unwrap_or(a.scale),
        "smooth": a.smooth, "recovery_rule": workloads::thrash::RECOVERY, "interval_ms": a.run.interval.as_millis() as u64,
        "probe_period_ms": workloads::thrash::PROBE_PERIOD.as_millis() as u64, "probe_ws_bytes": workloads::thrash::PROBE_WS,
    });
    let run = ExperimentRun::start("thrash", &a.run, config)?;
    run.note(&format!(
        "expected time: about {:.0} min ({} preset(s) × {} repeat(s) × {} store(s)); Ctrl-C stops and restores everything",
        expected_s / 60.0,
        plans.len(),
        a.repeat,
        a.backing.0.len()
    ));
    let r = {
        let mut obs = RunObserver { run: &run, quiet: true };
        workloads::thrash::run(&cfg, &mut obs, record::stop::requested).map_err(exp_error)
    };
    conclude(
        run,
        r,
        a.run.json,
        report::thrash::render,
        |all| {
            let results: Vec<serde_json::Value> = all
                .iter()
                .filter_map(|r| r.get("result"))
                .map(|r| {
                    let mut r = r.clone();
                    // The per-second series are in run.json and the charts; keep stdout readable.
                    if let Some(o) = r.as_object_mut() {
                        o.remove("series");
                    }
                    r
                })
                .collect();
            serde_json::json!({"experiment": "thrash", "results": results, "summary": report::thrash::summary(all)})
        },
        |all| format!("{}\n{}", report::thrash::text_table(all), report::thrash::findings_markdown(all)),
    )
}
