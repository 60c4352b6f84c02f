//! Service mode: a running process (or cgroup) is never restarted. pagelab
//! reclaims from it in small steps while memory pressure (PSI some) and an
//! optional probe's latency stay under their thresholds, holds when they rise,
//! and reports where the footprint settled (Meta's senpai, one program at a
//! time).
//!
//! - `--cgroup` (cgroup v2): `memory.reclaim` of the group; the kernel's LRU
//!   picks the pages. No setting of the group changes.
//! - `--pid`: process_madvise(MADV_PAGEOUT) of the process's own pages, a step
//!   at a time in address order. A page that comes back (present again in
//!   /proc/PID/pagemap) was needed: it is hot, and is left alone for a while;
//!   what stays out was cold. No setting of any group changes.
//!
//! Either way everything reclaimed comes back by the program's own faults.

use crate::rightsize::results::{Recommendation, RightsizeResult, Service, ServicePoint};
use probe::Probe;
use probe::cgroup::CgroupVersion;
use sandbox::Sandbox;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use workloads::backing::{self, BackingKind};
use workloads::observe::{ExperimentError, Observer};

const MIB: u64 = 1 << 20;
/// A page that came back is left alone for this many steps.
const HOT_FOR_STEPS: u64 = 60;

#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub pid: Option<i32>,
    pub cgroup: Option<PathBuf>,
    /// PSI some share above which reclaim holds (0.001 = 0.1 %).
    pub psi: f64,
    pub probe: Option<String>,
    /// The probe's latency may grow by this share before reclaim holds.
    pub probe_slowdown: f64,
    pub duration: Duration,
    pub interval: Duration,
    /// The largest step, as a share of the footprint.
    pub step: f64,
    pub backing: BackingKind,
    pub compressor: Option<String>,
    pub swapfile_dir: PathBuf,
}

fn err(msg: impl Into<String>) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg.into()))
}

enum Target {
    Pid { pid: i32, cg_pressure: Option<PathBuf> },
    Cgroup { dir: PathBuf, version: CgroupVersion },
}

/// Checks the target without changing anything.
pub fn validate(cfg: &ServiceConfig, p: &mut Probe) -> Result<(), ExperimentError> {
    match (cfg.pid, &cfg.cgroup) {
        (Some(pid), None) => crate::kit::process::check_pid(p, pid),
        (None, Some(dir)) => {
            if !sandbox::cgroup::is_cgroup_dir(dir) {
                return Err(err(format!(
                    "--cgroup {}: not a directory of a cgroup filesystem (give one under /sys/fs/cgroup)",
                    dir.display()
                )));
            }
            let (version, _) = cgroup_version_of(dir)?;
            if version == CgroupVersion::V1 {
                return Err(err(format!(
                    "--cgroup {}: a cgroup v1 group has no memory.reclaim, and pagelab changes no setting of a group \
                     it did not create; give --pid of the process instead",
                    dir.display()
                )));
            }
            if !dir.join("memory.reclaim").exists() {
                return Err(err(format!("--cgroup {}: no memory.reclaim (needs Linux 5.19)", dir.display())));
            }
            Ok(())
        }
        _ => Err(err("service mode needs exactly one of --pid PID or --cgroup PATH")),
    }
}

fn cgroup_version_of(dir: &std::path::Path) -> Result<(CgroupVersion, ()), ExperimentError> {
    if dir.join("memory.current").exists() {
        Ok((CgroupVersion::V2, ()))
    } else if dir.join("memory.usage_in_bytes").exists() {
        Ok((CgroupVersion::V1, ()))
    } else {
        Err(err(format!(
            "--cgroup {}: not a memory cgroup (no memory.current or memory.usage_in_bytes)",
            dir.display()
        )))
    }
}

fn read_u64(p: PathBuf) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

fn footprint(p: &mut Probe, t: &Target) -> Option<u64> {
    match t {
        Target::Pid { pid, .. } => p.pid_status(*pid).ok().flatten().and_then(|s| s.vm_rss),
        Target::Cgroup { dir, version } => match version {
            CgroupVersion::V2 => read_u64(dir.join("memory.current")),
            CgroupVersion::V1 => read_u64(dir.join("memory.usage_in_bytes")),
        },
    }
}

/// The stall total (some, µs), or None where it cannot be read.
fn psi_some_us(probe: &mut Probe, t: &Target) -> Option<u64> {
    let file = match t {
        Target::Pid { cg_pressure: Some(p), .. } => Some(p.clone()),
        Target::Cgroup { dir, .. } => Some(dir.join("memory.pressure")),
        _ => None,
    };
    let p = match file {
        Some(f) => std::fs::read_to_string(f).ok().and_then(|t| probe::pressure::parse(&t).ok()),
        None => probe.pressure("memory").ok().flatten(),
    };
    p.map(|p| p.some.total_us)
}

/// Major faults so far, or None where they cannot be read.
fn majflt(p: &mut Probe, t: &Target) -> Option<u64> {
    match t {
        Target::Pid { pid, .. } => p.pid_stat(*pid).ok().flatten().map(|s| s.majflt),
        Target::Cgroup { dir, .. } => std::fs::read_to_string(dir.join("memory.stat"))
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("pgmajfault ").and_then(|v| v.trim().parse().ok()))),
    }
}

/// One interval's readings: pressure, faults and footprint, all read or none.
fn reading(p: &mut Probe, t: &Target) -> Option<(u64, u64, u64)> {
    Some((psi_some_us(p, t)?, majflt(p, t)?, footprint(p, t)?))
}

/// The --pid method's memory of pages: which it paged out (and when), and
/// which came back (hot, until a step).
struct Pager {
    pid: i32,
    page: u64,
    out: HashMap<u64, u64>,
    hot: HashMap<u64, u64>,
    cursor: u64,
}

/// Pagemap entries read at once (32 KiB of buffer).
const PAGEMAP_CHUNK: u64 = 4096;

impl Pager {
    /// Present bits of `len` bytes at `start` from /proc/PID/pagemap.
    fn present(&self, f: &mut std::fs::File, start: u64, len: u64) -> Vec<bool> {
        let n = (len / self.page) as usize;
        let mut buf = vec![0u8; n * 8];
        if f.seek(SeekFrom::Start(start / self.page * 8)).is_err() || f.read_exact(&mut buf).is_err() {
            return vec![false; n];
        }
        buf.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8")) >> 63 == 1).collect()
    }

    /// Marks the pages paged out before that are back as hot; then pages out
    /// up to `bytes` of present pages that are not hot, from the cursor on.
    /// Returns the bytes asked of the kernel.
    fn step(&mut self, p: &mut Probe, bytes: u64, now: u64) -> Result<u64, String> {
        // Readable ranges only, read in chunks of PAGEMAP_CHUNK entries: a
        // target with a 16 TiB PROT_NONE reservation made one buffer of its
        // whole virtual size (issue 46 item 5: 176 MB mlocked at 64 GiB, an
        // abort on 32 GiB at 16 TiB).
        let ranges = crate::kit::process::readable_private_ranges(p, self.pid)?;
        let mut pm = std::fs::File::open(format!("/proc/{}/pagemap", self.pid))
            .map_err(|e| format!("/proc/{}/pagemap: {e}", self.pid))?;
        self.hot.retain(|_, until| *until > now);
        let mut chosen: Vec<(usize, usize)> = Vec::new();
        let mut taken = 0u64;
        let mut back = std::collections::HashSet::new();
        // Ranges from the cursor on, then from the start (one lap at most).
        let mut order: Vec<(usize, usize)> =
            ranges.iter().copied().filter(|r| (r.0 + r.1) as u64 > self.cursor).collect();
        order.extend(ranges.iter().copied().filter(|r| (r.0 + r.1) as u64 <= self.cursor));
        for (start, len) in order {
            let n = len as u64 / self.page;
            let from = if (start as u64) < self.cursor && self.cursor < (start + len) as u64 {
                (self.cursor - start as u64) / self.page
            } else {
                0
            };
            let mut i0 = 0u64;
            while i0 < n {
                let k = (n - i0).min(PAGEMAP_CHUNK);
                let at = start as u64 + i0 * self.page;
                let present = self.present(&mut pm, at, k * self.page);
                for (j, p) in present.iter().enumerate() {
                    let a = at + j as u64 * self.page;
                    if *p && self.out.remove(&a).is_some() {
                        back.insert(a);
                    }
                }
                for (j, p) in present.iter().enumerate() {
                    if taken >= bytes {
                        break;
                    }
                    let a = at + j as u64 * self.page;
                    if i0 + (j as u64) < from || !*p || self.hot.contains_key(&a) || back.contains(&a) {
                        continue;
                    }
                    match chosen.last_mut() {
                        Some((s, l)) if (*s + *l) as u64 == a => *l += self.page as usize,
                        _ => chosen.push((a as usize, self.page as usize)),
                    }
                    self.out.insert(a, now);
                    taken += self.page;
                    self.cursor = a + self.page;
                }
                i0 += k;
            }
        }
        for a in back {
            self.hot.insert(a, now + HOT_FOR_STEPS);
        }
        if chosen.is_empty() {
            return Ok(0);
        }
        let fd = workloads::mm::PidFd::open(self.pid).map_err(|e| format!("pidfd_open({}): {e}", self.pid))?;
        workloads::mm::process_madvise(&fd, &chosen, workloads::mm::MADV_PAGEOUT)
            .map_err(|e| format!("process_madvise on pid {}: {e}", self.pid))?;
        Ok(taken)
    }
}

fn probe_ms(cmd: &str) -> Option<f64> {
    let t0 = Instant::now();
    let st = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    st.success().then(|| t0.elapsed().as_secs_f64() * 1e3)
}

fn alive(p: &mut Probe, t: &Target) -> bool {
    match t {
        Target::Pid { pid, .. } => p.pid_status(*pid).ok().flatten().is_some_and(|s| s.vm_rss.is_some()),
        Target::Cgroup { dir, .. } => dir.exists(),
    }
}

pub fn run(
    cfg: &ServiceConfig,
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
) -> Result<RightsizeResult, ExperimentError> {
    // Where reclaimed anonymous pages go: a store made for the run, or the
    // swap there (below); what the run reads of the machine, its probe.
    let mut sb = Sandbox::new("rightsize");
    let mut p = sb.probe();
    validate(cfg, &mut p)?;
    let target = match (cfg.pid, &cfg.cgroup) {
        (Some(pid), _) => {
            let cg_pressure = p.memory_cgroup_of(Some(pid)).ok().flatten().and_then(|cg| {
                (cg.version == CgroupVersion::V2).then(|| cg.dir.join("memory.pressure")).filter(|f| f.exists())
            });
            Target::Pid { pid, cg_pressure }
        }
        (None, Some(dir)) => Target::Cgroup { dir: dir.clone(), version: cgroup_version_of(dir)?.0 },
        _ => unreachable!("validated"),
    };
    let (name, method, psi_scope) = match &target {
        Target::Pid { pid, cg_pressure } => (
            format!("pid {pid} ({})", p.pid_comm(*pid).unwrap_or_default()),
            "process_madvise",
            if cg_pressure.is_some() { crate::rightsize::results::PsiScope::Cgroup } else { crate::rightsize::results::PsiScope::Machine },
        ),
        Target::Cgroup { dir, .. } => (dir.display().to_string(), "memory.reclaim", crate::rightsize::results::PsiScope::Cgroup),
    };
    let start_bytes = footprint(&mut p, &target).ok_or_else(|| err(format!("{name}: cannot read its memory")))?;
    let mut res = RightsizeResult {
        mode: crate::rightsize::results::Mode::Service,
        target_slowdown: cfg.probe_slowdown,
        psi_scope: Some(psi_scope),
        cgroup_version: p.memory_controller().ok().flatten().map(|(v, _)| v),
        ..Default::default()
    };
    let b = backing::setup(&mut sb, cfg.backing, cfg.compressor.as_deref(), start_bytes + 16 * MIB, &cfg.swapfile_dir)?;
    for n in &b.notes {
        obs.note(n);
        res.notes.push(n.clone());
    }
    res.backing = Some(b.kind);
    res.compressor = b.compressor.clone();
    if let Target::Pid { pid, .. } = &target {
        obs.targets(vec![*pid], None, b.zram_id.into_iter().collect());
    }
    let probe_baseline = match &cfg.probe {
        Some(c) => {
            let v: Vec<f64> = (0..5).filter_map(|_| probe_ms(c)).collect();
            if v.len() < 5 {
                return Err(err(format!("--probe '{c}' failed before any reclaim; give a command that succeeds")));
            }
            record::stats::median(&v)
        }
        None => None,
    };
    let mut svc = Service {
        target: name.clone(),
        method: method.into(),
        psi_threshold_pct: cfg.psi * 100.0,
        interval_s: cfg.interval.as_secs_f64(),
        start_bytes,
        probe_baseline_ms: probe_baseline,
        ..Default::default()
    };
    let mut pager = match &target {
        Target::Pid { pid, .. } => Some(Pager {
            pid: *pid,
            page: workloads::mm::page_size() as u64,
            out: HashMap::new(),
            hot: HashMap::new(),
            cursor: 0,
        }),
        Target::Cgroup { .. } => None,
    };
    let ended = follow(cfg, &mut p, &target, &name, pager.as_mut(), &mut svc, obs, stop)?;
    svc.ended = ended;
    svc.major_faults = svc.timeline.iter().map(|p| p.major_faults).sum();
    // A group's OOM kills must be read for the answer to be verified; a
    // process that was killed ended the run as an exit.
    let oom_known = match &target {
        Target::Cgroup { dir, version } => match probe::cgroup::read_oom_kills(dir, *version) {
            Some(n) => {
                svc.oom_kills = Some(n);
                true
            }
            None => {
                let msg = format!("{name}: its OOM kills could not be read; the answer is not verified");
                obs.note(&msg);
                res.notes.push(msg);
                false
            }
        },
        Target::Pid { .. } => true,
    };
    settle(&mut svc, &mut res, obs, cfg.psi);
    if !oom_known && let Some(r) = res.recommendation.as_mut() {
        r.verified = false;
    }
    res.service = Some(svc);
    drop(sb);
    Ok(res)
}

/// Follows the service: every interval, reads its pressure, faults and
/// footprint (and the probe), and reclaims in proportion to how far under the
/// threshold the pressure is. Returns why it ended.
#[allow(clippy::too_many_arguments)]
fn follow(
    cfg: &ServiceConfig,
    p: &mut Probe,
    target: &Target,
    name: &str,
    mut pager: Option<&mut Pager>,
    svc: &mut Service,
    obs: &mut dyn Observer<Entry = RightsizeResult>,
    stop: &dyn Fn() -> bool,
) -> Result<String, ExperimentError> {
    let t0 = Instant::now();
    // Pressure is what the reclaim follows: without it there is nothing to follow.
    let (mut psi0, mut mf0, _) = reading(p, target).ok_or_else(|| {
        err(format!(
            "{name}: its memory pressure (PSI), major faults or footprint cannot be read; \
             the service mode reclaims only while they are known (PSI needs Linux 4.20 with psi=1)"
        ))
    })?;
    let mut last = Instant::now();
    let mut read_at = last;
    let mut reclaim = 0u64;
    let (mut unread, mut step_no) = (0u32, 0u64);
    Ok(loop {
        // Sleep one interval, watching for a stop and the target's exit.
        let until = last + cfg.interval;
        while Instant::now() < until {
            if stop() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())));
        }
        if stop() {
            break "interrupted".to_string();
        }
        if !alive(p, target) {
            break format!("{name} exited");
        }
        last = Instant::now();
        let Some((psi1, mf1, fp)) = reading(p, target) else {
            // A reading that failed is not a calm one: hold (reclaim nothing
            // more), and keep no point; the run still ends at --duration.
            unread += 1;
            say::errln!("pagelab: {name}: this interval's readings failed; holding");
            if unread == 1 {
                obs.note(&format!("{name}: a reading failed; pagelab held (reclaimed nothing) until one succeeded"));
            }
            if t0.elapsed() >= cfg.duration {
                break "duration".to_string();
            }
            continue;
        };
        // Since the last reading that succeeded.
        let dt = read_at.elapsed().as_secs_f64();
        read_at = Instant::now();
        let psi = psi1.saturating_sub(psi0) as f64 / 1e6 / dt.max(1e-3);
        let faults = mf1.saturating_sub(mf0);
        (psi0, mf0) = (psi1, mf1);
        let probe = cfg.probe.as_deref().map(probe_ms);
        let probe_ok = match (probe, svc.probe_baseline_ms) {
            (Some(Some(ms)), Some(b)) => ms <= b * (1.0 + cfg.probe_slowdown),
            (Some(None), _) => false,
            _ => true,
        };
        let mut point = ServicePoint {
            t_s: t0.elapsed().as_secs_f64(),
            footprint_bytes: fp,
            psi_some_pct: psi * 100.0,
            major_faults: faults,
            probe_ms: probe.flatten(),
            reclaim_bytes: reclaim,
            ..Default::default()
        };
        if t0.elapsed() >= cfg.duration {
            point.action = "end".into();
            push_point(&mut svc.timeline, point);
            break "duration".to_string();
        }
        // senpai's rule: reclaim in proportion to how far under the threshold
        // the pressure is; hold at or above it.
        reclaim = if psi < cfg.psi && probe_ok {
            ((fp as f64 * cfg.step * (1.0 - psi / cfg.psi)) as u64).max(MIB)
        } else {
            0
        };
        step_no += 1;
        point.action = if reclaim > 0 { "reclaim" } else { "hold" }.into();
        if reclaim > 0 {
            let Some(asked) = reclaim_step(p, target, pager.as_deref_mut(), reclaim, step_no)? else {
                // The target exited after the check above (a probe can take
                // seconds): the run ends as an exit does, its timeline kept
                // (issue 46 item 9: it ended "the process is gone", exit 1,
                // and no results).
                push_point(&mut svc.timeline, point);
                break format!("{name} exited");
            };
            svc.reclaimed_bytes += asked;
            reclaim = asked;
            if asked == 0 {
                // Every resident page came back after its last pageout: nothing cold is left.
                point.action = "nothing_cold".into();
            }
        }
        say::errln!(
            "pagelab: {:>5.0} s of {:.0}  footprint {:>6} MiB  psi some {:>6.3} %  major faults {:>6}  {}",
            point.t_s,
            cfg.duration.as_secs_f64(),
            fp / MIB,
            psi * 100.0,
            faults,
            if reclaim > 0 { format!("reclaim {} MiB", reclaim.div_ceil(MIB)) } else { point.action.replace('_', " ") }
        );
        obs.event(
            "step",
            &point.action,
            probe::sample::monotonic_ns(),
            serde_json::to_value(&point).unwrap_or_default(),
        );
        push_point(&mut svc.timeline, point);
    })
}

/// The most readings a timeline keeps: past that, adjacent readings are
/// merged in pairs (a week at one a second would be 600 000 readings, a
/// 60 MiB run.json and a chart of as many points).
pub const TIMELINE_MAX: usize = 20_000;

/// Appends a reading, merging adjacent pairs when the timeline is full: the
/// later time and action, the larger footprint and probe latency, the
/// reclaim and faults summed, the mean pressure.
fn push_point(timeline: &mut Vec<ServicePoint>, point: ServicePoint) {
    timeline.push(point);
    if timeline.len() < TIMELINE_MAX {
        return;
    }
    let old = std::mem::take(timeline);
    for w in old.chunks(2) {
        let mut p = w[w.len() - 1].clone();
        if let [a, b] = w {
            p.footprint_bytes = a.footprint_bytes.max(b.footprint_bytes);
            p.reclaim_bytes = a.reclaim_bytes + b.reclaim_bytes;
            p.major_faults = a.major_faults + b.major_faults;
            p.psi_some_pct = (a.psi_some_pct + b.psi_some_pct) / 2.0;
            p.probe_ms = match (a.probe_ms, b.probe_ms) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
        }
        timeline.push(p);
    }
}

/// One reclaim of `bytes` from the target: by pageout of its coldest pages
/// (`pager`, a process) or through its group's memory.reclaim. The bytes
/// asked of the kernel, or None when the process exited meanwhile.
fn reclaim_step(
    p: &mut Probe,
    target: &Target,
    pager: Option<&mut Pager>,
    bytes: u64,
    step_no: u64,
) -> Result<Option<u64>, ExperimentError> {
    Ok(Some(match (target, pager) {
        (_, Some(pg)) => match pg.step(p, bytes, step_no) {
            Ok(n) => n,
            Err(_) if !alive(p, target) => return Ok(None),
            Err(e) => return Err(ExperimentError::Worker(e)),
        },
        (Target::Cgroup { dir, .. }, None) => {
            match sandbox::cgroup::reclaim_once(dir, bytes) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) => {
                    return Err(ExperimentError::Worker(format!("{}: memory.reclaim: {e}", dir.display())));
                }
            }
            bytes
        }
        _ => 0,
    }))
}

/// Where the footprint settled: the last third's median footprint and
/// pressure, a note if it was still falling, and the recommendation.
fn settle(svc: &mut Service, res: &mut RightsizeResult, obs: &mut dyn Observer<Entry = RightsizeResult>, psi: f64) {
    let tail = &svc.timeline[svc.timeline.len() * 2 / 3..];
    let mut fps: Vec<u64> = tail.iter().map(|p| p.footprint_bytes).collect();
    svc.settled_bytes = record::stats::percentile_u64(&mut fps, 0.5);
    let psis: Vec<f64> = tail.iter().map(|p| p.psi_some_pct).collect();
    svc.settled_psi_some_pct = record::stats::median(&psis).unwrap_or(f64::NAN);
    let most = fps.iter().copied().max();
    if let (Some(first), Some(last)) = (tail.first(), tail.last())
        && last.footprint_bytes < first.footprint_bytes - first.footprint_bytes / 10
    {
        let msg = format!(
            "the footprint was still falling in the last third ({} → {} MiB): it has not settled; give a longer --duration",
            first.footprint_bytes / MIB,
            last.footprint_bytes / MIB
        );
        obs.note(&msg);
        res.notes.push(msg);
    }
    if let (Some(most), Some(settled)) = (most, svc.settled_bytes)
        && svc.timeline.len() >= 6
    {
        res.recommendation = Some(recommend(svc, most, settled, psi));
    } else {
        res.unverified_reason = Some(format!(
            "{} readings: too few to say where the footprint settles; give a longer --duration",
            svc.timeline.len()
        ));
    }
}

fn recommend(s: &Service, most: u64, settled: u64, psi: f64) -> Recommendation {
    // The largest footprint of the settled third, with a tenth more room.
    let limit = (most + most / 10).div_ceil(MIB) * MIB;
    let l = limit / MIB;
    let held = s.settled_psi_some_pct <= psi * 100.0;
    Recommendation {
        limit_bytes: limit,
        verified: held && s.oom_kills.is_none_or(|n| n == 0),
        lines: vec![
            format!("systemd:    MemoryHigh={l}M"),
            format!("docker run: --memory {l}m"),
            format!("kubernetes: resources: {{requests: {{memory: {l}Mi}}}}"),
        ],
        summary: format!(
            "{} settled at {} MiB (from {} MiB) with memory pressure at {:.3} % (threshold {:.3} %); \
             {} MiB is that footprint with a tenth more room. Its cold pages now sit in swap: they come back \
             when it touches them.",
            s.target,
            settled / MIB,
            s.start_bytes / MIB,
            s.settled_psi_some_pct,
            psi * 100.0,
            l
        ),
        ..Default::default()
    }
}

#[cfg(test)]
mod timeline_tests {
    use super::*;

    /// A group whose pressure, faults or footprint cannot be read gives no
    /// reading (the service holds), not a calm one of zeros; one that can
    /// gives all three.
    #[test]
    fn a_reading_that_fails_is_none_not_zero() {
        let d = tempfile::tempdir().unwrap();
        let t = Target::Cgroup { dir: d.path().to_path_buf(), version: CgroupVersion::V2 };
        assert_eq!(reading(&mut Probe::default(), &t), None);
        std::fs::write(d.path().join("memory.current"), "4096\n").unwrap();
        std::fs::write(d.path().join("memory.stat"), "anon 4096\npgmajfault 7\n").unwrap();
        assert_eq!(reading(&mut Probe::default(), &t), None, "no memory.pressure");
        std::fs::write(
            d.path().join("memory.pressure"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
        )
        .unwrap();
        assert_eq!(reading(&mut Probe::default(), &t), Some((1234, 7, 4096)));
        std::fs::write(d.path().join("memory.stat"), "anon 4096\n").unwrap();
        assert_eq!(reading(&mut Probe::default(), &t), None, "no pgmajfault line");
    }

    /// A week of readings keeps at most TIMELINE_MAX of them, with the
    /// totals (reclaim, faults) and the largest footprint intact.
    #[test]
    fn a_long_timeline_is_merged_and_keeps_its_totals() {
        let mut t = Vec::new();
        let n = 3 * TIMELINE_MAX + 7;
        for i in 0..n {
            let p = ServicePoint {
                t_s: i as f64,
                footprint_bytes: if i == 12_345 { 999 } else { 10 },
                reclaim_bytes: 1,
                major_faults: 2,
                psi_some_pct: 0.5,
                action: "hold".into(),
                ..Default::default()
            };
            push_point(&mut t, p);
        }
        assert!(t.len() < TIMELINE_MAX && t.len() >= TIMELINE_MAX / 4, "{}", t.len());
        assert_eq!(t.iter().map(|p| p.reclaim_bytes).sum::<u64>(), n as u64);
        assert_eq!(t.iter().map(|p| p.major_faults).sum::<u64>(), 2 * n as u64);
        assert_eq!(t.iter().map(|p| p.footprint_bytes).max(), Some(999));
        assert_eq!(t.last().unwrap().t_s, (n - 1) as f64);
        assert!(t.windows(2).all(|w| w[0].t_s < w[1].t_s));
    }
}
