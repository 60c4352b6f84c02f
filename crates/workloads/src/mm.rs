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
