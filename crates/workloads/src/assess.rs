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

use crate::backing::{self, BackingKind};
use crate::compress::{PageCompressor, same_filled};
use crate::observe::{ExperimentError, Observer};
use probe::Probe;
use probe::process::{MemKind, SmapsEntry};
use record::results::assess::{
    AssessResult, Compress, Compressibility, DamonRun, Kinds, Latency, MglruRun, PACE_PROBE_S, Point, Source, Target,
    Trim, Window,
};
use sandbox::Sandbox;
use sandbox::worker::{Worker, WorkerSpec};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long DAMON watches before the longest window starts counting: its
/// regions split and merge to follow the access pattern in the first second or so.
const DAMON_SETTLE: Duration = Duration::from_secs(2);

/// Google's zswap does not store a page that compresses to more than this.
pub const REJECT_ABOVE: usize = 2990;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WssSource {
    /// DAMON where pagelab can own a kdamond (root, and DAMON's list empty),
    /// else MGLRU where the target has a memory cgroup to itself, else the
    /// referenced bits.
    Auto,
    Referenced,
    Damon,
    Mglru,
}

impl WssSource {
    pub fn parse(s: &str) -> Option<WssSource> {
        match s {
            "auto" => Some(WssSource::Auto),
            "referenced" => Some(WssSource::Referenced),
            "damon" => Some(WssSource::Damon),
            "mglru" => Some(WssSource::Mglru),
            _ => None,
        }
    }
}

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
fn mglru_unavailable(cfg: &AssessConfig) -> Option<String> {
    let mut p = Probe::default();
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
fn damon_unavailable() -> Option<String> {
    if !sandbox::privilege::is_root() {
        return Some("needs root (DAMON's admin files)".into());
    }
    sandbox::damon::unavailable(std::path::Path::new("/sys"))
}

fn err(msg: impl Into<String>) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg.into()))
}

/// Checks a request before anything is started or changed.
pub fn validate(cfg: &AssessConfig) -> Result<(), ExperimentError> {
    let given = cfg.pid.is_some() as u8 + (!cfg.command.is_empty()) as u8 + cfg.synthetic.is_some() as u8;
    if given != 1 {
        return Err(err("pagelab assess needs one target: --pid PID, --synthetic SIZE, or a command after --"));
    }
    if let Some(pid) = cfg.pid {
        check_pid(pid)?;
    }
    if cfg.windows.is_empty() {
        return Err(err("--windows: give at least one window, e.g. 1s,10s,60s"));
    }
    let unavailable = match cfg.source {
        WssSource::Damon => damon_unavailable().map(|w| ("damon", w)),
        WssSource::Mglru => mglru_unavailable(cfg).map(|w| ("mglru", w)),
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
        backing::validate(kind, cfg.compressor.as_deref())?;
        if backing::resolve(kind) == BackingKind::None {
            return Err(err(
                "--trim: no swap to trim into: no swap is active, and a zram swap needs root (run as root, or swapon a swap area)",
            ));
        }
    } else if cfg.compressor.is_some() {
        return Err(err("--compressor only applies with --trim zram"));
    }
    Ok(())
}

/// Refuses what assess must never touch: no such process, PID 1, kernel threads.
pub fn check_pid(pid: i32) -> Result<(), ExperimentError> {
    let mut p = Probe::default();
    let st = p.pid_status(pid).ok().flatten();
    match st {
        None if pid > 0 => Err(err(format!("--pid {pid}: no such process"))),
        None => Err(err(format!("--pid {pid}: not a process id (expected a positive integer)"))),
        Some(_) if pid == 1 => Err(err("--pid 1: refusing to assess init (PID 1)")),
        Some(s) if s.vm_rss.is_none() => Err(err(format!("--pid {pid}: a kernel thread, which has no user memory"))),
        Some(_) => Ok(()),
    }
}

/// The process being assessed: one pagelab started is killed at the end; one
/// given by `--pid` is left alone.
#[derive(Default)]
struct Proc {
    child: Option<std::process::Child>,
    worker: Option<Worker>,
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
        if let Some(w) = self.worker.take() {
            w.kill();
        }
    }
}

fn alive(pid: i32) -> bool {
    Probe::default().pid_status(pid).ok().flatten().is_some_and(|s| s.vm_rss.is_some())
}

/// Sleeps until `until`, in steps, failing when stopped or when the target exits.
fn wait_until(until: Instant, pid: i32, what: &str, stop: &dyn Fn() -> bool) -> Result<(), ExperimentError> {
    loop {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        if !alive(pid) {
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
fn memcg_path(proc_: &Proc, pid: i32) -> Result<String, ExperimentError> {
    if let Some((_, cg)) = &proc_.group {
        return Ok(format!("/{}", cg.name));
    }
    match Probe::default().memory_cgroup_of(Some(pid)) {
        Ok(Some(cg)) => Ok(cg.name),
        _ => Err(ExperimentError::Worker(format!("pid {pid}: no memory cgroup found"))),
    }
}

fn start(cfg: &AssessConfig, target: &mut Target, own_group: bool) -> Result<(Proc, i32), ExperimentError> {
    if let Some(pid) = cfg.pid {
        return Ok((Proc::default(), pid));
    }
    let mut proc_ = Proc::default();
    if own_group {
        let mut sb = Sandbox::new("assess");
        let cg = sb.memory_cgroup("assess", &sandbox::cgroup::Limits::default())?;
        proc_.group = Some((sb, cg));
    }
    if let Some(size) = cfg.synthetic {
        let mut w = Worker::spawn(WorkerSpec {
            exe: cfg.exe.clone(),
            args: vec![
                "__worker".into(),
                "toucher".into(),
                "--size".into(),
                size.to_string(),
                "--hot".into(),
                cfg.hot.to_string(),
            ],
            cgroup: proc_.group.as_ref().map(|(_, cg)| cg),
            env: Vec::new(),
            label: "toucher".into(),
        })?;
        let ready = w
            .wait_for("ready", None, Duration::from_secs(120), |_| {}, || false)
            .map_err(|f| ExperimentError::Worker(f.to_string()))?;
        target.synthetic_bytes = Some(size);
        target.synthetic_hot_fraction = Some(cfg.hot);
        target.synthetic_pattern = ready.data["pattern"].as_str().map(String::from);
        target.synthetic_lz4_estimate = ready.data["lz4_estimate"].as_f64();
        let pid = w.pid;
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
    let child = cmd.spawn().map_err(|e| err(format!("cannot run '{}': {e}", cfg.command[0])))?;
    target.command = cfg.command.clone();
    let pid = child.id() as i32;
    proc_.child = Some(child);
    Ok((proc_, pid))
}

/// Clears the accessed bits of every page of the process (`clear_refs` 1).
fn clear_refs(pid: i32) -> Result<(), ExperimentError> {
    sandbox::mm::clear_refs(Path::new("/proc"), pid).map_err(|e| {
        err(format!(
            "cannot clear pid {pid}'s referenced bits (/proc/{pid}/clear_refs: {e}); assess needs to own the process or be root"
        ))
    })
}

fn smaps(pid: i32, what: &str) -> Result<Vec<SmapsEntry>, ExperimentError> {
    match Probe::default().pid_smaps(pid) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(ExperimentError::Worker(format!("pid {pid} exited during {what}"))),
        Err(e) => Err(err(format!("/proc/{pid}/smaps: {e}"))),
    }
}

/// Resident and referenced bytes by kind; referenced is split in each mapping
/// in proportion to its kinds' resident bytes.
fn window_of(seconds: f64, maps: &[SmapsEntry]) -> Window {
    let (mut res, mut refd) = (Kinds::default(), Kinds::default());
    for m in maps {
        let referenced = m.referenced.min(m.rss);
        for (kind, bytes) in m.split() {
            let r = if m.rss == 0 { 0 } else { (referenced as u128 * bytes as u128 / m.rss as u128) as u64 };
            *slot(&mut res, kind) += bytes;
            *slot(&mut refd, kind) += r;
        }
    }
    window(seconds, res, refd)
}

/// A window from its resident and referenced bytes: cold = 1 − referenced ÷
/// resident per kind (NaN where nothing of a kind is resident).
fn window(seconds: f64, resident: Kinds, referenced: Kinds) -> Window {
    let cold = |r: u64, t: u64| if t == 0 { f64::NAN } else { 1.0 - r as f64 / t as f64 };
    Window {
        seconds,
        resident,
        referenced,
        cold_anon: cold(referenced.anon, resident.anon),
        cold_file: cold(referenced.file, resident.file),
        cold_shmem: cold(referenced.shmem, resident.shmem),
        cold_total: cold(referenced.total(), resident.total()),
    }
}

/// The working-set sources the kernel may offer, and which one is used:
/// the one asked for, or with `auto` the first available of DAMON (per page),
/// MGLRU (per cgroup) and the referenced bits (per mapping).
fn sources(cfg: &AssessConfig) -> Vec<Source> {
    let root = sandbox::privilege::is_root();
    let idle = Probe::default().page_idle_present();
    let damon_why = damon_unavailable();
    let mglru_why = mglru_unavailable(cfg);
    let pick = match cfg.source {
        WssSource::Auto if damon_why.is_none() => WssSource::Damon,
        WssSource::Auto if mglru_why.is_none() => WssSource::Mglru,
        WssSource::Auto => WssSource::Referenced,
        other => other,
    };
    let why = |unavailable: &Option<String>, me: WssSource, how: &str| match unavailable {
        Some(w) => w.clone(),
        None if pick == me => how.to_string(),
        None => format!(
            "available; {} was used",
            match pick {
                WssSource::Damon => "DAMON",
                WssSource::Mglru => "MGLRU",
                _ => "the referenced bits",
            }
        ),
    };
    vec![
        Source {
            name: DAMON.into(),
            used: pick == WssSource::Damon,
            why: why(
                &damon_why,
                WssSource::Damon,
                "regions of the process's address space with their access counts and ages; pages are classed one by one by the region that holds them",
            ),
        },
        Source {
            name: MGLRU.into(),
            used: pick == WssSource::Mglru,
            why: why(
                &mglru_why,
                WssSource::Mglru,
                "the target's memory cgroup aged once per window boundary; pages counted per generation (anon includes shmem), not which pages",
            ),
        },
        Source {
            name: REFERENCED.into(),
            used: pick == WssSource::Referenced,
            why: "every kernel since 2.6.22; the process's owner may use it; per mapping, not per page".into(),
        },
        Source {
            name: "idle page tracking".into(),
            used: false,
            why: match (idle, root) {
                (false, _) => "not in this kernel (/sys/kernel/mm/page_idle absent)".into(),
                (true, false) => "needs root (page frame numbers in pagemap)".into(),
                (true, true) => "present; pagelab does not read it yet".into(),
            },
        },
    ]
}

fn slot(k: &mut Kinds, kind: MemKind) -> &mut u64 {
    match kind {
        MemKind::Anon => &mut k.anon,
        MemKind::File => &mut k.file,
        MemKind::Shmem => &mut k.shmem,
    }
}

/// DAMON's regions as an idle time per address.
struct Idle<'a> {
    regions: &'a [sandbox::damon::Region],
    aggr_s: f64,
}

impl Idle<'_> {
    /// How long the region holding `addr` has gone without an access seen:
    /// (age + 1) aggregation intervals when its count is 0, else 0. Addresses
    /// DAMON does not watch count as touched (never called cold on no evidence).
    fn at(&self, addr: usize) -> f64 {
        let i = self.regions.partition_point(|r| r.end <= addr);
        match self.regions.get(i) {
            Some(r) if r.start <= addr && r.nr_accesses == 0 => (r.age as f64 + 1.0) * self.aggr_s,
            _ => 0.0,
        }
    }
}

/// DAMON's pace between two reads of its regions `dt_s` apart: the largest
/// age gained by a region idle in both (it gains one per aggregation done) ×
/// the nominal interval ÷ `dt_s`, within 0.05..1. kdamond counts aggregations
/// in sampling rounds, so when it is starved of CPU its regions age slower
/// than the clock. 1 (on time) when no region was idle in both reads: then
/// no region has been idle longer than `dt_s` anyway.
fn damon_pace(before: &[sandbox::damon::Region], after: &[sandbox::damon::Region], dt_s: f64, aggr_s: f64) -> f64 {
    let idle = |r: &&sandbox::damon::Region| r.nr_accesses == 0;
    let gained = after
        .iter()
        .filter(idle)
        .flat_map(|b| {
            before.iter().filter(idle).filter(move |a| a.start < b.end && b.start < a.end).map(move |a| (a, b))
        })
        .filter(|(a, b)| b.age >= a.age)
        .map(|(a, b)| b.age - a.age)
        .max();
    match gained {
        Some(g) if dt_s > 0.0 => (g as f64 * aggr_s / dt_s).clamp(0.05, 1.0),
        _ => 1.0,
    }
}

/// The windows from one read of DAMON's regions: every resident page (pagemap)
/// is classed by kind and by the idle time of the region that holds it; it is
/// cold at a window when it was idle at least that long.
fn damon_windows(pid: i32, windows: &[f64], maps: &[SmapsEntry], idle: &Idle) -> Result<Vec<Window>, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let mut res = Kinds::default();
    let mut cold = vec![Kinds::default(); windows.len()];
    let probe = Probe::default();
    for m in maps.iter().filter(|m| m.rss > 0 && m.map.name != "[vsyscall]") {
        let entries = match probe.pid_pagemap(pid, m.map.start, m.map.len() / page, page) {
            Ok(e) => e,
            Err(e) if !alive(pid) => return Err(ExperimentError::Worker(format!("pid {pid} exited ({e})"))),
            Err(_) => continue, // unmapped meanwhile
        };
        for (i, e) in entries.iter().enumerate().filter(|(_, e)| e.present()) {
            let kind = if m.map.is_shmem() {
                MemKind::Shmem
            } else if e.file_or_shared() {
                MemKind::File
            } else {
                MemKind::Anon
            };
            *slot(&mut res, kind) += page as u64;
            let t = idle.at(m.map.start + i * page);
            for (w, c) in windows.iter().zip(cold.iter_mut()) {
                if t >= *w {
                    *slot(c, kind) += page as u64;
                }
            }
        }
    }
    Ok(windows.iter().zip(cold).map(|(w, c)| window(*w, res, res.minus(&c))).collect())
}

/// Reads `buf.len()` bytes at `addr` of the process.
fn vm_read(pid: i32, addr: usize, buf: &mut [u8]) -> std::io::Result<usize> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: one local iovec over our buffer; the kernel checks the remote one.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// How the pages read are split into cold and hot.
enum Split<'a> {
    /// Page by page: whether the page at an address is cold (DAMON).
    PerPage(&'a dyn Fn(usize) -> bool),
    /// By each mapping's referenced share (the referenced bits).
    PerMapping,
    /// Not at all (MGLRU counts a group's pages, not which ones).
    None,
}

/// Reads and compresses the resident anonymous pages, split into cold and hot
/// as `split` can tell.
fn compressibility(
    pid: i32,
    maps: &[SmapsEntry],
    max_read: u64,
    split: Split,
    stop: &dyn Fn() -> bool,
) -> Result<Compress, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let anon: Vec<&SmapsEntry> = maps.iter().filter(|m| m.map.is_private() && m.anonymous > 0).collect();
    let mut present = Vec::new();
    let probe = Probe::default();
    for m in &anon {
        let n = m.map.len() / page;
        let p = probe.pid_pagemap(pid, m.map.start, n, page).map_err(|e| err(format!("/proc/{pid}/pagemap: {e}")))?;
        present.push(p.into_iter().map(|e| e.present()).collect::<Vec<bool>>());
    }
    let resident: u64 = present.iter().map(|p| p.iter().filter(|x| **x).count() as u64).sum();
    let step = resident.div_ceil((max_read / page as u64).max(1)).max(1);
    let mut pc = PageCompressor::new(page);
    let mut out = Compress { page_size: page as u64, resident_pages: resident, ..Default::default() };
    let mut buf = vec![0u8; page];
    let mut seen = 0u64;
    for (m, pres) in anon.iter().zip(&present) {
        // This mapping's hot share; its pages are dealt to hot and cold in that
        // proportion, evenly along the mapping (the share is per mapping only).
        let share = if m.rss == 0 { 0.0 } else { (m.referenced.min(m.rss)) as f64 / m.rss as f64 };
        let mut k = 0u64;
        for (i, _) in pres.iter().enumerate().filter(|(_, p)| **p) {
            seen += 1;
            if (seen - 1) % step != 0 {
                continue;
            }
            if stop() {
                return Err(ExperimentError::Interrupted);
            }
            let addr = m.map.start + i * page;
            match vm_read(pid, addr, &mut buf) {
                Ok(n) if n == page => {}
                Ok(_) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    return Err(ExperimentError::Worker(format!("pid {pid} exited while its pages were read")));
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    return Err(err(format!(
                        "cannot read pid {pid}'s memory (process_vm_readv: {e}); assess needs ptrace access: be its owner (with kernel.yama.ptrace_scope 0) or root"
                    )));
                }
                Err(_) => continue, // unmapped meanwhile
            }
            let mut c = Compressibility { pages: 1, ..Default::default() };
            match same_filled(&buf) {
                Some(0) => c.zero_pages = 1,
                Some(_) => c.same_filled_pages = 1,
                None => {
                    let (l, z) = pc.sizes(&buf);
                    c.lz4_bytes = l as u64;
                    c.zstd_bytes = z as u64;
                    c.lz4_over_2990 = (l > REJECT_ABOVE) as u64;
                    c.zstd_over_2990 = (z > REJECT_ABOVE) as u64;
                }
            }
            let hot = match split {
                Split::PerPage(cold) => Some(!cold(addr)),
                Split::PerMapping => Some(((k + 1) as f64 * share).floor() > (k as f64 * share).floor()),
                Split::None => None,
            };
            k += 1;
            out.all.add(&c);
            match hot {
                Some(true) => out.hot.add(&c),
                Some(false) => out.cold.add(&c),
                None => {}
            }
        }
    }
    out.ratio_lz4 = out.all.ratio(true, page as u64);
    out.ratio_zstd = out.all.ratio(false, page as u64);
    out.split = match split {
        Split::PerPage(_) => "per page: cold when DAMON's region holding it went unaccessed for the longest window",
        Split::PerMapping => "per mapping: each mapping's pages dealt to hot and cold by its referenced share",
        Split::None => "not split: MGLRU counts the group's pages per generation, not which pages",
    }
    .into();
    Ok(out)
}

/// The target's memory cgroup in lru_gen.
fn lru_gen_of(path: &str) -> Result<probe::lru_gen::Memcg, ExperimentError> {
    let all = match Probe::default().lru_gen() {
        Ok(Some(all)) => all,
        Ok(None) => return Err(err(format!("{LRU_GEN} is gone"))),
        Err(e) => return Err(err(e.to_string())),
    };
    all.into_iter().find(|m| m.path == path).ok_or_else(|| err(format!("{LRU_GEN} lists no memory cgroup {path}")))
}

/// One MGLRU pass over the windows `w_1 < … < w_n`: the target's memory
/// cgroup is aged at `T − w_n, T − w_(n−1), …, T − w_1` and at `T`. Each aging
/// walks the page tables, moves every page it finds accessed into the
/// youngest generation, then opens a new, empty one. A page therefore sits in
/// the generation that was youngest when an aging last found it accessed, and
/// the pages below the generation opened at `T − w_k` were not touched within
/// `w_k`: cold at that window. (A page faulted in between agings joins a young
/// generation and counts as touched.)
fn mglru_pass(
    pid: i32,
    path: &str,
    windows: &[Duration],
    stop: &dyn Fn() -> bool,
) -> Result<(Vec<Window>, MglruRun), ExperimentError> {
    let n = windows.len();
    let longest = windows[n - 1];
    // Offsets from t0 of the agings: 0, w_n − w_(n−1), …, w_n − w_1, w_n.
    let mut at: Vec<Duration> = vec![Duration::ZERO];
    at.extend((1..n).map(|j| longest - windows[n - 1 - j]));
    at.push(longest);
    let t0 = Instant::now();
    // The youngest sequence number per node after each aging.
    let mut made: Vec<Vec<(u32, u64)>> = Vec::new();
    let mut last = None;
    for (j, off) in at.iter().enumerate() {
        wait_until(t0 + *off, pid, &format!("MGLRU aging {}", j + 1), stop)?;
        let m = lru_gen_of(path)?;
        for node in &m.nodes {
            let Some(max) = node.max_seq() else { continue };
            sandbox::mm::lru_gen_age(Path::new("/sys"), m.id, node.node, max)
                .map_err(|e| err(format!("{LRU_GEN}: aging memcg {} node {}: {e}", m.id, node.node)))?;
        }
        let after = lru_gen_of(path)?;
        let seqs: Vec<(u32, u64)> = after.nodes.iter().filter_map(|nd| Some((nd.node, nd.max_seq()?))).collect();
        for ((node, now), nd) in seqs.iter().zip(&m.nodes) {
            if nd.max_seq().is_some_and(|b| *now <= b) {
                return Err(ExperimentError::Worker(format!("MGLRU did not age node {node} of {path}")));
            }
        }
        made.push(seqs);
        last = Some(after);
    }
    let m = last.expect("at least two agings");
    let out = mglru_windows(windows, &made, &m, probe::environment::page_size());
    let run = MglruRun {
        memcg: path.to_string(),
        memcg_id: m.id,
        agings_s: at.iter().map(|d| d.as_secs_f64()).collect(),
        generations: m.nodes.iter().map(|n| n.gens.len() as u32).sum(),
    };
    Ok((out, run))
}

/// The windows from the generations at `T` and the youngest sequence numbers
/// after each aging (`made[j]`, per node; aging j at `T − w_(n−j)`, the last at `T`).
fn mglru_windows(windows: &[Duration], made: &[Vec<(u32, u64)>], m: &probe::lru_gen::Memcg, page: u64) -> Vec<Window> {
    let n = windows.len();
    let mut res = Kinds::default();
    let mut cold = vec![Kinds::default(); n];
    for node in &m.nodes {
        for g in &node.gens {
            res.anon += g.anon * page;
            res.file += g.file * page;
            for (k, c) in cold.iter_mut().enumerate() {
                // An aging moves the pages it finds accessed into the youngest
                // generation, then opens a new one. So the pages of window k
                // (0-based, ascending) that were touched after T − w_k sit in
                // generations at or above the one opened at T − w_k: the cold
                // ones lie below it.
                let bound = made[n - 1 - k].iter().find(|(nd, _)| *nd == node.node).map(|x| x.1);
                if bound.is_some_and(|b| g.seq < b) {
                    c.anon += g.anon * page;
                    c.file += g.file * page;
                }
            }
        }
    }
    // Shmem is counted with anon (both swap-backed): none resident apart, so its cold is NaN.
    windows.iter().zip(cold).map(|(w, c)| window(w.as_secs_f64(), res, res.minus(&c))).collect()
}

/// Runs the probe command once: its latency in ms, or why it failed.
fn probe_once(cmd: &str) -> Result<f64, String> {
    let t = Instant::now();
    let mut c = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("sh -c: {e}"))?;
    loop {
        if let Some(st) = c.try_wait().map_err(|e| e.to_string())? {
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if st.success() {
                return Ok(ms);
            }
            let mut e = String::new();
            if let Some(mut s) = c.stderr.take() {
                use std::io::Read;
                let _ = s.read_to_string(&mut e);
            }
            let first = e.lines().next().unwrap_or("").trim().to_string();
            return Err(format!("{st}{}", if first.is_empty() { String::new() } else { format!(": {first}") }));
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = c.kill();
            let _ = c.wait();
            return Err("took more than 10 s".into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn probe_runs(cmd: &str, n: u32) -> (Latency, Option<String>) {
    let mut ms = Vec::new();
    let mut l = Latency { runs: n, ..Default::default() };
    let mut first_err = None;
    for _ in 0..n {
        match probe_once(cmd) {
            Ok(x) => ms.push(x),
            Err(e) => {
                l.failures += 1;
                first_err.get_or_insert(e);
            }
        }
    }
    l.p50_ms = record::stats::percentile(&ms, 0.5).unwrap_or(f64::NAN);
    l.p99_ms = record::stats::percentile(&ms, 0.99).unwrap_or(f64::NAN);
    (l, first_err)
}

/// The process's private mappings, as process_madvise ranges.
pub fn private_ranges(pid: i32) -> Result<Vec<(usize, usize)>, String> {
    let maps = Probe::default().pid_maps(pid).map_err(|e| e.to_string())?.ok_or("the process is gone")?;
    Ok(maps
        .iter()
        .filter(|m| m.is_private() && !m.is_empty() && m.name != "[vsyscall]")
        .map(|m| (m.start, m.len()))
        .collect())
}

/// MADV_PAGEOUT (or MADV_COLD) over the process's private mappings.
pub fn advise(pid: i32, advice: i32) -> Result<usize, String> {
    let fd = crate::mm::PidFd::open(pid).map_err(|e| format!("pidfd_open({pid}): {e}"))?;
    let ranges = private_ranges(pid).map_err(|e| format!("reading /proc/{pid}/maps: {e}"))?;
    crate::mm::process_madvise(&fd, &ranges, advice).map_err(|e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            format!("not permitted on pid {pid}: process_madvise needs CAP_SYS_NICE (and ptrace access); run as root")
        } else {
            format!("process_madvise on pid {pid}: {e}")
        }
    })
}

struct Follow {
    rss_anon: u64,
    swap: u64,
    majflt: u64,
}

fn follow_point(pid: i32) -> Option<Follow> {
    let mut p = Probe::default();
    let st = p.pid_status(pid).ok().flatten()?;
    let stat = p.pid_stat(pid).ok().flatten()?;
    Some(Follow { rss_anon: st.rss_anon.unwrap_or(0), swap: st.vm_swap.unwrap_or(0), majflt: stat.majflt })
}

fn psi_some_us() -> Option<u64> {
    Probe::default().pressure("memory").ok().flatten().map(|p| p.some.total_us)
}

/// The store's sizes: our zram device's, or the swap in use for an existing store.
fn store_sizes(zram: Option<u32>) -> (u64, u64, u64) {
    let mut p = Probe::default();
    match zram {
        Some(id) => p
            .zram_mm_stat(id)
            .ok()
            .flatten()
            .map(|m| (m.orig_data_size, m.compr_data_size, m.mem_used_total))
            .unwrap_or_default(),
        None => {
            let m = p.meminfo().ok().flatten().unwrap_or_default();
            let used = m.get("SwapTotal").unwrap_or(0).saturating_sub(m.get("SwapFree").unwrap_or(0));
            let zs = m.get("Zswap").unwrap_or(0);
            (used, zs, zs)
        }
    }
}

fn trim(
    cfg: &AssessConfig,
    kind: BackingKind,
    pid: i32,
    ws: u64,
    obs: &mut dyn Observer,
    stop: &dyn Fn() -> bool,
) -> Result<Trim, ExperimentError> {
    let mut t = Trim { working_set_bytes: ws, ..Default::default() };
    // The probe first: a probe that fails before anything changed is bad input.
    if let Some(cmd) = &cfg.probe {
        let (l, e) = probe_runs(cmd, cfg.probe_runs);
        if let Some(e) = e {
            return Err(err(format!("--probe '{cmd}' failed before the trim ({e}); give a command that succeeds")));
        }
        t.probe_before = Some(l);
    }
    let before =
        follow_point(pid).ok_or_else(|| ExperimentError::Worker(format!("pid {pid} exited before the trim")))?;
    let mut sb = Sandbox::new("assess");
    let back = backing::setup(&mut sb, kind, cfg.compressor.as_deref(), before.rss_anon, &cfg.swapfile_dir)?;
    for n in &back.notes {
        obs.note(n);
    }
    t.store = back.kind.clone();
    t.compressor = back.compressor.clone();
    obs.targets(vec![pid], None, back.zram_id.into_iter().collect());
    t.rss_anon_before_bytes = before.rss_anon;
    let t0 = Instant::now();
    obs.event("phase_start", "trim", probe::sample::monotonic_ns(), json!({}));
    advise(pid, crate::mm::MADV_PAGEOUT).map_err(err)?;
    obs.event("phase_end", "trim", probe::sample::monotonic_ns(), json!({}));
    t.seconds = t0.elapsed().as_secs_f64();
    let after =
        follow_point(pid).ok_or_else(|| ExperimentError::Worker(format!("pid {pid} exited during the trim")))?;
    t.rss_anon_after_bytes = after.rss_anon;
    if let Some(cmd) = &cfg.probe {
        t.probe_after = Some(probe_runs(cmd, cfg.probe_runs).0);
    }
    // Follow the working set re-forming.
    let (psi0, f0) = (psi_some_us(), Instant::now());
    let start = Instant::now();
    let mut ended = None;
    loop {
        let s = start.elapsed().as_secs_f64();
        let Some(f) = follow_point(pid) else {
            ended = Some(format!("pid {pid} exited {s:.1} s after the trim; the curve stops there"));
            break;
        };
        let (o, c, u) = store_sizes(back.zram_id);
        t.curve.push(Point {
            t_s: s,
            rss_anon_bytes: f.rss_anon,
            swap_bytes: f.swap,
            major_faults: f.majflt.saturating_sub(after.majflt),
            store_orig_bytes: o,
            store_compr_bytes: c,
            store_used_bytes: u,
        });
        if start.elapsed() >= cfg.duration || stop() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500).min(cfg.duration));
    }
    if let Some(e) = ended {
        obs.note(&e);
    }
    let elapsed = f0.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (psi0, psi_some_us()) {
        t.psi_some_pct = (b.saturating_sub(a)) as f64 / 1e4 / elapsed;
    }
    if let Some(last) = t.curve.last() {
        t.major_faults_per_s = last.major_faults as f64 / last.t_s.max(1e-3);
        let swapped_in = after.swap.saturating_sub(last.swap_bytes);
        t.swap_in_bytes = swapped_in;
        if ws > 0 && last.t_s > 0.0 {
            t.swap_in_pct_ws_per_min = swapped_in as f64 / ws as f64 * 100.0 / (last.t_s / 60.0);
        }
    }
    t.major_faults_first_5s = t.curve.iter().filter(|p| p.t_s <= 5.0).map(|p| p.major_faults).max().unwrap_or(0);
    // The store made for the run goes only when that is safe: swapoff brings
    // its pages back into RAM.
    if let Some(id) = back.zram_id {
        let (orig, _, used) = store_sizes(Some(id));
        let need = orig.saturating_sub(used);
        let avail = Probe::default().meminfo().ok().flatten().and_then(|m| m.get("MemAvailable")).unwrap_or(0);
        let margin = (avail / 10).max(256 << 20);
        if alive(pid) && need + margin > avail {
            t.store_note = format!(
                "zram{id} left in place: swapoff would bring {} MiB back into RAM and only {} MiB is available; `pagelab restore` removes it once there is room",
                need >> 20,
                avail >> 20
            );
            obs.note(&t.store_note);
            // Keep the journal (and the device): the next pagelab run, or
            // `pagelab restore`, undoes it.
            std::mem::forget(sb);
            return Ok(t);
        }
        t.store_note = format!(
            "zram{id} removed: swapoff brought {} MiB back into RAM ({} MiB was available)",
            need >> 20,
            avail >> 20
        );
        t.store_removed = true;
    }
    sb.restore()?;
    Ok(t)
}

/// Runs the assessment: `repeat` times the windows and the compressibility,
/// each a result of its own, then the trim (if asked) after the last.
pub fn run(
    cfg: &AssessConfig,
    obs: &mut dyn Observer,
    stop: &dyn Fn() -> bool,
) -> Result<AssessResult, ExperimentError> {
    validate(cfg)?;
    let mut base = AssessResult { sources: sources(cfg), ..Default::default() };
    base.source = base.sources.iter().find(|s| s.used).map(|s| s.name.clone()).unwrap_or_default();
    let (proc_, pid) = start(cfg, &mut base.target, base.source == MGLRU && cfg.pid.is_none())?;
    let memcg = if base.source == MGLRU { Some(memcg_path(&proc_, pid)?) } else { None };
    base.target.pid = pid;
    base.target.comm = Probe::default().pid_comm(pid).unwrap_or_default();
    obs.targets(vec![pid], None, Vec::new());
    if proc_.started() {
        wait_until(Instant::now() + cfg.warmup, pid, "the warm-up", stop)?;
        // A wrapper script may have exec'd the program by now.
        base.target.comm = Probe::default().pid_comm(pid).unwrap_or_default();
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
        match measure(cfg, pid, memcg.as_deref(), &mut r, i == repeat, obs, stop) {
            Ok(()) => obs.result(serde_json::to_value(&r).unwrap_or_default()),
            Err(e) => {
                // What was measured before the failure is kept, saying what happened.
                if !r.windows.is_empty() {
                    r.notes.push(format!("incomplete: {e}"));
                    obs.result(serde_json::to_value(&r).unwrap_or_default());
                }
                return Err(e);
            }
        }
        last = r;
    }
    drop(proc_);
    Ok(last)
}

fn measure(
    cfg: &AssessConfig,
    pid: i32,
    memcg: Option<&str>,
    r: &mut AssessResult,
    then_trim: bool,
    obs: &mut dyn Observer,
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
        wait_until(end - Duration::from_secs_f64(PACE_PROBE_S), pid, "DAMON's watch", stop)?;
        let before = mon.regions()?;
        let t_before = Instant::now();
        wait_until(end, pid, "DAMON's watch", stop)?;
        regions = mon.regions()?;
        let pace = damon_pace(&before, &regions, t_before.elapsed().as_secs_f64(), iv.aggr.as_secs_f64());
        let maps = smaps(pid, "the windows")?;
        let monitored_s = t0.elapsed().as_secs_f64();
        sb.restore()?;
        aggr_s = iv.aggr.as_secs_f64() / pace;
        let idle = Idle { regions: &regions, aggr_s };
        let secs: Vec<f64> = windows.iter().map(|w| w.as_secs_f64()).collect();
        r.windows = damon_windows(pid, &secs, &maps, &idle)?;
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
        let (w, run) = mglru_pass(pid, path, &windows, stop)?;
        r.windows = w;
        r.mglru = Some(run);
        smaps(pid, "the windows")?
    } else {
        clear_refs(pid)?;
        let t0 = Instant::now();
        let mut last = Vec::new();
        for w in &windows {
            wait_until(t0 + *w, pid, &format!("the {} s window", w.as_secs_f64()), stop)?;
            last = smaps(pid, "the windows")?;
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
    r.compress = Some(compressibility(pid, &last, cfg.max_read, split, stop)?);
    obs.event("phase_end", &format!("compress {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    if let (Some(kind), true) = (cfg.trim, then_trim) {
        let ws = r.longest().map(|w| w.referenced.anon).unwrap_or(0);
        r.trim = Some(trim(cfg, kind, pid, ws, obs, stop)?);
    }
    Ok(())
}

/// The synthetic target (`pagelab __worker toucher --size N --hot F`): fills
/// N bytes with eat's semi pattern, then reads one byte of every page of the
/// first F of them every 20 ms, until killed.
pub fn toucher_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let arg = |n: &str| args.iter().position(|a| a == n).and_then(|i| args.get(i + 1));
    let size: usize = arg("--size").and_then(|v| v.parse().ok()).ok_or("toucher needs --size BYTES")?;
    let hot: f64 = arg("--hot").and_then(|v| v.parse().ok()).ok_or("toucher needs --hot FRACTION")?;
    let page = crate::mm::page_size();
    let mut m = crate::mm::Mapping::anon(size.max(page), 0).map_err(|e| format!("mmap of {size} bytes: {e}"))?;
    // eat's semi pattern at eat's default block (20 bytes), so the two can be compared.
    crate::fill::fill(m.as_mut_slice(), crate::fill::Pattern::Semi, 20, 1);
    let est = crate::compress::estimate(m.as_slice(), page);
    io.emit("ready", "", json!({"pattern": "semi", "lz4_estimate": est.lz4, "zstd_estimate": est.zstd}));
    let hot_pages = ((size / page) as f64 * hot).round() as usize;
    let buf = m.as_slice();
    loop {
        let mut x = 0u8;
        for i in 0..hot_pages {
            // SAFETY: in bounds of our mapping; volatile so the read happens.
            x ^= unsafe { std::ptr::read_volatile(buf.as_ptr().add(i * page)) };
        }
        std::hint::black_box(x);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let page = crate::mm::page_size();
        let mut m = crate::mm::Mapping::anon(64 * page, 0).unwrap();
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
        let w = damon_windows(pid, &[0.5, 1.0, 10.0], &maps, &idle).unwrap();
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

    #[test]
    fn bad_targets_are_refused() {
        let e = check_pid(1).unwrap_err().to_string();
        assert!(e.contains("init"), "{e}");
        let e = check_pid(2).unwrap_err().to_string();
        assert!(e.contains("kernel thread"), "{e}");
        let e = check_pid(i32::MAX).unwrap_err().to_string();
        assert!(e.contains("no such process"), "{e}");
    }
}
