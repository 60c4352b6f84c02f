//! A slow disk for a run's swap file: the whole disk under a file, and a
//! limit on the I/O a group's processes make on it.
//!
//! | cgroup | the limit | the group's processes |
//! | --- | --- | --- |
//! | v2 | `io.max` of the memory group (`riops=N wiops=N`) | already in it |
//! | v1 | `blkio.throttle.read_iops_device` and `write_iops_device` of a group `pagelab/<leaf>` made in the blkio hierarchy | join it as they join the memory group ([`MemCgroup::also`]) |
//!
//! On v1, swap-outs are written from reclaim and the kernel charges those
//! writes to no blkio group of the process (measured on the project's VM,
//! kernel 6.18: 0 writes counted against 8 468 reads): there the limit slows
//! the swap-ins, the page faults a program waits on, and not the swap-outs.

use crate::cgroup::MemCgroup;
use crate::error::{Result, SandboxError};
use crate::fault;
use crate::journal::Change;
use crate::sandbox::Sandbox;
use probe::cgroup::CgroupVersion;
use std::path::{Path, PathBuf};

/// A block device's number (`MAJ:MIN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for DevNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl DevNum {
    /// From a `st_dev` (glibc's encoding, as `major(3)` reads it).
    pub fn of(dev: u64) -> DevNum {
        DevNum {
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
        }
    }

    /// From a sysfs `dev` file's text, `254:0`.
    fn parse(s: &str) -> Option<DevNum> {
        let (a, b) = s.trim().split_once(':')?;
        Some(DevNum { major: a.parse().ok()?, minor: b.parse().ok()? })
    }
}

/// The whole disk that holds `path`'s file system, and its name (`vda`),
/// read through `sys` (/sys; a fake tree's in tests): a partition's disk is
/// its parent in sysfs. Err (why) where the file system is on no block
/// device (tmpfs, overlay, a network file system).
pub fn disk_of(sys: &Path, path: &Path) -> std::result::Result<(DevNum, String), String> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dev = DevNum::of(md.dev());
    let node = sys.join(format!("dev/block/{dev}"));
    let dir = std::fs::canonicalize(&node).map_err(|_| {
        format!("{} is on device {dev}, which is no block device (/sys/dev/block has no {dev})", path.display())
    })?;
    let disk = if dir.join("partition").exists() { dir.parent().map(Path::to_path_buf).unwrap_or(dir) } else { dir };
    let text = std::fs::read_to_string(disk.join("dev")).map_err(|e| format!("{}: {e}", disk.join("dev").display()))?;
    let num = DevNum::parse(&text).ok_or_else(|| format!("{}: not MAJ:MIN: {text:?}", disk.join("dev").display()))?;
    let name = disk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((num, name))
}

/// The v1 blkio hierarchy's root, where pagelab may make a group: under
/// /sys/fs/cgroup on the machine's own tree (the only place its journal
/// takes a group from), anywhere on a fake tree (tests).
fn blkio_root(p: &mut probe::Probe) -> std::result::Result<PathBuf, String> {
    let mounts = p.mounts().ok().flatten().unwrap_or_default();
    let m = mounts
        .iter()
        .find(|m| m.fs_type == "cgroup" && m.super_options.iter().any(|o| o == "blkio"))
        .ok_or("no cgroup v1 blkio hierarchy is mounted to limit a group's I/O with")?;
    let path = p.roots().rebase(&m.mount_point);
    if *p.roots() == probe::Roots::default() && !path.starts_with("/sys/fs/cgroup") {
        return Err(format!(
            "the blkio hierarchy is mounted at {}, outside /sys/fs/cgroup, where pagelab makes no group",
            path.display()
        ));
    }
    Ok(path)
}

/// Why a kernel without block throttling cannot limit a group's I/O.
const NO_THROTTLING: &str = "this kernel does not throttle a group's I/O (CONFIG_BLK_DEV_THROTTLING)";

/// Whether pagelab can limit a group's I/O here, without changing anything:
/// on cgroup v1 a blkio hierarchy ([`blkio_root`]), on v2 `io` delegated
/// by the root (its cgroup.subtree_control); on both, a kernel that
/// throttles (CONFIG_BLK_DEV_THROTTLING: v1's blkio.throttle files, v2's
/// io.max in a group given `io`). Err: why not.
pub fn io_limit_support(p: &mut probe::Probe) -> std::result::Result<(), String> {
    let (version, root) = p
        .memory_controller()
        .ok()
        .flatten()
        .ok_or("no memory cgroup controller is mounted, so there is no group to limit")?;
    match version {
        CgroupVersion::V1 => {
            let b = blkio_root(p)?;
            if b.join("blkio.throttle.read_iops_device").exists() {
                Ok(())
            } else {
                Err(format!("{}: no blkio.throttle files; {NO_THROTTLING}", b.display()))
            }
        }
        CgroupVersion::V2 => {
            let sc = root.join("cgroup.subtree_control");
            if std::fs::read_to_string(&sc).unwrap_or_default().split_ascii_whitespace().any(|c| c == "io") {
                // A group the root gives `io` has io.max where the kernel
                // throttles. Refused only where groups given `io` exist and
                // none has it (one may vanish while it is read); none to
                // look at passes.
                let given_io = |d: &Path| {
                    let c = std::fs::read_to_string(d.join("cgroup.controllers")).unwrap_or_default();
                    c.split_ascii_whitespace().any(|c| c == "io")
                };
                let given: Vec<PathBuf> = std::fs::read_dir(&root)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
                    .filter(|d| given_io(d))
                    .collect();
                match given.first() {
                    Some(d) if !given.iter().any(|d| d.join("io.max").exists()) => {
                        Err(format!("{} has the io controller but no io.max; {NO_THROTTLING}", d.display()))
                    }
                    _ => Ok(()),
                }
            } else {
                Err(format!(
                    "the io controller is not enabled for children of {} (cgroup.subtree_control lacks 'io'); \
                     pagelab does not change settings it did not create",
                    root.display()
                ))
            }
        }
    }
}

impl Sandbox {
    /// Limits the reads and the writes that `cg`'s processes make on `disk`
    /// to `iops` a second each (the table above); on v1 the blkio group is
    /// journaled and [`Sandbox::restore`] removes it. Refused where the
    /// kernel offers neither, and on v2 where the root does not delegate
    /// the io controller ([`io_limit_support`]); pagelab's own parent group
    /// then gets `+io` in its cgroup.subtree_control, as it gets `+memory`.
    /// Returns what it did, in words.
    pub fn io_limit(&mut self, cg: &mut MemCgroup, disk: DevNum, iops: u64) -> Result<String> {
        if iops == 0 {
            return Err(SandboxError::Invalid("an I/O limit of 0 operations a second stops the disk".into()));
        }
        self.require_admin("limiting a group's I/O", "")?;
        let mut p = self.probe();
        io_limit_support(&mut p).map_err(SandboxError::Unsupported)?;
        let leaf = cg.dir.file_name().map(PathBuf::from).unwrap_or_default();
        match cg.version {
            CgroupVersion::V2 => {
                let parent = cg.dir.parent().unwrap_or(Path::new("/")).to_path_buf();
                let sc = parent.join("cgroup.subtree_control");
                let has = std::fs::read_to_string(&sc).unwrap_or_default().split_ascii_whitespace().any(|c| c == "io");
                if !has && !cg.dir.join("io.max").exists() {
                    std::fs::write(&sc, "+io").map_err(|e| SandboxError::io("enabling io", &sc, e))?;
                }
                cg.write("io.max", &format!("{disk} riops={iops} wiops={iops}"))?;
                fault::point(&format!("limited the I/O of {}", cg.name));
                Ok(format!("{} limited to {iops} reads and {iops} writes a second on {disk} (io.max)", cg.name))
            }
            CgroupVersion::V1 => {
                let blkio = blkio_root(&mut p).map_err(SandboxError::Unsupported)?;
                let dir = if cg.dir.starts_with(&blkio) {
                    // blkio mounted with memory: the memory group is its group.
                    cg.dir.clone()
                } else {
                    let parent = blkio.join("pagelab");
                    if !parent.exists() {
                        self.record(Change::CgroupDir { path: parent.clone() })?;
                        match std::fs::create_dir(&parent) {
                            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                                return Err(SandboxError::io("creating the cgroup", &parent, e));
                            }
                            _ => {}
                        }
                    }
                    let dir = parent.join(&leaf);
                    self.make_cgroup_dir(&dir)?;
                    fault::point(&format!("created cgroup {}", dir.display()));
                    cg.also.push(dir.clone());
                    dir
                };
                for f in ["blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"] {
                    crate::cgroup::write_file(&dir.join(f), &format!("{disk} {iops}"))?;
                }
                fault::point(&format!("limited the I/O of {}", dir.display()));
                Ok(format!(
                    "{} limited to {iops} reads and {iops} writes a second on {disk} (blkio.throttle; on cgroup v1 \
                     the kernel charges swap-outs to no group, so only the swap-ins wait)",
                    dir.display()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dev_t_splits_as_glibc_splits_it() {
        // As libc's makedev(3) encodes them, with a major and a minor past 8 bits.
        for (major, minor) in [(254u32, 0u32), (8, 17), (259, 65536), (4095, 1 << 20)] {
            assert_eq!(DevNum::of(libc::makedev(major, minor)), DevNum { major, minor });
        }
        assert_eq!(DevNum::parse("254:0\n"), Some(DevNum { major: 254, minor: 0 }));
        assert_eq!(DevNum::parse("254"), None);
    }

    #[test]
    fn a_partitions_disk_is_its_parent_and_a_file_system_without_a_device_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        std::fs::write(&file, "").unwrap();
        use std::os::unix::fs::MetadataExt;
        let dev = DevNum::of(std::fs::metadata(&file).unwrap().dev());
        let sys = t.path().join("sys");
        // No /sys/dev/block entry for the device: refused, with the device named.
        let e = disk_of(&sys, &file).unwrap_err();
        assert!(e.contains(&dev.to_string()) && e.contains("no block device"), "{e}");
        // The device as a partition (sda3) of the disk sda (8:0).
        let disk = sys.join("devices/pci/block/sda");
        std::fs::create_dir_all(disk.join("sda3")).unwrap();
        std::fs::write(disk.join("dev"), "8:0\n").unwrap();
        std::fs::write(disk.join("sda3/dev"), format!("{dev}\n")).unwrap();
        std::fs::write(disk.join("sda3/partition"), "3\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(disk.join("sda3"), sys.join(format!("dev/block/{dev}"))).unwrap();
        assert_eq!(disk_of(&sys, &file).unwrap(), (DevNum { major: 8, minor: 0 }, "sda".to_string()));
        // Not a partition: the device is the disk.
        std::fs::remove_file(disk.join("sda3/partition")).unwrap();
        assert_eq!(disk_of(&sys, &file).unwrap(), (dev, "sda3".to_string()));
    }
}
