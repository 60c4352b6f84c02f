//! The run's memory cgroup: its first limit, its swappiness on v1, and its
//! swap capped beside a host swap.

use super::*;
use workloads::observe::ExperimentError;

/// The run's group: unlimited at first (bounded by the plan's total, for
/// safety: the idle workers' own usage is measured before the limit is
/// set); on v1 with the arm's swappiness, since a v1 group reclaims by its
/// own, taken from its parent when made (v2 has none); and its swap capped
/// at `swap_cap` beside a host swap ([`cap_swap`]; a note in `r` where the
/// kernel cannot).
pub(super) fn make_group(
    sb: &mut sandbox::Sandbox,
    p: &mut probe::Probe,
    plan: &Plan,
    x: &Extras,
    swap_cap: Option<u64>,
    r: &mut ThrashResult,
) -> Result<sandbox::cgroup::MemCgroup, ExperimentError> {
    let total = plan.consumers as u64 * plan.size_bytes;
    let start_limit = total + (plan.consumers as u64 + 8) * WORKER_OVERHEAD + (64 << 20);
    let v1 = matches!(p.memory_controller(), Ok(Some((probe::cgroup::CgroupVersion::V1, _))));
    let swappiness =
        x.sysctls.iter().find(|(k, _)| *k == "vm.swappiness").and_then(|(_, v)| v.parse().ok()).filter(|_| v1);
    let limits = sandbox::cgroup::Limits { max: Some(start_limit), swappiness, ..Default::default() };
    let cg = sb.memory_cgroup("thrash", &limits)?;
    if let Some(swap) = swap_cap
        && let Some(n) = cap_swap(&cg, &sandbox::cgroup::Limits { swap_max: Some(swap), ..limits }, v1)?
    {
        r.notes.push(n);
    }
    Ok(cg)
}

/// How the note of a run whose swap could not be capped starts.
pub(crate) const UNCAPPED: &str = "the host's own swap is active";

/// Caps the group's swap at `limits.swap_max` where the kernel can (v2
/// memory.swap.max; v1 memsw with swap accounting, whose allowance then
/// survives the guard's raises: `MemCgroup::set_max`): beside the host's
/// own swap, which would take what the run's store does not (or all of it,
/// in a run without one). Returns a note where it cannot.
pub(crate) fn cap_swap(
    cg: &sandbox::cgroup::MemCgroup,
    limits: &sandbox::cgroup::Limits,
    v1: bool,
) -> Result<Option<String>, ExperimentError> {
    let knobs = cg.knobs();
    if (v1 && knobs.memsw) || (!v1 && knobs.swap_max) {
        cg.apply(limits)?;
        return Ok(None);
    }
    Ok(Some(format!("{UNCAPPED} and this kernel cannot cap a group's swap (no swap accounting): the run may have paged into it")))
}


/// Limits the I/O the group's processes make on the disk under the run's
/// swap file to `iops` reads and writes a second (`jank --swap-iops`: a
/// slow drive). Returns the note that says so; Err where the run made no
/// swap file, its file system is on no block device, or the kernel cannot
/// limit the group's I/O.
pub(crate) fn slow_disk(
    sb: &mut sandbox::Sandbox,
    cg: &mut sandbox::cgroup::MemCgroup,
    swap_file: Option<&std::path::Path>,
    iops: u64,
) -> Result<String, ExperimentError> {
    let file = swap_file.ok_or_else(|| {
        sandbox::SandboxError::Invalid("--swap-iops: this arm made no swap file (only swapfile and zswap do)".into())
    })?;
    let (disk, name) = sandbox::disk::disk_of(&sb.roots().sys, file)
        .map_err(|e| sandbox::SandboxError::Unsupported(format!("--swap-iops: {e}")))?;
    let said = sb.io_limit(cg, disk, iops)?;
    let zswap = if sb.probe().zswap().enabled == Some(true) {
        "; zswap is on here, so the run's pages are kept compressed in RAM first and the drive sees only what zswap \
         writes back or rejects"
    } else {
        ""
    };
    Ok(format!("a slow drive: the swap file's disk, {name}: {said}{zswap}"))
}
