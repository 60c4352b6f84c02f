//! Thin wrappers over the memory-management system calls the experiments use.

use std::io;

/// MADV_COLD (Linux 5.4): deactivate pages, keep them.
pub const MADV_COLD: i32 = 20;
/// MADV_PAGEOUT (Linux 5.4): reclaim pages now (swap out anon, drop clean file).
pub const MADV_PAGEOUT: i32 = 21;

/// The page size, bytes.
pub fn page_size() -> usize {
    probe::environment::page_size() as usize
}

/// An anonymous private mapping, unmapped on drop.
pub struct Mapping {
    pub ptr: *mut u8,
    pub len: usize,
}

// SAFETY: the mapping is plain memory owned by this value.
unsafe impl Send for Mapping {}

impl Mapping {
    pub fn anon(len: usize, flags: i32) -> io::Result<Mapping> {
        // SAFETY: anonymous mapping with no address hint.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// [`Mapping::anon`], tried again every `pause` while it fails with
    /// ENOMEM and `deadline` has not passed; with how many tries failed.
    ///
    /// In a memory cgroup at its limit, mmap itself can fail with ENOMEM: the
    /// mapping's kernel structures are charged to the group from the system
    /// call, where a charge that cannot reclaim fails instead of waiting (a
    /// fault would wait, or the OOM killer act). On cgroup v1 with the OOM
    /// killer off, under the guard that raises the limit, one of thrash's 25
    /// consumers failed to start so in a lab on 2026-12-02. The limit is
    /// raised or a page reclaimed within milliseconds, so the caller waits.
    pub fn anon_retrying(
        len: usize,
        flags: i32,
        deadline: std::time::Instant,
        pause: std::time::Duration,
    ) -> io::Result<(Mapping, u32)> {
        retry_enomem(|| Mapping::anon(len, flags), deadline, pause)
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is mapped readable for our lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is mapped writable and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn madvise(&self, advice: i32) -> io::Result<()> {
        madvise(self.ptr, self.len, advice)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what we mapped.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

pub fn madvise(ptr: *mut u8, len: usize, advice: i32) -> io::Result<()> {
    // SAFETY: the caller passes a range it owns.
    if unsafe { libc::madvise(ptr.cast(), len, advice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pidfd (Linux 5.3), closed on drop.
pub struct PidFd(pub i32);

impl PidFd {
    pub fn open(pid: i32) -> io::Result<PidFd> {
        // SAFETY: raw syscall with plain integer arguments.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PidFd(fd as i32))
    }
}

impl Drop for PidFd {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// process_madvise(2) (Linux 5.10) over address ranges of another process.
/// There is no wrapper in libc or rustix, so this is the raw syscall.
/// Returns the number of bytes advised. Another process needs CAP_SYS_NICE (and
/// ptrace read access); one's own does not.
pub fn process_madvise(pidfd: &PidFd, ranges: &[(usize, usize)], advice: i32) -> io::Result<usize> {
    let iov: Vec<libc::iovec> =
        ranges.iter().map(|&(addr, len)| libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len }).collect();
    let mut total = 0usize;
    // The kernel caps one call at UIO_MAXIOV (1024) ranges.
    for chunk in iov.chunks(1024) {
        // SAFETY: iovecs describe ranges in the target process; the kernel checks them.
        let r = unsafe { libc::syscall(libc::SYS_process_madvise, pidfd.0, chunk.as_ptr(), chunk.len(), advice, 0u32) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        total += r as usize;
    }
    Ok(total)
}

/// Calls `f` until it succeeds, fails with anything but ENOMEM, or fails with
/// ENOMEM at or past `deadline` (sleeping `pause` between tries); with the
/// number of tries that failed.
pub fn retry_enomem<T>(
    mut f: impl FnMut() -> io::Result<T>,
    deadline: std::time::Instant,
    pause: std::time::Duration,
) -> io::Result<(T, u32)> {
    let mut failed = 0u32;
    loop {
        match f() {
            Ok(v) => return Ok((v, failed)),
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) && std::time::Instant::now() < deadline => {
                failed = failed.saturating_add(1);
                std::thread::sleep(pause);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether MADV_PAGEOUT works here, tried on a small private mapping.
pub fn try_madvise_pageout() -> Result<(), String> {
    let page = probe::environment::page_size() as usize;
    let mut m = Mapping::anon(4 * page, 0).map_err(|e| format!("mmap failed: {e}"))?;
    m.as_mut_slice().fill(1);
    m.madvise(MADV_PAGEOUT).map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) => "the kernel rejects MADV_PAGEOUT (needs Linux 5.4)".to_string(),
        _ => format!("madvise(MADV_PAGEOUT) failed: {e}"),
    })
}

/// Whether process_madvise works here, tried on this process's own mapping.
pub fn try_process_madvise() -> Result<(), String> {
    let page = probe::environment::page_size() as usize;
    let mut m = Mapping::anon(4 * page, 0).map_err(|e| format!("mmap failed: {e}"))?;
    m.as_mut_slice().fill(1);
    // SAFETY: getpid has no preconditions.
    let fd = PidFd::open(unsafe { libc::getpid() }).map_err(|e| format!("pidfd_open failed: {e}"))?;
    process_madvise(&fd, &[(m.ptr as usize, m.len)], MADV_PAGEOUT).map(|_| ()).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSYS) => "process_madvise is missing (needs Linux 5.10)".to_string(),
        Some(libc::EINVAL) => "process_madvise rejects MADV_PAGEOUT (needs Linux 5.10)".to_string(),
        _ => format!("process_madvise failed: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn enomem() -> io::Error {
        io::Error::from_raw_os_error(libc::ENOMEM)
    }

    #[test]
    fn enomem_is_tried_again_until_it_passes() {
        let mut left = 3;
        let r = retry_enomem(
            || {
                if left > 0 {
                    left -= 1;
                    Err(enomem())
                } else {
                    Ok(7)
                }
            },
            Instant::now() + Duration::from_secs(5),
            Duration::from_millis(1),
        );
        assert_eq!(r.unwrap(), (7, 3));
    }

    #[test]
    fn other_errors_and_a_passed_deadline_fail_at_once() {
        let mut calls = 0;
        let r: io::Result<((), u32)> = retry_enomem(
            || {
                calls += 1;
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            },
            Instant::now() + Duration::from_secs(5),
            Duration::from_millis(1),
        );
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert_eq!(calls, 1);
        // A deadline already passed: one try.
        let mut calls = 0;
        let r: io::Result<((), u32)> = retry_enomem(
            || {
                calls += 1;
                Err(enomem())
            },
            Instant::now(),
            Duration::from_millis(1),
        );
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ENOMEM));
        assert_eq!(calls, 1);
    }

    #[test]
    fn enomem_is_tried_with_a_pause_until_the_deadline() {
        let mut calls = 0u32;
        let start = Instant::now();
        let r: io::Result<((), u32)> = retry_enomem(
            || {
                calls += 1;
                Err(enomem())
            },
            start + Duration::from_millis(30),
            Duration::from_millis(5),
        );
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ENOMEM));
        assert!(start.elapsed() >= Duration::from_millis(30));
        // 5 ms apart over 30 ms: at most 7 tries (a sleep is never shorter
        // than asked), and more than one.
        assert!((2..=7).contains(&calls), "{calls} tries");
    }

    #[test]
    fn a_mapping_that_can_be_made_is_made_at_the_first_try() {
        let page = page_size();
        let (m, failed) =
            Mapping::anon_retrying(4 * page, 0, Instant::now() + Duration::from_secs(1), Duration::from_millis(1))
                .unwrap();
        assert_eq!((m.len, failed), (4 * page, 0));
    }
}
