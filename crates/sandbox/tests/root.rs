//! Real system changes, as root. Each test skips with a printed reason when it
//! lacks root or the kernel feature; here and in CI it runs for real.

#[path = "../../../tests/common/skip.rs"]
mod skip;
use sandbox::Sandbox;
use sandbox::sandbox::ZramSpec;
use std::path::Path;

/// Root, or a visible skip (counted as skipped by `.ci/run`).
fn root_or_skip() -> bool {
    if !sandbox::privilege::is_root() {
        skip::skip("needs root");
        return false;
    }
    true
}

fn zram_or_skip() -> bool {
    if !Path::new("/sys/class/zram-control/hot_add").exists() {
        skip::skip("zram hot_add not available (modprobe zram)");
        return false;
    }
    root_or_skip()
}

/// Held by the tests that add swap or zram devices, by the one that needs
/// none active, and by the one that reads the zram device list (a device
/// another test added meanwhile failed it once in CI, 2026-11-29).
static SWAP: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn swaps() -> String {
    std::fs::read_to_string("/proc/swaps").unwrap()
}

#[test]
fn zram_swap_goes_up_and_down() {
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !zram_or_skip() {
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
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !zram_or_skip() {
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
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip() {
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
            skip::skip(&e.to_string());
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
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !zram_or_skip() {
        return;
    }
    if probe::Probe::default().memory_controller().ok().flatten().is_none() {
        skip::skip("no memory cgroup controller");
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

#[test]
fn a_v1_group_in_oom_notifies_its_watcher() {
    let _swap = SWAP.lock().unwrap_or_else(|e| e.into_inner());
    if !root_or_skip() {
        return;
    }
    let Some((probe::cgroup::CgroupVersion::V1, _)) = probe::Probe::default().memory_controller().ok().flatten() else {
        skip::skip("no cgroup-v1 memory controller (OOM notification is v1 only)");
        return;
    };
    if !sandbox::swap::active().is_empty() {
        skip::skip("a swap area is active: the child would swap instead of reaching OOM");
        return;
    }
    let jdir = tempfile::tempdir().unwrap();
    let mut sb = Sandbox::with_journal_dir("test-oom-notify", jdir.path());
    let cg =
        sb.memory_cgroup("oom-notify", &sandbox::cgroup::Limits { max: Some(16 << 20), ..Default::default() }).unwrap();
    cg.set_oom_kill_disable(true).unwrap();
    let n = cg.oom_notifier().unwrap();
    assert_eq!(n.wait(std::time::Duration::from_millis(50)), 0, "no OOM before the child runs");
    // A child that touches 64 MiB in a 16 MiB group with no swap: its fault
    // cannot be charged, it sleeps in OOM (the killer is off), and the kernel
    // notifies.
    let mut cmd = std::process::Command::new("python3");
    cmd.args(["-c", "b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"]);
    sandbox::cgroup::join_before_exec(&mut cmd, &cg.dir).unwrap();
    let mut child = cmd.spawn().unwrap();
    let t = std::time::Instant::now();
    let mut seen = 0;
    while seen == 0 && t.elapsed() < std::time::Duration::from_secs(20) {
        seen = n.wait(std::time::Duration::from_millis(100));
    }
    let (under, kills) = (cg.under_oom(), cg.oom_kills());
    child.kill().unwrap();
    child.wait().unwrap();
    sb.restore().unwrap();
    assert!(seen >= 1, "the kernel notified no OOM in 20 s");
    assert!(under, "the group was under OOM when notified");
    assert_eq!(kills, Some(0), "the child waited in OOM instead of being killed");
}

/// A v1 group whose swap was capped keeps its swap allowance (memsw − limit)
/// when its limit is raised or lowered: thrash's guard raises the limits of
/// groups whose swap is capped beside a host swap.
#[test]
fn a_v1_groups_swap_allowance_survives_a_new_limit() {
    if !root_or_skip() {
        return;
    }
    let Some((probe::cgroup::CgroupVersion::V1, _)) = probe::Probe::default().memory_controller().ok().flatten() else {
        skip::skip("no cgroup-v1 memory controller (memsw is v1's)");
        return;
    };
    let jdir = tempfile::tempdir().unwrap();
    let mut sb = Sandbox::with_journal_dir("test-memsw", jdir.path());
    let limits = sandbox::cgroup::Limits { max: Some(64 << 20), ..Default::default() };
    let cg = sb.memory_cgroup("memsw", &limits).unwrap();
    if !cg.knobs().memsw {
        drop(cg);
        sb.restore().unwrap();
        skip::skip("no memory.memsw.limit_in_bytes (swap accounting off)");
        return;
    }
    cg.apply(&sandbox::cgroup::Limits { swap_max: Some(32 << 20), ..limits }).unwrap();
    let read = |f: &str| std::fs::read_to_string(cg.dir.join(f)).unwrap().trim().parse::<u64>().unwrap();
    assert_eq!(read("memory.memsw.limit_in_bytes"), 96 << 20);
    cg.set_max(128 << 20).unwrap();
    assert_eq!((read("memory.limit_in_bytes"), read("memory.memsw.limit_in_bytes")), (128 << 20, 160 << 20));
    cg.set_max(48 << 20).unwrap();
    assert_eq!((read("memory.limit_in_bytes"), read("memory.memsw.limit_in_bytes")), (48 << 20, 80 << 20));
    // An uncapped group's memsw stays unlimited.
    let free = sb.memory_cgroup("memsw-free", &limits).unwrap();
    free.set_max(128 << 20).unwrap();
    let memsw = std::fs::read_to_string(free.dir.join("memory.memsw.limit_in_bytes")).unwrap();
    assert!(memsw.trim().parse::<u64>().unwrap() > 1 << 60, "{memsw}");
    drop((cg, free));
    sb.restore().unwrap();
}

/// `Sandbox::io_limit`: the disk under /var/tmp limited for a group; a
/// process started in it has its direct reads counted against that group
/// (the kernel's own count: blkio.throttle.io_serviced on v1, io.stat on
/// v2), and restore removes the group it made (the blkio group on v1).
#[test]
fn a_groups_io_limit_counts_its_reads_and_goes_with_the_group() {
    if !root_or_skip() {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let (disk, name) = match sandbox::disk::disk_of(Path::new("/sys"), dir.path()) {
        Ok(d) => d,
        Err(e) => {
            skip::skip(&format!("/var/tmp: {e}"));
            return;
        }
    };
    let file = dir.path().join("blocks");
    std::fs::write(&file, vec![7u8; 64 << 10]).unwrap();
    let jdir = tempfile::tempdir().unwrap();
    let mut sb = Sandbox::with_journal_dir("test-io", jdir.path());
    let limits = sandbox::cgroup::Limits { max: Some(64 << 20), ..Default::default() };
    let mut cg = sb.memory_cgroup("io", &limits).unwrap();
    let said = match sb.io_limit(&mut cg, disk, 50) {
        Ok(s) => s,
        Err(e @ sandbox::SandboxError::Unsupported(_)) => {
            sb.restore().unwrap();
            skip::skip(&e.to_string());
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(said.contains("50 reads") && said.contains(&disk.to_string()), "{said}");
    let groups: Vec<std::path::PathBuf> = std::iter::once(cg.dir.clone()).chain(cg.also.clone()).collect();
    let mut cmd = std::process::Command::new("dd");
    cmd.args([&format!("if={}", file.display()), "of=/dev/null", "bs=4096", "count=16", "iflag=direct"]);
    cmd.stderr(std::process::Stdio::null());
    for g in &groups {
        sandbox::cgroup::join_before_exec(&mut cmd, g).unwrap();
    }
    assert!(cmd.status().unwrap().success());
    let reads = match cg.version {
        probe::cgroup::CgroupVersion::V1 => {
            let blkio = cg.also.first().expect("a blkio group beside the memory group on v1");
            let t = std::fs::read_to_string(blkio.join("blkio.throttle.io_serviced")).unwrap();
            t.lines()
                .find_map(|l| l.strip_prefix(&format!("{disk} Read ")).and_then(|n| n.trim().parse::<u64>().ok()))
                .unwrap_or(0)
        }
        probe::cgroup::CgroupVersion::V2 => {
            let t = std::fs::read_to_string(cg.dir.join("io.stat")).unwrap();
            t.lines()
                .filter(|l| l.starts_with(&format!("{disk} ")))
                .flat_map(|l| l.split_ascii_whitespace())
                .find_map(|kv| kv.strip_prefix("rios=").and_then(|n| n.parse::<u64>().ok()))
                .unwrap_or(0)
        }
    };
    assert!(reads >= 16, "16 direct reads of {name} counted against the group: {reads}");
    // The limit as the kernel reads it back.
    let set = match cg.version {
        probe::cgroup::CgroupVersion::V1 => {
            std::fs::read_to_string(cg.also[0].join("blkio.throttle.read_iops_device")).unwrap()
                + &std::fs::read_to_string(cg.also[0].join("blkio.throttle.write_iops_device")).unwrap()
        }
        probe::cgroup::CgroupVersion::V2 => std::fs::read_to_string(cg.dir.join("io.max")).unwrap(),
    };
    assert!(
        set == format!("{disk} 50\n{disk} 50\n")
            || set.contains(&format!("{disk} rbps=max wbps=max riops=50 wiops=50")),
        "{set:?}"
    );
    let j = std::fs::read_to_string(sb.journal_path().unwrap()).unwrap();
    for g in &cg.also {
        assert!(j.contains(&g.display().to_string()), "journaled before it was made: {}", g.display());
    }
    sb.restore().unwrap();
    for g in &groups {
        assert!(!g.exists(), "{} removed", g.display());
    }
}
