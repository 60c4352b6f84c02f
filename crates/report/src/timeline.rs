//! `timeline.csv`: one row per sampling interval.
//!
//! Columns, in order (units in the names):
//!
//! | column | meaning |
//! | --- | --- |
//! | t_s | end of the interval, seconds since the first sample |
//! | dt_s | interval length, seconds |
//! | phase | the workload phase running at the end of the interval, if any |
//! | target_anon_bytes, target_file_bytes, target_shmem_bytes | target RSS split |
//! | target_swapped_bytes | target's pages in swap |
//! | compressed_store_bytes | zram mem_used_total + zswap pool |
//! | swap_used_bytes | SwapTotal - SwapFree |
//! | page_cache_bytes | clean file LRU pages not of the target |
//! | dirty_writeback_bytes | Dirty + Writeback |
//! | free_bytes | MemFree |
//! | other_used_bytes | the rest of MemTotal |
//! | cpu_user_pct ... cpu_steal_pct | share of all CPU time, percent |
//! | pgfault_per_s, pgmajfault_per_s | system-wide faults per second |
//! | pswpin_per_s, pswpout_per_s | pages swapped in / out per second |
//! | pgpgin_kib_per_s, pgpgout_kib_per_s | KiB paged in / out per second |
//! | pgscan_per_s, pgsteal_per_s, refault_per_s | reclaim activity, pages per second |
//! | psi_memory_some_pct, psi_memory_full_pct, psi_cpu_some_pct, psi_io_some_pct, psi_io_full_pct | stall share of wall time over the interval, percent |
//! | cgroup_psi_memory_some_pct, cgroup_psi_memory_full_pct | the same for the target cgroup (v2) |
//! | target_minflt_per_s, target_majflt_per_s, target_cpu_pct | target pids' faults per second and CPU (percent of one CPU) |
//! | sampler_lateness_ms | how late the sampler woke for the sample |
//!
//! Empty cells mean "not available" (no PSI, a counter that went backwards, ...).

use record::derive::Interval;
use record::rundir::{Phase, RunRecord};
use std::fmt::Write as _;

pub const COLUMNS: &[&str] = &[
    "t_s",
    "dt_s",
    "phase",
    "target_anon_bytes",
    "target_file_bytes",
    "target_shmem_bytes",
    "target_swapped_bytes",
    "compressed_store_bytes",
    "swap_used_bytes",
    "page_cache_bytes",
    "dirty_writeback_bytes",
    "free_bytes",
    "other_used_bytes",
    "cpu_user_pct",
    "cpu_nice_pct",
    "cpu_system_pct",
    "cpu_idle_pct",
    "cpu_iowait_pct",
    "cpu_irq_pct",
    "cpu_softirq_pct",
    "cpu_steal_pct",
    "pgfault_per_s",
    "pgmajfault_per_s",
    "pswpin_per_s",
    "pswpout_per_s",
    "pgpgin_kib_per_s",
    "pgpgout_kib_per_s",
    "pgscan_per_s",
    "pgsteal_per_s",
    "refault_per_s",
    "psi_memory_some_pct",
    "psi_memory_full_pct",
    "psi_cpu_some_pct",
    "psi_io_some_pct",
    "psi_io_full_pct",
    "cgroup_psi_memory_some_pct",
    "cgroup_psi_memory_full_pct",
    "target_minflt_per_s",
    "target_majflt_per_s",
    "target_cpu_pct",
    "sampler_lateness_ms",
];

fn f(out: &mut String, v: Option<f64>) {
    out.push(',');
    if let Some(v) = v.filter(|v| v.is_finite()) {
        let _ = write!(out, "{}", (v * 1000.0).round() / 1000.0);
    }
}

fn u(out: &mut String, v: u64) {
    let _ = write!(out, ",{v}");
}

/// The phase running at monotonic time `t_ns`, if any.
pub fn phase_at(phases: &[Phase], t_ns: u64) -> Option<&str> {
    phases.iter().rev().find(|p| p.start_ns <= t_ns && p.end_ns.is_none_or(|e| t_ns <= e)).map(|p| p.name.as_str())
}

/// Renders the CSV text for a run.
pub fn csv(rec: &RunRecord, intervals: &[Interval]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    let t0 = rec.samples.first().map(|s| s.t_ns).unwrap_or(0);
    for i in intervals {
        let t_ns = t0 + (i.t_s * 1e9) as u64;
        let _ = write!(out, "{},{}", (i.t_s * 1000.0).round() / 1000.0, (i.dt_s * 1e6).round() / 1e6);
        out.push(',');
        if let Some(p) = phase_at(&rec.run.phases, t_ns) {
            out.push_str(&p.replace([',', '"', '\n'], " "));
        }
        let m = &i.mem;
        for v in [
            m.target_anon,
            m.target_file,
            m.target_shmem,
            m.target_swapped,
            m.compressed_store,
            m.swap_used,
            m.page_cache,
            m.dirty_writeback,
            m.free,
            m.other_used,
        ] {
            u(&mut out, v);
        }
        let c = i.cpu;
        for v in [
            c.map(|c| c.user),
            c.map(|c| c.nice),
            c.map(|c| c.system),
            c.map(|c| c.idle),
            c.map(|c| c.iowait),
            c.map(|c| c.irq),
            c.map(|c| c.softirq),
            c.map(|c| c.steal),
            i.pgfault_per_s,
            i.pgmajfault_per_s,
            i.pswpin_per_s,
            i.pswpout_per_s,
            i.pgpgin_kib_per_s,
            i.pgpgout_kib_per_s,
            i.pgscan_per_s,
            i.pgsteal_per_s,
            i.refault_per_s,
            i.psi_memory_some_pct,
            i.psi_memory_full_pct,
            i.psi_cpu_some_pct,
            i.psi_io_some_pct,
            i.psi_io_full_pct,
            i.cgroup_psi_memory_some_pct,
            i.cgroup_psi_memory_full_pct,
            i.target_minflt_per_s,
            i.target_majflt_per_s,
            i.target_cpu_pct,
            i.sampler_lateness_ms,
        ] {
            f(&mut out, v);
        }
        out.push('\n');
    }
    out
}
