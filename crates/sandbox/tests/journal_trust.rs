//! Issue 17 item 9: `restore` acts on journals (kills what a journaled cgroup
//! holds, deletes journaled files), so it accepts only changes of the shapes
//! pagelab makes, and only journals nobody else could have written.

use sandbox::journal::{Change, restore_stale, validate_change};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn journal(dir: &Path, name: &str, changes: &[Change]) -> PathBuf {
    let header = serde_json::json!({
        "journal": 1, "pid": dead_pid(), "starttime": null,
        "boot_id": sandbox::journal::boot_id(), "label": "planted", "created_unix_ms": 0
    });
    let mut text = format!("{header}\n");
    for (i, c) in changes.iter().enumerate() {
        text += &format!("{}\n", serde_json::json!({"seq": i + 1, "change": c}));
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

#[test]
fn planted_paths_are_refused_and_left_alone() {
    // Victims outside the temp dir, where only real host files live.
    let victims = tempfile::Builder::new().prefix("pagelab-victims-").tempdir_in("/var/tmp").unwrap();
    let file = victims.path().join("precious.txt");
    std::fs::write(&file, "keep me").unwrap();
    let sub = victims.path().join("pagelab");
    std::fs::create_dir(&sub).unwrap();
    let changes = [
        Change::SwapFile { path: file.clone() },
        Change::DeviceNode { path: file.clone() },
        Change::DeviceNode { path: "/dev/null".into() },
        Change::WriteFile { path: file.clone(), previous: "gone".into() },
        Change::CgroupDir { path: sub.clone() },
        Change::CgroupDir { path: "/sys/fs/cgroup/memory/pagelab/../user.slice".into() },
        Change::CgroupDir { path: "/sys/fs/cgroup/memory/user.slice".into() },
        Change::SwapOn { path: "/dev/sda1".into() },
        Change::ZramDevice { sys: victims.path().to_path_buf(), before: vec![], id: Some(0) },
        Change::DamonKdamond { kdamonds: victims.path().to_path_buf(), pid: 1 },
    ];
    for c in &changes {
        assert!(validate_change(c).is_err(), "accepted {c:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    journal(dir.path(), "1-1-1.journal", &changes);
    let rep = restore_stale(dir.path(), false);
    assert_eq!(rep.errors.len(), changes.len(), "{:#?}", rep);
    assert!(rep.errors.iter().all(|e| e.contains("refused")), "{:#?}", rep.errors);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    assert!(sub.is_dir());
    assert!(Path::new("/dev/null").exists());
}

#[test]
fn what_pagelab_makes_is_accepted() {
    for c in [
        Change::CgroupDir { path: "/sys/fs/cgroup/memory/pagelab".into() },
        Change::CgroupDir { path: "/sys/fs/cgroup/pagelab/eat-12-0".into() },
        Change::WriteFile { path: "/proc/sys/vm/swappiness".into(), previous: "60".into() },
        Change::WriteFile { path: "/sys/module/zswap/parameters/enabled".into(), previous: "N".into() },
        Change::WriteFile { path: "/sys/kernel/mm/lru_gen/min_ttl_ms".into(), previous: "0".into() },
        Change::WriteFile { path: "/sys/kernel/mm/lru_gen/enabled".into(), previous: "0x0000".into() },
        Change::ZramDevice { sys: "/sys".into(), before: vec![0], id: Some(1) },
        Change::SwapOn { path: "/dev/zram1".into() },
        Change::SwapOn { path: "/var/tmp/pagelab-12-0.swap".into() },
        Change::SwapFile { path: "/var/tmp/pagelab-12-0.swap".into() },
        Change::DeviceNode { path: "/dev/zram3".into() },
        Change::DamonKdamond { kdamonds: "/sys/kernel/mm/damon/admin/kdamonds".into(), pid: 12 },
    ] {
        assert_eq!(validate_change(&c), Ok(()), "{c:?}");
    }
    assert!(validate_change(&Change::WriteFile { path: "/etc/passwd".into(), previous: String::new() }).is_err());
    // Only MGLRU's own parameters, not what sits beside them.
    assert!(
        validate_change(&Change::WriteFile {
            path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            previous: String::new()
        })
        .is_err()
    );
    assert!(validate_change(&Change::SwapOn { path: "/dev/zram".into() }).is_err());
}

#[test]
fn a_journal_others_can_write_is_not_trusted() {
    let victims = tempfile::Builder::new().prefix("pagelab-victims-").tempdir_in("/var/tmp").unwrap();
    let swap = victims.path().join("pagelab-1-0.swap");
    std::fs::write(&swap, "not a swap file of ours").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path(), "2-2-2.journal", &[Change::SwapFile { path: swap.clone() }]);
    std::fs::set_permissions(&j, std::fs::Permissions::from_mode(0o666)).unwrap();
    let rep = restore_stale(dir.path(), false);
    assert_eq!(rep.errors.len(), 1, "{rep:#?}");
    assert!(rep.errors[0].contains("writable by others"), "{:?}", rep.errors);
    assert!(swap.exists(), "a planted journal deleted a file");
    // The same journal, private again: the shape is pagelab's, so it is undone.
    std::fs::set_permissions(&j, std::fs::Permissions::from_mode(0o600)).unwrap();
    let rep = restore_stale(dir.path(), false);
    assert!(rep.errors.is_empty(), "{rep:#?}");
    assert!(!swap.exists());
}

/// A fake DAMON admin tree: `n` kdamonds, kdamond 0 on and watching `pid`.
fn damon_tree(n: u32, pid: i32) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let k = t.path();
    std::fs::write(k.join("nr_kdamonds"), format!("{n}\n")).unwrap();
    std::fs::create_dir_all(k.join("0/contexts/0/targets/0")).unwrap();
    std::fs::write(k.join("0/state"), "on\n").unwrap();
    std::fs::write(k.join("0/contexts/0/targets/0/pid_target"), format!("{pid}\n")).unwrap();
    t
}

#[test]
fn a_dead_runs_kdamond_is_stopped_and_removed_only_if_still_its_own() {
    // Ours: one kdamond watching the journaled pid. Off, then the list emptied.
    let ours = damon_tree(1, 4242);
    let dir = tempfile::tempdir().unwrap();
    journal(dir.path(), "1-1-1.journal", &[Change::DamonKdamond { kdamonds: ours.path().into(), pid: 4242 }]);
    let rep = restore_stale(dir.path(), false);
    assert!(rep.errors.is_empty(), "{rep:#?}");
    assert_eq!(std::fs::read_to_string(ours.path().join("0/state")).unwrap(), "off");
    assert_eq!(std::fs::read_to_string(ours.path().join("nr_kdamonds")).unwrap(), "0");
    // Someone else's since: another pid, or a list of two. Left as it was.
    for (n, pid) in [(1, 777), (2, 4242)] {
        let theirs = damon_tree(n, pid);
        let dir = tempfile::tempdir().unwrap();
        journal(dir.path(), "1-1-1.journal", &[Change::DamonKdamond { kdamonds: theirs.path().into(), pid: 4242 }]);
        let rep = restore_stale(dir.path(), false);
        assert!(rep.errors.is_empty(), "{rep:#?}");
        assert!(rep.actions.iter().any(|a| a.contains("left alone")), "{:?}", rep.actions);
        assert_eq!(std::fs::read_to_string(theirs.path().join("0/state")).unwrap(), "on\n");
        assert_eq!(std::fs::read_to_string(theirs.path().join("nr_kdamonds")).unwrap(), format!("{n}\n"));
    }
}

#[test]
fn every_journals_cgroups_are_undone_before_anything_else() {
    // Issue 46 item 8: an older journal's swap was turned off while a newer
    // journal's cgroup still held the program, which the kernel OOM-killed
    // inside swapoff. Both changes here are already undone on this machine
    // (the setting has its old value, the group does not exist), so the
    // restore changes nothing; the order of its actions is what is checked.
    let swappiness = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    let dir = tempfile::tempdir().unwrap();
    journal(
        dir.path(),
        "1-1-1.journal",
        &[Change::WriteFile { path: "/proc/sys/vm/swappiness".into(), previous: swappiness.clone() }],
    );
    let group = "/sys/fs/cgroup/memory/pagelab/eat-999999999-0";
    journal(dir.path(), "2-2-2.journal", &[Change::CgroupDir { path: group.into() }]);
    let rep = restore_stale(dir.path(), false);
    assert!(rep.errors.is_empty(), "{rep:#?}");
    assert_eq!(rep.actions.len(), 2, "{rep:#?}");
    assert!(rep.actions[0].contains(group), "the newer journal's cgroup first: {:#?}", rep.actions);
    assert!(rep.actions[1].contains("swappiness"), "{:#?}", rep.actions);
    assert_eq!(std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap(), swappiness);
    assert_eq!(sandbox::journal::journal_files(dir.path()).len(), 0, "both journals are done");
}

/// A run killed while it made its journal left `<name>.journal.new`, which no
/// restore read. A restore removes it only where no undo can be lost: a
/// second name of a journal, or a header and nothing more whose maker is
/// dead (no header: older than a minute). A live maker's, one holding
/// changes under its only name, and a symbolic link stay.
#[test]
fn half_made_journals_go_only_when_nothing_can_be_lost() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dead = journal(d, "1-1-1.journal.new", &[]);
    let mine = d.join("2-1-1.journal.new");
    let me = serde_json::json!({
        "journal": 1, "pid": std::process::id(), "starttime": null,
        "boot_id": sandbox::journal::boot_id(), "label": "alive", "created_unix_ms": 0
    });
    std::fs::write(&mine, format!("{me}\n")).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o600)).unwrap();
    let fresh = d.join("3-1-1.journal.new");
    std::fs::write(&fresh, "").unwrap();
    std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o600)).unwrap();
    let old = d.join("4-1-1.journal.new");
    std::fs::write(&old, "").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o600)).unwrap();
    let two_min_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(two_min_ago).unwrap();
    let named = journal(d, "5-1-1.journal", &[]);
    let second = d.join("5-1-1.journal.new");
    std::fs::hard_link(&named, &second).unwrap();
    let change = Change::WriteFile { path: "/proc/sys/vm/swappiness".into(), previous: "60".into() };
    let holds = journal(d, "6-1-1.journal.new", &[change]);
    let victim = d.join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    let link = d.join("7-1-1.journal.new");
    std::os::unix::fs::symlink(&victim, &link).unwrap();

    let rep = restore_stale(d, true);
    let would: Vec<&String> = rep.actions.iter().filter(|a| a.contains("would remove the half-made")).collect();
    assert_eq!(would.len(), 3, "{:#?}", rep.actions);
    assert!([&dead, &old, &second, &named].iter().all(|p| p.exists()), "a dry run removes nothing");

    let rep = restore_stale(d, false);
    for gone in [&dead, &old, &second, &named] {
        assert!(!gone.exists(), "{} stayed: {rep:#?}", gone.display());
    }
    for kept in [&mine, &fresh, &holds] {
        assert!(kept.exists(), "{} was removed: {rep:#?}", kept.display());
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(rep.errors.iter().any(|e| e.contains("6-1-1.journal.new") && e.contains("holds 1 change")), "{rep:#?}");
    assert!(rep.errors.iter().any(|e| e.contains("7-1-1.journal.new") && e.contains("not a regular file")), "{rep:#?}");
}
