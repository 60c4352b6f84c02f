//! `pagelab heap`: every allocator runs, timed calls fit in wall time, and a
//! preloaded allocator is really the one measured.

mod common;
use common::bin;
use std::process::Command;

fn heap(args: &[&str]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let threads: &[&str] = if args.contains(&"--threads") { &[] } else { &["--threads", "1,3"] };
    let out = Command::new(bin())
        .arg("heap")
        .args(["--ops", "3000", "--repeat", "2"])
        .args(threads)
        .args(args)
        .args(["--json", "--out", tmp.path().join("run").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_schema("experiment-output", &v);
    let run = std::fs::read_to_string(tmp.path().join("run/run.json")).unwrap();
    common::assert_schema("run", &serde_json::from_str(&run).unwrap());
    v
}

const LIBDIR: &str = "/usr/lib/x86_64-linux-gnu";

fn lib(name: &str) -> Option<String> {
    let p = format!("{LIBDIR}/{name}");
    if std::path::Path::new(&p).exists() {
        Some(p)
    } else {
        println!("SKIP part: {p} is not installed (Debian: libjemalloc2, libtcmalloc-minimal4)");
        None
    }
}

fn f(r: &serde_json::Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {r}"))
}

#[test]
fn every_allocator_completes_a_tiny_run_with_consistent_counts() {
    let v = heap(&["--allocators", "glibc,mimalloc,jemalloc"]);
    assert!(f(&v, "timer_overhead_ns") > 0.0);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 6, "3 allocators × 2 thread counts: {v}");
    for r in rs {
        let threads = r["threads"].as_u64().unwrap();
        assert_eq!(r["repeat"], 2);
        for k in [
            "alloc_ns_mean",
            "alloc_ns_p50",
            "alloc_ns_p99",
            "free_ns_mean",
            "free_ns_p99",
            "alloc_ms_per_million",
            "free_ms_per_million",
        ] {
            assert!(f(r, k) >= 0.0 && f(r, k).is_finite(), "{k} in {r}");
        }
        assert!(f(r, "alloc_ns_p99") >= f(r, "alloc_ns_p50"));
        assert!(r["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);
        for run in r["runs"].as_array().unwrap() {
            // Every allocation of every thread is freed: growth, then at least
            // --ops warm allocations per thread, in whole rounds of 1024.
            let allocs = run["allocs"].as_u64().unwrap();
            let growth = run["growth_allocs"].as_u64().unwrap();
            assert!(growth > 0, "growth phase measured: {run}");
            assert!(allocs >= growth + threads * 3000, "{run}");
            assert_eq!(run["frees"], run["allocs"]);
            // Per thread, the timed batches fit in the warm phase's wall time.
            let frac = f(run, "timed_fraction_max");
            assert!(frac > 0.0 && frac <= 1.0, "timed/wall {frac}");
            // Batch timing: the counter pair is a small share of each batch
            // (under 1 % at real sizes; the tiny --ops here allows 5 %).
            assert!(f(run, "timer_share_max") < 0.05, "timer share {run}");
            // Growth takes fresh memory from the kernel.
            assert!(run["growth_minor_faults"].as_u64().unwrap() > 0, "{run}");
            assert_eq!(run["pinned"], threads <= common::cpus() as u64, "{run}");
            assert!(run["malloc_provider"].as_str().unwrap().contains("libc"), "{run}");
        }
    }
}

#[test]
fn a_preloaded_allocator_is_the_one_measured() {
    let Some(je) = lib("libjemalloc.so.2") else { return };
    let v = heap(&["--allocators", &format!("glibc,preload:{je}"), "--threads", "2"]);
    let rs = v["results"].as_array().unwrap();
    let glibc = rs.iter().find(|r| r["allocator"] == "glibc").unwrap();
    let pre = rs.iter().find(|r| r["allocator"].as_str().unwrap().starts_with("preload:")).unwrap();
    // malloc resolves to the preloaded library in the worker, and it is mapped there;
    // without the preload it resolves to libc.
    assert!(pre["malloc_provider"].as_str().unwrap().contains("jemalloc"), "{pre}");
    assert!(glibc["malloc_provider"].as_str().unwrap().contains("libc"), "{glibc}");
    for run in pre["runs"].as_array().unwrap() {
        assert_eq!(run["preload_mapped"], true, "{run}");
    }
}

#[test]
fn unsupported_modes_are_reported_not_replaced() {
    let v = heap(&["--allocators", "glibc,mimalloc,jemalloc", "--heap-mode", "per-thread", "--threads", "2"]);
    let ran: Vec<&str> = v["results"].as_array().unwrap().iter().map(|r| r["allocator"].as_str().unwrap()).collect();
    assert_eq!(ran, ["mimalloc", "jemalloc"]);
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["heap_mode"] == "per-thread"));
    let un = v["unsupported"].as_array().unwrap();
    assert_eq!(un.len(), 1);
    assert_eq!(un[0]["allocator"], "glibc");
    let v = heap(&[
        "--allocators",
        "glibc,mimalloc,jemalloc",
        "--heap-mode",
        "shared",
        "--threads",
        "2",
        "--baseline",
        "jemalloc",
    ]);
    let un = v["unsupported"].as_array().unwrap();
    assert_eq!(un.len(), 1);
    assert_eq!(un[0]["allocator"], "mimalloc");
}

/// heap.concurrent_linux's positive control: glibc's workers run with the
/// deep thread cache (their own check of it passes only if the tunable took
/// effect), mimalloc's as they are; each result names the mode it ran in.
#[test]
fn glibc_cached_gives_glibc_alone_a_deep_cache() {
    let v = heap(&["--allocators", "glibc,mimalloc", "--heap-mode", "glibc-cached", "--threads", "2"]);
    let modes: Vec<(&str, &str)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["allocator"].as_str().unwrap(), r["heap_mode"].as_str().unwrap()))
        .collect();
    assert_eq!(modes, [("glibc", "glibc-cached"), ("mimalloc", "default")]);
}

#[test]
fn bad_heap_input_exits_2() {
    for (args, needle) in [
        (&["--allocators", "glibc,tcmalloc"][..], "preload:PATH"),
        (&["--allocators", "preload:/nonexistent/libx.so"][..], "no such file"),
        (&["--threads", "0"][..], "expected 1 to"),
        (&["--threads", "1,x"][..], "not a thread count"),
        (&["--heap-mode", "per-thread", "--allocators", "glibc"][..], "per-thread: mimalloc, jemalloc"),
        (
            &["--heap-mode", "glibc-shared", "--allocators", "mimalloc,jemalloc"][..],
            "glibc-shared: changes glibc alone",
        ),
        (&["--heap-mode", "glibc-cached", "--allocators", "mimalloc"][..], "glibc-cached: changes glibc alone"),
        (&["--baseline", "tcmalloc"][..], "--baseline"),
        (&["--ops", "0"][..], "--ops"),
    ] {
        let out = Command::new(bin()).arg("heap").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
    }
}

/// A preloaded library that is ELF but no allocator (libz): malloc stays libc's,
/// and the run says so instead of labelling libc's figures with its name.
#[test]
fn a_preloaded_library_without_malloc_is_refused() {
    let libz = "/usr/lib/x86_64-linux-gnu/libz.so.1";
    if !std::path::Path::new(libz).exists() {
        common::skip("libz.so.1 is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["heap", "--allocators", &format!("preload:{libz}"), "--threads", "1", "--ops", "20000", "--repeat", "1"])
        .arg("--out")
        .arg(tmp.path().join("run"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("preload:{libz} does not provide malloc")), "{err}");
    // The same over time: its curves would be libc's under libz's name.
    let out = Command::new(bin())
        .args(["heap", "--over-time", "--allocators", &format!("preload:{libz}"), "--knobs", "none"])
        .args(["--over-time-threads", "1", "--patterns", "small", "--live", "16MiB", "--churn", "200ms"])
        .args(["--idle", "200ms", "--repeat", "1", "--out"])
        .arg(tmp.path().join("over-time"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("preload:{libz} does not provide malloc")), "{err}");
}

/// `heap --over-time` at a small size: the phases' figures hold together, the
/// output matches the schemas, and malloc_trim gives back what glibc kept.
#[test]
fn over_time_figures_hold_together_and_malloc_trim_gives_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = Command::new(bin())
        .args(["heap", "--over-time", "--over-time-threads", "2", "--live", "32MiB", "--churn", "400ms"])
        .args(["--idle", "1s", "--repeat", "2", "--knobs", "glibc:malloc_trim", "--json", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_schema("experiment-output", &v);
    let run: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    common::assert_schema("run", &run);
    let ot = v["over_time"].as_array().unwrap();
    let arms: Vec<&str> = ot.iter().map(|r| r["arm"].as_str().unwrap()).collect();
    assert_eq!(arms, ["glibc", "mimalloc", "jemalloc", "glibc+malloc_trim"]);
    assert!(v["results"].as_array().unwrap().is_empty(), "no speed sweep without --speed");
    // As root with a memory controller, each worker ran in a cgroup of its own.
    let charged = run["config"]["over_time"]["charge"] == true;
    if !charged {
        println!("SKIP part: not root or no memory cgroup controller: no cgroup charge to check");
    }
    for r in ot {
        let runs = r["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{}", r["arm"]);
        for x in runs {
            let b = |k: &str| x[k].as_u64().unwrap_or_else(|| panic!("{k} in {x}")) as f64;
            let live = b("live_bytes");
            assert!((32.0 * 1048576.0..40.0 * 1048576.0).contains(&live), "{live}");
            assert_eq!(b("freed_bytes") + b("kept_bytes"), live);
            // A random tenth of the objects survives; by bytes it varies
            // more, since a few blocks of up to 2 MiB carry most of them.
            let kept = b("kept_bytes") / live;
            assert!(kept > 0.005 && kept < 0.4, "{kept}");
            // The heap held at least the live bytes at its peak, and the peak is the most seen.
            assert!(b("peak_rss_bytes") >= 0.9 * live, "{}: peak {} live {live}", r["arm"], b("peak_rss_bytes"));
            for k in ["steady_rss_bytes", "before_shrink_rss_bytes", "after_shrink_rss_bytes", "after_idle_rss_bytes"] {
                assert!(b(k) <= b("peak_rss_bytes"), "{k}");
            }
            let ends: Vec<f64> = x["phase_ends_s"].as_array().unwrap().iter().map(|e| e.as_f64().unwrap()).collect();
            assert!(ends.windows(2).all(|w| w[0] <= w[1]) && ends[3] - ends[2] >= 0.99, "{ends:?}");
            assert!(x["timeline"].as_array().unwrap().len() >= 20);
            assert!(x["churn_ops"].as_u64().unwrap() > 1000);
            if charged {
                assert!(x["peak_charge_bytes"].as_u64().is_some_and(|c| c as f64 >= 0.9 * live), "{x}");
            }
        }
    }
    let after = |arm: &str| {
        let r = ot.iter().find(|r| r["arm"] == arm).unwrap();
        r["after_shrink_mib"]["median"].as_f64().unwrap()
    };
    // A scattered tenth survives, but most freed pages hold nothing live:
    // malloc_trim gives them back, glibc's free() keeps most of them.
    assert!(after("glibc+malloc_trim") < 0.5 * after("glibc"), "{} vs {}", after("glibc+malloc_trim"), after("glibc"));
    let trim = ot.iter().find(|r| r["arm"] == "glibc+malloc_trim").unwrap();
    assert!(trim["runs"][0]["trim_ms"].as_f64().is_some());
    // The report carries the chart, the table and the findings.
    assert!(dir.join("heap_over_time_mixed_2.svg").exists());
    let md = std::fs::read_to_string(dir.join("heap.md")).unwrap();
    assert!(md.contains("Memory over time") && md.contains("glibc+malloc_trim"), "{md}");
    let rep = Command::new(bin()).args(["report", "--json"]).arg(&dir).output().unwrap();
    assert!(rep.status.success(), "{}", String::from_utf8_lossy(&rep.stderr));
    let rep = String::from_utf8_lossy(&rep.stdout);
    for id in ["heap.glibc_keeps", "heap.malloc_trim", "heap.idle_gives_nothing"] {
        assert!(rep.contains(id), "{id} not in the report");
    }
}

#[test]
fn bad_over_time_input_exits_2() {
    for (args, needle) in [
        (&["--over-time", "--threads", "2"][..], "--over-time-threads"),
        (&["--over-time", "--knobs", "glibc:LD_PRELOAD=/x.so"][..], "--knobs"),
        (&["--over-time", "--knobs", "jemalloc:dirty_decay_ms:0", "--allocators", "glibc"][..], "not in --allocators"),
        (&["--over-time", "--patterns", "bursty"][..], "small, mixed, cross-thread, larson"),
        (&["--over-time", "--live", "4KiB"][..], "--live"),
        (&["--over-time", "--patterns", "cross-thread", "--over-time-threads", "1"][..], "at least 2 threads"),
        (&["--speed"][..], "--over-time"),
    ] {
        let out = Command::new(bin()).arg("heap").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
    }
}
