//! The compressibility of the real pages: read with process_vm_readv,
//! compressed one by one, split into cold and hot as the source can tell.

use super::*;

/// Reads `buf.len()` bytes at `addr` of the process.
pub(super) fn vm_read(pid: i32, addr: usize, buf: &mut [u8]) -> std::io::Result<usize> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: one local iovec over our buffer; the kernel checks the remote one.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// How the pages read are split into cold and hot.
pub(super) enum Split<'a> {
    /// Page by page: whether the page at an address is cold (DAMON).
    PerPage(&'a dyn Fn(usize) -> bool),
    /// By each mapping's referenced share (the referenced bits).
    PerMapping,
    /// Not at all (MGLRU counts a group's pages, not which ones).
    None,
}

/// Reads and compresses the resident anonymous pages, split into cold and hot
/// as `split` can tell.
pub(super) fn compressibility(
    pid: i32,
    maps: &[SmapsEntry],
    max_read: u64,
    split: Split,
    stop: &dyn Fn() -> bool,
) -> Result<Compress, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let anon: Vec<&SmapsEntry> = maps.iter().filter(|m| m.map.is_private() && m.anonymous > 0).collect();
    let mut present = Vec::new();
    let probe = Probe::default();
    for m in &anon {
        let n = m.map.len() / page;
        let p = probe.pid_pagemap(pid, m.map.start, n, page).map_err(|e| err(format!("/proc/{pid}/pagemap: {e}")))?;
        present.push(p.into_iter().map(|e| e.present()).collect::<Vec<bool>>());
    }
    let resident: u64 = present.iter().map(|p| p.iter().filter(|x| **x).count() as u64).sum();
    let step = resident.div_ceil((max_read / page as u64).max(1)).max(1);
    let mut pc = PageCompressor::new(page);
    let mut out = Compress { page_size: page as u64, resident_pages: resident, ..Default::default() };
    let mut buf = vec![0u8; page];
    let mut seen = 0u64;
    for (m, pres) in anon.iter().zip(&present) {
        // This mapping's hot share; its pages are dealt to hot and cold in that
        // proportion, evenly along the mapping (the share is per mapping only).
        let share = if m.rss == 0 { 0.0 } else { (m.referenced.min(m.rss)) as f64 / m.rss as f64 };
        let mut k = 0u64;
        for (i, _) in pres.iter().enumerate().filter(|(_, p)| **p) {
            seen += 1;
            if (seen - 1) % step != 0 {
                continue;
            }
            if stop() {
                return Err(ExperimentError::Interrupted);
            }
            let addr = m.map.start + i * page;
            match vm_read(pid, addr, &mut buf) {
                Ok(n) if n == page => {}
                Ok(_) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    return Err(ExperimentError::Worker(format!("pid {pid} exited while its pages were read")));
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                    return Err(err(format!(
                        "cannot read pid {pid}'s memory (process_vm_readv: {e}); assess needs ptrace access: be its owner (with kernel.yama.ptrace_scope 0) or root"
                    )));
                }
                Err(_) => continue, // unmapped meanwhile
            }
            let mut c = Compressibility { pages: 1, ..Default::default() };
            match same_filled(&buf) {
                Some(0) => c.zero_pages = 1,
                Some(_) => c.same_filled_pages = 1,
                None => {
                    let (l, z) = pc.sizes(&buf);
                    c.lz4_bytes = l as u64;
                    c.zstd_bytes = z as u64;
                    c.lz4_over_2990 = (l > REJECT_ABOVE) as u64;
                    c.zstd_over_2990 = (z > REJECT_ABOVE) as u64;
                }
            }
            let hot = match split {
                Split::PerPage(cold) => Some(!cold(addr)),
                Split::PerMapping => Some(((k + 1) as f64 * share).floor() > (k as f64 * share).floor()),
                Split::None => None,
            };
            k += 1;
            out.all.add(&c);
            match hot {
                Some(true) => out.hot.add(&c),
                Some(false) => out.cold.add(&c),
                None => {}
            }
        }
    }
    out.ratio_lz4 = out.all.ratio(true, page as u64);
    out.ratio_zstd = out.all.ratio(false, page as u64);
    out.split = match split {
        Split::PerPage(_) => "per page: cold when DAMON's region holding it went unaccessed for the longest window",
        Split::PerMapping => "per mapping: each mapping's pages dealt to hot and cold by its referenced share",
        Split::None => "not split: MGLRU counts the group's pages per generation, not which pages",
    }
    .into();
    Ok(out)
}
