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
    AssessResult, Compress, Compressibility, Kinds, Latency, Point, Source, Target, Trim, Window,
};
use sandbox::Sandbox;
use sandbox::worker::{Worker, WorkerSpec};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

fn start(cfg: &AssessConfig, target: &mut Target) -> Result<(Proc, i32), ExperimentError> {
    if let Some(pid) = cfg.pid {
        return Ok((Proc::default(), pid));
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
            cgroup: None,
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
        return Ok((Proc { worker: Some(w), child: None }, pid));
    }
    use std::os::fd::AsFd;
    // The program's stdout goes to our stderr: stdout may carry pagelab's JSON.
    let out = std::io::stderr().as_fd().try_clone_to_owned().map_err(|e| err(format!("stderr: {e}")))?;
    let child = std::process::Command::new(&cfg.command[0])
        .args(&cfg.command[1..])
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .spawn()
        .map_err(|e| err(format!("cannot run '{}': {e}", cfg.command[0])))?;
    target.command = cfg.command.clone();
    let pid = child.id() as i32;
    Ok((Proc { child: Some(child), worker: None }, pid))
}

/// Clears the accessed bits of every page of the process (`clear_refs` 1).
fn clear_refs(pid: i32) -> Result<(), ExperimentError> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "1").map_err(|e| {
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
            let (a, b) = match kind {
                MemKind::Anon => (&mut res.anon, &mut refd.anon),
                MemKind::File => (&mut res.file, &mut refd.file),
                MemKind::Shmem => (&mut res.shmem, &mut refd.shmem),
            };
            *a += bytes;
            *b += r;
        }
    }
    let cold = |r: u64, t: u64| if t == 0 { f64::NAN } else { 1.0 - r as f64 / t as f64 };
    Window {
        seconds,
        resident: res,
        referenced: refd,
        cold_anon: cold(refd.anon, res.anon),
        cold_file: cold(refd.file, res.file),
        cold_shmem: cold(refd.shmem, res.shmem),
        cold_total: cold(refd.total(), res.total()),
    }
}

/// The working-set sources the kernel may offer, and which one is used.
fn sources() -> Vec<Source> {
    let root = sandbox::privilege::is_root();
    let idle = std::path::Path::new("/sys/kernel/mm/page_idle/bitmap").exists();
    let env = Probe::default().environment();
    let (mglru, damon) = (env.mglru, env.damon);
    let foreign = damon.iter().any(|k| k.state == "on");
    vec![
        Source {
            name: "referenced bits (clear_refs, smaps Referenced)".into(),
            used: true,
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
        Source {
            name: "MGLRU generations".into(),
            used: false,
            why: match mglru {
                None => "MGLRU is not in this kernel".into(),
                Some(m) if !m.enabled => "MGLRU is off".into(),
                Some(_) => "on, but its generations are per memory cgroup (debugfs lru_gen), not per process; pagelab does not read them yet".into(),
            },
        },
        Source {
            name: "DAMON".into(),
            used: false,
            why: if foreign {
                "a kdamond that is not pagelab's is running; pagelab never writes to DAMON while it does".into()
            } else if damon.is_empty() {
                "not in this kernel, or no DAMON sysfs interface".into()
            } else {
                "present; pagelab does not start a kdamond of its own yet".into()
            },
        },
    ]
}

/// `/proc/PID/pagemap`: whether each page of `[start, start + n pages)` is present in RAM.
fn present_pages(pid: i32, start: usize, n: usize, page: usize) -> std::io::Result<Vec<bool>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(format!("/proc/{pid}/pagemap"))?;
    let mut out = Vec::with_capacity(n);
    let mut buf = vec![0u8; 8 * 4096];
    let mut done = 0usize;
    while done < n {
        let k = (n - done).min(4096);
        let off = ((start / page + done) * 8) as u64;
        f.read_exact_at(&mut buf[..k * 8], off)?;
        out.extend(buf[..k * 8].chunks_exact(8).map(|e| u64::from_le_bytes(e.try_into().expect("8")) >> 63 == 1));
        done += k;
    }
    Ok(out)
}

/// Reads `buf.len()` bytes at `addr` of the process.
fn vm_read(pid: i32, addr: usize, buf: &mut [u8]) -> std::io::Result<usize> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: one local iovec over our buffer; the kernel checks the remote one.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// Reads and compresses the resident anonymous pages, split into cold and hot
/// by each mapping's referenced share (`hot_share`, per mapping start).
fn compressibility(
    pid: i32,
    maps: &[SmapsEntry],
    max_read: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Compress, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let anon: Vec<&SmapsEntry> = maps.iter().filter(|m| m.map.is_private() && m.anonymous > 0).collect();
    let mut present = Vec::new();
    for m in &anon {
        let n = m.map.len() / page;
        let p = present_pages(pid, m.map.start, n, page).map_err(|e| err(format!("/proc/{pid}/pagemap: {e}")))?;
        present.push(p);
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
            let hot = ((k + 1) as f64 * share).floor() > (k as f64 * share).floor();
            k += 1;
            out.all.add(&c);
            if hot { out.hot.add(&c) } else { out.cold.add(&c) }
        }
    }
    out.ratio_lz4 = out.all.ratio(true, page as u64);
    out.ratio_zstd = out.all.ratio(false, page as u64);
    out.split = "per mapping: each mapping's pages dealt to hot and cold by its referenced share".into();
    Ok(out)
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
    let mut base = AssessResult { sources: sources(), ..Default::default() };
    base.source = base.sources.iter().find(|s| s.used).map(|s| s.name.clone()).unwrap_or_default();
    let (proc_, pid) = start(cfg, &mut base.target)?;
    base.target.pid = pid;
    base.target.comm = Probe::default().pid_comm(pid).unwrap_or_default();
    obs.targets(vec![pid], None, Vec::new());
    if proc_.started() {
        wait_until(Instant::now() + cfg.warmup, pid, "the warm-up", stop)?;
        // A wrapper script may have exec'd the program by now.
        base.target.comm = Probe::default().pid_comm(pid).unwrap_or_default();
    }
    let repeat = cfg.repeat.max(1);
    let mut last = base.clone();
    for i in 1..=repeat {
        let mut r = AssessResult { repeat: i, ..base.clone() };
        match measure(cfg, pid, &mut r, i == repeat, obs, stop) {
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
    r: &mut AssessResult,
    then_trim: bool,
    obs: &mut dyn Observer,
    stop: &dyn Fn() -> bool,
) -> Result<(), ExperimentError> {
    let mut windows = cfg.windows.clone();
    windows.sort();
    obs.event("phase_start", &format!("windows {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    clear_refs(pid)?;
    let t0 = Instant::now();
    let mut last = Vec::new();
    for w in &windows {
        wait_until(t0 + *w, pid, &format!("the {} s window", w.as_secs_f64()), stop)?;
        last = smaps(pid, "the windows")?;
        r.windows.push(window_of(w.as_secs_f64(), &last));
    }
    obs.event("phase_end", &format!("windows {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    obs.event("phase_start", &format!("compress {}", r.repeat), probe::sample::monotonic_ns(), json!({}));
    r.compress = Some(compressibility(pid, &last, cfg.max_read, stop)?);
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
