//! `pagelab compare A B [C ...]`: each directory's headline metrics against the
//! first's, as a table, Markdown, HTML or JSON. Three or more directories (one
//! per node or kernel) make one table with a column each.

use crate::cli::CompareArgs;
use crate::usage;
use report::html::{Render, Report};

pub fn run(a: &CompareArgs) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    // Each directory stays open until the end: the reports' paths go through
    // it (`/proc/self/fd/N`), and N must not be reused for another meanwhile.
    let mut open_dirs = Vec::new();
    // Each directory is read within a budget of its own; what is kept of them
    // all (results, configuration, notes) shares one.
    let kept = record::weight::Budget::default();
    for d in &a.dirs {
        if !d.is_dir() {
            return Err(usage(format!("{}: no such run or lab directory", d.display())));
        }
        // A directory named on the command line may be a link: it is opened
        // once and read through the open directory (nothing below it is
        // followed), so one swapped for a link meanwhile redirects no read.
        let open = record::rundir::OpenDir::named(d).map_err(|e| usage(e.to_string()))?;
        let named = crate::report_cmd::Named::new(open.path(), d.clone());
        let mut r = Report::load(&named.via, Render::Never, experiments::catalog())
            .map_err(|e| usage(named.text(&e.to_string())))?;
        r.dir = d.clone();
        open_dirs.push(open);
        // compare reads headline figures only: each directory is read within a
        // budget of its own, and its samples and events let go before the next.
        for s in &mut r.sections {
            for rec in s.record.iter_mut().chain(s.more.iter_mut().map(|(_, r)| r)) {
                rec.samples = Vec::new();
                rec.events = Vec::new();
            }
        }
        kept.charge(d, r.held_weight()).map_err(|e| {
            usage(format!("{e}; compare fewer directories at once (each one's results are kept until the end)"))
        })?;
        reports.push(r);
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
    // Three or more directories (one per node or kernel): one table, a column each.
    let table = (reports.len() > 2).then(|| report::compare::table(&reports, &comparisons));
    let text = if a.json {
        let doc = report::compare::CompareReport { comparisons: comparisons.clone(), table: table.clone() };
        let mut v = serde_json::to_value(&doc)?;
        v["format"] = crate::JSON_FORMAT.into();
        serde_json::to_string_pretty(&v)? + "\n"
    } else if a.html {
        report::compare::html(&comparisons)
    } else if a.markdown {
        match &table {
            Some(t) => report::compare::table_markdown(t, a.alpha, a.min_change),
            None => comparisons.iter().map(report::compare::markdown).collect::<Vec<_>>().join("\n"),
        }
    } else {
        match &table {
            Some(t) => report::compare::table_text(t, a.alpha, a.min_change),
            None => comparisons.iter().map(report::compare::text).collect::<Vec<_>>().join("\n"),
        }
    };
    say::out!("{text}");
    if let Some(out) = &a.out {
        crate::write_output(out, text.as_bytes(), Some("--out"))?;
        say::errln!("wrote {}", out.display());
    }
    Ok(())
}
