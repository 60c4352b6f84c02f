//! thrash's whole run without root (issue 60 item 3): its workers' own
//! mains on threads of this process, its group on a fake cgroup-v2 tree.

use super::*;
use sandbox::worker::{EventKind, Threads, child::WorkerIo};
use workloads::observe::{ExperimentError, Recorder};

/// The unlocked sampler's stand-in (the real one is pagelab's own worker,
/// src/worker.rs, tested there): ready at once, and on `exit` the
/// lateness it saw, none.
fn sampler_main(io: &mut WorkerIo, _: &[String]) -> Result<(), String> {
    io.emit(EventKind::Ready, "", Value::Null);
    while let Some(c) = io.command::<Command>() {
        if let Command::Exit(_) = c? {
            break;
        }
    }
    io.reply::<Exit>(&json!({"lateness": []}));
    Ok(())
}

/// A fake machine: a cgroup-v2 tree, its paging counters and PSI still, a
/// swap file of the host's own active (each group it makes is given its
/// files, `sandbox::testing::kernel_files`, which have no memory.swap.max).
fn machine() -> tempfile::TempDir {
    let tree = tempfile::tempdir().unwrap();
    sandbox::testing::fake_cgroup_v2(tree.path()).unwrap();
    let proc = tree.path().join("proc");
    std::fs::write(proc.join("vmstat"), "pswpin 7\npswpout 9\npgmajfault 3\n").unwrap();
    std::fs::create_dir_all(proc.join("pressure")).unwrap();
    let calm = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    std::fs::write(proc.join("pressure/memory"), calm).unwrap();
    // The host's own swap, which no journal of the run's made.
    let swaps = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/swapfile\tfile\t1048572\t0\t-2\n";
    std::fs::write(proc.join("swaps"), swaps).unwrap();
    tree
}

/// thrash's run drives its consumers, probes and sampler (threads here)
/// through the worker-link seam in a group it makes, sizes the limit from
/// the group's idle usage, guards it, reads each consumer's report and the
/// probes' samples, writes the result, and leaves no group and no journal
/// behind; a stop ends it before a run, and a result that cannot be
/// written fails it.
#[test]
fn the_run_drives_its_workers_and_group_without_root() {
    let tree = machine();
    let cfg = ThrashConfig {
        presets: vec![],
        consumers: Some(2),
        size: Some(1 << 20),
        writes: Some(64),
        sleep: Some(Duration::from_millis(1)),
        stagger: Some(Duration::from_millis(20)),
        initial_delay: Duration::from_millis(10),
        limit: None,
        backings: vec![BackingKind::None],
        time_scale: None,
        scale: 1.0,
        repeat: 1,
        exe: "/nonexistent".into(),
        host_floor: None,
        swapfile_dir: "/tmp".into(),
        after_load: AfterLoad::Falls,
        // The CPU-only control's room (twice the load): never overcommitted,
        // so the recovery's watch ends after its calm second.
        cpu_only: true,
    };
    let sandbox = || {
        sandbox::Sandbox::with_journal_dir("thrash", &tree.path().join("journal"))
            .with_roots(probe::Roots::under(tree.path()))
            .with_kernel_files(sandbox::testing::kernel_files)
    };
    let mut threads = Threads(vec![(CONSUMER, consumer_main), (PROBE, probe_main), (SAMPLER, sampler_main)]);
    let mut obs = Recorder::default();
    let rs = run_with(&cfg, &mut obs, || false, &mut threads, &sandbox).unwrap();
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert_eq!((r.consumers, r.consumers_completed), (2, 2), "{:?}", r.consumer_details);
    // The limit: the group's idle usage, as the kernel gave it, and twice
    // the load above it.
    assert_eq!(r.idle_usage_bytes, sandbox::testing::FAKE_USAGE);
    assert_eq!(r.limit_bytes, sandbox::testing::FAKE_USAGE + 2 * (2 << 20));
    assert_eq!(r.guard.method, "memory.high");
    assert_eq!(r.oom_kills, Some(0));
    for c in &r.consumer_details {
        assert!(c.completed && c.cycles > 0 && c.progress_ratio > 0.0, "{c:?}");
    }
    // The probes' samples were read back (every 100 ms through a 0.5 s baseline at least).
    assert!(r.probe_inside_ms.before.n >= 3 && r.probe_outside_ms.before.n >= 3, "{:?}", r.probe_inside_ms);
    assert_eq!(r.recovery_from_s, None, "never over the room");
    // The host's swap, read on the sandbox's machine: a group the kernel
    // cannot cap might page into it, and the run says so.
    assert!(r.notes.iter().any(|n| n.starts_with(UNCAPPED)), "{:?}", r.notes);
    // Two consumers and two probes were the run's targets; the result was written.
    assert_eq!(obs.pids.first().map(Vec::len), Some(4), "{:?}", obs.pids);
    assert_eq!(obs.results.len(), 1);
    assert!(obs.notes.iter().any(|n| n.contains("2/2 consumers completed")), "{:?}", obs.notes);
    // Nothing left: the group is gone and the journal restored.
    let groups = tree.path().join("sys/fs/cgroup/pagelab");
    assert!(std::fs::read_dir(&groups).map_or(true, |mut d| d.next().is_none()), "a group was left");
    let journals: Vec<_> = std::fs::read_dir(tree.path().join("journal")).into_iter().flatten().flatten().collect();
    assert!(journals.is_empty(), "a journal was left: {journals:?}");
    // No sleep (thrash.writes' control): the consumers write nonstop, fall
    // back, and still hear the parent's `exit` (each cycle looks without
    // waiting); they kept a bounded sample of their cycle times.
    let nosleep = ThrashConfig { sleep: Some(Duration::ZERO), ..cfg.clone() };
    let rs = run_with(&nosleep, &mut Recorder::default(), || false, &mut threads, &sandbox).unwrap();
    let r = &rs[0];
    assert_eq!(r.plan.as_ref().map(|p| p.sleep_ms), Some(0.0));
    assert_eq!((r.consumers, r.consumers_completed), (2, 2), "{:?}", r.consumer_details);
    for c in &r.consumer_details {
        assert!(c.cycles > 0 && c.cycle_ms_min <= c.cycle_ms_p50 && c.cycle_ms_p50 <= c.cycle_ms_max, "{c:?}");
    }
    let e = run_with(&cfg, &mut Recorder::default(), || true, &mut threads, &sandbox).unwrap_err();
    assert!(matches!(e, ExperimentError::Interrupted), "{e}");
    let mut refusing = Recorder { refuse_results: true, ..Default::default() };
    let e = run_with(&cfg, &mut refusing, || false, &mut threads, &sandbox).unwrap_err();
    assert!(matches!(e, ExperimentError::Record(_)), "{e}");
}
