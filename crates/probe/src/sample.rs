//! A `Sample`: a monotonic timestamp plus raw cumulative counters.

use crate::cgroup::CgroupSample;
use crate::meminfo::Meminfo;
use crate::pid::{PidStat, PidStatus, SmapsRollup};
use crate::pressure::Pressure;
use crate::stat::Stat;
use crate::vmstat::Vmstat;
use crate::zram::{IoStat, MmStat};
use serde::{Deserialize, Serialize};

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CPU time consumed by the calling thread, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// System-wide PSI files; each is `None` where the kernel lacks PSI.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub memory: Option<Pressure>,
    pub cpu: Option<Pressure>,
    pub io: Option<Pressure>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PidSample {
    pub pid: i32,
    /// `None` once the process has gone.
    pub status: Option<PidStatus>,
    pub stat: Option<PidStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smaps_rollup: Option<SmapsRollup>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZramSample {
    /// N in zramN.
    pub id: u32,
    pub mm_stat: Option<MmStat>,
    pub io_stat: Option<IoStat>,
    /// Device size, bytes (0: not set up).
    pub disksize: Option<u64>,
    /// Selected algorithm.
    pub comp_algorithm: Option<String>,
}

/// One observation of the kernel's counters. Everything is raw and cumulative, as
/// the kernel reports it; `record::derive` turns pairs of samples into rates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// CLOCK_MONOTONIC, nanoseconds.
    pub t_ns: u64,
    /// How late the sampler woke for this sample, nanoseconds (set by the sampler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness_ns: Option<u64>,
    pub meminfo: Option<Meminfo>,
    pub vmstat: Option<Vmstat>,
    pub stat: Option<Stat>,
    pub psi: Psi,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<PidSample>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupSample>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zram: Vec<ZramSample>,
    /// zswap pool size, bytes, from /sys/kernel/debug/zswap/pool_total_size when
    /// readable (meminfo's `Zswap` is preferred where the kernel has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap_pool_bytes: Option<u64>,
}
