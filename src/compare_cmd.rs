//! `pagelab compare A B [C ...]`: each directory's headline metrics against the
//! first's, as a table, Markdown, HTML or JSON.

use crate::cli::CompareArgs;
use crate::usage;
use anyhow::Context;
use report::html::{Render, Report};

pub fn run(a: &CompareArgs) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for d in &a.dirs {
        if !d.is_dir() {
            return Err(usage(format!("{}: no such run or lab directory", d.display())));
        }
        reports.push(Report::load(d, Render::Never).map_err(usage)?);
    }
    let base = &reports[0];
    let comparisons: Vec<_> =
        reports[1..].iter().map(|b| report::compare::compare(base, b, a.alpha, a.min_change)).collect();
    if comparisons.iter().all(|c| c.rows.is_empty()) {
        return Err(usage(format!(
            "nothing to compare: {} and the others have no headline metrics of the same experiments",
            a.dirs[0].display()
        )));
    }
    let text = if a.json {
        serde_json::to_string_pretty(&serde_json::json!({ "comparisons": comparisons }))? + "\n"
    } else if a.html {
        report::compare::html(&comparisons)
    } else if a.markdown {
        comparisons.iter().map(report::compare::markdown).collect::<Vec<_>>().join("\n")
    } else {
        comparisons.iter().map(report::compare::text).collect::<Vec<_>>().join("\n")
    };
    print!("{text}");
    if let Some(out) = &a.out {
        std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}
