//! Command-line definitions (clap derive). Completions and the man page are
//! generated from these same definitions.

use crate::units;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "pagelab",
    version,
    about = "A laboratory for operating-system memory behaviour",
    long_about = "pagelab runs controlled experiments on the memory manager (compressed swap, \
working-set caps, allocators, mapping calls, thrashing), records what the kernel reports \
while they run, and renders tables, charts and comparisons.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Report what this machine supports and what pagelab can do here.
    Doctor(DoctorArgs),
    /// Record the system (and a target) while a command runs, or for a fixed time.
    Record(RecordArgs),
    /// The main job: run every experiment at a scale fitted to this machine and
    /// write one directory with all runs and a self-contained report.html.
    Lab(LabArgs),
    /// Render a run or lab directory: timeline.csv and a summary, report.html
    /// (--html), or the tables as Markdown (--markdown).
    Report(ReportArgs),
    /// Compare runs or labs: headline metrics side by side, the % change, and
    /// whether it exceeds the run-to-run noise (Welch's t-test on the repeats).
    Compare(CompareArgs),
    /// Fill private memory with data of chosen compressibility, trim it into
    /// (compressed) swap, read it back, and time each phase.
    Eat(EatArgs),
    /// What a working-set cap costs: scans/s under hard caps against periodic reclaim.
    Wscap(WscapArgs),
    /// What each way of obtaining and releasing memory costs, step by step.
    Mapping(MappingArgs),
    /// How allocators scale with threads: per-call time, tail latency, peak memory.
    Heap(HeapArgs),
    /// Many processes whose working sets exceed their memory, in a cgroup: paging,
    /// CPU, PSI, responsiveness inside and outside, and recovery.
    Thrash(ThrashArgs),
    /// What compressed memory would do for a program: how much of its memory is
    /// cold, how its real pages compress, and (with --trim) what trimming costs.
    Assess(AssessArgs),
    /// How much memory to give a program: the smallest limit whose slowdown's
    /// 95 % upper bound is within --slowdown, verified, with the curve (batch,
    /// `-- CMD`); or where a running service's footprint settles under gentle
    /// reclaim (--pid, --cgroup).
    Rightsize(RightsizeArgs),
    /// A live memory timeline of the system, a process or a cgroup, with trim,
    /// reclaim and numbered marks (a terminal UI).
    Monitor(MonitorArgs),
    /// Undo system changes left by pagelab runs that died (normally automatic).
    Restore(RestoreArgs),
    /// Print figures for pagelab's own performance targets.
    Bench(BenchArgs),
    /// Print shell completions.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one per command into a directory.
    Man {
        /// Write pagelab.1 and pagelab-<command>.1 into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Internal: render the monitor's demo state to a PNG (for the docs).
    #[command(name = "__monitor-demo", hide = true)]
    MonitorDemo {
        #[arg(long)]
        png: PathBuf,
        /// Show a process target.
        #[arg(long)]
        process: bool,
    },
    /// Internal: run as a worker process for an experiment.
    #[command(name = "__worker", hide = true)]
    Worker {
        kind: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Internal: a program with a known hot set (swept every cache line,
    /// --passes times; 0 for ever) and cold set (touched once).
    #[command(name = "__hotcold", hide = true)]
    HotCold {
        #[arg(long, value_parser = units::parse_size)]
        hot: u64,
        #[arg(long, value_parser = units::parse_size)]
        cold: u64,
        #[arg(long)]
        passes: u64,
    },
    /// Internal: drive a sandbox through cgroup, zram and sysctl changes (crash tests).
    #[command(name = "__sandbox-drill", hide = true)]
    SandboxDrill(DrillArgs),
}

/// What an experiment does when another pagelab run holds the machine.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// Refuse at once (exit 2) if another pagelab run is in progress, instead of
    /// waiting for it. Two runs never share the machine: their stores and figures would mix.
    #[arg(long)]
    pub no_wait: bool,
}

/// The flags every experiment shares, documented once. The sampling interval's
/// default is each experiment's own (`#[command(mut_arg("interval", ...))]`).
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run directory to write (default: runs/<UTC timestamp>-<experiment>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sampling interval of the run's timeline (10ms to 1h).
    #[arg(long, default_value = "1s", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// Refuse to run if the plan would leave MemAvailable below this, and stop the
    /// run if it falls below it (default: the larger of 1 GiB and 10 % of RAM).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    pub host_floor: Option<u64>,
    /// Print the results as JSON on stdout: {"experiment": NAME, "results": [...],
    /// "dir": RUN_DIR}, plus the experiment's own fields (heap's timer, mapping's
    /// baseline, thrash's summary).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub lock: LockArgs,
}

/// Where an experiment that may need a swap file puts it.
#[derive(Debug, Args)]
pub struct SwapfileArgs {
    /// Directory for a swap file when one is needed (--backing swapfile, or auto
    /// without zram).
    #[arg(long, default_value = "/var/tmp")]
    pub swapfile_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// With no zram device to ask, add one of pagelab's own (as root) to list
    /// the compression algorithms, and remove it at once. Without this flag
    /// doctor changes nothing on the machine.
    #[arg(long)]
    pub probe_zram: bool,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Sampling interval (10ms .. 1h).
    #[arg(long, default_value = "1s", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// Run directory to write (default: runs/<UTC timestamp>-record).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Target process to record besides the system.
    #[arg(long, conflicts_with = "cgroup", allow_hyphen_values = true)]
    pub pid: Option<i32>,
    /// Target memory cgroup, relative to the memory hierarchy's root (e.g. system.slice/foo.service) or absolute.
    #[arg(long)]
    pub cgroup: Option<PathBuf>,
    /// Record for this long instead of running a command.
    #[arg(long, value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also serve the latest sample as OpenMetrics on GET /metrics at this address
    /// (HOST:PORT, or a port alone for 127.0.0.1; alone, 127.0.0.1:9464), for Prometheus.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::serve::DEFAULT,
        value_parser = crate::serve::parse_addr)]
    pub serve: Option<std::net::SocketAddr>,
    /// The command to run and record (after --).
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A run directory, or a lab directory (written by `pagelab lab`).
    pub dir: PathBuf,
    /// Print the summary as JSON.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Re-render the charts and write DIR/report.html (self-contained).
    #[arg(long, conflicts_with = "markdown")]
    pub html: bool,
    /// Print the report's tables as Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Write the headline figures as an OpenMetrics text file (for node_exporter's
    /// textfile collector; written to a hidden temporary file beside it, then renamed), or to stdout with -.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["html", "markdown"])]
    pub openmetrics: Option<PathBuf>,
    /// Write the headline figures in Bencher's Metric Format (JSON), or to stdout with -.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["html", "markdown"])]
    pub bmf: Option<PathBuf>,
    /// Render into this new (or empty) directory instead of DIR, which is then
    /// only read: DIR's regular files are copied there first (links, devices and
    /// FIFOs are not), and timeline.csv, charts and report.html are written there.
    #[arg(long, value_name = "OUT")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    /// The default: every experiment in about 5 minutes on a 2-core VM.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,
    /// Closer to the original studies' sizes and durations (the expected time is
    /// printed before it starts; about 40 minutes on a 2-core VM).
    #[arg(long)]
    pub full: bool,
    /// Run only these experiments (comma-separated): eat, wscap, heap, mapping, thrash, assess.
    #[arg(long, value_delimiter = ',', value_parser = parse_experiment, allow_hyphen_values = true)]
    pub only: Vec<String>,
    /// The lab directory (default: runs/<UTC timestamp>-lab).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print lab.json (with the report's path) on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Print the plan and exit without running anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Time to spend (e.g. 5m, 300s): after the first pass, the experiments
    /// whose findings are still inconclusive run again while it lasts. The whole
    /// quick lab's default is 5m; the full lab, and --only, run their plan once
    /// unless given one.
    #[arg(long, value_parser = crate::units::parse_positive_duration)]
    pub budget: Option<std::time::Duration>,
    #[command(flatten)]
    pub lock: LockArgs,
}

fn parse_experiment(s: &str) -> Result<String, String> {
    let s = s.trim();
    match report::experiment::find(s) {
        Some(e) => Ok(e.name().to_string()),
        None => Err(format!("unknown experiment '{s}': expected {}", report::experiment::names().join(", "))),
    }
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err(format!("'{s}': expected a level between 0 and 1, e.g. 0.05")),
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(f) if (0.0..=1000.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}': expected a percentage from 0 to 1000, e.g. 2 or 2%")),
    }
}

/// A fraction: `0.25` or `25%`.
fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.parse::<f64>(),
    };
    match v {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}': expected a fraction from 0 to 1 or a percentage, e.g. 0.25 or 25%")),
    }
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
    pub source: workloads::assess::WssSource,
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

fn parse_wss_source(s: &str) -> Result<workloads::assess::WssSource, String> {
    workloads::assess::WssSource::parse(s).ok_or_else(|| format!("'{s}': expected auto, damon, mglru or referenced"))
}

fn parse_trim_store(s: &str) -> Result<workloads::backing::BackingKind, String> {
    use workloads::backing::BackingKind;
    match BackingKind::parse(s) {
        Some(k @ (BackingKind::Auto | BackingKind::Zram | BackingKind::Existing)) => Ok(k),
        _ => Err(format!("'{s}': expected zram, existing or auto")),
    }
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more run or lab directories; each is compared with the first.
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    /// Print Markdown.
    #[arg(long, conflicts_with_all = ["html", "json"])]
    pub markdown: bool,
    /// Print a self-contained HTML page.
    #[arg(long, conflicts_with = "json")]
    pub html: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Family-wise significance level (Holm's correction over the metrics).
    #[arg(long, default_value = "0.05", value_parser = parse_fraction, allow_hyphen_values = true)]
    pub alpha: f64,
    /// The smallest change of the medians, in %, that is called a difference.
    #[arg(long, default_value = "2", value_parser = parse_percent, allow_hyphen_values = true)]
    pub min_change: f64,
    /// Also write the output to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Say what would be undone without undoing it.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BenchWhat {
    /// CPU cost of one full Sample, and sampler lateness.
    Probe,
    /// The per-call timer of `pagelab heap`: its overhead (target <= 30 ns) against
    /// a CLOCK_MONOTONIC pair, and the stability of its calibration.
    Timer,
    /// A real A/A claim: the same mapping method as both arms, run side by side,
    /// judged --trials times; how often the verdict rules call it "differs".
    Aa,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    pub what: BenchWhat,
    /// Samples to time for the cost figure.
    #[arg(long, default_value_t = 2000, value_parser = units::uint64::<10, 1_000_000>, allow_hyphen_values = true)]
    pub iterations: u64,
    /// Sampler interval for the lateness figure.
    #[arg(long, default_value = "100ms", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// How long to run the sampler for the lateness figure.
    #[arg(long, default_value = "20s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// aa: claims judged (each from its own --repeat pairs of runs).
    #[arg(long, default_value_t = 20, value_parser = units::uint32::<1, 10000>, allow_hyphen_values = true)]
    pub trials: u32,
    /// aa: repeats per claim (each a run of arm A and one of arm B, side by side).
    #[arg(long, default_value_t = 5, value_parser = units::uint32::<2, 1000>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DrillArgs {
    /// Create a zram swap of this size.
    #[arg(long, value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub zram: Option<u64>,
    /// zram algorithm.
    #[arg(long)]
    pub algorithm: Option<String>,
    /// Create a memory cgroup with this limit and run a worker in it.
    #[arg(long, value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub cgroup: Option<u64>,
    /// Worker allocation inside the cgroup.
    #[arg(long, default_value = "16MiB", value_parser = units::parse_size, allow_hyphen_values = true)]
    pub touch: u64,
    /// Set vm.swappiness to this value.
    #[arg(long, allow_hyphen_values = true)]
    pub swappiness: Option<u32>,
    /// Create a swap file at this path.
    #[arg(long)]
    pub swapfile: Option<PathBuf>,
    /// Hold the changes this long before restoring.
    #[arg(long, default_value = "0s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub hold: Duration,
    /// Journal directory (tests use their own).
    #[arg(long)]
    pub journal_dir: Option<PathBuf>,
    /// Host guard floor: refuse if the plan would leave MemAvailable below this
    /// (default: the larger of 1 GiB and 10 % of RAM).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true)]
    pub host_floor: Option<u64>,
}

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
    pub trim: workloads::eat::Trim,
    /// Runs per pattern.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<1, 1000>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// PRNG seed (recorded, so a run can be reproduced).
    #[arg(long, default_value_t = 1, value_parser = units::uint64::<0, { u64::MAX }>, allow_hyphen_values = true)]
    pub seed: u64,
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

fn parse_backing(s: &str) -> Result<workloads::backing::BackingKind, String> {
    workloads::backing::BackingKind::parse(s)
        .ok_or_else(|| format!("unknown backing '{s}': expected {}", workloads::backing::BackingKind::NAMES))
}

/// Thrash's stores: a comma-separated list, each run in turn.
#[derive(Debug, Clone)]
pub struct BackingList(pub Vec<workloads::backing::BackingKind>);

fn parse_thrash_backings(s: &str) -> Result<BackingList, String> {
    use workloads::backing::BackingKind as K;
    let mut v = Vec::new();
    for p in s.split(',').map(str::trim) {
        match K::parse(p) {
            Some(k @ (K::Zram | K::Swapfile | K::Existing | K::Auto)) if !v.contains(&k) => v.push(k),
            Some(K::Zram | K::Swapfile | K::Existing | K::Auto) => return Err(format!("'{p}' is listed twice")),
            _ => {
                return Err(format!(
                    "unknown backing '{p}': expected zram, swapfile, existing or auto, or a comma-separated list \
                     such as zram,swapfile"
                ));
            }
        }
    }
    Ok(BackingList(v))
}

fn parse_trim(s: &str) -> Result<workloads::eat::Trim, String> {
    workloads::eat::Trim::parse(s)
        .ok_or_else(|| format!("unknown trim '{s}': expected {}", workloads::eat::Trim::NAMES))
}

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
    #[arg(long, default_value = "write", value_parser = ["write", "read"])]
    pub access: String,
    /// What takes the pages the cap pushes out: auto, zram, zswap, swapfile, existing.
    #[arg(long, default_value = "auto", value_parser = parse_backing)]
    pub backing: workloads::backing::BackingKind,
    /// zram or zswap algorithm.
    #[arg(long)]
    pub compressor: Option<String>,
    /// Runs per mode.
    #[arg(long, default_value_t = 1, value_parser = units::uint32::<1, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Extra cap-max runs at these caps (comma-separated sizes) for the slowdown curve.
    #[arg(long, value_delimiter = ',', value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub sweep_cap: Vec<u64>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
}

#[derive(Debug, Clone)]
pub struct ModeList(pub Vec<workloads::wscap::Mode>);

fn parse_modes(s: &str) -> Result<ModeList, String> {
    s.split(',')
        .map(|m| {
            workloads::wscap::Mode::parse(m.trim())
                .ok_or_else(|| format!("unknown mode '{m}': expected {}", workloads::wscap::Mode::NAMES))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(ModeList)
}

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
    #[arg(long, default_value = "all", value_parser = ["all", "first-byte", "page"])]
    pub touch: String,
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
    #[arg(long, value_delimiter = ',', default_value = "mmap-munmap,dontneed,free,memfd,memfd-punch,mremap,populate")]
    pub methods: Vec<String>,
    /// Transparent huge pages for the regions: never or madvise.
    #[arg(long, default_value = "never", value_parser = ["never", "madvise"])]
    pub hugepages: String,
    /// Run each method in a memory cgroup too small to keep released pages (needs root).
    #[arg(long)]
    pub pressure: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

fn parse_threads(s: &str) -> Result<u32, String> {
    let n: u32 = s.trim().parse().map_err(|_| format!("'{s}' is not a thread count: expected e.g. 1,2,4,8"))?;
    if n == 0 || n > workloads::heap::MAX_THREADS {
        return Err(format!("{n} threads: expected 1 to {}", workloads::heap::MAX_THREADS));
    }
    Ok(n)
}

fn parse_allocator(s: &str) -> Result<workloads::heap::alloc::Allocator, String> {
    workloads::heap::alloc::Allocator::parse(s.trim())
}

fn parse_pattern(s: &str) -> Result<workloads::heap::overtime::Pattern, String> {
    workloads::heap::overtime::Pattern::parse(s)
}

/// One `--knobs` entry: an arm, or `none`.
#[derive(Debug, Clone)]
pub struct KnobArg(pub Option<workloads::heap::overtime::Arm>);

fn parse_knob(s: &str) -> Result<KnobArg, String> {
    if s.trim() == "none" {
        return Ok(KnobArg(None));
    }
    workloads::heap::overtime::Arm::parse_knob(s).map(|a| KnobArg(Some(a)))
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
    #[arg(long, value_delimiter = ',', default_value = "glibc,mimalloc,jemalloc", value_parser = parse_allocator)]
    pub allocators: Vec<workloads::heap::alloc::Allocator>,
    /// default; shared (one heap for all threads: glibc M_ARENA_MAX=1, one jemalloc
    /// arena); per-thread (a mimalloc heap or jemalloc arena per thread).
    #[arg(long, default_value = "default", value_parser = ["default", "shared", "per-thread"])]
    pub heap_mode: String,
    /// The allocation pattern.
    #[arg(long, default_value = "containers", value_parser = ["containers"])]
    pub workload: String,
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
    #[arg(long)]
    pub baseline: Option<String>,
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
    #[arg(long, value_delimiter = ',', default_value = "mixed", value_parser = parse_pattern)]
    pub patterns: Vec<workloads::heap::overtime::Pattern>,
    /// Over time: extra arms, each an allocator with one documented setting
    /// changed, comma-separated, or none: glibc:malloc_trim (called after
    /// shrink), glibc:MALLOC_ARENA_MAX=N, glibc:MALLOC_TRIM_THRESHOLD_=N,
    /// mimalloc:MIMALLOC_PURGE_DELAY=N, mimalloc:mi_collect,
    /// jemalloc:dirty_decay_ms:N, jemalloc:background_thread:true, ...
    #[arg(long, value_delimiter = ',', default_value = "glibc:malloc_trim", value_parser = parse_knob)]
    pub knobs: Vec<KnobArg>,
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

#[derive(Debug, Clone)]
pub struct PresetList(pub Vec<String>);

fn parse_preset_list(s: &str) -> Result<PresetList, String> {
    workloads::thrash::parse_presets(s).map(PresetList)
}

fn parse_time_scale(s: &str) -> Result<f64, String> {
    parse_scale(s)
        .map_err(|_| format!("'{s}' is not a time scale: expected a factor above 0 and at most 10, e.g. 0.05"))
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 10.0 => Ok(f),
        _ => Err(format!("'{s}' is not a scale: expected a factor above 0 and at most 10, e.g. 0.1")),
    }
}

fn parse_nonzero_u32(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}': expected a whole number of at least 1")),
    }
}

fn parse_nonzero_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}': expected a whole number of at least 1")),
    }
}

#[derive(Debug, Args)]
pub struct ThrashArgs {
    /// The study's experiments: e1, e2, e3, e4, a comma-separated list, or all.
    /// Flags below override a preset's values.
    #[arg(long, default_value = "e2", value_parser = parse_preset_list)]
    pub preset: PresetList,
    /// Consumer processes N (study: 25).
    #[arg(long, value_parser = parse_nonzero_u32, allow_hyphen_values = true)]
    pub consumers: Option<u32>,
    /// Memory per consumer S (study: 100 MB; here 100 MiB).
    #[arg(long, value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub size: Option<u64>,
    /// Random byte writes per cycle W.
    #[arg(long, value_parser = parse_nonzero_u64, allow_hyphen_values = true)]
    pub writes: Option<u64>,
    /// Sleep after each cycle's writes, t_s.
    #[arg(long, value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub sleep: Option<Duration>,
    /// Stagger between consumer starts, t_c (activity lasts N t_c + t_c).
    #[arg(long, value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub stagger: Option<Duration>,
    /// Sleep before the first consumer starts.
    #[arg(long, default_value = "10s", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub initial_delay: Duration,
    /// Memory limit of the consumers' cgroup (default: the idle workers' usage plus
    /// N × S ÷ 2.5, the study's ratio).
    #[arg(long, value_parser = units::parse_nonzero_size, allow_hyphen_values = true)]
    pub limit: Option<u64>,
    /// What takes the paged-out memory: zram, swapfile (a swap file on disk, the
    /// study's setup), existing or auto; a comma-separated list runs every preset
    /// on each, e.g. zram,swapfile.
    #[arg(long, default_value = "zram", value_parser = parse_thrash_backings)]
    pub backing: BackingList,
    /// Multiply sizes (S, W) by F, and the times (t_s, t_c, the initial delay)
    /// by F too unless --time-scale is given: W × f writes every t_s × f keep the
    /// study's paging demand per second. 1 = the study.
    #[arg(long, default_value = "1", value_parser = parse_scale, allow_hyphen_values = true)]
    pub scale: f64,
    /// Multiply the times (t_s, t_c, the initial delay) by F instead of --scale.
    #[arg(long, value_parser = parse_time_scale, allow_hyphen_values = true)]
    pub time_scale: Option<f64>,
    /// Runs per preset.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<1, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Smoother for the charts: ma (centred 5-point moving average) or bezier (the study's).
    #[arg(long, default_value = "ma", value_parser = ["ma", "bezier"])]
    pub smooth: String,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
}

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Follow this process.
    #[arg(long, conflicts_with_all = ["name", "cgroup"], allow_hyphen_values = true)]
    pub pid: Option<i32>,
    /// Follow the largest process with this name (as in /proc/PID/comm).
    #[arg(long, conflicts_with = "cgroup")]
    pub name: Option<String>,
    /// Follow this memory cgroup (a path under the memory controller's mount, or absolute).
    #[arg(long)]
    pub cgroup: Option<PathBuf>,
    /// Sampling interval.
    #[arg(long, default_value = "500ms", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// Time window shown (+ and - zoom).
    #[arg(long, default_value = "5m", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub window: Duration,
    /// Also write a run directory (render it later with pagelab report).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Serve the latest sample as OpenMetrics on GET /metrics at this address
    /// (HOST:PORT, or a port alone for 127.0.0.1; alone, 127.0.0.1:9464), for Prometheus.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::serve::DEFAULT,
        value_parser = crate::serve::parse_addr)]
    pub serve: Option<std::net::SocketAddr>,
    /// No terminal interface: sample, serve (--serve) and record (--record) until
    /// SIGINT or SIGTERM. Implied by --serve when stdout is not a terminal.
    #[arg(long)]
    pub headless: bool,
}

/// `--backing` of rightsize: `disk` is a swap file made for the run.
fn parse_rightsize_backing(s: &str) -> Result<workloads::backing::BackingKind, String> {
    match s {
        "disk" => Ok(workloads::backing::BackingKind::Swapfile),
        _ => workloads::backing::BackingKind::parse(s).ok_or_else(|| {
            format!("unknown backing '{s}': expected auto, zram, zswap, disk (a swap file), existing or none")
        }),
    }
}

/// A share that must be above 0: `5%` or `0.05`.
fn parse_positive_share(s: &str) -> Result<f64, String> {
    match parse_share(s) {
        Ok(f) if f > 0.0 => Ok(f),
        Ok(_) => Err(format!("'{s}': must be above 0, e.g. 5% or 0.05")),
        Err(e) => Err(e),
    }
}

fn parse_cap_factor(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('x').parse::<f64>() {
        Ok(f) if (1.2..=100.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}': expected a factor from 1.2 to 100, e.g. 3 or 3x")),
    }
}

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("200ms")))]
pub struct RightsizeArgs {
    /// The slowdown you accept: the recommended limit's runtime, over unlimited,
    /// has its 95 % upper bound within 1 + this.
    #[arg(long, default_value = "5%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub slowdown: f64,
    /// What takes the pages that do not fit under a limit: auto, zram, zswap,
    /// disk (a swap file), existing (the swap already on), none.
    #[arg(long, default_value = "auto", value_parser = parse_rightsize_backing)]
    pub backing: workloads::backing::BackingKind,
    /// zram or zswap algorithm.
    #[arg(long)]
    pub compressor: Option<String>,
    /// Wall time for the whole search, verification included.
    #[arg(long, default_value = "10m", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub budget: Duration,
    /// Runs of the program in all (baseline, search and verification).
    #[arg(long, default_value_t = 12, value_parser = units::uint32::<4, 1000>, allow_hyphen_values = true)]
    pub runs: u32,
    /// Pairs (unlimited and limited, side by side) in the verification, at
    /// least: the first verification also takes every run the search left.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<2, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// A limited run is stopped once it has run this many times the unlimited
    /// median (it counts as too small).
    #[arg(long, default_value = "2", value_parser = parse_cap_factor, allow_hyphen_values = true)]
    pub time_cap: f64,
    /// The search stops when the bracket is narrower than this share of the peak.
    #[arg(long, default_value = "5%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub resolution: f64,
    /// Service mode: this running process (never restarted).
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["cgroup", "command", "synthetic_hot"])]
    pub pid: Option<i32>,
    /// Service mode: this cgroup v2 directory (memory.reclaim).
    #[arg(long, conflicts_with_all = ["command", "synthetic_hot"])]
    pub cgroup: Option<PathBuf>,
    /// Service mode: reclaim holds while memory pressure (PSI some) is at or
    /// above this share of the time.
    #[arg(long, default_value = "0.1%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub psi: f64,
    /// Service mode: a command whose latency is watched (via sh -c).
    #[arg(long, allow_hyphen_values = true)]
    pub probe: Option<String>,
    /// Service mode: reclaim holds while the probe is this much slower than before.
    #[arg(long, default_value = "25%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub probe_slowdown: f64,
    /// Service mode: how long to watch.
    #[arg(long, default_value = "10m", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// Service mode: time between steps.
    #[arg(long, default_value = "1s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub every: Duration,
    /// Service mode: the largest step, as a share of the footprint.
    #[arg(long, default_value = "5%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub step: f64,
    /// Instead of a command: pagelab's own program with this hot set (swept
    /// over and over) ...
    #[arg(long, value_parser = units::parse_nonzero_size, allow_hyphen_values = true, requires = "synthetic_cold")]
    pub synthetic_hot: Option<u64>,
    /// ... and this cold set (touched once).
    #[arg(long, value_parser = units::parse_size, allow_hyphen_values = true, requires = "synthetic_hot")]
    pub synthetic_cold: Option<u64>,
    /// ... sweeping the hot set this many times.
    #[arg(long, default_value_t = 8000, value_parser = units::uint64::<1, 1000000>, allow_hyphen_values = true)]
    pub synthetic_passes: u64,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
    /// The command to size (after --).
    #[arg(last = true)]
    pub command: Vec<String>,
}
