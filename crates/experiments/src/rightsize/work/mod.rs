//! `rightsize`: how much memory to give a program.
//!
//! **Batch mode** runs the command again and again, each run in a memory
//! cgroup made for it (journaled, removed after the run), unlimited or under a
//! limit, with a store made for the search (`--backing`) taking what does not
//! fit; [`search`] decides where to spend the runs. **Service mode**
//! ([`service`]) never restarts anything: it reclaims from a running process or
//! cgroup in small steps while the pressure stays under a threshold.
//!
//! Every run's group is capped: an unlimited run's at what the host guard
//! allows, so a program that grows without bound meets its own group's limit,
//! never the machine's.

mod answer;
mod checked;
pub mod hotcold;
pub mod predict;
pub mod search;
pub mod service;

use crate::rightsize::results::{Baseline, CurvePoint, Plan, ProgramRun, RightsizeResult};
use answer::{recommend, unanswered, unverified};
use probe::Probe;
use crate::kit::store::{Store, store_size, swap_used};
use probe::cgroup::CgroupVersion;
use record::stats::claim;
use sandbox::Sandbox;
use sandbox::cgroup::{Limits, MemCgroup};
use search::{MIB, Outcome, Role, Runner, SearchConfig, Trial};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use workloads::backing::{self, BackingKind};
use workloads::observe::{ExperimentError, Observer};

#[derive(Debug, Clone)]
pub struct BatchConfig {
    pub command: Vec<String>,
    pub search: SearchConfig,
    pub backing: BackingKind,
    pub compressor: Option<String>,
    pub swapfile_dir: PathBuf,
    /// The most any run's group may use (the host guard's room).
    pub guard_max: u64,
    /// Set when the command is pagelab's hot/cold worker.
    pub synthetic: Option<(u64, u64)>,
    /// The node the answer's Kubernetes terms are for.
    pub node: crate::rightsize::kube::Node,
}

fn err(msg: impl Into<String>) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg.into()))
}

/// Stall totals (some, full), µs: the group's on v2, the machine's on v1;
/// none when unread (full alone may be missing: older kernels lack it).
fn psi_us(p: &mut Probe, cg: &MemCgroup) -> Option<(u64, Option<u64>)> {
    let p = match cg.version {
        CgroupVersion::V2 => {
            std::fs::read_to_string(cg.dir.join("memory.pressure")).ok().and_then(|t| probe::pressure::parse(&t).ok())
        }
        CgroupVersion::V1 => p.pressure("memory").ok().flatten(),
    };
    p.map(|p| (p.some.total_us, p.full.map(|f| f.total_us)))
}

fn pswpin(p: &mut Probe) -> Option<u64> {
    p.vmstat().ok().flatten().and_then(|v| v.get("pswpin"))
}

/// `after − before` of a counter, none unless both were read.
fn delta(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    Some(after?.saturating_sub(before?))
}

/// The group's peak charge since it was made.
fn peak_of(cg: &MemCgroup) -> Option<u64> {
    let f = match cg.version {
        CgroupVersion::V2 => "memory.peak",
        CgroupVersion::V1 => "memory.max_usage_in_bytes",
    };
    std::fs::read_to_string(cg.dir.join(f)).ok()?.trim().parse().ok()
}

struct Real<'a> {
    cfg: &'a BatchConfig,
    /// Makes each run's sandbox: the machine's (a fake tree's in tests).
    sandbox: &'a dyn Fn() -> Sandbox,
    obs: &'a mut dyn Observer<Entry = RightsizeResult>,
    stop: &'a dyn Fn() -> bool,
    zram: Option<u32>,
    store_kind: BackingKind,
    runs: Vec<ProgramRun>,
    /// Swap in use before the search (the user's, if any); none when unread.
    swap0: Option<u64>,
    /// The largest swap use seen above `swap0`, per run (none: never read).
    swap_peaks: Vec<Option<u64>>,
    started: Instant,
    /// The compressibility of the program's pages, read once in the second
    /// unlimited run's steady part (for the prediction), and the seconds the
    /// reading took.
    sample: Option<crate::kit::pages::Compress>,
    sample_s: f64,
    /// The memory controller is cgroup v2's (zswap's pool is then charged
    /// inside the group's limit).
    v2: bool,
    /// What the runs read of the machine: the sandbox's probe.
    p: Probe,
}

/// A run's largest readings, over the polls that read them (none: no poll
/// did): the store's RAM and what it held, the swap above the search's
/// start, and the group's charge.
#[derive(Default)]
struct Peaks {
    store_used: Option<u64>,
    store_orig: Option<u64>,
    swap: Option<u64>,
    usage: u64,
}

impl Peaks {
    fn poll(&mut self, p: &mut Probe, store: Option<Store>, cg: &MemCgroup, swap0: Option<u64>) {
        if let Some(z) = store.and_then(|st| store_size(p, st)) {
            self.store_used = self.store_used.max(Some(z.ram_bytes));
            self.store_orig = self.store_orig.max(z.orig_bytes);
        }
        if let Some(u) = cg.usage() {
            self.usage = self.usage.max(u);
        }
        self.swap = self.swap.max(delta(swap0, swap_used(p)));
    }
}


/// Waits for `pid` (our child) without blocking, with its resource usage.
pub(crate) fn reap(pid: i32, block: bool) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: a C struct of integers, for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: wait4 on our own child with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
    (r == pid).then_some((status, ru))
}

/// Kills every process in the group (through pidfds, members only: see
/// [`MemCgroup::kill_all_but`]), for up to 5 s.
fn kill_group(cg: &MemCgroup) {
    cg.kill_all_but(&[], Duration::from_secs(5));
}

/// Ends a program pagelab started (`pid`, our child, not yet reaped: its
/// pid cannot be another's) and what it left in `cg` but `keep`, and reaps
/// it: SIGKILL to it directly (it may have left the group), then to the
/// group's members, then up to 10 s for it to be reaped (None: it was not,
/// which a process stuck in the kernel can cause).
pub(crate) fn kill_and_reap(cg: &MemCgroup, pid: i32, keep: &[i32]) -> Option<(i32, libc::rusage)> {
    // SAFETY: signalling our own unreaped child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    cg.kill_all_but(keep, Duration::from_secs(5));
    let t = Instant::now();
    loop {
        if let Some(r) = reap(pid, false) {
            return Some(r);
        }
        if t.elapsed() >= Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Real<'_> {
    fn once(&mut self, role: Role, limit: Option<u64>, cap_s: Option<f64>) -> Result<ProgramRun, ExperimentError> {
        let cfg = self.cfg;
        let mut sb = (self.sandbox)();
        let cg =
            sb.memory_cgroup("rightsize", &Limits { max: Some(limit.unwrap_or(cfg.guard_max)), ..Default::default() })?;
        let psi0 = psi_us(&mut self.p, &cg);
        let in0 = pswpin(&mut self.p);
        let mut cmd = std::process::Command::new(&cfg.command[0]);
        cmd.args(&cfg.command[1..]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
        sandbox::cgroup::join_before_exec(&mut cmd, &cg.dir).map_err(|e| err(format!("{}: {e}", cg.dir.display())))?;
        sandbox::worker::die_with_parent(&mut cmd);
        let t0 = Instant::now();
        let child = cmd.spawn().map_err(|e| err(format!("cannot run '{}': {e}", cfg.command[0])))?;
        let pid = child.id() as i32;
        // Reaped below with wait4 (for its rusage), not through `child`.
        drop(child);
        self.obs.targets(
            vec![pid],
            Some(probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() }),
            self.zram.into_iter().collect(),
        );
        let mut peaks = Peaks::default();
        let mut stopped = false;
        // The second unlimited run's working set, per window of an eighth of
        // the first run's time (¼ s to 2 s): the referenced bits are cleared
        // half a window in and at each window's end, after the window's
        // referenced bytes are read. (The first run may start with a cold
        // page cache, and its length sets the window.)
        let sample_ws = role == Role::Baseline && limit.is_none() && self.runs.len() == 1;
        let window = Duration::from_secs_f64(self.runs.first().map_or(1.0, |r| r.seconds / 8.0).clamp(0.25, 2.0));
        let mut windows: Vec<(f64, u64)> = Vec::new();
        let mut next_clear = t0 + window / 2;
        let mut cleared = false;
        let store = Store::of(self.zram, self.store_kind);
        let (status, ru) = loop {
            // Read before reaping: a program that ends before the first
            // sleep still has a reading of its store and swap.
            peaks.poll(&mut self.p, store, &cg, self.swap0);
            if let Some(r) = reap(pid, false) {
                break r;
            }
            if sample_ws && Instant::now() >= next_clear {
                if cleared {
                    let ws: u64 = cg.procs().into_iter().filter_map(|pid| referenced(&mut self.p, pid)).sum();
                    windows.push((t0.elapsed().as_secs_f64(), ws));
                    // At a window's end, before its bits are cleared: the
                    // sample sees the whole window's hot share, and the bits
                    // its reads set are cleared with the rest.
                    self.sample_once(&cg, t0);
                }
                for p in cg.procs() {
                    let _ = sandbox::mm::clear_refs(&sb.roots().proc, p);
                }
                cleared = true;
                next_clear = Instant::now() + window;
            }
            let interrupted = (self.stop)();
            if interrupted || cap_s.is_some_and(|c| t0.elapsed().as_secs_f64() >= c) {
                let r = kill_and_reap(&cg, pid, &[]);
                if interrupted {
                    return Err(ExperimentError::Interrupted);
                }
                stopped = true;
                if let Some(r) = r {
                    break r;
                }
                break (0, unsafe_zero_rusage());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let seconds = t0.elapsed().as_secs_f64();
        let ws_steady = steady_working_set(&windows, seconds);
        // Children that outlived the program are the run's too.
        kill_group(&cg);
        let psi1 = psi_us(&mut self.p, &cg);
        let oom = cg.oom_kills().is_some_and(|n| n > 0);
        let exited = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        let outcome = if stopped {
            "too_slow"
        } else if oom {
            "oom"
        } else if exited == Some(0) {
            "ok"
        } else {
            "failed"
        };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let run = ProgramRun {
            index: self.runs.len() as u32 + 1,
            role: role.name().into(),
            limit_bytes: limit,
            outcome: outcome.into(),
            exit_code: exited,
            seconds,
            user_s: tv(ru.ru_utime),
            sys_s: tv(ru.ru_stime),
            peak_bytes: peak_of(&cg).unwrap_or(peaks.usage).max(peaks.usage),
            major_faults: ru.ru_majflt as u64,
            psi_some_us: delta(psi0.map(|p| p.0), psi1.map(|p| p.0)),
            psi_full_us: delta(psi0.and_then(|p| p.1), psi1.and_then(|p| p.1)),
            swap_in_pages: delta(in0, pswpin(&mut self.p)),
            store_used_bytes: peaks.store_used,
            store_orig_bytes: peaks.store_orig,
            ratio: f64::NAN,
            paired_with: None,
            working_set_bytes: ws_steady,
            working_set_windows: windows.iter().map(|w| w.1).collect(),
        };
        drop(cg);
        sb.restore()?;
        self.swap_peaks.push(peaks.swap);
        Ok(run)
    }
}

impl Real<'_> {
    /// Past 60 % of the first run's time, once: what the program's pages
    /// would cost a compressed store, cold and hot, read from its largest
    /// process (for the prediction); how long the reading took is kept.
    fn sample_once(&mut self, cg: &MemCgroup, t0: Instant) {
        let due = self.runs.first().map_or(f64::INFINITY, |r| 0.6 * r.seconds);
        if self.sample.is_some() || t0.elapsed().as_secs_f64() < due {
            return;
        }
        let probe = &mut self.p;
        let largest = cg
            .procs()
            .into_iter()
            .max_by_key(|&pid| probe.pid_status(pid).ok().flatten().and_then(|s| s.vm_rss).unwrap_or(0));
        if let Some(p) = largest {
            let t = Instant::now();
            self.sample = crate::kit::pages::sample_compressibility(probe, p, predict::SAMPLE_BYTES, self.stop).ok();
            self.sample_s = t.elapsed().as_secs_f64();
        }
    }
}


/// The working set of a run's steady part, from its windows
/// (end time, bytes): the median of the windows that ended in the second half
/// of the run, or the last window; None without a window. A program that
/// fills a cold buffer first is then not sized by its start.
pub fn steady_working_set(windows: &[(f64, u64)], seconds: f64) -> Option<u64> {
    let late: Vec<u64> = windows.iter().filter(|w| w.0 >= seconds / 2.0).map(|w| w.1).collect();
    if late.is_empty() {
        return windows.last().map(|w| w.1);
    }
    let mut late = late;
    record::stats::percentile_u64(&mut late, 0.5)
}

/// Bytes the process has referenced since its bits were last cleared
/// (/proc/PID/smaps_rollup, through the probe).
fn referenced(p: &mut Probe, pid: i32) -> Option<u64> {
    p.pid_smaps_rollup(pid).ok().flatten()?.get("Referenced")
}

fn unsafe_zero_rusage() -> libc::rusage {
    // SAFETY: a C struct of integers, for which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

impl Runner for Real<'_> {
    type Error = ExperimentError;
    fn run(&mut self, role: Role, limit: Option<u64>, cap_s: Option<f64>) -> Result<Trial, ExperimentError> {
        let n = self.runs.len() + 1;
        let what = limit.map(units::bytes).unwrap_or_else(|| "unlimited".into());
        say::err!("pagelab: run {n:>2}/{} {:<8} {what:>10} … ", self.cfg.search.max_runs, role.name());
        let r = self.once(role, limit, cap_s)?;
        let base: Vec<f64> = self.runs.iter().filter(|r| r.limit_bytes.is_none()).map(|r| r.seconds).collect();
        let reference = record::stats::median(&base);
        let rel = match (limit, reference) {
            (Some(_), Some(m)) => format!(" ({:.2}× the unlimited median)", r.seconds / m),
            _ => String::new(),
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = self.cfg.search.max_runs.saturating_sub(n as u32) as f64;
        let eta = reference.map(|m| format!(", at most ~{:.0} s to go", left * m * 1.05)).unwrap_or_default();
        say::errln!("{:.2} s {}{rel} · {:.0} s so far{eta}", r.seconds, r.outcome, elapsed);
        if role == Role::Baseline && r.outcome == "oom" {
            return Err(err(format!(
                "'{}' needed more than the host guard allows ({} MiB: MemAvailable less --host-floor) and was \
                 OOM-killed in its own group: rightsize cannot measure it unlimited here",
                self.cfg.command.join(" "),
                self.cfg.guard_max / MIB
            )));
        }
        if role == Role::Baseline && r.outcome != "ok" {
            let why = match r.exit_code {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".into(),
            };
            return Err(err(format!(
                "'{}' {why} without a limit: rightsize measures a program that succeeds on its own",
                self.cfg.command.join(" ")
            )));
        }
        if role == Role::Baseline && r.seconds < 1.0 {
            return Err(err(format!(
                "'{}' ran for {:.2} s: rightsize needs a program that runs for at least a second \
                 (this machine's noise swamps shorter runs); give it more work",
                self.cfg.command.join(" "),
                r.seconds
            )));
        }
        let outcome = match r.outcome.as_str() {
            "ok" => Outcome::Ok,
            "oom" => Outcome::Oom,
            // A failed limited run (the program gave up for want of memory) is too small.
            _ => Outcome::TooSlow,
        };
        let trial = Trial { seconds: r.seconds, outcome, peak_bytes: r.peak_bytes, working_set: r.working_set_bytes };
        self.obs.event("run", role.name(), probe::sample::monotonic_ns(), serde_json::to_value(&r).unwrap_or_default());
        self.runs.push(r);
        Ok(trial)
    }
    fn progress(&mut self, msg: &str) {
        say::errln!("pagelab: {msg}");
    }
}

/// Runs the batch search and builds the result.
/// What a session of runs leaves for its mode to answer from.
struct Session<T> {
    res: RightsizeResult,
    found: T,
    /// Each run's largest swap in use (None: unread).
    swap_peaks: Vec<Option<u64>>,
    v2: bool,
}

/// The runs of one store: `body` (the search, or the checks) drives the
/// runner; the store is made before the first limited run and removed after
/// the last; each run's figures, its pair and its ratio are filled in.
fn session<T>(
    cfg: &BatchConfig,
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
    sandbox: &dyn Fn() -> Sandbox,
    body: impl FnOnce(&mut Staged) -> Result<T, ExperimentError>,
    runs_of: impl Fn(&T) -> &[search::Done],
) -> Result<Session<T>, ExperimentError> {
    // The store comes after the first (unlimited) run, sized by its peak; that
    // run happens through the same runner so it counts and is recorded.
    let mut outer = sandbox();
    let mut p = outer.probe();
    let version = p.memory_controller().ok().flatten().map(|(v, _)| v).ok_or_else(|| {
        err("rightsize needs a memory cgroup controller (cgroup v1 'memory' or cgroup2 with 'memory')")
    })?;
    let mut res = RightsizeResult {
        mode: crate::rightsize::results::Mode::Batch,
        command: cfg.command.clone(),
        target_slowdown: cfg.search.slowdown,
        cgroup_version: Some(version),
        psi_scope: Some(match version {
            CgroupVersion::V1 => crate::rightsize::results::PsiScope::Machine,
            CgroupVersion::V2 => crate::rightsize::results::PsiScope::Cgroup,
        }),
        synthetic_hot_bytes: cfg.synthetic.map(|s| s.0),
        synthetic_cold_bytes: cfg.synthetic.map(|s| s.1),
        ..Default::default()
    };
    let mut real = Real {
        cfg,
        sandbox,
        obs,
        stop,
        zram: None,
        store_kind: BackingKind::None,
        runs: Vec::new(),
        swap0: swap_used(&mut p),
        swap_peaks: Vec::new(),
        started: Instant::now(),
        sample: None,
        sample_s: 0.0,
        v2: version == CgroupVersion::V2,
        p,
    };
    let mut staged =
        Staged { real: &mut real, outer: &mut outer, backing: None, notes: Vec::new(), prediction: None };
    let found = body(&mut staged)?;
    let backing = staged.backing.take();
    res.prediction = staged.prediction.take();
    res.notes.append(&mut staged.notes);
    match &backing {
        Some(b) => {
            res.backing = Some(b.kind);
            res.compressor = b.compressor.clone();
        }
        // No limited run, so no store was made: the arm is still the one asked for.
        None => {
            res.backing = Some(cfg.backing);
            res.compressor = cfg.compressor.clone();
            res.notes.push("no store was made: the runs stopped before the first limited one".into());
        }
    }
    let runs = std::mem::take(&mut real.runs);
    let swap_peaks = std::mem::take(&mut real.swap_peaks);
    outer.restore()?;
    res.runs = runs;
    res.run_count = res.runs.len() as u32;
    for (r, d) in res.runs.iter_mut().zip(runs_of(&found)) {
        r.paired_with = d.pair.map(|p| p as u32 + 1);
    }
    fill_ratios(&mut res.runs);
    res.baseline = baseline(&res.runs);
    Ok(Session { res, found, swap_peaks, v2: real.v2 })
}

/// The largest swap in use at `limit` over its runs (None: a run's unread).
fn swap_at(res: &RightsizeResult, swap_peaks: &[Option<u64>], limit: u64) -> Option<u64> {
    res.runs
        .iter()
        .zip(swap_peaks)
        .filter(|(r, _)| r.limit_bytes == Some(limit))
        .map(|(_, s)| *s)
        .collect::<Option<Vec<u64>>>()
        .and_then(|s| s.into_iter().max())
}

/// The machine's sandbox for rightsize's runs.
fn machine() -> Sandbox {
    Sandbox::new("rightsize")
}

pub fn run(
    cfg: &BatchConfig,
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
) -> Result<RightsizeResult, ExperimentError> {
    run_with(cfg, obs, stop, &machine)
}

/// [`run`] with each run's sandbox (and the store's) made by `sandbox`.
pub(crate) fn run_with(
    cfg: &BatchConfig,
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
    sandbox: &dyn Fn() -> Sandbox,
) -> Result<RightsizeResult, ExperimentError> {
    let started = Instant::now();
    let Session { mut res, found, swap_peaks, v2 } =
        session(cfg, obs, stop, sandbox, |s| search::search(cfg.search, s), |f| &f.runs)?;
    res.pair_sd = found.pair_sd.0.is_finite().then_some([found.pair_sd.0, found.pair_sd.1]);
    res.curve = curve(&res.runs, res.pair_sd, pool_inside_limit(res.backing, v2), compressed(res.backing));
    res.plan = found.plan.map(|p| Plan {
        pair_sd: p.pair_sd,
        pairs_needed: p.pairs_needed,
        runs_needed: p.runs_needed,
        runs_affordable: p.runs_affordable,
        enough: p.enough,
        verifiable_slowdown: p.verifiable_slowdown,
        insisted: cfg.search.insist && !p.enough,
        said: p.describe(&cfg.search),
    });
    match found.recommended {
        Some(limit) => {
            let v = found.verifications.iter().find(|v| v.limit == limit).expect("verified");
            let swap = swap_at(&res, &swap_peaks, limit);
            match recommend(&res, limit, v, swap, cfg.node) {
                Ok(r) => res.recommendation = Some(r),
                Err(why) => {
                    res.unverified = Some(unanswered(&res, v, &why));
                    res.unverified_reason = Some(why);
                }
            }
        }
        None => {
            res.unverified_reason = found.why_not.clone();
            res.unverified = Some(unverified(&res, found.best_unverified(), found.why_not.as_deref().unwrap_or("")));
        }
    }
    res.seconds = started.elapsed().as_secs_f64();
    Ok(res)
}

/// `--check`: each of `limits` (bytes, as the user wrote it) under the
/// verification's rules, after the baselines; no search.
pub fn check(
    cfg: &BatchConfig,
    limits: &[(u64, String)],
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
) -> Result<RightsizeResult, ExperimentError> {
    check_with(cfg, limits, obs, stop, &machine)
}

/// [`check`] with each run's sandbox (and the store's) made by `sandbox`.
pub(crate) fn check_with(
    cfg: &BatchConfig,
    limits: &[(u64, String)],
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
    sandbox: &dyn Fn() -> Sandbox,
) -> Result<RightsizeResult, ExperimentError> {
    let started = Instant::now();
    let bytes: Vec<u64> = limits.iter().map(|l| l.0).collect();
    let Session { mut res, found, swap_peaks, v2 } =
        session(cfg, obs, stop, sandbox, |s| search::check::check(cfg.search, &bytes, s), |f| &f.runs)?;
    res.curve = curve(&res.runs, None, pool_inside_limit(res.backing, v2), compressed(res.backing));
    res.checks = found
        .checked
        .iter()
        .zip(limits)
        .map(|(c, (_, asked))| {
            let swap = swap_at(&res, &swap_peaks, c.limit);
            checked::limit_check(&res, cfg, &found, c, asked, swap)
        })
        .collect();
    res.seconds = started.elapsed().as_secs_f64();
    Ok(res)
}

/// The runner the search sees: the real one, with the store set up after the
/// first (unlimited) run has shown how much it must take.
struct Staged<'a, 'b> {
    real: &'a mut Real<'b>,
    outer: &'a mut Sandbox,
    backing: Option<backing::Backing>,
    notes: Vec<String>,
    prediction: Option<crate::rightsize::results::Prediction>,
}

impl Runner for Staged<'_, '_> {
    type Error = ExperimentError;
    fn run(&mut self, role: Role, limit: Option<u64>, cap_s: Option<f64>) -> Result<Trial, ExperimentError> {
        if limit.is_some() && self.backing.is_none() {
            let peak = self.real.runs.iter().map(|r| r.peak_bytes).max().unwrap_or(0);
            let c = self.real.cfg;
            let b = backing::setup(
                self.outer,
                c.backing,
                c.compressor.as_deref(),
                peak + peak / 4 + 16 * MIB,
                &c.swapfile_dir,
            )?;
            for n in &b.notes {
                self.real.obs.note(n);
                self.notes.push(n.clone());
            }
            self.real.zram = b.zram_id;
            self.real.store_kind = b.kind;
            self.real.swap0 = swap_used(&mut self.real.p);
            self.real.obs.event("store", b.kind.name(), probe::sample::monotonic_ns(), json!({"zram": b.zram_id}));
            // Before the first limited run: where the knee should be.
            let ws = self.real.runs.iter().find_map(|r| r.working_set_bytes);
            if let Some(ws) = ws {
                let inside = pool_inside_limit(Some(b.kind), self.real.v2);
                let mut p =
                    predict::predict(ws, peak, b.kind, b.compressor.as_deref(), self.real.sample.as_ref(), inside);
                p.sample_seconds = self.real.sample_s;
                self.real.progress(&p.said);
                self.prediction = Some(p);
            }
            self.backing = Some(b);
        }
        self.real.run(role, limit, cap_s)
    }
    fn progress(&mut self, msg: &str) {
        self.real.progress(msg);
    }
}

/// Each run's ratio: a limited run's over the unlimited run it is paired
/// with, an unlimited run's over the unlimited runs' median.
fn fill_ratios(runs: &mut [ProgramRun]) {
    let base: Vec<f64> = runs.iter().filter(|r| r.limit_bytes.is_none()).map(|r| r.seconds).collect();
    let m = record::stats::median(&base).unwrap_or(f64::NAN);
    for i in 0..runs.len() {
        let reference = match (runs[i].limit_bytes, runs[i].paired_with) {
            (Some(_), Some(p)) => runs.get(p as usize - 1).map(|r| r.seconds).unwrap_or(m),
            _ => m,
        };
        runs[i].ratio = runs[i].seconds / reference;
    }
}

fn baseline(runs: &[ProgramRun]) -> Option<Baseline> {
    let b: Vec<&ProgramRun> = runs.iter().filter(|r| r.limit_bytes.is_none()).collect();
    if b.is_empty() {
        return None;
    }
    let secs: Vec<f64> = b.iter().map(|r| r.seconds).collect();
    let cpu: Vec<f64> = b.iter().map(|r| r.user_s + r.sys_s).collect();
    let mut peaks: Vec<u64> = b.iter().map(|r| r.peak_bytes).collect();
    let mut majf: Vec<u64> = b.iter().map(|r| r.major_faults).collect();
    Some(Baseline {
        n: b.len() as u32,
        seconds_median: record::stats::median(&secs).unwrap_or(f64::NAN),
        seconds_cv: record::stats::cv(&secs).unwrap_or(f64::NAN),
        cpu_s_median: record::stats::median(&cpu).unwrap_or(f64::NAN),
        peak_bytes_median: record::stats::percentile_u64(&mut peaks, 0.5).unwrap_or(0),
        peak_bytes_max: peaks.iter().copied().max().unwrap_or(0),
        major_faults_median: record::stats::percentile_u64(&mut majf, 0.5).unwrap_or(0),
    })
}

/// zswap on cgroup v2 charges its compressed pool to the group whose pages it
/// holds, inside the group's limit (memory.current counts it); zram's pool
/// and zswap's on cgroup v1 are outside it, and a disk's takes no RAM. So the
/// memory a limit needs in all is the limit alone in the first case, the
/// limit plus the pool in the others.
pub fn pool_inside_limit(backing: Option<BackingKind>, v2: bool) -> bool {
    backing == Some(BackingKind::Zswap) && v2
}

/// Whether the backing is a compressed store in RAM (zram, zswap).
fn compressed(backing: Option<BackingKind>) -> bool {
    backing.is_some_and(BackingKind::compressed)
}

/// One point per limit tried, smallest first. `pair_sd`: the pooled spread of
/// a pair's log ratio (sd, df), for a limit with one pair. `inside`: the
/// store's pool is charged inside the limit ([`pool_inside_limit`]);
/// `compressed`: a compressed store takes RAM beside it ([`compressed`]).
fn curve(runs: &[ProgramRun], pair_sd: Option<[f64; 2]>, inside: bool, compressed: bool) -> Vec<CurvePoint> {
    let mut limits: Vec<u64> = runs.iter().filter_map(|r| r.limit_bytes).collect();
    limits.sort_unstable();
    limits.dedup();
    limits
        .into_iter()
        .map(|l| {
            // A verified limit's point is its verification's pairs (the probe
            // there was chosen for being fast); any other limit's its probes'.
            let all: Vec<&ProgramRun> = runs.iter().filter(|r| r.limit_bytes == Some(l)).collect();
            let verify: Vec<&ProgramRun> = all.iter().copied().filter(|r| r.role == "verify").collect();
            let at = if verify.is_empty() { all } else { verify };
            let ratios: Vec<f64> = at.iter().map(|r| r.ratio).collect();
            let censored = at.iter().any(|r| r.outcome != "ok");
            let e = claim::estimate(&ratios);
            let ratio = e.map(|e| e.estimate).unwrap_or_else(|| ratios[0]);
            let ci95 = match (e, pair_sd) {
                (Some(e), _) => Some(e.ci95),
                // One pair: the pooled spread of the pairs gives its interval.
                (None, Some([sd, df])) if !censored && df > 0.0 => {
                    let half = claim::t_quantile(0.95, df) * sd;
                    Some([ratio * (-half).exp(), ratio * half.exp()])
                }
                _ => None,
            };
            let secs: f64 = at.iter().map(|r| r.seconds).sum();
            let worst = if at.iter().any(|r| r.outcome == "oom") {
                "oom"
            } else if censored {
                "too_slow"
            } else {
                "ok"
            };
            // Unknown if any run's is: a largest over some runs is not the point's.
            let most = |f: fn(&ProgramRun) -> Option<u64>| at.iter().map(|r| f(r)).collect::<Option<Vec<u64>>>()?.into_iter().max();
            let pct = |f: fn(&ProgramRun) -> Option<u64>| {
                at.iter().map(|r| f(r)).sum::<Option<u64>>().map_or(f64::NAN, |us| us as f64 / 1e4 / secs.max(1e-9))
            };
            let store = most(|r| r.store_used_bytes);
            CurvePoint {
                limit_bytes: l,
                n: at.len() as u32,
                ratio,
                ci95,
                censored,
                outcome: worst.into(),
                psi_some_pct: pct(|r| r.psi_some_us),
                psi_full_pct: pct(|r| r.psi_full_us),
                major_faults: at.iter().map(|r| r.major_faults).max().unwrap_or(0),
                swap_in_pages: most(|r| r.swap_in_pages),
                store_used_bytes: store,
                total_bytes: if inside || !compressed { Some(l) } else { store.map(|s| l + s) },
            }
        })
        .collect()
}

#[cfg(test)]
mod seam_tests;
#[cfg(test)]
mod tests;
