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

use crate::mm;
use serde_json::{Value, json};
use std::time::Instant;

pub const METHODS: [&str; 7] = ["mmap-munmap", "dontneed", "free", "memfd", "memfd-punch", "mremap", "populate"];
pub const METHOD_NAMES: &str = "mmap-munmap, dontneed, free, memfd, memfd-punch, mremap, populate";

pub use record::results::mapping::{MappingResult, StepStats};

fn rusage() -> (u64, u64) {
    let u = crate::usage::process();
    (u.minflt, u.majflt)
}

fn mem() -> (u64, u64) {
    let s = probe::Probe::default().pid_status(std::process::id() as i32).ok().flatten().unwrap_or_default();
    (s.vm_rss.unwrap_or(0), s.rss_shmem.unwrap_or(0))
}

#[derive(Default, Clone, Copy)]
struct Step {
    secs: f64,
    minflt: u64,
    majflt: u64,
    rss: u64,
    shmem: u64,
}

/// Times `f`; faults and memory are read outside the timed part.
fn step<T>(f: impl FnOnce() -> T) -> (T, Step) {
    let (f0, j0) = rusage();
    let t = Instant::now();
    let v = f();
    let secs = t.elapsed().as_secs_f64();
    let (f1, j1) = rusage();
    let (rss, shmem) = mem();
    (v, Step { secs, minflt: f1 - f0, majflt: j1 - j0, rss, shmem })
}

fn touch(p: *mut u8, len: usize, mode: &str, stride: usize, page: usize) {
    // SAFETY: p..p+len is a writable mapping owned by the caller.
    unsafe {
        match mode {
            "all" => std::ptr::write_bytes(p, 0x5a, len),
            _ => {
                let step = if mode == "page" { page } else { stride };
                let mut off = 0;
                while off < len {
                    std::ptr::write_volatile(p.add(off), 0x5a);
                    off += step;
                }
            }
        }
    }
}

fn map(len: usize, extra: i32, hugepages: &str) -> Result<*mut u8, String> {
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

fn advise_huge(p: *mut u8, len: usize, hugepages: &str) {
    let adv = if hugepages == "madvise" { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
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

/// Runs one method in this (worker) process. `pressure`: after each release, touch
/// a second region as large as the first, so that a cgroup too small for both must
/// reclaim the released pages.
#[allow(clippy::too_many_arguments)]
pub fn run_method(
    method: &str,
    size: usize,
    stride: usize,
    touch_mode: &str,
    iterations: u32,
    warmup: u32,
    hugepages: &str,
    pressure: bool,
) -> Result<Value, String> {
    let page = mm::page_size();
    let (mut ob, mut to, mut re, mut rt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut totals = Vec::new();
    // Kept regions for the methods that reuse one.
    let kept: Option<*mut u8> = match method {
        "dontneed" | "free" => Some(map(size, 0, hugepages)?),
        _ => None,
    };
    let kept_fd: Option<(i32, *mut u8)> = if method == "memfd-punch" { Some(memfd(size)?) } else { None };
    let half = (size / 2).div_ceil(page) * page;
    let mut remap: Option<*mut u8> = if method == "mremap" { Some(map(half, 0, hugepages)?) } else { None };
    for it in 0..(warmup + iterations) {
        let (p, so) = match method {
            "mmap-munmap" => step(|| map(size, 0, hugepages)),
            "populate" => step(|| map(size, libc::MAP_POPULATE, hugepages)),
            "dontneed" | "free" => step(|| Ok(kept.unwrap())),
            "memfd" => {
                let (r, s) = step(|| memfd(size));
                let (fd, p) = r?;
                // Keep the fd for the release step.
                MEMFD.with(|c| c.set(fd));
                (Ok(p), s)
            }
            "memfd-punch" => step(|| Ok(kept_fd.unwrap().1)),
            "mremap" => step(|| {
                let old = remap.take().unwrap();
                // SAFETY: growing our own mapping; the kernel may move it.
                let p = unsafe { libc::mremap(old.cast(), half, size, libc::MREMAP_MAYMOVE) };
                if p == libc::MAP_FAILED {
                    return Err(format!("mremap: {}", std::io::Error::last_os_error()));
                }
                Ok(p.cast::<u8>())
            }),
            other => return Err(format!("unknown method '{other}'")),
        };
        let p = p?;
        let (_, st) = step(|| touch(p, size, touch_mode, stride, page));
        let (r, sr) = step(|| -> Result<(), String> {
            match method {
                "mmap-munmap" | "populate" => unmap(p, size),
                "dontneed" => mm::madvise(p, size, libc::MADV_DONTNEED).map_err(|e| e.to_string())?,
                "free" => mm::madvise(p, size, libc::MADV_FREE).map_err(|e| e.to_string())?,
                "memfd" => {
                    unmap(p, size);
                    // SAFETY: closing our memfd.
                    MEMFD.with(|c| unsafe { libc::close(c.get()) });
                }
                "memfd-punch" => {
                    // SAFETY: punching a hole in our own memfd.
                    let r = unsafe {
                        libc::fallocate(
                            kept_fd.unwrap().0,
                            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                            0,
                            size as libc::off_t,
                        )
                    };
                    if r != 0 {
                        return Err(format!("fallocate(PUNCH_HOLE): {}", std::io::Error::last_os_error()));
                    }
                }
                "mremap" => {
                    // SAFETY: shrinking our own mapping back (unmaps the tail).
                    let q = unsafe { libc::mremap(p.cast(), size, half, 0) };
                    if q == libc::MAP_FAILED {
                        return Err(format!("mremap shrink: {}", std::io::Error::last_os_error()));
                    }
                    remap = Some(q.cast());
                }
                _ => {}
            }
            Ok(())
        });
        r?;
        if pressure && matches!(method, "dontneed" | "free" | "memfd-punch") {
            // Memory the group cannot hold together with the released pages (only the
            // methods that keep their region have released pages left to reclaim).
            let q = map(size, 0, "never")?;
            touch(q, size, "page", page, page);
            unmap(q, size);
        }
        let srt = match method {
            "dontneed" | "free" | "memfd-punch" => Some(step(|| touch(p, size, touch_mode, stride, page)).1),
            _ => None,
        };
        if it >= warmup {
            let total = so.secs + st.secs + sr.secs + srt.map(|s| s.secs).unwrap_or(0.0);
            totals.push(total * 1e3);
            ob.push(so);
            to.push(st);
            re.push(sr);
            if let Some(s) = srt {
                rt.push(s);
            }
        }
    }
    // Give back the kept regions first: with --pressure the group has no room for
    // them and the baseline region together.
    if let Some(p) = kept {
        unmap(p, size);
    }
    if let Some((fd, p)) = kept_fd {
        unmap(p, size);
        // SAFETY: closing our memfd.
        unsafe { libc::close(fd) };
    }
    if let Some(p) = remap {
        unmap(p, half);
    }
    // Touch-only baseline: the same touch on resident memory.
    let b = map(size, 0, hugepages)?;
    touch(b, size, "all", stride, page);
    let mut base = Vec::new();
    for _ in 0..(warmup + iterations) {
        let (_, s) = step(|| touch(b, size, touch_mode, stride, page));
        base.push(s.secs * 1e3);
    }
    unmap(b, size);
    base.drain(..warmup as usize);
    let per_iteration = totals.clone();
    let med = |v: &[f64]| record::stats::median(v).unwrap_or(0.0);
    Ok(json!({
        "obtain": Series { steps: ob }.stats(size),
        "touch": Series { steps: to }.stats(size),
        "release": Series { steps: re }.stats(size),
        "retouch": (!rt.is_empty()).then(|| Series { steps: rt }.stats(size)),
        "total_ms_p50": med(&totals),
        "totals_ms": per_iteration,
        "baseline_touch_ms_p50": med(&base),
        "baseline_touch_ms_min": base.first().copied().unwrap_or(0.0),
        "baseline_touch_ms_max": base.last().copied().unwrap_or(0.0),
    }))
}

thread_local! {
    static MEMFD: std::cell::Cell<i32> = const { std::cell::Cell::new(-1) };
}

#[derive(Debug, Clone)]
pub struct MappingConfig {
    pub size: u64,
    pub stride: u64,
    pub touch: String,
    pub iterations: u32,
    pub warmup: u32,
    /// Separate runs of every method, round-robin (method order within each),
    /// each in a fresh worker: the repeats verdicts pair (docs/stability.md).
    pub repeat: u32,
    pub methods: Vec<String>,
    pub hugepages: String,
    pub pressure: bool,
    pub exe: std::path::PathBuf,
    pub host_floor: Option<u64>,
}

pub fn validate(cfg: &MappingConfig) -> Result<(), sandbox::SandboxError> {
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
    if cfg.pressure {
        sandbox::privilege::require_admin("--pressure (creating a memory cgroup)", "run without --pressure")?;
        if probe::Probe::default().memory_controller().ok().flatten().is_none() {
            return Err(sandbox::SandboxError::Unsupported(
                "--pressure needs a memory cgroup controller; none is mounted".into(),
            ));
        }
    }
    let meminfo = probe::Probe::default().meminfo().ok().flatten().unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(cfg.host_floor, &meminfo);
    guard.check_plan(planned_bytes(cfg.size), "mapping", &meminfo)?;
    Ok(())
}

/// A region, the touch baseline's region, and with --pressure the pressure
/// region, plus 64 MiB for the worker (u128: no size wraps it).
pub fn planned_bytes(size: u64) -> u128 {
    3 * size as u128 + (64 << 20)
}

fn stats_of(v: &Value) -> StepStats {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// Runs every method in its own worker process, `repeat` times round-robin.
pub fn run<O: crate::observe::Observer>(
    cfg: &MappingConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<MappingResult>, crate::observe::ExperimentError> {
    use crate::observe::ExperimentError;
    let mut sb = sandbox::Sandbox::new("mapping");
    let mut out = Vec::new();
    // Round-robin, every other repeat reversed (ABBA).
    let plan: Vec<(u32, String)> = (1..=cfg.repeat.max(1))
        .flat_map(|r| crate::order::abba(&cfg.methods, r as usize - 1).into_iter().map(move |m| (r, m)))
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
        let args: Vec<String> = [
            "__worker",
            "mapping",
            "--method",
            method,
            "--size",
            &cfg.size.to_string(),
            "--stride",
            &cfg.stride.to_string(),
            "--touch",
            &cfg.touch,
            "--iterations",
            &cfg.iterations.to_string(),
            "--warmup",
            &cfg.warmup.to_string(),
            "--hugepages",
            &cfg.hugepages,
            "--pressure",
            if cfg.pressure { "1" } else { "0" },
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut w = sandbox::worker::Worker::spawn(sandbox::worker::WorkerSpec {
            exe: cfg.exe.clone(),
            args,
            cgroup: cg.as_ref(),
            env: vec![],
            label: format!("mapping {method}"),
        })?;
        obs.targets(
            vec![w.pid],
            cg.as_ref().map(|c| probe::CgroupTarget { version: c.version, dir: c.dir.clone(), name: c.name.clone() }),
            vec![],
        );
        let t0 = probe::sample::monotonic_ns();
        obs.event("phase_start", method, t0, Value::Null);
        let d = w
            .wait_for("done", Some("mapping"), std::time::Duration::from_secs(3600), |_| {}, stop)
            .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Worker(f.to_string()) })?
            .data;
        let _ = w.finish(std::time::Duration::from_secs(10));
        obs.event("phase_end", method, probe::sample::monotonic_ns(), Value::Null);
        let retouch = (!d["retouch"].is_null()).then(|| stats_of(&d["retouch"]));
        let total = d["total_ms_p50"].as_f64().unwrap_or(0.0);
        let base = d["baseline_touch_ms_p50"].as_f64().unwrap_or(0.0);
        let (obtain, touch_step, release) = (stats_of(&d["obtain"]), stats_of(&d["touch"]), stats_of(&d["release"]));
        let mut notes = Vec::new();
        if method == "free" && !cfg.pressure {
            notes.push("without --pressure nothing forces the kernel to reclaim MADV_FREE pages, so the re-touch finds them in place".into());
        }
        let r = MappingResult {
            method: method.to_string(),
            touch: cfg.touch.clone(),
            size_bytes: cfg.size,
            stride_bytes: cfg.stride,
            iterations: cfg.iterations,
            warmup: cfg.warmup,
            repeat,
            hugepages: cfg.hugepages.clone(),
            pressure: cfg.pressure,
            obtain_ms_p50: obtain.ms_p50,
            touch_ms_p50: touch_step.ms_p50,
            release_ms_p50: release.ms_p50,
            retouch_ms_p50: retouch.as_ref().map(|s| s.ms_p50),
            rss_after_release_bytes: release.rss_after_bytes,
            total_ms_p50: total,
            total_ms: d["totals_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                .unwrap_or_default(),
            normalized_ms_p50: total - base * if retouch.is_some() { 2.0 } else { 1.0 },
            obtain,
            touch_step,
            release,
            retouch,
            notes,
        };
        obs.result(json!({"baseline": {"touch_ms_p50": base, "touch_ms_min": d["baseline_touch_ms_min"], "touch_ms_max": d["baseline_touch_ms_max"]}, "result": r}));
        out.push(r);
    }
    obs.targets(vec![], None, vec![]);
    sb.restore()?;
    Ok(out)
}

/// `pagelab __worker mapping --method M ...`: runs one method and reports it.
pub fn worker_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let arg = |n: &str| args.iter().position(|a| a == n).and_then(|i| args.get(i + 1)).cloned().unwrap_or_default();
    let num = |n: &str| arg(n).parse::<u64>().map_err(|_| format!("mapping worker needs {n}"));
    let d = run_method(
        &arg("--method"),
        num("--size")? as usize,
        num("--stride")? as usize,
        &arg("--touch"),
        num("--iterations")? as u32,
        num("--warmup")? as u32,
        &arg("--hugepages"),
        arg("--pressure") == "1",
    )?;
    io.emit("done", "mapping", d);
    Ok(())
}
