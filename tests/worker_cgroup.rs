//! Workers inside memory cgroups, as root: placement before allocation, a limit
//! that really limits, and an OOM kill reported with the phase and the limit.

mod common;
use std::process::Command;

/// These tests run one at a time: a zram swap made by one would take the pages of
/// another's limited group, and change what the other expects.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn drill(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("pagelab"))
        .env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-worker-test-journals"))
        .arg("__sandbox-drill")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, err)
}

fn skip() -> bool {
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root");
        return true;
    }
    if probe::Probe::default().memory_controller().ok().flatten().is_none() {
        common::skip("no memory cgroup controller");
        return true;
    }
    false
}

#[test]
fn worker_is_placed_in_its_cgroup_and_the_limit_holds() {
    if skip() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, v, err) = drill(&["--cgroup", "64MiB", "--touch", "16MiB"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["worker_in_cgroup"], true, "{v}");
    assert_eq!(v["worker"]["outcome"], "ready", "{v}");
    let usage = v["cgroup_usage_bytes"].as_u64().unwrap();
    assert!(((16 << 20)..=(64 << 20)).contains(&usage), "usage {usage}");
    assert!(v["cgroup"]["name"].as_str().unwrap().starts_with("pagelab/drill-"));
}

#[test]
fn exceeding_the_limit_without_swap_is_an_oom_kill_reported_with_phase_and_limit() {
    if skip() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if std::fs::read_to_string("/proc/swaps").unwrap().lines().count() > 1 {
        common::skip("a swap device is active, so the group would swap instead of being OOM-killed");
        return;
    }
    let (code, v, err) = drill(&["--cgroup", "32MiB", "--touch", "96MiB"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["worker"]["outcome"], "failed", "{v}");
    assert_eq!(v["worker"]["oom_killed"], true, "{v}");
    let msg = v["worker"]["message"].as_str().unwrap();
    assert!(msg.contains("killed by the OOM killer in cgroup pagelab/drill-"), "{msg}");
    assert!(msg.contains("(limit 32.00 MiB)"), "{msg}");
    assert!(msg.contains("phase touch"), "{msg}");
    let restored = v["restored"].as_array().unwrap();
    assert!(restored.iter().any(|r| r.as_str().unwrap().contains("removed cgroup")), "{v}");
}

#[test]
fn with_zram_the_group_swaps_instead_and_stays_under_its_limit() {
    if skip() || !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs zram");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, v, err) = drill(&["--zram", "128MiB", "--cgroup", "32MiB", "--touch", "64MiB", "--swappiness", "100"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["worker"]["outcome"], "ready", "{v}");
    assert!(v["cgroup_usage_bytes"].as_u64().unwrap() <= 32 << 20, "{v}");
    assert!(v["worker"]["status"]["swap_bytes"].as_u64().unwrap() >= 24 << 20, "{v}");
}
