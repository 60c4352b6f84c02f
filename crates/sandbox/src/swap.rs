//! Swap areas: the swap header, swapon and swapoff.
//!
//! The header is written here rather than by calling mkswap(8). Its format
//! (include/linux/swap.h, `union swap_header`) is one page: 1024 bytes of boot
//! block, then `version` (u32 = 1), `last_page` (u32), `nr_badpages` (u32 = 0),
//! a 16-byte UUID, a 16-byte volume label, padding, and the magic `SWAPSPACE2` in
//! the last 10 bytes of the page. Native endianness.

use crate::error::{Result, SandboxError};
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Builds a swap header page for an area of `size_bytes`.
pub fn header(size_bytes: u64, page_size: usize, uuid: [u8; 16]) -> Result<Vec<u8>> {
    let pages = size_bytes / page_size as u64;
    if pages < 10 {
        return Err(SandboxError::Invalid(format!(
            "a swap area needs at least 10 pages ({} bytes); got {size_bytes} bytes",
            10 * page_size
        )));
    }
    let last_page = u32::try_from(pages - 1)
        .map_err(|_| SandboxError::Invalid(format!("swap area of {size_bytes} bytes is too large")))?;
    let mut page = vec![0u8; page_size];
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    page[1032..1036].copy_from_slice(&0u32.to_ne_bytes());
    page[1036..1052].copy_from_slice(&uuid);
    let label = b"pagelab";
    page[1052..1052 + label.len()].copy_from_slice(label);
    page[page_size - 10..].copy_from_slice(b"SWAPSPACE2");
    Ok(page)
}

/// A random version-4 UUID from /dev/urandom (or the clock when that fails).
pub fn uuid() -> [u8; 16] {
    let mut u = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut u)).is_err() {
        u[..8].copy_from_slice(&probe::sample::monotonic_ns().to_ne_bytes());
    }
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}

/// Writes a swap header at the start of `path` (a block device or a file).
pub fn write_header(path: &Path, size_bytes: u64) -> Result<()> {
    let page = header(size_bytes, probe::environment::page_size() as usize, uuid())?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| SandboxError::io("opening for the swap header", path, e))?;
    f.write_all(&page).map_err(|e| SandboxError::io("writing the swap header", path, e))?;
    f.sync_all().map_err(|e| SandboxError::io("syncing the swap header", path, e))
}

fn cpath(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("path without NUL")
}

const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

/// swapon(2) with a priority (0..=32767; higher is used first).
pub fn swapon(path: &Path, priority: i32) -> Result<()> {
    let flags = SWAP_FLAG_PREFER | (priority.clamp(0, SWAP_FLAG_PRIO_MASK) & SWAP_FLAG_PRIO_MASK);
    let c = cpath(path);
    // SAFETY: valid C string.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        return Err(SandboxError::io("swapon", path, std::io::Error::last_os_error()));
    }
    Ok(())
}

/// swapoff(2). Pages in the area are read back into memory first, by the kernel.
///
/// ENOMEM means some swapped page could not be charged back to its memory cgroup,
/// which happens when a group at its limit (not necessarily ours: any process may
/// swap to any active area) has pages here. That often clears within moments, so
/// it is retried a few times before giving up with an explanation.
pub fn swapoff(path: &Path) -> Result<()> {
    let c = cpath(path);
    let mut attempt = 0;
    loop {
        // SAFETY: valid C string.
        if unsafe { libc::swapoff(c.as_ptr()) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        attempt += 1;
        if e.raw_os_error() == Some(libc::ENOMEM) && attempt < 5 {
            std::thread::sleep(std::time::Duration::from_millis(500));
            continue;
        }
        if e.raw_os_error() == Some(libc::ENOMEM) {
            return Err(SandboxError::Other(format!(
                "swapoff {}: the kernel could not bring swapped pages back (ENOMEM): a memory cgroup at its limit has pages in this area; run `pagelab restore` again once it has freed memory",
                path.display()
            )));
        }
        return Err(SandboxError::io("swapoff", path, e));
    }
}

/// Active swap areas, from /proc/swaps.
pub fn active() -> Vec<probe::swaps::SwapArea> {
    probe::Probe::default().swaps().ok().flatten().unwrap_or_default()
}

/// Active swap areas that are not pagelab's (a run's zram or swap file, live or
/// left by a dead run): the user's own swap, on this machine (a command's
/// edge; a run reads it through its sandbox: `Sandbox::user_swaps`).
pub fn user_areas() -> Vec<probe::swaps::SwapArea> {
    user_areas_of(&mut probe::Probe::default())
}

/// The active swap areas `p` reads that no pagelab journal made: on the
/// machine's own tree, every run's journals' (wherever they are kept);
/// on another tree (a fake one in tests), every area it lists.
pub fn user_areas_of(p: &mut probe::Probe) -> Vec<probe::swaps::SwapArea> {
    let journals = if *p.roots() == probe::Roots::default() { vec![crate::journal::dir()] } else { vec![] };
    user_areas_in(p, &journals)
}

/// The active swap areas `p` reads that no journal in the directories
/// `journals` made: the user's own swap on the machine `p` reads.
pub fn user_areas_in(p: &mut probe::Probe, journals: &[std::path::PathBuf]) -> Vec<probe::swaps::SwapArea> {
    let ours: Vec<std::path::PathBuf> = journals.iter().flat_map(|d| crate::journal::pagelab_swaps(d)).collect();
    let same = |a: &Path, b: &Path| a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    let active = p.swaps().ok().flatten().unwrap_or_default();
    active.into_iter().filter(|a| !ours.iter().any(|o| same(Path::new(&a.filename), o))).collect()
}

/// Whether `path` is an active swap area (compared by canonical path).
pub fn is_active(path: &Path) -> bool {
    let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    active().iter().any(|a| {
        let p = Path::new(&a.filename);
        p == path || p == want || std::fs::canonicalize(p).is_ok_and(|c| c == want)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_layout() {
        let h = super::header(64 << 20, 4096, [7; 16]).unwrap();
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), (64 << 20) / 4096 - 1);
        assert!(h[..1024].iter().all(|b| *b == 0));
        assert!(super::header(4096 * 5, 4096, [0; 16]).is_err());
    }
}
