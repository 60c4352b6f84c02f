//! `mapping`: what each way of obtaining and releasing memory costs.
//!
//! Reproduces Gerstmann's "Memory Mapping on Windows" benchmark on Linux: obtain a
//! region, touch it, release it, and for the methods that keep the region, touch
//! it again; every step timed on its own (CLOCK_MONOTONIC) with its fault deltas
//! and the resident set after it. The cost of the touch alone, on memory that is
//! already resident, is measured in the same worker and subtracted.
//!
//! | method | obtain | release | re-touch |
//! | --- | --- | --- | --- |
//! | mmap-munmap | mmap | munmap | - |
//! | populate | mmap(MAP_POPULATE) | munmap | - |
//! | dontneed | (kept region) | MADV_DONTNEED | zero-fill faults |
//! | free | (kept region) | MADV_FREE (lazy) | no faults unless reclaimed |
//! | memfd | memfd_create + ftruncate + mmap(MAP_SHARED) | munmap + close | - |
//! | memfd-punch | (kept memfd mapping) | fallocate(PUNCH_HOLE) | faults |
//! | mremap | mremap of a kept half-size region to full size | mremap back to half | - |

use sandbox::worker::Want;
use serde_json::Value;
use std::time::Instant;
use workloads::mm;

pub const METHODS: [&str; 7] = ["mmap-munmap", "dontneed", "free", "memfd", "memfd-punch", "mremap", "populate"];
pub const METHOD_NAMES: &str = "mmap-munmap, dontneed, free, memfd, memfd-punch, mremap, populate";

pub use crate::mapping::results::{MappingResult, StepStats};

fn rusage() -> (u64, u64) {
    let u = workloads::usage::process();
    (u.minflt, u.majflt)
}

/// This process's resident and shared memory, read through the worker's
/// probe; an error when its status cannot be read (the figures are not zero
/// then, they are unknown).
fn mem(p: &mut probe::Probe) -> Result<(u64, u64), String> {
    let unread = || "the mapping worker could not read its own VmRSS and RssShmem (/proc/self/status)".to_string();
    let s = p.pid_status(std::process::id() as i32).ok().flatten().ok_or_else(unread)?;
    Ok((s.vm_rss.ok_or_else(unread)?, s.rss_shmem.ok_or_else(unread)?))
}

#[derive(Default, Clone, Copy)]
struct Step {
    secs: f64,
    minflt: u64,
    majflt: u64,
    rss: u64,
    shmem: u64,
}

/// Times `f`; faults and memory (through `p`) are read outside the timed part.
fn step<T>(p: &mut probe::Probe, f: impl FnOnce() -> T) -> Result<(T, Step), String> {
    let (f0, j0) = rusage();
    let t = Instant::now();
    let v = f();
    let secs = t.elapsed().as_secs_f64();
    let (f1, j1) = rusage();
    let (rss, shmem) = mem(p)?;
    Ok((v, Step { secs, minflt: f1 - f0, majflt: j1 - j0, rss, shmem }))
}

/// How a region is touched (`--touch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Touch {
    /// A memset of the whole region.
    All,
    /// The first byte of every stride.
    FirstByte,
    /// The first byte of every page.
    Page,
}
crate::serde_by_name!(Touch, "touch");

/// Transparent huge pages for the regions (`--hugepages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Hugepages {
    /// MADV_NOHUGEPAGE.
    Never,
    /// MADV_HUGEPAGE.
    Madvise,
}
crate::serde_by_name!(Hugepages, "hugepages");

fn touch(p: *mut u8, len: usize, mode: Touch, stride: usize, page: usize) {
    // SAFETY: p..p+len is a writable mapping owned by the caller.
    unsafe {
        match mode {
            Touch::All => std::ptr::write_bytes(p, 0x5a, len),
            Touch::FirstByte | Touch::Page => {
                let step = if mode == Touch::Page { page } else { stride };
                let mut off = 0;
                while off < len {
                    std::ptr::write_volatile(p.add(off), 0x5a);
                    off += step;
                }
            }
        }
    }
}

fn map(len: usize, extra: i32, hugepages: Hugepages) -> Result<*mut u8, String> {
    // SAFETY: anonymous mapping, no hint.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap of {len} bytes: {}", std::io::Error::last_os_error()));
    }
    advise_huge(p.cast(), len, hugepages);
    Ok(p.cast())
}

fn advise_huge(p: *mut u8, len: usize, hugepages: Hugepages) {
    let adv = match hugepages {
        Hugepages::Madvise => libc::MADV_HUGEPAGE,
        Hugepages::Never => libc::MADV_NOHUGEPAGE,
    };
    let _ = mm::madvise(p, len, adv);
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: unmapping a region this module mapped.
    unsafe { libc::munmap(p.cast(), len) };
}

fn memfd(len: usize) -> Result<(i32, *mut u8), String> {
    let name = c"pagelab-mapping";
    // SAFETY: valid C string.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is ours.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: shared mapping of our memfd.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap of the memfd: {}", std::io::Error::last_os_error()));
    }
    Ok((fd, p.cast()))
}

/// A shared mapping of `fd`'s first `len` bytes.
fn map_shared(fd: i32, len: usize) -> Result<*mut u8, String> {
    // SAFETY: shared mapping of our memfd, no hint.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap of the memfd: {}", std::io::Error::last_os_error()));
    }
    Ok(p.cast())
}

/// A memfd of `len` bytes whose pages are allocated now and stay in the page
/// cache until it is closed (`--memfd-keep`).
fn kept_memfd(len: usize) -> Result<i32, String> {
    let (fd, p) = memfd(len)?;
    unmap(p, len);
    // SAFETY: allocating the pages of our own memfd.
    if unsafe { libc::fallocate(fd, 0, 0, len as libc::off_t) } != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: closing our memfd.
        unsafe { libc::close(fd) };
        return Err(format!("fallocate of the kept memfd: {e}"));
    }
    Ok(fd)
}

struct Series {
    steps: Vec<Step>,
}

impl Series {
    fn stats(&self, size: usize) -> StepStats {
        let med = |v: Vec<f64>| record::stats::median(&v).unwrap_or(0.0);
        let ms: Vec<f64> = self.steps.iter().map(|s| s.secs * 1e3).collect();
        let pages = (size / 4096).max(1) as f64;
        StepStats {
            ms_p50: med(ms.clone()),
            ms_min: ms.iter().cloned().fold(f64::INFINITY, f64::min),
            ms_max: ms.iter().cloned().fold(0.0, f64::max),
            ns_per_page_p50: med(ms.clone()) * 1e6 / pages,
            minor_faults_p50: med(self.steps.iter().map(|s| s.minflt as f64).collect()),
            major_faults_p50: med(self.steps.iter().map(|s| s.majflt as f64).collect()),
            rss_after_bytes: med(self.steps.iter().map(|s| s.rss as f64).collect()) as u64,
            shmem_after_bytes: med(self.steps.iter().map(|s| s.shmem as f64).collect()) as u64,
        }
    }
}

/// The worker kind.
pub const WORKER: &str = "mapping";

/// One worker's start (`--spec`): the method and how to run it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub method: String,
    pub size: u64,
    pub stride: u64,
    pub touch: Touch,
    pub iterations: u32,
    pub warmup: u32,
    pub hugepages: Hugepages,
    /// After each release, touch a second region as large as the first.
    pub pressure: bool,
    /// The memfd method keeps one memfd, its pages allocated once, and
    /// each cycle maps and unmaps it (`--memfd-keep`).
    #[serde(default)]
    pub memfd_keep: bool,
    /// The free method's release pages its region out at once
    /// (MADV_PAGEOUT after MADV_FREE, timed): a lazy release made eager
    /// (`--free-pageout`).
    #[serde(default)]
    pub free_pageout: bool,
}

/// The worker's reply: each step's statistics over the counted iterations,
/// and the touch-only baseline on resident memory.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Done {
    pub obtain: StepStats,
    pub touch: StepStats,
    pub release: StepStats,
    pub retouch: Option<StepStats>,
    pub total_ms_p50: f64,
    pub totals_ms: Vec<f64>,
    pub baseline_touch_ms_p50: f64,
    pub baseline_touch_ms_min: f64,
    pub baseline_touch_ms_max: f64,
}

/// Whether a method keeps its region and releases pages inside it (the ones
/// `--pressure` and the re-touch apply to).
fn keeps_region(method: &str) -> bool {
    matches!(method, "dontneed" | "free" | "memfd-punch")
}

/// The regions a method reuses across iterations: `dontneed` and `free` keep
/// one mapping, `memfd-punch` one memfd, `mremap` the half it grows from.
struct Regions<'a> {
    spec: &'a Spec,
    probe: &'a mut probe::Probe,
    size: usize,
    half: usize,
    kept: Option<*mut u8>,
    kept_fd: Option<(i32, *mut u8)>,
    /// `--memfd-keep`: the memfd the memfd method maps each cycle.
    kept_memfd: Option<i32>,
    remap: Option<*mut u8>,
}

impl<'a> Regions<'a> {
    fn new(spec: &'a Spec, size: usize, probe: &'a mut probe::Probe) -> Result<Regions<'a>, String> {
        let (m, hp) = (spec.method.as_str(), spec.hugepages);
        let half = (size / 2).div_ceil(mm::page_size()) * mm::page_size();
        Ok(Regions {
            spec,
            probe,
            size,
            half,
            kept: if matches!(m, "dontneed" | "free") { Some(map(size, 0, hp)?) } else { None },
            kept_fd: if m == "memfd-punch" { Some(memfd(size)?) } else { None },
            kept_memfd: if m == "memfd" && spec.memfd_keep { Some(kept_memfd(size)?) } else { None },
            remap: if m == "mremap" { Some(map(half, 0, hp)?) } else { None },
        })
    }

    /// The obtain step: the region to touch.
    fn obtain(&mut self) -> Result<(*mut u8, Step), String> {
        let (size, half, hp) = (self.size, self.half, self.spec.hugepages);
        let (p, s) = match self.spec.method.as_str() {
            "mmap-munmap" => step(self.probe, || map(size, 0, hp))?,
            "populate" => step(self.probe, || map(size, libc::MAP_POPULATE, hp))?,
            "dontneed" | "free" => step(self.probe, || self.kept.ok_or_else(|| "no kept region".to_string()))?,
            "memfd" if self.kept_memfd.is_some() => {
                let fd = self.kept_memfd.unwrap_or(-1);
                step(self.probe, || map_shared(fd, size))?
            }
            "memfd" => {
                let (r, s) = step(self.probe, || memfd(size))?;
                let (fd, p) = r?;
                // Keep the fd for the release step.
                MEMFD.with(|c| c.set(fd));
                (Ok(p), s)
            }
            "memfd-punch" => step(self.probe, || self.kept_fd.map(|k| k.1).ok_or_else(|| "no kept memfd".to_string()))?,
            "mremap" => step(self.probe, || {
                let old = self.remap.take().ok_or("no region to grow")?;
                // SAFETY: growing our own mapping; the kernel may move it.
                let p = unsafe { libc::mremap(old.cast(), half, size, libc::MREMAP_MAYMOVE) };
                if p == libc::MAP_FAILED {
                    return Err(format!("mremap: {}", std::io::Error::last_os_error()));
                }
                Ok(p.cast::<u8>())
            })?,
            other => return Err(format!("unknown method '{other}'")),
        };
        Ok((p?, s))
    }

    /// The release step of the region at `p`.
    fn release(&mut self, p: *mut u8) -> Result<Step, String> {
        let (size, half) = (self.size, self.half);
        let (r, s) = step(self.probe, || -> Result<(), String> {
            match self.spec.method.as_str() {
                "mmap-munmap" | "populate" => unmap(p, size),
                "dontneed" => mm::madvise(p, size, libc::MADV_DONTNEED).map_err(|e| e.to_string())?,
                "free" => {
                    mm::madvise(p, size, libc::MADV_FREE).map_err(|e| e.to_string())?;
                    if self.spec.free_pageout {
                        // Lazily freed pages are clean and not swap-backed:
                        // the page-out discards them now, with no swap, and
                        // the release pays what MADV_FREE would defer.
                        mm::madvise(p, size, mm::MADV_PAGEOUT)
                            .map_err(|e| format!("--free-pageout: madvise(MADV_PAGEOUT): {e}"))?;
                    }
                }
                "memfd" if self.kept_memfd.is_some() => unmap(p, size),
                "memfd" => {
                    unmap(p, size);
                    // SAFETY: closing our memfd.
                    MEMFD.with(|c| unsafe { libc::close(c.get()) });
                }
                "memfd-punch" => {
                    let fd = self.kept_fd.ok_or("no kept memfd")?.0;
                    let how = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
                    // SAFETY: punching a hole in our own memfd.
                    if unsafe { libc::fallocate(fd, how, 0, size as libc::off_t) } != 0 {
                        return Err(format!("fallocate(PUNCH_HOLE): {}", std::io::Error::last_os_error()));
                    }
                }
                "mremap" => {
                    // SAFETY: shrinking our own mapping back (unmaps the tail).
                    let q = unsafe { libc::mremap(p.cast(), size, half, 0) };
                    if q == libc::MAP_FAILED {
                        return Err(format!("mremap shrink: {}", std::io::Error::last_os_error()));
                    }
                    self.remap = Some(q.cast());
                }
                _ => {}
            }
            Ok(())
        })?;
        r.map(|_| s)
    }
}

impl Drop for Regions<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.kept.take() {
            unmap(p, self.size);
        }
        if let Some(fd) = self.kept_memfd.take() {
            // SAFETY: closing our memfd.
            unsafe { libc::close(fd) };
        }
        if let Some((fd, p)) = self.kept_fd.take() {
            unmap(p, self.size);
            // SAFETY: closing our memfd.
            unsafe { libc::close(fd) };
        }
        if let Some(p) = self.remap.take() {
            unmap(p, self.half);
        }
    }
}

/// Runs one method in this (worker) process. With `pressure`, after each
/// release a second region as large as the first is touched, so that a cgroup
/// too small for both must reclaim the released pages; MADV_FREE's are then
/// paged out outright (what the group's margin left).
pub fn run_method(spec: &Spec, probe: &mut probe::Probe) -> Result<Done, String> {
    let size = usize::try_from(spec.size).map_err(|_| format!("{} bytes do not fit this machine", spec.size))?;
    let stride = spec.stride as usize;
    let (page, touch_mode) = (mm::page_size(), spec.touch);
    let (mut ob, mut to, mut re, mut rt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut totals = Vec::new();
    let keeps = keeps_region(&spec.method);
    let mut regions = Regions::new(spec, size, probe)?;
    for it in 0..(spec.warmup + spec.iterations) {
        let (p, so) = regions.obtain()?;
        let (_, st) = step(regions.probe, || touch(p, size, touch_mode, stride, page))?;
        let sr = regions.release(p)?;
        if spec.pressure && keeps {
            // Memory the group cannot hold together with the released pages (only the
            // methods that keep their region have released pages left to reclaim).
            let q = map(size, 0, Hugepages::Never)?;
            touch(q, size, Touch::Page, page, page);
            unmap(q, size);
            if spec.method == "free" {
                // What the squeeze left in place (the group's margin) goes
                // too: MADV_PAGEOUT discards lazily freed pages outright
                // (they are clean and not swap-backed, so no swap is
                // needed), as sustained pressure would, and the re-touch
                // finds none of them. Untimed, as the squeeze is. Before
                // Linux 5.4 (EINVAL) the squeeze alone acts.
                let _ = mm::madvise(p, size, mm::MADV_PAGEOUT);
            }
        }
        let srt =
            keeps.then(|| step(regions.probe, || touch(p, size, touch_mode, stride, page))).transpose()?.map(|s| s.1);
        if it >= spec.warmup {
            let total = so.secs + st.secs + sr.secs + srt.map(|s| s.secs).unwrap_or(0.0);
            totals.push(total * 1e3);
            ob.push(so);
            to.push(st);
            re.push(sr);
            rt.extend(srt);
        }
    }
    // Give back the kept regions first: with --pressure the group has no room for
    // them and the baseline region together.
    drop(regions);
    let base = baseline(spec, size, probe)?;
    let med = |v: &[f64]| record::stats::median(v).unwrap_or(0.0);
    Ok(Done {
        obtain: Series { steps: ob }.stats(size),
        touch: Series { steps: to }.stats(size),
        release: Series { steps: re }.stats(size),
        retouch: (!rt.is_empty()).then(|| Series { steps: rt }.stats(size)),
        total_ms_p50: med(&totals),
        totals_ms: totals,
        baseline_touch_ms_p50: med(&base),
        // (Until 0.x these were the first and last iterations, not the extremes.)
        baseline_touch_ms_min: record::stats::percentile(&base, 0.0).unwrap_or(0.0),
        baseline_touch_ms_max: record::stats::percentile(&base, 1.0).unwrap_or(0.0),
    })
}

/// The touch-only baseline: the same touch on resident memory, ms per
/// counted iteration.
fn baseline(spec: &Spec, size: usize, probe: &mut probe::Probe) -> Result<Vec<f64>, String> {
    let (page, stride) = (mm::page_size(), spec.stride as usize);
    let b = map(size, 0, spec.hugepages)?;
    touch(b, size, Touch::All, stride, page);
    let mut base = Vec::new();
    for _ in 0..(spec.warmup + spec.iterations) {
        let (_, s) = step(probe, || touch(b, size, spec.touch, stride, page))?;
        base.push(s.secs * 1e3);
    }
    unmap(b, size);
    base.drain(..spec.warmup as usize);
    Ok(base)
}

thread_local! {
    static MEMFD: std::cell::Cell<i32> = const { std::cell::Cell::new(-1) };
}

#[derive(Debug, Clone)]
pub struct MappingConfig {
    pub size: u64,
    pub stride: u64,
    pub touch: Touch,
    pub iterations: u32,
    pub warmup: u32,
    /// Separate runs of every method, round-robin (method order within each),
    /// each in a fresh worker: the repeats verdicts pair (docs/stability.md).
    pub repeat: u32,
    pub methods: Vec<String>,
    pub hugepages: Hugepages,
    pub pressure: bool,
    /// The memfd method keeps one memfd across cycles (`--memfd-keep`).
    pub memfd_keep: bool,
    /// The free method's release pages its region out at once (`--free-pageout`).
    pub free_pageout: bool,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
}

pub fn validate(cfg: &MappingConfig, p: &mut probe::Probe) -> Result<(), sandbox::SandboxError> {
    use sandbox::SandboxError::Invalid;
    let page = mm::page_size() as u64;
    if cfg.stride == 0 || cfg.stride % page != 0 {
        return Err(Invalid(format!(
            "--stride {} is not a multiple of the page size ({page} bytes), e.g. 64KiB",
            cfg.stride
        )));
    }
    if cfg.size < cfg.stride {
        return Err(Invalid(format!("--size {} is below one stride ({} bytes)", cfg.size, cfg.stride)));
    }
    if let Some(m) = cfg.methods.iter().find(|m| !METHODS.contains(&m.as_str())) {
        return Err(Invalid(format!("unknown method '{m}': expected {METHOD_NAMES}")));
    }
    if cfg.memfd_keep && !cfg.methods.iter().any(|m| m == "memfd") {
        return Err(Invalid("--memfd-keep changes only the memfd method, which --methods does not run".into()));
    }
    if cfg.free_pageout && !cfg.methods.iter().any(|m| m == "free") {
        return Err(Invalid("--free-pageout changes only the free method, which --methods does not run".into()));
    }
    if cfg.free_pageout && cfg.pressure {
        return Err(Invalid(
            "--free-pageout and --pressure are two ways of giving the lazily freed pages up (timed, or untimed \
             after a squeeze): give one"
                .into(),
        ));
    }
    if cfg.free_pageout {
        // Refused before any run, not in the free method's worker after the others ran.
        mm::try_madvise_pageout()
            .map_err(|e| sandbox::SandboxError::Unsupported(format!("--free-pageout: {e}")))?;
    }
    if cfg.pressure {
        sandbox::privilege::require_admin("--pressure (creating a memory cgroup)", "run without --pressure")?;
        if p.memory_controller().ok().flatten().is_none() {
            return Err(sandbox::SandboxError::Unsupported(
                "--pressure needs a memory cgroup controller; none is mounted".into(),
            ));
        }
    }
    let meminfo = p.meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    guard.check_plan(planned_bytes(cfg.size), "mapping", &meminfo)?;
    Ok(())
}

/// A region, the touch baseline's region, and with --pressure the pressure
/// region, plus 64 MiB for the worker (u128: no size wraps it).
pub fn planned_bytes(size: u64) -> u128 {
    3 * size as u128 + (64 << 20)
}

/// Runs every method in its own worker process, `repeat` times round-robin.
pub fn run<O: workloads::observe::Observer<Entry = crate::mapping::results::Entry>>(
    cfg: &MappingConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<MappingResult>, workloads::observe::ExperimentError> {
    run_with(cfg, obs, stop, &mut sandbox::worker::Processes, sandbox::Sandbox::new("mapping"))
}

/// [`run`], its workers started by `spawn` (tests: [`sandbox::worker::Threads`],
/// no root and no process) and its groups (`--pressure`) made by `sb`.
pub fn run_with<O: workloads::observe::Observer<Entry = crate::mapping::results::Entry>>(
    cfg: &MappingConfig,
    obs: &mut O,
    stop: fn() -> bool,
    spawn: &mut dyn sandbox::worker::Spawn,
    mut sb: sandbox::Sandbox,
) -> Result<Vec<MappingResult>, workloads::observe::ExperimentError> {
    use workloads::observe::ExperimentError;
    if cfg.pressure && !spawn.containable() {
        return Err(ExperimentError::Worker("--pressure needs its workers in a memory cgroup, and these cannot be".into()));
    }
    let mut out = Vec::new();
    // Round-robin, every other repeat reversed (ABBA).
    let plan: Vec<(u32, String)> = (1..=cfg.repeat.max(1))
        .flat_map(|r| workloads::order::abba(&cfg.methods, r as usize - 1).into_iter().map(move |m| (r, m)))
        .collect();
    for (repeat, method) in &plan {
        let (repeat, method) = (*repeat, method.as_str());
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        obs.note(&format!(
            "mapping {method}, repeat {repeat}/{} ({} iterations after {} warm-up)",
            cfg.repeat.max(1),
            cfg.iterations,
            cfg.warmup
        ));
        // Too small for the region plus the pressure region: released pages that the
        // kernel may reclaim (MADV_FREE) really are reclaimed.
        let cg = if cfg.pressure {
            let limit = cfg.size + cfg.size / 16 + (24 << 20);
            Some(sb.memory_cgroup("mapping", &sandbox::cgroup::Limits { max: Some(limit), ..Default::default() })?)
        } else {
            None
        };
        let spec = Spec {
            method: method.to_string(),
            size: cfg.size,
            stride: cfg.stride,
            touch: cfg.touch,
            iterations: cfg.iterations,
            warmup: cfg.warmup,
            hugepages: cfg.hugepages,
            pressure: cfg.pressure,
            memfd_keep: cfg.memfd_keep,
            free_pageout: cfg.free_pageout,
        };
        let mut w = spawn.spawn(sandbox::worker::WorkerSpec {
            exe: cfg.exe.clone(),
            args: sandbox::worker::argv_spec(WORKER, &spec),
            cgroup: cg.as_ref(),
            env: vec![],
            label: format!("mapping {method}"),
        })?;
        obs.targets(
            vec![w.pid()],
            cg.as_ref().map(|c| probe::CgroupTarget { version: c.version, dir: c.dir.clone(), name: c.name.clone() }),
            vec![],
        );
        let t0 = probe::sample::monotonic_ns();
        obs.event("phase_start", method, t0, Value::Null);
        let d = w
            .wait_for(Want::Report, std::time::Duration::from_secs(3600), &mut |_| {}, &stop)
            .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) })?
            .data;
        let _ = w.finish(std::time::Duration::from_secs(10));
        obs.event("phase_end", method, probe::sample::monotonic_ns(), Value::Null);
        let d: Done = serde_json::from_value(d)
            .map_err(|e| ExperimentError::Worker(format!("the mapping worker's reply ({method}): {e}")))?;
        let baseline = crate::mapping::results::Baseline {
            touch_ms_p50: Some(d.baseline_touch_ms_p50).filter(|v| v.is_finite()),
            touch_ms_min: Some(d.baseline_touch_ms_min).filter(|v| v.is_finite()),
            touch_ms_max: Some(d.baseline_touch_ms_max).filter(|v| v.is_finite()),
        };
        let r = result(cfg, &spec, repeat, d);
        obs.result(&crate::mapping::results::Entry {
            baseline: Some(baseline),
            result: Some(r.clone()),
        })?;
        out.push(r);
    }
    obs.targets(vec![], None, vec![]);
    sb.restore()?;
    Ok(out)
}

/// One run's result from its worker's reply.
fn result(cfg: &MappingConfig, spec: &Spec, repeat: u32, d: Done) -> MappingResult {
    let method = spec.method.as_str();
    let (total, base) = (d.total_ms_p50, d.baseline_touch_ms_p50);
    let mut notes = Vec::new();
    if method == "memfd" && cfg.memfd_keep {
        notes.push("--memfd-keep: one memfd, its pages allocated once, mapped and unmapped each cycle".into());
    }
    if method == "free" && cfg.free_pageout {
        notes.push(
            "--free-pageout: each MADV_FREE is followed at once by MADV_PAGEOUT inside the timed release, so the \
             lazily freed pages are discarded and the re-touch faults them in anew"
                .into(),
        );
    }
    if method == "free" && !cfg.pressure && !cfg.free_pageout {
        notes.push("without --pressure nothing forces the kernel to reclaim MADV_FREE pages, so the re-touch finds them in place".into());
    }
    let retouch = d.retouch;
    MappingResult {
        method: method.to_string(),
        touch: crate::kit::names::name(&cfg.touch),
        size_bytes: cfg.size,
        stride_bytes: cfg.stride,
        iterations: cfg.iterations,
        warmup: cfg.warmup,
        repeat,
        hugepages: crate::kit::names::name(&cfg.hugepages),
        pressure: cfg.pressure,
        memfd_keep: cfg.memfd_keep && method == "memfd",
        free_pageout: cfg.free_pageout && method == "free",
        obtain_ms_p50: d.obtain.ms_p50,
        touch_ms_p50: d.touch.ms_p50,
        release_ms_p50: d.release.ms_p50,
        retouch_ms_p50: retouch.as_ref().map(|s| s.ms_p50),
        rss_after_release_bytes: d.release.rss_after_bytes,
        total_ms_p50: total,
        total_ms: d.totals_ms,
        normalized_ms_p50: total - base * if retouch.is_some() { 2.0 } else { 1.0 },
        obtain: d.obtain,
        touch_step: d.touch,
        release: d.release,
        retouch,
        notes,
    }
}

/// `pagelab __worker mapping --spec JSON` ([`Spec`]): runs one method and
/// replies with [`Done`].
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let spec: Spec = sandbox::worker::spec_of(WORKER, args)?;
    let d = run_method(&spec, io.probe())?;
    io.report(&d)?;
    Ok(())
}

#[cfg(test)]
mod tests;
