//! Parser tests: well-formed text copied from real kernels, malformed lines,
//! overflow, and the shapes that vary between kernels.

use probe::*;

#[test]
fn meminfo_converts_kib_and_keeps_unknown_keys() {
    let m =
        meminfo::parse("MemTotal:       24598616 kB\nMemFree:  100 kB\nHugePages_Total:       0\nNewKey2030:   7 kB\n")
            .unwrap();
    assert_eq!(m.total(), Some(24598616 * 1024));
    assert_eq!(m.get("HugePages_Total"), Some(0));
    assert_eq!(m.get("NewKey2030"), Some(7 * 1024));
}

#[test]
fn meminfo_malformed_line_names_the_line() {
    let e = meminfo::parse("MemTotal: 1 kB\nMemFree 12 kB\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = meminfo::parse("MemTotal: 1 kB\nMemFree: twelve kB\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("twelve"), "{e}");
    let e = meminfo::parse("MemTotal: 1 MB\n").unwrap_err();
    assert!(e.message.contains("unit"), "{e}");
}

#[test]
fn meminfo_overflow_is_an_error_not_a_wrap() {
    // 2^64 / 1024 + 1 kB does not fit in u64 bytes.
    let e = meminfo::parse("MemTotal: 18014398509481984 kB\n").unwrap_err();
    assert!(e.message.contains("overflows"), "{e}");
    let e = meminfo::parse("MemTotal: 18446744073709551616 kB\n").unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn vmstat_is_a_map_and_rejects_bad_lines() {
    let v =
        vmstat::parse("nr_free_pages 5\npswpin 7\npgscan_kswapd 3\npgscan_direct 4\npgscan_khugepaged 1\n").unwrap();
    assert_eq!(v.get("pswpin"), Some(7));
    assert_eq!(v.sum_prefix("pgscan_"), 8);
    assert_eq!(v.get("absent"), None);
    let e = vmstat::parse("pswpin 7\npswpout\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = vmstat::parse("pswpin -7\n").unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn stat_reads_cpu_lines_and_counters() {
    let text = "cpu  10 1 20 300 4 0 2 0 0 0\ncpu0 5 0 10 150 2 0 1 0 0 0\ncpu1 5 1 10 150 2 0 1 0 0 0\nintr 1 2 3\nctxt 999\nbtime 1\nprocesses 5\nprocs_running 3\nprocs_blocked 1\nsoftirq 1 2\n";
    let s = stat::parse(text).unwrap();
    assert_eq!(s.total.user, 10);
    assert_eq!(s.total.system, 20);
    assert_eq!(s.total.total(), 337);
    assert_eq!(s.cpus.len(), 2);
    assert_eq!(s.cpus[1].nice, 1);
    assert_eq!((s.ctxt, s.procs_running, s.procs_blocked), (999, 3, 1));
    assert!(stat::parse("cpu 1 2\n").is_err());
    assert!(stat::parse("ctxt 5\n").is_err(), "no aggregate cpu line");
    let e = stat::parse("cpu 1 2 3 4\nctxt x\n").unwrap_err();
    assert_eq!(e.line, 2);
}

#[test]
fn pressure_parses_some_and_full() {
    let p = pressure::parse(
        "some avg10=0.12 avg60=3.40 avg300=0.00 total=456\nfull avg10=0.00 avg60=1.00 avg300=0.00 total=123\n",
    )
    .unwrap();
    assert_eq!(p.some.total_us, 456);
    assert!((p.some.avg60 - 3.4).abs() < 1e-9);
    assert_eq!(p.full.unwrap().total_us, 123);
    // Old kernels' cpu file has no full line.
    assert!(pressure::parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n").unwrap().full.is_none());
    assert_eq!(pressure::parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nhalf x=1\n").unwrap_err().line, 2);
    assert!(pressure::parse("some avg10=0.00 total=1\n").is_err());
}

#[test]
fn pid_stat_handles_parentheses_in_comm() {
    let line = "1234 (evil) name) S 1 1234 1234 0 -1 4194560 111 0 2 0 15 7 0 0 20 0 1 0 5555 1000 50";
    let s = pid::parse_stat(line).unwrap();
    assert_eq!((s.minflt, s.majflt, s.utime, s.stime, s.starttime), (111, 2, 15, 7, 5555));
    assert!(pid::parse_stat("1234 (short) S 1 2").is_err());
    assert!(pid::parse_stat("1234 no-parens S").is_err());
}

#[test]
fn pid_status_reads_memory_fields() {
    let text = "Name:\tcat\nUmask:\t0022\nVmHWM:\t    1528 kB\nVmRSS:\t    1528 kB\nRssAnon:\t      88 kB\nRssFile:\t    1440 kB\nRssShmem:\t       0 kB\nVmSwap:\t       4 kB\nThreads:\t1\n";
    let s = pid::parse_status(text).unwrap();
    assert_eq!(s.vm_rss, Some(1528 * 1024));
    assert_eq!(s.rss_anon, Some(88 * 1024));
    assert_eq!(s.vm_swap, Some(4096));
    // A kernel thread has no memory fields.
    let k = pid::parse_status("Name:\tkthreadd\nState:\tS (sleeping)\n").unwrap();
    assert_eq!(k.vm_rss, None);
    assert!(pid::parse_status("Name:\tx\nVmRSS:\t12 MB\n").is_err());
}

#[test]
fn swaps_parse_and_unescape() {
    let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/zram1                              partition\t65532\t\t0\t\t100\n/swap\\040file                           file\t\t1048572\t\t512\t\t-2\n";
    let v = swaps::parse(text).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].filename, "/dev/zram1");
    assert_eq!(v[0].size_bytes, 65532 * 1024);
    assert_eq!(v[1].filename, "/swap file");
    assert_eq!(v[1].priority, -2);
    assert!(swaps::parse("Filename Type Size Used Priority\n/dev/x partition 1 2\n").is_err());
    assert!(swaps::parse("garbage\n").is_err());
    assert!(swaps::parse("Filename\tType\tSize\tUsed\tPriority\n").unwrap().is_empty());
}

#[test]
fn zram_files() {
    let mm =
        zram::parse_mm_stat("  4096000   123456   200000        0   200000      900        0       10        12\n")
            .unwrap();
    assert_eq!(mm.orig_data_size, 4096000);
    assert_eq!(mm.same_pages, 900);
    assert_eq!(mm.huge_pages, Some(10));
    // Older kernels print 7 or 8 fields.
    assert_eq!(zram::parse_mm_stat("1 2 3 0 4 5 6").unwrap().huge_pages, None);
    assert!(zram::parse_mm_stat("1 2 3").is_err());
    let io = zram::parse_io_stat("       0        0        0        7\n").unwrap();
    assert_eq!(io.notify_free, 7);
    let ca = zram::parse_comp_algorithm("lzo [lzo-rle] lz4 zstd\n").unwrap();
    assert_eq!(ca.selected.as_deref(), Some("lzo-rle"));
    assert_eq!(ca.available, ["lzo", "lzo-rle", "lz4", "zstd"]);
    assert!(zram::parse_comp_algorithm("[lzo\n").is_err());
}

#[test]
fn cgroup_limits_normalize_unlimited() {
    assert_eq!(cgroup::parse_v2_limit("max\n").unwrap(), cgroup::UNLIMITED);
    assert_eq!(cgroup::parse_v2_limit("33554432\n").unwrap(), 33554432);
    assert_eq!(cgroup::parse_v1_limit("9223372036854771712\n").unwrap(), cgroup::UNLIMITED);
    assert_eq!(cgroup::parse_v1_limit("67108864\n").unwrap(), 67108864);
    assert!(cgroup::parse_v2_limit("lots\n").is_err());
    assert!(cgroup::parse_counter("").is_err());
    assert!(cgroup::parse_counter("18446744073709551616").is_err(), "u64 overflow");
}

#[test]
fn mountinfo_finds_each_layout() {
    let hybrid = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
    let m = mountinfo::CgroupMounts::from_mounts(&mountinfo::parse(hybrid).unwrap());
    assert_eq!(m.layout(), mountinfo::Layout::Hybrid);
    assert_eq!(m.v1_memory.as_deref(), Some("/sys/fs/cgroup/memory"));
    let v2 = "30 22 0:26 / /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
    let m = mountinfo::CgroupMounts::from_mounts(&mountinfo::parse(v2).unwrap());
    assert_eq!(m.layout(), mountinfo::Layout::V2);
    assert_eq!(m.unified.as_deref(), Some("/sys/fs/cgroup"));
    let v1 = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
    let m = mountinfo::CgroupMounts::from_mounts(&mountinfo::parse(v1).unwrap());
    assert_eq!(m.layout(), mountinfo::Layout::V1);
    let m = mountinfo::CgroupMounts::from_mounts(&mountinfo::parse("28 1 8:1 / / rw - ext4 /dev/sda1 rw\n").unwrap());
    assert_eq!(m.layout(), mountinfo::Layout::None);
    assert_eq!(mountinfo::parse("28 1 8:1 / / rw ext4\n").unwrap_err().line, 1);
}

#[test]
fn key_tables_are_shared_while_the_layout_holds_and_rebuilt_when_it_changes() {
    let a = vmstat::parse("pswpin 1\npswpout 2\n").unwrap();
    let b = vmstat::parse_with("pswpin 5\npswpout 9\n", Some(a.0.keys())).unwrap();
    assert!(std::sync::Arc::ptr_eq(a.0.keys(), b.0.keys()), "same layout shares the key table");
    assert_eq!((b.get("pswpin"), b.get("pswpout")), (Some(5), Some(9)));
    // A new key (a module loaded, say) makes a new table, and nothing is lost.
    let c = vmstat::parse_with("pswpin 6\nzswpout 3\npswpout 10\n", Some(a.0.keys())).unwrap();
    assert!(!std::sync::Arc::ptr_eq(a.0.keys(), c.0.keys()));
    assert_eq!((c.get("zswpout"), c.get("pswpout")), (Some(3), Some(10)));
    // A key that disappeared is gone, not stale.
    let d = vmstat::parse_with("pswpin 7\n", Some(a.0.keys())).unwrap();
    assert_eq!(d.get("pswpout"), None);
    // Malformed text is still an error with the line when a table is reused.
    assert_eq!(vmstat::parse_with("pswpin 7\npswpout x\n", Some(a.0.keys())).unwrap_err().line, 2);
    let m = meminfo::parse("MemTotal: 2 kB\n").unwrap();
    let m2 = meminfo::parse_with("MemTotal: 3 kB\n", Some(m.0.keys())).unwrap();
    assert_eq!(m2.total(), Some(3072));
    // JSON is an ordinary object.
    assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"pswpin":5,"pswpout":9}"#);
}
