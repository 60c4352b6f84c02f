//! The only place where raw counters become per-interval values.
//!
//! Everything here is a pure function of (previous sample, current sample): the
//! live monitor, `pagelab report` and every experiment's summary go through it, so
//! a rate means the same thing everywhere. A counter that went backwards (a device
//! reset, a pid reused, a wrapped value) yields `None`, never a huge number.
//!
//! Memory categories are disjoint byte counts that stack to MemTotal, the Linux
//! counterparts of the categories in the original Windows monitor:
//!
//! | category | from |
//! | --- | --- |
//! | target anon / file / shmem | target pids' RssAnon/RssFile/RssShmem, else the target cgroup's memory.stat |
//! | target swapped | target pids' VmSwap, else the cgroup's swap usage (not part of RAM) |
//! | compressed store | zram `mem_used_total` of sampled devices + meminfo `Zswap` |
//! | swap used | SwapTotal - SwapFree (not part of RAM) |
//! | page cache | Active(file) + Inactive(file) - Dirty - Writeback - target file |
//! | dirty + writeback | Dirty + Writeback |
//! | free | MemFree |
//! | other used | MemTotal minus all of the above that are RAM |

use probe::Sample;
use serde::{Deserialize, Serialize};

/// `cur - prev`, or `None` when the counter went backwards.
pub fn delta(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Per-second rate of a cumulative counter over `dt_s` seconds.
pub fn rate(prev: u64, cur: u64, dt_s: f64) -> Option<f64> {
    if dt_s <= 0.0 {
        return None;
    }
    delta(prev, cur).map(|d| d as f64 / dt_s)
}

fn opt_rate(prev: Option<u64>, cur: Option<u64>, dt_s: f64) -> Option<f64> {
    rate(prev?, cur?, dt_s)
}

/// CPU time shares over an interval, percent of all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

/// The RAM categories in stacking order: label and colour (sRGB), shared by the
/// SVG charts and the monitor's terminal view.
pub const RAM_CATEGORIES: [(&str, (u8, u8, u8)); 8] = [
    ("target anon", (214, 39, 40)),
    ("target file", (255, 127, 14)),
    ("target shmem", (227, 119, 194)),
    ("compressed store", (148, 103, 189)),
    ("dirty+writeback", (140, 86, 75)),
    ("page cache", (31, 119, 180)),
    ("other used", (127, 127, 127)),
    ("free", (44, 160, 44)),
];

/// Stacked memory categories, bytes (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Categories {
    pub target_anon: u64,
    pub target_file: u64,
    pub target_shmem: u64,
    /// Not RAM: the target's pages in swap.
    pub target_swapped: u64,
    pub compressed_store: u64,
    /// Not RAM: all swap in use.
    pub swap_used: u64,
    pub page_cache: u64,
    pub dirty_writeback: u64,
    pub free: u64,
    pub other_used: u64,
    pub mem_total: u64,
}

impl Categories {
    /// The RAM categories in stacking order (largest usually last), with their
    /// labels ([`RAM_CATEGORIES`]).
    pub fn ram_stack(&self) -> [(&'static str, u64); 8] {
        let v = [
            self.target_anon,
            self.target_file,
            self.target_shmem,
            self.compressed_store,
            self.dirty_writeback,
            self.page_cache,
            self.other_used,
            self.free,
        ];
        std::array::from_fn(|i| (RAM_CATEGORIES[i].0, v[i]))
    }
    pub fn target_rss(&self) -> u64 {
        self.target_anon + self.target_file + self.target_shmem
    }
}

/// Target RSS split and swap, from pids if any were sampled, else from the cgroup.
pub fn target_memory(s: &Sample) -> (u64, u64, u64, u64) {
    if !s.pids.is_empty() {
        let mut t = (0, 0, 0, 0);
        for p in s.pids.iter().filter_map(|p| p.status) {
            t.0 += p.rss_anon.unwrap_or(0);
            t.1 += p.rss_file.unwrap_or(0);
            t.2 += p.rss_shmem.unwrap_or(0);
            t.3 += p.vm_swap.unwrap_or(0);
        }
        return t;
    }
    if let Some(cg) = &s.cgroup {
        return (
            cg.anon_bytes().unwrap_or(0),
            cg.file_bytes().unwrap_or(0),
            cg.shmem_bytes().unwrap_or(0),
            cg.swap_bytes.unwrap_or(0),
        );
    }
    (0, 0, 0, 0)
}

/// Bytes held by the compressed store: zram devices sampled plus zswap.
pub fn compressed_store(s: &Sample) -> u64 {
    let zram: u64 = s.zram.iter().filter_map(|z| z.mm_stat).map(|m| m.mem_used_total).sum();
    let zswap = s.meminfo.as_ref().and_then(|m| m.get("Zswap")).or(s.zswap_pool_bytes).unwrap_or(0);
    zram + zswap
}

/// The memory categories of one sample.
pub fn categories(s: &Sample) -> Categories {
    let m = |k: &str| s.meminfo.as_ref().and_then(|m| m.get(k)).unwrap_or(0);
    let (anon, file, shmem, swapped) = target_memory(s);
    let mem_total = m("MemTotal");
    let free = m("MemFree");
    let dirty_writeback = m("Dirty") + m("Writeback");
    let file_lru = m("Active(file)") + m("Inactive(file)");
    let page_cache = file_lru.saturating_sub(dirty_writeback).saturating_sub(file);
    let compressed = compressed_store(s);
    let accounted = free + anon + file + shmem + page_cache + dirty_writeback + compressed;
    Categories {
        target_anon: anon,
        target_file: file,
        target_shmem: shmem,
        target_swapped: swapped,
        compressed_store: compressed,
        swap_used: m("SwapTotal").saturating_sub(m("SwapFree")),
        page_cache,
        dirty_writeback,
        free,
        other_used: mem_total.saturating_sub(accounted),
        mem_total,
    }
}

/// PSI stall share over an interval, percent of wall time (delta total µs / dt).
fn psi_pct(prev: Option<probe::pressure::PsiLine>, cur: Option<probe::pressure::PsiLine>, dt_s: f64) -> Option<f64> {
    Some(rate(prev?.total_us, cur?.total_us, dt_s)? / 1e4)
}

/// Everything derived for one interval (between two consecutive samples).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// End of the interval, seconds since the first sample of the run.
    pub t_s: f64,
    /// Interval length, seconds.
    pub dt_s: f64,
    pub cpu: Option<CpuPct>,
    /// System-wide page faults per second (vmstat pgfault).
    pub pgfault_per_s: Option<f64>,
    /// System-wide major faults per second (vmstat pgmajfault).
    pub pgmajfault_per_s: Option<f64>,
    /// Pages swapped in per second (vmstat pswpin).
    pub pswpin_per_s: Option<f64>,
    /// Pages swapped out per second (vmstat pswpout).
    pub pswpout_per_s: Option<f64>,
    /// KiB paged in per second (vmstat pgpgin).
    pub pgpgin_kib_per_s: Option<f64>,
    /// KiB paged out per second (vmstat pgpgout).
    pub pgpgout_kib_per_s: Option<f64>,
    /// Pages scanned / stolen by reclaim per second (all pgscan_* / pgsteal_*).
    pub pgscan_per_s: Option<f64>,
    pub pgsteal_per_s: Option<f64>,
    /// Refaults of recently evicted pages per second (workingset_refault_*).
    pub refault_per_s: Option<f64>,
    /// Direct reclaim entries per second (allocstall_*, or allocstall before
    /// Linux 4.10): tasks that had to
    /// reclaim before they could allocate.
    pub allocstall_per_s: Option<f64>,
    /// Share of wall time with some / all tasks stalled on memory, percent.
    pub psi_memory_some_pct: Option<f64>,
    pub psi_memory_full_pct: Option<f64>,
    pub psi_cpu_some_pct: Option<f64>,
    pub psi_io_some_pct: Option<f64>,
    pub psi_io_full_pct: Option<f64>,
    /// The target cgroup's memory stall share, percent (v2 only).
    pub cgroup_psi_memory_some_pct: Option<f64>,
    pub cgroup_psi_memory_full_pct: Option<f64>,
    /// Target pids' minor / major faults per second, summed.
    pub target_minflt_per_s: Option<f64>,
    pub target_majflt_per_s: Option<f64>,
    /// Target pids' CPU, percent of one CPU.
    pub target_cpu_pct: Option<f64>,
    /// The sampler's lateness for the current sample, milliseconds.
    pub sampler_lateness_ms: Option<f64>,
    pub mem: Categories,
}

/// Means, peaks and counter totals over a span of a run: the one place that
/// turns intervals and samples into whole-span figures. `report`'s summary uses
/// it over a whole run, thrash over its active window. Means are over the
/// intervals that have the figure (missing data is not zero).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub intervals: usize,
    /// CPU user (+ nice), system (+ irq + softirq) and iowait, percent.
    pub cpu_user_pct_mean: Option<f64>,
    pub cpu_system_pct_mean: Option<f64>,
    pub cpu_iowait_pct_mean: Option<f64>,
    pub psi_memory_some_pct_mean: Option<f64>,
    pub psi_memory_full_pct_mean: Option<f64>,
    pub psi_memory_full_pct_max: Option<f64>,
    pub cgroup_psi_memory_some_pct_mean: Option<f64>,
    pub pswpout_per_s_peak: Option<f64>,
    /// The sampler's lateness of each interval, milliseconds, in order.
    pub sampler_lateness_ms: Vec<f64>,
}

impl Totals {
    /// CPU user time's share of the busy time (user + system + iowait), 0 to 1.
    pub fn cpu_user_share(&self) -> Option<f64> {
        let (u, s, w) = (self.cpu_user_pct_mean?, self.cpu_system_pct_mean?, self.cpu_iowait_pct_mean?);
        let busy = u + s + w;
        (busy > 0.0).then(|| u / busy)
    }
}

/// [`Totals`] over these intervals.
pub fn totals<'a>(iv: impl IntoIterator<Item = &'a Interval>) -> Totals {
    let iv: Vec<&Interval> = iv.into_iter().collect();
    let mean =
        |f: &dyn Fn(&Interval) -> Option<f64>| crate::stats::mean(&iv.iter().filter_map(|i| f(i)).collect::<Vec<_>>());
    let max = |f: &dyn Fn(&Interval) -> Option<f64>| iv.iter().filter_map(|i| f(i)).reduce(f64::max);
    Totals {
        intervals: iv.len(),
        cpu_user_pct_mean: mean(&|i| i.cpu.map(|c| c.user + c.nice)),
        cpu_system_pct_mean: mean(&|i| i.cpu.map(|c| c.system + c.irq + c.softirq)),
        cpu_iowait_pct_mean: mean(&|i| i.cpu.map(|c| c.iowait)),
        psi_memory_some_pct_mean: mean(&|i| i.psi_memory_some_pct),
        psi_memory_full_pct_mean: mean(&|i| i.psi_memory_full_pct),
        psi_memory_full_pct_max: max(&|i| i.psi_memory_full_pct),
        cgroup_psi_memory_some_pct_mean: mean(&|i| i.cgroup_psi_memory_some_pct),
        pswpout_per_s_peak: max(&|i| i.pswpout_per_s),
        sampler_lateness_ms: iv.iter().filter_map(|i| i.sampler_lateness_ms).collect(),
    }
}

/// How much a vmstat counter grew from `first` to `last` (0 where either lacks it).
pub fn vmstat_delta(first: &Sample, last: &Sample, key: &str) -> u64 {
    let get = |s: &Sample| s.vmstat.as_ref().and_then(|v| v.get(key));
    match (get(first), get(last)) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    }
}

/// Clock ticks per second for /proc/<pid>/stat and /proc/stat.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as f64 } else { 100.0 }
}

fn cpu_pct(prev: &probe::stat::CpuTimes, cur: &probe::stat::CpuTimes) -> Option<CpuPct> {
    let total = delta(prev.total(), cur.total())? as f64;
    if total == 0.0 {
        return None;
    }
    let p = |a: u64, b: u64| delta(a, b).map(|d| d as f64 * 100.0 / total);
    Some(CpuPct {
        user: p(prev.user, cur.user)?,
        nice: p(prev.nice, cur.nice)?,
        system: p(prev.system, cur.system)?,
        idle: p(prev.idle, cur.idle)?,
        iowait: p(prev.iowait, cur.iowait)?,
        irq: p(prev.irq, cur.irq)?,
        softirq: p(prev.softirq, cur.softirq)?,
        steal: p(prev.steal, cur.steal)?,
    })
}

/// Sum of a per-pid counter over the pids present in both samples.
fn pid_sum_delta(prev: &Sample, cur: &Sample, f: impl Fn(&probe::pid::PidStat) -> u64) -> Option<u64> {
    let mut any = false;
    let mut sum = 0u64;
    for c in &cur.pids {
        let Some(cs) = c.stat else { continue };
        let Some(ps) = prev.pids.iter().find(|p| p.pid == c.pid).and_then(|p| p.stat) else {
            continue;
        };
        // A different start time means the pid was reused: not the same process.
        if ps.starttime != cs.starttime {
            continue;
        }
        sum += delta(f(&ps), f(&cs))?;
        any = true;
    }
    any.then_some(sum)
}

/// The target's CPU %, or None when it is impossible: more CPU time than the
/// whole machine had in the interval (its CPUs × the interval; /proc/stat's
/// total when the samples have it) — counters that jumped, a crafted file.
fn target_cpu_pct(prev: &Sample, cur: &Sample, ticks: f64, dt_s: f64) -> Option<f64> {
    if dt_s <= 0.0 {
        return None;
    }
    let d = pid_sum_delta(prev, cur, |p| p.utime + p.stime)?;
    let machine = match (&prev.stat, &cur.stat) {
        (Some(a), Some(b)) => {
            let cpus = b.cpus.len().max(1) as f64;
            // The machine's ticks in the interval, by its clock and by /proc/stat.
            delta(a.total.total(), b.total.total()).map_or(cpus * ticks * dt_s, |t| (t as f64).max(cpus * ticks * dt_s))
        }
        _ => f64::INFINITY,
    };
    // One tick of slack for the sampling edges.
    (d as f64 <= machine + ticks).then(|| d as f64 / ticks / dt_s * 100.0)
}

/// Derives one interval. `t0_ns` is the first sample's timestamp.
pub fn interval(prev: &Sample, cur: &Sample, t0_ns: u64) -> Interval {
    let dt_s = cur.t_ns.saturating_sub(prev.t_ns) as f64 / 1e9;
    let vm = |s: &Sample, k: &str| s.vmstat.as_ref().and_then(|v| v.get(k));
    let vm_rate = |k: &str| opt_rate(vm(prev, k), vm(cur, k), dt_s);
    let vm_prefix_rate = |p: &str| {
        let a = prev.vmstat.as_ref()?.sum_prefix_opt(p)?;
        let b = cur.vmstat.as_ref()?.sum_prefix_opt(p)?;
        rate(a, b, dt_s)
    };
    let psi = |f: fn(&Sample) -> Option<probe::pressure::PsiLine>| psi_pct(f(prev), f(cur), dt_s);
    let ticks = clock_ticks();
    Interval {
        t_s: cur.t_ns.saturating_sub(t0_ns) as f64 / 1e9,
        dt_s,
        cpu: match (&prev.stat, &cur.stat) {
            (Some(a), Some(b)) => cpu_pct(&a.total, &b.total),
            _ => None,
        },
        pgfault_per_s: vm_rate("pgfault"),
        pgmajfault_per_s: vm_rate("pgmajfault"),
        pswpin_per_s: vm_rate("pswpin"),
        pswpout_per_s: vm_rate("pswpout"),
        pgpgin_kib_per_s: vm_rate("pgpgin"),
        pgpgout_kib_per_s: vm_rate("pgpgout"),
        pgscan_per_s: vm_prefix_rate("pgscan_"),
        pgsteal_per_s: vm_prefix_rate("pgsteal_"),
        refault_per_s: vm_prefix_rate("workingset_refault"),
        // allocstall_<zone> since Linux 4.10, allocstall before.
        allocstall_per_s: vm_prefix_rate("allocstall"),
        psi_memory_some_pct: psi(|s| s.psi.memory.map(|p| p.some)),
        psi_memory_full_pct: psi(|s| s.psi.memory.and_then(|p| p.full)),
        psi_cpu_some_pct: psi(|s| s.psi.cpu.map(|p| p.some)),
        psi_io_some_pct: psi(|s| s.psi.io.map(|p| p.some)),
        psi_io_full_pct: psi(|s| s.psi.io.and_then(|p| p.full)),
        cgroup_psi_memory_some_pct: psi(|s| s.cgroup.as_ref()?.pressure.map(|p| p.some)),
        cgroup_psi_memory_full_pct: psi(|s| s.cgroup.as_ref()?.pressure.and_then(|p| p.full)),
        target_minflt_per_s: pid_sum_delta(prev, cur, |p| p.minflt).map(|d| d as f64 / dt_s),
        target_majflt_per_s: pid_sum_delta(prev, cur, |p| p.majflt).map(|d| d as f64 / dt_s),
        target_cpu_pct: target_cpu_pct(prev, cur, ticks, dt_s),
        sampler_lateness_ms: cur.lateness_ns.map(|n| n as f64 / 1e6),
        mem: categories(cur),
    }
}

/// Derives all intervals of a series of samples (n samples give n-1 intervals).
pub fn intervals(samples: &[Sample]) -> Vec<Interval> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    samples.windows(2).map(|w| interval(&w[0], &w[1], first.t_ns)).collect()
}

#[cfg(test)]
mod hostile_tests {
    use super::*;
    use probe::pid::PidStat;
    use probe::sample::PidSample;
    use probe::stat::{CpuTimes, Stat};

    /// A sample at `t_s` with the machine's idle ticks and one target's CPU ticks.
    fn at(t_s: u64, machine_ticks: u64, target_ticks: u64) -> Sample {
        Sample {
            t_ns: t_s * 1_000_000_000,
            stat: Some(Stat {
                total: CpuTimes { idle: machine_ticks, ..Default::default() },
                cpus: vec![CpuTimes::default(); 2],
                ..Default::default()
            }),
            pids: vec![PidSample {
                pid: 42,
                stat: Some(PidStat { utime: target_ticks, starttime: 7, ..Default::default() }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_targets_cpu_above_the_machines_is_no_figure() {
        let t = clock_ticks() as u64;
        // Two CPUs, one second per interval: the machine has 2 × t ticks.
        let s = [at(0, 0, 0), at(1, 2 * t, t), at(2, 4 * t, t / 2), at(3, 6 * t, 4 * t)];
        let iv = intervals(&s);
        assert_eq!(iv.len(), 3);
        assert!((iv[0].target_cpu_pct.unwrap() - 100.0).abs() < 1.0, "{:?}", iv[0].target_cpu_pct);
        assert_eq!(iv[1].target_cpu_pct, None, "the counter went backwards");
        // From t/2 to 4t in a second on two CPUs: 350 %, impossible.
        assert_eq!(iv[2].target_cpu_pct, None, "{:?}", iv[2].target_cpu_pct);
    }
}
