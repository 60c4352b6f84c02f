//! `pagelab heap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::heap::work::HeapConfig;
use crate::kit::cli::RunArgs;
use crate::kit::lab_args::{Dur, LabArgs, Size};
use crate::kit::plan::{MIB, Machine, Scale};
use crate::kit::run::RunObserver;
use crate::kit::run::{ExperimentRun, conclude};
use crate::kit::units;
use clap::Args;
use report::lab::Step;
use serde::Serialize;
use std::time::Duration;

/// The speed sweep's thread counts when --threads is not given.
const SWEEP_THREADS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

pub fn run(a: &HeapArgs) -> crate::Result<()> {
    let speed = !a.over_time || a.speed;
    refuse_misused(a, speed)?;
    let cfg = HeapConfig {
        threads: a.threads.clone().unwrap_or_else(|| SWEEP_THREADS.to_vec()),
        allocators: a.allocators.clone(),
        heap_mode: a.heap_mode,
        workload: a.workload,
        ops: a.ops,
        repeat: a.repeat.unwrap_or(10),
        seed: a.seed,
        baseline: a.baseline.clone().unwrap_or_else(|| {
            let names: Vec<String> = a.allocators.iter().map(|x| x.name()).collect();
            if names.iter().any(|n| n == "glibc") { "glibc".into() } else { names.first().cloned().unwrap_or_default() }
        }),
        growth_from: a.growth_from,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
    };
    // heap's one reader of the host's files: validation reads through it.
    let mut p = probe::Probe::default();
    let ot = a.over_time.then(|| over_time_config(a, &cfg, &mut p)).transpose()?;
    if speed {
        crate::heap::work::validate(&cfg, &mut p)?;
    }
    if let Some(ot) = &ot {
        crate::heap::work::overtime::validate(ot, &mut p)?;
    }
    // The parent's own calibration: the timer as this machine gives it.
    let timer = crate::heap::work::timer::calibrate(&mut p, 60, 100_000);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let names: Vec<String> = cfg.allocators.iter().map(|a| a.name()).collect();
    let config = crate::heap::results::Config {
        threads: if speed { cfg.threads.clone() } else { vec![] },
        allocators: names,
        heap_mode: cfg.heap_mode,
        workload: cfg.workload,
        ops_per_thread: cfg.ops,
        repeat: cfg.repeat,
        seed: cfg.seed,
        baseline: cfg.baseline.clone(),
        growth_from: cfg.growth_from,
        cores: cores as u64,
        timer: serde_json::to_value(timer)?,
        timer_overhead_ns: timer.overhead_ns,
        over_time: ot.as_ref().map(|o| o.record()),
        speed,
    };
    let run = ExperimentRun::start("heap", &a.run, &config, &mut p)?;
    if speed {
        run.note(&format!(
            "timer: {} at {:.3} ns/tick, overhead {:.1} ns per call (subtracted){}; {cores} cores",
            timer.source,
            timer.ns_per_tick,
            timer.overhead_ns,
            if timer.invariant { "" } else { "; the CPU does not advertise an invariant TSC" }
        ));
    }
    if let Some(n) = cfg.growth_from {
        run.note(&format!(
            "heap.growth is judged from {n} threads to {} (--growth-from), on {cores} CPUs{}",
            2 * n,
            if 2 * n as usize <= cores { ": within the cores, its control" } else { "" }
        ));
    }
    if let Some(ot) = &ot {
        note_over_time(&run, ot);
    }
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let sweep =
            if speed { crate::heap::work::run(&cfg, &mut obs, record::stop::requested).map(|_| ()) } else { Ok(()) };
        let r = sweep
            .and_then(|_| match &ot {
                Some(ot) => crate::heap::work::overtime::run(ot, &mut obs, record::stop::requested).map(|_| ()),
                None => Ok(()),
            })
            .map_err(crate::Error::from);
        (r, obs.into_entries())
    };
    let baseline = cfg.baseline.clone();
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::heap::report::Heap,
        |all| Output {
            experiment: "heap",
            cores,
            baseline: baseline.clone(),
            results: all.iter().filter_map(|e| e.result.clone()).collect(),
            unsupported: all.iter().filter_map(|e| e.unsupported.clone()).collect(),
            over_time: all.iter().filter_map(|e| e.over_time.clone()).collect(),
            timer_overhead_ns: speed.then_some(timer.overhead_ns),
            timer: speed.then_some(timer),
        },
        |all| {
            let mut s = String::new();
            if speed {
                s += &format!(
                    "timer overhead {:.1} ns per call (subtracted); {cores} cores\n{}\n{}\npublished figures beside ours:\n{}",
                    timer.overhead_ns,
                    crate::heap::report::text_table(all),
                    crate::heap::report::relative_table(all, &baseline),
                    crate::heap::report::reference_markdown(all)
                );
            }
            if ot.is_some() {
                s += &crate::heap::report::over_time_table(all);
            }
            s
        },
    )
}

/// The flags that set the speed sweep, refused without it, and a
/// `--growth-from` that is neither the study's step nor its control's.
fn refuse_misused(a: &HeapArgs, speed: bool) -> crate::Result<()> {
    if a.over_time && !a.speed && a.threads.is_some() {
        return Err(sandbox::SandboxError::Invalid(
            "--threads sets the speed sweep's threads: with --over-time use --over-time-threads (or add --speed)"
                .into(),
        )
        .into());
    }
    if a.growth_from.is_some() && !speed {
        return Err(sandbox::SandboxError::Invalid(
            "--growth-from sets heap.growth's step in the speed sweep: with --over-time add --speed".into(),
        )
        .into());
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    if let Some(n) = a.growth_from
        && n != cpus
        && 2 * n > cpus
    {
        return Err(sandbox::SandboxError::Invalid(format!(
            "--growth-from {n}: expected {cpus} (the CPUs here: the study's step past the cores) or at most {} (a step \
             within the cores, the finding's control); {n} → {} threads would start past the cores",
            cpus / 2,
            2 * n
        ))
        .into());
    }
    Ok(())
}

/// The most RSS samples one over-time worker keeps (24 bytes each: 24 MB).
pub const MAX_OVER_TIME_SAMPLES: u64 = 1_000_000;

use crate::heap::work::alloc::Allocator;
use crate::heap::work::overtime::GLIBC_MMAP_THRESHOLD;

/// The over-time plan from the flags: every allocator as it comes, then the knob arms.
fn over_time_config(
    a: &HeapArgs,
    cfg: &HeapConfig,
    p: &mut probe::Probe,
) -> crate::Result<crate::heap::work::overtime::OverTimeConfig> {
    use crate::heap::work::overtime::{Arm, OverTimeConfig};
    let mut arms: Vec<Arm> = a.allocators.iter().map(|x| Arm { allocator: x.clone(), knob: None }).collect();
    for k in a.knobs.iter().filter_map(|k| k.0.clone()) {
        if !a.allocators.contains(&k.allocator) {
            return Err(sandbox::SandboxError::Invalid(format!(
                "--knobs {}: {} is not in --allocators ({})",
                k.label(),
                k.allocator.name(),
                a.allocators.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
            ))
            .into());
        }
        if a.glibc_mmap_threshold.is_some()
            && k.knob.as_ref().and_then(|x| x.env.as_ref()).is_some_and(|(n, _)| n == GLIBC_MMAP_THRESHOLD)
        {
            return Err(sandbox::SandboxError::Invalid(format!(
                "--knobs {}: --glibc-mmap-threshold already sets {GLIBC_MMAP_THRESHOLD} for every glibc arm",
                k.label()
            ))
            .into());
        }
        if !arms.contains(&k) {
            arms.push(k);
        }
    }
    if a.glibc_mmap_threshold.is_some() && !arms.iter().any(|x| x.allocator == Allocator::Glibc) {
        return Err(sandbox::SandboxError::Invalid(
            "--glibc-mmap-threshold: no glibc arm runs (add glibc to --allocators)".into(),
        )
        .into());
    }
    // The sampler keeps every sample of a worker in memory: bounded, refused in
    // one line rather than an abort on a failed allocation (issue 46 item 11:
    // --idle 300h --sample-every 1ms asked for 32 GiB).
    let window = a.churn.as_secs_f64() + a.idle.as_secs_f64() + 120.0;
    let samples = window / a.sample_every.as_secs_f64().max(1e-3);
    if samples > MAX_OVER_TIME_SAMPLES as f64 {
        return Err(sandbox::SandboxError::Invalid(format!(
            "--sample-every {} ms over --churn {} s and --idle {} s (plus 120 s of the rest) is {samples:.0} samples per \
             worker; at most {MAX_OVER_TIME_SAMPLES}: lengthen --sample-every or shorten --idle",
            a.sample_every.as_millis(),
            a.churn.as_secs_f64(),
            a.idle.as_secs_f64()
        ))
        .into());
    }
    let charge = sandbox::privilege::require_admin("", "").is_ok()
        && p.memory_controller().ok().flatten().is_some();
    Ok(OverTimeConfig {
        threads: a.over_time_threads.clone(),
        arms,
        patterns: a.patterns.clone(),
        live_bytes: a.live,
        churn: a.churn,
        idle: a.idle,
        // At the resolution the worker applies (0.1 %), so that what is
        // recorded is what ran.
        shrink_frees: (a.shrink_frees * 1000.0).round() / 1000.0,
        glibc_mmap_threshold: a.glibc_mmap_threshold,
        repeat: a.repeat.unwrap_or(3),
        sample: a.sample_every,
        seed: cfg.seed,
        exe: cfg.exe.clone(),
        host_floor: cfg.host_floor,
        charge,
        pressure: a.pressure,
    })
}

/// What the run's notes say of the over-time plan, and of the environment the
/// workers inherit.
fn note_over_time(run: &ExperimentRun, ot: &crate::heap::work::overtime::OverTimeConfig) {
    run.note(&format!(
        "over time: {} workers ({} arms), about {:.0} s; RSS every {} ms{}",
        ot.runs().len(),
        ot.arms.len(),
        ot.expect_s(),
        ot.sample.as_millis(),
        if ot.charge { ", and each worker's cgroup charge" } else { " (not root: no cgroup charge)" }
    ));
    if let Some(t) = ot.glibc_mmap_threshold {
        run.note(&format!(
            "every glibc arm ran with {GLIBC_MMAP_THRESHOLD}={t} (--glibc-mmap-threshold): \"glibc\" is not glibc's \
             defaults in this run"
        ));
    }
    let inherited: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| {
            k.starts_with("MALLOC_") || k.starts_with("MIMALLOC_") || k == "_RJEM_MALLOC_CONF" || k == "GLIBC_TUNABLES"
        })
        .collect();
    if !inherited.is_empty() {
        run.note(&format!(
            "the environment sets {}: every arm inherits it, so the default arms are not the allocators' defaults",
            inherited.join(", ")
        ));
    }
}

/// The lab's `heap` step for this machine.
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    let full = scale == Scale::Full;
    // heap: thread counts up to 128 (full) or 2 × cores (quick). heap.growth
    // takes the study's Linux step (Table 2: 4 → 8 threads on 4 cores), the
    // cores to twice as many, so every scale runs both; concurrent_linux
    // compares at the most threads up to the cores (each on a CPU of its own).
    let c = m.cpus;
    let mut threads: Vec<u32> = match scale {
        Scale::Full => vec![1, 2, 4, 8, 16, 32, 64, 128, c.min(64), (2 * c).min(128)],
        Scale::Quick => vec![1, c.min(64), (2 * c).min(128)],
        Scale::Smoke => vec![1, c.min(4), (2 * c).min(8)],
    };
    threads.sort_unstable();
    threads.dedup();
    let (ops, hrep) = match scale {
        Scale::Full => (2_000_000u64, 3u32),
        // Quick: four repeats, an even count (ABBA), and heap.growth, a
        // small effect near its edge, needs them.
        Scale::Quick => (1_000_000, 4),
        Scale::Smoke => (20_000, 2),
    };
    let thread_ops: f64 = threads.iter().map(|&t| t as f64 * (1.0 + t as f64 / c as f64 * 0.1)).sum();
    // Each repeat runs PROCS processes, each with its own growth phase (about
    // 300 000 allocations per thread) before its share of the warm calls.
    let procs = crate::heap::work::procs_for(ops) as f64;
    let calls = ops as f64 + procs * 300_000.0;
    let speed_expect =
        1.0 + 3.0 * hrep as f64 * (threads.len() as f64 * 0.08 * procs + calls * thread_ops * 40e-9 / c as f64);
    // Memory over time: the quick lab's short version at the core count (the
    // allocators at their defaults and glibc with malloc_trim, which the
    // findings compare); the full lab's at 1 and 4 threads, two patterns, and
    // a documented setting of each allocator.
    let args = HeapLab {
        sweep: Some(SpeedSweep {
            threads: Some(threads),
            ops,
            heap_mode: crate::heap::work::alloc::HeapMode::Default,
            growth_from: None,
        }),
        over_time: Some(over_time_plan(c, scale)),
    };
    let workers = if full { 7.0 * 3.0 * hrep as f64 } else { 4.0 * hrep as f64 };
    let (live, churn, idle) = match scale {
        Scale::Full => (256.0, 5.0, 10.0),
        Scale::Quick => (32.0, 0.3, 1.0),
        Scale::Smoke => (8.0, 0.1, 0.2),
    };
    // Measured here: a worker takes its churn and idle plus about 0.15 s and
    // 1 ms per MiB of live size (start, grow, shrink).
    let ot_expect = workers * (churn + idle + 0.15 + live / 1000.0);
    args.step(Some(hrep), speed_expect + ot_expect)
}

/// The lab's memory over time.
fn over_time_plan(cores: u32, scale: Scale) -> OverTimeLab {
    use crate::heap::work::overtime::{Arm, Pattern};
    let knob = |k: &str| KnobArg(Some(Arm::parse_knob(k).expect("a knob of the lab's plan")));
    let ms = Duration::from_millis;
    let mut ot = OverTimeLab {
        over_time_threads: vec![1, 4],
        live: Size(256 * MIB),
        churn: Dur(ms(5000)),
        idle: Dur(ms(10_000)),
        patterns: vec![Pattern::Mixed],
        knobs: vec![knob("glibc:malloc_trim")],
        shrink_frees: 0.9,
        glibc_mmap_threshold: None,
    };
    match scale {
        Scale::Full => {
            ot.patterns = vec![Pattern::Mixed, Pattern::CrossThread];
            ot.knobs = ["glibc:malloc_trim", "glibc:MALLOC_ARENA_MAX=1", "jemalloc:background_thread:true", "mimalloc:MIMALLOC_PURGE_DELAY=0"]
                .map(knob)
                .to_vec();
        }
        Scale::Quick => {
            (ot.over_time_threads, ot.live, ot.churn, ot.idle) = (vec![cores], Size(32 * MIB), Dur(ms(300)), Dur(ms(1000)));
        }
        Scale::Smoke => {
            (ot.over_time_threads, ot.live, ot.churn, ot.idle) = (vec![cores], Size(8 * MIB), Dur(ms(100)), Dur(ms(200)));
        }
    }
    ot
}

/// The lab's heap step, typed: the speed sweep, memory over time, or both
/// (`--over-time --speed`), with the flags the lab sets (and its controls
/// change), rendered and read back through [`HeapArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HeapLab {
    /// The speed sweep; None: memory over time alone.
    pub sweep: Option<SpeedSweep>,
    /// Memory over time; None: the speed sweep alone.
    pub over_time: Option<OverTimeLab>,
}

/// The speed sweep's flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeedSweep {
    pub threads: Option<Vec<u32>>,
    pub ops: u64,
    pub heap_mode: crate::heap::work::alloc::HeapMode,
    pub growth_from: Option<u32>,
}

/// Memory over time's flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverTimeLab {
    pub over_time_threads: Vec<u32>,
    pub live: Size,
    pub churn: Dur,
    pub idle: Dur,
    pub patterns: Vec<crate::heap::work::overtime::Pattern>,
    pub knobs: Vec<KnobArg>,
    pub shrink_frees: f64,
    pub glibc_mmap_threshold: Option<Size>,
}

impl Serialize for HeapLab {
    /// `--over-time` where memory over time runs, `--speed` where the
    /// sweep runs beside it, then each part's flags.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            over_time: bool,
            speed: bool,
            #[serde(flatten)]
            sweep: Option<&'a SpeedSweep>,
            #[serde(flatten)]
            ot: Option<&'a OverTimeLab>,
        }
        let (sweep, ot) = (self.sweep.as_ref(), self.over_time.as_ref());
        Wire { over_time: ot.is_some(), speed: ot.is_some() && sweep.is_some(), sweep, ot }.serialize(s)
    }
}

impl LabArgs for HeapLab {
    type Cli = HeapArgs;
    const EXPERIMENT: &'static str = "heap";
    fn from_cli(a: HeapArgs) -> HeapLab {
        HeapLab {
            sweep: (!a.over_time || a.speed).then(|| SpeedSweep {
                threads: a.threads.clone(),
                ops: a.ops,
                heap_mode: a.heap_mode,
                growth_from: a.growth_from,
            }),
            over_time: a.over_time.then(|| OverTimeLab {
                over_time_threads: a.over_time_threads,
                live: Size(a.live),
                churn: Dur(a.churn),
                idle: Dur(a.idle),
                patterns: a.patterns,
                knobs: a.knobs,
                shrink_frees: a.shrink_frees,
                glibc_mmap_threshold: a.glibc_mmap_threshold.map(Size),
            }),
        }
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

fn parse_threads(s: &str) -> Result<u32, String> {
    let n: u32 = s.trim().parse().map_err(|_| format!("'{s}' is not a thread count: expected e.g. 1,2,4,8"))?;
    if n == 0 || n > crate::heap::work::MAX_THREADS {
        return Err(format!("{n} threads: expected 1 to {}", crate::heap::work::MAX_THREADS));
    }
    Ok(n)
}

fn parse_allocator(s: &str) -> Result<crate::heap::work::alloc::Allocator, String> {
    use crate::heap::work::alloc::{Allocator, check_preload};
    let a = Allocator::parse(s.trim())?;
    // Every mode, before any worker (the over-time mode skipped the speed
    // mode's check and loaded what it was given).
    if let Allocator::Preload(p) = &a {
        check_preload(p)?;
    }
    Ok(a)
}

/// glibc's mmap threshold: at most HEAP_MAX_SIZE / 2, 32 MiB on 64-bit
/// (a larger value is ignored by glibc, which would make the flag a no-op).
fn parse_mmap_threshold(s: &str) -> Result<u64, String> {
    let v = units::parse_size(s)?;
    if v > 32 << 20 {
        return Err(format!("'{s}': glibc takes an mmap threshold of at most 32MiB"));
    }
    Ok(v)
}

fn parse_pattern(s: &str) -> Result<crate::heap::work::overtime::Pattern, String> {
    crate::heap::work::overtime::Pattern::parse(s)
}

/// One `--knobs` entry: an arm, or `none`.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobArg(pub Option<crate::heap::work::overtime::Arm>);

impl Serialize for KnobArg {
    /// As `--knobs` takes it: `glibc:malloc_trim`, or `none`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = match &self.0 {
            None => "none".to_string(),
            Some(a) => match &a.knob {
                Some(k) => format!("{}:{}", a.allocator.name(), k.text),
                None => a.allocator.name(),
            },
        };
        s.serialize_str(&text)
    }
}

fn parse_knob(s: &str) -> Result<KnobArg, String> {
    if s.trim() == "none" {
        return Ok(KnobArg(None));
    }
    crate::heap::work::overtime::Arm::parse_knob(s).map(|a| KnobArg(Some(a)))
}

#[derive(Debug, Args)]
pub struct HeapArgs {
    /// Comma-separated thread counts of the speed sweep (default
    /// 1,2,4,8,16,32,64,128). Counts above the core count still run:
    /// oversubscription is part of the question.
    #[arg(long, value_delimiter = ',', value_parser = parse_threads, allow_hyphen_values = true)]
    pub threads: Option<Vec<u32>>,
    /// Comma-separated: glibc, mimalloc, jemalloc (linked in), preload:PATH.so (any
    /// allocator library, through LD_PRELOAD in the worker).
    #[arg(long, value_delimiter = ',', default_value = "glibc,mimalloc,jemalloc", value_parser = parse_allocator, allow_hyphen_values = true)]
    pub allocators: Vec<crate::heap::work::alloc::Allocator>,
    /// default; shared (one heap for all threads: glibc M_ARENA_MAX=1, one jemalloc
    /// arena); per-thread (a mimalloc heap or jemalloc arena per thread);
    /// glibc-shared (glibc shared, the others their own way); glibc-cached (glibc
    /// with a thread cache deep enough for the workload's batches, the others their
    /// own way).
    #[arg(long, value_enum, default_value_t = crate::heap::work::alloc::HeapMode::Default)]
    pub heap_mode: crate::heap::work::alloc::HeapMode,
    /// The allocation pattern.
    #[arg(long, value_enum, default_value_t = crate::heap::work::alloc::Workload::Containers)]
    pub workload: crate::heap::work::alloc::Workload,
    /// Allocations per thread in the warm phase, after the heap has grown to its
    /// steady live set (each is freed too; timed in batches of 1024 calls).
    #[arg(long, default_value_t = 2_000_000, value_parser = units::uint64::<1, 1_000_000_000>, allow_hyphen_values = true)]
    pub ops: u64,
    /// Runs per configuration, each in a fresh worker; figures are their median,
    /// with the CV across them (default 10 for the speed sweep, 3 over time).
    #[arg(long, value_parser = units::uint32::<1, 1000>, allow_hyphen_values = true)]
    pub repeat: Option<u32>,
    /// Seed of the workload script (every thread runs the same script).
    #[arg(long, default_value_t = 1, value_parser = units::uint64::<0, { u64::MAX }>, allow_hyphen_values = true)]
    pub seed: u64,
    /// The allocator the relative table compares against (default: glibc if it
    /// runs, else the first of --allocators).
    #[arg(long, allow_hyphen_values = true)]
    pub baseline: Option<String>,
    /// heap.growth's step: from this many threads to twice as many (default:
    /// as many as CPUs, the study's step from 4 to 8 threads on 4 cores).
    /// Both counts must be in --threads. At half the CPUs or fewer the step
    /// stays within the cores: heap.growth's negative control.
    #[arg(long, value_parser = parse_threads, allow_hyphen_values = true)]
    pub growth_from: Option<u32>,
    /// Memory over time instead of speed: each arm grows to --live, churns,
    /// frees 90 % (a scattered 10 % survives) and idles, while its RSS is
    /// sampled; peak, steady ÷ live, after shrink, after idle and the
    /// half-life of what idle gives back (docs/heap.md).
    #[arg(long)]
    pub over_time: bool,
    /// With --over-time, run the speed sweep too (the lab does).
    #[arg(long, requires = "over_time")]
    pub speed: bool,
    /// Thread counts of --over-time, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4", value_parser = parse_threads, allow_hyphen_values = true)]
    pub over_time_threads: Vec<u32>,
    /// Over time: the allocation patterns, comma-separated: small, mixed
    /// (across glibc's mmap threshold, up to 2 MiB), cross-thread (freed by
    /// another thread), larson (tables passed between threads).
    #[arg(long, value_delimiter = ',', default_value = "mixed", value_parser = parse_pattern, allow_hyphen_values = true)]
    pub patterns: Vec<crate::heap::work::overtime::Pattern>,
    /// Over time: extra arms, each an allocator with one documented setting
    /// changed, comma-separated, or none: glibc:malloc_trim (called after
    /// shrink), glibc:MALLOC_ARENA_MAX=N, glibc:MALLOC_TRIM_THRESHOLD_=N,
    /// mimalloc:MIMALLOC_PURGE_DELAY=N, mimalloc:mi_collect,
    /// jemalloc:dirty_decay_ms:N, jemalloc:background_thread:true, ...
    #[arg(long, value_delimiter = ',', default_value = "glibc:malloc_trim", value_parser = parse_knob, allow_hyphen_values = true)]
    pub knobs: Vec<KnobArg>,
    /// Over time: the share of the objects shrink frees, 0% to 100% (the rest,
    /// scattered, survives). 0% frees nothing (malloc_trim then has only
    /// churn's leftovers to give back: heap.malloc_trim's control); 100%
    /// leaves no survivor to pin a page (heap.glibc_keeps' control).
    #[arg(long, default_value = "90%", value_parser = crate::kit::cli::parse_share, allow_hyphen_values = true, requires = "over_time")]
    pub shrink_frees: f64,
    /// Over time: every glibc arm (plain and with knobs) runs with this
    /// mmap threshold, fixed (MALLOC_MMAP_THRESHOLD_: no dynamic raise as
    /// large blocks are freed), 0 to 32MiB. Blocks at or above it are mmap'd
    /// on their own and go back on free (heap.glibc_keeps' control).
    #[arg(long, value_parser = parse_mmap_threshold, allow_hyphen_values = true, requires = "over_time")]
    pub glibc_mmap_threshold: Option<u64>,
    /// Over time: the live size all threads hold together in grow and churn.
    #[arg(long, default_value = "256MiB", value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub live: u64,
    /// Over time: how long churn lasts.
    #[arg(long, default_value = "5s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub churn: Duration,
    /// Over time: how long idle lasts (no allocator calls at all).
    #[arg(long, default_value = "10s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub idle: Duration,
    /// Over time, as root: after idle, squeeze each worker's memory cgroup to
    /// what it holds live (zram behind it), then regrow to --live: how much of
    /// what the allocator kept goes to the store, and what getting it back costs.
    #[arg(long, requires = "over_time")]
    pub pressure: bool,
    /// Over time: how often each worker reads its RSS.
    #[arg(long, default_value = "50ms", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub sample_every: Duration,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `heap --json`: the results by kind, with what they were measured against.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Output {
    experiment: &'static str,
    cores: usize,
    baseline: String,
    results: Vec<crate::heap::results::HeapResult>,
    unsupported: Vec<crate::heap::results::Unsupported>,
    over_time: Vec<crate::heap::results::OverTimeResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timer_overhead_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timer: Option<crate::heap::work::timer::Calibration>,
}
