//! Hostile input (issue 31): pagelab runs as root, so a run or lab directory
//! from elsewhere, an output path or a flag's value must never make it write,
//! replace or read what it did not make. Each test is named after the
//! behaviour it checks; docs/security.md lists them.

mod common;
use assert_cmd::Command;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/run-dirs").join(name)
}

fn copy_into(name: &str, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(fixture(name)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}

fn pagelab(args: &[&str]) -> std::process::Output {
    Command::new(common::bin()).args(args).output().unwrap()
}

/// A file outside every run directory, as root's victim: mode 0600, known content.
fn victim(dir: &Path) -> PathBuf {
    let v = dir.join("victim");
    std::fs::write(&v, "secret\n").unwrap();
    std::fs::set_permissions(&v, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    v
}

fn untouched(v: &Path) {
    assert_eq!(std::fs::read_to_string(v).unwrap(), "secret\n", "{} was written", v.display());
}

/// One line on stderr, exit 2, mentioning `what`.
fn refused(out: &std::process::Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit {:?}: {err}", out.status.code());
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{err}");
    assert!(err.contains(what), "'{what}' not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn report_refuses_to_write_through_a_link_in_the_run_directory() {
    // timeline.csv is written by every `report DIR`; the charts and the
    // Markdown by `--html` (wscap.md present, even as a link, means "rendered").
    for (name, html) in
        [("timeline.csv", false), ("scans.svg", true), ("scans.png", true), ("timeline.png", true), ("wscap.md", true)]
    {
        let tmp = tempfile::tempdir().unwrap();
        let v = victim(tmp.path());
        let dir = tmp.path().join("run");
        copy_into("wscap", &dir);
        symlink(&v, dir.join(name)).unwrap();
        let d = dir.to_str().unwrap();
        let args: Vec<&str> = if html { vec!["report", d, "--html"] } else { vec!["report", d] };
        let out = pagelab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        if name != "wscap.md" {
            assert!(!out.status.success() && err.contains("is a symbolic link"), "{name}: {err}");
        }
        untouched(&v);
        assert!(std::fs::symlink_metadata(dir.join(name)).unwrap().file_type().is_symlink(), "{name}");
    }
}

#[test]
fn report_html_refuses_a_link_named_report_html() {
    let tmp = tempfile::tempdir().unwrap();
    let v = victim(tmp.path());
    let dir = tmp.path().join("run");
    copy_into("eat", &dir);
    symlink(&v, dir.join("report.html")).unwrap();
    let out = pagelab(&["report", dir.to_str().unwrap(), "--html"]);
    refused(&out, "report.html: is a symbolic link");
    untouched(&v);
}

#[test]
fn record_refuses_a_linked_events_file() {
    let tmp = tempfile::tempdir().unwrap();
    let v = victim(tmp.path());
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    symlink(&v, dir.join("events.jsonl")).unwrap();
    let out = pagelab(&["record", "--duration", "200ms", "--out", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    untouched(&v);
}

#[test]
fn exports_refuse_a_device_node_or_a_link_as_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let v = victim(tmp.path());
    let dir = tmp.path().join("run");
    copy_into("mapping", &dir);
    let link = tmp.path().join("metrics.prom");
    symlink(&v, &link).unwrap();
    for flag in ["--openmetrics", "--bmf"] {
        let out = pagelab(&["report", dir.to_str().unwrap(), flag, "/dev/null"]);
        refused(&out, &format!("{flag} /dev/null: is a device node"));
        let out = pagelab(&["report", dir.to_str().unwrap(), flag, link.to_str().unwrap()]);
        refused(&out, "is a symbolic link");
        untouched(&v);
    }
    // A new path is written whole, and no temporary file is left beside it.
    let new = tmp.path().join("new.prom");
    let out = pagelab(&["report", dir.to_str().unwrap(), "--openmetrics", new.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&new).unwrap().ends_with("# EOF\n"));
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn lab_with_step_dir(lab: &Path, dir: &str) {
    std::fs::create_dir_all(lab).unwrap();
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "ended_unix_ms": 2, "wall_s": 1.0, "root": true, "cpus": 2, "ram_bytes": 1,
        "expect_s": 2.0, "doctor": {},
        "steps": [{"experiment": "eat", "args": [], "expect_s": 1.0, "state": "complete", "dir": dir}]
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
}

#[test]
fn a_lab_step_dir_outside_the_lab_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // A real run directory beside the lab: reachable by ../ or by its absolute path.
    let outside = tmp.path().join("outside");
    copy_into("eat", &outside);
    for dir in ["../outside".to_string(), outside.display().to_string(), "./eat/../../outside".into()] {
        let lab = tmp.path().join(format!("lab-{}", dir.len()));
        lab_with_step_dir(&lab, &dir);
        let out = pagelab(&["report", lab.to_str().unwrap()]);
        refused(&out, "is not a name inside the lab directory");
        assert!(!outside.join("eat.md").exists(), "{dir}: rendered outside the lab");
    }
    // A step dir that is a link to a directory elsewhere is refused too.
    let lab = tmp.path().join("lab-link");
    lab_with_step_dir(&lab, "eat");
    symlink(&outside, lab.join("eat")).unwrap();
    let out = pagelab(&["report", lab.to_str().unwrap()]);
    refused(&out, "is a symbolic link");
    assert!(!outside.join("eat.md").exists());
}

#[test]
fn a_lab_json_with_absurdly_many_steps_is_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    std::fs::create_dir_all(&lab).unwrap();
    let step = serde_json::json!({"experiment": "eat", "args": [], "expect_s": 1.0, "state": "complete", "dir": "eat"});
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "root": true, "cpus": 2, "ram_bytes": 1, "expect_s": 2.0, "doctor": {},
        "steps": vec![step; 2000]
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = pagelab(&["report", lab.to_str().unwrap()]);
    refused(&out, "2000 steps; a lab has at most 64");
    assert!(!lab.join("report.html").exists());
}

#[test]
fn compare_and_man_out_errors_name_the_path_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_into("mapping", &dir);
    let d = dir.to_str().unwrap();
    let out = pagelab(&["compare", d, d, "--out", "/proc/no/such/file"]);
    refused(&out, "--out /proc/no/such/file");
    let out = pagelab(&["compare", d, d, "--out", "/dev/null"]);
    refused(&out, "--out /dev/null: is a device node");
    let out = pagelab(&["man", "--out", "/proc/self/no-such-dir"]);
    refused(&out, "--out /proc/self/no-such-dir");
}

#[test]
fn doctor_changes_nothing_by_default() {
    let before = common::system_state();
    let out = pagelab(&["doctor", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(common::system_state(), before, "doctor changed the machine");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let from = v["zram"]["algorithms_from"].as_str().unwrap_or_default().to_string();
    assert!(!from.contains("pagelab added"), "doctor added a device without --probe-zram: {from}");
}

#[test]
fn a_full_disk_names_the_file_and_leaves_no_temporary_file() {
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root to mount a 64 KiB tmpfs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "pagelab-test-small", mnt.to_str().unwrap()])
        .status()
        .unwrap();
    if !ok.success() {
        common::skip("mount -t tmpfs failed");
        return;
    }
    let target = mnt.join("big.json");
    let r = record::safe::write(&target, &vec![b'x'; 1 << 20]);
    let entries: Vec<_> = std::fs::read_dir(&mnt).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let e = r.unwrap_err();
    assert!(e.to_string().contains("big.json: the disk is full"), "{e}");
    assert!(entries.is_empty(), "left behind: {entries:?}");
}
