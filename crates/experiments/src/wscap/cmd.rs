//! `pagelab wscap`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::kit::cli::{RunArgs, SwapfileArgs, parse_backing};
use crate::kit::lab_args::{Dur, LabArgs, Size};
use crate::kit::plan::{MIB, Machine, Scale, skip, step};
use crate::kit::run::RunObserver;
use crate::kit::run::{Doc, ExperimentRun, conclude};
use crate::kit::units;
use crate::kit::usage;
use crate::wscap::work::WscapConfig;
use clap::Args;
use report::lab::Step;
use serde::Serialize;
use std::time::Duration;
use workloads::backing::BackingKind;

/// Which store the memory arm runs on (`--memory-store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryStore {
    /// A swap file where the run's store keeps the capped pages in RAM
    /// (zram, zswap) and a swap file can live in --swapfile-dir; else none.
    Auto,
    /// No memory arm.
    None,
    /// A swap file: the capped pages can leave RAM.
    Swapfile,
    /// zram: they stay in RAM (the memory finding's control).
    Zram,
}

/// The memory arm's store for this run, and why auto chose none.
fn memory_store(a: &WscapArgs, p: &mut probe::Probe) -> (Option<BackingKind>, Option<String>) {
    match a.memory_store {
        MemoryStore::None => (None, None),
        MemoryStore::Swapfile => (Some(BackingKind::Swapfile), None),
        MemoryStore::Zram => (Some(BackingKind::Zram), None),
        MemoryStore::Auto => {
            let main = workloads::backing::resolve(a.backing, p);
            if !main.compressed() {
                // A swap file (or the user's own swap) is judged on the modes' own runs.
                return (None, None);
            }
            let dir = &a.swapfile.swapfile_dir;
            let room = |p: &mut probe::Probe| workloads::backing::check_room(BackingKind::Swapfile, a.size, dir, p);
            match sandbox::sandbox::check_swap_fs(dir).and_then(|()| room(p)) {
                Ok(()) => (Some(BackingKind::Swapfile), None),
                Err(e) => (
                    None,
                    Some(format!(
                        "no memory arm: {e} (--memory-store auto), so the memory finding is not judged: the run's \
                         store ({}) keeps the capped pages in RAM",
                        main.name()
                    )),
                ),
            }
        }
    }
}

pub fn run(a: &WscapArgs) -> crate::Result<()> {
    // The command's one reader of the machine: its edge.
    let mut p = probe::Probe::default();
    let (memory_store, memory_store_note) = memory_store(a, &mut p);
    let cfg = WscapConfig {
        size: a.size,
        cap: a.cap,
        duration: a.duration,
        modes: a.modes.0.clone(),
        period: a.period,
        write: a.access == crate::wscap::work::Access::Write,
        backing: a.backing,
        compressor: a.compressor.clone(),
        repeat: a.repeat,
        sweep_caps: a.sweep_cap.clone(),
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
        memory_store,
        memory_store_note,
    };
    if a.period < std::time::Duration::from_millis(10) {
        return Err(usage("--period must be at least 10ms"));
    }
    crate::wscap::work::validate(&cfg, &mut p)?;
    // Every field of the configuration, by name (no `..`): one added to
    // WscapConfig and left out here is a compile error, not a gap in run.json.
    let WscapConfig {
        size,
        cap,
        duration,
        modes,
        period,
        write,
        backing,
        compressor,
        repeat,
        sweep_caps,
        swapfile_dir,
        memory_store,
        memory_store_note,
        exe: _,        // this binary: the run's own, recorded as pagelab's version
        host_floor: _, // a safety floor, not part of the experiment
    } = &cfg;
    let config = Recorded {
        size_bytes: *size,
        cap_bytes: *cap,
        duration_s: duration.as_secs_f64(),
        modes,
        period_s: period.as_secs_f64(),
        access: if *write { crate::wscap::work::Access::Write } else { crate::wscap::work::Access::Read },
        backing: *backing,
        compressor: compressor.as_deref(),
        repeat: *repeat,
        sweep_caps,
        memory_store: memory_store.map(BackingKind::name).unwrap_or("none"),
        memory_store_note: memory_store_note.as_deref(),
        swapfile_dir: swapfile_dir.to_string_lossy(),
    };
    let run = ExperimentRun::start("wscap", &a.run, &config, &mut p)?;
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let r = crate::wscap::work::run(&cfg, &mut obs, record::stop::requested).map_err(crate::Error::from);
        (r, obs.into_entries())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::wscap::report::Wscap,
        |entries| Doc { experiment: "wscap", results: entries.to_vec() },
        |results| {
            format!(
                "{}\npublished figures beside ours:\n{}",
                crate::wscap::report::text_table(results),
                crate::wscap::report::reference_markdown(results).split("\n\n").next().unwrap_or("")
            )
        },
    )
}

/// What a mode takes besides its duration (a worker's start, the cap's
/// setup): 0.04 s measured on the 2-vCPU VM (Intel, 2026-11-26, 18 modes in
/// 19.8 s at 1 s each), planned at 0.1 s.
const WSCAP_MODE_OVERHEAD_S: f64 = 0.1;

/// The configuration a run records (run.json's `config`): `run` takes
/// [`WscapConfig`] apart field by field, so a field left out here is a
/// compile error.
#[derive(Serialize)]
struct Recorded<'a> {
    size_bytes: u64,
    cap_bytes: u64,
    duration_s: f64,
    modes: &'a [crate::wscap::work::Mode],
    period_s: f64,
    access: crate::wscap::work::Access,
    backing: workloads::backing::BackingKind,
    compressor: Option<&'a str>,
    repeat: u32,
    sweep_caps: &'a [u64],
    /// The memory arm's store, resolved (none: no memory arm).
    memory_store: &'static str,
    /// Why the memory arm's store is what it is, when `auto` chose.
    memory_store_note: Option<&'a str>,
    /// Where a swap file would be made (`--swapfile-dir`).
    swapfile_dir: std::borrow::Cow<'a, str>,
}

/// The lab's `wscap` step for this machine.
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    let full = scale == Scale::Full;
    // wscap: the study's 64 MiB scan under a 32 MiB cap (smoke: a quarter).
    let (dur, rep) = match scale {
        Scale::Full => (5.0, 3u32),
        Scale::Quick => (1.0, 3),
        Scale::Smoke => (0.3, 2),
    };
    use crate::wscap::work::Mode;
    let (size, cap) = if scale == Scale::Smoke { (16 * MIB, 8 * MIB) } else { (64 * MIB, 32 * MIB) };
    let mut args = WscapLab {
        size: Size(size),
        cap: Size(cap),
        duration: Dur(Duration::from_secs_f64(dur)),
        modes: <Mode as clap::ValueEnum>::value_variants().to_vec(),
        backing: BackingKind::Auto,
        memory_store: MemoryStore::Auto,
        sweep_cap: vec![],
    };
    let mut modes = 6.0;
    let mut w_note = None;
    if scale == Scale::Quick && m.root {
        // Only the modes the findings compare (cap-high is in none of them).
        args.modes = vec![Mode::None, Mode::CapMax, Mode::PeriodicPageout, Mode::PeriodicCold, Mode::PeriodicReclaim];
        modes = 5.0;
    }
    if full {
        args.sweep_cap = [56, 48, 40, 24, 16].map(|m| Size(m * MIB)).to_vec();
        modes += 5.0 / rep as f64;
    }
    let wscap = if m.root {
        // The memory arm (--memory-store auto: a swap file beside zram): two
        // more modes per repeat, at most 1 s each, and the swap file's setup.
        let memory_arm = 2.0 * rep as f64 * (f64::min(dur, 1.0) + WSCAP_MODE_OVERHEAD_S) + 1.0;
        Some(args.step(Some(rep), 1.0 + modes * rep as f64 * (dur + WSCAP_MODE_OVERHEAD_S) + memory_arm))
    } else if m.swap_active {
        args.backing = BackingKind::Existing;
        args.modes = vec![Mode::None, Mode::PeriodicPageout, Mode::PeriodicCold];
        w_note = Some("the cap modes need a memory cgroup, which needs root: only the periodic modes ran".into());
        Some(args.step(Some(rep), 1.0 + 3.0 * rep as f64 * (dur + WSCAP_MODE_OVERHEAD_S)))
    } else {
        None
    };
    match wscap {
        Some(mut w) => {
            w.note = w_note;
            w
        }
        None => skip(
            step("wscap", vec![], 0.0),
            "needs root: a capped working set needs swap to go to, and without root pagelab can neither \
             create zram nor a memory cgroup (and no swap is active)",
        ),
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("250ms")))]
pub struct WscapArgs {
    /// Memory the worker allocates and scans (one byte per page).
    #[arg(long, default_value = "64MiB", value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub size: u64,
    /// The working-set cap for the cap modes.
    #[arg(long, default_value = "32MiB", value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub cap: u64,
    /// Scan window per mode.
    #[arg(long, default_value = "5s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// Comma-separated: none, cap-max, cap-high, periodic-pageout, periodic-cold, periodic-reclaim (none always runs, as the reference).
    #[arg(long, default_value = "none,cap-max,cap-high,periodic-pageout,periodic-cold,periodic-reclaim", value_parser = parse_modes)]
    pub modes: ModeList,
    /// Period of the periodic modes.
    #[arg(long, default_value = "1s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub period: Duration,
    /// write (one byte per page, as the original) or read.
    #[arg(long, value_enum, default_value_t = crate::wscap::work::Access::Write)]
    pub access: crate::wscap::work::Access,
    /// What takes the pages the cap pushes out: auto, zram, zswap, swapfile, existing.
    #[arg(long, default_value = "auto", value_parser = parse_backing)]
    pub backing: workloads::backing::BackingKind,
    /// zram or zswap algorithm.
    #[arg(long)]
    pub compressor: Option<String>,
    /// Runs per mode.
    #[arg(long, default_value_t = 1, value_parser = units::uint32::<1, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// The memory arm's store: after the modes, none and cap-max run again on it
    /// (1 s each, once per repeat) for the memory finding, which is judged where
    /// the capped pages could leave RAM. auto: a swap file when --backing keeps
    /// them in RAM (zram, zswap); none; swapfile; zram (the finding's control).
    #[arg(long, value_enum, default_value_t = MemoryStore::Auto)]
    pub memory_store: MemoryStore,
    /// Extra cap-max runs at these caps (comma-separated sizes) for the slowdown curve.
    #[arg(long, value_delimiter = ',', value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub sweep_cap: Vec<u64>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
}

/// The lab's wscap step, typed: the flags the lab sets (and its controls
/// change), rendered and read back through [`WscapArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WscapLab {
    pub size: Size,
    pub cap: Size,
    pub duration: Dur,
    pub modes: Vec<crate::wscap::work::Mode>,
    pub backing: BackingKind,
    pub memory_store: MemoryStore,
    pub sweep_cap: Vec<Size>,
}

impl LabArgs for WscapLab {
    type Cli = WscapArgs;
    const EXPERIMENT: &'static str = "wscap";
    fn from_cli(a: WscapArgs) -> WscapLab {
        WscapLab {
            size: Size(a.size),
            cap: Size(a.cap),
            duration: Dur(a.duration),
            modes: a.modes.0,
            backing: a.backing,
            memory_store: a.memory_store,
            sweep_cap: a.sweep_cap.into_iter().map(Size).collect(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ModeList(pub Vec<crate::wscap::work::Mode>);

fn parse_modes(s: &str) -> Result<ModeList, String> {
    s.split(',')
        .map(|m| {
            crate::kit::names::parse("mode", m.trim())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(ModeList)
}
