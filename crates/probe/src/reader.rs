//! The reader: kernel files from injectable roots into typed values and Samples.

use crate::cgroup::{self, CgroupSample, CgroupVersion};
use crate::counters::Keys;
use crate::error::ProbeError;
use crate::mountinfo::{self, CgroupMounts};
use crate::sample::{PidSample, Psi, Sample, ZramSample, monotonic_ns};
use crate::util::{FileReader, read_parse};
use crate::{meminfo, pid, pressure, process, stat, swaps, vmstat, zram};
use std::path::{Path, PathBuf};

/// Where the kernel's filesystems are. Tests point these at a fake tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// procfs, normally `/proc`.
    pub proc: PathBuf,
    /// sysfs, normally `/sys`.
    pub sys: PathBuf,
    /// Prefix for other absolute paths named in mountinfo (normally `/`).
    pub fs: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots { proc: "/proc".into(), sys: "/sys".into(), fs: "/".into() }
    }
}

impl Roots {
    /// All three roots inside one directory (a fake tree with `proc/` and `sys/`).
    pub fn under(dir: impl AsRef<Path>) -> Self {
        let d = dir.as_ref();
        Roots { proc: d.join("proc"), sys: d.join("sys"), fs: d.to_path_buf() }
    }

    /// Maps an absolute path as the kernel prints it (a mount point) into these roots.
    pub fn rebase(&self, abs: &str) -> PathBuf {
        let rel = |p: &str| p.trim_start_matches('/').to_string();
        if abs == "/sys" || abs.starts_with("/sys/") {
            self.sys.join(rel(&abs[4..]))
        } else if abs == "/proc" || abs.starts_with("/proc/") {
            self.proc.join(rel(&abs[5..]))
        } else {
            self.fs.join(rel(abs))
        }
    }
}

/// A memory cgroup to sample: its version and its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupTarget {
    pub version: CgroupVersion,
    /// Absolute directory of the group (already rebased).
    pub dir: PathBuf,
    /// Path relative to the hierarchy root, for display.
    pub name: String,
}

/// What to sample besides the system.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub pids: Vec<i32>,
    pub cgroup: Option<CgroupTarget>,
    pub zram: Vec<u32>,
    /// Also read smaps_rollup for each pid (expensive: it walks every mapping).
    pub smaps: bool,
}

/// Reads kernel files. Holds a reusable text buffer so sampling does not allocate
/// a new string per file.
#[derive(Debug)]
pub struct Probe {
    roots: Roots,
    buf: FileReader,
    /// Key tables of the map-shaped files from the previous read (see `counters`).
    keys: KeyCache,
    /// zram algorithms by device id: configuration, read once per device.
    zram_alg: Vec<(u32, Option<String>)>,
}

#[derive(Debug, Default)]
struct KeyCache {
    meminfo: Option<Keys>,
    vmstat: Option<Keys>,
    cg_stat: Option<Keys>,
    cg_events: Option<Keys>,
}

impl Default for Probe {
    fn default() -> Self {
        Probe::new(Roots::default())
    }
}

impl Probe {
    pub fn new(roots: Roots) -> Self {
        Probe { roots, buf: FileReader::new(), keys: KeyCache::default(), zram_alg: Vec::new() }
    }

    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    fn proc(&self, rel: &str) -> PathBuf {
        self.roots.proc.join(rel)
    }

    pub fn meminfo(&mut self) -> Result<Option<meminfo::Meminfo>, ProbeError> {
        let prev = self.keys.meminfo.take();
        let r = read_parse(&self.proc("meminfo"), &mut self.buf, |t| meminfo::parse_with(t, prev.as_ref()))?;
        self.keys.meminfo = r.as_ref().map(|m| m.0.keys().clone()).or(prev);
        Ok(r)
    }
    pub fn vmstat(&mut self) -> Result<Option<vmstat::Vmstat>, ProbeError> {
        let prev = self.keys.vmstat.take();
        let r = read_parse(&self.proc("vmstat"), &mut self.buf, |t| vmstat::parse_with(t, prev.as_ref()))?;
        self.keys.vmstat = r.as_ref().map(|m| m.0.keys().clone()).or(prev);
        Ok(r)
    }
    pub fn stat(&mut self) -> Result<Option<stat::Stat>, ProbeError> {
        read_parse(&self.proc("stat"), &mut self.buf, stat::parse)
    }
    /// `which` is `memory`, `cpu` or `io`.
    pub fn pressure(&mut self, which: &str) -> Result<Option<pressure::Pressure>, ProbeError> {
        read_parse(&self.proc(&format!("pressure/{which}")), &mut self.buf, pressure::parse)
    }
    pub fn swaps(&mut self) -> Result<Option<Vec<swaps::SwapArea>>, ProbeError> {
        read_parse(&self.proc("swaps"), &mut self.buf, swaps::parse)
    }
    pub fn pid_status(&mut self, pid: i32) -> Result<Option<pid::PidStatus>, ProbeError> {
        read_parse(&self.proc(&format!("{pid}/status")), &mut self.buf, pid::parse_status)
    }
    /// `pid`'s statm (this process's, `self`, for none), held open for
    /// readings that allocate nothing ([`pid::Statm`]).
    pub fn open_statm(&self, pid: Option<i32>) -> std::io::Result<pid::Statm> {
        let who = pid.map_or_else(|| "self".to_string(), |p| p.to_string());
        pid::Statm::open(&self.proc(&format!("{who}/statm")))
    }
    pub fn pid_stat(&mut self, pid: i32) -> Result<Option<pid::PidStat>, ProbeError> {
        read_parse(&self.proc(&format!("{pid}/stat")), &mut self.buf, pid::parse_stat)
    }
    pub fn pid_smaps_rollup(&mut self, pid: i32) -> Result<Option<pid::SmapsRollup>, ProbeError> {
        read_parse(&self.proc(&format!("{pid}/smaps_rollup")), &mut self.buf, pid::parse_smaps_rollup)
    }
    /// /proc/<pid>/maps: the process's mappings.
    pub fn pid_maps(&mut self, pid: i32) -> Result<Option<Vec<process::MapEntry>>, ProbeError> {
        read_parse(&self.proc(&format!("{pid}/maps")), &mut self.buf, process::parse_maps)
    }
    /// /proc/<pid>/smaps, per mapping; None when the process is gone.
    pub fn pid_smaps(&mut self, pid: i32) -> Result<Option<Vec<process::SmapsEntry>>, ProbeError> {
        read_parse(&self.proc(&format!("{pid}/smaps")), &mut self.buf, process::parse_smaps)
    }
    /// /proc/<pid>/pagemap: the entries (see [`process::PageEntry`]) of the
    /// `pages` pages from `start` (a multiple of `page`). Binary, read in
    /// chunks of 4096 entries.
    pub fn pid_pagemap(
        &self,
        pid: i32,
        start: usize,
        pages: usize,
        page: usize,
    ) -> std::io::Result<Vec<process::PageEntry>> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(self.proc(&format!("{pid}/pagemap")))?;
        let mut out = Vec::with_capacity(pages);
        let mut buf = vec![0u8; 8 * 4096];
        let mut done = 0usize;
        while done < pages {
            let k = (pages - done).min(4096);
            let off = ((start / page + done) * 8) as u64;
            f.read_exact_at(&mut buf[..k * 8], off)?;
            out.extend(
                buf[..k * 8]
                    .chunks_exact(8)
                    .map(|e| process::PageEntry(u64::from_le_bytes(e.try_into().expect("8 bytes")))),
            );
            done += k;
        }
        Ok(out)
    }
    /// MGLRU's debugfs file (`/sys/kernel/debug/lru_gen`): its memory cgroups,
    /// nodes and generations. None when it is absent (no MGLRU, or debugfs not
    /// mounted).
    pub fn lru_gen(&mut self) -> Result<Option<Vec<crate::lru_gen::Memcg>>, ProbeError> {
        read_parse(&self.lru_gen_path(), &mut self.buf, crate::lru_gen::parse)
    }
    /// Where MGLRU's debugfs file is under these roots.
    pub fn lru_gen_path(&self) -> PathBuf {
        self.roots.sys.join("kernel/debug/lru_gen")
    }
    /// Whether the kernel has idle page tracking (/sys/kernel/mm/page_idle/bitmap).
    pub fn page_idle_present(&self) -> bool {
        self.roots.sys.join("kernel/mm/page_idle/bitmap").exists()
    }
    /// /proc/<pid>/comm, trimmed; None when the process is gone.
    pub fn pid_comm(&mut self, pid: i32) -> Option<String> {
        read_parse(&self.proc(&format!("{pid}/comm")), &mut self.buf, |t| Ok(t.trim().to_string())).ok().flatten()
    }
    /// The process table, largest RSS first. Processes without an RSS (kernel
    /// threads, zombies) and those that exit during the scan are left out.
    pub fn processes(&mut self) -> Vec<process::ProcessInfo> {
        let pids: Vec<i32> = std::fs::read_dir(&self.roots.proc)
            .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).collect())
            .unwrap_or_default();
        let mut v: Vec<process::ProcessInfo> = pids
            .into_iter()
            .filter_map(|pid| {
                let comm = self.pid_comm(pid)?;
                let rss = self.pid_status(pid).ok().flatten()?.vm_rss?;
                (rss > 0).then_some(process::ProcessInfo { pid, comm, rss })
            })
            .collect();
        v.sort_by_key(|p| (std::cmp::Reverse(p.rss), p.pid));
        v
    }
    /// The memory cgroup that `pid` (this process, for None) belongs to, from
    /// /proc/<pid>/cgroup and the memory controller's mount. None where there is
    /// no memory controller, no such process, or no memory line.
    pub fn memory_cgroup_of(&mut self, pid: Option<i32>) -> Result<Option<CgroupTarget>, ProbeError> {
        let Some((version, root)) = self.memory_controller()? else { return Ok(None) };
        let file = self.proc(&pid.map_or_else(|| "self/cgroup".to_string(), |n| format!("{n}/cgroup")));
        let rel = read_parse(&file, &mut self.buf, |t| Ok(process::parse_proc_cgroup(t, version)))?.flatten();
        Ok(rel.map(|rel| CgroupTarget { version, dir: root.join(rel.trim_start_matches('/')), name: rel }))
    }
    /// The compression algorithms the kernel's crypto API has loaded (/proc/crypto).
    pub fn crypto_compressors(&mut self) -> Vec<String> {
        read_parse(&self.proc("crypto"), &mut self.buf, |t| Ok(process::parse_crypto_compressors(t)))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
    /// The first CPU's flags (/proc/cpuinfo).
    pub fn cpu_flags(&mut self) -> Vec<String> {
        read_parse(&self.proc("cpuinfo"), &mut self.buf, |t| Ok(process::parse_cpu_flags(t)))
            .ok()
            .flatten()
            .unwrap_or_default()
    }
    pub fn mounts(&mut self) -> Result<Option<Vec<mountinfo::Mount>>, ProbeError> {
        read_parse(&self.proc("self/mountinfo"), &mut self.buf, mountinfo::parse)
    }
    pub fn cgroup_mounts(&mut self) -> Result<CgroupMounts, ProbeError> {
        Ok(self.mounts()?.map(|m| CgroupMounts::from_mounts(&m)).unwrap_or_default())
    }

    /// Where the memory controller lives: v1 hierarchy if one has it, else the
    /// unified hierarchy if its root lists `memory` in cgroup.controllers.
    pub fn memory_controller(&mut self) -> Result<Option<(CgroupVersion, PathBuf)>, ProbeError> {
        let m = self.cgroup_mounts()?;
        if let Some(v1) = &m.v1_memory {
            return Ok(Some((CgroupVersion::V1, self.roots.rebase(v1))));
        }
        if let Some(u) = &m.unified {
            let root = self.roots.rebase(u);
            if self.unified_controllers(&root)?.iter().any(|c| c == "memory") {
                return Ok(Some((CgroupVersion::V2, root)));
            }
        }
        Ok(None)
    }

    /// Controllers listed in a unified hierarchy's `cgroup.controllers`.
    pub fn unified_controllers(&mut self, dir: &Path) -> Result<Vec<String>, ProbeError> {
        if !self.buf.read(&dir.join("cgroup.controllers"))? {
            return Ok(Vec::new());
        }
        Ok(self.buf.text.split_ascii_whitespace().map(str::to_string).collect())
    }

    /// zram devices present in /sys/block, by number.
    pub fn zram_devices(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = std::fs::read_dir(self.roots.sys.join("block"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("zram")?.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    fn zram_dir(&self, id: u32) -> PathBuf {
        self.roots.sys.join(format!("block/zram{id}"))
    }

    pub fn zram_mm_stat(&mut self, id: u32) -> Result<Option<zram::MmStat>, ProbeError> {
        let p = self.zram_dir(id).join("mm_stat");
        read_parse(&p, &mut self.buf, zram::parse_mm_stat)
    }
    pub fn zram_io_stat(&mut self, id: u32) -> Result<Option<zram::IoStat>, ProbeError> {
        let p = self.zram_dir(id).join("io_stat");
        read_parse(&p, &mut self.buf, zram::parse_io_stat)
    }
    pub fn zram_comp_algorithm(&mut self, id: u32) -> Result<Option<zram::CompAlgorithm>, ProbeError> {
        let p = self.zram_dir(id).join("comp_algorithm");
        read_parse(&p, &mut self.buf, zram::parse_comp_algorithm)
    }
    pub fn zram_disksize(&mut self, id: u32) -> Result<Option<u64>, ProbeError> {
        let p = self.zram_dir(id).join("disksize");
        read_parse(&p, &mut self.buf, crate::util::parse_single_u64)
    }

    pub fn zram_sample(&mut self, id: u32) -> Result<ZramSample, ProbeError> {
        let disksize = self.zram_disksize(id)?;
        // mm_stat of an unset device is all zeros; still read it, it is cheap.
        Ok(ZramSample {
            id,
            mm_stat: self.zram_mm_stat(id)?,
            io_stat: self.zram_io_stat(id)?,
            disksize,
            comp_algorithm: match self.zram_alg.iter().find(|(i, _)| *i == id) {
                Some((_, a)) => a.clone(),
                None => {
                    let a = self.zram_comp_algorithm(id)?.and_then(|c| c.selected);
                    self.zram_alg.push((id, a.clone()));
                    a
                }
            },
        })
    }

    /// Reads a memory cgroup's files according to its version.
    pub fn cgroup_sample(&mut self, t: &CgroupTarget) -> Result<CgroupSample, ProbeError> {
        let d = &t.dir;
        let b = &mut self.buf;
        let (ks, ke) = (self.keys.cg_stat.take(), self.keys.cg_events.take());
        let stat = |t: &str| cgroup::parse_keyed_with(t, ks.as_ref());
        let events = |t: &str| cgroup::parse_keyed_with(t, ke.as_ref());
        let mut s = CgroupSample { version: Some(t.version), path: t.name.clone(), ..Default::default() };
        match t.version {
            CgroupVersion::V2 => {
                s.usage_bytes = read_parse(&d.join("memory.current"), b, cgroup::parse_counter)?;
                s.limit_bytes = read_parse(&d.join("memory.max"), b, cgroup::parse_v2_limit)?;
                s.high_bytes = read_parse(&d.join("memory.high"), b, cgroup::parse_v2_limit)?;
                s.swap_bytes = read_parse(&d.join("memory.swap.current"), b, cgroup::parse_counter)?;
                s.stat = read_parse(&d.join("memory.stat"), b, stat)?;
                s.events = read_parse(&d.join("memory.events"), b, events)?;
                s.pressure = read_parse(&d.join("memory.pressure"), b, pressure::parse)?;
            }
            CgroupVersion::V1 => {
                s.usage_bytes = read_parse(&d.join("memory.usage_in_bytes"), b, cgroup::parse_counter)?;
                s.limit_bytes = read_parse(&d.join("memory.limit_in_bytes"), b, cgroup::parse_v1_limit)?;
                s.memsw_usage_bytes = read_parse(&d.join("memory.memsw.usage_in_bytes"), b, cgroup::parse_counter)?;
                s.failcnt = read_parse(&d.join("memory.failcnt"), b, cgroup::parse_counter)?;
                s.stat = read_parse(&d.join("memory.stat"), b, stat)?;
                s.events = read_parse(&d.join("memory.oom_control"), b, events)?;
                s.swap_bytes = match (s.memsw_usage_bytes, s.usage_bytes) {
                    (Some(sw), Some(u)) => Some(sw.saturating_sub(u)),
                    _ => s.stat.as_ref().and_then(|m| m.get("total_swap").or_else(|| m.get("swap"))),
                };
                // PSI per cgroup exists only on v2.
            }
        }
        self.keys.cg_stat = s.stat.as_ref().map(|c| c.keys().clone()).or(ks);
        self.keys.cg_events = s.events.as_ref().map(|c| c.keys().clone()).or(ke);
        Ok(s)
    }

    /// Takes one full sample: the system, plus the requested targets.
    pub fn sample(&mut self, targets: &Targets) -> Result<Sample, ProbeError> {
        let t_ns = monotonic_ns();
        let mut s = Sample {
            t_ns,
            meminfo: self.meminfo()?,
            vmstat: self.vmstat()?,
            stat: self.stat()?,
            psi: Psi { memory: self.pressure("memory")?, cpu: self.pressure("cpu")?, io: self.pressure("io")? },
            ..Default::default()
        };
        for &pid in &targets.pids {
            let status = self.pid_status(pid)?;
            let stat = self.pid_stat(pid)?;
            let smaps_rollup = if targets.smaps && status.is_some() { self.pid_smaps_rollup(pid)? } else { None };
            s.pids.push(PidSample { pid, status, stat, smaps_rollup });
        }
        if let Some(cg) = &targets.cgroup {
            s.cgroup = Some(self.cgroup_sample(cg)?);
        }
        for &id in &targets.zram {
            s.zram.push(self.zram_sample(id)?);
        }
        Ok(s)
    }
}
