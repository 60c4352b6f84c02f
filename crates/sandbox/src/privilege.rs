//! Who we are: root, and the capabilities that matter to pagelab.

/// Capability numbers (linux/capability.h).
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_SYS_RESOURCE: u32 = 24;

pub fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The effective capability mask, from /proc/self/status `CapEff`.
pub fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

pub fn has_cap(cap: u32) -> bool {
    effective_caps() & (1u64 << cap) != 0
}

/// Fails with a message that names the operation and what it needs.
pub fn require_admin(op: &str, hint: &str) -> crate::error::Result<()> {
    if is_root() && has_cap(CAP_SYS_ADMIN) {
        return Ok(());
    }
    Err(crate::SandboxError::NeedsPrivilege {
        op: op.to_string(),
        need: "root (CAP_SYS_ADMIN)".to_string(),
        hint: if hint.is_empty() { String::new() } else { format!("; {hint}") },
    })
}
