//! The cost, with `--trim`: the probe, the trim into a store, and following
//! the target after it.

use super::*;
use crate::kit::store::{Store, StoreSize, store_size, swap_used};

/// Runs the probe command once: its latency in ms, or why it failed.
pub(super) fn probe_once(cmd: &str) -> Result<f64, String> {
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

pub(super) fn probe_runs(cmd: &str, n: u32) -> (Latency, Option<String>) {
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

/// MADV_PAGEOUT (or MADV_COLD) over the process's private mappings.
pub fn advise(p: &mut Probe, pid: i32, advice: i32) -> Result<usize, String> {
    let fd = workloads::mm::PidFd::open(pid).map_err(|e| format!("pidfd_open({pid}): {e}"))?;
    let ranges = private_ranges(p, pid).map_err(|e| format!("reading /proc/{pid}/maps: {e}"))?;
    workloads::mm::process_madvise(&fd, &ranges, advice).map_err(|e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            format!("not permitted on pid {pid}: process_madvise needs CAP_SYS_NICE (and ptrace access); run as root")
        } else {
            format!("process_madvise on pid {pid}: {e}")
        }
    })
}

pub(super) struct Follow {
    rss_anon: u64,
    swap: u64,
    majflt: u64,
}

pub(super) fn follow_point(p: &mut Probe, pid: i32) -> Option<Follow> {
    let st = p.pid_status(pid).ok().flatten()?;
    let stat = p.pid_stat(pid).ok().flatten()?;
    // A status without its memory lines (a zombie) is a process gone, not zeros.
    Some(Follow { rss_anon: st.rss_anon?, swap: st.vm_swap?, majflt: stat.majflt })
}

pub(super) fn psi_some_us(p: &mut Probe) -> Option<u64> {
    p.pressure("memory").ok().flatten().map(|p| p.some.total_us)
}

/// The store's sizes: our zram device's, or for an existing store the swap
/// in use (what it holds) and zswap's pool (what it costs in RAM; none where
/// zswap keeps no pool). None where our device's sizes cannot be read.
pub(super) fn store_sizes(p: &mut Probe, zram: Option<u32>) -> Option<StoreSize> {
    match zram {
        Some(id) => store_size(p, Store::Zram(id)),
        None => {
            // What it holds is the swap in use: unread, the sizes are unknown.
            let held = swap_used(p)?;
            // zswap's pool: its meminfo line, or none when zswap is off (or
            // absent); on, with no line (a kernel before 5.19), unknown.
            let pool = match store_size(p, Store::Zswap) {
                Some(z) => z.ram_bytes,
                None if p.zswap().enabled != Some(true) => 0,
                None => return None,
            };
            Some(StoreSize { orig_bytes: Some(held), compr_bytes: pool, ram_bytes: pool, ..Default::default() })
        }
    }
}

pub(super) fn trim(
    cfg: &AssessConfig,
    p: &mut Probe,
    kind: BackingKind,
    pid: i32,
    ws: u64,
    obs: &mut dyn Observer<Entry = AssessResult>,
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
        follow_point(p, pid).ok_or_else(|| ExperimentError::Worker(format!("pid {pid} exited before the trim")))?;
    let mut sb = Sandbox::new("assess");
    let back = backing::setup(&mut sb, kind, cfg.compressor.as_deref(), before.rss_anon, &cfg.swapfile_dir)?;
    for n in &back.notes {
        obs.note(n);
    }
    t.store = back.kind.name().into();
    t.compressor = back.compressor.clone();
    obs.targets(vec![pid], None, back.zram_id.into_iter().collect());
    t.rss_anon_before_bytes = before.rss_anon;
    let t0 = Instant::now();
    obs.event("phase_start", "trim", probe::sample::monotonic_ns(), json!({}));
    advise(p, pid, workloads::mm::MADV_PAGEOUT).map_err(err)?;
    obs.event("phase_end", "trim", probe::sample::monotonic_ns(), json!({}));
    t.seconds = t0.elapsed().as_secs_f64();
    let after =
        follow_point(p, pid).ok_or_else(|| ExperimentError::Worker(format!("pid {pid} exited during the trim")))?;
    t.rss_anon_after_bytes = after.rss_anon;
    if let Some(cmd) = &cfg.probe {
        t.probe_after = Some(probe_runs(cmd, cfg.probe_runs).0);
    }
    // Follow the working set re-forming.
    let (psi0, f0) = (psi_some_us(p), Instant::now());
    let start = Instant::now();
    let mut ended = None;
    let mut store_gap = false;
    loop {
        let s = start.elapsed().as_secs_f64();
        let Some(f) = follow_point(p, pid) else {
            ended = Some(format!("pid {pid} exited {s:.1} s after the trim; the curve stops there"));
            break;
        };
        // A reading of the store that failed leaves its sizes null, not zeros;
        // the process's own figures at that point stay.
        let z = store_sizes(p, back.zram_id);
        if z.is_none() && !std::mem::replace(&mut store_gap, true) {
            obs.note("the store's sizes could not be read at some points; the curve leaves them out there");
        }
        t.curve.push(Point {
            t_s: s,
            rss_anon_bytes: f.rss_anon,
            swap_bytes: f.swap,
            major_faults: f.majflt.saturating_sub(after.majflt),
            store_orig_bytes: z.and_then(|z| z.orig_bytes),
            store_compr_bytes: z.map(|z| z.compr_bytes),
            store_used_bytes: z.map(|z| z.ram_bytes),
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
    if let (Some(a), Some(b)) = (psi0, psi_some_us(p)) {
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
    if let Some(id) = back.zram_id
        && !remove_store(p, id, pid, &mut t, obs)
    {
        // Keep the journal (and the device): the next pagelab run, or
        // `pagelab restore`, undoes it.
        std::mem::forget(sb);
        return Ok(t);
    }
    sb.restore()?;
    Ok(t)
}

/// Whether the store made for the run (zram `id`) may go: swapoff brings its
/// pages back into RAM, so it stays (false, with `t.store_note` saying why)
/// while the target lives and there is not room for them, or either cannot
/// be read.
fn remove_store(
    p: &mut Probe,
    id: u32,
    pid: i32,
    t: &mut Trim,
    obs: &mut dyn Observer<Entry = AssessResult>,
) -> bool {
    // What swapoff would bring back, and the room for it; either unread
    // is not "nothing" and "room": the device stays.
    let need = store_sizes(p, Some(id)).and_then(|z| Some(z.orig_bytes?.saturating_sub(z.ram_bytes)));
    let avail = p.meminfo().ok().flatten().and_then(|m| m.get("MemAvailable"));
    let short = match (need, avail) {
        (Some(n), Some(a)) => (n + (a / 10).max(256 << 20) > a).then(|| {
            format!("swapoff would bring {} MiB back into RAM and only {} MiB is available", units::whole_mib(n), units::whole_mib(a))
        }),
        _ => Some("how much swapoff would bring back into RAM, or the room for it, could not be read".into()),
    };
    if let Some(why) = short.filter(|_| alive(p, pid)) {
        t.store_note =
            format!("zram{id} left in place: {why}; `pagelab restore` removes it once there is room");
        obs.note(&t.store_note);
        return false;
    }
    t.store_note = format!(
        "zram{id} removed: swapoff brought {} back into RAM ({} was available)",
        need.map_or("what it held".into(), |n| format!("{} MiB", units::whole_mib(n))),
        avail.map_or("an unread amount".into(), |a| format!("{} MiB", units::whole_mib(a)))
    );
    t.store_removed = true;
    true
}
