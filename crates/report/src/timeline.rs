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
//! | allocstall_per_s | direct reclaim entries per second |
//! | psi_memory_some_pct, psi_memory_full_pct, psi_cpu_some_pct, psi_io_some_pct, psi_io_full_pct | stall share of wall time over the interval, percent |
//! | cgroup_psi_memory_some_pct, cgroup_psi_memory_full_pct | the same for the target cgroup (v2) |
//! | target_minflt_per_s, target_majflt_per_s, target_cpu_pct | target pids' faults per second and CPU (percent of one CPU) |
//! | sampler_lateness_ms | how late the sampler woke for the sample |
//!
//! Empty cells mean "not available" (no PSI, a counter that went backwards, ...).

use record::derive::Interval;
use record::rundir::{Phase, RunRecord};
use std::fmt::Write as _;

/// A column after `t_s`, `dt_s` and `phase`: its name and its value.
enum Value {
    Bytes(fn(&Interval) -> u64),
    Figure(fn(&Interval) -> Option<f64>),
}

/// The columns after `t_s`, `dt_s` and `phase`, each with its value: one
/// list, so a column cannot lose or swap its value (issue 60 item 4).
const VALUES: &[(&str, Value)] = &[
    ("target_anon_bytes", Value::Bytes(|i| i.mem.target_anon)),
    ("target_file_bytes", Value::Bytes(|i| i.mem.target_file)),
    ("target_shmem_bytes", Value::Bytes(|i| i.mem.target_shmem)),
    ("target_swapped_bytes", Value::Bytes(|i| i.mem.target_swapped)),
    ("compressed_store_bytes", Value::Bytes(|i| i.mem.compressed_store)),
    ("swap_used_bytes", Value::Bytes(|i| i.mem.swap_used)),
    ("page_cache_bytes", Value::Bytes(|i| i.mem.page_cache)),
    ("dirty_writeback_bytes", Value::Bytes(|i| i.mem.dirty_writeback)),
    ("free_bytes", Value::Bytes(|i| i.mem.free)),
    ("other_used_bytes", Value::Bytes(|i| i.mem.other_used)),
    ("cpu_user_pct", Value::Figure(|i| i.cpu.map(|c| c.user))),
    ("cpu_nice_pct", Value::Figure(|i| i.cpu.map(|c| c.nice))),
    ("cpu_system_pct", Value::Figure(|i| i.cpu.map(|c| c.system))),
    ("cpu_idle_pct", Value::Figure(|i| i.cpu.map(|c| c.idle))),
    ("cpu_iowait_pct", Value::Figure(|i| i.cpu.map(|c| c.iowait))),
    ("cpu_irq_pct", Value::Figure(|i| i.cpu.map(|c| c.irq))),
    ("cpu_softirq_pct", Value::Figure(|i| i.cpu.map(|c| c.softirq))),
    ("cpu_steal_pct", Value::Figure(|i| i.cpu.map(|c| c.steal))),
    ("pgfault_per_s", Value::Figure(|i| i.pgfault_per_s)),
    ("pgmajfault_per_s", Value::Figure(|i| i.pgmajfault_per_s)),
    ("pswpin_per_s", Value::Figure(|i| i.pswpin_per_s)),
    ("pswpout_per_s", Value::Figure(|i| i.pswpout_per_s)),
    ("pgpgin_kib_per_s", Value::Figure(|i| i.pgpgin_kib_per_s)),
    ("pgpgout_kib_per_s", Value::Figure(|i| i.pgpgout_kib_per_s)),
    ("pgscan_per_s", Value::Figure(|i| i.pgscan_per_s)),
    ("pgsteal_per_s", Value::Figure(|i| i.pgsteal_per_s)),
    ("refault_per_s", Value::Figure(|i| i.refault_per_s)),
    ("allocstall_per_s", Value::Figure(|i| i.allocstall_per_s)),
    ("psi_memory_some_pct", Value::Figure(|i| i.psi_memory_some_pct)),
    ("psi_memory_full_pct", Value::Figure(|i| i.psi_memory_full_pct)),
    ("psi_cpu_some_pct", Value::Figure(|i| i.psi_cpu_some_pct)),
    ("psi_io_some_pct", Value::Figure(|i| i.psi_io_some_pct)),
    ("psi_io_full_pct", Value::Figure(|i| i.psi_io_full_pct)),
    ("cgroup_psi_memory_some_pct", Value::Figure(|i| i.cgroup_psi_memory_some_pct)),
    ("cgroup_psi_memory_full_pct", Value::Figure(|i| i.cgroup_psi_memory_full_pct)),
    ("target_minflt_per_s", Value::Figure(|i| i.target_minflt_per_s)),
    ("target_majflt_per_s", Value::Figure(|i| i.target_majflt_per_s)),
    ("target_cpu_pct", Value::Figure(|i| i.target_cpu_pct)),
    ("sampler_lateness_ms", Value::Figure(|i| i.sampler_lateness_ms)),
];

/// The CSV's columns, in order.
pub fn columns() -> Vec<&'static str> {
    ["t_s", "dt_s", "phase"].into_iter().chain(VALUES.iter().map(|(n, _)| *n)).collect()
}

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
    let mut out = columns().join(",");
    out.push('\n');
    let t0 = rec.samples.first().map(|s| s.t_ns).unwrap_or(0);
    for i in intervals {
        let t_ns = t0 + (i.t_s * 1e9) as u64;
        let _ = write!(out, "{},{}", (i.t_s * 1000.0).round() / 1000.0, (i.dt_s * 1e6).round() / 1e6);
        out.push(',');
        if let Some(p) = phase_at(&rec.run.phases, t_ns) {
            out.push_str(&p.replace([',', '"', '\n'], " "));
        }
        values(&mut out, i);
        out.push('\n');
    }
    out
}

/// An interval's cells after `phase`, each led by its comma.
fn values(out: &mut String, i: &Interval) {
    for (_, v) in VALUES {
        match v {
            Value::Bytes(b) => u(out, b(i)),
            Value::Figure(x) => f(out, x(i)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_holds_its_own_value() {
        let mut i = Interval { pswpout_per_s: Some(7.0), sampler_lateness_ms: Some(0.25), ..Default::default() };
        i.mem.free = 4096;
        i.mem.other_used = 8192;
        let mut row = String::from("1,0.1,fill");
        values(&mut row, &i);
        let cols = columns();
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), cols.len(), "{row}");
        let cell = |c: &str| cells[cols.iter().position(|x| *x == c).unwrap()];
        assert_eq!(
            (cell("pswpout_per_s"), cell("free_bytes"), cell("other_used_bytes"), cell("sampler_lateness_ms")),
            ("7", "4096", "8192", "0.25")
        );
        // Unknown stays empty, never 0.
        assert_eq!((cell("pswpin_per_s"), cell("cpu_user_pct")), ("", ""));
        let mut d = cols.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), cols.len(), "a column named twice");
    }
}
