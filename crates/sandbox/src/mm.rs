//! Requests to the kernel's memory management that change no setting: they
//! reset or advance per-page state that the kernel itself resets and advances
//! all the time, so there is nothing to journal and nothing to restore.
//! Each takes the root of its filesystem so that tests can point it at a fake
//! tree.

use std::path::Path;

/// Clears the referenced bits of every page of `pid` (`/proc/PID/clear_refs`,
/// value 1; Documentation/admin-guide/mm/soft-dirty.rst and proc(5)). The
/// kernel's own reclaim clears them as it scans; this only starts a window.
pub fn clear_refs(proc_root: &Path, pid: i32) -> std::io::Result<()> {
    std::fs::write(proc_root.join(pid.to_string()).join("clear_refs"), "1")
}

/// Asks MGLRU to age memory cgroup `memcg_id` on `node` once, from its
/// youngest generation `max_seq` (debugfs `lru_gen`, the command
/// `+ memcg_id node_id max_gen_nr [can_swap [force_scan]]` of
/// Documentation/admin-guide/mm/multigen_lru.rst). can_swap 1 ages anon
/// pages even without swap; force_scan 1 walks the page tables even where the
/// kernel's Bloom filters would skip them. Aging opens a new generation, as
/// the kernel does on its own under pressure; it evicts nothing.
pub fn lru_gen_age(sys_root: &Path, memcg_id: u64, node: u32, max_seq: u64) -> std::io::Result<()> {
    let cmd = format!("+ {memcg_id} {node} {max_seq} 1 1");
    std::fs::write(sys_root.join("kernel/debug/lru_gen"), &cmd)
        .map_err(|e| std::io::Error::new(e.kind(), format!("'{cmd}': {e}")))
}
