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

#[test]
fn bad_heap_input_exits_2() {
    for (args, needle) in [
        (&["--allocators", "glibc,tcmalloc"][..], "preload:PATH"),
        (&["--allocators", "preload:/nonexistent/libx.so"][..], "no such file"),
        (&["--threads", "0"][..], "expected 1 to"),
        (&["--threads", "1,x"][..], "not a thread count"),
        (&["--heap-mode", "per-thread", "--allocators", "glibc"][..], "per-thread: mimalloc, jemalloc"),
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
}
