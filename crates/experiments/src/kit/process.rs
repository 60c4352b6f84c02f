//! What experiments ask of another process: whether a `--pid` may be
//! measured at all, and its private mappings (for process_madvise and reads).

use probe::Probe;
use workloads::observe::ExperimentError;

fn refuse(msg: String) -> ExperimentError {
    ExperimentError::Sandbox(sandbox::SandboxError::Invalid(msg))
}

/// Refuses what pagelab must never measure or page out: no such process,
/// PID 1, a kernel thread, a thread id given for its process.
pub fn check_pid(p: &mut Probe, pid: i32) -> Result<(), ExperimentError> {
    match p.pid_status(pid).ok().flatten() {
        None if pid > 0 => Err(refuse(format!("--pid {pid}: no such process"))),
        None => Err(refuse(format!("--pid {pid}: not a process id (expected a positive integer)"))),
        Some(_) if pid == 1 => Err(refuse("--pid 1: refusing to measure init (PID 1)".into())),
        Some(s) if s.vm_rss.is_none() => Err(refuse(format!("--pid {pid}: a kernel thread, which has no user memory"))),
        Some(_) => match tgid_of(p, pid) {
            // /proc/TID answers for a thread too, but pidfd_open does not
            // (issue 46 item 10: a thread id started a run that failed late).
            Some(tgid) if tgid != pid => {
                Err(refuse(format!("--pid {pid}: a thread of process {tgid}, not a process; give --pid {tgid}")))
            }
            _ => Ok(()),
        },
    }
}

/// The process (thread group) a task id belongs to, from /proc/ID/status.
fn tgid_of(p: &Probe, pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(p.roots().proc.join(format!("{pid}/status"))).ok()?;
    text.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// The process's private mappings, as process_madvise ranges.
pub fn private_ranges(p: &mut Probe, pid: i32) -> Result<Vec<(usize, usize)>, String> {
    ranges(p, pid, |m| m.is_private())
}

/// The private mappings that can be read (not `---p`: a PROT_NONE
/// reservation holds no pages to page out, however large).
pub fn readable_private_ranges(p: &mut Probe, pid: i32) -> Result<Vec<(usize, usize)>, String> {
    ranges(p, pid, |m| m.is_private() && m.perms.starts_with('r'))
}

fn ranges(
    p: &mut Probe,
    pid: i32,
    keep: impl Fn(&probe::process::MapEntry) -> bool,
) -> Result<Vec<(usize, usize)>, String> {
    let maps = p.pid_maps(pid).map_err(|e| e.to_string())?.ok_or("the process is gone")?;
    Ok(maps.iter().filter(|m| keep(m) && !m.is_empty() && m.name != "[vsyscall]").map(|m| (m.start, m.len())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_targets_are_refused() {
        let e = check_pid(&mut Probe::default(), 1).unwrap_err().to_string();
        assert!(e.contains("init"), "{e}");
        let e = check_pid(&mut Probe::default(), 2).unwrap_err().to_string();
        assert!(e.contains("kernel thread"), "{e}");
        let e = check_pid(&mut Probe::default(), i32::MAX).unwrap_err().to_string();
        assert!(e.contains("no such process"), "{e}");
        assert!(check_pid(&mut Probe::default(), std::process::id() as i32).is_ok());
    }

    #[test]
    fn readable_ranges_leave_out_a_reservation_with_no_access() {
        let len = 64 << 20;
        // SAFETY: a fresh anonymous PROT_NONE reservation, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let me = std::process::id() as i32;
        let at = p as usize;
        assert!(private_ranges(&mut Probe::default(), me).unwrap().iter().any(|r| r.0 <= at && at < r.0 + r.1));
        assert!(
            !readable_private_ranges(&mut Probe::default(), me).unwrap().iter().any(|r| r.0 <= at && at < r.0 + r.1)
        );
        // SAFETY: the mapping made above, unmapped once.
        unsafe { libc::munmap(p, len) };
    }
}
