//! Keeps a thrash run inside the study's protocol without hiding what the
//! kernel does.
//!
//! Maziero et al. sized their runs "to bring each OS to a deep thrashing
//! situation, while avoiding memory exhaustion", and a run with a killed
//! consumer is outside that protocol. On a cgroup-v1 kernel without MGLRU the
//! memcg OOM killer fires in exactly the situation the study creates: every
//! consumer rewrites its whole buffer within a few hundred milliseconds, so
//! when a swap-in must be charged (`mem_cgroup_swapin_charge_folio`), reclaim
//! finds every anon page young again (the OOM report shows `inactive_anon 0`),
//! re-activates instead of swapping out, and after `MAX_RECLAIM_RETRIES`
//! passes without progress the kernel kills a consumer. v1 has no background
//! reclaim for a group and no `memory.high`; the study's 1 GB machine had
//! kswapd working ahead of the allocations.
//!
//! So, only in the group pagelab made for the run:
//! - **v1**: the OOM killer is disabled (`memory.oom_control`); a consumer whose
//!   charge cannot be met then sleeps at the end of its fault. The guard, on a
//!   thread of its own, is woken by the kernel's OOM notification (an eventfd
//!   in `cgroup.event_control`), counts the stall, sees `under_oom` and raises
//!   the limit by one small step ([`step_for`]) so the fault completes at
//!   once; after each [`CALM`] period without a stall it lowers the
//!   limit one step back towards the target (the write makes the kernel
//!   reclaim down to it), so the group spends as little time above the target
//!   as the kernel allows.
//!   If the limit would pass [`MAX_RAISE`] × the target, the guard hands the
//!   decision back to the kernel (OOM killer on again): that run is outside
//!   the protocol and says so.
//! - **v2**: `memory.high` is the target (the kernel throttles and reclaims
//!   there, never kills) and `memory.max` sits [`V2_HEADROOM`] above it as the
//!   hard stop; the guard counts `memory.events` high, max and oom, and the
//!   highest charge it sees (`usage_max_bytes`, with `memory.peak` at the
//!   end), which is the room's largest extent the protocol reads there.
//!
//! Every stall, raise and the time spent above the target are in the result.

use sandbox::cgroup::MemCgroup;
use std::time::Duration;

/// How long the group must be out of OOM before the limit goes one step back down.
pub const CALM: Duration = Duration::from_millis(20);
/// How often the guard looks at the group when no OOM notification wakes it.
pub const TICK: Duration = Duration::from_millis(10);
/// The raise per stall: enough for the stalled charge and a few behind it
/// (a charge is at most a 64-page batch, 256 KiB), small beside the room.
pub fn step_for(target: u64) -> u64 {
    (target / 128).max(512 << 10)
}
/// The limit never goes above this multiple of the target.
pub const MAX_RAISE: f64 = 2.0;
/// v2: memory.max = target × this.
pub const V2_HEADROOM: f64 = 1.25;

pub use crate::thrash::results::GuardReport;

pub struct Guard {
    target: u64,
    step: u64,
    limit: u64,
    calm_since: Option<u64>,
    raised_at: Option<u64>,
    v2_start: Option<(u64, u64, u64)>,
    pub report: GuardReport,
}

fn now() -> u64 {
    probe::sample::monotonic_ns()
}

fn v2_events(cg: &MemCgroup) -> Option<(u64, u64, u64)> {
    let e = cg.events()?;
    Some((e.get("high").unwrap_or(0), e.get("max").unwrap_or(0), e.get("oom").unwrap_or(0)))
}

impl Guard {
    /// Puts the group at `target` under the guard's rules.
    pub fn start(cg: &MemCgroup, target: u64) -> Result<Guard, sandbox::SandboxError> {
        let mut g = Guard {
            target,
            step: step_for(target),
            limit: target,
            calm_since: None,
            raised_at: None,
            v2_start: None,
            report: GuardReport { target_bytes: target, limit_max_bytes: target, ..Default::default() },
        };
        match cg.version {
            probe::cgroup::CgroupVersion::V1 => {
                cg.set_max(target)?;
                cg.set_oom_kill_disable(true)?;
                g.report.method = "oom_control".into();
            }
            probe::cgroup::CgroupVersion::V2 => {
                let max = (target as f64 * V2_HEADROOM) as u64;
                cg.set_max(max)?;
                cg.set_high(Some(target))?;
                g.report.method = "memory.high".into();
                g.report.limit_max_bytes = max;
                g.v2_start = v2_events(cg);
            }
        }
        Ok(g)
    }

    /// One look at the group. Without OOM notifications, each look that finds
    /// the group in OOM counts a stall; with them, [`Guard::watch`] counts the
    /// kernel's notifications instead.
    fn look(&mut self, cg: &MemCgroup, count_stalls: bool) {
        if self.report.method == "memory.high" {
            self.saw_usage(cg.usage());
            return;
        }
        if self.report.method != "oom_control" || self.report.gave_up {
            return;
        }
        let t = now();
        if cg.under_oom() {
            self.calm_since = None;
            if count_stalls {
                self.report.oom_stalls += 1;
            }
            let next = self.limit + self.step;
            if next as f64 > self.target as f64 * MAX_RAISE {
                // Hand the decision back to the kernel: this run leaves the protocol.
                let _ = cg.set_oom_kill_disable(false);
                self.report.gave_up = true;
                return;
            }
            if cg.set_max(next).is_ok() {
                self.limit = next;
                self.report.raises += 1;
                self.report.limit_max_bytes = self.report.limit_max_bytes.max(next);
                self.raised_at.get_or_insert(t);
            }
            return;
        }
        if self.limit > self.target {
            let since = *self.calm_since.get_or_insert(t);
            if t - since >= CALM.as_nanos() as u64 {
                // One step back towards the target (the write makes the kernel
                // reclaim down to it); EBUSY (could not reclaim down) just waits
                // for the next calm period.
                let down = self.limit.saturating_sub(self.step).max(self.target);
                if cg.set_max(down).is_ok() {
                    self.limit = down;
                    if down == self.target {
                        if let Some(r) = self.raised_at.take() {
                            self.report.above_target_s += (t - r) as f64 / 1e9;
                        }
                    }
                }
                self.calm_since = None;
            }
        }
    }

    /// v2: takes the group's `memory.peak` (and its charge now) into the
    /// highest charge, where the 10 ms looks may have missed a spike; the
    /// group is the run's own, made empty, so its peak is this run's.
    pub fn read_peak(&mut self, cg: &MemCgroup) {
        if self.report.method == "memory.high" {
            self.saw_usage(cg.usage());
            self.saw_usage(cg.peak());
        }
    }

    /// v2: the highest charge so far (unknown stays unknown).
    fn saw_usage(&mut self, usage: Option<u64>) {
        if let Some(u) = usage {
            self.report.usage_max_bytes = Some(self.report.usage_max_bytes.unwrap_or(0).max(u));
        }
    }

    /// Runs the guard on the calling thread until `stop`: on v1 it wakes on
    /// each OOM notification (`cgroup.event_control`), so a stalled consumer
    /// waits for its raise for microseconds rather than a polling period, and
    /// otherwise every [`TICK`].
    pub fn watch(mut self, cg: &MemCgroup, stop: &std::sync::atomic::AtomicBool) -> Guard {
        let notifier = match self.report.method.as_str() {
            "oom_control" => cg.oom_notifier().ok(),
            _ => None,
        };
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match &notifier {
                Some(n) => {
                    self.report.oom_stalls += n.wait(TICK);
                }
                None => std::thread::sleep(TICK),
            }
            self.look(cg, notifier.is_none());
        }
        self
    }

    /// Ends the watch: the OOM killer goes back on, and the counts are final.
    pub fn finish(mut self, cg: &MemCgroup) -> GuardReport {
        if let Some(r) = self.raised_at.take() {
            self.report.above_target_s += (now() - r) as f64 / 1e9;
        }
        if self.report.method == "oom_control" {
            let _ = cg.set_oom_kill_disable(false);
        }
        self.read_peak(cg);
        if let (Some(a), Some(b)) = (self.v2_start, v2_events(cg)) {
            self.report.high_events = b.0.saturating_sub(a.0);
            self.report.max_events = b.1.saturating_sub(a.1);
            self.report.oom_events = b.2.saturating_sub(a.2);
        }
        self.report
    }
}
