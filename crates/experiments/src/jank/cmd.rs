//! `pagelab jank`: glue between the CLI, the experiment, the run directory and
//! the report.

use crate::jank::results::{Config, JankResult};
use crate::jank::work::{Arm, JankConfig, Store};
use crate::kit::cli::{RunArgs, SwapfileArgs};
use crate::kit::lab_args::LabArgs;
use crate::kit::plan::{Machine, Scale, skip, step};
use crate::kit::run::{ExperimentRun, RunObserver, conclude};
use crate::kit::units;
use crate::thrash::work::{AfterLoad, PlanExt, ThrashConfig};
use clap::Args;
use report::lab::Step;
use serde::Serialize;
use std::time::Duration;
use workloads::backing::BackingKind;

/// The arms: stores, each crossed with every swappiness and page-cluster
/// given, zswap's also with every shrinker setting (the CPU-only control
/// once, under the kernel's own settings).
pub fn arms(a: &JankArgs) -> Vec<Arm> {
    let sw: Vec<Option<u32>> = if a.swappiness.is_empty() { vec![None] } else { a.swappiness.iter().map(|&s| Some(s)).collect() };
    let pc: Vec<Option<u32>> =
        if a.page_cluster.is_empty() { vec![None] } else { a.page_cluster.iter().map(|&s| Some(s)).collect() };
    let ttl: Vec<Option<u32>> =
        if a.min_ttl_ms.is_empty() { vec![None] } else { a.min_ttl_ms.iter().map(|&s| Some(s)).collect() };
    let mut v = Vec::new();
    for store in &a.arms.0 {
        if *store == Store::CpuOnly {
            v.push(Arm::of(Store::CpuOnly));
            continue;
        }
        // zswap's shrinker is crossed into zswap's arms alone.
        let shrink: Vec<Option<bool>> = match store {
            Store::Zswap(_) if !a.zswap_shrinker.is_empty() => a.zswap_shrinker.iter().map(|&x| Some(x.0)).collect(),
            _ => vec![None],
        };
        for s in &sw {
            for p in &pc {
                for t in &ttl {
                    for &z in &shrink {
                        v.push(Arm {
                            store: store.clone(),
                            swappiness: *s,
                            page_cluster: *p,
                            min_ttl_ms: *t,
                            zswap_shrinker: z,
                        });
                    }
                }
            }
        }
    }
    v
}

fn config(a: &JankArgs, p: &probe::Probe) -> crate::Result<JankConfig> {
    let hog = ThrashConfig {
        presets: vec![a.preset.clone()],
        consumers: a.consumers,
        size: None,
        writes: None,
        sleep: None,
        stagger: None,
        initial_delay: Duration::from_secs(10),
        limit: None,
        // Each arm's store is its own (validate checks them).
        backings: vec![],
        scale: a.scale,
        time_scale: Some(a.time_scale),
        repeat: a.repeat,
        exe: std::env::current_exe()?,
        host_floor: a.run.host_floor,
        swapfile_dir: a.swapfile.swapfile_dir.clone(),
        after_load: AfterLoad::Falls,
        cpu_only: false,
    };
    let command = match (a.command.first(), a.limit) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(crate::kit::usage(
                "--limit: a command of your own needs the group's limit, e.g. `pagelab jank --limit 512MiB -- CMD`",
            ));
        }
        (Some(prog), Some(limit)) => {
            if crate::kit::run::resolve_program(prog).is_none() {
                return Err(crate::kit::usage(format!("cannot run '{prog}': not found or not executable (looked in PATH)")));
            }
            Some(crate::jank::command::CommandHog {
                argv: a.command.clone(),
                limit,
                store: a.store_size.unwrap_or(2 * limit),
                timeout: a.timeout,
                watch: a.watch,
            })
        }
    };
    Ok(JankConfig {
        hog,
        command,
        arms: arms(a),
        repeat: a.repeat,
        period: a.frame,
        share: a.share,
        cpu_only: a.cpu_only,
        zram_offers: sandbox::zram::algorithms(&p.roots().sys).unwrap_or_default(),
        swap_iops: a.swap_iops,
    })
}

/// Checks everything before any change: thrash's checks of the hog, then
/// each arm's store and settings.
fn validate(cfg: &JankConfig, a: &JankArgs, p: &mut probe::Probe) -> crate::Result<()> {
    use sandbox::SandboxError::{Invalid, Unsupported};
    for (flag, v) in [("--swappiness", &a.swappiness), ("--page-cluster", &a.page_cluster), ("--min-ttl-ms", &a.min_ttl_ms)] {
        if let Some(x) = v.iter().find(|x| v.iter().filter(|y| y == x).count() > 1) {
            return Err(Invalid(format!("{flag}: {x} is listed twice; each value makes one arm")).into());
        }
    }
    if !a.zswap_shrinker.is_empty() {
        let z = &a.zswap_shrinker;
        if z.len() > 2 || (z.len() == 2 && z[0] == z[1]) {
            return Err(Invalid("--zswap-shrinker: expected on, off or on,off, each once".into()).into());
        }
        if !a.arms.0.iter().any(|s| matches!(s, Store::Zswap(_))) {
            return Err(Invalid("--zswap-shrinker: it is crossed into zswap's arms, and --arms has none".into()).into());
        }
        let params = p.roots().sys.join("module/zswap/parameters");
        if !params.exists() {
            return Err(Unsupported("--zswap-shrinker: zswap is not built into this kernel".into()).into());
        }
        let f = params.join("shrinker_enabled");
        if !f.exists() {
            return Err(Unsupported(format!(
                "--zswap-shrinker: this kernel's zswap has no shrinker ({}; it came with Linux 6.8)",
                f.display()
            ))
            .into());
        }
    }
    if a.swap_iops.is_some() {
        if !a.arms.0.contains(&Store::Swapfile) {
            return Err(Invalid("--swap-iops: it slows the disk under the swapfile arm's file, and --arms has none".into())
                .into());
        }
        let dir = &cfg.hog.swapfile_dir;
        sandbox::disk::disk_of(&p.roots().sys, dir)
            .and_then(|_| sandbox::disk::io_limit_support(p))
            .map_err(|e| Unsupported(format!("--swap-iops: {e}")))?;
    }
    if let Some(&v) = a.swappiness.iter().find(|&&v| v > 100) {
        let release = p.kernel_release();
        if !swappiness_above_100(&release) {
            return Err(Invalid(format!(
                "--swappiness {v}: this kernel ({}) takes 0 to 100; values up to 200 came with Linux 5.8",
                if release.is_empty() { "its release unread" } else { release.as_str() }
            ))
            .into());
        }
    }
    let plans = match &cfg.command {
        None => crate::thrash::work::validate_hog(&cfg.hog, p)?,
        Some(_) => {
            sandbox::privilege::require_admin(
                "creating the memory cgroup that contains the command",
                "pagelab jank needs root (CAP_SYS_ADMIN) to contain a command in a memory cgroup",
            )?;
            vec![]
        }
    };
    for arm in &cfg.arms {
        validate_arm(cfg, arm, p)?;
    }
    if let Some(h) = &cfg.command {
        return validate_command(cfg, h, p);
    }
    // What a run takes from the host at most: thrash's plan, the two frame
    // probes' working sets and the store's room for them and the workers.
    let plan = plans.first().cloned().unwrap_or_else(|| cfg.plan(&cfg.arms[0]));
    let extra = 2 * cfg.ws() as u128 + cfg.store_extra(&plan) as u128 * 9 / 8;
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    sandbox::guard::HostGuard::new(cfg.hog.host_floor, &meminfo).check_plan(plan.planned_bytes() + extra, "jank", &meminfo)?;
    // Every frame is kept until the run ends: bounded, so that the probe's
    // own log neither grows into the group's memory nor past a reply.
    let run_s = plan.baseline().as_secs_f64() + plan.planned_duration_ms / 1e3 + 90.0;
    let frames = run_s / cfg.period.as_secs_f64();
    if frames > MAX_FRAMES {
        return Err(Invalid(format!(
            "--frame {:?} with --time-scale {}: about {frames:.0} frames a run, more than the {MAX_FRAMES:.0} a probe keeps; \
             give a longer frame or a smaller time factor",
            cfg.period, a.time_scale
        ))
        .into());
    }
    Ok(())
}

/// One arm's store and settings, checked on the machine `p` reads.
fn validate_arm(cfg: &JankConfig, arm: &Arm, p: &mut probe::Probe) -> crate::Result<()> {
    use sandbox::SandboxError::{Invalid, Unsupported};
    let sys = p.roots().sys.clone();
    let sys = sys.as_path();
    let (kind, comp) = arm.backing();
    let name = arm.name();
    match kind {
        BackingKind::Zram if !sandbox::zram::can_add(sys) => {
            return Err(Unsupported(format!(
                "--arms {name}: zram cannot add a device here (is the zram module loaded? `modprobe zram`)"
            ))
            .into());
        }
        BackingKind::Zswap if !sys.join("module/zswap/parameters/enabled").exists() => {
            return Err(Unsupported(format!("--arms {name}: zswap is not built into this kernel")).into());
        }
        _ => {}
    }
    if kind != BackingKind::None {
        workloads::backing::validate_with_dir(kind, comp, &cfg.hog.swapfile_dir, p)
            .map_err(|e| Invalid(format!("--arms {name}: {}", e.to_string().trim_start_matches("--compressor "))))?;
        // The store the arm's runs make ([`crate::jank::command`] and
        // thrash's run take the same capacities).
        let capacity = match &cfg.command {
            Some(h) => h.store,
            None => {
                let plan = cfg.plan(arm);
                plan.consumers as u64 * plan.size_bytes + cfg.store_extra(&plan)
            }
        };
        workloads::backing::check_room(kind, capacity, &cfg.hog.swapfile_dir, p)
            .map_err(|e| Invalid(format!("--arms {name}: {e}")))?;
    }
    if arm.min_ttl_ms.is_some() && !sys.join("kernel/mm/lru_gen/min_ttl_ms").exists() {
        return Err(Unsupported(
            "--min-ttl-ms: this kernel has no multi-generational LRU (/sys/kernel/mm/lru_gen/min_ttl_ms)".into(),
        )
        .into());
    }
    for (k, _) in arm.sysctls() {
        let path = std::path::Path::new("/proc/sys").join(k.replace('.', "/"));
        if !path.exists() {
            let flag = if k == "vm.swappiness" { "--swappiness" } else { "--page-cluster" };
            return Err(Unsupported(format!("{flag}: {k} does not exist on this kernel")).into());
        }
    }
    Ok(())
}

/// Whether a kernel of this release (`uname -r`) takes vm.swappiness above
/// 100 (Linux 5.8 and later); an unread or unparsable release does not.
fn swappiness_above_100(release: &str) -> bool {
    let mut n = release.split(|c: char| !c.is_ascii_digit()).map(|x| x.parse::<u32>().ok());
    match (n.next().flatten(), n.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (5, 8),
        _ => false,
    }
}

/// The most frames one probe keeps in a run (16 bytes each).
const MAX_FRAMES: f64 = 2_000_000.0;

/// A user's command as the hog: what a run takes from the host at most (the
/// CPU-only control's group holds the limit and the store's room; a
/// compressed store's RAM is at most the room; the probe outside the group
/// has its own working set), and the frames a run can record.
fn validate_command(cfg: &JankConfig, h: &crate::jank::command::CommandHog, p: &mut probe::Probe) -> crate::Result<()> {
    use sandbox::SandboxError::Invalid;
    if p.memory_controller().ok().flatten().is_none() {
        return Err(sandbox::SandboxError::Unsupported(
            "jank -- CMD: no memory cgroup controller here; the command must be contained".into(),
        )
        .into());
    }
    // A compressed store's RAM, at most what it is made to hold: the room
    // and the margin `backing::setup` gives it (an eighth and 16 MiB).
    let compressed = cfg.arms.iter().any(|a| matches!(a.store, Store::Zram(_) | Store::Zswap(_)));
    let store_ram = if compressed { h.store as u128 * 9 / 8 + (16u128 << 20) } else { 0 };
    let most = h.limit as u128 + h.store as u128 + store_ram + cfg.ws() as u128 + (64u128 << 20);
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    sandbox::guard::HostGuard::new(cfg.hog.host_floor, &meminfo).check_plan(
        most,
        "jank -- CMD (--limit, --store-size)",
        &meminfo,
    )?;
    let run_s = (crate::jank::command::BEFORE + h.timeout + h.watch).as_secs_f64();
    let frames = run_s / cfg.period.as_secs_f64();
    if frames > MAX_FRAMES {
        return Err(Invalid(format!(
            "--timeout {:?} with --frame {:?}: up to {frames:.0} frames a run, more than the {MAX_FRAMES:.0} a probe keeps; \
             give a shorter --timeout or a longer --frame",
            h.timeout, cfg.period
        ))
        .into());
    }
    Ok(())
}

pub fn run(a: &JankArgs) -> crate::Result<()> {
    // The command's one reader of the machine: its edge.
    let mut p = probe::Probe::default();
    let cfg = config(a, &p)?;
    validate(&cfg, a, &mut p)?;
    let plan = cfg.plan(&cfg.arms[0]);
    let per = plan.baseline().as_secs_f64() + plan.planned_duration_ms / 1e3 + 22.0;
    let config = Config {
        arms: cfg.arms.iter().map(Arm::name).collect(),
        repeat: a.repeat,
        hog: cfg.command.is_none().then_some(plan),
        command: a.command.clone(),
        limit_bytes: cfg.command.as_ref().map(|h| h.limit),
        store_bytes: cfg.command.as_ref().map(|h| h.store),
        frame_ms: a.frame.as_secs_f64() * 1e3,
        share: a.share,
        ws_bytes: cfg.ws(),
        touch_pages: cfg.touch_pages(),
        work: crate::jank::work::FRAME_WORK,
        swap_iops: a.swap_iops,
    };
    let run = ExperimentRun::start_with("jank", &a.run, &config, true, &mut p)?;
    let runs = cfg.arms.len() as u32 * a.repeat;
    match &cfg.command {
        None => run.note(&format!(
            "expected time: about {:.0} min ({} arm(s) × {} repeat(s), about {per:.0} s each); Ctrl-C stops and restores everything",
            per * runs as f64 / 60.0,
            cfg.arms.len(),
            a.repeat
        )),
        Some(h) => run.note(&format!(
            "{runs} runs ({} arm(s) × {} repeat(s)), each the command's own time plus about {:.0} s (at most {:.0} s with \
             --timeout); Ctrl-C stops and restores everything",
            cfg.arms.len(),
            a.repeat,
            (crate::jank::command::BEFORE + h.watch).as_secs_f64() + 3.0,
            (h.timeout + crate::jank::command::BEFORE + h.watch).as_secs_f64() + 3.0
        )),
    }
    let (r, entries) = {
        let mut obs = RunObserver::new(&run, true);
        let r = crate::jank::work::run(&cfg, &mut obs, record::stop::requested).map_err(crate::Error::from);
        (r, obs.into_entries().into_iter().map(|e| e.result).collect())
    };
    conclude(
        run,
        r,
        entries,
        a.run.json,
        &crate::jank::report::Jank,
        |all| Output {
            experiment: "jank",
            answer: crate::jank::report::answer(all),
            results: all.iter().map(|r| JankResult { inside: no_series(&r.inside), outside: no_series(&r.outside), ..r.clone() }).collect(),
        },
        |all| {
            format!(
                "{}\n\n{}\n{}",
                crate::jank::report::answer(all),
                crate::jank::report::arms_markdown(all),
                crate::jank::report::findings_markdown(all)
            )
        },
    )
}

fn no_series(p: &crate::jank::results::ProbeFigures) -> crate::jank::results::ProbeFigures {
    crate::jank::results::ProbeFigures { series: vec![], ..p.clone() }
}

/// A run's expected time: per arm and repeat, the baseline, thrash's e2
/// (the initial delay, N − 1 staggers and t_p = (N + 1) t_c at the time
/// factor) and about 22 s of baseline, recovery watch and setup (a zswap
/// arm often waits out its 60 s watch: the default run's 16 runs took 14 min
/// 32 s on the 2-vCPU VM, 54.5 s each).
fn expect_s(arms: usize, n: f64, time_scale: f64, rep: u32) -> f64 {
    (arms as f64) * rep as f64 * per_run(n, time_scale)
}

fn per_run(n: f64, time_scale: f64) -> f64 {
    (2.0 * n * 30.0 + 10.0) * time_scale + 22.0
}

/// A budgeted lab's jank: the study's e2 (25 consumers) at a size factor of
/// 0.02 and a time factor of 0.02, zram (lz4), zswap, a swap file and the
/// CPU-only control, four repeats (one Williams square).
pub fn budgeted() -> Step {
    let (rep, ts) = (4u32, 0.02);
    JankLab::new(ALL_ARMS, None, 0.02, ts).step(Some(rep), expect_s(4, 25.0, ts, rep))
}

/// The default arms (`--arms`' default).
const ALL_ARMS: &str = "zram:lz4,zswap,swapfile,cpu-only";

/// The lab's jank step, typed: the flags the lab sets (and its controls
/// change), rendered and read back through [`JankArgs`] ([`LabArgs`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JankLab {
    pub arms: Vec<Store>,
    pub consumers: Option<u32>,
    pub scale: f64,
    pub time_scale: f64,
    /// Settings crossed into every arm (none in the lab).
    pub swappiness: Vec<u32>,
    pub page_cluster: Vec<u32>,
    pub min_ttl_ms: Vec<u32>,
    /// Every arm under the CPU-only limit (nothing pages: a baseline).
    pub cpu_only: bool,
    /// The swap file's disk slowed to this many I/Os a second
    /// (jank.zram_tenfold's positive control).
    pub swap_iops: Option<u64>,
}

impl JankLab {
    /// `arms` (as `--arms` takes them, from the lab's own lists).
    fn new(arms: &str, consumers: Option<u32>, scale: f64, time_scale: f64) -> JankLab {
        JankLab {
            arms: parse_stores(arms).expect("the lab's arms").0,
            consumers,
            scale,
            time_scale,
            swappiness: vec![],
            page_cluster: vec![],
            min_ttl_ms: vec![],
            cpu_only: false,
            swap_iops: None,
        }
    }
}

impl LabArgs for JankLab {
    type Cli = JankArgs;
    const EXPERIMENT: &'static str = "jank";
    fn from_cli(a: JankArgs) -> JankLab {
        JankLab {
            arms: a.arms.0,
            consumers: a.consumers,
            scale: a.scale,
            time_scale: a.time_scale,
            swappiness: a.swappiness,
            page_cluster: a.page_cluster,
            min_ttl_ms: a.min_ttl_ms,
            cpu_only: a.cpu_only,
            swap_iops: a.swap_iops,
        }
    }
}

/// Whether a lab step with these arguments judges finding `id`: it runs
/// both arms the finding compares, under their own names (no setting
/// crossed in), not all under the CPU-only limit and not on a slowed drive. The lab's simulation
/// (src/lab_sim.rs) simulates only these.
pub fn judged_in(args: &JankLab, id: &str) -> bool {
    let Some((a, b)) = crate::jank::report::arms_of(id) else { return false };
    let has = |x: &str| args.arms.iter().any(|s| Arm::of(s.clone()).name() == x);
    let crossed = !(args.swappiness.is_empty() && args.page_cluster.is_empty() && args.min_ttl_ms.is_empty());
    has(a) && has(b) && !args.cpu_only && args.swap_iops.is_none() && !crossed
}

/// The least `lab --budget` that lets jank into a quick lab: thrash's
/// budget and jank's own step, in whole minutes.
pub fn quick_budget_s() -> f64 {
    ((crate::thrash::cmd::quick_budget_s() + budgeted().expect_s) / 60.0).ceil() * 60.0
}

/// The lab's `jank` step for this machine.
pub fn lab_step(m: &Machine, scale: Scale, budget: Option<f64>) -> Step {
    if !m.root {
        return skip(
            step("jank", vec![], 0.0),
            "needs root: the hog must be contained in a memory cgroup, and pagelab never thrashes the host itself",
        );
    }
    match scale {
        Scale::Quick => match budget {
            Some(b) if b >= quick_budget_s() => budgeted(),
            _ => skip(
                step("jank", vec![], 0.0),
                &format!(
                    "the quick lab's five minutes are spent: jank needs about {:.0} min (four arms × four repeats of \
                     thrash's e2); `pagelab lab --budget {:.0}m` runs it with thrash",
                    (budgeted().expect_s / 60.0).ceil(),
                    quick_budget_s() / 60.0
                ),
            ),
        },
        Scale::Full => {
            let (rep, ts) = (4u32, 0.05);
            JankLab::new(ALL_ARMS, None, 0.1, ts).step(Some(rep), expect_s(4, 25.0, ts, rep))
        }
        // Smoke: four consumers at a fiftieth of the sizes and a hundredth
        // of the times, once, on a swap file and the CPU-only control: the
        // step and every part of its report (outside the protocol: four
        // consumers are not the study's 25).
        Scale::Smoke => JankLab::new("swapfile,cpu-only", Some(4), 0.02, 0.01).step(
            Some(1),
            // Both runs took 20.2 s together on the 2-vCPU VM (2026-11-29):
            // four consumers never hold the watch open.
            2.0 * 10.5,
        ),
    }
}

// Its command-line arguments (its subcommand, under its name in `crate::ALL`).

/// The arms' stores: a comma-separated list.
#[derive(Debug, Clone)]
pub struct StoreList(pub Vec<Store>);

fn parse_stores(s: &str) -> Result<StoreList, String> {
    let mut v = Vec::new();
    for p in s.split(',').map(str::trim) {
        let st = Arm::parse_store(p)?;
        if v.contains(&st) {
            return Err(format!("'{p}' is listed twice"));
        }
        v.push(st);
    }
    Ok(StoreList(v))
}

fn parse_preset(s: &str) -> Result<String, String> {
    match crate::thrash::work::parse_presets(s)?.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("'{s}': expected one of thrash's presets as the hog: e1, e2, e3 or e4")),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match crate::kit::cli::parse_share(s) {
        Ok(f) if f > 0.0 && f <= 0.5 => Ok(f),
        _ => Err(format!("'{s}': expected a share of the room above 0 and at most 0.5, e.g. 0.25 or 25%")),
    }
}

fn parse_frame(s: &str) -> Result<Duration, String> {
    match units::parse_positive_duration(s) {
        Ok(d) if d >= Duration::from_millis(1) && d <= Duration::from_secs(1) => Ok(d),
        _ => Err(format!("'{s}': expected a frame period from 1ms to 1s, e.g. 16.7ms (60 Hz)")),
    }
}

/// A size from `lo` to `hi` bytes, or a message naming the range (`what`
/// and its bounds as a user types them).
fn size_within(s: &str, (lo, hi): (u64, u64), range: &str) -> Result<u64, String> {
    let b = units::parse_size(s)?;
    if (lo..=hi).contains(&b) { Ok(b) } else { Err(format!("'{s}': expected {range}")) }
}

/// A group's limit for a user's command: from 16 MiB (the frame probe and
/// a program need room) to 1 TiB.
fn parse_limit(s: &str) -> Result<u64, String> {
    size_within(s, (16 << 20, 1 << 40), "a limit from 16MiB to 1TiB")
}

/// A store's room for a user's command: from 1 MiB to 1 TiB.
fn parse_store_size(s: &str) -> Result<u64, String> {
    size_within(s, (1 << 20, 1 << 40), "a size from 1MiB to 1TiB")
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    match units::parse_positive_duration(s) {
        Ok(d) if d >= Duration::from_secs(1) && d <= Duration::from_secs(24 * 3600) => Ok(d),
        _ => Err(format!("'{s}': expected a time from 1s to 24h, e.g. 30s, 10m, 2h")),
    }
}

fn parse_watch(s: &str) -> Result<Duration, String> {
    match units::parse_duration(s) {
        Ok(d) if d >= Duration::from_secs(1) && d <= Duration::from_secs(600) => Ok(d),
        _ => Err(format!("'{s}': expected a time from 1s to 10m, e.g. 10s")),
    }
}

fn parse_ttl(s: &str) -> Result<u32, String> {
    s.parse::<u32>().ok().filter(|&v| v <= 60_000).ok_or_else(|| format!("'{s}': expected milliseconds from 0 to 60000"))
}

/// `on` or `off`, as `--zswap-shrinker` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OnOff(pub bool);

fn parse_on_off(s: &str) -> Result<OnOff, String> {
    match s {
        "on" => Ok(OnOff(true)),
        "off" => Ok(OnOff(false)),
        _ => Err(format!("'{s}': expected on, off or on,off")),
    }
}

fn parse_setting(s: &str) -> Result<u32, String> {
    s.parse::<u32>().ok().filter(|&v| v <= 200).ok_or_else(|| format!("'{s}': expected a whole number from 0 to 200"))
}

/// vm.page-cluster: the kernel takes 0 to 31 (2^N pages read ahead).
fn parse_cluster(s: &str) -> Result<u32, String> {
    s.parse::<u32>().ok().filter(|&v| v <= 31).ok_or_else(|| format!("'{s}': expected a whole number from 0 to 31"))
}

#[derive(Debug, Args)]
pub struct JankArgs {
    /// The arms: zram[:COMPRESSOR], zswap[:COMPRESSOR] (in front of a swap
    /// file), swapfile, none (no swap: the hog meets the OOM killer, and the
    /// report says so) and cpu-only (the control: the hog's group holds it
    /// twice over, nothing pages), comma-separated.
    #[arg(long, default_value = ALL_ARMS, value_parser = parse_stores)]
    pub arms: StoreList,
    /// vm.swappiness values, comma-separated: each store runs under each
    /// (journaled and restored). Default: the kernel's own.
    #[arg(long, value_delimiter = ',', value_parser = parse_setting)]
    pub swappiness: Vec<u32>,
    /// vm.page-cluster values, comma-separated, crossed as --swappiness is.
    #[arg(long, value_delimiter = ',', value_parser = parse_cluster)]
    pub page_cluster: Vec<u32>,
    /// MGLRU's min_ttl_ms values (ms), comma-separated, crossed as
    /// --swappiness is; MGLRU is enabled for those runs (both journaled and
    /// restored). It acts only in global reclaim, which pagelab never
    /// causes: the arm is set and undone, and `jank.min_ttl` reads "not
    /// checked".
    #[arg(long, value_delimiter = ',', value_parser = parse_ttl)]
    pub min_ttl_ms: Vec<u32>,
    /// zswap's shrinker (Linux 6.8: it writes cold compressed pages back to
    /// the swap file when the group's memory is short), on, off or both
    /// (`on,off`), crossed into the zswap arms only (journaled and
    /// restored). Default: the kernel's own setting.
    #[arg(long, value_delimiter = ',', value_parser = parse_on_off)]
    pub zswap_shrinker: Vec<OnOff>,
    /// Every arm under the CPU-only limit: the findings' negative control.
    #[arg(long)]
    pub cpu_only: bool,
    /// A slow drive: the disk under the swap file of the swapfile arms
    /// limited, for the hog's group, to N reads and N writes a second
    /// (cgroup v1 blkio throttle, v2 io.max; root). A hard disk reads about
    /// 100 random blocks a second, an SD card of the A2 class at least 4000.
    /// On cgroup v1 the kernel charges swap-outs to no group, so only the
    /// swap-ins wait.
    #[arg(long, value_name = "N", value_parser = units::uint64::<1, 1_000_000>)]
    pub swap_iops: Option<u64>,
    /// The hog: one of thrash's presets (e2: 25 consumers, W = 10000, t_s =
    /// 0.1 s, t_c = 30 s at the study's scale).
    #[arg(long, default_value = "e2", value_parser = parse_preset, conflicts_with = "command")]
    pub preset: String,
    /// The hog's consumers (default: the study's 25; another number is not
    /// the study's preset, and its findings are outside the protocol).
    #[arg(long, value_parser = units::uint32::<1, 200>, allow_hyphen_values = true, conflicts_with = "command")]
    pub consumers: Option<u32>,
    /// The hog's size factor (S and W).
    #[arg(
        long,
        default_value = "0.02",
        value_parser = crate::thrash::cmd::parse_scale,
        allow_hyphen_values = true,
        conflicts_with = "command"
    )]
    pub scale: f64,
    /// The hog's time factor (t_s, t_c, the initial delay).
    #[arg(
        long,
        default_value = "0.02",
        value_parser = crate::thrash::cmd::parse_time_scale,
        allow_hyphen_values = true,
        conflicts_with = "command"
    )]
    pub time_scale: f64,
    /// With a command of your own (after --): the memory cgroup's limit,
    /// which holds the command and the frame probe (whose working set is
    /// --share of it). Required with a command; thrash's consumers size
    /// their own group.
    #[arg(long, value_parser = parse_limit, allow_hyphen_values = true, requires = "command")]
    pub limit: Option<u64>,
    /// With a command: the store's room for what it pages out (default:
    /// twice --limit). The CPU-only control's group holds --limit and this
    /// together, with no swap.
    #[arg(long, value_parser = parse_store_size, allow_hyphen_values = true, requires = "command")]
    pub store_size: Option<u64>,
    /// With a command: kill it if it still runs after this long (the run
    /// counts as `timed_out`).
    #[arg(long, default_value = "30m", value_parser = parse_timeout, requires = "command")]
    pub timeout: Duration,
    /// With a command: how long frames are watched after it ends (the
    /// "on time again" figure is censored at this length).
    #[arg(long, default_value = "10s", value_parser = parse_watch, requires = "command")]
    pub watch: Duration,
    /// The hog: a command of your own, in place of thrash's consumers (after
    /// --, with --limit): run in the group once per arm and repeat, its
    /// standard output discarded. Its runs judge no finding (thrash's
    /// protocol does not apply); every figure of the table does.
    #[arg(last = true)]
    pub command: Vec<String>,
    /// Runs per arm.
    #[arg(long, default_value_t = 4, value_parser = units::uint32::<1, 100>, allow_hyphen_values = true)]
    pub repeat: u32,
    /// The frame period (60 Hz: 16.7ms).
    #[arg(long, default_value = "16.667ms", value_parser = parse_frame)]
    pub frame: Duration,
    /// The frame probe's working set, as a share of the room under the
    /// hog's limit (counted in its overcommit).
    #[arg(long, default_value = "0.25", value_parser = parse_share)]
    pub share: f64,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub swapfile: SwapfileArgs,
}

/// `jank --json`: the one-line answer and each run without its chart series.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Output {
    experiment: &'static str,
    answer: String,
    results: Vec<JankResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_parse_and_bad_ones_name_the_accepted_forms() {
        let l = parse_stores("zram:lz4, zswap,swapfile,cpu-only").unwrap().0;
        assert_eq!(l, [Store::Zram(Some("lz4".into())), Store::Zswap(None), Store::Swapfile, Store::CpuOnly]);
        assert!(parse_stores("zram,zram").unwrap_err().contains("twice"));
        assert!(parse_stores("disk").unwrap_err().contains("zram[:COMPRESSOR], zswap[:COMPRESSOR], swapfile, none or cpu-only"));
        assert_eq!(parse_stores("none").unwrap().0, [Store::NoSwap]);
        assert!(parse_stores("swapfile:lz4").unwrap_err().contains("only zram and zswap"));
        assert!(parse_stores("zram:../x").unwrap_err().contains("compressor"));
        assert!(parse_preset("e2,e3").is_err() && parse_preset("e4").unwrap() == "e4");
        assert!(parse_share("60%").is_err() && parse_share("25%").unwrap() == 0.25);
        assert!(parse_frame("0.1ms").is_err() && parse_frame("16.7ms").is_ok());
        assert!(parse_setting("201").is_err() && parse_setting("180").unwrap() == 180);
        assert!(parse_cluster("32").unwrap_err().contains("0 to 31") && parse_cluster("3").unwrap() == 3);
        assert!(parse_ttl("60001").is_err() && parse_ttl("1000").unwrap() == 1000);
        assert!(swappiness_above_100("6.18.44-fc-v669") && swappiness_above_100("5.8.0"));
        assert!(!swappiness_above_100("5.4.0-150-generic") && !swappiness_above_100("4.19.0") && !swappiness_above_100(""));
        assert!(parse_limit("15MiB").unwrap_err().contains("16MiB to 1TiB") && parse_limit("16MiB").unwrap() == 16 << 20);
        assert!(parse_limit("lots").unwrap_err().contains("KiB, MiB"));
        assert!(parse_store_size("0").is_err() && parse_store_size("1GiB").unwrap() == 1 << 30);
        assert!(parse_timeout("25h").is_err() && parse_timeout("10m").unwrap() == Duration::from_secs(600));
        assert!(parse_watch("0s").is_err() && parse_watch("11m").is_err() && parse_watch("3s").is_ok());
    }

    #[test]
    fn zswaps_shrinker_is_crossed_into_zswaps_arms_alone() {
        let argv = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a: JankArgs = crate::kit::lab_args::parse(
            "jank",
            &argv(&["--arms", "zswap,swapfile,cpu-only", "--zswap-shrinker", "on,off", "--swappiness", "60,100"]),
        )
        .unwrap();
        let names: Vec<String> = arms(&a).iter().map(Arm::name).collect();
        assert_eq!(
            names,
            [
                "zswap swappiness=60 shrinker=on",
                "zswap swappiness=60 shrinker=off",
                "zswap swappiness=100 shrinker=on",
                "zswap swappiness=100 shrinker=off",
                "swapfile swappiness=60",
                "swapfile swappiness=100",
                "cpu-only",
            ]
        );
        let off: JankArgs = crate::kit::lab_args::parse("jank", &argv(&["--arms", "zswap", "--zswap-shrinker", "off"])).unwrap();
        assert_eq!(arms(&off).iter().map(|a| a.zswap_shrinker).collect::<Vec<_>>(), [Some(false)]);
        assert!(parse_on_off("yes").unwrap_err().contains("on, off or on,off"));
    }

    #[test]
    fn the_smoke_and_budgeted_steps_plan_their_time() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        let s = lab_step(&m, Scale::Smoke, None);
        let smoke = JankLab::of(&s).unwrap();
        assert_eq!(smoke.arms, [Store::Swapfile, Store::CpuOnly]);
        assert!(s.expect_s > 15.0 && s.expect_s < 60.0, "{s:?}");
        let q = lab_step(&m, Scale::Quick, None);
        assert!(q.reason.as_deref().unwrap().contains(&format!("--budget {:.0}m", quick_budget_s() / 60.0)), "{q:?}");
        let b = lab_step(&m, Scale::Quick, Some(quick_budget_s()));
        assert_eq!(b.args, budgeted().args);
        // Four arms × four repeats of e2 at a time factor of 0.02: about 52 s each.
        assert!((budgeted().expect_s - 16.0 * ((1500.0 + 10.0) * 0.02 + 22.0)).abs() < 1e-6);
        // The budgeted step judges the tenfold finding only: it runs no zstd
        // and no min_ttl_ms.
        let b = JankLab::of(&b).unwrap();
        assert!(judged_in(&b, "jank.zram_tenfold"));
        assert!(!judged_in(&b, "jank.zstd_stutters") && !judged_in(&b, "jank.min_ttl"));
        assert!(!judged_in(&JankLab { swappiness: vec![100], ..b.clone() }, "jank.zram_tenfold"), "a setting crossed in");
        assert!(!judged_in(&JankLab { cpu_only: true, ..b.clone() }, "jank.zram_tenfold"), "all under the CPU-only limit");
        assert!(!judged_in(&JankLab { arms: vec![Store::Swapfile], ..b }, "jank.zram_tenfold"), "one arm missing");
        let nr = lab_step(&Machine { root: false, cpus: 2, ram_bytes: 24 << 30, swap_active: false }, Scale::Full, None);
        assert!(nr.reason.as_deref().unwrap().starts_with("needs root"));
    }
}
