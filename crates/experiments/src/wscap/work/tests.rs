//! wscap's work: its parts, and its whole run without root.

use super::*;

/// A pure cgroup-v2 tree in a temporary directory: no kernel behind it.
fn fake_v2() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    sandbox::testing::fake_cgroup_v2(t.path()).unwrap();
    t
}

/// wscap's whole run with no root and no process: its worker's own main
/// on a thread, its groups made on a fake cgroup-v2 tree (each mode a
/// fresh one, all gone after, a failed run's too). `none`
/// runs first each repeat and is its own reference; the capped mode's
/// slowdown is read against it; each result is written as it comes; a
/// result that cannot be written fails the run.
#[test]
fn the_run_drives_its_worker_and_groups_without_root() {
    use workloads::observe::Recorder;
    let tree = fake_v2();
    // The run reads this machine through its sandbox's probe: the worker (a
    // thread of this process) is the real one, linked in; vmstat is fake.
    let pid = std::process::id();
    std::os::unix::fs::symlink(format!("/proc/{pid}"), tree.path().join(format!("proc/{pid}"))).unwrap();
    let vmstat = tree.path().join("proc/vmstat");
    std::fs::write(&vmstat, "pgscan_kswapd 100\npgsteal_kswapd 90\npswpin 7\npswpout 9\n").unwrap();
    let cfg = WscapConfig {
        size: 2 << 20,
        cap: 1 << 20,
        duration: Duration::from_millis(200),
        modes: vec![Mode::CapMax],
        period: Duration::from_millis(100),
        write: false,
        backing: BackingKind::None,
        compressor: None,
        repeat: 2,
        sweep_caps: vec![3 << 20],
        exe: PathBuf::from("/nonexistent"),
        host_floor: None,
        swapfile_dir: PathBuf::from("/tmp"),
        memory_store: Some(BackingKind::None),
        memory_store_note: None,
    };
    let sandbox = || {
        Sandbox::with_journal_dir("wscap", &tree.path().join("journal"))
            .with_roots(probe::Roots::under(tree.path()))
    };
    let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
    let mut obs = Recorder::default();
    let rs = run_with(&cfg, &mut obs, || false, &mut threads, sandbox()).unwrap();
    let plan: Vec<(Mode, u32, bool, Option<u64>)> = rs.iter().map(|r| (r.mode, r.repeat, r.sweep, r.cap_bytes)).collect();
    assert_eq!(
        plan,
        [
            (Mode::None, 1, false, None),
            (Mode::CapMax, 1, false, Some(1 << 20)),
            (Mode::None, 2, false, None),
            (Mode::CapMax, 2, false, Some(1 << 20)),
            (Mode::CapMax, 1, true, Some(3 << 20)),
            // The memory arm, after the modes: none and cap-max per repeat.
            (Mode::None, 1, false, None),
            (Mode::CapMax, 1, false, Some(1 << 20)),
            (Mode::None, 2, false, None),
            (Mode::CapMax, 2, false, Some(1 << 20)),
        ]
    );
    assert_eq!(rs.iter().map(|r| r.memory_arm).collect::<Vec<_>>(), [false, false, false, false, false, true, true, true, true]);
    // Its window is the shorter of the two; its none measures no minimal loop,
    // and its slowdown is read against its own none.
    assert!(rs[5..].iter().all(|r| r.duration_s < 1.0), "{rs:?}");
    assert!(rs[5].minimal_scans_per_sec.is_none() && rs[5].slowdown == Some(1.0));
    assert!((rs[6].slowdown.unwrap() - rs[5].scans_per_sec / rs[6].scans_per_sec).abs() < 1e-9);
    assert!(obs.notes.iter().any(|n| n.contains("the memory arm: none and cap-max again on none")), "{:?}", obs.notes);
    assert_eq!(obs.results.len(), 9, "each result written as it came");
    for r in &rs {
        assert!(r.scans > 0 && r.scans_per_sec > 0.0 && r.ms_per_scan_p99 > 0.0, "{r:?}");
        assert_eq!(r.outcome, "ok");
    }
    assert_eq!(rs[0].slowdown, Some(1.0));
    let base = rs[0].scans_per_sec;
    assert!((rs[1].slowdown.unwrap() - base / rs[1].scans_per_sec).abs() < 1e-9, "{:?}", rs[1].slowdown);
    let base2 = record::stats::median(&[rs[0].scans_per_sec, rs[2].scans_per_sec]).unwrap();
    assert!((rs[3].slowdown.unwrap() - base2 / rs[3].scans_per_sec).abs() < 1e-9);
    assert!(rs[4].notes.iter().any(|n| n.contains("is not below the size")), "{:?}", rs[4].notes);
    assert!(rs[0].minimal_scans_per_sec.is_some_and(|m| m > 0.0), "none measures its minimal loop");
    // Read through the fake tree: the worker's memory (linked in), and no
    // reclaim (the fake counters stand still).
    assert!(rs.iter().all(|r| r.rss_max_bytes.is_some_and(|b| b > 0) && r.reclaim.pgscan == 0 && r.reclaim.pswpout == 0), "{rs:?}");
    // Each mode had its own group, and none is left.
    let groups = tree.path().join("sys/fs/cgroup/pagelab");
    assert!(!groups.exists(), "groups left behind");
    assert!(sandbox::journal::journal_files(&tree.path().join("journal")).is_empty());
    // A result that cannot be written fails the run at the first.
    let mut refusing = Recorder { refuse_results: true, ..Default::default() };
    let e = run_with(&cfg, &mut refusing, || false, &mut threads, sandbox()).unwrap_err();
    assert!(matches!(e, ExperimentError::Record(_)), "{e}");
    assert!(!groups.exists(), "a failed run left its group behind");
    // Reclaim counters that cannot be read are unknown, not none: the run fails.
    std::fs::remove_file(&vmstat).unwrap();
    let e = run_with(&cfg, &mut Recorder::default(), || false, &mut threads, sandbox()).unwrap_err();
    assert!(e.to_string().contains("/proc/vmstat could not be read"), "{e}");
    assert!(!groups.exists(), "a failed run left its group behind");
}

fn scan_done() -> ScanDone {
    ScanDone {
        scans: 200,
        seconds: 4.0,
        p50_ns: 18_000_000,
        p99_ns: 40_000_000,
        max_ns: 90_000_000,
        minflt: 1000,
        majflt: 50,
        utime_s: 3.5,
        stime_s: 0.4,
        per_second: vec![50, 49, 51, 50],
    }
}

#[test]
fn modes_parse_by_their_names_only() {
    use crate::kit::names;
    use clap::ValueEnum;
    assert_eq!(Mode::value_variants().len(), 6);
    for m in Mode::value_variants() {
        assert_eq!(names::parse::<Mode>("mode", &m.name()), Ok(*m));
        assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(m.name()));
    }
    assert_eq!(
        names::list::<Mode>(),
        "none, cap-max, cap-high, periodic-pageout, periodic-cold, periodic-reclaim"
    );
    assert!(names::parse::<Mode>("mode", "cap").is_err());
    assert!(names::parse::<Mode>("mode", "CAP-MAX").is_err());
}

#[test]
fn the_spec_travels_as_numbers_and_comes_back_whole() {
    let spec = Spec { size: 64 << 20, write: false };
    let argv = sandbox::worker::argv_spec(WORKER, &spec);
    assert_eq!(argv[..3], ["__worker", "wscap", "--spec"]);
    let back: Spec = sandbox::worker::spec_of(WORKER, &argv[2..]).unwrap();
    assert_eq!(back, spec);
    // A missing field, an unknown one and a size in words are refused.
    let bad = |j: &str| sandbox::worker::spec_of::<Spec>(WORKER, &["--spec".into(), j.into()]).unwrap_err();
    assert!(bad(r#"{"size": 1}"#).contains("missing field `write`"));
    assert!(bad(r#"{"size": 1, "write": true, "cap": 2}"#).contains("unknown field `cap`"));
    assert!(bad(r#"{"size": "64MiB", "write": true}"#).contains("bad --spec"));
    assert!(sandbox::worker::spec_of::<Spec>(WORKER, &[]).unwrap_err().contains("needs --spec"));
}

#[test]
fn a_reply_missing_a_field_is_an_error_not_zero() {
    let mut v = serde_json::to_value(scan_done()).unwrap();
    assert_eq!(reply::<Scan>(v.clone()).unwrap(), scan_done());
    v.as_object_mut().unwrap().remove("majflt");
    let e = reply::<Scan>(v).unwrap_err().to_string();
    assert!(e.contains("reply to Scan") && e.contains("majflt"), "{e}");
    let e = reply::<Baseline>(serde_json::json!({"minimal_scans_per_sec": 1.0})).unwrap_err();
    assert!(e.to_string().contains("instrumented"), "{e}");
}

/// Each command travels typed (issue 60): its name and its argument are the
/// type's, and a command whose argument is missing or mistyped is refused
/// by the worker (it used to read a missing window as 5 s).
#[test]
fn commands_travel_typed_and_a_missing_argument_is_refused() {
    use sandbox::worker::{Request, WorkerCommand};
    let read = |v: serde_json::Value| serde_json::from_value::<WorkerCommand<Command>>(v).map_err(|e| e.to_string());
    let line = |c: Command| serde_json::json!({"seq": 4, "command": c});
    let scan = Scan { duration_s: 0.5 };
    assert_eq!(read(line(scan.command())).unwrap(), WorkerCommand { seq: 4, command: Command::Scan(scan) });
    let e = read(serde_json::json!({"seq": 4, "command": {"cmd": "scan", "arg": null}})).unwrap_err();
    assert!(e.contains("Scan"), "{e}");
    let e = read(serde_json::json!({"seq": 4, "command": {"cmd": "baseline", "arg": {"duration": 2.0}}})).unwrap_err();
    assert!(e.contains("unknown field `duration`"), "{e}");
    // A command of no set of wscap's is refused, not skipped.
    let e = read(serde_json::json!({"seq": 4, "command": {"cmd": "alloc", "arg": null}})).unwrap_err();
    assert!(e.contains("unknown variant `alloc`"), "{e}");
    // Commands without an argument send none.
    assert_eq!(serde_json::to_value(Setup).unwrap(), serde_json::Value::Null);
    assert_eq!(read(line(Setup.command())).unwrap().command, Command::Setup(Setup));
    // The worker itself (its main on a thread of this process) refuses a
    // scan without its window, and says which command.
    let (parent, child) = std::os::unix::net::UnixStream::pair().unwrap();
    let spec = sandbox::worker::argv_spec(WORKER, &Spec { size: 1 << 20, write: false });
    let h = std::thread::spawn(move || {
        let input = std::io::BufReader::new(child.try_clone().unwrap());
        let mut io = sandbox::worker::child::WorkerIo::over(input, child);
        worker_main(&mut io, &spec[2..])
    });
    use std::io::Write;
    let mut p = parent;
    p.write_all(b"{\"seq\":1,\"command\":{\"cmd\":\"scan\",\"arg\":{}}}\n").unwrap();
    let e = h.join().unwrap().unwrap_err();
    assert!(e.contains("\"scan\"") && e.contains("duration_s"), "{e}");
}

#[test]
fn a_scan_fills_the_result_per_scan() {
    let mut r = WscapResult::default();
    scanned(&mut r, &scan_done());
    assert_eq!(r.scans, 200);
    assert_eq!(r.scans_per_sec, 50.0);
    assert_eq!(r.ms_per_scan_p50, 18.0);
    assert_eq!(r.ms_per_scan_max, 90.0);
    assert_eq!(r.minor_faults_per_scan, 5.0);
    assert_eq!(r.major_faults_per_scan, 0.25);
    assert_eq!(r.scans_per_second_series, [50, 49, 51, 50]);
    // No time, no rate (not a division by zero).
    let mut z = WscapResult::default();
    scanned(&mut z, &ScanDone { seconds: 0.0, ..scan_done() });
    assert_eq!(z.scans_per_sec, 0.0);
}

#[test]
fn peaks_keep_the_median_and_the_maxima() {
    let p = Peaks {
        rss: vec![30, 10, 20, 50, 40],
        anon_max: Some(7),
        swap_max: Some(9),
        charged_max: Some(11),
        store_max: None,
        zswap_before: None,
        held_max: Some(13),
    };
    let mut r = WscapResult::default();
    p.fill(&mut r);
    assert_eq!(r.held_max_bytes, Some(13));
    assert_eq!((r.rss_median_bytes, r.rss_max_bytes), (Some(30), Some(50)));
    assert_eq!(
        (r.rss_anon_max_bytes, r.swap_max_bytes, r.charged_max_bytes, r.store_max_bytes),
        (Some(7), Some(9), Some(11), None)
    );
    // No poll read the worker: unknown, not 0.
    let mut r = WscapResult::default();
    Peaks::default().fill(&mut r);
    assert_eq!((r.rss_median_bytes, r.rss_max_bytes, r.rss_anon_max_bytes, r.swap_max_bytes), (None, None, None, None));
}

#[test]
fn the_plan_bounds_what_the_host_gives() {
    // The region plus a store no larger than it: never less than the region.
    assert!(planned_bytes(64 << 20) >= 64 << 20);
    assert!(planned_bytes(128 << 20) > planned_bytes(64 << 20));
}
