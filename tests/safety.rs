//! Bad input and missing privilege: a one-line error, exit 2, and no change to
//! the system (zram devices, swap areas, pagelab cgroups, sysctls).

use std::process::Command;

mod common;
use common::{bin, system_state};

/// Runs the drill, expecting exit 2, one line on stderr containing `needle`, and
/// no change to the system.
fn refused(cmd: &mut Command, needle: &str) {
    let before = system_state();
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "one line: {err}");
    assert!(err.contains(needle), "'{needle}' not in: {err}");
    assert!(!err.contains("panicked"));
    assert_eq!(system_state(), before, "the system changed");
}

fn drill(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-safety-test-journals"));
    c.arg("__sandbox-drill").args(args);
    c
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn bad_input_changes_nothing() {
    if unsafe { libc::geteuid() } != 0 {
        common::skip("without root these requests are refused for lack of privilege instead");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    refused(&mut drill(&["--swappiness", "60", "--cgroup", "1TiB"]), "larger than this machine's RAM");
    if std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        refused(
            &mut drill(&["--swappiness", "61", "--zram", "64MiB", "--algorithm", "zip9"]),
            "unknown zram algorithm 'zip9'",
        );
        refused(&mut drill(&["--zram", "4KiB"]), "too small");
    }
    refused(&mut drill(&["--zram", "0"]), "greater than zero");
    refused(&mut drill(&["--cgroup", "-5MiB"]), "--cgroup");
}

#[test]
fn host_guard_refuses_a_plan_below_the_floor() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A floor larger than any machine's memory: every plan is refused, with numbers.
    refused(&mut drill(&["--cgroup", "64MiB", "--host-floor", "100TiB"]), "host guard: this drill plans 64.00 MiB");
}

#[test]
fn without_root_privileged_operations_fail_with_the_operation_named() {
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/usr/bin/setpriv").exists() {
        common::skip("needs root and setpriv to drop to an unprivileged user");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let nobody = |args: &[&str]| {
        let mut c = Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]).arg(bin()).args(args);
        c
    };
    if std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        refused(
            &mut nobody(&["__sandbox-drill", "--zram", "64MiB"]),
            "creating a zram swap device needs root (CAP_SYS_ADMIN)",
        );
    }
    if probe::Probe::default().memory_controller().ok().flatten().is_some() {
        refused(
            &mut nobody(&["__sandbox-drill", "--cgroup", "64MiB"]),
            "creating a memory cgroup needs root (CAP_SYS_ADMIN)",
        );
    }
    refused(&mut nobody(&["__sandbox-drill", "--swappiness", "10"]), "setting vm.swappiness needs root");
    // doctor works without root and says what needs it.
    let out = nobody(&["doctor", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["root"]["is_root"], false);
    let checks = v["checks"].as_array().unwrap();
    let root_check = checks.iter().find(|c| c["name"] == "root").unwrap();
    assert_eq!(root_check["status"], "needs_root");
}

/// The review's overflow cases: sizes whose plan wrapped a u64 sum to something
/// small. Each must be refused by the host guard, exit 2, before any change.
#[test]
fn sizes_that_would_overflow_a_plan_are_refused_before_any_change() {
    if unsafe { libc::geteuid() } != 0 {
        common::skip("without root these runs are refused for lack of privilege first");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 4] = [
        &["eat", "--size", "9223372036854775808", "--repeat", "1", "--pattern", "zero"],
        &["wscap", "--size", "9223372036854775808"],
        &["mapping", "--size", "6148914691236517206"],
        &["thrash", "--consumers", "4", "--size", "4611686018427387904", "--repeat", "1"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let dir = out.path().join(format!("r{i}"));
        let mut c = Command::new(bin());
        c.args(*args).arg("--out").arg(&dir);
        refused(&mut c, "host guard");
        assert!(!dir.exists(), "a refused run left {} behind", dir.display());
    }
}

/// A swap file that would leave its file system with under 256 MiB free to
/// users is refused before it is made (fallocate as root could otherwise
/// take the reserve a shared root file system keeps for the host), exit 2,
/// and nothing changes: on a 120 MiB ext4 mounted from a loop device.
/// (Found by a safety review; before, it was made wherever fallocate,
/// as root, could place it.)
#[test]
fn a_swap_file_that_would_fill_its_file_system_is_refused() {
    if unsafe { libc::geteuid() } != 0 || Command::new("mkfs.ext4").arg("-V").output().is_err() {
        common::skip("needs root and mkfs.ext4 (Debian: e2fsprogs)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::Builder::new().prefix("pagelab-fs-").tempdir_in("/var/tmp").unwrap();
    let (img, mnt) = (tmp.path().join("fs.img"), tmp.path().join("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    let run = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
    assert!(run(Command::new("truncate").args(["-s", "120M"]).arg(&img)), "truncate");
    assert!(run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&img)), "mkfs.ext4");
    if !run(Command::new("mount").args(["-o", "loop"]).arg(&img).arg(&mnt)) {
        common::skip("a loop device could not be mounted here");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&mnt);
    std::fs::set_permissions(&mnt, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = tmp.path().join("run");
    let mut c = Command::new(bin());
    c.env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-safety-test-journals"))
        .args(["eat", "--size", "64MiB", "--repeat", "1", "--pattern", "random", "--backing", "swapfile"])
        .arg("--swapfile-dir")
        .arg(&mnt)
        .arg("--out")
        .arg(&out);
    // Refused where the store is set up, after the run's notes (the host's
    // DAMON here): not through `refused`, which wants the one line alone.
    let before = system_state();
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.lines().any(|l| l.contains("its file system has") && l.contains("--swapfile-dir")), "{err}");
    assert_eq!(system_state(), before, "the system changed");
    assert!(std::fs::read_dir(&mnt).unwrap().flatten().all(|e| e.file_name() == "lost+found"), "a file was made");
}
