//! Cold memory by window: the referenced bits (clear_refs, smaps) and a
//! DAMON context of pagelab's own, and the sources that can be had.

use super::*;

/// Clears the accessed bits of every page of the process (`clear_refs` 1).
pub(super) fn clear_refs(p: &Probe, pid: i32) -> Result<(), ExperimentError> {
    sandbox::mm::clear_refs(&p.roots().proc, pid).map_err(|e| {
        err(format!(
            "cannot clear pid {pid}'s referenced bits (/proc/{pid}/clear_refs: {e}); assess needs to own the process or be root"
        ))
    })
}

/// Resident and referenced bytes by kind; referenced is split in each mapping
/// in proportion to its kinds' resident bytes.
pub(super) fn window_of(seconds: f64, maps: &[SmapsEntry]) -> Window {
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
pub(super) fn window(seconds: f64, resident: Kinds, referenced: Kinds) -> Window {
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
pub(super) fn sources(cfg: &AssessConfig, p: &mut Probe) -> Vec<Source> {
    let root = sandbox::privilege::is_root();
    let idle = p.page_idle_present();
    let damon_why = damon_unavailable(p);
    let mglru_why = mglru_unavailable(cfg, p);
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

pub(super) fn slot(k: &mut Kinds, kind: MemKind) -> &mut u64 {
    match kind {
        MemKind::Anon => &mut k.anon,
        MemKind::File => &mut k.file,
        MemKind::Shmem => &mut k.shmem,
    }
}

/// DAMON's regions as an idle time per address.
pub(super) struct Idle<'a> {
    pub(super) regions: &'a [sandbox::damon::Region],
    pub(super) aggr_s: f64,
}

impl Idle<'_> {
    /// How long the region holding `addr` has gone without an access seen:
    /// (age + 1) aggregation intervals when its count is 0, else 0. Addresses
    /// DAMON does not watch count as touched (never called cold on no evidence).
    pub(super) fn at(&self, addr: usize) -> f64 {
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
pub(super) fn damon_pace(
    before: &[sandbox::damon::Region],
    after: &[sandbox::damon::Region],
    dt_s: f64,
    aggr_s: f64,
) -> f64 {
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
pub(super) fn damon_windows(
    probe: &mut Probe,
    pid: i32,
    windows: &[f64],
    maps: &[SmapsEntry],
    idle: &Idle,
) -> Result<Vec<Window>, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let mut res = Kinds::default();
    let mut cold = vec![Kinds::default(); windows.len()];
    for m in maps.iter().filter(|m| m.rss > 0 && m.map.name != "[vsyscall]") {
        let entries = match probe.pid_pagemap(pid, m.map.start, m.map.len() / page, page) {
            Ok(e) => e,
            Err(e) if !alive(probe, pid) => return Err(ExperimentError::Worker(format!("pid {pid} exited ({e})"))),
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
