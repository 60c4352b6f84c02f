//! Every experiment's renderer, on a small run directory of each committed as a
//! fixture (recorded by the real commands on the project's VM; see
//! tests/fixtures/run-dirs/README.md). The Markdown each renders is a snapshot: a
//! change to a table, a figure or a verdict shows up as a diff to review.

use experiments::catalog;
use report::html::{Render, Report};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-dirs").join(name)
}

/// A copy of a fixture run in a temporary directory (rendering writes into it).
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(fixture(name)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    (tmp, dst)
}

/// Text with the temporary directory's path replaced, so snapshots are stable.
fn stable(text: &str, dir: &Path) -> String {
    text.replace(&dir.display().to_string(), "<run>")
}

#[test]
fn every_experiment_has_a_fixture() {
    for e in catalog().0 {
        assert!(fixture(e.name()).join("run.json").is_file(), "no fixture run for {}", e.name());
    }
}

fn check(name: &str) {
    check_fixture(name, name)
}

/// A fixture of experiment `name` under another directory name (`snap` names
/// its snapshots too).
fn check_fixture(snap: &str, name: &str) {
    let (_tmp, dir) = copy(snap);
    let rec = record::RunRecord::load(&dir).unwrap();
    assert_eq!(rec.run.experiment, name);
    let e = catalog().find(name).unwrap();
    // The renderer writes its charts and <name>.md, and says so.
    let parsed = e.parse(rec.run.results.as_array().unwrap()).unwrap();
    let files = e.render(&rec, &parsed).unwrap();
    assert!(files.iter().any(|f| f.extension().is_some_and(|x| x == "svg")), "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        match f.extension().and_then(|x| x.to_str()) {
            Some("svg") => assert!(String::from_utf8_lossy(&bytes).contains("<svg"), "{}", f.display()),
            Some("png") => assert_eq!(&bytes[1..4], b"PNG", "{}", f.display()),
            Some("md") => assert!(String::from_utf8_lossy(&bytes).starts_with(&format!("# pagelab {name}"))),
            _ => {}
        }
    }
    let md = std::fs::read_to_string(dir.join(format!("{name}.md"))).unwrap();
    insta::assert_snapshot!(format!("{snap}_md"), stable(&md, &dir));
    // The report over the run: headline, verdicts and metrics, as Markdown.
    let r = Report::load(&dir, Render::IfMissing, catalog()).unwrap();
    assert_eq!(r.sections.len(), 1);
    let s = &r.sections[0];
    assert!(!s.metrics().is_empty(), "{name}: no headline metrics");
    // A verdict for each finding the experiment declares (rightsize declares none).
    assert_eq!(s.verdicts().is_empty(), e.claims().is_empty(), "{name}: verdicts against its finding list");
    assert!(!report::html::headline(s).is_empty(), "{name}: no summary line");
    insta::assert_snapshot!(format!("{snap}_report"), stable(&report::html::markdown(&r), &dir));
    // The HTML page: self-contained, one section for the experiment.
    let html = report::html::html(&r);
    assert!(html.contains(&format!("id=\"exp-{name}\"")), "{name}");
    // Its tables come from the run's entries, the same Markdown as the file
    // below its title, never from the file read back: a decoy written over
    // it does not reach the page.
    let tables = e.tables(&rec, &parsed);
    assert_eq!(format!("# pagelab {name}\n\n{tables}"), md, "{name}: the file is its tables under its title");
    std::fs::write(dir.join(format!("{name}.md")), "# pagelab decoy\n\ndecoy-table-text\n").unwrap();
    let again = report::html::html(&Report::load(&dir, Render::Never, catalog()).unwrap());
    assert!(!again.contains("decoy-table-text"), "{name}: the page read the file back");
    assert_eq!(again.contains("<h3>Tables</h3>"), !tables.trim().is_empty(), "{name}");
    assert!(!html.contains("<script"), "{name}: the page must hold no scripts");
    // Every metric is one of the experiment's declared figures, so it exports
    // under its Prometheus name.
    for m in s.metrics() {
        assert!(e.figures().iter().any(|f| f.name == m.name && f.export == m.export), "{name}: {} undeclared", m.name);
    }
    let om = report::openmetrics::report_file(&r);
    assert!(om.contains(&format!("pagelab_{name}_")) && om.ends_with("# EOF\n"), "{om}");
}

/// Three directories: one table, a column each; a figure only some have is
/// "-" where it is missing, and each later column is called against the first.
#[test]
fn many_directories_make_one_table() {
    let load = |n: &str| Report::load(&fixture(n), Render::Never, catalog()).unwrap();
    let rs = [load("eat"), load("eat"), load("wscap")];
    let cs: Vec<_> = rs[1..].iter().map(|b| report::compare::compare(&rs[0], b, 0.05, 2.0)).collect();
    let t = report::compare::table(&rs, &cs);
    assert_eq!(t.columns.len(), 3);
    assert!(t.columns.iter().all(|c| c.kernel.starts_with("6.18") && c.host == "vm"), "{:?}", t.columns);
    let semi = t.rows.iter().find(|r| r.group == "semi" && r.metric == "stored fraction").unwrap();
    assert_eq!(semi.cells[0].n, 2);
    assert_eq!(semi.cells[1].call, Some(report::compare::Call::Same));
    assert_eq!(semi.cells[1].change_pct, Some(0.0));
    assert_eq!(semi.cells[2].n, 0, "wscap has no eat figure");
    let scans = t.rows.iter().find(|r| r.experiment == "wscap" && r.metric == "scans/s").unwrap();
    assert_eq!((scans.cells[0].n, scans.cells[1].n), (0, 0));
    assert_eq!(scans.cells[2].call, Some(report::compare::Call::OnlyB));
    let text = report::compare::table_text(&t, 0.05, 2.0);
    assert!(text.starts_with("A: ") && text.contains("\nC: "), "{text}");
    let line = text.lines().find(|l| l.contains("semi") && l.contains("stored fraction")).unwrap();
    assert!(line.contains("within noise") && line.trim_end().ends_with('-'), "{line}");
    let md = report::compare::table_markdown(&t, 0.05, 2.0);
    assert!(md.contains("| experiment | configuration | metric | A | B | C |"), "{md}");
}

#[test]
fn eat_renders() {
    check("eat");
}

#[test]
fn wscap_renders() {
    check("wscap");
}

#[test]
fn heap_renders() {
    check("heap");
}

/// `heap --over-time --pressure` (no speed sweep): the phases' table, the
/// squeeze's, the chart per pattern and thread count, and its three findings.
#[test]
fn heap_over_time_renders() {
    check_fixture("heap-over-time", "heap");
}

#[test]
fn mapping_renders() {
    check("mapping");
}

#[test]
fn assess_renders() {
    check("assess");
}

#[test]
fn thrash_renders() {
    check("thrash");
}

#[test]
fn jank_renders() {
    check("jank");
}

#[test]
fn rightsize_renders() {
    check("rightsize");
}

/// eat's published-figures row for the read-back is the finding's arms,
/// semi ÷ const, named before the data: where random reads back slowest,
/// the row is not the slowest ÷ fastest of three (issue 57's biased
/// estimator).
#[test]
fn eat_reads_back_semi_over_const_not_slowest_over_fastest() {
    let rec = record::RunRecord::load(&fixture("eat")).unwrap();
    let mut rs: Vec<experiments::eat::results::EatResult> = serde_json::from_value(rec.run.results.clone()).unwrap();
    let read = |rs: &[experiments::eat::results::EatResult], p: &str| {
        rs.iter().filter(|r| r.pattern == p).map(|r| r.phases["read"].seconds).next().unwrap()
    };
    let row = |rs: &[experiments::eat::results::EatResult]| {
        let md = experiments::eat::report::reference_markdown(rs);
        md.lines().find(|l| l.starts_with("| read-back time, semi ÷ const")).expect(&md).to_string()
    };
    let before = row(&rs);
    let (semi, konst) = (read(&rs, "semi"), read(&rs, "const"));
    for r in rs.iter_mut().filter(|r| r.pattern == "random") {
        r.phases.get_mut("read").unwrap().seconds = 10.0 * semi.max(konst);
    }
    assert_eq!(row(&rs), before, "random's slow read-back must not enter the row");
    assert!(!before.ends_with("| - |"), "{before}");
}
