//! A process's fault counters and memory at one moment (for phase deltas).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcSnap {
    pub t_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub rss_bytes: u64,
    pub anon_bytes: u64,
    pub swap_bytes: u64,
}

impl ProcSnap {
    /// The process now, read through `p` (the machine's, or a fake tree in
    /// tests); none when it cannot be read: gone, or a zombie (whose status
    /// has no memory lines). Unknown is not zero faults.
    pub fn read(p: &mut probe::Probe, pid: i32) -> Option<ProcSnap> {
        let st = p.pid_stat(pid).ok().flatten()?;
        let s = p.pid_status(pid).ok().flatten()?;
        Some(ProcSnap {
            t_ns: probe::sample::monotonic_ns(),
            minflt: st.minflt,
            majflt: st.majflt,
            rss_bytes: s.vm_rss?,
            anon_bytes: s.rss_anon?,
            swap_bytes: s.vm_swap?,
        })
    }
}

pub use record::results::PhaseResult;

/// The phase between two snapshots of the same process.
pub fn phase_between(a: &ProcSnap, b: &ProcSnap) -> PhaseResult {
    PhaseResult {
        seconds: b.t_ns.saturating_sub(a.t_ns) as f64 / 1e9,
        minor_faults: b.minflt.saturating_sub(a.minflt),
        major_faults: b.majflt.saturating_sub(a.majflt),
        rss_before_bytes: a.rss_bytes,
        rss_after_bytes: b.rss_bytes,
        swap_before_bytes: a.swap_bytes,
        swap_after_bytes: b.swap_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live process reads; one that is gone is unknown, not zeros.
    #[test]
    fn a_gone_process_is_none() {
        let me = ProcSnap::read(&mut probe::Probe::default(), std::process::id() as i32).expect("this process");
        assert!(me.rss_bytes > 0 && me.minflt > 0, "{me:?}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert_eq!(ProcSnap::read(&mut probe::Probe::default(), pid), None, "pid {pid} was reaped");
    }
}
