//! `pagelab assess`: glue between the CLI, the assessment, the run directory and
//! the report.

use crate::assess::work::AssessConfig;
use crate::kit::cli::{RunArgs, SwapfileArgs, parse_share};
use crate::kit::lab_args::{Dur, LabArgs, Size};
use crate::kit::plan::{MIB, Machine, Scale};
use workloads::backing::BackingKind;
use crate::kit::run::{Doc, ExperimentRun, RunObserver, conclude};
use crate::kit::units;
use clap::Args;
use report::lab::Step;
use serde::Serialize;
use std::time::Duration;

pub fn run(a: &AssessArgs) -> crate::Result<()> {
    let cfg = AssessConfig {
        pid: a.pid,
        command: a.command.clone(),
        synthetic: a.synthetic,
        hot: a.hot,
        warmup: a.warmup,
        windows: a.windows.clone(),
        repeat: a.repeat,
        trim: a.trim,
        compressor: a.compressor.clone(),
        duration: a.duration,
        probe: a.probe.clone(),
        probe_runs: a.probe_runs,
        max_read: a.max_read,
        exe: std::env::current_exe()?,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
        source: a.source,
    };
    if let Some(cmd) = a.command.first()
        && crate::kit::run::resolve_program(cmd).is_none()
    {
        return Err(crate::kit::usage(format!("cannot run '{cmd}': not found or not executable (looked in PATH)")));
    }
    if a.probe.is_some() && a.trim.is_none() {
        return Err(crate::kit::usage("--probe measures the trim's cost: give --trim with it"));
    }
    // assess's one reader of the host's files: validation and the run read through it.
    let mut p = probe::Probe::default();
    crate::assess::work::validate(&cfg, &mut p).map_err(crate::Error::from)?;
    // The synthetic worker's memory is real memory on this machine: the host
    // guard's floor holds for it as for every experiment's plan.
    if let Some(size) = cfg.synthetic {
        let m = p.meminfo()?.unwrap_or_default();
        sandbox::guard::HostGuard::new(a.run.host_floor, &m)
            .check_plan(size as u128, "--synthetic", &m)
            .map_err(crate::Error::from)?;
    }
    // Every field of the configuration, by name (no `..`): one added to
    // AssessConfig and left out here is a compile error.
    let crate::assess::work::AssessConfig {
        pid,
        command,
        synthetic,
        hot,
        warmup,
        windows,
        repeat,
        trim,
        compressor,
        duration,
        probe,
        probe_runs,
        max_read,
        swapfile_dir,
        source,
        exe: _, // this binary: the run's own, recorded as pagelab's version
    } = &cfg;
    let config = Recorded {
        pid: *pid,
        command,
        synthetic_bytes: *synthetic,
        hot: *hot,
        warmup_s: warmup.as_secs_f64(),
        windows_s: windows.iter().map(|w| w.as_secs_f64()).collect(),
        repeat: *repeat,
        source: *source,
        trim: *trim,
        compressor: compressor.as_deref(),
        duration_s: duration.as_secs_f64(),
        probe: probe.as_deref(),
        probe_runs: *probe_runs,
        max_read_bytes: *max_read,
        swapfile_dir: swapfile_dir.to_string_lossy(),
    };
    let run = ExperimentRun::start("assess", &a.run, &config, &mut p)?;
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let r = crate::assess::work::run(&cfg, &mut obs, &record::stop::requested, &mut p).map_err(crate::Error::from);
        (r, obs.into_entries())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::assess::report::Assess,
        |entries| Doc { experiment: "assess", results: entries.to_vec() },
        |all| {
            format!(
                "{}\npublished compressor ratios beside this program's:\n{}",
                crate::assess::report::text_table(all),
                crate::assess::report::reference_markdown(all)
            )
        },
    )
}

/// The configuration a run records (run.json's `config`): `run` takes
/// `AssessConfig` apart field by field, so a field left out here is a
/// compile error.
#[derive(Serialize)]
struct Recorded<'a> {
    pid: Option<i32>,
    command: &'a [String],
    synthetic_bytes: Option<u64>,
    hot: f64,
    warmup_s: f64,
    windows_s: Vec<f64>,
    repeat: u32,
    source: crate::assess::work::WssSource,
    trim: Option<workloads::backing::BackingKind>,
    compressor: Option<&'a str>,
    duration_s: f64,
    probe: Option<&'a str>,
    probe_runs: u32,
    max_read_bytes: u64,
    /// Where a swap file would be made (`--swapfile-dir`).
    swapfile_dir: std::borrow::Cow<'a, str>,
}

/// The lab's `assess` step: the synthetic worker, whose truth is known (a
/// quarter of it hot); trimmed into a zram made for the run in the full lab.
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    let full = scale == Scale::Full;
    let size = match scale {
        Scale::Full => (256 * MIB).min(m.ram_bytes / 16),
        Scale::Quick => (64 * MIB).min(m.ram_bytes / 32),
        Scale::Smoke => 16 * MIB,
    }
    .max(16 * MIB);
    let s = Duration::from_millis;
    let (warmup, windows, last, rep) = match scale {
        Scale::Full => (s(1000), vec![s(1000), s(10_000), s(60_000)], 60.0, 3u32),
        // Quick: two repeats, an even count; its one finding (zstd against
        // lzo-rle on the same pages) has no spread to speak of.
        Scale::Quick => (s(1000), vec![s(1000), s(3000)], 3.0, 2),
        Scale::Smoke => (s(500), vec![s(500), s(1000)], 1.0, 2),
    };
    let mut args = AssessLab {
        synthetic: Some(Size::whole_mib(size)),
        hot: 0.25,
        warmup: Dur(warmup),
        windows: windows.iter().map(|&w| Dur(w)).collect(),
        trim: None,
        duration: Dur(Duration::from_secs(30)),
    };
    // A repeat is its longest window and a fill: 10.8 s for three repeats
    // of 64 MiB with a 3 s window on the 2-vCPU VM (Intel, 2026-11-26).
    let mut expect = 2.0 + rep as f64 * (last + (size / MIB) as f64 * 0.01);
    if full && (m.root || m.swap_active) {
        args.trim = Some(BackingKind::Auto);
        expect += 32.0;
    }
    args.step(Some(rep), expect)
}

/// The lab's assess step, typed: the flags the lab sets, rendered and read
/// back through [`AssessArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssessLab {
    pub synthetic: Option<Size>,
    pub hot: f64,
    pub warmup: Dur,
    pub windows: Vec<Dur>,
    pub trim: Option<BackingKind>,
    pub duration: Dur,
}

impl LabArgs for AssessLab {
    type Cli = AssessArgs;
    const EXPERIMENT: &'static str = "assess";
    fn from_cli(a: AssessArgs) -> AssessLab {
        AssessLab {
            synthetic: a.synthetic.map(Size),
            hot: a.hot,
            warmup: Dur(a.warmup),
            windows: a.windows.into_iter().map(Dur).collect(),
            trim: a.trim,
            duration: Dur(a.duration),
        }
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("500ms")))]
pub struct AssessArgs {
    /// Assess this running process (its owner or root).
    #[arg(long, allow_hyphen_values = true, conflicts_with = "synthetic")]
    pub pid: Option<i32>,
    /// Assess a pagelab worker of this size that keeps touching --hot of it (a
    /// target whose truth is known).
    #[arg(long, allow_hyphen_values = true, value_parser = units::parse_nonzero_size)]
    pub synthetic: Option<u64>,
    /// The share of --synthetic the worker keeps touching.
    #[arg(long, allow_hyphen_values = true, default_value = "25%", value_parser = parse_share)]
    pub hot: f64,
    /// The windows of the working-set estimate: memory not touched within a
    /// window is cold at that age.
    #[arg(long, allow_hyphen_values = true, default_value = "1s,10s,60s", value_parser = parse_windows)]
    pub windows: std::vec::Vec<Duration>,
    /// Where the working-set estimate comes from: damon (a kdamond of
    /// pagelab's own, per page; needs root and DAMON's list empty), mglru (the
    /// target's memory cgroup aged per window; needs root, MGLRU on, debugfs,
    /// at most 3 windows, and a --pid alone in its cgroup), referenced
    /// (clear_refs and smaps, per mapping), or auto (the first of those that
    /// can be had).
    #[arg(long, allow_hyphen_values = true, default_value = "auto", value_parser = parse_wss_source)]
    pub source: crate::assess::work::WssSource,
    /// How many times to measure the windows and the compressibility (each a
    /// value of the headline figures; the trim follows the last).
    #[arg(long, allow_hyphen_values = true, default_value = "1", value_parser = units::uint32::<1, 100>)]
    pub repeat: u32,
    /// How long a started target (-- CMD, --synthetic) runs before the assessment.
    #[arg(long, allow_hyphen_values = true, default_value = "2s", value_parser = units::parse_duration)]
    pub warmup: Duration,
    /// Also trim the target (MADV_PAGEOUT) and measure the cost: into a zram made
    /// for the run (zram, needs root), the swap already active (existing), or
    /// whichever applies (auto, the default when given alone).
    #[arg(long, value_name = "STORE", num_args = 0..=1, default_missing_value = "auto", value_parser = parse_trim_store)]
    pub trim: Option<workloads::backing::BackingKind>,
    /// zram's compression algorithm for --trim zram (default: the kernel's).
    #[arg(long)]
    pub compressor: Option<String>,
    /// How long to follow the target after the trim.
    #[arg(long, allow_hyphen_values = true, default_value = "30s", value_parser = units::parse_positive_duration)]
    pub duration: Duration,
    /// A command whose latency stands for the program's (e.g. a request against
    /// it), run through sh before and after the trim.
    #[arg(long, value_name = "CMD")]
    pub probe: Option<String>,
    /// How many times the probe runs before, and after, the trim.
    #[arg(long, allow_hyphen_values = true, default_value = "20", value_parser = units::uint32::<1, 10000>)]
    pub probe_runs: u32,
    /// Read and compress at most this much of the target's memory (an even
    /// sample beyond).
    #[arg(long, allow_hyphen_values = true, default_value = "1GiB", value_parser = units::parse_nonzero_size)]
    pub max_read: u64,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
    /// The command to start and assess (after --).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// Durations separated by commas, e.g. `1s,10s,60s`.
fn parse_windows(s: &str) -> Result<Vec<Duration>, String> {
    let v: Result<Vec<Duration>, String> = s.split(',').map(|x| units::parse_positive_duration(x.trim())).collect();
    let v = v.map_err(|e| format!("{e}; expected durations separated by commas, e.g. 1s,10s,60s"))?;
    if v.is_empty() || v.len() > 16 {
        return Err(format!("'{s}': expected 1 to 16 durations separated by commas, e.g. 1s,10s,60s"));
    }
    Ok(v)
}

fn parse_wss_source(s: &str) -> Result<crate::assess::work::WssSource, String> {
    crate::kit::names::parse("source", s)
}

fn parse_trim_store(s: &str) -> Result<workloads::backing::BackingKind, String> {
    use workloads::backing::BackingKind;
    match BackingKind::parse(s) {
        Some(k @ (BackingKind::Auto | BackingKind::Zram | BackingKind::Existing)) => Ok(k),
        _ => Err(format!("'{s}': expected zram, existing or auto")),
    }
}
