//! The compressibility of a process's real pages: read with
//! process_vm_readv, compressed one by one (lz4 and zstd, as the stores
//! would), split into cold and hot as the source can tell. assess measures
//! it; rightsize samples it for its prediction.

use probe::Probe;
use probe::process::SmapsEntry;
use serde::{Deserialize, Serialize};
use workloads::compress::{PageCompressor, same_filled};
use workloads::observe::ExperimentError;

/// Google's zswap does not store a page that compresses to more than this.
pub const REJECT_ABOVE: usize = 2990;

fn err(msg: String) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg))
}

/// Per-page compressibility of a set of anonymous pages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Compressibility {
    /// Pages read (a sample when there were more than `--max-read` allows).
    pub pages: u64,
    /// Pages that are all zero, and pages filled with one repeated 8-byte value
    /// (zram and zswap store both without compressing).
    pub zero_pages: u64,
    pub same_filled_pages: u64,
    /// Compressed bytes over the pages (a page that does not shrink counts whole).
    pub lz4_bytes: u64,
    pub zstd_bytes: u64,
    /// Pages that compress to more than 2990 bytes (Google's zswap rejects those).
    pub lz4_over_2990: u64,
    pub zstd_over_2990: u64,
}

impl Compressibility {
    pub fn add(&mut self, o: &Compressibility) {
        self.pages += o.pages;
        self.zero_pages += o.zero_pages;
        self.same_filled_pages += o.same_filled_pages;
        self.lz4_bytes += o.lz4_bytes;
        self.zstd_bytes += o.zstd_bytes;
        self.lz4_over_2990 += o.lz4_over_2990;
        self.zstd_over_2990 += o.zstd_over_2990;
    }
    /// Original ÷ compressed (a ratio as compressor studies quote it), with
    /// same-filled pages costing nothing, as the stores keep them.
    pub fn ratio(&self, lz4: bool, page: u64) -> f64 {
        let c = if lz4 { self.lz4_bytes } else { self.zstd_bytes };
        if c == 0 { f64::NAN } else { (self.pages * page) as f64 / c as f64 }
    }
}

/// Compressibility of the anonymous pages read, all together and split into
/// cold and hot by each mapping's referenced share at the longest window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct Compress {
    pub page_size: u64,
    /// Anonymous pages resident when reading began, and how many were read.
    pub resident_pages: u64,
    pub all: Compressibility,
    pub cold: Compressibility,
    pub hot: Compressibility,
    #[serde(default = "record::results::nan")]
    pub ratio_lz4: f64,
    #[serde(default = "record::results::nan")]
    pub ratio_zstd: f64,
    /// How the pages were split into cold and hot.
    pub split: String,
}

/// The process's smaps; an error naming `what` was being read when it exited.
pub fn smaps(p: &mut Probe, pid: i32, what: &str) -> Result<Vec<SmapsEntry>, ExperimentError> {
    match p.pid_smaps(pid) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(ExperimentError::Worker(format!("pid {pid} exited during {what}"))),
        Err(e) => Err(err(format!("/proc/{pid}/smaps: {e}"))),
    }
}

/// Reads `buf.len()` bytes at `addr` of the process.
pub fn vm_read(pid: i32, addr: usize, buf: &mut [u8]) -> std::io::Result<usize> {
    let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: one local iovec over our buffer; the kernel checks the remote one.
    let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// How the pages read are split into cold and hot.
pub enum Split<'a> {
    /// Page by page: whether the page at an address is cold (DAMON).
    PerPage(&'a dyn Fn(usize) -> bool),
    /// By each mapping's referenced share (the referenced bits).
    PerMapping,
    /// Not at all (MGLRU counts a group's pages, not which ones).
    None,
}

/// Reads and compresses the resident anonymous pages, split into cold and hot
/// as `split` can tell.
pub fn compressibility(
    probe: &Probe,
    pid: i32,
    maps: &[SmapsEntry],
    max_read: u64,
    split: Split,
    stop: &dyn Fn() -> bool,
) -> Result<Compress, ExperimentError> {
    let page = probe::environment::page_size() as usize;
    let anon: Vec<&SmapsEntry> = maps.iter().filter(|m| m.map.is_private() && m.anonymous > 0).collect();
    let mut present = Vec::new();
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

/// The compressibility of a running process's resident anonymous pages, split
/// into cold and hot by each mapping's referenced share (the referenced bits
/// since they were last cleared): what `assess` measures, for another
/// experiment's prediction (rightsize's knees). At most `max_read` bytes are
/// read, evenly over the pages.
pub fn sample_compressibility(
    p: &mut Probe,
    pid: i32,
    max_read: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Compress, ExperimentError> {
    let maps = smaps(p, pid, "the compressibility sample")?;
    compressibility(p, pid, &maps, max_read, Split::PerMapping, stop)
}
