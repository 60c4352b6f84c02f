//! Real system changes, as root. Each test skips with a printed reason when it
//! lacks root or the kernel feature; here and in CI it runs for real.

use sandbox::Sandbox;
use sandbox::sandbox::ZramSpec;
use std::path::Path;

fn root_or_skip(what: &str) -> bool {
    if !sandbox::privilege::is_root() {
        eprintln!("skipped {what}: needs root");
        return false;
    }
    true
}

fn zram_or_skip(what: &str) -> bool {
    if !Path::new("/sys/class/zram-control/hot_add").exists() {
        eprintln!("skipped {what}: zram hot_add not available (modprobe zram)");
        return false;
    }
    root_or_skip(what)
}

fn swaps() -> String {
    std::fs::read_to_string("/proc/swaps").unwrap()
}

#[test]
fn zram_swap_goes_up_and_down() {
    if !zram_or_skip("zram_swap_goes_up_and_down") {
        return;
    }
    let jdir = tempfile::tempdir().unwrap();
    let before_devices = sandbox::zram::device_ids(Path::new("/sys"));
    let mut sb = Sandbox::with_journal_dir("test-zram", jdir.path());
    let z = sb.zram_swap(&ZramSpec { disksize: 32 << 20, algorithm: Some("lz4".into()), priority: 5 }).unwrap();
    assert!(!before_devices.contains(&z.id), "a new device, never a reused one");
    assert_eq!(z.algorithm, "lz4");
    let s = swaps();
    let line = s.lines().find(|l| l.starts_with(&format!("/dev/zram{} ", z.id))).expect("zram in /proc/swaps");
    assert!(line.contains(&format!("{}", (32 << 20) / 1024 - 4)), "size from our header: {line}");
    assert_eq!(sandbox::zram::disksize(Path::new("/sys"), z.id), Some(32 << 20));
    sb.restore().unwrap();
    assert!(!swaps().contains(&format!("/dev/zram{} ", z.id)));
    assert!(!Path::new(&format!("/sys/block/zram{}", z.id)).exists(), "hot_removed");
    assert!(sandbox::journal::journal_files(jdir.path()).is_empty());
}

#[test]
fn unknown_zram_algorithm_changes_nothing() {
    if !zram_or_skip("unknown_zram_algorithm_changes_nothing") {
        return;
    }
    let jdir = tempfile::tempdir().unwrap();
    let before = sandbox::zram::device_ids(Path::new("/sys"));
    let mut sb = Sandbox::with_journal_dir("test-zram-bad", jdir.path());
    let e =
        sb.zram_swap(&ZramSpec { disksize: 32 << 20, algorithm: Some("lzma9000".into()), priority: 5 }).unwrap_err();
    assert!(e.is_usage());
    assert!(e.to_string().contains("lzma9000") && e.to_string().contains("this kernel offers"), "{e}");
    assert_eq!(sandbox::zram::device_ids(Path::new("/sys")), before);
    assert!(sandbox::journal::journal_files(jdir.path()).is_empty());
}

#[test]
fn swap_file_goes_up_and_down() {
    if !root_or_skip("swap_file_goes_up_and_down") {
        return;
    }
    // /var/tmp is on the root filesystem (ext4 here); /tmp may be tmpfs elsewhere.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = dir.path().join("pagelab-test.swap");
    let jdir = tempfile::tempdir().unwrap();
    let mut sb = Sandbox::with_journal_dir("test-swapfile", jdir.path());
    match sb.swap_file(&path, 16 << 20, 1) {
        Ok(_) => {}
        Err(e) if e.to_string().contains("cannot hold a swap file") => {
            eprintln!("skipped swap_file_goes_up_and_down: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    assert!(swaps().contains(path.to_str().unwrap()));
    // Refuses a path that exists: only files pagelab creates are used.
    let mut sb2 = Sandbox::with_journal_dir("test-swapfile-2", jdir.path());
    assert!(sb2.swap_file(&path, 16 << 20, 1).unwrap_err().is_usage());
    sb.restore().unwrap();
    assert!(!swaps().contains(path.to_str().unwrap()));
    assert!(!path.exists());
}

#[test]
fn two_sandboxes_at_once_do_not_collide() {
    if !zram_or_skip("two_sandboxes_at_once_do_not_collide") {
        return;
    }
    if probe::Probe::default().memory_controller().ok().flatten().is_none() {
        eprintln!("skipped two_sandboxes_at_once_do_not_collide: no memory cgroup controller");
        return;
    }
    let jdir = tempfile::tempdir().unwrap();
    let run = |label: &'static str| {
        let jdir = jdir.path().to_path_buf();
        std::thread::spawn(move || {
            let mut sb = Sandbox::with_journal_dir(label, &jdir);
            let z = sb.zram_swap(&ZramSpec { disksize: 16 << 20, algorithm: None, priority: 3 }).unwrap();
            let cg = sb
                .memory_cgroup(label, &sandbox::cgroup::Limits { max: Some(32 << 20), ..Default::default() })
                .unwrap();
            let out = (z.id, cg.dir.clone());
            std::thread::sleep(std::time::Duration::from_millis(200));
            sb.restore().unwrap();
            out
        })
    };
    let (a, b) = (run("par-a"), run("par-b"));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_ne!(a.0, b.0, "distinct zram devices");
    assert_ne!(a.1, b.1, "distinct cgroups");
    for (id, dir) in [a, b] {
        assert!(!Path::new(&format!("/sys/block/zram{id}")).exists());
        assert!(!dir.exists());
    }
}
