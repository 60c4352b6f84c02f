//! `pagelab record` and `pagelab report`, end to end, including a SIGKILL mid-run.

use assert_cmd::Command;
use std::time::Duration;

mod common;

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("pagelab")
}

fn journal_env() -> (&'static str, std::path::PathBuf) {
    ("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-record-test-journals"))
}

#[test]
fn record_a_command_passes_its_exit_code_and_report_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (k, v) = journal_env();
    let out = Command::new(bin())
        .env(k, v)
        .args(["record", "--interval", "50ms", "--out", dir.to_str().unwrap(), "--", "sh", "-c", "sleep 0.6; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"]["state"], "complete");
    assert_eq!(run["experiment"], "record");
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert!(samples.lines().count() >= 5, "{} samples", samples.lines().count());
    // The command was the target: its pid appears in the samples.
    assert!(samples.contains("\"pids\""));
    let out = Command::new(bin()).args(["report", dir.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("timeline.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "t_s",
        "target_anon_bytes",
        "compressed_store_bytes",
        "free_bytes",
        "cpu_user_pct",
        "pswpout_per_s",
        "psi_memory_some_pct",
    ] {
        assert!(header.split(',').any(|c| c == col), "column {col}");
    }
    assert_eq!(csv.lines().count(), samples.lines().count(), "one row per interval plus the header");
    // Target RSS is non-zero while the shell runs.
    let anon_col = header.split(',').position(|c| c == "target_anon_bytes").unwrap();
    assert!(csv.lines().skip(1).any(|l| l.split(',').nth(anon_col).is_some_and(|v| v != "0")));
}

#[test]
fn record_duration_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (k, v) = journal_env();
    let out = Command::new(bin())
        .env(k, v)
        .args(["record", "--duration", "500ms", "--interval", "100ms", "--json", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["status"], "complete");
    assert!(v["summary"]["samples"].as_u64().unwrap() >= 3);
    // A second run into the same directory is refused.
    let out =
        Command::new(bin()).args(["record", "--duration", "1s", "--out", dir.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sigkill_mid_run_leaves_a_readable_interrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (k, v) = journal_env();
    let mut child = std::process::Command::new(bin())
        .env(k, v)
        .args(["record", "--duration", "60s", "--interval", "20ms", "--out", dir.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let samples = dir.join("samples.jsonl");
    common::wait_until("10 samples", Duration::from_secs(30), || common::lines_in(&samples) >= 10);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let out = Command::new(bin()).args(["report", "--json", dir.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["status"], "interrupted");
    assert!(v["summary"]["samples"].as_u64().unwrap() >= 10, "{v}");
    assert!(dir.join("timeline.csv").exists());
}

#[test]
fn sigint_stops_cleanly_with_status_interrupted_and_exit_130() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (k, v) = journal_env();
    let mut child = std::process::Command::new(bin())
        .env(k, v)
        .args(["record", "--duration", "60s", "--interval", "50ms", "--out", dir.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Samples on disk: the handlers are installed (they are before sampling starts).
    let samples = dir.join("samples.jsonl");
    common::wait_until("3 samples", Duration::from_secs(30), || common::lines_in(&samples) >= 3);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"]["state"], "interrupted");
    assert!(run["sampler"]["samples"].as_u64().unwrap() > 0);
}

/// Issue 17 item 5: `report` reads only regular files, with a size bound, and
/// says what a run directory lacks. A FIFO hung it forever; /dev/zero ran it out
/// of memory; a missing samples.jsonl read as a complete run with 0 samples.
#[test]
fn report_refuses_fifos_and_devices_and_names_missing_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (k, v) = journal_env();
    let out = Command::new(bin())
        .env(k, v)
        .args(["record", "--interval", "50ms", "--duration", "300ms", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let samples = dir.join("samples.jsonl");
    let report = |want: Option<i32>, needle: &str| {
        let mut child = std::process::Command::new(bin())
            .args(["report", dir.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("report did not finish in 20 s ({needle})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), want, "{text}");
        assert!(text.contains(needle), "'{needle}' not in: {text}");
        assert!(!text.contains("panicked"));
    };
    // A FIFO with no writer.
    std::fs::remove_file(&samples).unwrap();
    let c = std::ffi::CString::new(samples.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    report(Some(2), "samples.jsonl: not a regular file");
    // A link to an endless device.
    std::fs::remove_file(&samples).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &samples).unwrap();
    report(Some(2), "samples.jsonl: is a symbolic link");
    // Missing: said, not silently a complete run with no samples.
    std::fs::remove_file(&samples).unwrap();
    report(Some(0), "missing: samples.jsonl (no timeline");
    // run.json as a FIFO too.
    let rj = dir.join("run.json");
    std::fs::remove_file(&rj).unwrap();
    let c = std::ffi::CString::new(rj.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    report(Some(2), "run.json: not a regular file");
}
