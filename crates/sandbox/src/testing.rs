//! Fixtures for tests without root, shared by this crate's tests and by the
//! experiments' own: a kernel tree made of plain files under a temporary
//! root, which `Sandbox::with_roots` (and `probe`'s roots) read as the real one.

use std::path::Path;

/// Writes a pure cgroup-v2 machine under `root`: `proc/self/mountinfo` with
/// cgroup2 at /sys/fs/cgroup, a `proc/meminfo` of 4 GiB (about 2.9 GiB
/// available), and a root group whose controllers and subtree control
/// include memory. No kernel is behind it: a file written there stays as written.
pub fn fake_cgroup_v2(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("proc/self"))?;
    std::fs::write(
        root.join("proc/self/mountinfo"),
        "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
    )?;
    std::fs::write(root.join("proc/meminfo"), "MemTotal:  4194304 kB\nMemAvailable: 3000000 kB\n")?;
    std::fs::create_dir_all(root.join("sys/fs/cgroup"))?;
    std::fs::write(root.join("sys/fs/cgroup/cgroup.controllers"), "cpu io memory pids\n")?;
    std::fs::write(root.join("sys/fs/cgroup/cgroup.subtree_control"), "cpu io memory pids\n")?;
    Ok(())
}

/// The usage, and peak, a fake group reads ([`kernel_files`]): 8 MiB.
pub const FAKE_USAGE: u64 = 8 << 20;

/// What a v2 kernel gives a new group at once, written into `dir` (a group
/// made on a fake tree; `Sandbox::with_kernel_files`): `memory.current`
/// and `memory.peak` at [`FAKE_USAGE`], `memory.events` with no event, a
/// calm `memory.pressure`, and an empty `cgroup.procs`. No kernel is behind
/// them: they stay as written.
pub fn kernel_files(dir: &Path) -> std::io::Result<()> {
    std::fs::write(dir.join("memory.current"), format!("{FAKE_USAGE}\n"))?;
    std::fs::write(dir.join("memory.peak"), format!("{FAKE_USAGE}\n"))?;
    std::fs::write(dir.join("memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")?;
    let calm = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    std::fs::write(dir.join("memory.pressure"), calm)?;
    std::fs::write(dir.join("cgroup.procs"), "")
}
