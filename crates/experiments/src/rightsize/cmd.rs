//! `pagelab rightsize`: glue between the CLI, the search (or service mode),
//! the run directory and the report.

use crate::kit::cli::{RunArgs, SwapfileArgs, parse_share};
use crate::kit::lab_args::{Dur, LabArgs, Size};
use crate::kit::plan::{Machine, Scale, skip};
use crate::kit::run::{ExperimentRun, RunObserver, conclude};
use crate::kit::units;
use crate::kit::usage;
use crate::rightsize::results::{CheckAnswer, RightsizeResult};
use crate::rightsize::work::search::SearchConfig;
use crate::rightsize::work::service::ServiceConfig;
use crate::rightsize::kube::Node;
use crate::rightsize::work::{self as rs, BatchConfig};
use clap::Args;
use workloads::observe::Observer;
use report::lab::Step;
use std::path::PathBuf;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// Unlimited runs before the first limited one: the reference, the peak,
/// the working set and the spread the plan is made from (of all but the
/// first, a warm-up).
const BASELINES: u32 = 4;

fn service_config(a: &RightsizeArgs) -> ServiceConfig {
    ServiceConfig {
        pid: a.pid,
        cgroup: a.cgroup.clone(),
        psi: a.psi,
        probe: a.probe.clone(),
        probe_slowdown: a.probe_slowdown,
        duration: a.duration,
        interval: a.every,
        step: a.step,
        backing: a.backing.0[0],
        compressor: a.compressor.as_ref().and_then(|c| c.0.first().cloned()),
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
    }
}

/// The command to size: the user's, or pagelab's own hot/cold program.
fn command(a: &RightsizeArgs) -> crate::Result<Vec<String>> {
    if let (Some(hot), Some(cold)) = (a.synthetic_hot, a.synthetic_cold) {
        let exe = std::env::current_exe()?.to_string_lossy().to_string();
        return Ok(vec![
            exe,
            "__hotcold".into(),
            "--hot".into(),
            hot.to_string(),
            "--cold".into(),
            cold.to_string(),
            "--passes".into(),
            a.synthetic_passes.to_string(),
        ]);
    }
    let Some(cmd) = a.command.first() else {
        return Err(usage(
            "give the program to size after --, e.g. `pagelab rightsize -- xz -9 -k -c big.tar`, \
             or --pid PID / --cgroup PATH for a running service, or --synthetic-hot/--synthetic-cold",
        ));
    };
    if crate::kit::run::resolve_program(cmd).is_none() {
        return Err(usage(format!("cannot run '{cmd}': not found or not executable (looked in PATH)")));
    }
    Ok(a.command.clone())
}

/// The stores (and compressors) to run, each checked before anything
/// changes: one in service mode; `--compressor` only with a compressed store.
fn checked_arms(
    a: &RightsizeArgs,
    service: bool,
    p: &mut probe::Probe,
) -> crate::Result<Vec<(workloads::backing::BackingKind, Option<String>)>> {
    let arms = arms(&a.backing, a.compressor.as_ref().map(|c| c.0.as_slice()));
    if service && (a.backing.0.len() > 1 || a.compressor.as_ref().is_some_and(|c| c.0.len() > 1)) {
        return Err(usage(
            "--backing/--compressor: service mode takes one store and one algorithm; a list compares stores in batch \
             mode (-- CMD)",
        ));
    }
    if a.compressor.is_some() && arms.iter().all(|(_, c)| c.is_none()) {
        return Err(usage(
            "--compressor: none of the stores of --backing compresses (a compressor needs zram, zswap or auto)",
        ));
    }
    for (k, c) in &arms {
        workloads::backing::validate_with_dir(*k, c.as_deref(), &a.swapfile.swapfile_dir, p)
            .map_err(crate::Error::from)?;
    }
    Ok(arms)
}

/// The configuration a run records (run.json's `config`), by mode.
#[derive(serde::Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
enum Recorded {
    Service {
        pid: Option<i32>,
        cgroup: Option<std::path::PathBuf>,
        psi: f64,
        probe: Option<String>,
        probe_slowdown: f64,
        duration_s: f64,
        every_s: f64,
        step: f64,
        backing: workloads::backing::BackingKind,
        compressor: Option<String>,
    },
    Batch {
        command: Vec<String>,
        slowdown: f64,
        backing: workloads::backing::BackingKind,
        compressor: Option<String>,
        arms: Vec<(workloads::backing::BackingKind, Option<String>)>,
        budget_s: f64,
        runs: u32,
        repeat: u32,
        insist: bool,
        time_cap: f64,
        resolution: f64,
        guard_max_bytes: u64,
        synthetic_hot_bytes: Option<u64>,
        synthetic_cold_bytes: Option<u64>,
        synthetic_passes: Option<u64>,
        /// `--check`'s limits, as given (empty: a search).
        check: Vec<String>,
        node_memory_bytes: u64,
        node_swap_bytes: u64,
    },
}

impl Recorded {
    fn service(a: &RightsizeArgs, arms: &Arms) -> Recorded {
        Recorded::Service {
            pid: a.pid,
            cgroup: a.cgroup.clone(),
            psi: a.psi,
            probe: a.probe.clone(),
            probe_slowdown: a.probe_slowdown,
            duration_s: a.duration.as_secs_f64(),
            every_s: a.every.as_secs_f64(),
            step: a.step,
            backing: arms[0].0,
            compressor: arms[0].1.clone(),
        }
    }

    fn batch(a: &RightsizeArgs, command: &[String], arms: &Arms, guard_max: u64, node: Node) -> Recorded {
        Recorded::Batch {
            command: command.to_vec(),
            slowdown: a.slowdown,
            backing: arms[0].0,
            compressor: arms[0].1.clone(),
            arms: arms.to_vec(),
            budget_s: a.budget.as_secs_f64(),
            runs: a.runs,
            repeat: a.repeat,
            insist: a.insist,
            time_cap: a.time_cap,
            resolution: a.resolution,
            guard_max_bytes: guard_max,
            synthetic_hot_bytes: a.synthetic_hot,
            synthetic_cold_bytes: a.synthetic_cold,
            synthetic_passes: a.synthetic_hot.map(|_| a.synthetic_passes),
            check: a.check.as_ref().map(|c| c.0.iter().map(|l| l.1.clone()).collect()).unwrap_or_default(),
            node_memory_bytes: node.memory_bytes,
            node_swap_bytes: node.swap_bytes,
        }
    }
}

/// The node the Kubernetes terms are for: --node-memory and --node-swap
/// (both or neither), or this machine's MemTotal and SwapTotal.
fn node_of(a: &RightsizeArgs, m: &probe::meminfo::Meminfo) -> crate::Result<Node> {
    if a.node_memory.is_some() != a.node_swap.is_some() {
        return Err(usage("--node-memory and --node-swap go together: give both (e.g. --node-memory 16Gi --node-swap 4Gi)"));
    }
    if a.node_memory == Some(0) {
        return Err(usage("--node-memory: a node has memory; give its capacity, e.g. 16Gi"));
    }
    Ok(Node {
        memory_bytes: a.node_memory.unwrap_or_else(|| m.get("MemTotal").unwrap_or(0)),
        swap_bytes: a.node_swap.unwrap_or_else(|| m.get("SwapTotal").unwrap_or(0)),
        given: a.node_memory.is_some(),
    })
}

/// Every `--check` limit fits what a run may use here (the host guard's room).
fn check_fits(a: &RightsizeArgs, guard_max: u64) -> crate::Result<()> {
    match a.check.as_ref().and_then(|c| c.0.iter().find(|(b, _)| *b > guard_max)) {
        Some((b, asked)) => Err(usage(format!(
            "--check {asked}: {} MiB is more than the {} MiB a run may use here (the host guard's room): a limit that \
             large cannot be tested on this machine",
            b / MIB,
            guard_max / MIB
        ))),
        None => Ok(()),
    }
}

/// A run's stores: each a backing and its compressor.
type Arms = [(workloads::backing::BackingKind, Option<String>)];

pub fn run(a: &RightsizeArgs) -> crate::Result<()> {
    let service = a.pid.is_some() || a.cgroup.is_some();
    // The one reader of the host's files: validation and the run's read through it.
    let mut p = probe::Probe::default();
    let arms = checked_arms(a, service, &mut p)?;
    let m = p.meminfo()?.unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(a.run.host_floor, &m);
    let avail = m.get("MemAvailable").unwrap_or(0);
    // A fifth below the guard's room: a program that grows without bound meets
    // its group's limit (an OOM kill in the group) before the guard stops the run.
    let guard_max = avail.saturating_sub(guard.floor) / 5 * 4;
    let node = node_of(a, &m)?;
    let config;
    let mut mode = None;
    let mut batch = None;
    if service {
        let c = service_config(a);
        crate::rightsize::work::service::validate(&c, &mut p).map_err(crate::Error::from)?;
        config = Recorded::service(a, &arms);
        mode = Some(c);
    } else {
        let command = command(a)?;
        sandbox::privilege::require_admin(
            "creating a memory cgroup for each run",
            "rightsize's batch mode needs root; service mode (--pid) works on a process you own with --backing existing",
        )
        .map_err(crate::Error::from)?;
        if guard_max < 64 * MIB {
            return Err(usage(format!(
                "only {} MiB is available above the host guard's floor ({} MiB): too little to run a program in; \
                 free memory or lower --host-floor",
                avail / MIB,
                guard.floor / MIB
            )));
        }
        if let Some(h) = a.synthetic_hot {
            let total = h + a.synthetic_cold.unwrap_or(0);
            guard.check_plan(total as u128, "--synthetic-hot + --synthetic-cold", &m).map_err(crate::Error::from)?;
        }
        let search = SearchConfig {
            slowdown: a.slowdown,
            max_runs: a.runs,
            pairs: a.repeat,
            cap_factor: a.time_cap,
            resolution: a.resolution,
            budget_s: a.budget.as_secs_f64(),
            baselines: BASELINES,
            alpha: 0.05,
            insist: a.insist,
        };
        check_runs(a)?;
        check_fits(a, guard_max)?;
        config = Recorded::batch(a, &command, &arms, guard_max, node);
        batch = Some(
            arms.iter()
                .map(|(k, c)| BatchConfig {
                    command: command.clone(),
                    search,
                    backing: *k,
                    compressor: c.clone(),
                    swapfile_dir: a.swapfile.swapfile_dir.clone(),
                    guard_max,
                    synthetic: a.synthetic_hot.zip(a.synthetic_cold),
                    node,
                })
                .collect::<Vec<_>>(),
        );
    }
    let run = ExperimentRun::start("rightsize", &a.run, &config, &mut p)?;
    let mut unverified: Vec<String> = Vec::new();
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let r = match (&mode, &batch) {
            (Some(c), _) => {
                rs::service::run(c, &mut obs, &record::stop::requested).and_then(|r| obs.result(&r)).map_err(crate::Error::from)
            }
            (_, Some(bs)) => batch_arms(bs, a.check.as_ref(), &mut unverified, &mut obs),
            _ => unreachable!("one mode"),
        };
        (r, obs.into_entries())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::rightsize::report::Rightsize,
        |entries| crate::kit::run::Doc { experiment: "rightsize", results: entries.to_vec() },
        |results| {
            format!(
                "{}\npublished figures beside ours:\n{}",
                crate::rightsize::report::text_table(results),
                crate::rightsize::report::reference_markdown(results)
            )
        },
    )?;
    if unverified.is_empty() {
        Ok(())
    } else {
        Err(crate::Error::Unverified(format!(
            "--check: not verified within {:.0} %: {} (exit code 3; the answers are above)",
            a.slowdown * 100.0,
            unverified.join(", ")
        )))
    }
}

/// `--runs` leaves room for the unlimited runs and a first look (a check:
/// one at each limit); refused in one line otherwise.
fn check_runs(a: &RightsizeArgs) -> crate::Result<()> {
    // The baselines, one probe pair and a verification's first look (a
    // check: each limit's first look).
    let limits = a.check.as_ref().map_or(0, |c| c.0.len() as u32);
    let least =
        if limits > 0 { BASELINES + 2 * a.repeat * limits } else { BASELINES + 2 + 2 * a.repeat };
    if a.runs < least {
        return Err(usage(format!(
            "--runs {} leaves no room for {BASELINES} unlimited runs and {}: give --runs {least} or more",
            a.runs,
            if limits > 0 {
                format!("a first look of --repeat {} pairs at each of {limits} limits", a.repeat)
            } else {
                format!("a probe and a verification of --repeat {} pairs", a.repeat)
            }
        )));
    }
    Ok(())
}

/// Each arm's search in turn (a store, and its compressor), each result
/// written as it ends; with more than one, which needs least memory in all.
fn batch_arms(
    bs: &[BatchConfig],
    check: Option<&CheckLimits>,
    unverified: &mut Vec<String>,
    obs: &mut RunObserver<RightsizeResult>,
) -> crate::Result<()> {
    for (i, b) in bs.iter().enumerate() {
        let label = format!(
            "store {} of {}: {}{}",
            i + 1,
            bs.len(),
            format!("{:?}", b.backing).to_lowercase(),
            b.compressor.as_deref().map(|c| format!(" {c}")).unwrap_or_default()
        );
        if bs.len() > 1 {
            say::errln!("pagelab: {label}");
        }
        // A store that fails ends the run with the stores before it kept,
        // and says which it was and that the rest did not run.
        let r = match check {
            Some(c) => rs::check(b, &c.0, obs, &record::stop::requested),
            None => rs::run(b, obs, &record::stop::requested),
        };
        let r = r.map_err(|e| {
            let e = crate::Error::from(e);
            if bs.len() > 1 && i + 1 < bs.len() {
                e.context(format!("{label} (the {} after it did not run)", bs.len() - i - 1))
            } else if bs.len() > 1 {
                e.context(label.clone())
            } else {
                e
            }
        })?;
        unverified.extend(r.checks.iter().filter(|c| c.answer != CheckAnswer::Verified).map(|c| c.asked.clone()));
        obs.result(&r).map_err(crate::Error::from)?;
    }
    Ok(())
}

/// The lab's `rightsize` step: pagelab's hot/cold program (64 MiB hot, 192
/// MiB cold), whose answer is known, in the full lab; the quick lab leaves it
/// out (a dozen runs of a program do not fit its budget).
pub fn lab_step(m: &Machine, scale: Scale, _budget: Option<f64>) -> Step {
    let s = if scale == Scale::Smoke {
        // A small program with a sharp knee, a handful of short runs (the
        // fewest pairs of 2 the command takes): the step and its report
        // section, not a recommendation worth keeping.
        let args = RightsizeLab {
            synthetic_hot: Some(Size(8 * MIB)),
            synthetic_cold: Some(Size(24 * MIB)),
            synthetic_passes: 12_000,
            slowdown: 0.5,
            runs: 10,
            insist: true,
            time_cap: 3.0,
            budget: Dur(Duration::from_secs(600)),
        };
        // `--repeat`: the pairs of a look.
        args.step(Some(2), 20.0)
    } else {
        let args = RightsizeLab {
            synthetic_hot: Some(Size(64 * MIB)),
            synthetic_cold: Some(Size(192 * MIB)),
            synthetic_passes: 8000,
            slowdown: 0.2,
            runs: 40,
            insist: false,
            time_cap: 2.0,
            budget: Dur(Duration::from_secs(240)),
        };
        args.step(None, 240.0)
    };
    if scale == Scale::Quick {
        skip(s, "the full lab runs it: two dozen runs of a program take about four minutes")
    } else if !m.root {
        skip(s, "needs root: each run goes in a memory cgroup made for it")
    } else {
        s
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

/// `--backing` of rightsize: `disk` is a swap file made for the run.
fn parse_rightsize_backing(s: &str) -> Result<workloads::backing::BackingKind, String> {
    match s {
        "disk" => Ok(workloads::backing::BackingKind::Swapfile),
        _ => workloads::backing::BackingKind::parse(s).ok_or_else(|| {
            format!(
                "unknown backing '{s}': expected auto, zram, zswap, disk (a swap file), existing or none, or a \
                 comma-separated list such as zram,zswap,disk"
            )
        }),
    }
}

/// `--backing`: one store, or a comma-separated list of them to compare
/// (batch mode), each at most once.
#[derive(Debug, Clone, PartialEq)]
pub struct Backings(pub Vec<workloads::backing::BackingKind>);

fn parse_rightsize_backings(s: &str) -> Result<Backings, String> {
    use workloads::backing::BackingKind as K;
    let mut v: Vec<K> = Vec::new();
    for p in s.split(',').map(str::trim) {
        let k = parse_rightsize_backing(p)?;
        if v.contains(&k) {
            return Err(format!("'{p}' is listed twice (disk is the swap file)"));
        }
        v.push(k);
    }
    if v.len() > 1 && v.iter().any(|k| matches!(k, K::Auto | K::None)) {
        return Err(format!(
            "'{s}': auto and none cannot be compared with other stores; list the stores themselves, e.g. zram,zswap,disk"
        ));
    }
    Ok(Backings(v))
}

/// `--compressor`: one algorithm, or a comma-separated list, each tried with
/// every compressed store (zram, zswap) of `--backing`.
#[derive(Debug, Clone, PartialEq)]
pub struct Compressors(pub Vec<String>);

fn parse_compressors(s: &str) -> Result<Compressors, String> {
    let mut v: Vec<String> = Vec::new();
    for p in s.split(',').map(str::trim) {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || p.len() > 32 {
            return Err(format!(
                "'{p}' is not a compressor name: expected names such as lz4, lzo-rle or zstd, comma-separated"
            ));
        }
        if v.iter().any(|x| x == p) {
            return Err(format!("'{p}' is listed twice"));
        }
        v.push(p.to_string());
    }
    Ok(Compressors(v))
}

/// The arms a batch run compares: each store of `--backing`, and for a
/// compressed store (zram, zswap) each `--compressor`, in the order given.
pub fn arms(b: &Backings, compressors: Option<&[String]>) -> Vec<(workloads::backing::BackingKind, Option<String>)> {
    use workloads::backing::BackingKind as K;
    let mut out = Vec::new();
    for &k in &b.0 {
        match compressors {
            Some(cs) if matches!(k, K::Zram | K::Zswap | K::Auto) => {
                out.extend(cs.iter().map(|c| (k, Some(c.clone()))));
            }
            _ => out.push((k, None)),
        }
    }
    out
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

/// The lab's rightsize step, typed: the flags the lab sets, rendered and
/// read back through [`RightsizeArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RightsizeLab {
    pub synthetic_hot: Option<Size>,
    pub synthetic_cold: Option<Size>,
    pub synthetic_passes: u64,
    pub slowdown: f64,
    pub runs: u32,
    pub insist: bool,
    pub time_cap: f64,
    pub budget: Dur,
}

impl LabArgs for RightsizeLab {
    type Cli = RightsizeArgs;
    const EXPERIMENT: &'static str = "rightsize";
    fn from_cli(a: RightsizeArgs) -> RightsizeLab {
        RightsizeLab {
            synthetic_hot: a.synthetic_hot.map(Size),
            synthetic_cold: a.synthetic_cold.map(Size),
            synthetic_passes: a.synthetic_passes,
            slowdown: a.slowdown,
            runs: a.runs,
            insist: a.insist,
            time_cap: a.time_cap,
            budget: Dur(a.budget),
        }
    }
}

#[derive(Debug, Args)]
#[command(mut_arg("interval", |a| a.default_value("200ms")))]
pub struct RightsizeArgs {
    /// The slowdown you accept: the recommended limit's runtime, over unlimited,
    /// has its 95 % upper bound within 1 + this.
    #[arg(long, default_value = "20%", value_parser = parse_positive_share, allow_hyphen_values = true)]
    pub slowdown: f64,
    /// What takes the pages that do not fit under a limit: auto, zram, zswap,
    /// disk (a swap file), existing (the swap already on), none.
    /// Batch mode compares stores given as a list (zram,zswap,disk): the
    /// search runs once for each, and the answer says which needs least memory
    /// in all.
    #[arg(long, default_value = "auto", value_parser = parse_rightsize_backings)]
    pub backing: Backings,
    /// zram or zswap algorithm; in batch mode a list (lz4,zstd) is tried with
    /// each compressed store.
    #[arg(long, value_parser = parse_compressors)]
    pub compressor: Option<Compressors>,
    /// Wall time for the whole search, verification included.
    #[arg(long, default_value = "10m", value_parser = units::parse_positive_duration, allow_hyphen_values = true)]
    pub budget: Duration,
    /// Runs of the program in all (baseline, search and verification), at
    /// most; --budget may buy fewer.
    #[arg(long, default_value_t = 40, value_parser = units::uint32::<4, 1000>, allow_hyphen_values = true)]
    pub runs: u32,
    /// Pairs (unlimited and limited, side by side) before a verification's
    /// first look; later looks come after about half as many again.
    #[arg(long, default_value_t = 3, value_parser = units::uint32::<2, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// Go on when the plan (made from the unlimited runs' spread) says the
    /// budget cannot verify --slowdown; without it rightsize stops there with
    /// the safe answer and the target the budget can verify.
    #[arg(long)]
    pub insist: bool,
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
    /// Check these limits instead of searching: is each safe within
    /// --slowdown? Kubernetes quantities read as Kubernetes reads them (512Mi,
    /// 1Gi, 1G = 10^9 bytes) or pagelab sizes ending in iB (512MiB), comma
    /// separated. Each gets pairs under the verification's rules and its own
    /// share of the budget; exit code 3 when one is not verified.
    #[arg(long, value_parser = parse_check, allow_hyphen_values = true, conflicts_with_all = ["pid", "cgroup"])]
    pub check: Option<CheckLimits>,
    /// The node for the Kubernetes terms (LimitedSwap's arithmetic): its
    /// memory capacity (give --node-swap with it, or neither: this machine's
    /// MemTotal and SwapTotal).
    #[arg(long, value_parser = parse_node_size, allow_hyphen_values = true)]
    pub node_memory: Option<u64>,
    /// ... and its swap (with --node-memory, or neither).
    #[arg(long, value_parser = parse_node_size, allow_hyphen_values = true)]
    pub node_swap: Option<u64>,
    /// The command to size (after --).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `--check`'s limits: bytes, and each as the user wrote it.
#[derive(Debug, Clone)]
pub struct CheckLimits(pub Vec<(u64, String)>);

fn parse_check(s: &str) -> Result<CheckLimits, String> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for part in s.split(',') {
        let b = crate::rightsize::kube::parse_quantity(part)?;
        if b < MIB {
            return Err(format!("'{part}' is under a MiB: no program runs in that"));
        }
        if out.iter().any(|(x, _)| x.div_ceil(MIB) == b.div_ceil(MIB)) {
            return Err(format!("'{part}' is given twice (limits are whole MiB)"));
        }
        out.push((b, part.trim().to_string()));
    }
    if out.len() > 8 {
        return Err(format!("{} limits: at most 8 at a time (each takes its share of the budget)", out.len()));
    }
    Ok(CheckLimits(out))
}

/// A node size: a Kubernetes quantity or a pagelab size (0 swap allowed).
fn parse_node_size(s: &str) -> Result<u64, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    crate::rightsize::kube::parse_quantity(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::backing::BackingKind as K;

    #[test]
    fn a_list_of_stores_and_compressors_makes_the_arms_in_order() {
        let b = parse_rightsize_backings("zram,zswap,disk").unwrap();
        assert_eq!(b.0, [K::Zram, K::Zswap, K::Swapfile]);
        let c = parse_compressors("lz4,zstd").unwrap();
        let a = arms(&b, Some(&c.0));
        let want: Vec<(K, Option<String>)> = vec![
            (K::Zram, Some("lz4".into())),
            (K::Zram, Some("zstd".into())),
            (K::Zswap, Some("lz4".into())),
            (K::Zswap, Some("zstd".into())),
            (K::Swapfile, None),
        ];
        assert_eq!(a, want);
        // No compressor: one arm per store, each with the kernel's default.
        assert_eq!(arms(&b, None).len(), 3);
        // Refused: a store twice (disk is the swap file), auto or none among
        // others, an empty name, a compressor name that is not one.
        for bad in ["zram,zram", "disk,swapfile", "auto,zram", "zram,none", "zram,", "floppy"] {
            assert!(parse_rightsize_backings(bad).is_err(), "{bad}");
        }
        for bad in ["lz4,lz4", "lz4;rm", "", "a b", &"x".repeat(40)] {
            assert!(parse_compressors(bad).is_err(), "{bad}");
        }
        // One store alone may be auto or none.
        assert_eq!(parse_rightsize_backings("none").unwrap().0, [K::None]);
    }
}
