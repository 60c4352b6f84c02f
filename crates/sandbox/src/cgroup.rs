//! Memory cgroups, v1 and v2, behind one API.
//!
//! Groups are created under a `pagelab` parent in the hierarchy that has the memory
//! controller. Knobs:
//!
//! | knob | v2 | v1 |
//! | --- | --- | --- |
//! | hard limit | memory.max | memory.limit_in_bytes |
//! | throttle limit | memory.high | (none) |
//! | swap limit | memory.swap.max | memory.memsw.limit_in_bytes (memory + swap) |
//! | reclaim now | memory.reclaim | lower the limit, then restore it; memory.force_empty |
//! | swappiness | (global vm.swappiness) | memory.swappiness |
//!
//! On v2, lowering `memory.max` below the current usage makes the kernel reclaim
//! and, if it cannot get under the limit fast enough, OOM-kill inside the group.
//! [`MemCgroup::set_max`] therefore lowers `memory.high` first: that throttles the
//! group and reclaims in the background without killing, and only once usage is
//! under the new value is `memory.max` lowered.

use crate::error::{Result, SandboxError};
use probe::cgroup::CgroupVersion;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A v1 limit file's "no limit": the largest page-aligned signed 64-bit
/// value (9223372036854771712 with 4 KiB pages); anything at or above an
/// exabyte is read as unlimited.
const UNLIMITED_V1: u64 = 1 << 60;

/// Which knobs the running kernel offers for a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Knobs {
    pub max: bool,
    pub high: bool,
    pub swap_max: bool,
    pub reclaim: bool,
    pub memsw: bool,
    pub swappiness: bool,
    pub force_empty: bool,
}

/// Limits to apply when a group is created. `None` leaves the kernel default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Hard limit on memory, bytes.
    pub max: Option<u64>,
    /// v2 throttling limit, bytes.
    pub high: Option<u64>,
    /// Swap the group may use, bytes (v2 memory.swap.max; on v1 memsw = max + this).
    pub swap_max: Option<u64>,
    /// v1 per-group swappiness (0..=200).
    pub swappiness: Option<u32>,
}

/// A memory cgroup created by this sandbox.
#[derive(Debug)]
pub struct MemCgroup {
    pub version: CgroupVersion,
    /// Absolute directory.
    pub dir: PathBuf,
    /// Path relative to the hierarchy root, e.g. `pagelab/eat-812-1`.
    pub name: String,
    /// Groups of other cgroup v1 hierarchies that every process started in
    /// this one joins too (a blkio group: [`crate::Sandbox::io_limit`]).
    pub also: Vec<PathBuf>,
    writes: Mutex<Vec<(String, String)>>,
}

pub(crate) fn write_file(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| SandboxError::io(format!("writing '{value}'"), path, e))
}

impl MemCgroup {
    pub(crate) fn new(version: CgroupVersion, dir: PathBuf, name: String) -> Self {
        MemCgroup { version, dir, name, also: Vec::new(), writes: Mutex::new(Vec::new()) }
    }

    /// Writes one control file, remembering the write (file name, value) in order.
    pub fn write(&self, file: &str, value: &str) -> Result<()> {
        self.writes.lock().expect("writes").push((file.to_string(), value.to_string()));
        write_file(&self.dir.join(file), value)
    }

    /// Every write made through this handle, in order (for tests and logs).
    pub fn writes(&self) -> Vec<(String, String)> {
        self.writes.lock().expect("writes").clone()
    }

    pub fn knobs(&self) -> Knobs {
        let has = |f: &str| self.dir.join(f).exists();
        match self.version {
            CgroupVersion::V2 => Knobs {
                max: has("memory.max"),
                high: has("memory.high"),
                swap_max: has("memory.swap.max"),
                reclaim: has("memory.reclaim"),
                ..Default::default()
            },
            CgroupVersion::V1 => Knobs {
                max: has("memory.limit_in_bytes"),
                memsw: has("memory.memsw.limit_in_bytes"),
                swappiness: has("memory.swappiness"),
                force_empty: has("memory.force_empty"),
                ..Default::default()
            },
        }
    }

    fn read_u64(&self, file: &str) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    /// Memory charged to the group, bytes.
    pub fn usage(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V2 => self.read_u64("memory.current"),
            CgroupVersion::V1 => self.read_u64("memory.usage_in_bytes"),
        }
    }

    /// The group's highest charge since it was made (v2's `memory.peak`,
    /// Linux 5.19 and later; v1's `memory.max_usage_in_bytes`), bytes.
    pub fn peak(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V2 => self.read_u64("memory.peak"),
            CgroupVersion::V1 => self.read_u64("memory.max_usage_in_bytes"),
        }
    }

    /// The hard limit in force, bytes (u64::MAX for none).
    pub fn limit(&self) -> Option<u64> {
        let t = match self.version {
            CgroupVersion::V2 => std::fs::read_to_string(self.dir.join("memory.max")).ok()?,
            CgroupVersion::V1 => std::fs::read_to_string(self.dir.join("memory.limit_in_bytes")).ok()?,
        };
        match self.version {
            CgroupVersion::V2 => probe::cgroup::parse_v2_limit(&t).ok(),
            CgroupVersion::V1 => probe::cgroup::parse_v1_limit(&t).ok(),
        }
    }

    /// OOM kills in the group so far (None: not readable here).
    pub fn oom_kills(&self) -> Option<u64> {
        probe::cgroup::read_oom_kills(&self.dir, self.version)
    }

    /// v1 `memory.oom_control`: with the OOM killer disabled, a task whose charge
    /// cannot be met sleeps at the end of its page fault until memory is freed or
    /// the limit is raised, instead of being killed. Only for groups pagelab made.
    pub fn set_oom_kill_disable(&self, disable: bool) -> Result<()> {
        match self.version {
            CgroupVersion::V1 => self.write("memory.oom_control", if disable { "1" } else { "0" }),
            CgroupVersion::V2 => Err(SandboxError::Unsupported(
                "memory.oom_control exists only on cgroup v1; v2 throttles with memory.high instead".into(),
            )),
        }
    }

    /// v1: the group is in an OOM condition right now (its tasks wait, since the
    /// OOM killer is disabled). Always false on v2.
    pub fn under_oom(&self) -> bool {
        self.keyed("memory.oom_control").and_then(|m| m.get("under_oom")).unwrap_or(0) == 1
    }

    /// v1: an eventfd that the kernel signals whenever a task of the group
    /// enters OOM (`cgroup.event_control` with `memory.oom_control`,
    /// Documentation/admin-guide/cgroup-v1/memory.rst, "OOM Control"), so that
    /// a watcher wakes at once instead of polling `under_oom`. The kernel drops
    /// the registration when the eventfd is closed or the group removed, so
    /// there is nothing to journal. v2 has no such file.
    pub fn oom_notifier(&self) -> Result<OomNotifier> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        if self.version != CgroupVersion::V1 {
            return Err(SandboxError::Unsupported("OOM notification through cgroup.event_control is v1 only".into()));
        }
        let ctl_path = self.dir.join("memory.oom_control");
        let ctl = std::fs::File::open(&ctl_path).map_err(|e| SandboxError::io("opening", &ctl_path, e))?;
        // SAFETY: eventfd returns a new descriptor or -1; on success it is ours to own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(SandboxError::io("eventfd", &ctl_path, std::io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        let efd = unsafe { OwnedFd::from_raw_fd(fd) };
        write_file(&self.dir.join("cgroup.event_control"), &format!("{} {}", efd.as_raw_fd(), ctl.as_raw_fd()))?;
        Ok(OomNotifier { efd, _ctl: ctl })
    }

    /// v2 `memory.events` (low, high, max, oom, oom_kill, ...); v1 has none.
    pub fn events(&self) -> Option<probe::counters::Counters> {
        match self.version {
            CgroupVersion::V2 => self.keyed("memory.events"),
            CgroupVersion::V1 => None,
        }
    }

    fn keyed(&self, file: &str) -> Option<probe::counters::Counters> {
        std::fs::read_to_string(self.dir.join(file)).ok().and_then(|t| probe::cgroup::parse_keyed(&t).ok())
    }

    /// Pids in the group.
    pub fn procs(&self) -> Vec<i32> {
        procs(&self.dir)
    }

    /// SIGKILLs every process in the group but `keep` until none is left or
    /// `within` has passed; returns those still there (empty: all gone).
    /// Each is signalled as [`kill_member`] does: through a pidfd, and only
    /// while its process is a member of this group.
    pub fn kill_all_but(&self, keep: &[i32], within: Duration) -> Vec<i32> {
        let t0 = Instant::now();
        loop {
            let pids: Vec<i32> = self.procs().into_iter().filter(|p| !keep.contains(p)).collect();
            if pids.is_empty() || t0.elapsed() >= within {
                return pids;
            }
            for p in pids {
                kill_member(&self.dir, p);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Applies creation-time limits in a safe order.
    pub fn apply(&self, l: &Limits) -> Result<()> {
        match self.version {
            CgroupVersion::V2 => {
                if let Some(h) = l.high.or(l.max) {
                    self.write("memory.high", &h.to_string())?;
                }
                if let Some(m) = l.max {
                    self.write("memory.max", &m.to_string())?;
                }
                if l.high.is_none() && l.max.is_some() {
                    // memory.high was only a stepping stone: lift it again.
                    self.write("memory.high", "max")?;
                }
                if let Some(s) = l.swap_max {
                    if !self.knobs().swap_max {
                        return Err(SandboxError::Unsupported(format!(
                            "{}: memory.swap.max is missing (kernel without swap accounting)",
                            self.dir.display()
                        )));
                    }
                    self.write("memory.swap.max", &s.to_string())?;
                }
                if l.swappiness.is_some() {
                    return Err(SandboxError::Unsupported(
                        "per-cgroup swappiness exists only on cgroup v1; use vm.swappiness".into(),
                    ));
                }
            }
            CgroupVersion::V1 => {
                if l.high.is_some() {
                    return Err(SandboxError::Unsupported(
                        "memory.high (throttling) exists only on cgroup v2; cgroup v1 has no equivalent".into(),
                    ));
                }
                if let Some(m) = l.max {
                    self.write("memory.limit_in_bytes", &m.to_string())?;
                    if let Some(s) = l.swap_max {
                        if !self.knobs().memsw {
                            return Err(SandboxError::Unsupported(format!(
                                "{}: memory.memsw.limit_in_bytes is missing (swap accounting off: boot with swapaccount=1)",
                                self.dir.display()
                            )));
                        }
                        self.write("memory.memsw.limit_in_bytes", &m.saturating_add(s).to_string())?;
                    }
                }
                if let Some(sw) = l.swappiness {
                    self.write("memory.swappiness", &sw.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// Changes the hard limit. Lowering on v2 goes through memory.high first so that
    /// the kernel reclaims instead of OOM-killing (see the module documentation).
    pub fn set_max(&self, bytes: u64) -> Result<()> {
        match self.version {
            CgroupVersion::V2 => {
                let lowering = self.usage().is_some_and(|u| u > bytes);
                if lowering {
                    self.write("memory.high", &bytes.to_string())?;
                    let t0 = Instant::now();
                    while self.usage().is_some_and(|u| u > bytes) && t0.elapsed() < Duration::from_secs(5) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                self.write("memory.max", &bytes.to_string())?;
                if lowering {
                    self.write("memory.high", "max")?;
                }
                Ok(())
            }
            CgroupVersion::V1 => {
                // memsw (memory + swap) must stay >= the limit. A group whose
                // swap was capped (memsw below "unlimited") keeps its swap
                // allowance, memsw − limit, across the change: memsw moves
                // with the limit, first when growing, last when shrinking.
                let memsw = self.read_u64("memory.memsw.limit_in_bytes");
                let old = self.read_u64("memory.limit_in_bytes");
                let allowance = match (memsw, old) {
                    (Some(ms), Some(l)) if ms < UNLIMITED_V1 && ms >= l => Some(ms - l),
                    _ => None,
                };
                let to = |a: u64| bytes.saturating_add(a).to_string();
                match allowance {
                    Some(a) if old.is_some_and(|l| bytes > l) => {
                        self.write("memory.memsw.limit_in_bytes", &to(a))?;
                        self.write("memory.limit_in_bytes", &bytes.to_string())
                    }
                    Some(a) => {
                        self.write("memory.limit_in_bytes", &bytes.to_string())?;
                        self.write("memory.memsw.limit_in_bytes", &to(a))
                    }
                    None => self.write("memory.limit_in_bytes", &bytes.to_string()).or_else(|e| match memsw {
                        Some(ms) if ms < bytes => {
                            self.write("memory.memsw.limit_in_bytes", &bytes.to_string())?;
                            self.write("memory.limit_in_bytes", &bytes.to_string())
                        }
                        _ => Err(e),
                    }),
                }
            }
        }
    }

    /// v1 `memory.force_empty`: reclaim as much of the group's memory as possible
    /// now. v2 has no such file; `reclaim` with a large amount does the same there.
    pub fn force_empty(&self) -> Result<()> {
        match self.version {
            CgroupVersion::V1 => self.write("memory.force_empty", "0"),
            CgroupVersion::V2 => Err(SandboxError::Unsupported(
                "memory.force_empty exists only on cgroup v1; use reclaim (memory.reclaim) on v2".into(),
            )),
        }
    }

    /// Sets v2 memory.high (throttling). v1 has no equivalent.
    pub fn set_high(&self, bytes: Option<u64>) -> Result<()> {
        match self.version {
            CgroupVersion::V2 => self.write("memory.high", &bytes.map(|b| b.to_string()).unwrap_or("max".into())),
            CgroupVersion::V1 => Err(SandboxError::Unsupported(
                "memory.high (throttling) exists only on cgroup v2; cgroup v1 has no equivalent".into(),
            )),
        }
    }

    /// Asks the kernel to reclaim `bytes` from the group now. v2 writes
    /// memory.reclaim; v1 lowers the limit by `bytes` below the usage (the kernel
    /// reclaims synchronously to get under it) and then restores the limit.
    pub fn reclaim(&self, bytes: u64) -> Result<()> {
        match self.version {
            CgroupVersion::V2 => {
                if !self.knobs().reclaim {
                    return Err(SandboxError::Unsupported("memory.reclaim needs Linux 5.19 or later".into()));
                }
                match self.write("memory.reclaim", &bytes.to_string()) {
                    // EAGAIN: the kernel reclaimed less than asked; not a failure of ours.
                    Err(SandboxError::Io { source, .. }) if source.raw_os_error() == Some(libc::EAGAIN) => Ok(()),
                    r => r,
                }
            }
            CgroupVersion::V1 => {
                let old = self
                    .read_u64("memory.limit_in_bytes")
                    .ok_or_else(|| SandboxError::Other("cannot read memory.limit_in_bytes".into()))?;
                let usage = self.usage().unwrap_or(0);
                let target = usage.saturating_sub(bytes).max(1 << 20);
                // EBUSY: the kernel could not get under the temporary limit; fine.
                let r = self.write("memory.limit_in_bytes", &target.to_string());
                let restore = self.write("memory.limit_in_bytes", &old.to_string());
                match r {
                    Err(SandboxError::Io { source, .. }) if source.raw_os_error() == Some(libc::EBUSY) => restore,
                    Err(e) => Err(e),
                    Ok(()) => restore,
                }
            }
        }
    }
}

/// Asks the kernel once to reclaim `bytes` from the v2 memory cgroup at `dir`
/// (memory.reclaim), a group pagelab did not create: the monitor's `r` key, the
/// user's own request. It changes no setting, so there is nothing to journal or
/// restore; EAGAIN (reclaimed less than asked) is the caller's to judge.
/// The write goes only into a cgroup filesystem, and never through a link:
/// a directory elsewhere (a look-alike tree of regular files) is refused.
pub fn reclaim_once(dir: &Path, bytes: u64) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if !is_cgroup_dir(dir) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: not a directory of a cgroup filesystem", dir.display()),
        ));
    }
    let mut f =
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(dir.join("memory.reclaim"))?;
    f.write_all(bytes.to_string().as_bytes())
}

/// Whether `path` is a directory on a cgroup (v1 or v2) filesystem.
pub fn is_cgroup_dir(path: &Path) -> bool {
    path.is_dir() && is_cgroupfs(path)
}

/// Makes the child that `cmd` will start join the cgroup at `dir` between fork
/// and exec (it writes `0`, itself, to cgroup.procs), so that every page the
/// program maps is charged there. The group is the caller's, made and
/// journaled through the sandbox; this only moves a new process into it.
pub fn join_before_exec(cmd: &mut std::process::Command, dir: &Path) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let procs = std::ffi::CString::new(dir.join("cgroup.procs").as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a cgroup path with a NUL byte"))?;
    // SAFETY: between fork and exec only async-signal-safe calls (open, write, close).
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            if ok { Ok(()) } else { Err(e) }
        });
    }
    Ok(())
}

/// A v1 group's OOM notifications (see [`MemCgroup::oom_notifier`]).
#[derive(Debug)]
pub struct OomNotifier {
    efd: std::os::fd::OwnedFd,
    /// memory.oom_control, held open for as long as the registration lives.
    _ctl: std::fs::File,
}

impl OomNotifier {
    /// Waits up to `timeout` for the group to enter OOM; how many times it did
    /// since the last call (0 when the wait timed out).
    pub fn wait(&self, timeout: Duration) -> u64 {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd { fd: self.efd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            return 0;
        }
        let mut n = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer from our eventfd.
        if unsafe { libc::read(self.efd.as_raw_fd(), n.as_mut_ptr().cast(), 8) } == 8 {
            u64::from_ne_bytes(n)
        } else {
            0
        }
    }
}

/// Pids listed in a cgroup's cgroup.procs.
pub fn procs(dir: &Path) -> Vec<i32> {
    // A member is a positive pid: never 0 or a negative number, which
    // kill(2) reads as a whole process group (a kernel lists none; a fake
    // tree's file holds the "0" a join wrote).
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.split_ascii_whitespace().filter_map(|p| p.parse().ok()).filter(|&p: &i32| p > 0).collect())
        .unwrap_or_default()
}

pub(crate) fn is_cgroupfs(path: &Path) -> bool {
    const CGROUP_SUPER_MAGIC: i64 = 0x27e0eb;
    const CGROUP2_SUPER_MAGIC: i64 = 0x63677270;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a C struct of integers (and pointers), for which all-zero bytes are a valid value.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return false;
    }
    let t = s.f_type as i64;
    t == CGROUP_SUPER_MAGIC || t == CGROUP2_SUPER_MAGIC
}

/// SIGKILLs `pid` if its process is a member of the group at `dir`; false
/// when it was not signalled. A pidfd is opened on the process first, and
/// the group's list read again: a pid number reused, after an orphan of the
/// group was reaped, by a process elsewhere is not listed, so it is never
/// signalled, and the pidfd's process, if it is still listed, is the member
/// (a pidfd keeps its process, not the number: one that exits meanwhile
/// makes the signal fail harmlessly). Where pidfds are missing (before Linux
/// 5.3: ENOSYS) or refused (a seccomp profile: EPERM), the plain kill after
/// the same check is the fallback, with the small race pidfds close.
pub fn kill_member(dir: &Path, pid: i32) -> bool {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // 0 and negative numbers name process groups to kill(2): never a member.
    if pid <= 0 {
        return false;
    }
    let member = || procs(dir).contains(&pid);
    // SAFETY: pidfd_open with no flags returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error().raw_os_error();
        // SAFETY: signalling a pid listed in the group just now.
        return matches!(e, Some(libc::ENOSYS) | Some(libc::EPERM))
            && member()
            && unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
    }
    // SAFETY: a new fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: pidfd_send_signal on our own pidfd, no siginfo, no flags.
    member()
        && unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0)
        } == 0
}

/// Kills every process in the group (they are pagelab's workers), reaps those that
/// are our children, waits until the group is empty, then removes it. Also removes
/// the `pagelab` parent if this left it empty. Returns how many were killed.
pub fn kill_and_remove(dir: &Path) -> Result<usize> {
    let mut killed = 0;
    let t0 = Instant::now();
    loop {
        let pids = procs(dir);
        if pids.is_empty() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(SandboxError::Other(format!(
                "{}: processes {pids:?} did not exit within 10 s of SIGKILL",
                dir.display()
            )));
        }
        for p in pids {
            if kill_member(dir, p) {
                killed += 1;
            }
            // Reap it if it is our child; ECHILD otherwise, which is fine.
            // SAFETY: WNOHANG waitpid on a specific pid.
            unsafe { libc::waitpid(p, std::ptr::null_mut(), libc::WNOHANG) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    remove_dir(dir)?;
    if let Some(parent) = dir.parent()
        && parent.file_name().is_some_and(|n| n == "pagelab")
    {
        // Busy (another pagelab run uses it) or already gone: both fine.
        let _ = remove_dir(parent);
    }
    Ok(killed)
}

fn remove_dir(dir: &Path) -> Result<()> {
    let r = if is_cgroupfs(dir) || !dir.to_string_lossy().contains("pagelab") {
        std::fs::remove_dir(dir)
    } else {
        // A fake tree in tests: cgroupfs would drop the control files by itself.
        std::fs::remove_dir_all(dir)
    };
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SandboxError::io("removing the cgroup", dir, e)),
    }
}

#[cfg(test)]
mod tests {
    /// A group's members are positive pids only: a 0 or a negative number
    /// (which kill(2) reads as a process group) in cgroup.procs is no
    /// member (and `kill_member` refuses one before any syscall).
    #[test]
    fn members_are_positive_pids() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cgroup.procs"), "0\n412\n-1\nx\n77\n").unwrap();
        assert_eq!(super::procs(d.path()), [412, 77]);
    }
}
