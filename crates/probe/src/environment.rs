//! The machine a run happened on, recorded with every run so that two runs can be
//! compared honestly (kernel, CPU, RAM, THP, swappiness, swap, zram, zswap, cgroups).

use crate::Probe;
use crate::mountinfo::Layout;
use crate::swaps::SwapArea;
use crate::util::read_into;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZramDevice {
    pub id: u32,
    pub disksize_bytes: u64,
    pub algorithm: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Zswap {
    /// Whether /sys/module/zswap exists at all.
    pub present: bool,
    pub enabled: Option<bool>,
    pub compressor: Option<String>,
    pub max_pool_percent: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub ram_bytes: u64,
    pub page_size: u64,
    /// Selected mode of /sys/kernel/mm/transparent_hugepage/enabled.
    pub thp: Option<String>,
    pub swappiness: Option<u64>,
    pub page_cluster: Option<u64>,
    pub swaps: Vec<SwapArea>,
    pub zram: Vec<ZramDevice>,
    pub zswap: Zswap,
    pub cgroup_layout: Option<Layout>,
    /// `v1` or `v2`: where the memory controller is, if anywhere.
    pub memory_controller: Option<String>,
    pub psi: bool,
}

/// The bracketed choice in a sysfs "a [b] c" file.
pub fn selected_choice(text: &str) -> Option<String> {
    text.split_ascii_whitespace().find_map(|t| t.strip_prefix('[')?.strip_suffix(']').map(str::to_string))
}

impl Probe {
    fn read_trim(&self, path: &std::path::Path) -> Option<String> {
        let mut s = String::new();
        read_into(path, &mut s).ok().filter(|b| *b).map(|_| s.trim().to_string())
    }

    pub fn zswap(&self) -> Zswap {
        let d = self.roots().sys.join("module/zswap/parameters");
        if !d.exists() {
            return Zswap::default();
        }
        Zswap {
            present: true,
            enabled: self.read_trim(&d.join("enabled")).map(|v| v == "Y" || v == "1"),
            compressor: self.read_trim(&d.join("compressor")),
            max_pool_percent: self.read_trim(&d.join("max_pool_percent")).and_then(|v| v.parse().ok()),
        }
    }

    pub fn thp_mode(&self) -> Option<String> {
        self.read_trim(&self.roots().sys.join("kernel/mm/transparent_hugepage/enabled"))
            .and_then(|t| selected_choice(&t))
    }

    pub fn sysctl_u64(&self, name: &str) -> Option<u64> {
        self.read_trim(&self.roots().proc.join("sys").join(name.replace('.', "/")))?.parse().ok()
    }

    pub fn kernel_release(&self) -> String {
        self.read_trim(&self.roots().proc.join("sys/kernel/osrelease")).unwrap_or_default()
    }

    pub fn environment(&mut self) -> Environment {
        let proc = self.roots().proc.clone();
        let cpuinfo = self.read_trim(&proc.join("cpuinfo")).unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        let mounts = self.cgroup_mounts().ok();
        let memory_controller = self.memory_controller().ok().flatten().map(|(v, _)| v.to_string());
        let zram = self
            .zram_devices()
            .into_iter()
            .map(|id| ZramDevice {
                id,
                disksize_bytes: self.zram_disksize(id).ok().flatten().unwrap_or(0),
                algorithm: self.zram_comp_algorithm(id).ok().flatten().and_then(|c| c.selected),
            })
            .collect();
        Environment {
            hostname: self.read_trim(&proc.join("sys/kernel/hostname")).unwrap_or_default(),
            kernel: self.kernel_release(),
            cpu_model,
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            ram_bytes: self.meminfo().ok().flatten().and_then(|m| m.total()).unwrap_or(0),
            page_size: page_size(),
            thp: self.thp_mode(),
            swappiness: self.sysctl_u64("vm.swappiness"),
            page_cluster: self.sysctl_u64("vm.page-cluster"),
            swaps: self.swaps().ok().flatten().unwrap_or_default(),
            zram,
            zswap: self.zswap(),
            cgroup_layout: mounts.map(|m| m.layout()),
            memory_controller,
            psi: proc.join("pressure/memory").exists(),
        }
    }
}

/// The system page size, bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}
