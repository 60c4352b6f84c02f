//! zram devices (Documentation/admin-guide/blockdev/zram.rst): hot_add, set the
//! algorithm and size, and tear down with swapoff, reset and hot_remove.

use crate::error::{Result, SandboxError};
use std::path::{Path, PathBuf};

/// zram ids under `sys`/block.
pub fn device_ids(sys: &Path) -> Vec<u32> {
    probe::Probe::new(probe::Roots { sys: sys.to_path_buf(), ..Default::default() }).zram_devices()
}

pub fn disksize(sys: &Path, id: u32) -> Option<u64> {
    std::fs::read_to_string(sys.join(format!("block/zram{id}/disksize"))).ok()?.trim().parse().ok()
}

pub fn control_dir(sys: &Path) -> PathBuf {
    sys.join("class/zram-control")
}

/// Whether zram devices can be added (`/sys/class/zram-control/hot_add`).
pub fn can_add(sys: &Path) -> bool {
    control_dir(sys).join("hot_add").exists()
}

/// Algorithms the kernel's zram offers (read from any zram device).
pub fn algorithms(sys: &Path) -> Option<Vec<String>> {
    device_ids(sys).into_iter().find_map(|id| {
        let t = std::fs::read_to_string(sys.join(format!("block/zram{id}/comp_algorithm"))).ok()?;
        probe::zram::parse_comp_algorithm(&t).ok().map(|c| c.available)
    })
}

/// /dev node of a zram device.
pub fn dev_path(id: u32) -> PathBuf {
    PathBuf::from(format!("/dev/zram{id}"))
}

/// Swapoff (if active), reset, hot_remove.
pub fn remove_device(sys: &Path, id: u32) -> Result<()> {
    let dev = dev_path(id);
    if crate::swap::is_active(&dev) {
        crate::swap::swapoff(&dev)?;
    }
    let block = sys.join(format!("block/zram{id}"));
    let w = |p: PathBuf, v: String| std::fs::write(&p, v).map_err(|e| SandboxError::io("writing", p, e));
    // reset frees the memory; hot_remove then deletes the device.
    w(block.join("reset"), "1".into())?;
    w(control_dir(sys).join("hot_remove"), id.to_string())
}
