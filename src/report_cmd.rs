//! `pagelab report DIR`: timeline.csv and a summary, for complete and interrupted runs.

use crate::cli::ReportArgs;
use crate::usage;
use anyhow::Context;

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(usage(format!("{}: no such run directory", a.dir.display())));
    }
    if !a.dir.join("run.json").exists() {
        return Err(usage(format!("{}: not a pagelab run directory (no run.json)", a.dir.display())));
    }
    let rec = record::RunRecord::load(&a.dir).map_err(|e| usage(e.to_string()))?;
    let iv = record::derive::intervals(&rec.samples);
    let csv = report::timeline::csv(&rec, &iv);
    let path = a.dir.join("timeline.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    let s = report::summary::summarize(&rec, &iv);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"timeline_csv": path, "summary": s}))?);
    } else {
        print!("{}", report::summary::render_text(&s));
        println!("wrote {} ({} rows)", path.display(), iv.len());
    }
    Ok(())
}
