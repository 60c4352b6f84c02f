//! The Probe against fake trees: files captured verbatim on a Debian 12 machine
//! with the hybrid cgroup layout, and a pure cgroup-v2 tree written from
//! Documentation/admin-guide/cgroup-v2.rst.

#[path = "../../../tests/common/skip.rs"]
mod skip;
use probe::CgroupTarget;
use probe::cgroup::CgroupVersion;
use probe::{Probe, Roots, Sample, Targets, cgroup, mountinfo};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Copies a fixture into a temporary directory so a test may damage it.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), tmp.path());
    tmp
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

#[test]
fn hybrid_tree_full_sample() {
    let mut p = Probe::new(Roots::under(fixture("hybrid")));
    let (ver, dir) = p.memory_controller().unwrap().expect("memory controller");
    assert_eq!(ver, CgroupVersion::V1);
    assert!(dir.ends_with("sys/fs/cgroup/memory"), "{dir:?}");
    assert_eq!(p.cgroup_mounts().unwrap().layout(), mountinfo::Layout::Hybrid);
    assert_eq!(p.zram_devices(), vec![0]);
    let targets = Targets {
        pids: vec![4242, 99999],
        cgroup: Some(CgroupTarget { version: ver, dir: dir.join("pagelab/eat-1"), name: "pagelab/eat-1".into() }),
        zram: vec![0],
        smaps: true,
    };
    let s = p.sample(&targets).unwrap();
    assert!(s.meminfo.as_ref().unwrap().total().unwrap() > 1 << 30);
    assert!(s.vmstat.as_ref().unwrap().get("pgfault").is_some());
    assert_eq!(s.stat.as_ref().unwrap().cpus.len(), 2);
    assert!(s.psi.memory.is_some() && s.psi.cpu.is_some() && s.psi.io.is_some());
    assert!(s.pids[0].status.unwrap().vm_rss.is_some());
    assert!(s.pids[0].smaps_rollup.as_ref().unwrap().get("Rss").is_some());
    // A pid that is not there is missing data, not an error.
    assert_eq!(s.pids[1].status, None);
    let cg = s.cgroup.as_ref().unwrap();
    assert_eq!(cg.limit_bytes, Some(cgroup::UNLIMITED));
    assert!(cg.usage_bytes.unwrap() > 0);
    assert_eq!(cg.oom_kills(), Some(0));
    assert!(cg.anon_bytes().is_some());
    assert_eq!(s.zram[0].comp_algorithm.as_deref(), Some("lzo-rle"));
    assert_eq!(s.zram[0].disksize, Some(0));
    // The sample survives a JSON round trip (it is the record format).
    let back: Sample = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn pure_v2_tree() {
    let mut p = Probe::new(Roots::under(fixture("v2")));
    assert_eq!(p.cgroup_mounts().unwrap().layout(), mountinfo::Layout::V2);
    let (ver, dir) = p.memory_controller().unwrap().expect("memory controller on v2");
    assert_eq!(ver, CgroupVersion::V2);
    let t = CgroupTarget { version: ver, dir: dir.join("pagelab/eat-1"), name: "pagelab/eat-1".into() };
    let cg = p.cgroup_sample(&t).unwrap();
    assert_eq!(cg.usage_bytes, Some(64 << 20));
    assert_eq!(cg.limit_bytes, Some(128 << 20));
    assert_eq!(cg.high_bytes, Some(cgroup::UNLIMITED));
    assert_eq!(cg.swap_bytes, Some(8 << 20));
    assert_eq!(cg.anon_bytes(), Some(48 << 20));
    assert_eq!(cg.file_bytes(), Some(12 << 20), "file minus shmem");
    assert_eq!(cg.oom_kills(), Some(1));
    assert_eq!(cg.pressure.unwrap().full.unwrap().total_us, 100000);
    assert!(p.zram_devices().is_empty());
}

#[test]
fn v2_without_memory_controller_has_none() {
    let tmp = copy_fixture("v2");
    std::fs::write(tmp.path().join("sys/fs/cgroup/cgroup.controllers"), "cpu io pids\n").unwrap();
    let mut p = Probe::new(Roots::under(tmp.path()));
    assert_eq!(p.memory_controller().unwrap(), None);
}

#[test]
fn missing_files_are_none() {
    let tmp = copy_fixture("hybrid");
    std::fs::remove_dir_all(tmp.path().join("proc/pressure")).unwrap();
    std::fs::remove_file(tmp.path().join("proc/vmstat")).unwrap();
    let mut p = Probe::new(Roots::under(tmp.path()));
    let s = p.sample(&Targets::default()).unwrap();
    assert!(s.psi.memory.is_none());
    assert!(s.vmstat.is_none());
    assert!(s.meminfo.is_some());
}

#[test]
fn malformed_file_error_names_path_and_line() {
    let tmp = copy_fixture("hybrid");
    let path = tmp.path().join("proc/meminfo");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("Broken line without colon\n");
    let bad_line = text.lines().count();
    std::fs::write(&path, text).unwrap();
    let mut p = Probe::new(Roots::under(tmp.path()));
    let e = p.sample(&Targets::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("proc/meminfo"), "{msg}");
    assert!(msg.contains(&format!("line {bad_line}")), "{msg}");
}

#[test]
fn overflowing_counter_in_cgroup_file_is_an_error() {
    let tmp = copy_fixture("v2");
    let d = tmp.path().join("sys/fs/cgroup/pagelab/eat-1");
    std::fs::write(d.join("memory.current"), "99999999999999999999999\n").unwrap();
    let mut p = Probe::new(Roots::under(tmp.path()));
    let t = CgroupTarget { version: CgroupVersion::V2, dir: d, name: "x".into() };
    let e = p.cgroup_sample(&t).unwrap_err();
    assert!(e.to_string().contains("memory.current"), "{e}");
}

#[test]
fn live_system_sample_if_linux_proc_present() {
    if !Path::new("/proc/meminfo").exists() {
        skip::skip("no /proc on this machine");
        return;
    }
    let mut p = Probe::default();
    let s = p.sample(&Targets { pids: vec![std::process::id() as i32], ..Default::default() }).unwrap();
    assert!(s.meminfo.unwrap().total().unwrap() > 0);
    assert!(s.pids[0].status.unwrap().vm_rss.unwrap() > 0);
}

#[test]
fn mglru_and_damon_are_read_from_sysfs() {
    let tmp = tempfile::tempdir().unwrap();
    let sys = tmp.path().join("sys");
    let w = |p: &str, v: &str| {
        let f = sys.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, v).unwrap();
    };
    // No lru_gen and no DAMON: None and empty.
    let p = Probe::new(Roots::under(tmp.path()));
    assert_eq!(p.mglru(), None);
    assert!(p.damon().is_empty());
    w("kernel/mm/lru_gen/enabled", "0x0007\n");
    w("kernel/mm/lru_gen/min_ttl_ms", "0\n");
    // The host's kdamond as this VM has it: physical addresses, a pageout scheme.
    w("kernel/mm/damon/admin/kdamonds/nr_kdamonds", "2\n");
    w("kernel/mm/damon/admin/kdamonds/0/state", "on\n");
    w("kernel/mm/damon/admin/kdamonds/0/pid", "76\n");
    w("kernel/mm/damon/admin/kdamonds/0/contexts/nr_contexts", "1\n");
    w("kernel/mm/damon/admin/kdamonds/0/contexts/0/operations", "paddr\n");
    w("kernel/mm/damon/admin/kdamonds/0/contexts/0/schemes/nr_schemes", "1\n");
    w("kernel/mm/damon/admin/kdamonds/0/contexts/0/schemes/0/action", "pageout\n");
    w("kernel/mm/damon/admin/kdamonds/1/state", "off\n");
    w("kernel/mm/damon/admin/kdamonds/1/pid", "-1\n");
    w("kernel/mm/damon/admin/kdamonds/1/contexts/nr_contexts", "0\n");
    let m = p.mglru().unwrap();
    assert_eq!((m.mask, m.enabled, m.min_ttl_ms), (7, true, Some(0)));
    w("kernel/mm/lru_gen/enabled", "0x0000\n");
    assert!(!p.mglru().unwrap().enabled);
    let d = p.damon();
    assert_eq!(d.len(), 2);
    assert!(d[0].moves_pages() && !d[1].moves_pages());
    assert_eq!(d[0].describe(), "kdamond 0 (pid 76) on: paddr, scheme pageout");
    assert_eq!(d[1].describe(), "kdamond 1 off: no context");
}

#[test]
fn process_table_maps_and_cgroup_on_the_hybrid_tree() {
    let mut p = Probe::new(Roots::under(fixture("hybrid")));
    // The table: pid 4242 has a comm and a VmRSS; `self` is not a number.
    let t = p.processes();
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!((t[0].pid, t[0].comm.as_str()), (4242, "cat"));
    assert!(t[0].rss > 0);
    assert_eq!(p.pid_comm(4242).as_deref(), Some("cat"));
    assert_eq!(p.pid_comm(99999), None);
    // Maps: the shared memfd and the names with spaces survive the parse.
    let maps = p.pid_maps(4242).unwrap().unwrap();
    assert_eq!(maps.len(), 5);
    assert_eq!(maps.iter().filter(|m| m.is_private()).count(), 4);
    assert_eq!(maps[2].name, "/memfd:pagelab (deleted)");
    assert_eq!(p.pid_maps(99999).unwrap(), None);
    // The cgroup: v1's memory line, rebased into the tree.
    let cg = p.memory_cgroup_of(Some(4242)).unwrap().expect("a memory cgroup");
    assert_eq!(cg.version, CgroupVersion::V1);
    assert_eq!(cg.name, "/pagelab/eat-1");
    assert!(cg.dir.ends_with("sys/fs/cgroup/memory/pagelab/eat-1") && cg.dir.is_dir(), "{:?}", cg.dir);
    assert_eq!(p.memory_cgroup_of(Some(99999)).unwrap(), None);
    // Machine-wide lists.
    assert_eq!(p.crypto_compressors(), ["lzo-rle", "lzo"]);
    assert!(p.cpu_flags().iter().any(|f| f == "fpu"), "{:?}", p.cpu_flags());
}

#[test]
fn memory_cgroup_of_self_on_pure_v2() {
    let mut p = Probe::new(Roots::under(fixture("v2")));
    let cg = p.memory_cgroup_of(None).unwrap().expect("a memory cgroup");
    assert_eq!(cg.version, CgroupVersion::V2);
    assert!(cg.dir.ends_with("sys/fs/cgroup/pagelab/eat-1") && cg.dir.is_dir(), "{:?}", cg.dir);
    // Without the memory controller there is no memory cgroup to name.
    let tmp = copy_fixture("v2");
    std::fs::write(tmp.path().join("sys/fs/cgroup/cgroup.controllers"), "cpu io\n").unwrap();
    assert_eq!(Probe::new(Roots::under(tmp.path())).memory_cgroup_of(None).unwrap(), None);
    // Missing files are missing data.
    assert!(p.processes().is_empty() && p.crypto_compressors().is_empty() && p.cpu_flags().is_empty());
}

#[test]
fn pagemap_lru_gen_and_page_idle_on_a_fake_tree() {
    use probe::process::PageEntry;
    let tmp = tempfile::tempdir().unwrap();
    let mut p = Probe::new(Roots::under(tmp.path()));
    // Absent files: no process, no MGLRU debugfs, no idle page tracking.
    assert!(p.pid_pagemap(7, 0, 1, 4096).is_err());
    assert_eq!(p.lru_gen().unwrap(), None);
    assert!(!p.page_idle_present());
    // A pagemap of 5000 entries (more than one read's 4096), entry i = i with
    // bit 63 set on the even pages, bit 62 on every third and bit 61 on the fifth.
    let bit = |i: u64| {
        let on = |cond: bool, b: u32| if cond { 1u64 << b } else { 0 };
        on(i % 2 == 0, 63) | on(i % 3 == 0, 62) | on(i == 5, 61)
    };
    let bytes: Vec<u8> = (0..5000u64).flat_map(|i| (i | bit(i)).to_le_bytes()).collect();
    std::fs::create_dir_all(tmp.path().join("proc/7")).unwrap();
    std::fs::write(tmp.path().join("proc/7/pagemap"), &bytes).unwrap();
    // From the page at 3 × 4096: 4500 entries, so the second read starts mid-file.
    let e = p.pid_pagemap(7, 3 * 4096, 4500, 4096).unwrap();
    assert_eq!(e.len(), 4500);
    assert_eq!(e[0], PageEntry(3 | bit(3)));
    assert_eq!(e[4499].0 & 0xffff, 4502);
    assert!(!e[0].present() && e[0].swapped() && e[1].present() && !e[1].swapped());
    assert!(e[2].file_or_shared() && !e[3].file_or_shared());
    assert_eq!(e.iter().filter(|x| x.present()).count(), 2250);
    // Past the end of the file is an error, not a short answer.
    assert!(p.pid_pagemap(7, 4096 * 4990, 20, 4096).is_err());
    // lru_gen as a 6.12 guest printed it, read through the sys root.
    let dbg = tmp.path().join("sys/kernel/debug");
    std::fs::create_dir_all(&dbg).unwrap();
    std::fs::write(
        dbg.join("lru_gen"),
        "memcg     1 /\n node     0\n          0      27456          0       1232\n          1      10236          0       2870\nmemcg    42 /pagelab/assess-7-0\n node     0\n          5        350       8192          3\n          6         12        100          0\n",
    )
    .unwrap();
    assert_eq!(p.lru_gen_path(), dbg.join("lru_gen"));
    let m = p.lru_gen().unwrap().unwrap();
    assert_eq!(m.iter().map(|m| (m.id, m.path.as_str())).collect::<Vec<_>>(), [(1, "/"), (42, "/pagelab/assess-7-0")]);
    assert_eq!(m[1].nodes[0].max_seq(), Some(6));
    std::fs::write(dbg.join("lru_gen"), "memcg x /\n").unwrap();
    let e = p.lru_gen().unwrap_err().to_string();
    assert!(e.contains("lru_gen") && e.contains("line 1"), "{e}");
    std::fs::create_dir_all(tmp.path().join("sys/kernel/mm/page_idle")).unwrap();
    std::fs::write(tmp.path().join("sys/kernel/mm/page_idle/bitmap"), "").unwrap();
    assert!(p.page_idle_present());
}
