//! eat's work: its parts, and its whole run without root.

use super::*;

fn cfg() -> EatConfig {
    EatConfig {
        size: 64 << 20,
        patterns: vec![Pattern::Random],
        block: 20,
        backing: BackingKind::Zram,
        compressors: vec![None],
        trim: Trim::SelfTrim,
        repeat: 1,
        seed: 1,
        exe: PathBuf::from("/nonexistent"),
        host_floor: None,
        settle_max: Duration::from_secs(1),
        swapfile_dir: PathBuf::from("/tmp"),
    }
}

fn zram() -> Backing {
    Backing {
        kind: BackingKind::Zram,
        compressor: Some("lz4".into()),
        zram_id: Some(3),
        swap_areas: vec!["/dev/zram3".into()],
        notes: vec![],
        swap_file: None,
    }
}

fn phase(seconds: f64) -> PhaseResult {
    PhaseResult { seconds, ..Default::default() }
}

fn drove(trimmed: u64, hash_read: &str) -> Drove {
    let store = |swapped: u64, used: u64, orig: u64, compr: u64| StoreStats {
        swapped_bytes: swapped,
        mem_used_bytes: Some(used),
        orig_data_bytes: Some(orig),
        compr_data_bytes: Some(compr),
        ..Default::default()
    };
    Drove {
        cal: Calibrated { memset_first_touch_seconds: 0.064, memset_refill_seconds: 0.016 },
        alloc: phase(0.001),
        fill: (
            phase(0.128),
            Filled { refill_seconds: 0.032, hash_written: "00ff".into(), estimate: Default::default() },
        ),
        trim: phase(0.5),
        settle: phase(0.1),
        read: (phase(0.25), ReadBack { hash_read: hash_read.into() }),
        free: phase(0.01),
        before_trim: store(0, 1 << 20, 0, 0),
        after_trim: store(trimmed, 17 << 20, trimmed, trimmed / 4),
        after_settle: store(trimmed, 17 << 20, trimmed, trimmed / 4),
    }
}

/// eat's whole run with no root, no process and no store: its worker's
/// own main on a thread ([`sandbox::worker::Threads`]), no backing, a
/// self trim. Each repeat runs every pattern (ABBA), each result is
/// written as it comes and read back verified; with no swap, nothing is
/// trimmed or stored and a note says so. A stop ends it as interrupted,
/// and a result that cannot be written fails it.
#[test]
fn the_run_drives_its_worker_without_root() {
    use workloads::observe::Recorder;
    let cfg = EatConfig {
        size: 4 << 20,
        patterns: vec![Pattern::Zero, Pattern::Random],
        backing: BackingKind::None,
        repeat: 2,
        settle_max: Duration::from_millis(50),
        ..cfg()
    };
    let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
    // The machine it reads is its sandbox's: a fake tree, with the
    // worker (a thread of this process) linked in.
    let tree = tempfile::tempdir().unwrap();
    sandbox::testing::fake_cgroup_v2(tree.path()).unwrap();
    let me = tree.path().join(format!("proc/{}", std::process::id()));
    std::os::unix::fs::symlink(format!("/proc/{}", std::process::id()), &me).unwrap();
    let sandbox = || {
        Sandbox::with_journal_dir("eat", &tree.path().join("journal")).with_roots(probe::Roots::under(tree.path()))
    };
    let mut obs = Recorder::default();
    let rs = run_with(&cfg, &mut obs, || false, &mut threads, &sandbox).unwrap();
    let order: Vec<(&str, u32)> = rs.iter().map(|r| (r.pattern.as_str(), r.repeat)).collect();
    assert_eq!(order, [("zero", 1), ("random", 1), ("random", 2), ("zero", 2)]);
    let written: Vec<&str> = obs.results.iter().map(|r| r.pattern.as_str()).collect();
    assert_eq!(written, ["zero", "random", "random", "zero"], "each result written as it came");
    for r in &rs {
        assert!(r.verified && !r.hash_written.is_empty(), "{r:?}");
        assert_eq!((r.backing.name(), r.trimmed_bytes, r.stored_bytes, r.stored_fraction), ("none", 0, None, None));
        assert_eq!(r.phases.keys().map(String::as_str).collect::<Vec<_>>(), ["alloc", "fill", "free", "read", "settle", "trim"]);
        assert!(r.phases["fill"].seconds > 0.0 && r.fill_gbps_first_touch > 0.0, "{r:?}");
    }
    assert_ne!(rs[0].hash_written, rs[1].hash_written, "zero and random wrote the same bytes");
    assert_eq!(rs[0].hash_written, rs[3].hash_written, "the same pattern and size, another seed: zero is zero");
    assert_ne!(rs[1].hash_written, rs[2].hash_written, "random with another seed wrote the same bytes");
    assert!(obs.events.contains(&("phase_end".into(), "read".into())), "{:?}", obs.events);
    assert!(obs.pids.contains(&vec![std::process::id() as i32]));
    assert!(obs.notes.iter().any(|n| n.contains("no swap backs this run")), "{:?}", obs.notes);
    // A stop before the first repeat: interrupted, nothing written.
    let mut stopped = Recorder::default();
    let e = run_with(&cfg, &mut stopped, || true, &mut threads, &sandbox).unwrap_err();
    assert!(matches!(e, ExperimentError::Interrupted) && stopped.results.is_empty(), "{e}");
    // A result that cannot be written fails the run at the first.
    let mut refusing = Recorder { refuse_results: true, ..Default::default() };
    let e = run_with(&cfg, &mut refusing, || false, &mut threads, &sandbox).unwrap_err();
    assert!(matches!(e, ExperimentError::Record(_)), "{e}");
    // A worker that cannot be read: its faults and swap are unknown, not
    // zero, and the run fails saying so and how the worker stands.
    std::fs::remove_file(&me).unwrap();
    let e = run_with(&cfg, &mut Recorder::default(), || false, &mut threads, &sandbox).unwrap_err();
    assert!(e.to_string().contains("could not be read in /proc: "), "{e}");
}

#[test]
fn the_spec_round_trips_and_refuses_a_missing_field() {
    let spec = Spec { size: 1 << 30, pattern: Pattern::Semi, block: 20, seed: 7 };
    let argv = sandbox::worker::argv_spec(WORKER, &spec);
    assert_eq!(sandbox::worker::spec_of::<Spec>(WORKER, &argv[2..]).unwrap(), spec);
    let e = sandbox::worker::spec_of::<Spec>(
        WORKER,
        &["--spec".into(), r#"{"size":1,"pattern":"semi","block":20}"#.into()],
    )
    .unwrap_err();
    assert!(e.contains("missing field `seed`"), "{e}");
    let e = reply::<Fill>(serde_json::json!({"refill_seconds": 1.0, "hash_written": "ab"})).unwrap_err();
    assert!(e.to_string().contains("reply to Fill") && e.to_string().contains("estimate"), "{e}");
}

#[test]
fn a_result_is_read_from_its_replies() {
    let pages = (64u64 << 20) / probe::environment::page_size();
    let trimmed = (64 << 20) - (1 << 20);
    let r = result(&cfg(), Pattern::Random, 7, 2, &zram(), drove(trimmed, "00ff")).unwrap();
    assert!(r.verified);
    assert_eq!((r.seed, r.repeat, r.trimmed_bytes), (7, 2, trimmed));
    // The store grew by 16 MiB for 63 MiB trimmed.
    assert_eq!(r.stored_bytes, Some(16 << 20));
    assert!((r.stored_fraction.unwrap() - 16.0 / 63.0).abs() < 1e-9);
    assert_eq!(r.kernel_compr_ratio, Some(0.25));
    // 64 MiB in 0.128 s and 0.032 s; memset in 0.064 s and 0.016 s.
    assert!((r.fill_gbps_first_touch - 0.524288).abs() < 1e-6);
    assert!((r.fill_gbps_refill / r.fill_gbps_first_touch - 4.0).abs() < 1e-9);
    assert!((r.memset_gbps_first_touch / r.fill_gbps_first_touch - 2.0).abs() < 1e-9);
    assert!(r.trim_us_per_page.unwrap() > 0.5e6 / pages as f64);
    assert_eq!(
        r.phases.keys().map(String::as_str).collect::<Vec<_>>(),
        ["alloc", "fill", "free", "read", "settle", "trim"]
    );
}

#[test]
fn a_changed_read_back_is_not_verified_and_an_empty_trim_fails() {
    let r = result(&cfg(), Pattern::Random, 1, 1, &zram(), drove(32 << 20, "0f0f")).unwrap();
    assert!(!r.verified);
    let e = result(&cfg(), Pattern::Random, 1, 1, &zram(), drove(0, "00ff")).unwrap_err();
    assert!(e.to_string().contains("moved nothing"), "{e}");
    // Without a store, an empty trim is a note, not a failure.
    let none = Backing { kind: BackingKind::None, ..Default::default() };
    let r = result(&cfg(), Pattern::Random, 1, 1, &none, drove(0, "00ff")).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("no swap backs this run")));
    assert_eq!(r.stored_fraction, None);
}
