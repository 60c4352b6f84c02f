//! `pagelab report DIR`: timeline.csv and a summary, for complete and interrupted
//! runs; report.html (`--html`) and Markdown tables (`--markdown`) for run and
//! lab directories.

use crate::cli::ReportArgs;
use crate::usage;
use std::path::Path;

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(usage(format!("{}: no such run or lab directory", a.dir.display())));
    }
    // The directory the user named may be reached through a link; below it,
    // nothing is (a run's files and a lab's steps are written with no link
    // followed), so it is resolved once here.
    if a.out.is_none()
        && a.dir.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())
        && let Ok(real) = a.dir.canonicalize()
    {
        let mut b = a.clone();
        b.dir = real;
        return run(&b);
    }
    if let Some(out) = &a.out {
        if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
            return Err(usage(format!(
                "--out {}: exists and is not an empty directory; give a new one",
                out.display()
            )));
        }
        // The directory named may be a link; nothing below it is followed.
        let from = a.dir.canonicalize().unwrap_or_else(|_| a.dir.clone());
        copy_tree(&from, out, 1).map_err(|e| usage(format!("--out {}: {e}", out.display())))?;
        let mut b = a.clone();
        b.dir = out.clone();
        b.out = None;
        return run(&b);
    }
    let is_lab = a.dir.join(report::lab::FILE).exists();
    if !is_lab && !a.dir.join("run.json").exists() {
        return Err(usage(format!(
            "{}: not a pagelab run directory (no run.json) or lab directory (no lab.json)",
            a.dir.display()
        )));
    }
    if a.openmetrics.is_some() || a.bmf.is_some() {
        return export(a);
    }
    if a.html || a.markdown || is_lab {
        let r = report::html::Report::load(
            &a.dir,
            if a.html { report::html::Render::Always } else { report::html::Render::IfMissing },
            experiments::catalog(),
        )
        .map_err(|e| usage(read_only_hint(e)))?;
        if a.markdown {
            print!("{}", report::html::markdown(&r));
        }
        if a.html || (is_lab && !a.markdown) {
            let path = write_html(&r, &a.dir)?;
            if a.json {
                let f = r.findings_doc();
                crate::print_json(&serde_json::json!({"report_html": path, "findings": f}))?;
            } else if !a.markdown {
                print!("{}", summary_text(&r));
                println!("wrote {}", path.display());
            } else {
                eprintln!("wrote {}", path.display());
            }
        }
        return Ok(());
    }
    // --json reads the run once, as a report (its findings too); the record is the report's.
    let report = match a.json {
        true => Some(
            report::html::Report::load(&a.dir, report::html::Render::Never, experiments::catalog()).map_err(usage)?,
        ),
        false => None,
    };
    let owned;
    let rec = match report.as_ref().and_then(|r| r.sections.first()).and_then(|s| s.record.as_ref()) {
        Some(rec) => rec,
        None => {
            owned = record::RunRecord::load(&a.dir).map_err(|e| usage(e.to_string()))?;
            &owned
        }
    };
    let iv = record::derive::intervals(&rec.samples);
    let csv = report::timeline::csv(rec, &iv);
    let path = a.dir.join("timeline.csv");
    crate::write_output(&path, csv.as_bytes(), None).map_err(|e| usage(read_only_hint(format!("{e:#}"))))?;
    let s = report::summary::summarize(rec, &iv);
    if let Some(r) = &report {
        let f = r.findings_doc();
        crate::print_json(&serde_json::json!({"timeline_csv": path, "summary": s, "findings": f}))?;
    } else {
        print!("{}", report::summary::render_text(&s));
        println!("wrote {} ({} rows)", path.display(), iv.len());
    }
    Ok(())
}

/// `--openmetrics FILE` and `--bmf FILE`: the headline figures, read only.
fn export(a: &ReportArgs) -> anyhow::Result<()> {
    let r = report::html::Report::load(&a.dir, report::html::Render::Never, experiments::catalog()).map_err(usage)?;
    let mut wrote = serde_json::Map::new();
    let outputs = [
        ("--openmetrics", "openmetrics", a.openmetrics.as_ref(), report::openmetrics::report_file(&r)),
        ("--bmf", "bmf", a.bmf.as_ref(), serde_json::to_string_pretty(&report::openmetrics::bmf(&r))? + "\n"),
    ];
    for (flag, key, path, text) in outputs {
        let Some(path) = path else { continue };
        if path.as_os_str() == "-" {
            print!("{text}");
            continue;
        }
        crate::write_output(path, text.as_bytes(), Some(flag))?;
        wrote.insert(key.into(), serde_json::json!(path));
        if !a.json {
            eprintln!("wrote {}", path.display());
        }
    }
    if a.json {
        crate::print_json(&wrote)?;
    }
    Ok(())
}

/// A write refused by the directory's permissions says how to render anyway.
fn read_only_hint(e: String) -> String {
    if e.contains("Permission denied") || e.contains("Read-only file system") {
        format!(
            "{e}; report writes its charts and report.html beside the run: give --out DIR to render a copy elsewhere"
        )
    } else {
        e
    }
}

/// Copies a run or lab directory's regular files into `to` (created), and
/// for a lab its run directories (`depth` levels). Links, devices and FIFOs
/// are skipped; a source file is opened without following a link.
fn copy_tree(from: &Path, to: &Path, depth: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // Opened once, without following a link at its name; its entries are
    // read through the open directory, so a directory swapped for a link
    // while the copy runs is refused, not copied from.
    let d = record::rundir::OpenDir::open(from).map_err(|e| std::io::Error::other(e.to_string()))?;
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(d.path())? {
        let e = e?;
        let t = e.file_type()?;
        let name = e.file_name();
        let Some(src_path) = name.to_str().and_then(|n| d.at(n)) else { continue };
        let dst = to.join(&name);
        if t.is_file() {
            let mut src = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&src_path)?;
            let meta = src.metadata()?;
            if !meta.is_file() {
                continue;
            }
            let mut out = record::safe::create_new(&dst)?;
            // No more readable than the original (a 0600 file stays 0600).
            out.set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode() & 0o644))?;
            std::io::copy(&mut src, &mut out)?;
        } else if t.is_dir() && depth > 0 {
            copy_tree(&src_path, &dst, depth - 1)?;
        }
    }
    Ok(())
}

/// Writes DIR/report.html and returns its path.
pub fn write_html(r: &report::html::Report, dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join("report.html");
    crate::write_output(&path, report::html::html(r).as_bytes(), None)?;
    Ok(path)
}

/// The headline table as aligned text.
pub fn summary_text(r: &report::html::Report) -> String {
    let rows = report::html::summary_rows(r);
    let head = report::html::SUMMARY_HEAD;
    let mut w = [0usize; 5];
    for (i, h) in head.iter().enumerate() {
        w[i] = h.chars().count();
    }
    for row in &rows {
        for (i, c) in row.iter().enumerate().take(3) {
            w[i] = w[i].max(c.chars().count().min(60));
        }
    }
    let mut o = String::new();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i < 3 {
                let pad = w[i].saturating_sub(c.chars().count());
                s += &format!("{c}{}  ", " ".repeat(pad));
            } else if i == 3 {
                s += &format!("{c}  [{}]", cells[4]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    o += &line([head[0], head[1], head[2], head[3], head[4]]);
    for row in &rows {
        o += &line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
    o
}
