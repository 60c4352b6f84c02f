//! The pure cgroup-v2 path on a fake tree (no root needed): which files are
//! written, in which order, with which values.

use sandbox::Sandbox;
use sandbox::cgroup::Limits;
use std::path::Path;

fn fake_v2() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    sandbox::testing::fake_cgroup_v2(t.path()).unwrap();
    t
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn v2_create_writes_high_before_max_then_lifts_high() {
    let t = fake_v2();
    let jdir = t.path().join("journal");
    let mut sb = Sandbox::with_journal_dir("t", &jdir).with_roots(probe::Roots::under(t.path()));
    let cg = sb.memory_cgroup("eat", &Limits { max: Some(64 << 20), ..Default::default() }).unwrap();
    assert_eq!(cg.version, probe::cgroup::CgroupVersion::V2);
    assert!(cg.name.starts_with("pagelab/eat-"), "{}", cg.name);
    assert_eq!(
        cg.writes(),
        vec![
            ("memory.high".to_string(), "67108864".to_string()),
            ("memory.max".to_string(), "67108864".to_string()),
            ("memory.high".to_string(), "max".to_string()),
        ]
    );
    // The parent delegates the memory controller to its children.
    assert_eq!(read(&t.path().join("sys/fs/cgroup/pagelab/cgroup.subtree_control")), "+memory");
    // The journal holds both directories before restore, and nothing after.
    let j = read(sb.journal_path().unwrap());
    assert!(j.contains("\"cgroup_dir\"") && j.contains("pagelab/eat-"), "{j}");
    sb.restore().unwrap();
    assert!(!cg.dir.exists());
    assert!(!t.path().join("sys/fs/cgroup/pagelab").exists(), "empty pagelab parent removed");
    assert!(sandbox::journal::journal_files(&jdir).is_empty());
}

#[test]
fn v2_lowering_max_goes_through_high() {
    let t = fake_v2();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    let cg = sb.memory_cgroup("w", &Limits { max: Some(128 << 20), ..Default::default() }).unwrap();
    // Usage above the new limit: the kernel would OOM-kill on a direct memory.max write.
    std::fs::write(cg.dir.join("memory.current"), (100u64 << 20).to_string()).unwrap();
    let before = cg.writes().len();
    // In a fake tree usage never drops, so set_max waits its bound (5 s) then proceeds.
    cg.set_max(32 << 20).unwrap();
    let w = cg.writes()[before..].to_vec();
    assert_eq!(
        w,
        vec![
            ("memory.high".to_string(), "33554432".to_string()),
            ("memory.max".to_string(), "33554432".to_string()),
            ("memory.high".to_string(), "max".to_string()),
        ]
    );
    // Raising writes memory.max alone.
    std::fs::write(cg.dir.join("memory.current"), "0").unwrap();
    cg.set_max(256 << 20).unwrap();
    assert_eq!(cg.writes().last().unwrap(), &("memory.max".to_string(), "268435456".to_string()));
}

#[test]
fn v2_swap_max_reclaim_and_unsupported_knobs() {
    let t = fake_v2();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    let cg = sb.memory_cgroup("s", &Limits::default()).unwrap();
    // Without the file, swap accounting is missing: a clear error, not a silent skip.
    let e = cg.apply(&Limits { swap_max: Some(1 << 20), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("memory.swap.max"), "{e}");
    std::fs::write(cg.dir.join("memory.swap.max"), "max").unwrap();
    cg.apply(&Limits { swap_max: Some(1 << 20), ..Default::default() }).unwrap();
    assert_eq!(read(&cg.dir.join("memory.swap.max")), "1048576");
    std::fs::write(cg.dir.join("memory.reclaim"), "").unwrap();
    cg.reclaim(8 << 20).unwrap();
    assert_eq!(read(&cg.dir.join("memory.reclaim")), "8388608");
    assert!(cg.force_empty().unwrap_err().is_usage(), "force_empty is v1 only");
    let e = cg.apply(&Limits { swappiness: Some(10), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("only on cgroup v1"), "{e}");
}

#[test]
fn v2_without_memory_in_root_subtree_control_is_refused_without_changes() {
    let t = fake_v2();
    std::fs::write(t.path().join("sys/fs/cgroup/cgroup.subtree_control"), "cpu io\n").unwrap();
    let jdir = t.path().join("j");
    let mut sb = Sandbox::with_journal_dir("t", &jdir).with_roots(probe::Roots::under(t.path()));
    let e = sb.memory_cgroup("x", &Limits::default()).unwrap_err();
    assert!(e.is_usage());
    assert!(e.to_string().contains("cgroup.subtree_control"), "{e}");
    assert!(!t.path().join("sys/fs/cgroup/pagelab").exists());
    assert!(sandbox::journal::journal_files(&jdir).is_empty(), "nothing journaled");
}

#[test]
fn bad_limits_are_refused_before_any_change() {
    let t = fake_v2();
    let jdir = t.path().join("j");
    let mut sb = Sandbox::with_journal_dir("t", &jdir).with_roots(probe::Roots::under(t.path()));
    for l in [Limits { max: Some(0), ..Default::default() }, Limits { max: Some(1 << 40), ..Default::default() }] {
        let e = sb.memory_cgroup("x", &l).unwrap_err();
        assert!(e.is_usage(), "{e}");
    }
    assert!(!t.path().join("sys/fs/cgroup/pagelab").exists());
    assert!(sandbox::journal::journal_files(&jdir).is_empty());
}

#[test]
fn settings_are_journaled_and_restored() {
    let t = fake_v2();
    let p = t.path().join("proc/sys/vm");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("swappiness"), "60\n").unwrap();
    let z = t.path().join("sys/module/zswap/parameters");
    std::fs::create_dir_all(&z).unwrap();
    std::fs::write(z.join("enabled"), "N\n").unwrap();
    std::fs::write(z.join("compressor"), "lzo\n").unwrap();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    sb.sysctl("vm.swappiness", "100").unwrap();
    sb.zswap("enabled", "Y").unwrap();
    sb.zswap("compressor", "lz4").unwrap();
    assert_eq!(read(&p.join("swappiness")), "100");
    assert!(sb.sysctl("vm/../../etc", "1").is_err());
    assert!(sb.zswap("bogus", "1").unwrap_err().is_usage());
    // A zswap without the shrinker (before Linux 6.8) says which file it lacks.
    let e = sb.zswap("shrinker_enabled", "Y").unwrap_err();
    assert!(e.to_string().contains("has no shrinker_enabled"), "{e}");
    std::fs::write(z.join("shrinker_enabled"), "N\n").unwrap();
    sb.zswap("shrinker_enabled", "Y").unwrap();
    assert_eq!(read(&z.join("shrinker_enabled")), "Y");
    let log = sb.restore().unwrap();
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(read(&p.join("swappiness")), "60");
    assert_eq!(read(&z.join("enabled")), "N");
    assert_eq!(read(&z.join("compressor")), "lzo");
    assert_eq!(read(&z.join("shrinker_enabled")), "N");
}

/// A fake tree whose vm.swappiness (60) a live sandbox journaled and set
/// to 10: the tree, /proc/sys/vm in it, the journal directory, the sandbox.
fn swappiness_journaled() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, Sandbox) {
    let t = fake_v2();
    let p = t.path().join("proc/sys/vm");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("swappiness"), "60\n").unwrap();
    let jdir = t.path().join("j");
    let mut sb = Sandbox::with_journal_dir("t", &jdir).with_roots(probe::Roots::under(t.path()));
    sb.sysctl("vm.swappiness", "10").unwrap();
    (t, p, jdir, sb)
}

#[test]
fn journal_of_a_dead_owner_is_restored_and_a_live_one_is_not() {
    let (_tree, p, jdir, sb) = swappiness_journaled();
    // Live (locked by this process through the sandbox): left alone.
    let rep = sandbox::journal::restore_stale(&jdir, false);
    assert_eq!(rep.live.len(), 1);
    assert_eq!(read(&p.join("swappiness")), "10");
    // Simulate the owner's death: forget the sandbox without restoring, and drop
    // its lock by copying the journal to a new (unlocked) file.
    let path = sb.journal_path().unwrap().to_path_buf();
    let copy = jdir.join("999999-0-0.journal");
    std::fs::copy(&path, &copy).unwrap();
    let rep = sandbox::journal::restore_stale(&jdir, true);
    assert!(rep.actions.iter().any(|a| a.contains("would undo")), "{:?}", rep.actions);
    assert_eq!(read(&p.join("swappiness")), "10", "dry run changes nothing");
    let rep = sandbox::journal::restore_stale(&jdir, false);
    assert!(rep.restored.contains(&copy));
    assert_eq!(read(&p.join("swappiness")), "60");
    assert!(!copy.exists());
    drop(sb);
}

/// A sandbox on a fake tree makes no swap area: a zram device and a swap
/// file are the machine's own whatever the roots say, and a fake tree
/// lifts the privilege check. Each is refused before anything exists.
#[test]
fn a_fake_tree_makes_no_swap_area() {
    let t = fake_v2();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("journal")).with_roots(probe::Roots::under(t.path()));
    let spec = sandbox::sandbox::ZramSpec { disksize: 16 << 20, algorithm: None, priority: 1 };
    let e = sb.zram_swap(&spec).unwrap_err().to_string();
    assert!(e.contains("fake tree"), "{e}");
    let path = t.path().join("pagelab-test.swap");
    let e = sb.swap_file(&path, 16 << 20, 1).unwrap_err().to_string();
    assert!(e.contains("fake tree"), "{e}");
    assert!(!path.exists() && sb.journal_path().is_none(), "nothing made, nothing journaled");
}

/// The fake kernel's files go into each group as it is made, on a fake tree.
#[test]
fn a_fake_trees_groups_get_their_kernel_files() {
    let t = fake_v2();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("journal"))
        .with_roots(probe::Roots::under(t.path()))
        .with_kernel_files(sandbox::testing::kernel_files);
    let cg = sb.memory_cgroup("eat", &Limits::default()).unwrap();
    assert_eq!(cg.usage(), Some(sandbox::testing::FAKE_USAGE));
    assert_eq!(cg.oom_kills(), Some(0));
    assert!(cg.procs().is_empty());
    drop(cg);
    sb.restore().unwrap();
}

/// A journal whose owner is dead but whose lock is still held (a child the
/// owner forked, caught between fork and exec when the owner was killed,
/// holds the same open file until its parent-death signal ends it): restore
/// waits for the lock and undoes it, where it used to call it live and leave
/// it (CI, stop 80: a lab's killed thrash child left its zram and cgroup).
#[test]
fn a_dead_owners_journal_held_by_an_inheritor_is_waited_for_and_restored() {
    use std::os::fd::AsRawFd;
    let (_tree, p, jdir, sb) = swappiness_journaled();
    // Made under another name and linked in place once locked with its
    // header: only the journal's own name is left.
    let names: Vec<String> =
        std::fs::read_dir(&jdir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.len() == 1 && names[0].ends_with(".journal"), "{names:?}");
    // A dead owner: a child that has exited and been reaped.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let text = std::fs::read_to_string(sb.journal_path().unwrap()).unwrap();
    let me = format!("\"pid\":{}", std::process::id());
    assert!(text.contains(&me), "{text}");
    let copy = jdir.join(format!("{dead}-0-0.journal"));
    std::fs::write(&copy, text.replacen(&me, &format!("\"pid\":{dead}"), 1)).unwrap();
    // A journal is trusted only if no one else may write it (whatever the umask).
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // The inheritor: another open file of the journal, locked, let go 300 ms on.
    let held = std::fs::File::open(&copy).unwrap();
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let t0 = std::time::Instant::now();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(held);
    });
    let rep = sandbox::journal::restore_stale(&jdir, false);
    let took = t0.elapsed();
    release.join().unwrap();
    // It waited for the lock, and left the live owner's journal at once (a
    // live one waited for would take the whole 10 s).
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert!(rep.restored.contains(&copy), "{rep:?}");
    assert_eq!(read(&p.join("swappiness")), "60");
    // The live owner's own journal (this process's pid) was left at once.
    assert_eq!(rep.live.len(), 1, "{rep:?}");
    drop(sb);
}

#[test]
fn v2_io_limit_delegates_io_to_pagelabs_parent_and_writes_io_max() {
    let t = fake_v2();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    let mut cg = sb.memory_cgroup("w", &Limits { max: Some(64 << 20), ..Default::default() }).unwrap();
    let disk = sandbox::disk::DevNum { major: 254, minor: 0 };
    sb.io_limit(&mut cg, disk, 100).unwrap();
    assert_eq!(read(&cg.dir.join("io.max")), "254:0 riops=100 wiops=100");
    assert_eq!(read(&t.path().join("sys/fs/cgroup/pagelab/cgroup.subtree_control")), "+io");
    assert!(cg.also.is_empty(), "v2: the memory group is the io group");
    sb.restore().unwrap();
    assert!(!cg.dir.exists());
}

#[test]
fn v2_io_limit_without_io_in_the_roots_subtree_control_is_refused_without_changes() {
    let t = fake_v2();
    std::fs::write(t.path().join("sys/fs/cgroup/cgroup.subtree_control"), "cpu memory pids\n").unwrap();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    let mut cg = sb.memory_cgroup("w", &Limits { max: Some(64 << 20), ..Default::default() }).unwrap();
    let e = sb.io_limit(&mut cg, sandbox::disk::DevNum { major: 254, minor: 0 }, 100).unwrap_err();
    assert!(e.to_string().contains("io controller is not enabled"), "{e}");
    assert!(!cg.dir.join("io.max").exists());
    assert_eq!(read(&t.path().join("sys/fs/cgroup/pagelab/cgroup.subtree_control")), "+memory");
    assert!(sb.io_limit(&mut cg, sandbox::disk::DevNum { major: 254, minor: 0 }, 0).is_err(), "0 I/Os a second");
    sb.restore().unwrap();
}

/// A kernel without block throttling: a group the root gives `io` has no
/// io.max, and the limit is refused before anything changes.
#[test]
fn v2_io_limit_without_throttling_in_the_kernel_is_refused_without_changes() {
    let t = fake_v2();
    let slice = t.path().join("sys/fs/cgroup/system.slice");
    std::fs::create_dir_all(&slice).unwrap();
    std::fs::write(slice.join("cgroup.controllers"), "cpu io memory pids\n").unwrap();
    let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(probe::Roots::under(t.path()));
    let mut cg = sb.memory_cgroup("w", &Limits { max: Some(64 << 20), ..Default::default() }).unwrap();
    let e = sb.io_limit(&mut cg, sandbox::disk::DevNum { major: 254, minor: 0 }, 100).unwrap_err();
    assert!(e.to_string().contains("does not throttle a group's I/O (CONFIG_BLK_DEV_THROTTLING)"), "{e}");
    assert!(!cg.dir.join("io.max").exists());
    assert_eq!(read(&t.path().join("sys/fs/cgroup/pagelab/cgroup.subtree_control")), "+memory");
    // With io.max there (a kernel that throttles), it is written.
    std::fs::write(slice.join("io.max"), "").unwrap();
    sb.io_limit(&mut cg, sandbox::disk::DevNum { major: 254, minor: 0 }, 100).unwrap();
    assert_eq!(read(&cg.dir.join("io.max")), "254:0 riops=100 wiops=100");
    sb.restore().unwrap();
}
