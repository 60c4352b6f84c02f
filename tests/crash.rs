//! Fault injection: a sandboxed worker run with a zram swap, a memory cgroup and
//! a swappiness change is killed with SIGKILL at every checkpoint in turn. After
//! each kill, `pagelab restore` must bring /proc/swaps, the zram devices, the
//! cgroup tree and the sysctls back to exactly their state from before.
//!
//! Its tests run one at a time (SERIAL): a snapshot must not see another test's changes.
//! The second runs a short fixed-seed slice of the fault campaign
//! (scripts/fault-campaign, issue 59 item 4).

mod common;
use std::process::Command;

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("pagelab")
}

fn snapshot(cg_root: &std::path::Path) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap();
    let mut zram: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("zram"))
        .map(|n| {
            let size = std::fs::read_to_string(format!("/sys/block/{n}/disksize")).unwrap_or_default();
            format!("{n}:{}", size.trim())
        })
        .collect();
    zram.sort();
    let mut groups = Vec::new();
    let mut stack = vec![cg_root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                groups.push(e.path().strip_prefix(cg_root).unwrap().display().to_string());
                if groups.len() < 10_000 {
                    stack.push(e.path());
                }
            }
        }
    }
    groups.sort();
    let sysctl = |n: &str| std::fs::read_to_string(format!("/proc/sys/vm/{n}")).unwrap().trim().to_string();
    format!(
        "swaps:\n{swaps}\nzram: {zram:?}\ncgroups: {groups:?}\nswappiness {} page-cluster {}",
        sysctl("swappiness"),
        sysctl("page-cluster")
    )
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn sigkill_at_every_checkpoint_then_restore_returns_the_exact_snapshot() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root");
        return;
    }
    if !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs zram");
        return;
    }
    let Some((_, cg_root)) = probe::Probe::default().memory_controller().ok().flatten() else {
        common::skip("no memory cgroup controller");
        return;
    };
    let jdir = tempfile::tempdir().unwrap();
    let before = snapshot(&cg_root);
    let current_swappiness = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap().trim().parse::<u32>().unwrap();
    let new_swappiness = if current_swappiness == 133 { 134 } else { 133 };
    let drill = |fault: Option<u32>| {
        let mut c = Command::new(bin());
        c.env("PAGELAB_JOURNAL_DIR", jdir.path()).args([
            "__sandbox-drill",
            "--zram",
            "64MiB",
            "--cgroup",
            "32MiB",
            "--touch",
            "24MiB",
            "--swappiness",
            &new_swappiness.to_string(),
        ]);
        if let Some(n) = fault {
            c.env("PAGELAB_FAULT_AT", n.to_string());
        }
        c.output().unwrap()
    };
    let mut killed = 0;
    let mut changed_at_kill = 0;
    let mut n = 1;
    loop {
        let out = drill(Some(n));
        let was_killed = out.status.code().is_none();
        if !was_killed {
            assert!(out.status.success(), "fault point {n}: {}", String::from_utf8_lossy(&out.stderr));
            break;
        }
        killed += 1;
        if snapshot(&cg_root) != before {
            changed_at_kill += 1;
        }
        let r = Command::new(bin()).env("PAGELAB_JOURNAL_DIR", jdir.path()).arg("restore").output().unwrap();
        assert!(
            r.status.success(),
            "restore after fault point {n} failed: {}{}",
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr)
        );
        let after = snapshot(&cg_root);
        assert_eq!(after, before, "state after fault point {n} and restore differs from the snapshot");
        assert!(sandbox::journal::journal_files(jdir.path()).is_empty(), "journal left after fault point {n}");
        n += 1;
        assert!(n < 200, "the drill never completed");
    }
    eprintln!(
        "killed at {killed} checkpoints ({changed_at_kill} left changes that restore undid); all restored exactly"
    );
    assert!(killed >= 20, "only {killed} fault points");
    assert!(changed_at_kill >= 10, "most kills should leave something to restore, got {changed_at_kill}");
    assert_eq!(snapshot(&cg_root), before);
}

/// A fixed-seed slice of the fault campaign: a run and a lab (then its
/// resume) killed at a random moment each, with SIGKILL or SIGTERM, the parent
/// or a worker. The machine must equal its snapshot after `restore`, the run
/// directory must read, no pagelab process may be left, and the resumed lab
/// must finish. The full campaign (500 kills) is scripts/fault-campaign.
#[test]
fn a_fixed_seed_slice_of_the_fault_campaign_leaves_the_machine_as_it_was() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs root and zram");
        return;
    }
    if probe::Probe::default().memory_controller().ok().flatten().is_none() {
        common::skip("no memory cgroup controller");
        return;
    }
    if !Command::new("python3").arg("-V").output().is_ok_and(|o| o.status.success()) {
        common::skip("python3 is not installed (the campaign is a Python script)");
        return;
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fault-campaign");
    let out = Command::new("python3")
        .arg(script)
        .args(["--per-command", "1", "--commands", "eat,lab-resume", "--seed", "7", "--bin"])
        .arg(bin())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("2 kills in") && text.contains("0 failure(s)"), "{text}");
    println!("{text}");
}
