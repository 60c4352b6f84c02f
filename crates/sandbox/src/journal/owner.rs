//! Whether a journal's owner is alive, and its lock: a dead owner's lock can
//! outlive it for a moment in a child it forked (see [`lock_unless_live`]).

use super::Header;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// How long one restore waits, over all its journals, for locks that
/// outlive their owner (see [`lock_unless_live`]).
pub(super) const INHERITED_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What became of a journal's lock.
pub(super) enum Lock {
    /// Taken: its owner is dead and nothing else holds it.
    Taken,
    /// Its owner is alive (or cannot be told dead).
    Live,
    /// Its owner (this pid) is dead, but the lock was still held at the deadline.
    HeldAfterOwner(u32),
}

/// Takes the journal's lock, which a live owner holds. The lock belongs to the
/// open file, so a child the owner forked holds it too until it execs or dies
/// (every descriptor is close-on-exec): a worker killed by its parent-death
/// signal between fork and exec (it joins its cgroup there, a write that can
/// wait on the kernel's cgroup lock) can still hold it for a moment after its
/// owner was killed and reaped. While the owner named in the header is gone,
/// the lock is therefore waited for, until `deadline` (one for the whole
/// restore), not taken as a sign of life; a live owner's journal is left at
/// once, and a lock still held at the deadline is reported, never called live.
pub(super) fn lock_unless_live(file: &File, deadline: std::time::Instant) -> Lock {
    loop {
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Lock::Taken;
        }
        // The header only, through this descriptor (the path may be gone).
        let header =
            read_all(file).ok().and_then(|t| t.lines().next().and_then(|l| serde_json::from_str::<Header>(l).ok()));
        let Some(h) = header.filter(|h| !owner_alive(h)) else {
            return Lock::Live;
        };
        if std::time::Instant::now() >= deadline {
            return Lock::HeldAfterOwner(h.pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The whole file, read from its start through `file` (not its path, which
/// another restorer may have removed).
pub(super) fn read_all(file: &File) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = file.read_at(&mut chunk, buf.len() as u64)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Whether the process a journal names is alive: its pid exists with the same
/// start time (a header without one: the pid exists), and is not a zombie.
pub(super) fn owner_alive(h: &Header) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", h.pid)) else {
        return false;
    };
    // Fields after the command name, which is in parentheses and may hold any byte.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect::<Vec<_>>()) else {
        return true;
    };
    // rest[0] is field 3 (the state), rest[19] field 22 (the start time).
    if matches!(rest.first(), Some(&"Z") | Some(&"X")) {
        return false;
    }
    match (h.starttime, rest.get(19).and_then(|t| t.parse::<u64>().ok())) {
        (Some(want), Some(got)) => want == got,
        _ => true,
    }
}

/// The processes that hold `path` open, for a message: "pid 12 (pagelab)",
/// from their /proc/PID/fd links; "another process" when none can be read.
pub(super) fn holders(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(want) = std::fs::metadata(path).map(|m| (m.dev(), m.ino())) else {
        return "another process".into();
    };
    let mut found = Vec::new();
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let fds = std::fs::read_dir(p.path().join("fd")).into_iter().flatten().flatten();
        if fds.filter_map(|fd| std::fs::metadata(fd.path()).ok()).any(|m| (m.dev(), m.ino()) == want) {
            let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            found.push(format!("pid {pid} ({})", comm.trim()));
        }
    }
    if found.is_empty() { "another process".into() } else { found.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(pid: u32, starttime: Option<u64>) -> Header {
        Header { journal: 1, pid, starttime, boot_id: String::new(), label: "t".into(), created_unix_ms: 0 }
    }

    /// Field 22 of this process's stat: its start time.
    fn my_starttime() -> u64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
    }

    #[test]
    fn an_owner_is_alive_only_as_the_same_running_process() {
        let me = std::process::id();
        assert!(owner_alive(&header(me, Some(my_starttime()))));
        assert!(owner_alive(&header(me, None)));
        // The same pid with another start time: a reused pid, not the owner.
        assert!(!owner_alive(&header(me, Some(my_starttime() + 1))));
        // A reaped child's pid: gone.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        assert!(!owner_alive(&header(dead, None)));
        // A zombie (exited, not reaped yet) is dead too.
        let z = std::process::Command::new("true").spawn().unwrap();
        let zpid = z.id();
        let t0 = std::time::Instant::now();
        while !std::fs::read_to_string(format!("/proc/{zpid}/stat")).unwrap().contains(") Z") {
            assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the child never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!owner_alive(&header(zpid, None)));
        let mut z = z;
        z.wait().unwrap();
    }

    /// A lock held past the deadline by someone else, its owner dead, is
    /// reported as such (never "live"); a live owner's is live at once.
    #[test]
    fn a_lock_held_past_the_deadline_is_named_not_called_live() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1-0-0.journal");
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let line = |pid: u32| {
            format!("{{\"journal\":1,\"pid\":{pid},\"boot_id\":\"\",\"label\":\"t\",\"created_unix_ms\":0}}\n")
        };
        std::fs::write(&path, line(dead)).unwrap();
        let holder = File::open(&path).unwrap();
        // SAFETY: flock on an fd we own.
        assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        let file = File::open(&path).unwrap();
        let past = std::time::Instant::now();
        assert!(matches!(lock_unless_live(&file, past), Lock::HeldAfterOwner(p) if p == dead));
        assert!(holders(&path).contains(&format!("pid {}", std::process::id())), "{}", holders(&path));
        std::fs::write(&path, line(std::process::id())).unwrap();
        let far = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let t0 = std::time::Instant::now();
        assert!(matches!(lock_unless_live(&file, far), Lock::Live));
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        drop(holder);
        // A child another test forks meanwhile holds a copy of holder's
        // descriptor, and so its lock, until it execs: a moment, waited for.
        let t0 = std::time::Instant::now();
        while !matches!(lock_unless_live(&file, past), Lock::Taken) {
            assert!(t0.elapsed() < std::time::Duration::from_secs(5), "the lock was not free after its holder closed");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(read_all(&file).unwrap(), line(std::process::id()));
    }
}
