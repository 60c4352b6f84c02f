use probe::meminfo::Meminfo;
#[path = "../../../tests/common/skip.rs"]
mod skip;
use probe::sample::{PidSample, ZramSample};
use probe::vmstat::Vmstat;
use probe::{Sample, Targets};
use record::derive;
use record::rundir::{Event, RunDir, RunJson, RunRecord, RunStatus, State};

fn map(kv: &[(&str, u64)]) -> probe::counters::Counters {
    probe::counters::Counters::from_pairs(kv.iter().copied())
}

fn sample(t_s: u64, pswpout: u64, pgfault: u64) -> Sample {
    Sample {
        t_ns: t_s * 1_000_000_000,
        vmstat: Some(Vmstat(map(&[
            ("pswpout", pswpout),
            ("pgfault", pgfault),
            ("pgscan_kswapd", t_s),
            ("pgscan_direct", t_s),
        ]))),
        meminfo: Some(Meminfo(map(&[
            ("MemTotal", 1000),
            ("MemFree", 300),
            ("Active(file)", 150),
            ("Inactive(file)", 50),
            ("Dirty", 10),
            ("Writeback", 5),
            ("SwapTotal", 500),
            ("SwapFree", 400),
            ("Zswap", 7),
        ]))),
        ..Default::default()
    }
}

#[test]
fn rates_and_backwards_counters() {
    assert_eq!(derive::delta(5, 7), Some(2));
    assert_eq!(derive::delta(7, 5), None, "a counter going backwards gives None");
    assert_eq!(derive::rate(0, 10, 2.0), Some(5.0));
    assert_eq!(derive::rate(0, 10, 0.0), None);
    let a = sample(1, 100, 1000);
    let b = sample(3, 300, 900); // pgfault went backwards
    let i = derive::interval(&a, &b, a.t_ns);
    assert_eq!(i.dt_s, 2.0);
    assert_eq!(i.t_s, 2.0);
    assert_eq!(i.pswpout_per_s, Some(100.0));
    assert_eq!(i.pgfault_per_s, None);
    assert_eq!(i.pgscan_per_s, Some(2.0), "sum over pgscan_* keys");
    assert_eq!(i.pgmajfault_per_s, None, "missing key is None");
    // A family this kernel does not have is unknown, not 0 pages a second.
    assert_eq!((i.allocstall_per_s, i.refault_per_s), (None, None), "no allocstall* or workingset_refault* key");
}

#[test]
fn categories_are_disjoint_and_stack_to_total() {
    let mut s = sample(1, 0, 0);
    s.pids.push(PidSample {
        pid: 1,
        status: Some(probe::pid::PidStatus {
            rss_anon: Some(100),
            rss_file: Some(20),
            rss_shmem: Some(3),
            vm_swap: Some(40),
            ..Default::default()
        }),
        stat: None,
        smaps_rollup: None,
    });
    s.zram.push(ZramSample {
        id: 1,
        mm_stat: Some(probe::zram::MmStat { mem_used_total: 11, ..Default::default() }),
        ..Default::default()
    });
    let c = derive::categories(&s);
    assert_eq!(c.target_rss(), 123);
    assert_eq!(c.target_swapped, 40);
    assert_eq!(c.compressed_store, 18, "zram + zswap");
    assert_eq!(c.swap_used, 100);
    assert_eq!(c.dirty_writeback, 15);
    assert_eq!(c.page_cache, 200 - 15 - 20);
    let ram: u64 = c.ram_stack().iter().map(|(_, v)| v).sum();
    assert_eq!(ram, c.mem_total);
}

#[test]
fn pid_reuse_is_not_counted_as_a_delta() {
    let mut a = sample(1, 0, 0);
    let mut b = sample(2, 0, 0);
    let st = |minflt, starttime| probe::pid::PidStat { minflt, starttime, ..Default::default() };
    a.pids.push(PidSample { pid: 9, status: None, stat: Some(st(10, 1)), smaps_rollup: None });
    b.pids.push(PidSample { pid: 9, status: None, stat: Some(st(50, 1)), smaps_rollup: None });
    assert_eq!(derive::interval(&a, &b, 0).target_minflt_per_s, Some(40.0));
    b.pids[0].stat = Some(st(50, 2));
    assert_eq!(derive::interval(&a, &b, 0).target_minflt_per_s, None);
}

fn new_run(dir: &std::path::Path) -> RunDir {
    RunDir::create(dir, RunJson::new("test", "0", Default::default(), serde_json::json!({"x": 1}))).unwrap()
}

#[test]
fn run_dir_round_trip_and_torn_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let rd = new_run(&dir);
    let mut w = rd.sample_writer().unwrap();
    w.write(&sample(1, 0, 0)).unwrap();
    w.write(&sample(2, 5, 5)).unwrap();
    rd.event(&Event::now("phase_start", "fill", serde_json::Value::Null)).unwrap();
    rd.event(&Event::now("phase_end", "fill", serde_json::Value::Null)).unwrap();
    // A torn last line, as left by a SIGKILL in the middle of a write.
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("samples.jsonl"))
        .unwrap()
        .write_all(b"{\"t_ns\":12")
        .unwrap();
    // The writer is this (live) process: still running.
    let r = RunRecord::load(&dir).unwrap();
    assert_eq!(r.status().state, State::Running);
    assert_eq!(r.samples.len(), 2);
    assert_eq!(r.skipped_lines, 1);
    assert_eq!(r.run.phases.len(), 1);
    assert!(r.run.phases[0].end_ns.is_some());
    rd.finish(RunStatus::new(State::Complete, None)).unwrap();
    assert_eq!(RunRecord::load(&dir).unwrap().status().state, State::Complete);
    // A second run in the same directory is refused.
    let e = RunDir::create(&dir, RunJson::new("test", "0", Default::default(), serde_json::Value::Null)).unwrap_err();
    assert!(e.to_string().contains("already holds a run"));
}

#[test]
fn running_run_whose_writer_is_gone_reads_as_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let rd = new_run(&dir);
    // Pretend the writer was a process that no longer exists.
    rd.update(|r| {
        r.pid = i32::MAX as u32 - 7;
        r.pid_starttime = Some(1);
    })
    .unwrap();
    let r = RunRecord::load(&dir).unwrap();
    assert_eq!(r.status().state, State::Interrupted);
    assert!(r.status().reason.as_deref().unwrap().contains("ended without finishing"));
}

#[test]
fn sampler_takes_samples_and_records_lateness() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        skip::skip("needs /proc");
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = record::SamplerConfig {
        interval: std::time::Duration::from_millis(10),
        lock_memory: false,
        ..Default::default()
    };
    let s = record::Sampler::start(
        cfg,
        Targets { pids: vec![std::process::id() as i32], ..Default::default() },
        move |s| {
            let _ = tx.send(s.clone());
            record::sampler::Verdict::Continue
        },
    )
    .unwrap();
    let first = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    let second = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    let stats = s.stop();
    assert!(second.t_ns > first.t_ns);
    assert!(first.lateness_ns.is_some());
    assert!(stats.samples >= 2);
    assert_eq!(first.pids[0].pid, std::process::id() as i32);
    assert_eq!(stats.lock, Some(record::sampler::LockStatus::NotRequested));
}

#[test]
fn sampler_abort_verdict_requests_a_stop() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        skip::skip("needs /proc");
        return;
    }
    let cfg = record::SamplerConfig {
        interval: std::time::Duration::from_millis(10),
        lock_memory: false,
        ..Default::default()
    };
    let s =
        record::Sampler::start(cfg, Targets::default(), |_| record::sampler::Verdict::Abort("guard tripped".into()))
            .unwrap();
    let t0 = std::time::Instant::now();
    while !record::stop::requested() && t0.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.stop();
    assert_eq!(record::stop::reason().as_deref(), Some("guard tripped"));
}

#[test]
fn totals_average_what_is_there_and_keep_peaks() {
    use derive::{CpuPct, Interval, Totals, totals};
    let cpu = |user: f64, system: f64, iowait: f64| CpuPct { user, system, iowait, ..Default::default() };
    let iv = [
        Interval {
            cpu: Some(cpu(10.0, 20.0, 10.0)),
            psi_memory_full_pct: Some(1.0),
            pswpout_per_s: Some(5.0),
            sampler_lateness_ms: Some(0.5),
            ..Default::default()
        },
        Interval {
            cpu: Some(cpu(30.0, 40.0, 30.0)),
            psi_memory_full_pct: Some(3.0),
            pswpout_per_s: Some(50.0),
            ..Default::default()
        },
        // No figures at all: it counts as an interval, not as zeros.
        Interval::default(),
    ];
    let t = totals(&iv);
    assert_eq!(t.intervals, 3);
    assert_eq!(t.cpu_user_pct_mean, Some(20.0));
    assert_eq!(t.cpu_system_pct_mean, Some(30.0));
    assert_eq!(t.cpu_user_share(), Some(20.0 / 70.0));
    assert_eq!((t.psi_memory_full_pct_mean, t.psi_memory_full_pct_max), (Some(2.0), Some(3.0)));
    assert_eq!(t.pswpout_per_s_peak, Some(50.0));
    assert_eq!(t.psi_memory_some_pct_mean, None);
    assert_eq!(t.sampler_lateness_ms, vec![0.5]);
    assert_eq!(totals(&[]), Totals::default());
}
