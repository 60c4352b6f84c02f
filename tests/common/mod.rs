//! Helpers shared by the integration tests.

/// The pagelab binary under test: `$PAGELAB_BIN` when set (e.g. a release
/// build: `PAGELAB_BIN=target/release/pagelab scripts/test`), else the one
/// that `cargo test` built with the tests.
#[allow(dead_code)]
pub fn bin() -> std::path::PathBuf {
    match std::env::var_os("PAGELAB_BIN") {
        // A relative path is the workspace's (absolute ones stay as they are).
        Some(p) if !p.is_empty() => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(p),
        _ => assert_cmd::cargo::cargo_bin("pagelab"),
    }
}

/// The binary under test where an unprivileged user can run it: a hard link
/// (or, across filesystems, a copy) in `dir`/bin, a directory of the test's
/// own that it removes with `dir`. A checkout in a directory only root may
/// enter (`mktemp -d`'s 0700, root's home) leaves `target/debug/pagelab` out
/// of reach of `setpriv --reuid`, which then fails with "Permission denied"
/// (issue 60 item 10). `dir` and its parents must be searchable by anyone.
#[allow(dead_code)]
pub fn bin_for_anyone(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = dir.join("bin");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = d.join("pagelab");
    if std::fs::hard_link(bin(), &exe).is_err() {
        std::fs::copy(bin(), &exe).unwrap();
    }
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

#[allow(dead_code)] // not every test binary checks the system state
/// What pagelab may change, as one comparable string: zram devices, active swap,
/// whether a `pagelab` memory cgroup exists, and vm.swappiness.
pub fn system_state() -> String {
    let zram: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("zram"))
        .collect();
    let cg = probe::Probe::default().memory_controller().ok().flatten().map(|(_, root)| root.join("pagelab").exists());
    // A slowed drive's group on cgroup v1 (jank --swap-iops).
    let blkio = std::path::Path::new("/sys/fs/cgroup/blkio/pagelab").exists();
    // DAMON's kdamond list (read only; absent without DAMON's sysfs).
    let damon = std::fs::read_to_string("/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds").unwrap_or_default();
    format!(
        "{zram:?} {} pagelab-cgroup:{cg:?} blkio:{blkio} swappiness:{} kdamonds:{}",
        std::fs::read_to_string("/proc/swaps").unwrap(),
        std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap().trim(),
        damon.trim()
    )
}

/// The CPUs this test process may run on (as the heap worker counts them).
#[allow(dead_code)]
pub fn cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

mod skip;
#[allow(unused_imports)]
pub use skip::skip;

/// Waits until `cond` holds, polling every 50 ms; panics naming `what` after
/// `limit`. Tests wait on the condition they need, never a fixed time.
#[allow(dead_code)]
pub fn wait_until(what: &str, limit: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !cond() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The number of complete lines in a file (0 when it is missing).
#[allow(dead_code)]
pub fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.matches('\n').count()).unwrap_or(0)
}

/// Asserts that `doc` matches schema/<name>.schema.json (every error listed).
#[allow(dead_code)]
#[track_caller]
pub fn assert_schema(name: &str, doc: &serde_json::Value) {
    let errors: Vec<String> =
        schema(name).iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
}

/// The validator of schema/<name>.schema.json (JSON Schema draft 2020-12).
#[allow(dead_code)]
pub fn schema(name: &str) -> jsonschema::Validator {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema").join(format!("{name}.schema.json"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    jsonschema::draft202012::new(&v).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// No swap area is active (a test that makes its own store needs that).
#[allow(dead_code)]
pub fn swap_free() -> bool {
    std::fs::read_to_string("/proc/swaps").map(|s| s.lines().count() <= 1).unwrap_or(false)
}

/// A run directory of the report's fixtures (crates/experiments/tests/fixtures/run-dirs).
#[allow(dead_code)]
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/experiments/tests/fixtures/run-dirs").join(name)
}

/// A copy of a fixture run in `dst` (report writes into the directory it reads).
#[allow(dead_code)]
pub fn copy_fixture(name: &str, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(fixture(name)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
}
