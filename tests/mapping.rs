//! `pagelab mapping` semantics: what each release leaves behind.

mod common;
use std::process::Command;

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("pagelab")
}

fn mapping(args: &[&str]) -> serde_json::Value {
    mapping_in(args).0
}

/// [`mapping`], and the directory that holds its run (`run`).
fn mapping_in(args: &[&str]) -> (serde_json::Value, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-mapping-test-journals"))
        .arg("mapping")
        .args(args)
        .args(["--json", "--out", tmp.path().join("run").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (serde_json::from_slice(&out.stdout).unwrap(), tmp)
}

fn get<'a>(v: &'a serde_json::Value, m: &str) -> &'a serde_json::Value {
    v["results"].as_array().unwrap().iter().find(|r| r["method"] == m).unwrap_or_else(|| panic!("no {m}"))
}

fn n(v: &serde_json::Value, step: &str, k: &str) -> f64 {
    v[step][k].as_f64().unwrap_or_else(|| panic!("{step}.{k} in {v}"))
}

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn releases_have_their_documented_semantics() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let size = 32u64 << 20;
    let pages = (size / 4096) as f64;
    let (v, tmp) = mapping_in(&["--size", "32MiB", "--iterations", "3", "--warmup", "1", "--repeat", "2"]);
    assert_eq!(v["experiment"], "mapping");
    // The charts have one group a method, over both repeats: each method's
    // label once (a group a repeat drew each twice, the labels overlapping).
    for chart in ["steps.svg", "totals.svg"] {
        let svg = std::fs::read_to_string(tmp.path().join("run").join(chart)).unwrap();
        assert!(svg.contains("the median of 2 repeats"), "{chart}: its title");
        for m in ["mmap-munmap", "dontneed", "free", "memfd", "memfd-punch", "mremap", "populate"] {
            assert_eq!(svg.matches(&format!(">\n{m}\n</text>")).count(), 1, "{chart}: the label {m}");
        }
    }
    // Repeats are separate runs, round-robin: every method once, then again
    // in the opposite order (ABBA).
    let runs: Vec<(String, u64)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap().to_string(), r["repeat"].as_u64().unwrap()))
        .collect();
    assert_eq!(runs.len(), 14, "{runs:?}");
    assert!(runs[..7].iter().all(|r| r.1 == 1) && runs[7..].iter().all(|r| r.1 == 2), "{runs:?}");
    assert_eq!(runs[0].0, runs[13].0);
    assert_eq!(runs[6].0, runs[7].0);
    assert!(v["baseline"]["touch_ms_p50"].as_f64().unwrap() > 0.0);
    for m in ["mmap-munmap", "dontneed", "free", "memfd", "memfd-punch", "mremap", "populate"] {
        let r = get(&v, m);
        for k in ["obtain_ms_p50", "touch_ms_p50", "release_ms_p50", "total_ms_p50", "normalized_ms_p50"] {
            assert!(r[k].as_f64().is_some(), "{m}.{k}");
        }
        assert_eq!(r["iterations"], 3);
    }
    // munmap and MADV_DONTNEED give the memory back at once.
    for m in ["mmap-munmap", "dontneed", "memfd-punch"] {
        let r = get(&v, m);
        let drop = n(r, "touch_step", "rss_after_bytes") - n(r, "release", "rss_after_bytes");
        assert!(drop >= size as f64 * 0.9, "{m}: RSS dropped by {drop}");
    }
    // DONTNEED's cost shows on the re-touch as zero-fill faults.
    assert!(n(get(&v, "dontneed"), "retouch", "minor_faults_p50") >= pages * 0.9);
    // MADV_FREE without pressure: RSS stays, and the re-touch takes no major faults
    // (and hardly any minor ones: the pages are still there).
    let free = get(&v, "free");
    assert!(
        n(free, "release", "rss_after_bytes") >= n(free, "touch_step", "rss_after_bytes") - (1 << 20) as f64,
        "{free}"
    );
    assert_eq!(n(free, "retouch", "major_faults_p50"), 0.0);
    assert!(n(free, "retouch", "minor_faults_p50") < pages * 0.1, "{free}");
    assert!(get(&v, "mmap-munmap")["retouch_ms_p50"].is_null(), "no re-touch after munmap");
    // memfd pages count as shared memory.
    for m in ["memfd", "memfd-punch"] {
        assert!(n(get(&v, m), "touch_step", "shmem_after_bytes") >= size as f64 * 0.9, "{m}");
    }
    assert_eq!(n(get(&v, "mmap-munmap"), "touch_step", "shmem_after_bytes"), 0.0);
}

#[test]
fn under_pressure_freed_pages_are_reclaimed() {
    if unsafe { libc::geteuid() } != 0 || probe::Probe::default().memory_controller().ok().flatten().is_none() {
        common::skip("--pressure needs root and a memory cgroup controller");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let v = mapping(&["--size", "64MiB", "--iterations", "3", "--warmup", "1", "--methods", "free", "--pressure"]);
    let free = get(&v, "free");
    assert_eq!(free["pressure"], true);
    let pages = (64u64 << 20) as f64 / 4096.0;
    // Reclaimed lazily-freed pages come back as zero-fill faults on the
    // re-touch: all of them, since the squeeze is followed by a page-out of
    // the released region (the squeeze alone left 42 % in place).
    assert!(n(free, "retouch", "minor_faults_p50") >= pages * 0.95, "{free}");
    assert!(
        !std::fs::read_dir(probe::Probe::default().memory_controller().unwrap().unwrap().1)
            .unwrap()
            .flatten()
            .any(|e| e.file_name() == "pagelab")
    );
}

#[test]
fn bad_mapping_input_exits_2() {
    for (args, needle) in [
        (&["--stride", "1000"][..], "multiple of the page size"),
        (&["--size", "16KiB", "--stride", "64KiB"][..], "below one stride"),
        (&["--methods", "mmap,brk"][..], "mmap-munmap, dontneed, free"),
        (&["--touch", "some"][..], "--touch"),
        (&["--size", "0"][..], "greater than zero"),
    ] {
        let out = Command::new(bin()).arg("mapping").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
    }
}
