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

/// What the kernel gives each memory cgroup made on a fake tree, for a run
/// that reads its group (tests without root): until dropped, a thread
/// writes into every group made under `root`'s `sys/fs/cgroup/pagelab`
/// the files a v2 kernel gives a new group at once: `memory.current` and
/// `memory.peak` at `usage` bytes, `memory.events` with no event, and a
/// calm `memory.pressure`. Each group once, when it appears (never again:
/// a group being removed is left to go).
pub struct FakeKernel {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeKernel {
    pub fn start(root: &Path, usage: u64) -> FakeKernel {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, groups) = (stop.clone(), root.join("sys/fs/cgroup/pagelab"));
        let thread = std::thread::spawn(move || {
            let mut seen = std::collections::HashSet::new();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                for dir in std::fs::read_dir(&groups).into_iter().flatten().flatten().map(|e| e.path()) {
                    if dir.is_dir() && seen.insert(dir.clone()) {
                        let _ = populate(&dir, usage);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        FakeKernel { stop, thread: Some(thread) }
    }
}

fn populate(dir: &Path, usage: u64) -> std::io::Result<()> {
    std::fs::write(dir.join("memory.current"), format!("{usage}\n"))?;
    std::fs::write(dir.join("memory.peak"), format!("{usage}\n"))?;
    std::fs::write(dir.join("memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")?;
    let calm = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    std::fs::write(dir.join("memory.pressure"), calm)
}

impl Drop for FakeKernel {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
