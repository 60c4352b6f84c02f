//! The arguments every experiment shares, documented once, and the parsers
//! more than one experiment uses.

use crate::kit::units;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Directory for a swap file pagelab makes (a swap file store, or the one
    /// behind zswap): an absolute path that no one but root can change (as /var/tmp)
    #[arg(long, default_value = "/var/tmp")]
    pub swapfile_dir: PathBuf,
}

/// A fraction: `0.25` or `25%`.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.parse::<f64>(),
    };
    match v {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}': expected a fraction from 0 to 1 or a percentage, e.g. 0.25 or 25%")),
    }
}

pub fn parse_backing(s: &str) -> Result<workloads::backing::BackingKind, String> {
    workloads::backing::BackingKind::parse(s)
        .ok_or_else(|| format!("unknown backing '{s}': expected {}", workloads::backing::BackingKind::names()))
}
