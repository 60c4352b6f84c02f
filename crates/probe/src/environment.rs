//! The machine a run happened on, recorded with every run so that two runs can be
//! compared honestly (kernel, CPU, RAM, THP, swappiness, swap, zram, zswap, cgroups).

use crate::Probe;
use crate::mountinfo::Layout;
use crate::swaps::SwapArea;
use crate::util::read_into;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZramDevice {
    pub id: u32,
    pub disksize_bytes: u64,
    pub algorithm: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Zswap {
    /// Whether /sys/module/zswap exists at all.
    pub present: bool,
    pub enabled: Option<bool>,
    pub compressor: Option<String>,
    pub max_pool_percent: Option<u64>,
}

/// The multi-generational LRU (/sys/kernel/mm/lru_gen), when the kernel has it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mglru {
    /// The `enabled` bitmask (0x0001 the core, 0x0002 and 0x0004 its page-table
    /// walks); MGLRU is on when it is not 0.
    pub mask: u32,
    pub enabled: bool,
    pub min_ttl_ms: Option<u64>,
}

/// One DAMON worker thread configured through /sys/kernel/mm/damon/admin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Kdamond {
    pub index: u32,
    /// `on` or `off`.
    pub state: String,
    pub pid: Option<i64>,
    pub contexts: Vec<DamonContext>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DamonContext {
    /// `vaddr`, `fvaddr` or `paddr` (physical: every page of the machine).
    pub operations: String,
    /// Each scheme's action (`pageout`, `lru_prio`, `stat`, ...).
    pub schemes: Vec<String>,
}

impl Kdamond {
    /// Running, with a scheme that moves pages (anything but `stat`).
    pub fn moves_pages(&self) -> bool {
        self.state == "on" && self.contexts.iter().any(|c| c.schemes.iter().any(|a| a != "stat"))
    }

    /// "kdamond 0 (pid 76): paddr, schemes pageout".
    pub fn describe(&self) -> String {
        let ctx: Vec<String> = self
            .contexts
            .iter()
            .map(|c| {
                if c.schemes.is_empty() {
                    format!("{}, no scheme", c.operations)
                } else {
                    format!("{}, scheme {}", c.operations, c.schemes.join("+"))
                }
            })
            .collect();
        format!(
            "kdamond {}{} {}: {}",
            self.index,
            self.pid.filter(|&p| p > 0).map(|p| format!(" (pid {p})")).unwrap_or_default(),
            self.state,
            if ctx.is_empty() { "no context".to_string() } else { ctx.join("; ") }
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// None: the kernel has no MGLRU.
    #[serde(default)]
    pub mglru: Option<Mglru>,
    /// DAMON workers configured through sysfs (pagelab never writes to them; a
    /// running one with a pageout scheme moves pages behind an experiment's back).
    #[serde(default)]
    pub damon: Vec<Kdamond>,
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

    pub fn mglru(&self) -> Option<Mglru> {
        let d = self.roots().sys.join("kernel/mm/lru_gen");
        let t = self.read_trim(&d.join("enabled"))?;
        let mask = u32::from_str_radix(t.trim_start_matches("0x"), 16).ok()?;
        Some(Mglru {
            mask,
            enabled: mask != 0,
            min_ttl_ms: self.read_trim(&d.join("min_ttl_ms")).and_then(|v| v.parse().ok()),
        })
    }

    /// The kdamonds under /sys/kernel/mm/damon/admin, read only.
    pub fn damon(&self) -> Vec<Kdamond> {
        let d = self.roots().sys.join("kernel/mm/damon/admin/kdamonds");
        let n: u32 = self.read_trim(&d.join("nr_kdamonds")).and_then(|v| v.parse().ok()).unwrap_or(0);
        (0..n.min(64))
            .map(|i| {
                let k = d.join(i.to_string());
                let nc: u32 = self.read_trim(&k.join("contexts/nr_contexts")).and_then(|v| v.parse().ok()).unwrap_or(0);
                let contexts = (0..nc.min(64))
                    .map(|c| {
                        let cd = k.join(format!("contexts/{c}"));
                        let ns: u32 =
                            self.read_trim(&cd.join("schemes/nr_schemes")).and_then(|v| v.parse().ok()).unwrap_or(0);
                        DamonContext {
                            operations: self.read_trim(&cd.join("operations")).unwrap_or_default(),
                            schemes: (0..ns.min(64))
                                .filter_map(|j| self.read_trim(&cd.join(format!("schemes/{j}/action"))))
                                .collect(),
                        }
                    })
                    .collect();
                Kdamond {
                    index: i,
                    state: self.read_trim(&k.join("state")).unwrap_or_default(),
                    pid: self.read_trim(&k.join("pid")).and_then(|v| v.parse().ok()),
                    contexts,
                }
            })
            .collect()
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
            mglru: self.mglru(),
            damon: self.damon(),
        }
    }
}

/// The system page size, bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as u64 } else { 4096 }
}
