//! `pagelab mapping`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::Interrupted;
use crate::cli::MappingArgs;
use crate::eat_cmd::Obs;
use crate::experiment::ExperimentRun;
use workloads::eat::EatError;
use workloads::mapping::MappingConfig;

pub fn run(a: &MappingArgs) -> anyhow::Result<()> {
    let cfg = MappingConfig {
        size: a.size,
        stride: a.stride,
        touch: a.touch.clone(),
        iterations: a.iterations,
        warmup: a.warmup,
        methods: a.methods.clone(),
        hugepages: a.hugepages.clone(),
        pressure: a.pressure,
        exe: std::env::current_exe()?,
        host_floor: a.host_floor,
    };
    workloads::mapping::validate(&cfg)?;
    let config = serde_json::json!({
        "size_bytes": cfg.size, "stride_bytes": cfg.stride, "touch": cfg.touch, "iterations": cfg.iterations,
        "warmup": cfg.warmup, "methods": cfg.methods, "hugepages": cfg.hugepages, "pressure": cfg.pressure,
    });
    let mut run = ExperimentRun::start("mapping", a.out.clone(), config, a.interval, a.host_floor)?;
    let r = {
        let mut obs = Obs { run: &run, quiet: true };
        workloads::mapping::run(&cfg, &mut obs, record::stop::requested).map_err(|e| match e {
            EatError::Interrupted => anyhow::Error::new(Interrupted),
            EatError::Sandbox(s) => anyhow::Error::new(s),
            EatError::Worker(w) => anyhow::anyhow!(w),
        })
    };
    run.finish(ExperimentRun::status_for(&r))?;
    let rec = record::RunRecord::load(run.dir.path())?;
    let all = rec.run.results.as_array().cloned().unwrap_or_default();
    match report::mapping::render(&rec) {
        Ok(files) if !a.json => files.iter().for_each(|f| eprintln!("wrote {}", f.display())),
        Ok(_) => {}
        Err(e) => eprintln!("pagelab: warning: charts not written: {e}"),
    }
    if a.json {
        let results: Vec<&serde_json::Value> = all.iter().map(|r| &r["result"]).collect();
        let baseline = all.first().map(|r| r["baseline"].clone()).unwrap_or_default();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"experiment": "mapping", "dir": run.dir.path(), "baseline": baseline, "results": results})
            )?
        );
    } else if !all.is_empty() {
        print!("{}", report::mapping::text_table(&all));
        println!();
        print!("{}", report::mapping::semantics_markdown(&all));
        println!("\npublished figures beside ours:");
        print!("{}", report::mapping::reference_markdown(&all).split("\n\n").next().unwrap_or(""));
        println!("\nrun directory: {}", run.dir.path().display());
    }
    r.map(|_| ())
}
