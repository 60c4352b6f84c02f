//! `pagelab eat`: glue between the CLI, the experiment, the run directory and the
//! report.

use crate::eat::work::EatConfig;
use crate::kit::cli::{RunArgs, SwapfileArgs, parse_backing};
use crate::kit::lab_args::{LabArgs, Size};
use crate::kit::plan::{MIB, Machine, Scale};
use workloads::backing::BackingKind;
use crate::kit::run::{Doc, ExperimentRun, RunObserver, conclude};
use crate::kit::units;
use crate::kit::usage;
use clap::Args;
use report::lab::Step;
use serde::Serialize;

pub fn run(a: &EatArgs) -> crate::Result<()> {
    // The command's one reader of the machine: its edge.
    let mut p = probe::Probe::default();
    let compressors: Vec<Option<String>> = match a.compressor.as_deref() {
        None => vec![None],
        Some("all") => {
            let all = workloads::backing::all_compressors(workloads::backing::resolve(a.backing, &mut p), &mut p);
            if all.is_empty() {
                return Err(usage(
                    "--compressor all: this backing offers no compression algorithms (use --backing zram or zswap)",
                ));
            }
            all.into_iter().map(Some).collect()
        }
        Some(c) => vec![Some(c.to_string())],
    };
    let cfg = EatConfig {
        size: a.size,
        patterns: a.pattern.0.clone(),
        block: a.block as usize,
        backing: a.backing,
        compressors,
        trim: a.trim,
        repeat: a.repeat,
        seed: a.seed,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
        settle_max: a.settle_max,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
    };
    // Everything that can be refused is refused here, before any change.
    crate::eat::work::validate(&cfg, &mut p)?;
    // Every field of the configuration, by name (no `..`): one added to
    // EatConfig and left out here is a compile error, not a gap in run.json.
    let EatConfig {
        size,
        patterns,
        block,
        backing,
        compressors,
        trim,
        repeat,
        seed,
        settle_max,
        swapfile_dir,
        exe: _,        // this binary: the run's own, recorded as pagelab's version
        host_floor: _, // a safety floor, not part of the experiment
    } = &cfg;
    let config = Recorded {
        size_bytes: *size,
        patterns,
        block_bytes: *block,
        backing: *backing,
        compressors,
        trim: *trim,
        repeat: *repeat,
        seed: *seed,
        settle_max_s: settle_max.as_secs_f64(),
        swapfile_dir: swapfile_dir.to_string_lossy(),
        interval_s: a.run.interval.as_secs_f64(),
    };
    let run = ExperimentRun::start("eat", &a.run, &config, &mut p)?;
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, a.run.json);
        let r = crate::eat::work::run(&cfg, &mut obs, record::stop::requested).map_err(crate::Error::from);
        (r, obs.into_entries())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::eat::report::Eat,
        |entries| Doc { experiment: "eat", results: entries.to_vec() },
        |results| {
            format!(
                "{}\nfill bandwidth (GB/s) beside memset of the same region, same worker:\n{}\npublished figures beside ours:\n{}",
                crate::eat::report::text_table(results),
                crate::eat::report::fill_table(results),
                crate::eat::report::reference_markdown(results).split("\n\n").next().unwrap_or("")
            )
        },
    )
}

/// `--settle-max`: above zero and at most ten minutes (the settle wait does
/// not look for Ctrl-C, so it stays bounded).
fn parse_settle_max(s: &str) -> Result<std::time::Duration, String> {
    match units::parse_positive_duration(s)? {
        d if d > std::time::Duration::from_secs(600) => Err(format!("'{s}': at most 10m")),
        d => Ok(d),
    }
}

/// The configuration a run records (run.json's `config`): `run` takes
/// [`EatConfig`] apart field by field, so a field left out here is a compile
/// error, not a silent gap in the record.
#[derive(Serialize)]
struct Recorded<'a> {
    size_bytes: u64,
    patterns: &'a [workloads::fill::Pattern],
    block_bytes: usize,
    backing: workloads::backing::BackingKind,
    compressors: &'a [Option<String>],
    trim: crate::eat::work::Trim,
    repeat: u32,
    seed: u64,
    /// The longest wait for the store to settle after a trim (s).
    settle_max_s: f64,
    /// Where a swap file would be made (`--swapfile-dir`).
    swapfile_dir: std::borrow::Cow<'a, str>,
    interval_s: f64,
}

/// The lab's `eat` step for this machine.
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    let full = scale == Scale::Full;
    // eat: the study used 5 GB per pattern on 16 GB; stay at 1/16 of RAM at most.
    let eat_size = match scale {
        Scale::Full => (1024 * MIB).min(m.ram_bytes / 16),
        // Quick: 64 MiB and eight repeats (an even count, so ABBA's order
        // effect cancels): the stored fractions are near deterministic (and
        // two of them checks), and the trim ratios' per-repeat log sd was
        // about 0.25 (quick lab, 2026-11-28): eight repeats halve the t
        // interval's half-width of four, in the time thrash left (issue 57).
        Scale::Quick => (64 * MIB).min(m.ram_bytes / 64),
        Scale::Smoke => 16 * MIB,
    }
    .max(16 * MIB);
    let eat_repeat = match scale {
        Scale::Smoke => 2u32,
        Scale::Quick => 8,
        Scale::Full => 3,
    };
    let compressors = if full && m.root { 3.0 } else { 1.0 };
    let mut args = EatLab {
        size: Size::whole_mib(eat_size),
        compressor: (full && m.root).then(|| "all".to_string()),
        backing: BackingKind::Auto,
        block: 20,
    };
    let mut eat_note = None;
    if !m.root && !m.swap_active {
        args.backing = BackingKind::None;
        eat_note = Some(
            "ran without swap: creating zram needs root and no swap is active, so nothing could be trimmed \
             and the store figures are missing; the fill and read-back are measured"
                .to_string(),
        );
    } else if !m.root {
        args.backing = BackingKind::Existing;
        eat_note = Some("used the swap already active (creating zram needs root)".to_string());
    }
    // Four patterns a repeat, each a fill, a trim and a read-back: 1.5 s a
    // repeat at 128 MiB on the 2-vCPU VM (Intel, 2026-11-26); planned at
    // twice that.
    let eat_expect = 2.0 + 4.0 * eat_repeat as f64 * compressors * (0.1 + (eat_size / MIB) as f64 * 0.005);
    let mut e = args.step(Some(eat_repeat), eat_expect);
    e.note = eat_note;
    e
}

/// The lab's eat step, typed: the flags the lab sets (and its controls
/// change), rendered and read back through [`EatArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EatLab {
    pub size: Size,
    pub compressor: Option<String>,
    pub backing: BackingKind,
    /// The semi pattern's block, bytes (eat.semi_fraction's instrument check: 8).
    pub block: u32,
}

impl LabArgs for EatLab {
    type Cli = EatArgs;
    const EXPERIMENT: &'static str = "eat";
    fn from_cli(a: EatArgs) -> EatLab {
        EatLab { size: Size(a.size), compressor: a.compressor, backing: a.backing, block: a.block }
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("100ms")))]
pub struct EatArgs {
    /// Private memory to fill, per pattern.
    #[arg(long, default_value = "256MiB", value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub size: u64,
    /// random, semi, const, zero, all, or a comma-separated list.
    #[arg(long, default_value = "all", value_parser = parse_patterns)]
    pub pattern: PatternList,
    /// Block size of the semi pattern, bytes.
    #[arg(long, default_value_t = 20, value_parser = units::uint32::<1, 4096>, allow_hyphen_values = true)]
    pub block: u32,
    /// What takes the trimmed pages: auto, zram, zswap, swapfile, existing, none.
    #[arg(long, default_value = "auto", value_parser = parse_backing)]
    pub backing: workloads::backing::BackingKind,
    /// zram or zswap compression algorithm, or `all` to compare every one the kernel offers.
    #[arg(long)]
    pub compressor: Option<String>,
    /// self (madvise in the worker), external (process_madvise from pagelab), cgroup (reclaim), none.
    #[arg(long, default_value = "self", value_parser = parse_trim)]
    pub trim: crate::eat::work::Trim,
    /// Runs per pattern.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<1, 1000>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// PRNG seed (recorded, so a run can be reproduced).
    #[arg(long, default_value_t = 1, value_parser = units::uint64::<0, { u64::MAX }>, allow_hyphen_values = true)]
    pub seed: u64,
    /// The longest wait for the store to settle after a trim (at most 10m)
    #[arg(long, default_value = "10s", value_parser = parse_settle_max, allow_hyphen_values = true)]
    pub settle_max: std::time::Duration,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
}

#[derive(Debug, Clone)]
pub struct PatternList(pub Vec<workloads::fill::Pattern>);

fn parse_patterns(s: &str) -> Result<PatternList, String> {
    use workloads::fill::Pattern;
    let mut v = Vec::new();
    for part in s.split(',') {
        match part.trim() {
            "all" => v.extend(Pattern::ALL),
            p => v.push(
                Pattern::parse(p)
                    .ok_or_else(|| format!("unknown pattern '{p}': expected random, semi, const, zero or all"))?,
            ),
        }
    }
    v.dedup();
    Ok(PatternList(v))
}

fn parse_trim(s: &str) -> Result<crate::eat::work::Trim, String> {
    crate::kit::names::parse("trim", s)
}
