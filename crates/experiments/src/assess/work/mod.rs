//! `assess`: what compressed memory would do for someone else's program.
//!
//! 1. **Cold memory**, without moving a page: the referenced bits are cleared
//!    once (`/proc/PID/clear_refs`), then `/proc/PID/smaps` is read at the end of
//!    each window; a page not referenced within a window is cold at that age.
//! 2. **Compressibility of the real pages**: the resident anonymous pages
//!    (present in `/proc/PID/pagemap`, so nothing is swapped in) are read with
//!    process_vm_readv and compressed one by one (lz4, zstd), counting zero and
//!    same-filled pages and those above 2990 bytes.
//! 3. **The cost, only with `--trim`**: the process is trimmed
//!    (process_madvise(MADV_PAGEOUT)) into a zram made for the run or into the
//!    swap already there, then followed: RSS regrowth, the store's sizes, major
//!    faults, PSI, swap-ins against the working set, and the user's probe.
//!
//! Without `--trim`, the target's referenced bits are all that changes (reading
//! its pages marks them referenced again). With it, residency changes, never
//! contents.

use crate::assess::results::{
    AssessResult, DamonRun, Kinds, Latency, MglruRun, PACE_PROBE_S, Point, Source, Target,
    Trim, Window,
};
use sandbox::worker::EventKind;
use probe::Probe;
use probe::process::{MemKind, SmapsEntry};
use sandbox::Sandbox;
use sandbox::worker::{Spawn, WorkerLink, WorkerSpec};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workloads::backing::{self, BackingKind};
use workloads::observe::{ExperimentError, Observer};

mod cost;
mod mglru;
mod windows;

use cost::*;
pub use cost::advise;
use crate::kit::process::{check_pid, private_ranges};
use mglru::*;
use crate::kit::pages::{Split, compressibility, smaps};
use windows::*;

/// How long DAMON watches before the longest window starts counting: its
/// regions split and merge to follow the access pattern in the first second or so.
const DAMON_SETTLE: Duration = Duration::from_secs(2);
/// How long DAMON may take past the watch to form its first regions.
const DAMON_REGIONS_WAIT: Duration = Duration::from_secs(20);


#[derive(Debug, Clone)]
pub struct AssessConfig {
    pub pid: Option<i32>,
    /// A command to start and assess (`-- CMD ARGS`).
    pub command: Vec<String>,
    /// A pagelab worker of this many bytes that keeps touching `hot` of them.
    pub synthetic: Option<u64>,
    pub hot: f64,
    /// How long a started target runs before the assessment begins.
    pub warmup: Duration,
    pub windows: Vec<Duration>,
    /// How many times the windows and the compressibility are measured (the
    /// trim, if any, follows the last).
    pub repeat: u32,
    /// `--trim`: where the trimmed pages go.
    pub trim: Option<BackingKind>,
    pub compressor: Option<String>,
    /// How long to follow the target after the trim.
    pub duration: Duration,
    pub probe: Option<String>,
    pub probe_runs: u32,
    /// At most this many bytes of pages are read and compressed (an even sample beyond).
    pub max_read: u64,
    pub exe: PathBuf,
    pub swapfile_dir: PathBuf,
    /// Where the working-set estimate comes from.
    pub source: WssSource,
}

/// `--source`: how cold memory is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WssSource {
    /// DAMON where pagelab can own a kdamond (root, and DAMON's list empty),
    /// else MGLRU where the target has a memory cgroup to itself, else the
    /// referenced bits.
    Auto,
    Referenced,
    Damon,
    Mglru,
}
crate::serde_by_name!(WssSource, "source");

/// The name results carry for each source.
pub const REFERENCED: &str = "referenced bits (clear_refs, smaps Referenced)";
pub const DAMON: &str = "DAMON (a kdamond of pagelab's own, vaddr)";
pub const MGLRU: &str = "MGLRU generations (debugfs lru_gen, per memory cgroup)";

/// MGLRU's debugfs file.
const LRU_GEN: &str = "/sys/kernel/debug/lru_gen";
/// MGLRU keeps at most 4 generations, and n windows take n + 1 agings: more
/// than 3 windows would merge the oldest two and lose the longest window.
const MGLRU_MAX_WINDOWS: usize = 3;

/// Why MGLRU cannot be the source for this request, or None when it can. Its
/// generations count the pages of a memory cgroup, so the target must have
/// one to itself: pagelab makes one for a target it starts, and a `--pid`
/// must already be alone in its own.
fn mglru_unavailable(cfg: &AssessConfig, p: &mut Probe) -> Option<String> {
    match p.environment().mglru {
        None => return Some("MGLRU is not in this kernel".into()),
        Some(m) if !m.enabled => return Some("MGLRU is off (/sys/kernel/mm/lru_gen/enabled)".into()),
        Some(_) => {}
    }
    if !sandbox::privilege::is_root() {
        return Some("needs root (debugfs lru_gen)".into());
    }
    if !p.lru_gen_path().exists() {
        return Some(format!("{LRU_GEN} is absent (debugfs is not mounted at /sys/kernel/debug)"));
    }
    if cfg.windows.len() > MGLRU_MAX_WINDOWS {
        return Some(format!(
            "MGLRU keeps 4 generations, so at most {MGLRU_MAX_WINDOWS} windows ({} asked for)",
            cfg.windows.len()
        ));
    }
    match cfg.pid {
        Some(pid) => match p.memory_cgroup_of(Some(pid)) {
            Ok(Some(cg)) if cg.name != "/" => {
                let procs = sandbox::cgroup::procs(&cg.dir);
                (procs != [pid]).then(|| {
                    format!(
                        "its generations count a whole memory cgroup, and pid {pid}'s ({}) holds {} processes",
                        cg.name,
                        procs.len()
                    )
                })
            }
            Ok(Some(_)) => Some(format!("pid {pid} is in the root memory cgroup, whose generations count every page")),
            _ => Some(format!("no memory cgroup found for pid {pid}")),
        },
        None => match p.memory_controller() {
            Ok(Some(_)) => None,
            _ => Some("no memory cgroup controller to give the target a group of its own".into()),
        },
    }
}

/// Why DAMON cannot be used here, or None when pagelab can own a kdamond.
fn damon_unavailable(p: &Probe) -> Option<String> {
    if !sandbox::privilege::is_root() {
        return Some("needs root (DAMON's admin files)".into());
    }
    sandbox::damon::unavailable(&p.roots().sys)
}

fn err(msg: impl Into<String>) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg.into()))
}

/// Checks a request before anything is started or changed.
pub fn validate(cfg: &AssessConfig, p: &mut Probe) -> Result<(), ExperimentError> {
    let given = cfg.pid.is_some() as u8 + (!cfg.command.is_empty()) as u8 + cfg.synthetic.is_some() as u8;
    if given != 1 {
        return Err(err("pagelab assess needs one target: --pid PID, --synthetic SIZE, or a command after --"));
    }
    if let Some(pid) = cfg.pid {
        check_pid(p, pid)?;
    }
    if cfg.windows.is_empty() {
        return Err(err("--windows: give at least one window, e.g. 1s,10s,60s"));
    }
    let unavailable = match cfg.source {
        WssSource::Damon => damon_unavailable(p).map(|w| ("damon", w)),
        WssSource::Mglru => mglru_unavailable(cfg, p).map(|w| ("mglru", w)),
        _ => None,
    };
    if let Some((name, why)) = unavailable {
        return Err(ExperimentError::Sandbox(sandbox::SandboxError::Unsupported(format!(
            "--source {name}: {why}; use --source referenced (or auto)"
        ))));
    }
    if !(0.0..=1.0).contains(&cfg.hot) {
        return Err(err(format!("--hot {}: a fraction 0..1 or a percentage 0%..100%", cfg.hot)));
    }
    if let Some(kind) = cfg.trim {
        if !matches!(kind, BackingKind::Auto | BackingKind::Zram | BackingKind::Existing) {
            return Err(err("--trim: zram, existing or auto"));
        }
        backing::validate(kind, cfg.compressor.as_deref(), p)?;
        if backing::resolve(kind, p) == BackingKind::None {
            return Err(err(
                "--trim: no swap to trim into: no swap is active, and a zram swap needs root (run as root, or swapon a swap area)",
            ));
        }
    } else if cfg.compressor.is_some() {
        return Err(err("--compressor only applies with --trim zram"));
    }
    Ok(())
}

/// The process being assessed: one pagelab started is killed at the end; one
/// given by `--pid` is left alone.
#[derive(Default)]
struct Proc {
    child: Option<std::process::Child>,
    worker: Option<Box<dyn WorkerLink>>,
    /// A memory cgroup of the target's own (for MGLRU), removed after it.
    group: Option<(Sandbox, sandbox::cgroup::MemCgroup)>,
}

impl Proc {
    fn started(&self) -> bool {
        self.child.is_some() || self.worker.is_some()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The end of its commands ends the toucher (a process is killed if
        // it has not ended within the moment).
        if let Some(w) = self.worker.take() {
            let _ = w.finish(Duration::from_secs(5));
        }
    }
}

fn alive(p: &mut Probe, pid: i32) -> bool {
    p.pid_status(pid).ok().flatten().is_some_and(|s| s.vm_rss.is_some())
}

/// Sleeps until `until`, in steps, failing when stopped or when the target exits.
fn wait_until(
    p: &mut Probe,
    until: Instant,
    pid: i32,
    what: &str,
    stop: &dyn Fn() -> bool,
) -> Result<(), ExperimentError> {
    loop {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        if !alive(p, pid) {
            return Err(ExperimentError::Worker(format!("pid {pid} exited during {what}")));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
    }
}

/// The lru_gen path of the target's memory cgroup: the one pagelab made for
/// it, or (`--pid`) the one it is alone in.
fn memcg_path(p: &mut Probe, proc_: &Proc, pid: i32) -> Result<String, ExperimentError> {
    if let Some((_, cg)) = &proc_.group {
        return Ok(format!("/{}", cg.name));
    }
    match p.memory_cgroup_of(Some(pid)) {
        Ok(Some(cg)) => Ok(cg.name),
        _ => Err(ExperimentError::Worker(format!("pid {pid}: no memory cgroup found"))),
    }
}

fn start(
    cfg: &AssessConfig,
    target: &mut Target,
    own_group: bool,
    spawn: &mut dyn Spawn,
) -> Result<(Proc, i32), ExperimentError> {
    if let Some(pid) = cfg.pid {
        return Ok((Proc::default(), pid));
    }
    let mut proc_ = Proc::default();
    if own_group && cfg.synthetic.is_some() && !spawn.containable() {
        return Err(err("MGLRU needs the synthetic target in a memory cgroup of its own, which a thread cannot be"));
    }
    if own_group {
        let mut sb = Sandbox::new("assess");
        let cg = sb.memory_cgroup("assess", &sandbox::cgroup::Limits::default())?;
        proc_.group = Some((sb, cg));
    }
    if let Some(size) = cfg.synthetic {
        let mut w = spawn.spawn(WorkerSpec {
            exe: cfg.exe.clone(),
            args: sandbox::worker::argv_spec(TOUCHER, &ToucherSpec { size, hot: cfg.hot }),
            cgroup: proc_.group.as_ref().map(|(_, cg)| cg),
            env: Vec::new(),
            label: TOUCHER.into(),
        })?;
        let ready = w
            .wait_for(sandbox::worker::Want::Kind(EventKind::Ready), Duration::from_secs(120), &mut |_| {}, &|| false)
            .map_err(ExperimentError::Failed)?;
        target.synthetic_bytes = Some(size);
        target.synthetic_hot_fraction = Some(cfg.hot);
        target.synthetic_pattern = ready.data["pattern"].as_str().map(String::from);
        target.synthetic_lz4_estimate = ready.data["lz4_estimate"].as_f64();
        let pid = w.pid();
        proc_.worker = Some(w);
        return Ok((proc_, pid));
    }
    use std::os::fd::AsFd;
    // The program's stdout goes to our stderr: stdout may carry pagelab's JSON.
    let out = std::io::stderr().as_fd().try_clone_to_owned().map_err(|e| err(format!("stderr: {e}")))?;
    let mut cmd = std::process::Command::new(&cfg.command[0]);
    cmd.args(&cfg.command[1..]).stdin(std::process::Stdio::null()).stdout(out);
    if let Some((_, cg)) = &proc_.group {
        // Into its group before exec, so that every page it maps is counted there.
        sandbox::cgroup::join_before_exec(&mut cmd, &cg.dir).map_err(|e| err(format!("{}: {e}", cg.dir.display())))?;
    }
    // Ended with this run, even one killed outright: an orphan would run on
    // (and keep its group from being removed).
    sandbox::worker::die_with_parent(&mut cmd);
    let child = cmd.spawn().map_err(|e| err(format!("cannot run '{}': {e}", cfg.command[0])))?;
    target.command = cfg.command.clone();
    let pid = child.id() as i32;
    proc_.child = Some(child);
    Ok((proc_, pid))
}

/// Runs the assessment: `repeat` times the windows and the compressibility,
/// each a result of its own, then the trim (if asked) after the last.
pub fn run(
    cfg: &AssessConfig,
    obs: &mut dyn Observer<Entry = AssessResult>,
    stop: &dyn Fn() -> bool,
    p: &mut Probe,
) -> Result<AssessResult, ExperimentError> {
    run_with(cfg, obs, stop, p, &mut sandbox::worker::Processes)
}

/// [`run`], its synthetic target started by `spawn` (a process, or in tests
/// a thread of this process).
pub fn run_with(
    cfg: &AssessConfig,
    obs: &mut dyn Observer<Entry = AssessResult>,
    stop: &dyn Fn() -> bool,
    p: &mut Probe,
    spawn: &mut dyn Spawn,
) -> Result<AssessResult, ExperimentError> {
    validate(cfg, p)?;
    let mut base = AssessResult { sources: sources(cfg, p), ..Default::default() };
    base.source = base.sources.iter().find(|s| s.used).map(|s| s.name.clone()).unwrap_or_default();
    let (proc_, pid) = start(cfg, &mut base.target, base.source == MGLRU && cfg.pid.is_none(), spawn)?;
    let memcg = if base.source == MGLRU { Some(memcg_path(p, &proc_, pid)?) } else { None };
    base.target.pid = pid;
    base.target.comm = p.pid_comm(pid).unwrap_or_default();
    obs.targets(vec![pid], None, Vec::new());
    if proc_.started() {
        wait_until(p, Instant::now() + cfg.warmup, pid, "the warm-up", stop)?;
        // A wrapper script may have exec'd the program by now.
        base.target.comm = p.pid_comm(pid).unwrap_or_default();
    }
    if base.source == DAMON {
        // A first start tells whether this DAMON can watch the process (an
        // auto choice falls back to the referenced bits if not).
        let mut sb = Sandbox::new("assess");
        let tried = sb.damon_vaddr(pid, sandbox::damon::Intervals::default()).map(|_| ());
        sb.restore()?;
        if let Err(e) = tried {
            if cfg.source == WssSource::Damon {
                return Err(ExperimentError::Sandbox(e));
            }
            for s in &mut base.sources {
                s.used = s.name == REFERENCED;
                if s.name == DAMON {
                    s.why = format!("could not start: {e}");
                }
            }
            base.source = REFERENCED.into();
            obs.note(&format!("DAMON could not watch pid {pid} ({e}); the referenced bits are used instead"));
        }
    }
    let repeat = cfg.repeat.max(1);
    let mut last = base.clone();
    for i in 1..=repeat {
        let mut r = AssessResult { repeat: i, ..base.clone() };
        match measure(cfg, p, pid, memcg.as_deref(), &mut r, i == repeat, obs, stop) {
            Ok(()) => obs.result(&r)?,
            Err(e) => {
                // What was measured before the failure is kept, saying what happened.
                if !r.windows.is_empty() {
                    r.notes.push(format!("incomplete: {e}"));
                    obs.result(&r)?;
                }
                return Err(e);
            }
        }
        last = r;
    }
    drop(proc_);
    Ok(last)
}

#[allow(clippy::too_many_arguments)]
fn measure(
    cfg: &AssessConfig,
    p: &mut Probe,
    pid: i32,
    memcg: Option<&str>,
    r: &mut AssessResult,
    then_trim: bool,
    obs: &mut dyn Observer<Entry = AssessResult>,
    stop: &dyn Fn() -> bool,
) -> Result<(), ExperimentError> {
    let mut windows = cfg.windows.clone();
    windows.sort();
    obs.event("phase_start", &format!("windows {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    let mut regions = Vec::new();
    let iv = sandbox::damon::Intervals::default();
    // Seconds per aggregation DAMON really took (its nominal interval ÷ its pace).
    let mut aggr_s = iv.aggr.as_secs_f64();
    let last = if r.source == DAMON {
        // One pass: DAMON settles its regions, then watches for the longest
        // window; each window is read from the regions' ages at the end.
        let mut sb = Sandbox::new("assess");
        let mon = sb.damon_vaddr(pid, iv)?;
        let t0 = Instant::now();
        let longest = *windows.last().expect("validated: at least one window");
        let end = t0 + DAMON_SETTLE + longest;
        // A first read a little before the end: the age a region idle in both
        // reads gained says how many aggregations DAMON really did meanwhile.
        wait_until(p, end - Duration::from_secs_f64(PACE_PROBE_S), pid, "DAMON's watch", stop)?;
        let mut before = mon.regions()?;
        let mut t_before = Instant::now();
        wait_until(p, end, pid, "DAMON's watch", stop)?;
        regions = mon.regions()?;
        // A kdamond starved of CPU (a busy machine, an emulated one: the VM
        // test once read none after 6.2 s) may not have formed its regions
        // yet: asked again, every half second for up to DAMON_REGIONS_WAIT.
        // Regions that came late have no first read to give DAMON's pace:
        // it is read afresh, between them and a read PACE_PROBE_S later.
        // None by then is an error, never windows read from nothing.
        let asked = Instant::now();
        while (regions.is_empty() || before.is_empty()) && asked.elapsed() < DAMON_REGIONS_WAIT {
            if regions.is_empty() {
                wait_until(p, Instant::now() + Duration::from_millis(500), pid, "DAMON's regions", stop)?;
            } else {
                before = std::mem::take(&mut regions);
                t_before = Instant::now();
                wait_until(p, t_before + Duration::from_secs_f64(PACE_PROBE_S), pid, "DAMON's pace", stop)?;
            }
            regions = mon.regions()?;
        }
        if regions.is_empty() {
            return Err(ExperimentError::Sandbox(sandbox::SandboxError::Other(format!(
                "DAMON formed no region of pid {pid} in {:.0} s of watching; --source referenced reads the windows \
                 without it",
                t0.elapsed().as_secs_f64()
            ))));
        }
        let pace = damon_pace(&before, &regions, t_before.elapsed().as_secs_f64(), iv.aggr.as_secs_f64());
        let maps = smaps(p, pid, "the windows")?;
        let monitored_s = t0.elapsed().as_secs_f64();
        sb.restore()?;
        aggr_s = iv.aggr.as_secs_f64() / pace;
        let idle = Idle { regions: &regions, aggr_s };
        let secs: Vec<f64> = windows.iter().map(|w| w.as_secs_f64()).collect();
        r.windows = damon_windows(p, pid, &secs, &maps, &idle)?;
        r.damon = Some(DamonRun {
            sample_us: iv.sample.as_micros() as u64,
            aggr_us: iv.aggr.as_micros() as u64,
            monitored_s,
            regions: regions.len() as u32,
            idle_regions: regions.iter().filter(|g| g.nr_accesses == 0).count() as u32,
            pace,
        });
        maps
    } else if let Some(path) = memcg {
        let (w, run) = mglru_pass(p, pid, path, &windows, stop)?;
        r.windows = w;
        r.mglru = Some(run);
        smaps(p, pid, "the windows")?
    } else {
        clear_refs(p, pid)?;
        let t0 = Instant::now();
        let mut last = Vec::new();
        for w in &windows {
            wait_until(p, t0 + *w, pid, &format!("the {} s window", w.as_secs_f64()), stop)?;
            last = smaps(p, pid, "the windows")?;
            r.windows.push(window_of(w.as_secs_f64(), &last));
        }
        last
    };
    obs.event("phase_end", &format!("windows {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    obs.event("phase_start", &format!("compress {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    let longest = windows.last().map(|w| w.as_secs_f64()).unwrap_or(0.0);
    let idle = Idle { regions: &regions, aggr_s };
    let cold = |addr: usize| idle.at(addr) >= longest;
    let split = if r.damon.is_some() {
        Split::PerPage(&cold)
    } else if r.mglru.is_some() {
        Split::None
    } else {
        Split::PerMapping
    };
    r.compress = Some(compressibility(p, pid, &last, cfg.max_read, split, stop)?);
    obs.event("phase_end", &format!("compress {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    if let (Some(kind), true) = (cfg.trim, then_trim) {
        let ws = r.longest().map(|w| w.referenced.anon).unwrap_or(0);
        r.trim = Some(trim(cfg, p, kind, pid, ws, obs, stop)?);
    }
    Ok(())
}

/// The synthetic target's worker kind.
pub const TOUCHER: &str = "toucher";

/// The synthetic target's start (`--spec`): its size and the share it keeps touching.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToucherSpec {
    pub size: u64,
    pub hot: f64,
}

/// The synthetic target (`pagelab __worker toucher --spec JSON`, [`ToucherSpec`]):
/// fills `size` bytes with eat's semi pattern, then reads one byte of every
/// page of the first `hot` of them every 20 ms, until its parent closes its
/// commands (or kills it).
pub fn toucher_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let ToucherSpec { size, hot } = sandbox::worker::spec_of(TOUCHER, args)?;
    let size = usize::try_from(size).map_err(|_| format!("the toucher: {size} bytes do not fit this machine"))?;
    let page = workloads::mm::page_size();
    let mut m = workloads::mm::Mapping::anon(size.max(page), 0).map_err(|e| format!("mmap of {size} bytes: {e}"))?;
    // eat's semi pattern at eat's default block (20 bytes), so the two can be compared.
    workloads::fill::fill(m.as_mut_slice(), workloads::fill::Pattern::Semi, 20, 1);
    let est = workloads::compress::estimate(m.as_slice(), page);
    io.emit(EventKind::Ready, "", json!({"pattern": "semi", "lz4_estimate": est.lz4, "zstd_estimate": est.zstd}));
    let hot_pages = ((size / page) as f64 * hot).round() as usize;
    let buf = m.as_slice();
    loop {
        let mut x = 0u8;
        for i in 0..hot_pages {
            // SAFETY: in bounds of our mapping; volatile so the read happens.
            x ^= unsafe { std::ptr::read_volatile(buf.as_ptr().add(i * page)) };
        }
        std::hint::black_box(x);
        // Until the parent closes its commands (or, as a process, kills it).
        if io.wait_input(Duration::from_millis(20)) && io.at_end() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::compress::same_filled;

    /// assess without root (issue 60 item 3): the run starts its synthetic
    /// target through the worker-link seam (a thread of this process here,
    /// so the target is this process), reads its windows from the
    /// referenced bits and its pages' compressibility, and ends the target
    /// by closing its commands; a stop ends the run.
    #[test]
    fn the_run_drives_its_target_without_root() {
        use workloads::observe::Recorder;
        let cfg = AssessConfig {
            pid: None,
            command: vec![],
            synthetic: Some(4 << 20),
            hot: 0.5,
            warmup: Duration::from_millis(100),
            windows: vec![Duration::from_millis(200), Duration::from_millis(400)],
            repeat: 1,
            trim: None,
            compressor: None,
            duration: Duration::from_secs(1),
            probe: None,
            probe_runs: 1,
            max_read: 1 << 20,
            exe: "/nonexistent".into(),
            swapfile_dir: "/nonexistent".into(),
            source: WssSource::Referenced,
        };
        let mut threads = sandbox::worker::Threads(vec![(TOUCHER, toucher_main)]);
        let mut obs = Recorder::default();
        let r = run_with(&cfg, &mut obs, &|| false, &mut Probe::default(), &mut threads).unwrap();
        assert_eq!(r.source, REFERENCED);
        assert_eq!(r.target.pid, std::process::id() as i32, "a thread's target is this process");
        assert_eq!(r.target.synthetic_bytes, Some(4 << 20));
        assert!(r.target.synthetic_lz4_estimate.is_some(), "the toucher's ready event was read");
        let secs: Vec<f64> = r.windows.iter().map(|w| w.seconds).collect();
        assert_eq!(secs, [0.2, 0.4]);
        assert!(r.windows.iter().all(|w| w.resident.anon > 0), "{:?}", r.windows);
        let c = r.compress.as_ref().expect("the compressibility was measured");
        assert!(c.resident_pages > 0 && c.all.pages > 0, "{c:?}");
        assert_eq!(obs.results.len(), 1);
        let e = run_with(&cfg, &mut Recorder::default(), &|| true, &mut Probe::default(), &mut threads).unwrap_err();
        assert!(matches!(e, ExperimentError::Interrupted), "{e}");
    }

    fn entry(name: &str, perms: &str, rss: u64, anon: u64, refd: u64) -> SmapsEntry {
        SmapsEntry {
            map: probe::process::MapEntry {
                start: 0,
                end: 1 << 30,
                perms: perms.into(),
                offset: 0,
                inode: 0,
                name: name.into(),
            },
            rss,
            anonymous: anon,
            referenced: refd,
            swap: 0,
        }
    }

    #[test]
    fn windows_split_referenced_bytes_by_kind() {
        let maps = [
            entry("", "rw-p", 400, 400, 100),
            entry("/usr/lib/libc.so.6", "r-xp", 200, 0, 200),
            entry("/memfd:x", "rw-s", 100, 0, 0),
        ];
        let w = window_of(10.0, &maps);
        assert_eq!(w.resident, Kinds { anon: 400, file: 200, shmem: 100 });
        assert_eq!(w.referenced, Kinds { anon: 100, file: 200, shmem: 0 });
        assert_eq!((w.cold_anon, w.cold_file, w.cold_shmem), (0.75, 0.0, 1.0));
        assert!((w.cold_total - 400.0 / 700.0).abs() < 1e-12);
        let none = window_of(1.0, &[]);
        assert!(none.cold_anon.is_nan() && none.cold_total.is_nan());
    }

    #[test]
    fn damon_regions_class_each_resident_page_by_its_idle_time() {
        let page = workloads::mm::page_size();
        let mut m = workloads::mm::Mapping::anon(64 * page, 0).unwrap();
        // 48 of 64 pages resident; the last 16 never touched.
        for i in 0..48 {
            m.as_mut_slice()[i * page] = 1;
        }
        let start = m.as_slice().as_ptr() as usize;
        let pid = std::process::id() as i32;
        let maps: Vec<SmapsEntry> = Probe::default()
            .pid_smaps(pid)
            .unwrap()
            .unwrap()
            .into_iter()
            .filter(|e| e.map.start <= start && start < e.map.end)
            .map(|mut e| {
                // The kernel may have merged the mapping with a neighbour: keep ours.
                e.map.start = start;
                e.map.end = start + 64 * page;
                e
            })
            .collect();
        assert_eq!(maps.len(), 1, "the test mapping in smaps");
        use sandbox::damon::Region;
        let regions = [
            // pages 0..16: accessed; 16..32: idle 0.5 s; 32..64: idle 5.1 s.
            Region { start, end: start + 16 * page, nr_accesses: 3, age: 80 },
            Region { start: start + 16 * page, end: start + 32 * page, nr_accesses: 0, age: 4 },
            Region { start: start + 32 * page, end: start + 64 * page, nr_accesses: 0, age: 50 },
        ];
        let idle = Idle { regions: &regions, aggr_s: 0.1 };
        assert_eq!(idle.at(start - 1), 0.0, "an address DAMON does not watch is not cold");
        assert!((idle.at(start + 40 * page) - 5.1).abs() < 1e-9);
        let w = damon_windows(&mut Probe::default(), pid, &[0.5, 1.0, 10.0], &maps, &idle).unwrap();
        let p = page as u64;
        assert_eq!(w[0].resident.anon, 48 * p);
        assert_eq!(w[0].referenced.anon, 16 * p, "idle 0.5 s is cold at a 0.5 s window");
        assert_eq!(w[1].referenced.anon, 32 * p, "only the 5.1 s region is cold at 1 s");
        assert_eq!(w[2].referenced.anon, 48 * p, "nothing idle for 10 s");
        assert!((w[1].cold_anon - 16.0 / 48.0).abs() < 1e-12);
        assert!(w[2].cold_file.is_nan() && w[2].cold_shmem.is_nan());
    }

    #[test]
    fn damons_pace_is_the_age_an_idle_region_gained_between_two_reads() {
        use sandbox::damon::Region;
        let r = |start: usize, end: usize, nr_accesses: u32, age: u32| Region { start, end, nr_accesses, age };
        // On time: 10 aggregations of 100 ms in 1 s.
        let a = [r(0, 100, 0, 30), r(100, 200, 5, 2)];
        let b = [r(0, 50, 0, 40), r(50, 100, 0, 40), r(100, 200, 4, 3)];
        assert!((damon_pace(&a, &b, 1.0, 0.1) - 1.0).abs() < 1e-12);
        // Starved: 4 aggregations in 1 s; the hot region's age says nothing.
        let b = [r(0, 100, 0, 34), r(100, 200, 3, 90)];
        assert!((damon_pace(&a, &b, 1.0, 0.1) - 0.4).abs() < 1e-12);
        // A region that was hot in the first read is not evidence; nor is a
        // region whose age was reset; with no evidence the pace is nominal.
        let b = [r(100, 200, 0, 9)];
        assert_eq!(damon_pace(&a, &b, 1.0, 0.1), 1.0);
        let b = [r(0, 100, 0, 3)];
        assert_eq!(damon_pace(&a, &b, 1.0, 0.1), 1.0);
        // Never 0 (no aggregation at all) and never above on time.
        assert_eq!(damon_pace(&a, &[r(0, 100, 0, 30)], 1.0, 0.1), 0.05);
        assert_eq!(damon_pace(&a, &[r(0, 100, 0, 60)], 1.0, 0.1), 1.0);
    }

    #[test]
    fn mglru_generations_below_each_windows_aging_are_cold() {
        use probe::lru_gen::{Generation, Memcg, Node};
        // Windows 1 s and 3 s: agings at T−3 (opened seq 5), T−1 (opened 6)
        // and T (opened 7). At T: seq 4 holds pages untouched since before
        // T−3, seq 5 pages last touched in (T−3, T−1], seq 6 in (T−1, T].
        let g = |seq, anon, file| Generation { seq, age_ms: 0, anon, file };
        let m = Memcg {
            id: 9,
            path: "/pagelab/assess-1-0".into(),
            nodes: vec![Node { node: 0, gens: vec![g(4, 600, 10), g(5, 200, 0), g(6, 190, 5), g(7, 10, 0)] }],
        };
        let made = vec![vec![(0, 5)], vec![(0, 6)], vec![(0, 7)]];
        let w = mglru_windows(&[Duration::from_secs(1), Duration::from_secs(3)], &made, &m, 1);
        assert_eq!(w[0].resident, Kinds { anon: 1000, file: 15, shmem: 0 });
        assert_eq!(w[0].referenced.anon, 200, "touched within 1 s: seq 6 and the new seq 7");
        assert_eq!(w[1].referenced.anon, 400, "touched within 3 s: seq 5 and up");
        assert_eq!((w[0].cold_anon, w[1].cold_anon), (0.8, 0.6));
        assert_eq!(w[1].referenced.file, 5);
        assert!(w[1].cold_shmem.is_nan(), "MGLRU cannot tell shmem from anon");
    }

    #[test]
    fn same_filled_pages_are_found() {
        let z = vec![0u8; 4096];
        assert_eq!(same_filled(&z), Some(0));
        let s: Vec<u8> = (0..4096).map(|i| [1u8, 2, 3, 4, 5, 6, 7, 8][i % 8]).collect();
        assert!(same_filled(&s).is_some_and(|v| v != 0));
        let mut d = s.clone();
        d[4095] ^= 1;
        assert_eq!(same_filled(&d), None);
    }
}
