//! Command-line definitions (clap derive). Completions and the man page are
//! generated from these same definitions.

use crate::units;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

// The arguments every experiment shares live in the experiments crate's kit.
pub use experiments::kit::cli::LockArgs;

/// The whole command line: the binary's own commands ([`Cmd`]) and each
/// experiment's, from [`experiments::ALL`], listed after `compare` in the
/// lab's order. Completions and the man page are generated from it.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut c = Cli::command();
    let own: Vec<String> = c.get_subcommands().map(|s| s.get_name().to_string()).collect();
    let after = own.iter().position(|n| n == "compare").map_or(own.len(), |i| i + 1);
    for (i, e) in experiments::ALL.iter().enumerate() {
        c = c.subcommand((e.command)().display_order(after + i));
    }
    for (i, n) in own.iter().enumerate() {
        let order = if i < after { i } else { i + experiments::ALL.len() };
        c = c.mut_subcommand(n, |s| s.display_order(order));
    }
    c
}

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
    /// Internal: panic on purpose, to check that a build's backtrace names
    /// file and line (`RUST_BACKTRACE=1 pagelab __panic`; docs/development.md).
    #[command(name = "__panic", hide = true)]
    Panic,
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
    /// The default: the experiments that fit 5 minutes on a 2-core VM (the plan names
    /// those left out and the budget that runs them).
    #[arg(long, conflicts_with_all = ["full", "smoke"])]
    pub quick: bool,
    /// Every experiment and report section at toy sizes, in about a minute:
    /// checks that the lab runs on this machine. Its figures and verdicts are
    /// no evidence about the studies.
    #[arg(long, conflicts_with = "full")]
    pub smoke: bool,
    /// Closer to the original studies' sizes and durations (the expected time is
    /// printed before it starts; planned at about 2½ hours on a 2-core VM).
    #[arg(long)]
    pub full: bool,
    /// Run only these experiments (comma-separated): eat, wscap, heap, mapping, thrash, jank,
    /// assess, rightsize.
    #[arg(long, value_delimiter = ',', value_parser = parse_experiment, allow_hyphen_values = true)]
    pub only: Vec<String>,
    /// The lab directory (default: runs/<UTC timestamp>-lab).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print lab.json (with the report's path) on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Print the plan and exit without running anything (with --json, the
    /// plan as JSON on stdout: schema/lab-plan.schema.json).
    #[arg(long)]
    pub dry_run: bool,
    /// Time to spend (e.g. 5m, 300s): after the first pass, the experiments
    /// whose findings are still inconclusive run again while it lasts. The whole
    /// quick lab's default is 5m; the full lab, and --only, run their plan once
    /// unless given one.
    #[arg(long, value_parser = crate::units::parse_positive_duration, allow_hyphen_values = true)]
    pub budget: Option<std::time::Duration>,
    /// Continue a lab that was killed or stopped, in its directory: the steps
    /// that finished are kept, a step cut midway runs again whole, with the
    /// plan, passes and weights its lab.json fixed before the data. Refused
    /// when the plan or the host has changed.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["quick", "smoke", "full", "only", "out", "dry_run", "budget"])]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub lock: LockArgs,
}

fn parse_experiment(s: &str) -> Result<String, String> {
    let s = s.trim();
    match experiments::find(s) {
        Some(e) => Ok(e.name().to_string()),
        None => Err(format!(
            "unknown experiment '{s}': expected {}",
            experiments::ALL.iter().map(|e| e.name()).collect::<Vec<_>>().join(", ")
        )),
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
    /// eat's fill (the random pattern) and hash against memset of the same
    /// 256 MiB, side by side --repeat times: GB/s and each one's ratio to memset.
    Fill,
    /// Each finding's controls (negative: the mechanism removed; positive:
    /// made to hold), run beside it at the quick lab's scale and repeats
    /// (thrash's at the budget that holds its protocol): does the verdict
    /// turn the way the control's role says? As root; the runs go to --out.
    Controls,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    pub what: BenchWhat,
    /// probe: samples to time for the cost figure.
    #[arg(long, default_value_t = 2000, value_parser = units::uint64::<10, 1_000_000>, allow_hyphen_values = true)]
    pub iterations: u64,
    /// probe: sampler interval for the lateness figure.
    #[arg(long, default_value = "100ms", value_parser = units::parse_interval, allow_hyphen_values = true)]
    pub interval: Duration,
    /// probe: how long to run the sampler for the lateness figure.
    #[arg(long, default_value = "20s", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// aa: claims judged (each from its own --repeat pairs of runs).
    #[arg(long, default_value_t = 20, value_parser = units::uint32::<1, 10000>, allow_hyphen_values = true)]
    pub trials: u32,
    /// aa: repeats per claim (each a run of arm A and one of arm B, side by side); fill:
    /// rounds of the fills side by side. At least 2.
    #[arg(long, default_value_t = 5, value_parser = units::uint32::<2, 1000>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// controls: a new directory for the runs (default runs/<time>-controls).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// controls: only these experiments' controls (eat, wscap, mapping, heap,
    /// thrash, jank), or these findings' (e.g. heap.growth), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// controls: --out exists; keep its finished runs of the same commands
    /// and run only what is missing.
    #[arg(long, requires = "out")]
    pub resume: bool,
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
