//! `pagelab bench probe`: figures for pagelab's own targets, printed, not asserted
//! (this machine is noisy; timed tests would be flaky).
//!
//! - the CPU time of one full Sample (system, this process, its memory cgroup, one
//!   zram device), median over many, beside the cost of reading /proc/meminfo alone
//!   measured in the same run;
//! - the sampler's lateness at a given interval.

use crate::cli::{BenchArgs, BenchWhat};
use probe::{Probe, Targets};
use record::sampler::{Sampler, SamplerConfig, Verdict, percentile};
use serde_json::json;

fn stats(mut v: Vec<u64>) -> serde_json::Value {
    json!({
        "p50_us": percentile(&mut v, 0.5) / 1e3,
        "p90_us": percentile(&mut v, 0.9) / 1e3,
        "p99_us": percentile(&mut v, 0.99) / 1e3,
        "n": v.len(),
    })
}

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    match a.what {
        BenchWhat::Probe => probe_bench(a),
        BenchWhat::Timer => timer_bench(a),
        BenchWhat::Aa => aa_bench(a),
        BenchWhat::Fill => fill_bench(a),
        BenchWhat::Controls => crate::controls::run(a),
    }
}

/// eat's random fill and its hash against memset, each pass on the same 256
/// MiB (resident first), side by side `--repeat` times: medians of GB/s, and
/// each one's ratio to memset within a pass (the ratio holds where absolute
/// speed drifts).
fn fill_bench(a: &BenchArgs) -> anyhow::Result<()> {
    const SIZE: usize = 256 << 20;
    let mut b = vec![1u8; SIZE];
    let gbps = |s: f64| SIZE as f64 / s / 1e9;
    let timed = |f: &mut dyn FnMut()| {
        let t = std::time::Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let (mut fill, mut memset, mut hash, mut fill_r, mut hash_r) = (vec![], vec![], vec![], vec![], vec![]);
    let mut sink = 0u64;
    for _ in 0..a.repeat {
        let f = timed(&mut || workloads::fill::fill(&mut b, workloads::fill::Pattern::Random, 20, 1));
        let m = timed(&mut || b.fill(0x5a));
        let h = timed(&mut || sink ^= workloads::fill::hash(&b));
        fill.push(gbps(f));
        memset.push(gbps(m));
        hash.push(gbps(h));
        fill_r.push(m / f);
        hash_r.push(m / h);
    }
    std::hint::black_box(sink);
    let med = |v: &[f64]| record::stats::median(v).unwrap_or(f64::NAN);
    let out = json!({
        "bytes": SIZE,
        "n": a.repeat,
        "fill_random_gbps_p50": med(&fill),
        "memset_gbps_p50": med(&memset),
        "hash_gbps_p50": med(&hash),
        "fill_vs_memset_p50": med(&fill_r),
        "hash_vs_memset_p50": med(&hash_r),
    });
    if a.json {
        return crate::print_json(&out);
    }
    say::outln!(
        "fill (random) {:.2} GB/s, memset {:.2} GB/s, hash {:.2} GB/s (medians of {} passes of 256 MiB)",
        med(&fill),
        med(&memset),
        med(&hash),
        a.repeat
    );
    say::outln!(
        "fill ÷ memset {:.2}, hash ÷ memset {:.2} (medians of the per-pass ratios)",
        med(&fill_r),
        med(&hash_r)
    );
    Ok(())
}

/// Collects a mapping run's results; prints nothing.
struct Quiet(Vec<f64>);
impl workloads::observe::Observer for Quiet {
    type Entry = experiments::mapping::results::Entry;
    fn event(&mut self, _: &str, _: &str, _: u64, _: serde_json::Value) {}
    fn targets(&mut self, _: Vec<i32>, _: Option<probe::CgroupTarget>, _: Vec<u32>) {}
    fn result(&mut self, r: &Self::Entry) -> Result<(), workloads::observe::ExperimentError> {
        if let Some(m) = &r.result {
            self.0.push(m.total_ms_p50);
        }
        Ok(())
    }
    fn note(&mut self, _: &str) {}
}

/// A real A/A claim on this machine: mapping's `dontneed` cycle (32 MiB, 3
/// iterations after 1 warm-up) as arm A and as arm B, in fresh workers, in
/// ABBA order as the lab runs its arms (A B, then B A: the second of two runs
/// in a row is often a little faster); each repeat's A ÷ B is one value, and `--repeat` of them are
/// judged by the verdict rules against the hardest regions for identical arms
/// (an edge at the truth, 1.0, either way) and against "the same within 10 %".
/// Nothing is asserted: the rates are printed (docs/stability.md quotes them).
fn aa_bench(a: &BenchArgs) -> anyhow::Result<()> {
    use record::stats::claim::{ALPHA, Decision, Region, test};
    let cfg = experiments::mapping::work::MappingConfig {
        size: 32 << 20,
        stride: 64 << 10,
        touch: experiments::mapping::work::Touch::All,
        iterations: 3,
        warmup: 1,
        repeat: 2 * a.repeat,
        methods: vec!["dontneed".into()],
        hugepages: experiments::mapping::work::Hugepages::Never,
        pressure: false,
        memfd_keep: false,
        free_pageout: false,
        exe: std::env::current_exe()?,
        host_floor: None,
    };
    experiments::mapping::work::validate(&cfg, &mut probe::Probe::default())?;
    let regions = [
        ("A ≥ B", Region::at_least(1.0)),
        ("A ≤ B", Region::at_most(1.0)),
        ("A = B within 10 %", Region::within(1.0 / 1.1, 1.1)),
    ];
    let mut differs = [0u32; 3];
    let mut matches = [0u32; 3];
    let mut ratios = Vec::new();
    for t in 0..a.trials {
        if record::stop::requested() {
            anyhow::bail!("interrupted");
        }
        let mut obs = Quiet(Vec::new());
        experiments::mapping::work::run(&cfg, &mut obs, record::stop::requested).map_err(experiments::Error::from)?;
        // Pair k ran A then B when k is even, B then A when it is odd (ABBA).
        let r: Vec<f64> = obs
            .0
            .chunks(2)
            .enumerate()
            .filter(|(_, p)| p.len() == 2 && p[0] > 0.0 && p[1] > 0.0)
            .map(|(k, p)| if k % 2 == 0 { p[0] / p[1] } else { p[1] / p[0] })
            .collect();
        for (i, (_, region)) in regions.iter().enumerate() {
            match test(&r, region).map(|x| x.decide(ALPHA)) {
                Some(Decision::Differs) => differs[i] += 1,
                Some(Decision::Matches) => matches[i] += 1,
                _ => {}
            }
        }
        ratios.push(record::stats::claim::estimate(&r).map_or(f64::NAN, |e| e.estimate));
        if !a.json {
            say::errln!("trial {}/{}: A ÷ B = {:.3}", t + 1, a.trials, ratios.last().unwrap_or(&f64::NAN));
        }
    }
    let rows: Vec<serde_json::Value> = regions
        .iter()
        .enumerate()
        .map(|(i, (name, region))| {
            json!({"claim": name, "region": region.describe(), "trials": a.trials, "differs": differs[i],
                   "matches": matches[i], "differs_rate": differs[i] as f64 / a.trials as f64})
        })
        .collect();
    if a.json {
        return crate::print_json(&json!({"bench": "aa", "repeat": a.repeat, "estimates": ratios, "claims": rows}));
    }
    say::outln!("A/A: mapping dontneed as both arms, {} trials of {} paired repeats each", a.trials, a.repeat);
    for r in &rows {
        say::outln!(
            "  {:<18} ({:>11}): called differs {:>3} of {} ({:.1} %), matches {}",
            r["claim"].as_str().unwrap_or(""),
            r["region"].as_str().unwrap_or(""),
            r["differs"],
            a.trials,
            100.0 * r["differs_rate"].as_f64().unwrap_or(0.0),
            r["matches"]
        );
    }
    Ok(())
}

/// 21 calibrations of the heap timer, each over 100k empty pairs; beside them, the
/// cost of an empty CLOCK_MONOTONIC pair measured the same way in the same run.
fn timer_bench(a: &BenchArgs) -> anyhow::Result<()> {
    use experiments::heap::work::timer;
    let mut p = probe::Probe::default();
    let cals: Vec<timer::Calibration> = (0..21).map(|_| timer::calibrate(&mut p, 30, 100_000)).collect();
    let mut oh: Vec<u64> = cals.iter().map(|c| (c.overhead_ns * 1000.0) as u64).collect();
    let mut ratio: Vec<u64> = cals.iter().map(|c| (c.ns_per_tick * 1e6) as u64).collect();
    let mut mono: Vec<u64> = (0..100_000)
        .map(|_| {
            let a = probe::sample::monotonic_ns();
            probe::sample::monotonic_ns() - a
        })
        .collect();
    let (oh50, oh_min, oh_max) = (percentile(&mut oh, 0.5) / 1e3, oh[0] as f64 / 1e3, oh[oh.len() - 1] as f64 / 1e3);
    let (r50, r_min, r_max) =
        (percentile(&mut ratio, 0.5) / 1e6, ratio[0] as f64 / 1e6, ratio[ratio.len() - 1] as f64 / 1e6);
    let mono50 = percentile(&mut mono, 0.5);
    if a.json {
        crate::print_json(&json!({
            "source": cals[0].source, "invariant": cals[0].invariant, "calibrations": cals.len(),
            "overhead_ns_p50": oh50, "overhead_ns_min": oh_min, "overhead_ns_max": oh_max,
            "ns_per_tick_p50": r50, "ns_per_tick_min": r_min, "ns_per_tick_max": r_max,
            "clock_monotonic_pair_ns_p50": mono50,
        }))?;
    } else {
        say::outln!(
            "heap per-call timer ({}, invariant: {}), {} calibrations:",
            cals[0].source,
            cals[0].invariant,
            cals.len()
        );
        say::outln!(
            "  overhead of an empty pair: median {oh50:.1} ns (min {oh_min:.1}, max {oh_max:.1}); target <= 30 ns"
        );
        say::outln!("  ns per tick: median {r50:.4} (min {r_min:.4}, max {r_max:.4})");
        say::outln!(
            "  reference, an empty CLOCK_MONOTONIC pair: median {mono50:.1} ns (the timer costs {:.2}x)",
            oh50 / mono50.max(1.0)
        );
    }
    Ok(())
}

fn probe_bench(a: &BenchArgs) -> anyhow::Result<()> {
    let mut p = Probe::default();
    let cg = p.memory_cgroup_of(None).ok().flatten();
    let zram = p.zram_devices().into_iter().next();
    let targets = Targets {
        pids: vec![std::process::id() as i32],
        cgroup: cg.clone(),
        zram: zram.into_iter().collect(),
        smaps: false,
    };
    // Warm-up.
    for _ in 0..20 {
        p.sample(&targets)?;
    }
    let n = a.iterations as usize;
    let (mut cpu, mut wall, mut base_cpu) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let timer_overhead = {
        let mut v: Vec<u64> = (0..1000)
            .map(|_| {
                let a = probe::sample::thread_cpu_ns();
                probe::sample::thread_cpu_ns() - a
            })
            .collect();
        percentile(&mut v, 0.5)
    };
    for _ in 0..n {
        let c0 = probe::sample::thread_cpu_ns();
        let w0 = probe::sample::monotonic_ns();
        std::hint::black_box(p.sample(&targets)?);
        wall.push(probe::sample::monotonic_ns() - w0);
        cpu.push(probe::sample::thread_cpu_ns() - c0);
        let c0 = probe::sample::thread_cpu_ns();
        std::hint::black_box(p.meminfo()?);
        base_cpu.push(probe::sample::thread_cpu_ns() - c0);
    }
    let cpu_p50 = percentile(&mut cpu.clone(), 0.5);
    let base_p50 = percentile(&mut base_cpu.clone(), 0.5);
    if !a.json {
        say::outln!(
            "full sample (system + pid {} + cgroup {} + zram {}), {} iterations:",
            std::process::id(),
            cg.as_ref().map(|c| c.name.as_str()).unwrap_or("none"),
            zram.map(|z| format!("zram{z}")).unwrap_or("none".into()),
            n
        );
        say::outln!(
            "  CPU per sample: median {:.1} µs (p90 {:.1}, p99 {:.1}); target <= 100 µs",
            cpu_p50 / 1e3,
            percentile(&mut cpu.clone(), 0.9) / 1e3,
            percentile(&mut cpu.clone(), 0.99) / 1e3
        );
        say::outln!("  wall per sample: median {:.1} µs", percentile(&mut wall.clone(), 0.5) / 1e3);
        say::outln!(
            "  reference, /proc/meminfo alone: median {:.1} µs CPU (full sample = {:.1}x); timer overhead {:.2} µs",
            base_p50 / 1e3,
            cpu_p50 / base_p50.max(1.0),
            timer_overhead / 1e3
        );
        say::outln!("sampler lateness at {:?} for {:?} (mlocked) ...", a.interval, a.duration);
    }
    let sampler =
        Sampler::start(SamplerConfig { interval: a.interval, ..Default::default() }, targets.clone(), |_| {
            Verdict::Continue
        })?;
    record::stop::sleep(a.duration);
    let st = sampler.stop();
    if a.json {
        crate::print_json(&json!({
            "sample_cpu": stats(cpu),
            "sample_wall": stats(wall),
            "meminfo_only_cpu": stats(base_cpu),
            "timer_overhead_us": timer_overhead / 1e3,
            "sampler": st,
        }))?;
    } else {
        say::outln!(
            "  {} samples: lateness p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; missed deadlines {}; target p99 <= 2 ms",
            st.samples,
            st.lateness_p50_ms,
            st.lateness_p99_ms,
            st.lateness_max_ms,
            st.missed_deadlines
        );
        say::outln!("  memory lock: {:?}", st.lock.unwrap_or(record::sampler::LockStatus::NotRequested));
    }
    Ok(())
}
