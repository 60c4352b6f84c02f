//! Hostile input, memory (issue 46): a run or lab directory from elsewhere
//! must not make `report` or `compare` allocate without bound. A file's size
//! does not bound what parsing it costs (`[0,0,…]` is 2 bytes an element on
//! disk and 32 in memory), so each crafted directory here is read by a
//! pagelab whose address space is limited: it must finish or refuse in one
//! line, never abort on a failed allocation. docs/security.md lists them.

mod common;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;

/// The address space the child may use: several times what a real report
/// takes, far below what the crafted files took before (2 to 3 GB).
const LIMIT: u64 = 1 << 30;

fn pagelab_limited(args: &[&str]) -> std::process::Output {
    pagelab_limited_to(args, LIMIT)
}

fn pagelab_limited_to(args: &[&str], limit: u64) -> std::process::Output {
    let mut c = std::process::Command::new(common::bin());
    c.args(args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().unwrap()
}

/// Finished (exit 0) or refused in one line (exit 2); never an abort, a panic or a signal.
fn bounded(out: &std::process::Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("memory allocation") && !err.contains("panicked"), "{what}: {err}");
    match out.status.code() {
        Some(0) => {}
        Some(2) => assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{what}: {err}"),
        c => panic!(
            "{what}: exit {c:?} (signal {:?}): {err}",
            std::os::unix::process::ExitStatusExt::signal(&out.status)
        ),
    }
}

fn write_lines(path: &Path, n: usize, line: &str) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..n {
        f.write_all(line.as_bytes()).unwrap();
    }
}

/// run.json with its `results` replaced by `results` (raw JSON text).
fn set_results(dir: &Path, results: &str) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    v["results"] = serde_json::json!("@results@");
    let text = serde_json::to_string(&v).unwrap().replace("\"@results@\"", results);
    std::fs::write(dir.join("run.json"), text).unwrap();
}

fn every_mode(dir: &Path, what: &str) -> Vec<std::process::Output> {
    let d = dir.to_str().unwrap();
    let mut outs = Vec::new();
    for mode in [&[][..], &["--json"], &["--markdown"], &["--html"], &["--bmf", "-"]] {
        let mut args = vec!["report", d];
        args.extend_from_slice(mode);
        let out = pagelab_limited(&args);
        bounded(&out, &format!("{what}: report {mode:?}"));
        outs.push(out);
    }
    let out = pagelab_limited(&["compare", d, d]);
    bounded(&out, &format!("{what}: compare"));
    outs.push(out);
    outs
}

#[test]
fn events_of_huge_arrays_are_skipped_or_thinned_not_held() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_fixture("mapping", &dir);
    // 96 lines of a 1 MiB array each: 16 MiB a line as Values, 1.5 GiB in all.
    let line = format!("{{\"t_ns\":1,\"kind\":\"info\",\"name\":\"x\",\"detail\":[{}0]}}\n", "0,".repeat(1 << 19));
    write_lines(&dir.join("events.jsonl"), 96, &line);
    for out in every_mode(&dir, "events") {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn samples_with_thousands_of_processes_are_thinned_by_weight() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_fixture("mapping", &dir);
    // 300 samples of 10 000 processes each: 100 KiB a line on disk, about
    // 3.5 MiB parsed (a process's sample is a few hundred bytes), 1 GiB in all.
    let pids = vec![r#"{"pid":1}"#; 10_000].join(",");
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("samples.jsonl")).unwrap());
    for t in 0..300u64 {
        writeln!(f, "{{\"t_ns\":{t},\"psi\":{{}},\"pids\":[{pids}]}}").unwrap();
    }
    drop(f);
    every_mode(&dir, "samples");
    let out = pagelab_limited(&["report", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("read evenly thinned from 300 in the file"), "{text}");
}

#[test]
fn a_run_json_that_would_take_more_than_a_report_holds_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_fixture("eat", &dir);
    // 30 MiB of zeros: under the file size limit, about 2 GiB as Values.
    set_results(&dir, &format!("[{}0]", "0,".repeat(15 << 20)));
    for out in every_mode(&dir, "zeros") {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("run.json: reading it would take about") && err.contains("MiB pagelab holds"), "{err}");
    }
    // Empty entries: three bytes each in the file, a whole typed entry in memory.
    set_results(&dir, &format!("[{}{{}}]", "{},".repeat(1 << 20)));
    for out in every_mode(&dir, "empty entries") {
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_lab_whose_runs_together_pass_the_budget_is_refused_naming_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    let mut steps = Vec::new();
    for i in 0..12 {
        let name = format!("eat{i}");
        let dir = lab.join(&name);
        common::copy_fixture("eat", &dir);
        // About 24 MiB each by the estimate, so the lab passes the 256 MiB a
        // report holds (record::weight::READ_BUDGET) at the eleventh.
        // One eat entry that also holds an array no experiment reads: charged as read.
        set_results(&dir, &format!("[{{\"pattern\":\"zero\",\"repeat\":1,\"x\":[{}0]}}]", "0,".repeat(192 << 10)));
        steps.push(serde_json::json!({"experiment": "eat", "args": [], "expect_s": 1.0, "state": "complete",
            "dir": name, "pass": if i == 0 { 1 } else { 2 }}));
    }
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "root": true, "cpus": 2, "ram_bytes": 1, "expect_s": 2.0, "doctor": {},
        "passes": 2, "steps": steps
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    for out in every_mode(&lab, "lab") {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("/run.json: reading it would take about") && err.contains("already read"), "{err}");
    }
}

/// A review found the first weighing of a sample counting its lists only:
/// 30 000 meminfo keys a sample (about 1.7 MiB parsed, 0.3 MiB on disk) were
/// charged a few hundred bytes, and 400 of them were held whole.
#[test]
fn samples_with_huge_key_tables_are_weighed_by_what_they_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_fixture("mapping", &dir);
    let keys: String = (0..30_000).map(|i| format!("\"k{i}\":0,")).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("samples.jsonl")).unwrap());
    for t in 0..400u64 {
        writeln!(f, "{{\"t_ns\":{t},\"psi\":{{}},\"meminfo\":{{{keys}\"MemTotal\":1}}}}").unwrap();
    }
    drop(f);
    for args in [vec!["report", dir.to_str().unwrap()], vec!["report", dir.to_str().unwrap(), "--json"]] {
        let out = pagelab_limited_to(&args, 512 << 20);
        bounded(&out, "key tables");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// report.html's fields are cut: one step's arguments of 8 MiB of `&` (5
/// bytes each escaped), shown in each of 64 sections, made a 2.5 GiB page.
#[test]
fn a_huge_text_field_cannot_make_the_page_huge() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    std::fs::create_dir_all(&lab).unwrap();
    let mut steps = vec![serde_json::json!({"experiment": "eat", "args": ["&".repeat(8 << 20)], "expect_s": 1.0,
        "state": "skipped", "reason": "<".repeat(1 << 20)})];
    for _ in 0..63 {
        steps.push(serde_json::json!({"experiment": "eat", "args": [], "expect_s": 1.0, "state": "skipped"}));
    }
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "root": true, "cpus": 2, "ram_bytes": 1, "expect_s": 2.0, "doctor": {},
        "notes": vec!["<".repeat(1 << 16); 300], "steps": steps
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = pagelab_limited(&["report", lab.to_str().unwrap()]);
    bounded(&out, "huge field");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::metadata(lab.join("report.html")).unwrap().len();
    assert!(page < 8 << 20, "report.html is {page} bytes");
}

/// compare keeps every directory's results until the end: one directory of
/// 31 MiB of configuration, named 40 times, held 1.2 GiB.
#[test]
fn compare_holds_what_all_its_directories_keep_within_one_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_fixture("eat", &dir);
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    v["config"]["pad"] = serde_json::json!("x".repeat(31 << 20));
    std::fs::write(dir.join("run.json"), serde_json::to_vec(&v).unwrap()).unwrap();
    let d = dir.to_str().unwrap();
    let out = pagelab_limited(&[&["compare"][..], &[d; 40]].concat());
    bounded(&out, "compare");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("compare fewer directories at once"), "{err}");
    // Two are fine.
    let out = pagelab_limited(&["compare", d, d]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
