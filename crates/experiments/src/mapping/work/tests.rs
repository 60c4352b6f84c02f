//! mapping's work: each method in process, and its whole run without root.

use super::*;

fn spec(method: &str) -> Spec {
    Spec {
        method: method.into(),
        size: 4 << 20,
        stride: 64 << 10,
        touch: Touch::Page,
        iterations: 3,
        warmup: 1,
        hugepages: Hugepages::Never,
        pressure: false,
        memfd_keep: false,
        free_pageout: false,
    }
}

fn cfg() -> MappingConfig {
    MappingConfig {
        size: 4 << 20,
        stride: 64 << 10,
        touch: Touch::Page,
        iterations: 3,
        warmup: 1,
        repeat: 1,
        methods: METHODS.iter().map(|m| m.to_string()).collect(),
        hugepages: Hugepages::Never,
        pressure: false,
        memfd_keep: false,
        free_pageout: false,
        exe: "/nonexistent".into(),
        host_floor: None,
    }
}

#[test]
fn every_method_runs_in_process_and_counts_only_its_iterations() {
    // Each method on a 4 MiB region, in this (unprivileged) test process.
    let pages = (4u64 << 20) / mm::page_size() as u64;
    for m in METHODS {
        let d = run_method(&spec(m), &mut probe::Probe::default()).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_eq!(d.totals_ms.len(), 3, "{m}: the warm-up is not counted");
        assert_eq!(d.retouch.is_some(), keeps_region(m), "{m}");
        // Touching each page of a fresh region faults it in (populate
        // already did at obtain; mremap grows a half that stays resident;
        // the kept regions are resident again after the last re-touch, and
        // their re-touch faults instead, where the release took the pages).
        let faults = match m {
            "populate" | "free" => 0.0,
            "mremap" => 0.45,
            _ => 0.9,
        };
        let seen = if keeps_region(m) { d.retouch.as_ref().unwrap() } else { &d.touch };
        assert!(seen.minor_faults_p50 >= pages as f64 * faults, "{m}: {d:?}");
        assert!(d.baseline_touch_ms_min <= d.baseline_touch_ms_p50, "{m}");
        assert!(d.baseline_touch_ms_p50 <= d.baseline_touch_ms_max, "{m}");
        assert!(d.total_ms_p50 > 0.0, "{m}");
    }
    assert!(run_method(&spec("brk"), &mut probe::Probe::default()).unwrap_err().contains("unknown method 'brk'"));
}

#[test]
fn dontneed_gives_pages_back_and_the_retouch_faults_them_again() {
    let d = run_method(&spec("dontneed"), &mut probe::Probe::default()).unwrap();
    let r = d.retouch.as_ref().unwrap();
    // After MADV_DONTNEED the region is not resident; touching it again
    // faults every page afresh.
    assert!(d.release.rss_after_bytes + (2 << 20) <= d.touch.rss_after_bytes, "{d:?}");
    assert!(r.minor_faults_p50 >= d.touch.minor_faults_p50 * 0.9, "{d:?}");
}

#[test]
fn the_reply_is_typed_and_the_result_normalized_by_the_baseline() {
    let d = run_method(&spec("free"), &mut probe::Probe::default()).unwrap();
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(serde_json::from_value::<Done>(v.clone()).unwrap(), d);
    let mut broken = v;
    broken.as_object_mut().unwrap().remove("totals_ms");
    assert!(serde_json::from_value::<Done>(broken).unwrap_err().to_string().contains("totals_ms"));
    let r = result(&cfg(), &spec("free"), 2, d.clone());
    assert_eq!((r.repeat, r.method.as_str()), (2, "free"));
    // A method with a re-touch carries two touches of the baseline.
    assert!((r.normalized_ms_p50 - (d.total_ms_p50 - 2.0 * d.baseline_touch_ms_p50)).abs() < 1e-12);
    assert!(r.notes.iter().any(|n| n.contains("MADV_FREE")));
    let argv = sandbox::worker::argv_spec(WORKER, &spec("memfd"));
    assert_eq!(sandbox::worker::spec_of::<Spec>(WORKER, &argv[2..]).unwrap(), spec("memfd"));
}

/// `--memfd-keep`: the memfd method maps the same memfd each cycle, so
/// what one cycle wrote is there in the next (its pages stayed in the
/// page cache); without it each cycle's memfd is new and zero.
#[test]
fn a_kept_memfd_keeps_its_pages_between_cycles() {
    let size = 1 << 20;
    let fd = kept_memfd(size).unwrap();
    let a = map_shared(fd, size).unwrap();
    // SAFETY: in bounds of our mapping.
    unsafe { *a.add(size - 1) = 7 };
    unmap(a, size);
    let b = map_shared(fd, size).unwrap();
    // SAFETY: in bounds of our mapping.
    assert_eq!(unsafe { *b.add(size - 1) }, 7, "the kept memfd lost its page");
    unmap(b, size);
    // SAFETY: closing our memfd.
    unsafe { libc::close(fd) };
    let kept = Spec { memfd_keep: true, ..spec("memfd") };
    let d = run_method(&kept, &mut probe::Probe::default()).unwrap();
    assert_eq!(d.totals_ms.len(), 3, "{d:?}");
    let e = validate(&MappingConfig { memfd_keep: true, methods: vec!["free".into()], ..cfg() }, &mut probe::Probe::default());
    assert!(e.unwrap_err().to_string().contains("--memfd-keep changes only the memfd method"));
}

/// `--free-pageout`: the free method's release pages the region out at
/// once, so its pages leave (no swap is needed: lazily freed pages are
/// clean) and the re-touch faults every one in anew, as after
/// MADV_DONTNEED. A kernel without MADV_PAGEOUT (before 5.4) is refused
/// before any run, and so is the flag beside --pressure or without free.
#[test]
fn a_free_paged_out_at_once_is_faulted_in_again() {
    let eager_cfg = MappingConfig { free_pageout: true, ..cfg() };
    if let Err(why) = mm::try_madvise_pageout() {
        let e = validate(&eager_cfg, &mut probe::Probe::default()).unwrap_err().to_string();
        assert!(e.contains("--free-pageout") && e.contains(&why), "{e}");
        eprintln!("SKIP the run: {why}");
        return;
    }
    validate(&eager_cfg, &mut probe::Probe::default()).unwrap();
    let pages = (4u64 << 20) / mm::page_size() as u64;
    let eager = Spec { free_pageout: true, ..spec("free") };
    let d = run_method(&eager, &mut probe::Probe::default()).unwrap();
    let r = d.retouch.as_ref().unwrap();
    assert!(r.minor_faults_p50 >= pages as f64 * 0.9, "{d:?}");
    assert!(d.release.rss_after_bytes + (2 << 20) <= d.touch.rss_after_bytes, "{d:?}");
    let r = result(&eager_cfg, &eager, 1, d);
    assert!(r.free_pageout && r.notes.iter().any(|n| n.starts_with("--free-pageout")), "{:?}", r.notes);
    assert!(!r.notes.iter().any(|n| n.contains("finds them in place")), "{:?}", r.notes);
    let only_dontneed = MappingConfig { free_pageout: true, methods: vec!["dontneed".into()], ..cfg() };
    let e = validate(&only_dontneed, &mut probe::Probe::default());
    assert!(e.unwrap_err().to_string().contains("--free-pageout changes only the free method"));
    let both = MappingConfig { free_pageout: true, pressure: true, ..cfg() };
    let e = validate(&both, &mut probe::Probe::default());
    assert!(e.unwrap_err().to_string().contains("--free-pageout and --pressure"));
}

/// The worker reads its own memory through the probe its starter gave
/// it: one over a tree with no /proc/self is an error that says what
/// could not be read, never a reply of zeros.
#[test]
fn the_worker_reads_itself_through_its_probe() {
    let empty = tempfile::tempdir().unwrap();
    let argv = sandbox::worker::argv_spec(WORKER, &spec("mmap-munmap"));
    let run = |p: probe::Probe| {
        let out = Shared::default();
        let mut io = sandbox::worker::child::WorkerIo::over(std::io::empty(), out.clone()).with_probe(p);
        let r = worker_main(&mut io, &argv[2..]);
        drop(io);
        (r, String::from_utf8(out.0.lock().unwrap().clone()).unwrap())
    };
    let (r, out) = run(probe::Probe::new(probe::Roots::under(empty.path())));
    assert!(r.unwrap_err().contains("could not read its own VmRSS"), "{out}");
    assert!(out.is_empty(), "no reply from a worker that could not read itself: {out}");
    let (r, out) = run(probe::Probe::default());
    assert!(r.is_ok() && out.contains("total_ms_p50"), "{out}");
}

/// What a worker wrote, kept for the test to read.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// mapping's whole run with no root and no process: each method's
/// worker main on a thread. Repeats run the methods in ABBA order, each
/// in a fresh worker; each result is written as it comes, with its
/// baseline; a stop ends it as interrupted, a result that cannot be
/// written fails it, and --pressure (a group a thread cannot join) is refused.
#[test]
fn the_run_drives_its_workers_without_root() {
    use workloads::observe::{ExperimentError, Recorder};
    let cfg = MappingConfig {
        size: 1 << 20,
        stride: 64 << 10,
        touch: Touch::Page,
        iterations: 2,
        warmup: 1,
        repeat: 2,
        methods: vec!["mmap-munmap".into(), "dontneed".into()],
        hugepages: Hugepages::Never,
        pressure: false,
        memfd_keep: false,
        free_pageout: false,
        exe: "/nonexistent".into(),
        host_floor: None,
    };
    let journal = tempfile::tempdir().unwrap();
    let sb = || sandbox::Sandbox::with_journal_dir("mapping", journal.path());
    let mut threads = sandbox::worker::Threads(vec![(WORKER, worker_main)]);
    let mut obs = Recorder::default();
    let rs = run_with(&cfg, &mut obs, || false, &mut threads, sb()).unwrap();
    let order: Vec<(&str, u32)> = rs.iter().map(|r| (r.method.as_str(), r.repeat)).collect();
    assert_eq!(order, [("mmap-munmap", 1), ("dontneed", 1), ("dontneed", 2), ("mmap-munmap", 2)]);
    assert_eq!(obs.results.len(), 4, "each result written as it came");
    for (e, r) in obs.results.iter().zip(&rs) {
        assert_eq!(e.result.as_ref(), Some(r));
        assert!(e.baseline.as_ref().is_some_and(|b| b.touch_ms_p50.is_some_and(|t| t > 0.0)), "{e:?}");
        assert!(r.total_ms_p50 > 0.0 && r.iterations == 2 && r.retouch.is_some() == (r.method == "dontneed"), "{r:?}");
    }
    let mut stopped = Recorder::default();
    let e = run_with(&cfg, &mut stopped, || true, &mut threads, sb()).unwrap_err();
    assert!(matches!(e, ExperimentError::Interrupted) && stopped.results.is_empty(), "{e}");
    let mut refusing = Recorder { refuse_results: true, ..Default::default() };
    let e = run_with(&cfg, &mut refusing, || false, &mut threads, sb()).unwrap_err();
    assert!(matches!(e, ExperimentError::Record(_)), "{e}");
    let pressed = MappingConfig { pressure: true, ..cfg };
    let e = run_with(&pressed, &mut Recorder::default(), || false, &mut threads, sb()).unwrap_err();
    assert!(e.to_string().contains("--pressure needs"), "{e}");
}
