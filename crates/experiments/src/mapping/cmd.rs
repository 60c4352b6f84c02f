//! `pagelab mapping`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::kit::cli::RunArgs;
use crate::kit::lab_args::{LabArgs, Size};
use crate::kit::plan::{MIB, Machine, Scale};
use crate::kit::run::RunObserver;
use crate::kit::run::{ExperimentRun, conclude};
use crate::kit::units;
use crate::mapping::work::MappingConfig;
use clap::Args;
use report::lab::Step;
use serde::Serialize;

pub fn run(a: &MappingArgs) -> crate::Result<()> {
    let cfg = MappingConfig {
        size: a.size,
        stride: a.stride,
        touch: a.touch,
        iterations: a.iterations,
        warmup: a.warmup,
        repeat: a.repeat,
        methods: a.methods.clone(),
        hugepages: a.hugepages,
        pressure: a.pressure,
        memfd_keep: a.memfd_keep,
        free_pageout: a.free_pageout,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
    };
    // The command's one reader of the machine: its edge.
    let mut p = probe::Probe::default();
    crate::mapping::work::validate(&cfg, &mut p)?;
    // Every field of the configuration, by name (no `..`): one added to
    // MappingConfig and left out here is a compile error.
    let MappingConfig {
        size,
        stride,
        touch,
        iterations,
        warmup,
        repeat,
        methods,
        hugepages,
        pressure,
        memfd_keep,
        free_pageout,
        exe: _,        // this binary: the run's own, recorded as pagelab's version
        host_floor: _, // a safety floor, not part of the experiment
    } = &cfg;
    let config = Recorded {
        size_bytes: *size,
        stride_bytes: *stride,
        touch: *touch,
        iterations: *iterations,
        warmup: *warmup,
        repeat: *repeat,
        methods,
        hugepages: *hugepages,
        pressure: *pressure,
        memfd_keep: *memfd_keep,
        free_pageout: *free_pageout,
    };
    let run = ExperimentRun::start("mapping", &a.run, &config, &mut p)?;
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let r = crate::mapping::work::run(&cfg, &mut obs, record::stop::requested).map_err(crate::Error::from);
        (r, obs.into_entries())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::mapping::report::Mapping,
        |all| Output {
            experiment: "mapping",
            baseline: all.first().and_then(|e| e.baseline),
            results: all.iter().filter_map(|e| e.result.clone()).collect(),
        },
        |all| {
            format!(
                "{}\n{}\npublished figures beside ours:\n{}",
                crate::mapping::report::text_table(all),
                crate::mapping::report::semantics_markdown(all),
                crate::mapping::report::reference_markdown(all).split("\n\n").next().unwrap_or("")
            )
        },
    )
}

/// The configuration a run records (run.json's `config`): `run` takes
/// [`MappingConfig`] apart field by field, so a field left out here is a
/// compile error.
#[derive(Serialize)]
struct Recorded<'a> {
    size_bytes: u64,
    stride_bytes: u64,
    touch: crate::mapping::work::Touch,
    iterations: u32,
    warmup: u32,
    repeat: u32,
    methods: &'a [String],
    hugepages: crate::mapping::work::Hugepages,
    pressure: bool,
    memfd_keep: bool,
    free_pageout: bool,
}

/// The methods mapping's findings compare (crate::mapping::report).
const FINDING_METHODS: &str = "mmap-munmap,dontneed,free,memfd";

/// Every method (`--methods`' default).
const ALL_METHODS: &str = "mmap-munmap,dontneed,free,memfd,memfd-punch,mremap,populate";

/// The lab's mapping step, typed: the flags the lab sets (and its controls
/// change), rendered and read back through [`MappingArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappingLab {
    pub size: Size,
    pub iterations: u32,
    pub warmup: u32,
    pub methods: Vec<String>,
    /// A control's: each MADV_FREE paged out at once (mapping.lazy_reset's
    /// control, fresh_cheapest's instrument check).
    pub free_pageout: bool,
    /// mapping.shared_costlier's control.
    pub memfd_keep: bool,
}

impl LabArgs for MappingLab {
    type Cli = MappingArgs;
    const EXPERIMENT: &'static str = "mapping";
    fn from_cli(a: MappingArgs) -> MappingLab {
        MappingLab {
            size: Size(a.size),
            iterations: a.iterations,
            warmup: a.warmup,
            methods: a.methods,
            free_pageout: a.free_pageout,
            memfd_keep: a.memfd_keep,
        }
    }
}

/// The lab's `mapping` step for this machine.
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    // mapping: the study's 300 MiB (full) or 128 MiB (quick), as RAM allows.
    let map_size = match scale {
        Scale::Full => (300 * MIB).min(m.ram_bytes / 16),
        Scale::Quick => (128 * MIB).min(m.ram_bytes / 32),
        Scale::Smoke => 16 * MIB,
    }
    .max(16 * MIB);
    // Repeats are separate runs of every method (the verdicts' unit); the
    // iterations inside one run only make its median.
    let (iters, warm, reps) = match scale {
        Scale::Full => (10u32, 2u32, 5u32),
        Scale::Quick => (2, 1, 4),
        Scale::Smoke => (1, 0, 2),
    };
    // The quick lab runs only the methods its findings compare; the full lab
    // all seven, for the tables.
    let methods: Vec<String> = if scale == Scale::Quick { FINDING_METHODS } else { ALL_METHODS }
        .split(',')
        .map(str::to_string)
        .collect();
    let args = MappingLab {
        size: Size::whole_mib(map_size),
        iterations: iters,
        warmup: warm,
        methods: methods.clone(),
        free_pageout: false,
        memfd_keep: false,
    };
    let methods = methods.len();
    // Each method a fresh worker: 7.8 s for 4 repeats of seven methods at
    // 128 MiB on the 2-vCPU VM (Intel, 2026-11-26); planned at 1.3 times that.
    let per_method = 5.0 / 7.0;
    args.step(
        Some(reps),
        1.0 + per_method
            * methods as f64
            * reps as f64
            * (0.15 + (iters + warm) as f64 * (map_size / MIB) as f64 * 0.0009),
    )
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("100ms")))]
pub struct MappingArgs {
    /// Region size.
    #[arg(long, default_value = "300MiB", value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub size: u64,
    /// Distance between touched bytes for --touch first-byte (a multiple of the page size).
    #[arg(long, default_value = "64KiB", value_parser = units::parse_size, allow_hyphen_values = true)]
    pub stride: u64,
    /// all (memset of the region), first-byte (first byte of every stride), page (first byte of every page).
    #[arg(long, value_enum, default_value_t = crate::mapping::work::Touch::All)]
    pub touch: crate::mapping::work::Touch,
    /// Counted iterations per method.
    #[arg(long, default_value_t = 20, value_parser = units::uint32::<1, 100000>, allow_hyphen_values = true)]
    pub iterations: u32,
    /// Warm-up iterations, not counted.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<0, 1000>, allow_hyphen_values = true)]
    pub warmup: u32,
    /// Separate runs of every method (round-robin, each a fresh worker): the
    /// repeats that verdicts and compare count; iterations inside a run are not repeats.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<1, 1000>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Comma-separated: mmap-munmap, dontneed, free, memfd, memfd-punch, mremap, populate.
    #[arg(long, value_delimiter = ',', default_value = ALL_METHODS)]
    pub methods: Vec<String>,
    /// Transparent huge pages for the regions: never or madvise.
    #[arg(long, value_enum, default_value_t = crate::mapping::work::Hugepages::Never)]
    pub hugepages: crate::mapping::work::Hugepages,
    /// Run each method in a memory cgroup too small to keep released pages (needs root).
    #[arg(long)]
    pub pressure: bool,
    /// The memfd method keeps one memfd, its pages allocated once, and maps
    /// and unmaps it each cycle (mapping.shared_costlier's control: the
    /// page-cache allocation is paid once).
    #[arg(long)]
    pub memfd_keep: bool,
    /// The free method's release pages its region out at once (MADV_PAGEOUT
    /// after MADV_FREE, inside the timed release): a lazy release made eager,
    /// mapping.lazy_reset's control and fresh_cheapest's instrument check
    /// (Linux 5.4).
    #[arg(long)]
    pub free_pageout: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `mapping --json`: the results, with the touch they were measured against.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Output {
    experiment: &'static str,
    baseline: Option<crate::mapping::results::Baseline>,
    results: Vec<crate::mapping::results::MappingResult>,
}
