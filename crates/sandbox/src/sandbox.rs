//! The `Sandbox`: the only way pagelab changes a system.

use crate::cgroup::{Limits, MemCgroup};
use crate::error::{Result, SandboxError};
use crate::fault;
use crate::journal::{self, Change, Journal};
use crate::privilege::require_admin;
use crate::swap;
use crate::zram;
use probe::cgroup::CgroupVersion;
use probe::{Probe, Roots};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Journals owned by this process, for the panic hook.
static ACTIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static GROUP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A zram swap device created by a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramSwap {
    pub id: u32,
    pub device: PathBuf,
    pub disksize: u64,
    pub algorithm: String,
    pub priority: i32,
}

/// What a zram swap should look like.
#[derive(Debug, Clone)]
pub struct ZramSpec {
    pub disksize: u64,
    /// `None`: the kernel's default.
    pub algorithm: Option<String>,
    /// Swap priority; high so that the run's pages go here before any user swap.
    pub priority: i32,
}

/// Undoable changes to the system, journaled before they are made.
pub struct Sandbox {
    label: String,
    journal_dir: PathBuf,
    roots: Roots,
    journal: Option<Journal>,
    restored: bool,
    /// False on fake trees (tests), where no privilege is needed.
    check_privilege: bool,
    /// On a fake tree (tests): what a kernel gives each group made, its
    /// control files ([`Sandbox::with_kernel_files`]).
    kernel_files: Option<fn(&Path) -> std::io::Result<()>>,
}

impl Sandbox {
    pub fn new(label: &str) -> Self {
        Sandbox::with_journal_dir(label, &journal::dir())
    }

    pub fn with_journal_dir(label: &str, dir: &Path) -> Self {
        Sandbox {
            label: label.to_string(),
            journal_dir: dir.to_path_buf(),
            roots: Roots::default(),
            journal: None,
            restored: false,
            check_privilege: true,
            kernel_files: None,
        }
    }

    /// A probe that reads the machine this sandbox changes: its roots' (a
    /// fake tree in tests), so that what a run reads and what it changes are
    /// one machine.
    pub fn probe(&self) -> Probe {
        Probe::new(self.roots.clone())
    }

    /// The user's own active swap areas on the machine this sandbox changes
    /// (not a pagelab run's store, by its journals): read through its probe
    /// and its journal directory.
    pub fn user_swaps(&self) -> Vec<probe::swaps::SwapArea> {
        let mut journals = vec![self.journal_dir.clone()];
        // On the machine's own tree, every pagelab run's journals (another
        // run's store is not the user's swap), wherever this one keeps its own.
        if self.roots == Roots::default() {
            journals.push(journal::dir());
        }
        crate::swap::user_areas_in(&mut self.probe(), &journals)
    }

    /// Uses other proc/sys roots (fake trees in tests).
    pub fn with_roots(mut self, roots: Roots) -> Self {
        self.check_privilege = roots == Roots::default();
        self.roots = roots;
        self
    }

    /// On a fake tree (tests; see [`Sandbox::with_roots`]): `f` writes into
    /// each memory cgroup made, as it is made, the control files a kernel
    /// would give it (`crate::testing::kernel_files`), so that a run can read
    /// its group. Never called on the machine's own tree.
    pub fn with_kernel_files(mut self, f: fn(&Path) -> std::io::Result<()>) -> Self {
        self.kernel_files = Some(f);
        self
    }

    /// Refuses `what` on a fake tree (tests): a swap area is a block device
    /// or a file turned on by swapon(2), which no tree of files can stand
    /// in for, so a sandbox on one would make a real one (without the
    /// privilege check a fake tree lifts).
    fn own_tree(&self, what: &str) -> Result<()> {
        if self.roots == Roots::default() {
            return Ok(());
        }
        Err(SandboxError::Unsupported(format!(
            "{what} is made only on the machine's own /proc and /sys, not on a fake tree (tests)"
        )))
    }

    pub(crate) fn require_admin(&self, op: &str, hint: &str) -> Result<()> {
        if self.check_privilege { require_admin(op, hint) } else { Ok(()) }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The proc/sys roots it reads and changes (a fake tree's in tests).
    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// The journal file, once a change was made.
    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(|j| j.path())
    }

    pub(crate) fn record(&mut self, change: Change) -> Result<u64> {
        if self.journal.is_none() {
            let j = Journal::create(&self.journal_dir, &self.label)?;
            ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).push(j.path().to_path_buf());
            self.journal = Some(j);
        }
        self.restored = false;
        self.journal.as_mut().expect("journal").record(change)
    }

    /// Marks the journaled change `seq` as never made ([`Journal::forget`]).
    pub(crate) fn forget(&mut self, seq: u64) -> Result<()> {
        match self.journal.as_mut() {
            Some(j) => j.forget(seq),
            None => Ok(()),
        }
    }

    /// Makes the cgroup directory `dir`, journaled first; where the making
    /// fails (it exists already, say), the record is taken back, so that a
    /// restore never removes a directory this run did not make. (A crash
    /// between the record and its taking back still leaves it to a later
    /// restore, as any change journaled and not yet made is.)
    pub(crate) fn make_cgroup_dir(&mut self, dir: &Path) -> Result<()> {
        let seq = self.record(Change::CgroupDir { path: dir.to_path_buf() })?;
        if let Err(e) = std::fs::create_dir(dir) {
            let made = SandboxError::io("creating the cgroup", dir, e);
            return Err(match self.forget(seq) {
                Ok(()) => made,
                Err(j) => SandboxError::Other(format!("{made}; and taking its record back failed: {j}")),
            });
        }
        Ok(())
    }

    fn write_setting_inner(&mut self, path: &Path, value: &str) -> Result<()> {
        let previous = std::fs::read_to_string(path).map_err(|e| SandboxError::io("reading", path, e))?;
        // "a [b] c" files (zswap compressor is plain, THP is bracketed) keep the selection.
        let previous = probe::environment::selected_choice(&previous).unwrap_or_else(|| previous.trim().to_string());
        self.record(Change::WriteFile { path: path.to_path_buf(), previous })?;
        std::fs::write(path, value).map_err(|e| SandboxError::io(format!("writing '{value}'"), path, e))?;
        fault::point(&format!("wrote {}", path.display()));
        Ok(())
    }

    /// Sets a sysctl such as `vm.swappiness` (journaled; restored afterwards).
    pub fn sysctl(&mut self, name: &str, value: &str) -> Result<()> {
        if name.contains("..") || name.contains('/') {
            return Err(SandboxError::Invalid(format!("'{name}' is not a sysctl name (e.g. vm.swappiness)")));
        }
        let path = self.roots.proc.join("sys").join(name.replace('.', "/"));
        if !path.exists() {
            return Err(SandboxError::Unsupported(format!("sysctl {name} does not exist on this kernel")));
        }
        self.require_admin(&format!("setting {name}"), "")?;
        self.write_setting_inner(&path, value)
    }

    /// Sets a zswap parameter: `enabled`, `compressor`, `max_pool_percent`,
    /// `shrinker_enabled` or `accept_threshold_percent`.
    pub fn zswap(&mut self, param: &str, value: &str) -> Result<()> {
        const PARAMS: [&str; 5] =
            ["enabled", "compressor", "max_pool_percent", "shrinker_enabled", "accept_threshold_percent"];
        if !PARAMS.contains(&param) {
            return Err(SandboxError::Invalid(format!(
                "unknown zswap parameter '{param}': expected {}",
                PARAMS.join(", ")
            )));
        }
        let params = self.roots.sys.join("module/zswap/parameters");
        let path = params.join(param);
        if !params.exists() {
            return Err(SandboxError::Unsupported("zswap is not built into this kernel".into()));
        }
        if !path.exists() {
            // shrinker_enabled came with Linux 6.8.
            return Err(SandboxError::Unsupported(format!("this kernel's zswap has no {param} ({})", path.display())));
        }
        self.require_admin(&format!("setting zswap {param}"), "use --backing existing")?;
        self.write_setting_inner(&path, value)
    }

    /// Sets a multi-generational LRU parameter, `enabled` or `min_ttl_ms`
    /// (journaled; restored afterwards).
    pub fn lru_gen(&mut self, param: &str, value: &str) -> Result<()> {
        if !["enabled", "min_ttl_ms"].contains(&param) {
            return Err(SandboxError::Invalid(format!(
                "unknown lru_gen parameter '{param}': expected enabled or min_ttl_ms"
            )));
        }
        let path = self.roots.sys.join("kernel/mm/lru_gen").join(param);
        if !path.exists() {
            return Err(SandboxError::Unsupported(
                "this kernel has no multi-generational LRU (/sys/kernel/mm/lru_gen)".into(),
            ));
        }
        self.require_admin(&format!("setting lru_gen {param}"), "")?;
        self.write_setting_inner(&path, value)
    }

    /// Checks limits without changing anything: not zero, not above RAM.
    pub fn check_limits(&self, limits: &Limits) -> Result<()> {
        let ram = self.probe().meminfo().ok().flatten().and_then(|m| m.total()).unwrap_or(u64::MAX);
        for (what, v) in [("limit", limits.max), ("high", limits.high)] {
            match v {
                Some(0) => {
                    return Err(SandboxError::Invalid(format!("a cgroup {what} of 0 bytes cannot hold a process")));
                }
                Some(b) if b > ram => {
                    return Err(SandboxError::Invalid(format!(
                        "a cgroup {what} of {b} bytes is larger than this machine's RAM ({ram} bytes)"
                    )));
                }
                _ => {}
            }
        }
        if limits.swappiness.is_some_and(|s| s > 200) {
            return Err(SandboxError::Invalid("swappiness must be 0..=200".into()));
        }
        Ok(())
    }

    /// Creates a memory cgroup `pagelab/<name>-<pid>-<n>` with the given limits.
    pub fn memory_cgroup(&mut self, name: &str, limits: &Limits) -> Result<MemCgroup> {
        self.check_limits(limits)?;
        let (version, root) = self.probe()
            .memory_controller()
            .map_err(|e| SandboxError::Other(e.to_string()))?
            .ok_or_else(|| {
                SandboxError::Unsupported(
                    "no memory cgroup controller is mounted (neither cgroup v1 'memory' nor cgroup2 with 'memory' in cgroup.controllers)"
                        .into(),
                )
            })?;
        self.require_admin("creating a memory cgroup", "run as root or use --backing existing")?;
        let parent = root.join("pagelab");
        if version == CgroupVersion::V2 {
            let sub = std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_ascii_whitespace().any(|c| c == "memory") {
                return Err(SandboxError::Unsupported(format!(
                    "the memory controller is not enabled for children of {} (cgroup.subtree_control lacks 'memory'); pagelab does not change settings it did not create",
                    root.display()
                )));
            }
        }
        if !parent.exists() {
            self.record(Change::CgroupDir { path: parent.clone() })?;
            match std::fs::create_dir(&parent) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(SandboxError::io("creating the cgroup", &parent, e)),
            }
        }
        if version == CgroupVersion::V2 {
            let sc = parent.join("cgroup.subtree_control");
            let cur = std::fs::read_to_string(&sc).unwrap_or_default();
            if !cur.split_ascii_whitespace().any(|c| c == "memory") {
                std::fs::write(&sc, "+memory").map_err(|e| SandboxError::io("enabling memory", &sc, e))?;
            }
        }
        let n = GROUP_COUNTER.fetch_add(1, Ordering::SeqCst);
        let leaf = format!("{name}-{}-{n}", std::process::id());
        let dir = parent.join(&leaf);
        self.make_cgroup_dir(&dir)?;
        // Only where no kernel is behind the group: never on a cgroup
        // filesystem, whichever roots led there.
        if let Some(f) =
            self.kernel_files.filter(|_| self.roots != Roots::default() && !crate::cgroup::is_cgroupfs(&dir))
        {
            f(&dir).map_err(|e| SandboxError::io("writing a fake group's files", &dir, e))?;
        }
        fault::point(&format!("created cgroup {}", dir.display()));
        let cg = MemCgroup::new(version, dir, format!("pagelab/{leaf}"));
        cg.apply(limits)?;
        fault::point(&format!("configured cgroup {}", cg.name));
        Ok(cg)
    }

    /// Creates a zram device, makes it a swap area and turns it on. A new device is
    /// always hot-added: an existing one is never reused, whether or not in use.
    pub fn zram_swap(&mut self, spec: &ZramSpec) -> Result<ZramSwap> {
        self.own_tree("a zram swap device")?;
        let sys = self.roots.sys.clone();
        if spec.disksize < (1 << 20) {
            return Err(SandboxError::Invalid(format!(
                "a zram swap of {} bytes is too small (at least 1MiB)",
                spec.disksize
            )));
        }
        let control = zram::control_dir(&sys);
        if !control.join("hot_add").exists() {
            return Err(SandboxError::Unsupported(
                "zram is not available (no /sys/class/zram-control/hot_add; the zram module is not loaded: modprobe zram)"
                    .into(),
            ));
        }
        if let (Some(alg), Some(avail)) = (&spec.algorithm, zram::algorithms(&sys))
            && !avail.contains(alg)
        {
            return Err(SandboxError::Invalid(format!(
                "unknown zram algorithm '{alg}': this kernel offers {}",
                avail.join(", ")
            )));
        }
        self.require_admin("creating a zram swap device", "run as root or use --backing existing")?;
        let before = zram::device_ids(&sys);
        let seq = self.record(Change::ZramDevice { sys: sys.clone(), before: before.clone(), id: None })?;
        let text = std::fs::read_to_string(control.join("hot_add"))
            .map_err(|e| SandboxError::io("zram hot_add", control.join("hot_add"), e))?;
        let id: u32 =
            text.trim().parse().map_err(|_| SandboxError::Other(format!("zram hot_add answered '{}'", text.trim())))?;
        fault::point(&format!("hot-added zram{id}"));
        self.journal
            .as_mut()
            .expect("journal")
            .update(seq, Change::ZramDevice { sys: sys.clone(), before, id: Some(id) })?;
        let block = sys.join(format!("block/zram{id}"));
        let w = |f: &str, v: &str| {
            std::fs::write(block.join(f), v).map_err(|e| SandboxError::io(format!("writing '{v}'"), block.join(f), e))
        };
        if let Some(alg) = &spec.algorithm {
            w("comp_algorithm", alg)?;
        }
        w("disksize", &spec.disksize.to_string())?;
        fault::point(&format!("sized zram{id}"));
        let device = zram::dev_path(id);
        self.ensure_node(&device, &block)?;
        swap::write_header(&device, spec.disksize)?;
        self.record(Change::SwapOn { path: device.clone() })?;
        swap::swapon(&device, spec.priority)?;
        fault::point(&format!("swapon zram{id}"));
        let algorithm = std::fs::read_to_string(block.join("comp_algorithm"))
            .ok()
            .and_then(|t| probe::zram::parse_comp_algorithm(&t).ok())
            .and_then(|c| c.selected)
            .unwrap_or_default();
        Ok(ZramSwap { id, device, disksize: spec.disksize, algorithm, priority: spec.priority })
    }

    /// The algorithms zram offers, read from a device hot-added for the purpose
    /// (journaled; [`Sandbox::restore`] removes it). Only a device can say: up to
    /// 6.11 zram asks the crypto API, whose modules load on demand, and from 6.12
    /// it has its own compiled-in backends.
    pub fn zram_algorithms(&mut self) -> Result<Vec<String>> {
        let sys = self.roots.sys.clone();
        let control = zram::control_dir(&sys);
        if !control.join("hot_add").exists() {
            return Err(SandboxError::Unsupported("zram is not loaded (modprobe zram)".into()));
        }
        self.require_admin("adding a zram device to read its algorithms", "run as root")?;
        let before = zram::device_ids(&sys);
        let seq = self.record(Change::ZramDevice { sys: sys.clone(), before: before.clone(), id: None })?;
        let text = std::fs::read_to_string(control.join("hot_add"))
            .map_err(|e| SandboxError::io("zram hot_add", control.join("hot_add"), e))?;
        let id: u32 =
            text.trim().parse().map_err(|_| SandboxError::Other(format!("zram hot_add answered '{}'", text.trim())))?;
        self.journal
            .as_mut()
            .expect("journal")
            .update(seq, Change::ZramDevice { sys: sys.clone(), before, id: Some(id) })?;
        let f = sys.join(format!("block/zram{id}/comp_algorithm"));
        let t = std::fs::read_to_string(&f).map_err(|e| SandboxError::io("reading", &f, e))?;
        probe::zram::parse_comp_algorithm(&t)
            .map(|c| c.available)
            .map_err(|e| SandboxError::Other(format!("{}: {e}", f.display())))
    }

    /// Starts a DAMON kdamond of pagelab's own on `pid`'s virtual address space
    /// (journaled; [`Sandbox::restore`] stops and removes it). Refused, with
    /// nothing changed, when DAMON's list already holds any kdamond.
    pub fn damon_vaddr(&mut self, pid: i32, intervals: crate::damon::Intervals) -> Result<crate::damon::Monitor> {
        if let Some(why) = crate::damon::unavailable(&self.roots.sys) {
            return Err(SandboxError::Unsupported(format!("DAMON: {why}")));
        }
        self.require_admin("starting a DAMON monitor", "")?;
        let kdamonds = crate::damon::kdamonds_dir(&self.roots.sys);
        self.record(Change::DamonKdamond { kdamonds: kdamonds.clone(), pid })?;
        crate::cgroup::write_file(&kdamonds.join("nr_kdamonds"), "1")?;
        fault::point("added a DAMON kdamond");
        let dir = kdamonds.join("0");
        crate::damon::configure(&dir, pid, intervals)?;
        fault::point("started the DAMON kdamond");
        Ok(crate::damon::Monitor { dir, pid, intervals })
    }

    /// Waits for the kernel (devtmpfs/udev) to create a device node; creates it with
    /// mknod (journaled) if nothing does within a second.
    fn ensure_node(&mut self, device: &Path, block: &Path) -> Result<()> {
        for _ in 0..100 {
            if device.exists() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let devnum = std::fs::read_to_string(block.join("dev"))
            .map_err(|e| SandboxError::io("reading", block.join("dev"), e))?;
        let (maj, min) = devnum
            .trim()
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            .ok_or_else(|| SandboxError::Other(format!("unexpected device number '{}'", devnum.trim())))?;
        self.record(Change::DeviceNode { path: device.to_path_buf() })?;
        let c = std::ffi::CString::new(device.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: valid C string; creating a block device node.
        if unsafe { libc::mknod(c.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(maj, min)) } != 0 {
            return Err(SandboxError::io("mknod", device, std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Creates a swap file of `size` bytes at `path` and turns it on.
    pub fn swap_file(&mut self, path: &Path, size: u64, priority: i32) -> Result<PathBuf> {
        self.own_tree("a swap file")?;
        if size < (1 << 20) {
            return Err(SandboxError::Invalid(format!("a swap file of {size} bytes is too small (at least 1MiB)")));
        }
        if path.exists() {
            return Err(SandboxError::Invalid(format!(
                "{} already exists; pagelab only uses swap files it creates",
                path.display()
            )));
        }
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        check_swap_fs(dir)?;
        // Every step from here by the resolved path ([`safe_swap_dir`]).
        let name =
            path.file_name().ok_or_else(|| SandboxError::Invalid(format!("{}: no file name", path.display())))?;
        let real_dir = safe_swap_dir(dir)?;
        check_swap_room(dir, &real_dir, size)?;
        let resolved = real_dir.join(name);
        let path = resolved.as_path();
        self.require_admin("creating a swap file", "run as root or use --backing existing")?;
        self.record(Change::SwapFile { path: path.to_path_buf() })?;
        {
            use std::os::fd::AsRawFd;
            use std::os::unix::fs::OpenOptionsExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| SandboxError::io("creating the swap file", path, e))?;
            // Allocated, not sparse: swap cannot use files with holes.
            // SAFETY: fd is valid for the lifetime of f.
            if unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) } != 0 {
                return Err(SandboxError::io("fallocate", path, std::io::Error::last_os_error()));
            }
        }
        fault::point("allocated swap file");
        swap::write_header(path, size)?;
        self.record(Change::SwapOn { path: path.to_path_buf() })?;
        swap::swapon(path, priority)?;
        fault::point("swapon swap file");
        Ok(path.to_path_buf())
    }

    /// Undoes every change, newest first. Safe to call more than once.
    pub fn restore(&mut self) -> Result<Vec<String>> {
        let Some(j) = self.journal.as_mut() else {
            return Ok(Vec::new());
        };
        let log = j.undo_all()?;
        let j = self.journal.take().expect("journal");
        ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| p != j.path());
        j.remove();
        self.restored = true;
        Ok(log)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if self.journal.is_some()
            && let Err(e) = self.restore()
        {
            say::errln!("pagelab: restoring the system failed: {e}; run `pagelab restore`");
        }
    }
}

/// Room beside a swap file, so that it never fills its file system.
const SWAP_ROOM_MARGIN: u64 = 256 << 20;

/// Whether the file system of `real` (`dir` with its links resolved) has
/// room for a swap file of `size` bytes and [`SWAP_ROOM_MARGIN`] to spare,
/// counting only what users may fill (root's reserve, which fallocate as
/// root could take, is the host's). The swap files of other pagelab runs
/// on it count as free: a run checked before it waits for the machine
/// finds them gone when its turn comes (runs hold the machine one at a
/// time, and a dead run's is restored first). Read only; a file system
/// whose free space cannot be read passes.
pub fn check_swap_room(dir: &Path, real: &Path, size: u64) -> Result<()> {
    check_swap_room_in(dir, real, size, &journal::dir())
}

/// [`check_swap_room`] with the runs' journals in `journals`.
fn check_swap_room_in(dir: &Path, real: &Path, size: u64, journals: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(real).map(|m| m.dev()).ok();
    let runs: u64 = journal::pagelab_swaps(journals)
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .filter(|m| m.file_type().is_file() && Some(m.dev()) == dev)
        .map(|m| m.blocks().saturating_mul(512))
        .sum();
    match crate::guard::disk_free(real).map(|f| f.saturating_add(runs)) {
        Some(free) if free < size.saturating_add(SWAP_ROOM_MARGIN) => Err(SandboxError::Invalid(format!(
            "--swapfile-dir {}: a swap file of {} needs it and {} to spare, and its file system has {} free; \
             free some space or give another --swapfile-dir",
            dir.display(),
            units::bytes(size),
            units::bytes(SWAP_ROOM_MARGIN),
            units::bytes(free)
        ))),
        _ => Ok(()),
    }
}

/// Whether `dir` can hold a swap file: an existing directory on a filesystem
/// that supports swap files (not tmpfs, ramfs, overlayfs, NFS, or btrfs without NOCOW).
pub fn check_swap_fs(dir: &Path) -> Result<()> {
    // A restore undoes only an absolute swap file path without `..`
    // (journal::validate_change): a relative one stayed on after the run.
    if !dir.is_absolute() || dir.components().any(|c| c == std::path::Component::ParentDir) {
        return Err(SandboxError::Invalid(format!(
            "--swapfile-dir {}: give an absolute path without `..` (a restore undoes only such a swap file)",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(SandboxError::Invalid(format!(
            "--swapfile-dir {}: {}; give an existing directory on ext4 or xfs",
            dir.display(),
            if dir.exists() { "not a directory" } else { "no such directory" }
        )));
    }
    safe_swap_dir(dir)?;
    const TMPFS: i64 = 0x01021994;
    // An initramfs's root where it is not tmpfs (statfs(2)).
    const RAMFS: i64 = 0x858458f6;
    const BTRFS: i64 = 0x9123683e;
    const OVERLAY: i64 = 0x794c7630;
    const NFS: i64 = 0x6969;
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a C struct of integers (and pointers), for which all-zero bytes are a valid value.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(SandboxError::io("statfs", dir, std::io::Error::last_os_error()));
    }
    let name = match s.f_type as i64 {
        TMPFS => "tmpfs",
        RAMFS => "ramfs",
        BTRFS => "btrfs (needs a NOCOW file)",
        OVERLAY => "overlayfs",
        NFS => "NFS",
        _ => return Ok(()),
    };
    Err(SandboxError::Invalid(format!(
        "{} is on {name}, which cannot hold a swap file; choose a directory on ext4 or xfs",
        dir.display()
    )))
}

/// `dir` with every link resolved, when no one but root (or this user) can
/// replace it or anything on the way to it: each directory owned by root
/// or this user, and writable by no one else unless sticky (as /tmp and
/// /var/tmp). pagelab writes a swap header to, turns on, turns off and
/// deletes its swap file by path, so the path it uses is this one: with no
/// link left in it, a link another user controls (on the way as written,
/// or inside a link's target) cannot be pointed elsewhere between steps.
/// A directory that cannot be read is refused, not passed over.
pub fn safe_swap_dir(dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    let real = std::fs::canonicalize(dir).map_err(|e| SandboxError::io("resolving", dir, e))?;
    for d in real.ancestors() {
        let m = std::fs::symlink_metadata(d).map_err(|e| SandboxError::io("checking", d, e))?;
        let why = if !m.file_type().is_dir() {
            format!("{} is not a directory", d.display())
        } else if m.uid() != 0 && m.uid() != me {
            format!("{} is owned by uid {}", d.display(), m.uid())
        } else if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
            format!("{} is writable by others (mode {:o}) and not sticky", d.display(), m.mode() & 0o7777)
        } else {
            continue;
        };
        return Err(SandboxError::Invalid(format!(
            "--swapfile-dir {}: {why}; pagelab makes a swap file only where no one but root can replace it (as \
             /var/tmp)",
            dir.display()
        )));
    }
    Ok(real)
}

/// Undoes this process's own live journals (for the panic hook and fatal signals).
pub fn restore_own_journals() -> Vec<String> {
    let paths: Vec<PathBuf> = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut out = Vec::new();
    for p in paths {
        out.extend(journal::restore_own(&p));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's directory that exists already under the name a run
    /// journals (a stale or planted one): the making fails, the record is
    /// taken back, and the restore leaves that directory alone.
    #[test]
    fn a_cgroup_dir_that_was_there_is_never_restored_away() {
        let t = tempfile::tempdir().unwrap();
        crate::testing::fake_cgroup_v2(t.path()).unwrap();
        let mut sb = Sandbox::with_journal_dir("t", &t.path().join("j")).with_roots(Roots::under(t.path()));
        std::fs::create_dir(t.path().join("sys/fs/cgroup/pagelab")).unwrap();
        let theirs = t.path().join("sys/fs/cgroup/pagelab/theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("a-file"), "").unwrap();
        let e = sb.make_cgroup_dir(&theirs).unwrap_err();
        assert!(e.to_string().contains("creating the cgroup"), "{e}");
        let log = sb.restore().unwrap();
        assert!(theirs.join("a-file").exists(), "the restore removed a directory the run did not make: {log:?}");
        // One the run made is removed.
        let ours = t.path().join("sys/fs/cgroup/pagelab/ours");
        sb.make_cgroup_dir(&ours).unwrap();
        sb.restore().unwrap();
        assert!(!ours.exists(), "the run's own directory is removed");
    }

    /// Another pagelab run's swap file on the same file system counts as
    /// free room (it is gone when this run's turn comes): a size just over
    /// what is free passes beside one, and is refused without.
    #[test]
    fn another_runs_swap_file_counts_as_room() {
        use std::os::fd::AsRawFd;
        let t = tempfile::tempdir().unwrap();
        let theirs = t.path().join("pagelab-1-0.swap");
        let f = std::fs::File::create(&theirs).unwrap();
        // SAFETY: a valid fd; allocates 64 MiB of blocks.
        assert_eq!(unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, 64 << 20) }, 0, "fallocate");
        let journals = t.path().join("j");
        std::fs::create_dir(&journals).unwrap();
        let mut j = Journal::create(&journals, "other").unwrap();
        j.record(Change::SwapFile { path: theirs.clone() }).unwrap();
        let empty = t.path().join("none");
        std::fs::create_dir(&empty).unwrap();
        let free = crate::guard::disk_free(t.path()).unwrap();
        // 32 MiB over what is free to users, past the margin.
        let size = (free + (32 << 20)).saturating_sub(SWAP_ROOM_MARGIN);
        check_swap_room_in(t.path(), t.path(), size, &journals).unwrap();
        let e = check_swap_room_in(t.path(), t.path(), size, &empty).unwrap_err().to_string();
        assert!(e.contains("to spare, and its file system has"), "{e}");
    }
}
