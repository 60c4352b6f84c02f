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

/// A consumer's buffer in its own process, which the v1 guard may page out
/// ahead of the kernel's reclaim. The pidfd is opened when the consumer
/// reports its buffer, while it is pagelab's live, unreaped child: a pid
/// reused after the consumer is reaped can never be advised through it
/// (process_madvise then fails with ESRCH).
#[derive(Clone)]
pub struct Region {
    pub pid: i32,
    pub pidfd: std::sync::Arc<workloads::mm::PidFd>,
    pub addr: usize,
    pub len: usize,
}

/// The consumers' buffers as they allocate, shared with the guard's thread.
pub type Regions = std::sync::Mutex<Vec<Region>>;

/// v1's reclaim ahead: `process_madvise(MADV_PAGEOUT)` over the consumers'
/// buffers, round robin, each from where it last stopped (a clock over the
/// group's pages, as kswapd's LRU is one under uniform access).
#[derive(Default)]
struct Ahead {
    /// Where each region's next page-out starts, by (pid, address).
    cursor: std::collections::HashMap<(i32, usize), usize>,
    /// Processes gone (or whose buffer is): their regions are passed over.
    gone: std::collections::HashSet<i32>,
    next: usize,
    /// Why the kernel refused (no process_madvise, or not allowed): the
    /// guard raises whole steps instead, and the report says why.
    off: Option<String>,
}

impl Ahead {
    /// Pages out about `bytes` of the consumers' buffers; the bytes advised.
    fn page_out(&mut self, regions: &Regions, bytes: u64) -> u64 {
        if self.off.is_some() {
            return 0;
        }
        let rs: Vec<Region> = regions.lock().map(|r| r.clone()).unwrap_or_default();
        let live: Vec<Region> = rs.into_iter().filter(|r| !self.gone.contains(&r.pid) && r.len > 0).collect();
        if live.is_empty() {
            return 0;
        }
        let page = workloads::mm::page_size();
        let mut done = 0u64;
        for _ in 0..live.len() {
            if done >= bytes {
                break;
            }
            let r = &live[self.next % live.len()];
            self.next = self.next.wrapping_add(1);
            let key = (r.pid, r.addr);
            let cur = self.cursor.get(&key).copied().unwrap_or(0) % r.len;
            let want = (((bytes - done) as usize).div_ceil(page) * page).min(r.len - cur);
            // The address is what the consumer reported: one that wraps is no buffer of its.
            let Some(at) = r.addr.checked_add(cur).filter(|a| a.checked_add(want).is_some()) else {
                self.gone.insert(r.pid);
                continue;
            };
            match workloads::mm::process_madvise(&r.pidfd, &[(at, want)], workloads::mm::MADV_PAGEOUT) {
                Ok(n) => {
                    done += n as u64;
                    // On from what was advised (a whole page count: the kernel advises whole pages).
                    self.cursor.insert(key, (cur + n.min(want)) % r.len);
                }
                // Exited, or its buffer unmapped as it ends.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOMEM)) => {
                    self.gone.insert(r.pid);
                }
                // Passing: the next stall tries again.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) => {}
                Err(e) => {
                    self.off = Some(format!("process_madvise(MADV_PAGEOUT) refused: {e}"));
                    return done;
                }
            }
        }
        done
    }
}

pub struct Guard {
    target: u64,
    step: u64,
    limit: u64,
    calm_since: Option<u64>,
    raised_at: Option<u64>,
    v2_start: Option<(u64, u64, u64)>,
    ahead: Ahead,
    regions: std::sync::Arc<Regions>,
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
            ahead: Ahead::default(),
            regions: Default::default(),
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

    /// Where the consumers' buffers are to be told, as they allocate.
    pub fn regions(&self) -> std::sync::Arc<Regions> {
        self.regions.clone()
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
            // Reclaim ahead, as kswapd would have: page out two steps of the
            // consumers' buffers; then a one-page raise wakes the stalled
            // fault (the kernel wakes a group's OOM waiters when its limit
            // grows). Without reclaim ahead, the raise is a whole step.
            let freed = self.ahead.page_out(&self.regions, 2 * self.step);
            self.report.paged_ahead_bytes += freed;
            if self.report.ahead_refused.is_none() {
                self.report.ahead_refused = self.ahead.off.clone();
            }
            let up = if freed > 0 { workloads::mm::page_size() as u64 } else { self.step };
            let next = self.limit + up;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaim_ahead_takes_each_buffer_in_turn_from_where_it_stopped() {
        if let Err(why) = workloads::mm::try_process_madvise() {
            crate::kit::skip_test(&why);
            return;
        }
        let page = workloads::mm::page_size();
        let map = || {
            let mut m = workloads::mm::Mapping::anon(4 * page, 0).unwrap();
            m.as_mut_slice().fill(7);
            m
        };
        let (a, b) = (map(), map());
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let fd = std::sync::Arc::new(workloads::mm::PidFd::open(pid).unwrap());
        let at = |m: &workloads::mm::Mapping| m.as_slice().as_ptr() as usize;
        let region = |m: &workloads::mm::Mapping| Region { pid, pidfd: fd.clone(), addr: at(m), len: 4 * page };
        let regions: Regions = std::sync::Mutex::new(vec![region(&a), region(&b)]);
        let mut ahead = Ahead::default();
        // Three pages from the first buffer; the next call starts on the second.
        assert_eq!(ahead.page_out(&regions, 3 * page as u64), 3 * page as u64);
        assert_eq!(ahead.cursor.get(&(pid, at(&a))), Some(&(3 * page)));
        assert_eq!(ahead.page_out(&regions, 2 * page as u64), 2 * page as u64);
        assert_eq!(ahead.cursor.get(&(pid, at(&b))), Some(&(2 * page)));
        // Back on the first: its last page (it wraps to its start), then one of the second's.
        assert_eq!(ahead.page_out(&regions, 2 * page as u64), 2 * page as u64);
        assert_eq!(ahead.cursor.get(&(pid, at(&a))), Some(&0));
        assert_eq!(ahead.cursor.get(&(pid, at(&b))), Some(&(3 * page)));
        // The contents survive (they come back from swap, or were never taken).
        assert!(a.as_slice().iter().chain(b.as_slice()).all(|&x| x == 7));
        // A child that has exited and been reaped is passed over through
        // its pidfd (never its reusable pid), not an error, and not retried.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let cfd = std::sync::Arc::new(workloads::mm::PidFd::open(child.id() as i32).unwrap());
        child.wait().unwrap();
        let gone = Region { pid: child.id() as i32, pidfd: cfd, addr: at(&a), len: 4 * page };
        let only_gone: Regions = std::sync::Mutex::new(vec![gone.clone()]);
        assert_eq!(ahead.page_out(&only_gone, page as u64), 0);
        assert!(ahead.gone.contains(&gone.pid) && ahead.off.is_none());
        // Nothing to page out: nothing advised.
        assert_eq!(Ahead::default().page_out(&std::sync::Mutex::new(vec![]), page as u64), 0);
    }
}
