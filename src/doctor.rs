//! `pagelab doctor`: what this machine supports, and which experiments that affects.

use crate::cli::DoctorArgs;
use experiments::{Need, affected_by};
use sandbox::privilege::{self, CAP_IPC_LOCK, CAP_SYS_ADMIN, CAP_SYS_NICE, CAP_SYS_RESOURCE};
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Avail {
    Available,
    Missing,
    NeedsRoot,
    Info,
}

impl Avail {
    fn word(self) -> &'static str {
        match self {
            Avail::Available => "available",
            Avail::Missing => "missing",
            Avail::NeedsRoot => "needs root",
            Avail::Info => "",
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Check {
    pub name: &'static str,
    pub status: Avail,
    pub detail: String,
    /// Experiments that cannot run fully without this.
    pub affects: Vec<&'static str>,
}

/// Everything doctor found: the checks for humans, the JSON for machines.
pub struct Findings {
    pub checks: Vec<Check>,
    pub json: DoctorReport,
}

/// What `pagelab doctor --json` prints (schema/doctor-output.schema.json is
/// generated from this type): what the machine supports, read without
/// changing anything, and the checks a human reads.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorReport {
    pub kernel: Kernel,
    pub root: Root,
    pub cgroup: Cgroup,
    pub swap: Swap,
    pub zram: Zram,
    pub zswap: probe::environment::Zswap,
    pub mglru: Mglru,
    pub damon: Damon,
    pub psi: Psi,
    /// Transparent huge pages' mode (the bracketed word of
    /// /sys/kernel/mm/transparent_hugepage/enabled); null where it is missing.
    pub thp: Option<String>,
    pub madvise_pageout: Works,
    pub process_madvise: Works,
    /// Bytes.
    pub page_size: u64,
    pub ram_bytes: u64,
    pub cpus: usize,
    /// The machine's run-to-run noise: a fixed CPU loop timed `runs` times, and
    /// CPU steal meanwhile.
    pub noise: workloads::noise::Noise,
    /// The checks, as `pagelab doctor` prints them.
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Kernel {
    /// `uname -r`.
    pub release: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Root {
    pub is_root: bool,
    /// The effective capabilities pagelab's experiments use.
    pub capabilities: Capabilities,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Capabilities {
    pub cap_sys_admin: bool,
    pub cap_sys_nice: bool,
    pub cap_ipc_lock: bool,
    pub cap_sys_resource: bool,
}

/// The cgroup layout and where the memory controller is.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Cgroup {
    pub layout: probe::mountinfo::Layout,
    /// `v1` or `v2`; null where no memory controller is mounted.
    pub memory_controller: Option<String>,
    pub memory_root: Option<String>,
    pub v1_memory_mount: Option<String>,
    pub unified_mount: Option<String>,
    /// The controllers the unified hierarchy offers (cgroup.controllers).
    pub unified_controllers: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Swap {
    pub active: bool,
    /// /proc/swaps.
    pub devices: Vec<probe::swaps::SwapArea>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Zram {
    pub present: bool,
    pub hot_add: bool,
    pub algorithms: Vec<String>,
    /// Which device listed the algorithms: an existing one, one doctor
    /// --probe-zram added and removed, or none.
    pub algorithms_from: String,
    pub devices: Vec<probe::environment::ZramDevice>,
}

/// The multi-generational LRU; `mask` and `min_ttl_ms` are absent where
/// the kernel has none.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Mglru {
    pub present: bool,
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ttl_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Damon {
    /// DAMON workers configured through /sys/kernel/mm/damon/admin (pagelab
    /// never writes to them).
    pub kdamonds: Vec<probe::environment::Kdamond>,
    /// How many of them run a scheme that moves pages.
    pub moving_pages: usize,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Psi {
    /// All three of memory, cpu and io.
    pub present: bool,
    pub files: Vec<String>,
}

/// Whether a call works on this kernel, and its error where it does not.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Works {
    pub works: bool,
    pub error: Option<String>,
    /// The capability the call needs on other processes' memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_processes_need: Option<String>,
}

/// The checks, reading only: nothing on the machine changes.
pub fn examine() -> Findings {
    examine_in(&mut probe::Probe::default(), false)
}

/// [`examine`] with the kernel's files read through `p` (a fake tree in tests).
/// The capability and madvise checks are this process's own. `probe_zram`
/// (`doctor --probe-zram`, root) may add a zram device of pagelab's own to
/// read its algorithms and remove it at once, journaled like any change.
pub fn examine_in(p: &mut probe::Probe, probe_zram: bool) -> Findings {
    let env = p.environment();
    let caps = privilege::effective_caps();
    let who = Who { root: privilege::is_root(), caps };
    let mut checks = vec![Check { name: "kernel", status: Avail::Info, detail: env.kernel.clone(), affects: vec![] }];
    checks.push(check_root(&who));
    let (c, cgroup) = check_cgroup(p, &who);
    checks.push(c);
    checks.push(check_swap(&env));
    let (c, zram) = check_zram(p, &env, &who, probe_zram);
    checks.push(c);
    checks.push(check_zswap(&env, &who));
    checks.push(check_mglru(&env));
    let (c, moving) = check_damon(&env);
    checks.push(c);
    let (c, psi_files) = check_psi(p);
    checks.push(c);
    checks.push(Check {
        name: "thp",
        status: Avail::Info,
        detail: env.thp.clone().map(|m| format!("transparent huge pages: {m}")).unwrap_or("not available".into()),
        affects: vec![],
    });
    let (pageout, pm) = (workloads::mm::try_madvise_pageout(), workloads::mm::try_process_madvise());
    checks.extend(check_madvise(&pageout, &pm, &who));
    checks.push(Check {
        name: "memory",
        status: Avail::Info,
        detail: format!("page size {} B, RAM {}, {} CPUs", env.page_size, units::bytes(env.ram_bytes), env.cpus),
        affects: vec![],
    });
    // The machine's own run-to-run noise: a fixed loop, 15 runs of ~20 ms.
    let noise = workloads::noise::measure(15, 20.0);
    checks.push(check_noise(&noise));
    let json = DoctorReport {
        kernel: Kernel { release: env.kernel.clone() },
        root: Root {
            is_root: who.root,
            capabilities: Capabilities {
                cap_sys_admin: who.has(CAP_SYS_ADMIN),
                cap_sys_nice: who.has(CAP_SYS_NICE),
                cap_ipc_lock: who.has(CAP_IPC_LOCK),
                cap_sys_resource: who.has(CAP_SYS_RESOURCE),
            },
        },
        cgroup,
        swap: Swap { active: !env.swaps.is_empty(), devices: env.swaps.clone() },
        zram,
        zswap: env.zswap.clone(),
        mglru: Mglru {
            present: env.mglru.is_some(),
            enabled: env.mglru.as_ref().is_some_and(|m| m.enabled),
            mask: env.mglru.as_ref().map(|m| m.mask),
            min_ttl_ms: env.mglru.as_ref().and_then(|m| m.min_ttl_ms),
        },
        damon: Damon { kdamonds: env.damon.clone(), moving_pages: moving },
        psi: Psi { present: psi_files.len() == 3, files: psi_files.iter().map(|f| f.to_string()).collect() },
        thp: env.thp.clone(),
        madvise_pageout: Works { works: pageout.is_ok(), error: pageout.err(), other_processes_need: None },
        process_madvise: Works {
            works: pm.is_ok(),
            error: pm.err(),
            other_processes_need: Some("CAP_SYS_NICE".into()),
        },
        page_size: env.page_size,
        ram_bytes: env.ram_bytes,
        cpus: env.cpus,
        noise,
        checks: checks.clone(),
    };
    Findings { checks, json }
}

/// Who doctor runs as.
struct Who {
    root: bool,
    caps: u64,
}

impl Who {
    fn has(&self, c: u32) -> bool {
        self.caps & (1 << c) != 0
    }
}

fn check_root(who: &Who) -> Check {
    let capnames: Vec<&str> = [
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
        (CAP_SYS_NICE, "CAP_SYS_NICE"),
        (CAP_IPC_LOCK, "CAP_IPC_LOCK"),
        (CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE"),
    ]
    .iter()
    .filter(|(c, _)| who.has(*c))
    .map(|(_, n)| *n)
    .collect();
    Check {
        name: "root",
        status: if who.root && who.has(CAP_SYS_ADMIN) { Avail::Available } else { Avail::NeedsRoot },
        detail: format!(
            "{} (capabilities: {})",
            if who.root { "running as root" } else { "not root" },
            if capnames.is_empty() { "none of interest".to_string() } else { capnames.join(", ") }
        ),
        affects: if who.root { vec![] } else { affected_by(Need::Root) },
    }
}

/// The cgroup layout and the memory controller, with their JSON.
fn check_cgroup(p: &mut probe::Probe, who: &Who) -> (Check, Cgroup) {
    let mounts = p.cgroup_mounts().unwrap_or_default();
    let layout = mounts.layout();
    let mc = p.memory_controller().ok().flatten();
    let unified_ctrls = mounts
        .unified
        .as_ref()
        .map(|u| p.unified_controllers(&p.roots().rebase(u)).unwrap_or_default())
        .unwrap_or_default();
    let layout_word = match layout {
        probe::mountinfo::Layout::V1 => "cgroup v1",
        probe::mountinfo::Layout::V2 => "cgroup v2 (unified)",
        probe::mountinfo::Layout::Hybrid => "hybrid (v1 controllers plus a unified v2 mount)",
        probe::mountinfo::Layout::None => "no cgroup filesystem",
    };
    let (status, detail) = match &mc {
        Some((v, path)) => (
            if who.root { Avail::Available } else { Avail::NeedsRoot },
            format!("{layout_word}; memory controller {v} at {}", path.display()),
        ),
        None => (Avail::Missing, format!("{layout_word}; no memory controller mounted")),
    };
    let json = Cgroup {
        layout,
        memory_controller: mc.as_ref().map(|(v, _)| v.to_string()),
        memory_root: mc.as_ref().map(|(_, p)| p.display().to_string()),
        v1_memory_mount: mounts.v1_memory.clone(),
        unified_mount: mounts.unified.clone(),
        unified_controllers: unified_ctrls,
    };
    let affects = if status == Avail::Available { vec![] } else { affected_by(Need::MemoryCgroup) };
    (Check { name: "cgroup", status, detail, affects }, json)
}

fn check_swap(env: &probe::environment::Environment) -> Check {
    let detail = if env.swaps.is_empty() {
        "no swap active".to_string()
    } else {
        env.swaps
            .iter()
            .map(|s| format!("{} ({}, {}, prio {})", s.filename, s.kind, units::bytes(s.size_bytes), s.priority))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Check { name: "swap", status: Avail::Info, detail, affects: vec![] }
}

/// zram: whether devices can be made, and its algorithms (from an existing
/// device; or, only when asked, from one of pagelab's own).
fn check_zram(
    p: &mut probe::Probe,
    env: &probe::environment::Environment,
    who: &Who,
    probe_zram: bool,
) -> (Check, Zram) {
    let sys = p.roots().sys.clone();
    let hot_add = sys.join("class/zram-control/hot_add").exists();
    // Only a device can say which algorithms zram offers: with none, and only
    // when asked (--probe-zram, as root), pagelab adds one of its own for the
    // reading and removes it at once. By default doctor changes nothing.
    let (algs, algs_from) = match sandbox::zram::algorithms(&sys) {
        Some(a) => (a, "an existing device"),
        // A sandbox changes the real /sys: never for a probe pointed elsewhere.
        None if probe_zram && who.root && hot_add && sys == std::path::Path::new("/sys") => {
            let mut sb = sandbox::Sandbox::new("doctor");
            let a = sb.zram_algorithms().unwrap_or_default();
            let _ = sb.restore();
            (a, "a device pagelab added for the reading and removed")
        }
        None => (Vec::new(), "no device to ask (doctor --probe-zram, as root, adds one for the reading)"),
    };
    let present = hot_add || !env.zram.is_empty();
    let status = match (present, hot_add, who.root) {
        (false, _, _) => Avail::Missing,
        (true, true, true) => Avail::Available,
        (true, true, false) => Avail::NeedsRoot,
        (true, false, _) => Avail::Missing,
    };
    let detail = if present {
        format!(
            "{}; hot_add {}; algorithms: {}",
            if env.zram.is_empty() { "module loaded".to_string() } else { format!("{} device(s)", env.zram.len()) },
            if hot_add { "works" } else { "missing" },
            if algs.is_empty() {
                format!("unknown ({algs_from})")
            } else {
                format!("{} (from {algs_from})", algs.join(", "))
            }
        )
    } else {
        "not loaded (modprobe zram)".to_string()
    };
    let json =
        Zram { present, hot_add, algorithms: algs, algorithms_from: algs_from.into(), devices: env.zram.clone() };
    let affects = if status == Avail::Available { vec![] } else { affected_by(Need::Zram) };
    (Check { name: "zram", status, detail, affects }, json)
}

fn check_zswap(env: &probe::environment::Environment, who: &Who) -> Check {
    let z = &env.zswap;
    Check {
        name: "zswap",
        status: if !z.present {
            Avail::Missing
        } else if who.root {
            Avail::Available
        } else {
            Avail::NeedsRoot
        },
        detail: if z.present {
            format!(
                "present, {}; compressor {}; max_pool_percent {}",
                if z.enabled == Some(true) { "enabled" } else { "off" },
                z.compressor.as_deref().unwrap_or("?"),
                z.max_pool_percent.map(|v| v.to_string()).unwrap_or("?".into())
            )
        } else {
            "not built into this kernel".to_string()
        },
        affects: if z.present { vec![] } else { affected_by(Need::Zswap) },
    }
}

/// MGLRU: which reclaim the experiments meet.
fn check_mglru(env: &probe::environment::Environment) -> Check {
    Check {
        name: "mglru",
        status: Avail::Info,
        detail: match &env.mglru {
            None => "not in this kernel (the classic active/inactive LRU)".to_string(),
            Some(m) => format!(
                "{} (lru_gen enabled 0x{:04x}{})",
                if m.enabled { "on" } else { "off" },
                m.mask,
                m.min_ttl_ms.map(|t| format!(", min_ttl_ms {t}")).unwrap_or_default()
            ),
        },
        affects: vec![],
    }
}

/// DAMON: a running kdamond with a scheme moves pages behind an experiment's
/// back. pagelab never writes to DAMON's admin files. Also: how many move pages.
fn check_damon(env: &probe::environment::Environment) -> (Check, usize) {
    let movers = env.damon.iter().filter(|k| k.moves_pages()).count();
    let detail = if env.damon.is_empty() {
        "no DAMON worker configured through sysfs".to_string()
    } else {
        format!(
            "{}{}",
            env.damon.iter().map(|k| k.describe()).collect::<Vec<_>>().join("; "),
            if movers == 0 {
                String::new()
            } else {
                "; not pagelab's: it moves pages behind an experiment's back (each run records it; pagelab never \
                 writes to it)"
                    .to_string()
            }
        )
    };
    let affects = if movers == 0 { vec![] } else { affected_by(Need::QuietDamon) };
    (Check { name: "damon", status: Avail::Info, detail, affects }, movers)
}

/// Pressure stall information, and which of its files exist.
fn check_psi(p: &mut probe::Probe) -> (Check, Vec<&'static str>) {
    let files: Vec<&'static str> =
        ["memory", "cpu", "io"].into_iter().filter(|f| p.pressure(f).is_ok_and(|x| x.is_some())).collect();
    let check = Check {
        name: "psi",
        status: if files.len() == 3 { Avail::Available } else { Avail::Missing },
        detail: if files.is_empty() {
            "no /proc/pressure (kernel without CONFIG_PSI, or psi=0)".into()
        } else {
            format!("/proc/pressure/{{{}}}", files.join(","))
        },
        affects: if files.len() == 3 { vec![] } else { [affected_by(Need::Psi), vec!["monitor (PSI panel)"]].concat() },
    };
    (check, files)
}

/// MADV_PAGEOUT on a mapping of our own, and process_madvise.
fn check_madvise(pageout: &Result<(), String>, pm: &Result<(), String>, who: &Who) -> [Check; 2] {
    [
        Check {
            name: "madvise_pageout",
            status: if pageout.is_ok() { Avail::Available } else { Avail::Missing },
            detail: match pageout {
                Ok(()) => "MADV_PAGEOUT works on a private mapping".into(),
                Err(e) => e.clone(),
            },
            affects: if pageout.is_ok() { vec![] } else { affected_by(Need::Pageout) },
        },
        Check {
            name: "process_madvise",
            status: if pm.is_ok() { Avail::Available } else { Avail::Missing },
            detail: match pm {
                Ok(()) => format!(
                    "process_madvise(MADV_PAGEOUT) works; trimming other users' processes {}",
                    if who.has(CAP_SYS_NICE) { "allowed (CAP_SYS_NICE)" } else { "needs CAP_SYS_NICE" }
                ),
                Err(e) => e.clone(),
            },
            affects: if pm.is_ok() {
                vec![]
            } else {
                [affected_by(Need::ProcessMadvise), vec!["monitor trim key"]].concat()
            },
        },
    ]
}

fn check_noise(noise: &workloads::noise::Noise) -> Check {
    Check {
        name: "noise",
        status: Avail::Info,
        detail: format!(
            "a fixed 20 ms CPU loop varied by CV {:.1} % (slowest ÷ fastest {:.2}) over {} runs{}; findings are \
             judged from ratios of arms run side by side, which this drift cancels",
            100.0 * noise.cv,
            noise.max_over_min,
            noise.runs,
            noise.steal_fraction.map(|s| format!(", CPU steal {:.1} %", 100.0 * s)).unwrap_or_default()
        ),
        affects: vec![],
    }
}

pub fn run(a: &DoctorArgs) -> anyhow::Result<()> {
    // --probe-zram adds a device of its own: it waits for a live run (which
    // holds the run lock) like any run, so that it changes nothing of one.
    // Without it doctor only reads, and takes no lock.
    let _lock = if a.probe_zram { Some(crate::experiment::take_run_lock("doctor --probe-zram", false)?) } else { None };
    let f = examine_in(&mut probe::Probe::default(), a.probe_zram);
    if a.json {
        crate::print_json(&f.json)?;
        return Ok(());
    }
    for c in &f.checks {
        let status = c.status.word();
        say::outln!("{:<16} {:<11} {}", c.name, status, c.detail);
        if !c.affects.is_empty() && c.status != Avail::Available {
            say::outln!("{:<16} {:<11} affects: {}", "", "", c.affects.join(", "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The report reads doctor's JSON (kept in lab.json) into
    /// `report::lab::Doctor`, whose checks refuse unknown fields: a renamed or
    /// added field here fails this test instead of vanishing from the report.
    /// Doctor on the probe's captured hybrid tree: every finding that comes from
    /// kernel files comes from the tree, not from this machine.
    #[test]
    fn examine_reads_the_tree_it_is_given() {
        let tree = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/probe/tests/fixtures/hybrid");
        let mut p = probe::Probe::new(probe::Roots::under(&tree));
        let f = super::examine_in(&mut p, false);
        let by = |n: &str| f.checks.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("no {n} check"));
        let cg = by("cgroup");
        assert!(cg.detail.starts_with("hybrid") && cg.detail.contains(&tree.display().to_string()), "{}", cg.detail);
        // The tree has zram0 and no zram-control: a device, but no hot_add.
        let z = by("zram");
        assert!(z.detail.starts_with("1 device(s); hot_add missing"), "{}", z.detail);
        assert_eq!(z.status, super::Avail::Missing);
        assert!(z.affects.contains(&"eat --backing zram"), "{:?}", z.affects);
        assert_eq!(by("psi").status, super::Avail::Available);
        assert_eq!(f.json.cgroup.memory_root, Some(tree.join("sys/fs/cgroup/memory").display().to_string()));
        // An empty tree: no cgroups, no PSI, no zram.
        let empty = tempfile::tempdir().unwrap();
        let f = super::examine_in(&mut probe::Probe::new(probe::Roots::under(empty.path())), false);
        let by = |n: &str| f.checks.iter().find(|c| c.name == n).unwrap();
        assert_eq!(by("cgroup").status, super::Avail::Missing);
        assert_eq!(by("psi").status, super::Avail::Missing);
        assert_eq!(by("zram").status, super::Avail::Missing);
    }

    #[test]
    fn the_report_reads_every_check() {
        let f = super::examine();
        let d: report::lab::Doctor = serde_json::from_value(serde_json::to_value(&f.json).unwrap())
            .expect("report::lab::Doctor reads doctor's JSON");
        assert_eq!(d.checks.len(), f.checks.len());
        for (ours, theirs) in f.checks.iter().zip(&d.checks) {
            assert_eq!(ours.name, theirs.name);
            assert_eq!(ours.detail, theirs.detail);
            assert_eq!(ours.affects, theirs.affects);
            assert!(["available", "missing", "needs_root", "info"].contains(&theirs.status.as_str()), "{theirs:?}");
        }
    }
}
