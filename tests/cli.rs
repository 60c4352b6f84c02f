//! Bad input: every malformed invocation exits 2 with one line on stderr that
//! names the flag or value, and never panics.

mod common;
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
    // jank with a command of one's own: the group's limit is required, the
    // program must exist, and thrash's hog flags do not mix with it.
    bad(&["jank", "--", "true"], "--limit");
    bad(&["jank", "--limit", "1MiB", "--", "true"], "16MiB to 1TiB");
    bad(&["jank", "--limit", "64MiB", "--", "/definitely/not/a/program"], "not found");
    bad(&["jank", "--consumers", "4", "--limit", "64MiB", "--", "true"], "--consumers");
    bad(&["jank", "--limit", "64MiB", "--timeout", "0s", "--", "true"], "1s to 24h");
    bad(&["jank", "--limit", "64MiB"], "COMMAND");
    // zswap's shrinker: on or off, each once, and only where a zswap arm is.
    bad(&["jank", "--zswap-shrinker", "yes"], "expected on, off or on,off");
    bad(&["jank", "--zswap-shrinker", "on,on"], "each once");
    bad(&["jank", "--arms", "swapfile,cpu-only", "--zswap-shrinker", "on"], "--arms has none");
    bad(&["jank", "--arms", "zram:lz4,cpu-only", "--swap-iops", "100"], "--swap-iops");
    bad(&["jank", "--swap-iops", "0"], "from 1 to 1000000");
    bad(&["jank", "--arms", "zram:lz4", "--swap-iops", "100", "--limit", "64MiB", "--", "true"], "--swap-iops");
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

/// Issue 17 item 7: negative numbers name the flag and the accepted forms (clap
/// called them "unexpected argument '-1'"), `--out` errors name the flag and the
/// path, a preloaded non-library is refused as itself, not blamed on --baseline.
#[test]
fn negative_numbers_and_bad_paths_name_the_flag_and_the_forms() {
    for (args, want) in [
        (&["eat", "--repeat", "-3"][..], "'--repeat <REPEAT>': '-3': expected a whole number from 1 to 1000"),
        (&["heap", "--threads", "-1"], "'--threads <THREADS>': '-1' is not a thread count"),
        (&["heap", "--ops", "-5"], "'--ops <OPS>': '-5': expected a whole number"),
        (&["thrash", "--scale", "-1"], "'--scale <SCALE>': '-1' is not a scale: expected a factor"),
        (&["thrash", "--consumers", "-4"], "'--consumers <CONSUMERS>'"),
        (&["compare", "--alpha", "-0.1", "a", "b"], "'--alpha <ALPHA>': '-0.1': expected a level between 0 and 1"),
        (&["mapping", "--iterations", "-2"], "'--iterations <ITERATIONS>': '-2'"),
        (&["mapping", "--warmup", "-1"], "'--warmup <WARMUP>': '-1'"),
        (&["wscap", "--repeat", "-1"], "'--repeat <REPEAT>'"),
        (&["eat", "--seed", "-1"], "'--seed <SEED>': '-1': expected a whole number (0 or more)"),
        (&["bench", "probe", "--iterations", "-3"], "'--iterations <ITERATIONS>'"),
        (&["report", "--html", "--markdown", "x"], "'--html' cannot be used with '--markdown'"),
        (&["thrash", "--backing", "zswap"], "unknown backing 'zswap'"),
        (
            &["heap", "--threads", "2,4", "--growth-from", "1"],
            "--growth-from 1: the step is from 1 threads to 2, so --threads must hold both (it has 2,4)",
        ),
        (&["heap", "--growth-from", "0"], "'--growth-from <GROWTH_FROM>': 0 threads: expected 1 to"),
        (&["heap", "--over-time", "--growth-from", "1"], "--growth-from sets heap.growth's step in the speed sweep"),
    ] {
        bad(args, want);
    }
    // A step that starts past the cores but not at them is neither the
    // finding's nor its control's.
    let cpus = std::thread::available_parallelism().unwrap().get();
    let n = (cpus + 1).to_string();
    bad(&["heap", "--growth-from", &n], &format!("--growth-from {n}: expected {cpus} (the CPUs here"));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let f = file.to_str().unwrap();
    bad(&["record", "--duration", "100ms", "--out", f], &format!("--out {f}: exists and is not a directory"));
    bad(&["record", "--duration", "100ms", "--out", "/proc/x"], "--out /proc/x: No such file or directory");
    bad(&["lab", "--only", "heap", "--out", f], &format!("--out {f}: exists and is not a directory"));
    // A budget shorter than the first pass is refused before anything runs.
    bad(&["lab", "--budget", "10s", "--dry-run"], "--budget 10.0 s: the first pass alone is planned at ~");
    bad(&["lab", "--budget", "soon", "--dry-run"], "--budget");
    bad(
        &["heap", "--allocators", "preload:/etc/passwd", "--threads", "1", "--ops", "1000", "--repeat", "1"],
        "for '--allocators <ALLOCATORS>': preload:/etc/passwd: not a shared library (no ELF header)",
    );
    if unsafe { libc::geteuid() } == 0 {
        for b in ["swapfile", "zswap"] {
            bad(
                &["eat", "--size", "4MiB", "--repeat", "1", "--backing", b, "--swapfile-dir", "/nonexistent"],
                "--swapfile-dir /nonexistent: no such directory",
            );
        }
        // A restore undoes only an absolute swap file path: a relative one
        // stayed on after the run. And only a directory no one else can
        // change: another user could swap a link in for the swap file.
        let eat = |dir: &str| {
            ["eat", "--size", "4MiB", "--repeat", "1", "--backing", "swapfile", "--swapfile-dir", dir].map(String::from)
        };
        let (open, other) = (tmp.path().join("open"), tmp.path().join("other"));
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::chown(&other, Some(65534), None).unwrap();
        let (open, other) = (open.to_str().unwrap().to_string(), other.to_str().unwrap().to_string());
        for (dir, why) in [
            ("scratch".to_string(), "give an absolute path without `..`".to_string()),
            (format!("{open}/.."), "give an absolute path without `..`".to_string()),
            (open.clone(), format!("{open} is writable by others (mode 777) and not sticky")),
            (other.clone(), format!("{other} is owned by uid 65534")),
        ] {
            let args = eat(&dir);
            bad(&args.iter().map(String::as_str).collect::<Vec<_>>(), &why);
        }
        // Item 8: refused runs leave no run directory (wscap ran its first mode,
        // then refused the cap, and left the directory).
        let out = tmp.path().join("refused");
        let o = out.to_str().unwrap();
        bad(&["wscap", "--cap", "1TiB", "--duration", "1s", "--out", o], "--cap 1099511627776 bytes is larger");
        assert!(!out.exists(), "a refused run left {o}");
    }
}

/// Issue 17 item 7: `restore` that cannot read the journal directory says so
/// (it said "nothing to restore").
#[test]
fn restore_that_cannot_read_the_journals_says_so() {
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/usr/bin/setpriv").exists() {
        common::skip("needs root and setpriv");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let jd = tmp.path().join("journals");
    std::fs::create_dir(&jd).unwrap();
    std::fs::set_permissions(&jd, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::bin_for_anyone(tmp.path()))
        .arg("restore")
        .env("PAGELAB_JOURNAL_DIR", &jd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot read the journal directory") && err.contains("Permission denied"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("nothing to restore"));
}

/// Issue 17 item 6: runs started in the same second get their own default
/// directories (one failed with "No such file or directory" and no path).
#[test]
fn runs_started_in_the_same_second_get_their_own_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let kids: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("pagelab"))
                .current_dir(tmp.path())
                .env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-cli-test-journals"))
                .args(["record", "--duration", "300ms", "--interval", "50ms"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for k in kids {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dirs: Vec<_> = std::fs::read_dir(tmp.path().join("runs")).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 4, "four runs, four directories");
    for d in dirs {
        assert!(d.path().join("run.json").is_file(), "{}", d.path().display());
    }
}

#[test]
fn a_panic_names_the_file_and_line_of_pagelab_s_own_frame() {
    // The build under test keeps line tables (the release profile keeps them
    // too: docs/development.md); a deliberate panic's backtrace names
    // src/main.rs and a line, and the exit is libstd's panic status.
    let out = pagelab().env("RUST_BACKTRACE", "1").arg("__panic").output().unwrap();
    assert_eq!(out.status.code(), Some(101));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a deliberate panic"), "{err}");
    let frame = err.lines().skip_while(|l| !l.contains("deliberate_panic")).nth(1).unwrap_or_default();
    assert!(frame.contains("src/main.rs:"), "no file and line after the deliberate_panic frame: {err}");
}

/// A pipe whose reader has already left: writes to it fail with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors this function then owns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both were just returned by pipe2 and are owned here only.
    let (r, w) = unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    w.into()
}

fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("pagelab"));
    c.env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-cli-test-journals"));
    c
}

/// A failed write to stdout or stderr is never a panic (crates/say): a
/// reader that left (`| head -1`) ends nothing, a full disk is one line
/// and exit 1, and a stderr that is gone keeps the exit code.
#[test]
fn a_closed_pipe_or_a_full_disk_is_not_a_panic() {
    let out = bin().arg("doctor").stdout(closed_pipe()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "doctor | (reader gone): {err}");
    assert!(!err.contains("panicked") && !err.contains("standard output"), "{err}");

    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = bin().arg("doctor").stdout(full).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "doctor > /dev/full: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("pagelab: writing")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("standard output failed") && lines[0].contains("No space left"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = bin().arg("--help").stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "--help > /dev/full: {}", String::from_utf8_lossy(&out.stderr));

    let out = bin().arg("frobnicate").stderr(closed_pipe()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "bad input, stderr gone");
    let out = bin().args(["report", "/no/such/run"]).stderr(closed_pipe()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "report of nothing, stderr gone");
}

/// A run whose terminal went away (stdout and stderr both closed pipes, as
/// after a dropped ssh session or a `| tee` stopped first) completes and
/// says so in its record: std's print would panic at its first note and
/// leave the record `running`.
#[test]
fn a_run_whose_terminal_went_away_completes() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    let st = bin()
        .args(["mapping", "--size", "8MiB", "--iterations", "1", "--warmup", "0", "--repeat", "1", "--out"])
        .arg(&run)
        .stdin(std::process::Stdio::null())
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0));
    let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(rec["status"]["state"], "complete", "{}", rec["status"]);
    assert!(rec["results"].as_array().is_some_and(|r| !r.is_empty()), "no results");
}

/// A SIGHUP stops a run as Ctrl-C does (and restores), unless SIGHUP was
/// ignored when pagelab started (`nohup pagelab …`): then the run goes on
/// to its end, as it was asked to outlive its terminal.
#[test]
fn a_hang_up_stops_a_run_unless_it_was_started_under_nohup() {
    use std::os::unix::process::CommandExt;
    for nohup in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        let mut c = bin();
        c.args(["mapping", "--size", "16MiB", "--iterations", "2", "--warmup", "0", "--repeat", "2", "--out"])
            .arg(&run)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if nohup {
            // SAFETY: signal() between fork and exec, async-signal-safe.
            unsafe {
                c.pre_exec(|| {
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                    Ok(())
                })
            };
        }
        let mut child = c.spawn().unwrap();
        let t = std::time::Instant::now();
        while !run.join("events.jsonl").exists() {
            assert!(child.try_wait().unwrap().is_none(), "nohup {nohup}: the run ended before it began");
            assert!(t.elapsed() < std::time::Duration::from_secs(60), "nohup {nohup}: the run never began");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill of our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
        let code = child.wait().unwrap().code();
        let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
        let want = if nohup { (Some(0), "complete") } else { (Some(130), "interrupted") };
        assert_eq!((code, rec["status"]["state"].as_str().unwrap()), want, "nohup {nohup}");
    }
}
