//! `pagelab report DIR`: timeline.csv and a summary, for complete and interrupted
//! runs; report.html (`--html`) and Markdown tables (`--markdown`) for run and
//! lab directories.

use crate::cli::ReportArgs;
use crate::usage;
use std::path::{Path, PathBuf};

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    if !a.dir.is_dir() {
        return Err(usage(format!("{}: no such run or lab directory", a.dir.display())));
    }
    // The directory the user named is opened once, here: a link at its name
    // is followed now (it is trusted as named, at this moment) and never
    // again. Every read and write below goes through the open directory, so
    // replacing the named directory with a link while the report runs
    // redirects nothing (issue 46). Below it, no link is followed at all.
    let open = record::rundir::OpenDir::named(&a.dir).map_err(|e| usage(e.to_string()))?;
    let named = Named { via: open.path(), shown: a.dir.clone() };
    let mut b = a.clone();
    b.dir = named.via.clone();
    in_dir(&b, &named).map_err(|e| named.error(e))
}

/// The directory a report works in (`/proc/self/fd/N`) and the name the user
/// gave it, which is what every message and output path shows.
pub struct Named {
    pub via: PathBuf,
    shown: PathBuf,
}

impl Named {
    pub fn new(via: PathBuf, shown: PathBuf) -> Named {
        Named { via, shown }
    }

    fn show(&self, p: &Path) -> PathBuf {
        p.strip_prefix(&self.via).map_or_else(|_| p.to_path_buf(), |rest| self.shown.join(rest))
    }

    /// `text` with the open directory's path replaced by the name given
    /// (`/proc/self/fd/3` inside `/proc/self/fd/31` is left alone).
    pub fn text(&self, text: &str) -> String {
        let via = self.via.display().to_string();
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find(&via) {
            let after = &rest[i + via.len()..];
            out += &rest[..i];
            out += &if after.starts_with(|c: char| c.is_ascii_digit()) {
                via.clone()
            } else {
                self.shown.display().to_string()
            };
            rest = after;
        }
        out + rest
    }

    fn error(&self, e: anyhow::Error) -> anyhow::Error {
        if let Some(experiments::Error::Usage(u)) = crate::experiment_error(&e).map(|x| x.root()) {
            usage(self.text(u))
        } else {
            // Any other error keeps its type (an exit code, a sandbox error);
            // only one whose words name the open directory is reworded, and
            // it keeps its exit code: 2 for bad input, 1 otherwise.
            let text = format!("{e:#}");
            let shown = self.text(&text);
            if shown == text {
                e
            } else if crate::is_usage(&e) {
                usage(shown)
            } else {
                anyhow::anyhow!(shown)
            }
        }
    }
}

fn in_dir(a: &ReportArgs, named: &Named) -> anyhow::Result<()> {
    if let Some(out) = &a.out {
        // A run or lab whose results are not its experiments' is refused
        // before `--out` is made or anything copied into it.
        if a.dir.join("run.json").exists() || a.dir.join(report::lab::FILE).exists() {
            report::html::Report::load(&a.dir, report::html::Render::Never, experiments::catalog())
                .map_err(|e| usage(e.to_string()))?;
        }
        // Made here (or an empty directory already there, never a link), then
        // opened once without following a link at its name: every copy and
        // every write of the report goes through the open directory, so
        // `--out` swapped for a link meanwhile (say in /tmp, to a directory
        // root reads from) redirects nothing.
        let bad = || usage(format!("--out {}: exists and is not an empty directory; give a new one", out.display()));
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| usage(format!("--out {}: {e}", out.display())))?;
        }
        match std::fs::create_dir(out) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if !out.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(bad());
                }
            }
            Err(e) => return Err(usage(format!("--out {}: {e}", out.display()))),
        }
        let to = record::rundir::OpenDir::open(out).map_err(|e| usage(format!("--out {e}")))?;
        if std::fs::read_dir(to.path()).map(|mut d| d.next().is_some()).unwrap_or(true) {
            return Err(bad());
        }
        copy_tree(&a.dir, &to.path(), 1).map_err(|e| usage(format!("--out {}: {e}", out.display())))?;
        let named = Named { via: to.path(), shown: out.clone() };
        let mut b = a.clone();
        b.dir = named.via.clone();
        b.out = None;
        return in_dir(&b, &named).map_err(|e| named.error(e));
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
        let mut r = report::html::Report::load(
            &a.dir,
            if a.html { report::html::Render::Always } else { report::html::Render::IfMissing },
            experiments::catalog(),
        )
        .map_err(|e| usage(read_only_hint(e.to_string())))?;
        r.dir = named.shown.clone();
        for u in &r.unwritten {
            say::errln!("pagelab: warning: {}", named.text(u));
        }
        if a.markdown {
            say::out!("{}", report::html::markdown(&r));
        }
        if a.html || (is_lab && !a.markdown) {
            let path = match write_html(&r, &a.dir) {
                Ok(p) => named.show(&p),
                // A full disk (issue 59): what was read is whole; say it, then fail.
                Err(e) if crate::experiment_error(&e).is_some_and(|x| x.disk_full()) => {
                    if !a.json {
                        say::out!("{}", summary_text(&r));
                    }
                    return Err(e.context("report.html was not written; the summary above is whole"));
                }
                Err(e) => return Err(e),
            };
            if a.json {
                let f = r.findings_doc();
                crate::print_json(&LabReportOutput { report_html: path.display().to_string(), findings: f })?;
            } else if !a.markdown {
                say::out!("{}", summary_text(&r));
                say::outln!("wrote {}", path.display());
            } else {
                say::errln!("wrote {}", path.display());
            }
        }
        return Ok(());
    }
    run_dir(a, named)
}

/// `report RUN_DIR`: timeline.csv and the summary.
fn run_dir(a: &ReportArgs, named: &Named) -> anyhow::Result<()> {
    // The run is read once, as a report: its results typed (an entry that is
    // not its experiment's is refused before anything is written), its
    // findings for --json; the record is the report's.
    let report = report::html::Report::load(&a.dir, report::html::Render::Never, experiments::catalog())
        .map_err(|e| usage(e.to_string()))?;
    let owned;
    let rec = match report.sections.first().and_then(|s| s.record.as_ref()) {
        Some(rec) => rec,
        None => {
            owned = record::RunRecord::load(&a.dir).map_err(|e| usage(e.to_string()))?;
            &owned
        }
    };
    let iv = record::derive::intervals(&rec.samples);
    let csv = report::timeline::csv(rec, &iv);
    let path = a.dir.join("timeline.csv");
    let wrote = record::safe::write(&path, csv.as_bytes());
    let shown = named.show(&path);
    let s = report::summary::summarize(rec, &iv);
    // The summary is whole whatever the disk says: it is printed first, and
    // a full disk (issue 59: a run that filled it) is a fault, exit 1.
    if a.json {
        let f = report.findings_doc();
        let csv = wrote.is_ok().then_some(&shown);
        let timeline_csv = csv.map(|p| p.display().to_string());
        crate::print_json(&RunReportOutput {
            timeline_csv,
            summary: s.clone(),
            findings: f,
            control: report.control.as_ref(),
        })?;
    } else {
        if let Some(m) = &report.control {
            say::outln!("This is {}", m.sentence());
        }
        say::out!("{}", report::summary::render_text(&s));
        if wrote.is_ok() {
            say::outln!("wrote {} ({} rows)", shown.display(), iv.len());
        }
    }
    match wrote {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
            Err(anyhow::anyhow!("{e}; the summary above is whole, timeline.csv was not written"))
        }
        Err(e) if record::safe::is_refused(&e) => Err(usage(e.to_string())),
        Err(e) => Err(usage(read_only_hint(format!("writing {}: {e}", path.display())))),
    }
}

/// `--openmetrics FILE` and `--bmf FILE`: the headline figures, read only.
fn export(a: &ReportArgs) -> anyhow::Result<()> {
    let r = report::html::Report::load(&a.dir, report::html::Render::Never, experiments::catalog())
        .map_err(|e| usage(e.to_string()))?;
    let mut wrote = ExportOutput::default();
    let outputs = [
        ("--openmetrics", "openmetrics", a.openmetrics.as_ref(), report::openmetrics::report_file(&r)),
        ("--bmf", "bmf", a.bmf.as_ref(), serde_json::to_string_pretty(&report::openmetrics::bmf(&r))? + "\n"),
    ];
    for (flag, key, path, text) in outputs {
        let Some(path) = path else { continue };
        if path.as_os_str() == "-" {
            say::out!("{text}");
            continue;
        }
        crate::write_output(path, text.as_bytes(), Some(flag))?;
        let shown = Some(path.display().to_string());
        match key {
            "openmetrics" => wrote.openmetrics = shown,
            _ => wrote.bmf = shown,
        }
        if !a.json {
            say::errln!("wrote {}", path.display());
        }
    }
    if a.json {
        crate::print_json(&wrote)?;
    }
    Ok(())
}

/// `pagelab report RUN_DIR --json`: the run's timeline and summary, and its
/// findings (schema/report-output.schema.json is generated from the three
/// shapes report --json prints).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct RunReportOutput<'a> {
    /// timeline.csv as written; null where it could not be (the summary is whole).
    pub timeline_csv: Option<String>,
    /// The run's headline numbers.
    pub summary: report::summary::Summary,
    pub findings: report::verdict::Findings<'a>,
    /// A run `pagelab bench controls` made under a control (its
    /// control.json): its verdicts say whether a finding can turn, not what
    /// this machine gives as the study ran. Absent for any other run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<&'a report::control::Mark>,
}

/// `pagelab report LAB_DIR --json`: the lab's report.html and its findings.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct LabReportOutput<'a> {
    pub report_html: String,
    pub findings: report::verdict::Findings<'a>,
}

/// `pagelab report DIR --openmetrics FILE --bmf FILE --json`: the files written.
#[derive(Default, serde::Serialize, schemars::JsonSchema)]
#[schemars(extend("minProperties" = 2))]
pub struct ExportOutput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openmetrics: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmf: Option<String>,
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

/// Copies a run or lab directory's regular files into `to` (a directory
/// that exists), and for a lab its run directories (`depth` levels). Links,
/// devices and FIFOs are skipped; a source file is opened without following
/// a link.
fn copy_tree(from: &Path, to: &Path, depth: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    // Both opened once, without following a link at their names; entries are
    // read and made through the open directories, so a directory swapped for
    // a link while the copy runs is refused, not copied from or into.
    let d = record::rundir::OpenDir::open(from).map_err(|e| std::io::Error::other(e.to_string()))?;
    let t = record::rundir::OpenDir::open(to).map_err(|e| std::io::Error::other(e.to_string()))?;
    let to = t.path();
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
            std::fs::create_dir(&dst)?;
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
    // A lab that was resumed says so (issue 59): its report is whole, and
    // its steps' times are those of the runs kept.
    if let Some(l) = &r.lab
        && !l.resumed.is_empty()
    {
        for n in l.notes.iter().filter(|n| n.starts_with("resumed ")) {
            o += &format!("{n}\n");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn report_args(dir: &Path) -> ReportArgs {
        match crate::cli::Cli::try_parse_from(["pagelab", "report", dir.to_str().unwrap(), "--html"]).unwrap().command {
            crate::cli::Cmd::Report(a) => a,
            _ => unreachable!(),
        }
    }

    /// A lab of one eat step (the fixture run), as `pagelab lab` leaves it.
    fn lab(dst: &Path) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/experiments/tests/fixtures/run-dirs/eat");
        std::fs::create_dir_all(dst.join("eat")).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dst.join("eat").join(e.file_name())).unwrap();
        }
        let doc = serde_json::json!({
            "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
            "started_unix_ms": 1, "ended_unix_ms": 2, "wall_s": 1.0, "root": true, "cpus": 2, "ram_bytes": 1,
            "expect_s": 2.0, "doctor": {},
            "steps": [{"experiment": "eat", "args": [], "expect_s": 1.0, "state": "complete", "dir": "eat"}]
        });
        std::fs::write(dst.join(report::lab::FILE), serde_json::to_vec(&doc).unwrap()).unwrap();
    }

    /// Issue 46, the last race: the directory named on the command line is
    /// replaced by a link to another directory after the report started.
    /// Through the directory opened at the start, every write lands in the
    /// directory named; through its name (as before), they follow the link.
    #[test]
    fn a_named_directory_swapped_for_a_link_mid_report_redirects_no_write() {
        let tmp = tempfile::tempdir().unwrap();
        let swap = |run: &Path, outside: &Path| {
            // The link's target is a lab too, so a report through it succeeds.
            lab(run);
            lab(outside);
            let open = record::rundir::OpenDir::named(run).unwrap();
            let moved = run.with_extension("moved");
            std::fs::rename(run, &moved).unwrap();
            std::os::unix::fs::symlink(outside, run).unwrap();
            (open, moved)
        };
        // As `report` does it now: through the open directory.
        let (run, outside) = (tmp.path().join("run"), tmp.path().join("outside"));
        let (open, moved) = swap(&run, &outside);
        let named = Named { via: open.path(), shown: run.clone() };
        let mut a = report_args(&run);
        a.dir = named.via.clone();
        in_dir(&a, &named).unwrap();
        let wrote = |d: &Path| d.join("report.html").exists() || d.join("eat/eat.md").exists();
        assert!(!wrote(&outside), "a write followed the link");
        assert!(moved.join("report.html").is_file() && moved.join("eat/eat.md").is_file());
        let page = std::fs::read_to_string(moved.join("report.html")).unwrap();
        assert!(
            page.contains(&run.display().to_string()) && !page.contains("/proc/self/fd"),
            "the page names the open fd"
        );
        // The control: the same swap with the lab reached by its name
        // writes through the link, which is the race the open directory closes.
        let (run, outside) = (tmp.path().join("run2"), tmp.path().join("outside2"));
        let (open, _moved) = swap(&run, &outside);
        let named = Named { via: open.path(), shown: run.clone() };
        in_dir(&report_args(&run), &named).unwrap();
        assert!(wrote(&outside), "the control did not follow the link");
    }

    #[test]
    fn messages_name_the_directory_given_not_the_descriptor() {
        let n = Named { via: PathBuf::from("/proc/self/fd/3"), shown: PathBuf::from("lab") };
        assert_eq!(
            n.text("/proc/self/fd/3/eat/run.json: bad; /proc/self/fd/31/x"),
            "lab/eat/run.json: bad; /proc/self/fd/31/x"
        );
        assert_eq!(n.show(Path::new("/proc/self/fd/3/report.html")), Path::new("lab/report.html"));
    }
}
