//! The host guard: pressure belongs inside a cgroup, never on the host.
//!
//! Before a run, the planned memory (cgroup limits plus uncontained allocations)
//! must leave MemAvailable above a floor; during a run, the sampler checks
//! MemAvailable against the same floor and aborts the run cleanly if it drops below.
//! The floor defaults to the larger of 1 GiB and 10 % of RAM.

use crate::error::{Result, SandboxError};
use probe::meminfo::Meminfo;

pub const MIN_FLOOR: u64 = 1 << 30;

pub fn default_floor(mem_total: u64) -> u64 {
    MIN_FLOOR.max(mem_total / 10)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostGuard {
    pub floor: u64,
}

impl HostGuard {
    pub fn new(floor: Option<u64>, meminfo: &Meminfo) -> Self {
        HostGuard { floor: floor.unwrap_or_else(|| default_floor(meminfo.total().unwrap_or(0))) }
    }

    /// Refuses a plan that would leave MemAvailable below the floor.
    ///
    /// `planned` is a u128 so that a plan's arithmetic (sizes times counts, plus
    /// stores and overheads) cannot wrap: any sum of a few u64 products fits, and
    /// a plan that would have wrapped in u64 is simply larger than RAM.
    pub fn check_plan(&self, planned: u128, what: &str, meminfo: &Meminfo) -> Result<()> {
        let avail = meminfo.available().unwrap_or(0);
        let left = (avail as u128).saturating_sub(planned);
        if (avail as u128) < planned || left < self.floor as u128 {
            return Err(SandboxError::HostGuard(format!(
                "host guard: {what} plans {} but MemAvailable is {}, which would leave {} (below the floor of {}; set it with --host-floor)",
                units::bytes(u64::try_from(planned).unwrap_or(u64::MAX)),
                units::bytes(avail),
                units::bytes(u64::try_from(left).unwrap_or(u64::MAX)),
                units::bytes(self.floor)
            )));
        }
        Ok(())
    }

    /// Checks a live sample; returns why the run must stop, if it must.
    pub fn check_sample(&self, s: &probe::Sample) -> Option<String> {
        let avail = s.meminfo.as_ref()?.available()?;
        (avail < self.floor).then(|| {
            format!(
                "host guard: MemAvailable fell to {} (floor {}); run aborted and restored",
                units::bytes(avail),
                units::bytes(self.floor)
            )
        })
    }
}

/// The bytes free to an unprivileged writer on the file system that holds
/// `path`, or its nearest existing ancestor (an `--out` not made yet).
pub fn disk_free(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let mut p = if path.as_os_str().is_empty() { std::path::Path::new(".") } else { path };
    while p.symlink_metadata().is_err() {
        p = match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => q,
            _ => std::path::Path::new("."),
        };
        if p == std::path::Path::new(".") {
            break;
        }
    }
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: a NUL-terminated path and a zeroed struct statvfs fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Refuses, before anything starts, output of `planned` bytes to `dir` that
/// the file system under it cannot hold: a full disk midway would cut the run
/// (issue 59: the host guard treats a nearly full output file system like low
/// memory). `free` is [`disk_free`]'s answer (None: unknown, not refused).
pub fn check_disk(dir: &std::path::Path, planned: u64, free: Option<u64>, what: &str) -> Result<()> {
    match free {
        Some(f) if f < planned => Err(SandboxError::HostGuard(format!(
            "host guard: {what} plans to write about {} under {}, and its file system has {} free; \
             free some space or give another --out",
            units::bytes(planned),
            dir.display(),
            units::bytes(f)
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn mi(total: u64, avail: u64) -> Meminfo {
        Meminfo(probe::counters::Counters::from_pairs([("MemTotal", total), ("MemAvailable", avail)]))
    }
    #[test]
    fn an_output_that_does_not_fit_is_refused_before_it_starts() {
        let d = std::path::Path::new("/x/lab");
        let e = check_disk(d, 40 << 20, Some(8 << 20), "the lab").unwrap_err().to_string();
        assert!(e.contains("about 40.00 MiB under /x/lab") && e.contains("8.00 MiB free"), "{e}");
        assert!(check_disk(d, 40 << 20, Some(41 << 20), "the lab").is_ok());
        assert!(check_disk(d, 40 << 20, None, "the lab").is_ok());
        // A directory not made yet is measured at its nearest ancestor.
        let t = tempfile::tempdir().unwrap();
        assert!(disk_free(&t.path().join("a/b/c")).is_some_and(|f| f > 0));
    }

    #[test]
    fn floor_and_plan() {
        assert_eq!(default_floor(4 << 30), 1 << 30);
        assert_eq!(default_floor(24 << 30), (24u64 << 30) / 10);
        let m = mi(24 << 30, 20 << 30);
        let g = HostGuard::new(None, &m);
        assert!(g.check_plan(1 << 30, "x", &m).is_ok());
        let e = g.check_plan(18 << 30, "eat", &m).unwrap_err().to_string();
        // Sizes that would wrap a u64 sum are refused, not wrapped to something small.
        let huge = 2 * (1u128 << 63) + (64 << 20);
        assert!(g.check_plan(huge, "eat", &m).is_err());
        assert!(e.contains("eat plans 18.00 GiB") && e.contains("--host-floor"), "{e}");
        let s = probe::Sample { meminfo: Some(mi(24 << 30, 1 << 30)), ..Default::default() };
        assert!(g.check_sample(&s).is_some());
        let s = probe::Sample { meminfo: Some(m), ..Default::default() };
        assert!(g.check_sample(&s).is_none());
    }

    proptest::proptest! {
        /// A plan passes exactly when it leaves MemAvailable at or above the floor,
        /// whatever its size: nothing wraps.
        #[test]
        fn a_plan_passes_only_if_it_leaves_the_floor(
            planned in 0u128..=(8 * u64::MAX as u128),
            avail in 0u64..(1 << 46),
            floor in 0u64..(1 << 40),
        ) {
            let m = mi(avail.saturating_mul(2), avail);
            let g = HostGuard { floor };
            let ok = g.check_plan(planned, "p", &m).is_ok();
            proptest::prop_assert_eq!(ok, planned + floor as u128 <= avail as u128);
        }
    }
}
