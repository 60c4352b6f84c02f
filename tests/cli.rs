//! Bad input: every malformed invocation exits 2 with one line on stderr that
//! names the flag or value, and never panics.

use assert_cmd::Command;

fn pagelab() -> Command {
    let mut c = Command::cargo_bin("pagelab").unwrap();
    // Keep these tests away from the real journal directory.
    c.env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-cli-test-journals"));
    c
}

fn bad(args: &[&str], must_mention: &str) {
    let out = pagelab().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: exit {:?}, stderr: {err}", out.status.code());
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.contains(must_mention), "{args:?}: '{must_mention}' not in: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn malformed_invocations_exit_2_with_one_line() {
    bad(&["frobnicate"], "frobnicate");
    bad(&["record", "--interval", "fast", "--duration", "1s"], "--interval");
    bad(&["record", "--interval", "5ms", "--duration", "1s"], "10ms");
    bad(&["record", "--interval", "2h", "--duration", "1s"], "--interval");
    bad(&["record", "--duration", "10"], "ms, s, m or h");
    bad(&["record", "--duration", "0s"], "greater than zero");
    bad(&["record", "--duration", "-1s"], "--duration");
    bad(&["record"], "--duration");
    bad(&["record", "--duration", "1s", "--", "true"], "cannot be combined");
    bad(&["record", "--", "/definitely/not/a/program"], "not found");
    bad(&["record", "--pid", "999999999", "--duration", "1s"], "--pid");
    bad(&["record", "--pid", "abc", "--duration", "1s"], "--pid");
    bad(&["record", "--pid", "1", "--cgroup", "x", "--duration", "1s"], "--cgroup");
    bad(&["record", "--cgroup", "no/such/group/here", "--duration", "1s"], "--cgroup");
    bad(&["record", "--bogus-flag"], "--bogus-flag");
    bad(&["report"], "DIR");
    bad(&["report", "/nonexistent/run/dir"], "no such run or lab directory");
    bad(&["report", "/"], "not a pagelab run directory");
    bad(&["completions", "tcsh"], "tcsh");
    bad(&["bench", "everything"], "everything");
    bad(&["bench", "probe", "--iterations", "0"], "--iterations");
    bad(&["__sandbox-drill", "--zram", "12XB"], "B, KiB, MiB");
    bad(&["__sandbox-drill", "--cgroup", "0"], "greater than zero");
    bad(&["doctor", "--json=yes"], "--json");
}

#[test]
fn help_and_version_exit_0() {
    let out = pagelab().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("doctor"));
    let out = pagelab().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = pagelab().args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("record"), "{shell}");
    }
    let out = pagelab().arg("man").output().unwrap();
    assert!(out.status.success());
    let man = String::from_utf8_lossy(&out.stdout);
    assert!(man.contains(".TH pagelab") && man.contains("doctor"), "{man}");
    assert!(!man.contains("__worker"), "hidden commands stay out of the man page");
}

#[test]
fn doctor_json_has_the_documented_keys() {
    let out = pagelab().args(["doctor", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "kernel",
        "root",
        "cgroup",
        "swap",
        "zram",
        "zswap",
        "psi",
        "thp",
        "madvise_pageout",
        "process_madvise",
        "page_size",
        "ram_bytes",
        "cpus",
    ] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    assert!(v["ram_bytes"].as_u64().unwrap() > 0);
    assert!(v["page_size"].as_u64().unwrap() >= 4096);
    assert_eq!(v["root"]["is_root"].as_bool().unwrap(), unsafe { libc::geteuid() } == 0);
}
