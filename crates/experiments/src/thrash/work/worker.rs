//! The worker processes: the consumers and the responsiveness probes.

use sandbox::worker::EventKind;
use super::*;
use serde::{Deserialize, Serialize};

/// Writes "thrash consumer: SIGSEGV at 0x…, code N" to stderr, then dies of the
/// signal as it would have: a consumer the kernel kills with a fault signal
/// says where (the run reports it outside the protocol either way).
extern "C" fn fault_report(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let mut buf = [0u8; 96];
    let mut n = 0;
    let mut put = |b: &[u8]| {
        for &c in b {
            if n < buf.len() {
                buf[n] = c;
                n += 1;
            }
        }
    };
    put(if sig == libc::SIGBUS { b"thrash consumer: SIGBUS at 0x" } else { b"thrash consumer: SIGSEGV at 0x" });
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    for i in (0..16).rev() {
        put(&[b"0123456789abcdef"[(addr >> (i * 4)) & 0xf]]);
    }
    put(b", code ");
    put(&[b'0' + (code.unsigned_abs() % 10) as u8]);
    put(b"\n");
    // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), n);
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn report_fault_signals() {
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: installs a handler that only calls async-signal-safe functions.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = fault_report as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The consumer's worker kind.
pub const CONSUMER: &str = "thrash-consumer";
/// The responsiveness probe's worker kind.
pub const PROBE: &str = "thrash-probe";
/// The unlocked sampler's worker kind (pagelab's own worker, src/worker.rs).
pub const SAMPLER: &str = "sampler";

/// A consumer's start (`--spec`): its region, its writes per cycle, its sleep,
/// and when it starts and stops after `t0`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSpec {
    pub index: u32,
    pub size: u64,
    pub writes: u64,
    pub sleep_us: u64,
    pub delay_us: u64,
    pub active_us: u64,
    pub seed: u64,
    /// After t_p the consumer stays alive and writes only in its first
    /// `after_bytes` (its load falls back; the whole region: it stays) until
    /// `exit`; 0: it frees its memory and exits at t_p.
    pub after_bytes: u64,
}

/// The probe's start (`--spec`): its working set and period, and which side
/// of the group it runs on (for the reader of `ps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    pub ws: u64,
    pub period_ms: u64,
    pub inside: bool,
}

/// The unlocked sampler's start (`--spec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplerSpec {
    pub interval_ms: u64,
}

/// `start`: the consumers count their delays from `t0_ns` (the start signal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    pub t0_ns: u64,
}

/// `exit`: a consumer ends (a fallen-back one frees its memory); a probe
/// ends and reports every sample in its `done` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit;

sandbox::commands! {
    /// What a consumer and a probe are told: a consumer answers neither; a
    /// probe answers `exit` with its samples.
    pub enum Command {
        Start(Start) -> (),
        Exit(Exit) -> Value,
    }
}

/// How long a consumer tries again an mmap that fails with ENOMEM: the v1
/// guard raises the limit, or reclaim frees a page, within milliseconds;
/// past this the run fails as before, naming the allocation.
const ALLOC_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The consumer's buffer, with how many tries failed. mmap can fail with
/// ENOMEM in a group at its limit (the mapping's kernel structures are
/// charged from the call): tried again for up to [`ALLOC_RETRY`], which the
/// parent's give-up margin (≥ 2 min) covers.
fn allocate(size: usize) -> Result<(workloads::mm::Mapping, u32), String> {
    workloads::mm::Mapping::anon_retrying(
        size,
        0,
        std::time::Instant::now() + ALLOC_RETRY,
        std::time::Duration::from_millis(1),
    )
    .map_err(|e| format!("allocating {size} bytes (tried again for up to {ALLOC_RETRY:?}): {e}"))
}

/// The consumer: `__worker thrash-consumer --spec JSON` ([`ConsumerSpec`]).
/// Waits for `start` {t0_ns}; reports `done` at t_p, then (with
/// `after_bytes`) goes on at its fallen-back load until `exit`.
pub fn consumer_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    report_fault_signals();
    let s: ConsumerSpec = sandbox::worker::spec_of(CONSUMER, args)?;
    let (index, size, writes) = (s.index as u64, s.size as usize, s.writes);
    let (sleep_ns, delay_ns, active_ns, seed) = (s.sleep_us * 1000, s.delay_us * 1000, s.active_us * 1000, s.seed);
    io.emit(EventKind::Ready, "", Value::Null);
    let t0 = match io.command::<Command>() {
        Some(c) => match c? {
            Command::Start(Start { t0_ns }) => t0_ns,
            Command::Exit(Exit) => return Ok(()),
        },
        None => return Ok(()),
    };
    let planned_start = t0 + delay_ns;
    sleep_until(planned_start);
    let (mut m, enomem) = allocate(size)?;
    let alloc_ns = probe::sample::monotonic_ns();
    // Where the buffer is, for the v1 guard's reclaim ahead.
    io.emit(EventKind::Alloc, "", json!({"addr": m.as_slice().as_ptr() as usize, "len": size, "enomem_retries": enomem}));
    let planned_end = planned_start + active_ns;
    let buf = m.as_mut_slice();
    let mut x = seed | 1;
    let mut cycles = 0u64;
    // The cycle times, for the fastest, median and slowest cycle: every one
    // up to CYCLE_SAMPLES (the study's presets make at most t_p ÷ t_s = 7800
    // cycles unthrashed), then a uniform sample of them (reservoir), so that
    // a consumer that never sleeps (`--sleep 0s`) keeps a bounded buffer in
    // the group it is thrashing.
    let mut cycle_ns: Vec<u64> = Vec::new();
    let (mut fastest, mut slowest) = (u64::MAX, 0u64);
    let mut pick = seed.rotate_left(17) | 1;
    let mut bins: Vec<u32> = Vec::new();
    // Until t_p has passed (counted from the allocation, as the study's consumer does).
    let end_at = alloc_ns + active_ns;
    while probe::sample::monotonic_ns() < end_at {
        let c0 = probe::sample::monotonic_ns();
        workloads::kernels::random_writes(buf, size, writes, &mut x);
        if sleep_ns > 0 {
            sleep_until(probe::sample::monotonic_ns() + sleep_ns);
        }
        cycles += 1;
        let now = probe::sample::monotonic_ns();
        let took = now - c0;
        (fastest, slowest) = (fastest.min(took), slowest.max(took));
        if cycle_ns.len() < CYCLE_SAMPLES {
            cycle_ns.push(took);
        } else {
            pick ^= pick << 13;
            pick ^= pick >> 7;
            pick ^= pick << 17;
            let i = pick % cycles;
            if (i as usize) < CYCLE_SAMPLES {
                cycle_ns[i as usize] = took;
            }
        }
        let b = ((now.saturating_sub(t0)) / (BIN_MS * 1_000_000)) as usize;
        if bins.len() <= b {
            bins.resize(b + 1, 0);
        }
        bins[b] += 1;
    }
    let after = (s.after_bytes as usize).min(size);
    let end_ns = probe::sample::monotonic_ns();
    cycle_ns.sort_unstable();
    let min = if cycles > 0 { fastest as f64 } else { 0.0 };
    let p50 = record::stats::percentile_u64(&mut cycle_ns, 0.5).unwrap_or(0) as f64;
    let expected = if min > 0.0 { active_ns as f64 / min } else { 0.0 };
    io.emit(
        EventKind::Done,
        "",
        json!({
            "index": index,
            "cycles": cycles,
            "expected_cycles": expected,
            "progress_ratio": if expected > 0.0 { (cycles as f64 / expected).min(1.0) } else { 0.0 },
            "lateness_s": (end_ns as f64 - planned_end as f64) / 1e9,
            "start_lateness_s": (alloc_ns as f64 - planned_start as f64) / 1e9,
            "cycle_ms_min": min / 1e6,
            "cycle_ms_p50": p50 / 1e6,
            "cycle_ms_max": slowest as f64 / 1e6,
            "end_ns": end_ns,
            "start_s": (alloc_ns as f64 - t0 as f64) / 1e9,
            "end_s": (end_ns as f64 - t0 as f64) / 1e9,
            "bins": bins,
        }),
    );
    if after == 0 {
        drop(m);
        return Ok(());
    }
    // The load falls back (or stays): the same cycle over the first `after`
    // bytes, until the parent's `exit` (or its end: stdin closed).
    loop {
        workloads::kernels::random_writes(&mut m.as_mut_slice()[..after], after, writes, &mut x);
        // Without a sleep, a look at the parent's line without waiting, each
        // cycle (the wait below would never look).
        let asked = if sleep_ns == 0 {
            io.wait_input(std::time::Duration::ZERO)
        } else {
            wait_input_until(io, probe::sample::monotonic_ns() + sleep_ns)
        };
        if asked {
            match io.command::<Command>() {
                Some(Ok(Command::Start(_))) => continue,
                Some(Ok(Command::Exit(_))) | None => break,
                Some(Err(e)) => return Err(e),
            }
        }
    }
    drop(m);
    Ok(())
}

/// The cycle times a consumer keeps exactly; past them, a uniform sample
/// of this many (64 KiB).
const CYCLE_SAMPLES: usize = 8192;

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec { tv_sec: (t_ns / 1_000_000_000) as libc::time_t, tv_nsec: (t_ns % 1_000_000_000) as _ };
    // SAFETY: absolute sleep on CLOCK_MONOTONIC; EINTR just returns early and we loop.
    while probe::sample::monotonic_ns() < t_ns {
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// Sleeps until `t_ns` or until a command (or the end of commands) is
/// there to read: true then. Through the worker's own input (its stdin, or
/// an in-process worker's socket), so that a consumer or a probe run as a
/// thread ends as one run as a process does.
pub fn wait_input_until(io: &mut sandbox::worker::child::WorkerIo, t_ns: u64) -> bool {
    loop {
        let now = probe::sample::monotonic_ns();
        if now >= t_ns {
            return false;
        }
        if io.wait_input(std::time::Duration::from_nanos(t_ns - now)) {
            return true;
        }
    }
}

/// The responsiveness probe: `__worker thrash-probe --spec JSON` ([`ProbeSpec`]). Every
/// period it wakes at its planned time, writes one byte in each page of its working
/// set, and records planned-wake-to-done; on `exit` it reports every sample.
pub fn probe_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let s: ProbeSpec = sandbox::worker::spec_of(PROBE, args)?;
    let (ws, period) = (s.ws as usize, s.period_ms * 1_000_000);
    let page = workloads::mm::page_size();
    let mut m = workloads::mm::Mapping::anon(ws, 0).map_err(|e| format!("allocating {ws} bytes: {e}"))?;
    let buf = m.as_mut_slice();
    for i in (0..ws).step_by(page) {
        buf[i] = 1;
    }
    let mut samples: Vec<(u64, f64)> = Vec::with_capacity(100_000);
    io.emit(EventKind::Ready, "", Value::Null);
    let mut next = probe::sample::monotonic_ns() + period;
    let mut missed = 0u64;
    loop {
        if wait_input_until(io, next) {
            match io.command::<Command>() {
                Some(Ok(Command::Start(_))) => continue,
                Some(Ok(Command::Exit(_))) | None => break,
                Some(Err(e)) => return Err(e),
            }
        }
        for i in (0..ws).step_by(page) {
            // SAFETY: i < ws.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), (next as u8) | 1) };
        }
        let done = probe::sample::monotonic_ns();
        samples.push((next, (done - next) as f64 / 1e6));
        next += period;
        // Skip wake-ups that are already past: one late wake-up is one sample.
        while next < done {
            next += period;
            missed += 1;
        }
    }
    io.reply::<Exit>(&json!({"samples": samples, "missed": missed}));
    Ok(())
}
