//! The run lock: one pagelab experiment at a time on a machine.
//!
//! Two runs at once corrupt each other's figures: every store pagelab makes has
//! the top swap priority, so the kernel spreads both runs' pages over both
//! stores; a run with `--backing auto` takes the other's private zram for "the
//! user's existing swap"; and two zswap runs record each other's settings as
//! "previous" and write the wrong one back. So every experiment (and `lab`, for
//! all its steps) holds an exclusive `flock` on one lock file for as long as it
//! runs. The kernel drops the lock when the holder dies, however it dies, so a
//! lock is never stale.
//!
//! A second run waits for the first (saying whom it waits for), or with
//! `--no-wait` refuses at once. `lab` hands its lock to its children through an
//! inherited descriptor named in `PAGELAB_RUN_LOCK_FD`; a child accepts it only
//! if that descriptor is the lock file and already holds the lock.

use crate::error::{Result, SandboxError};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable through which `lab` passes its lock to a child.
pub const ENV_FD: &str = "PAGELAB_RUN_LOCK_FD";

/// The lock file: in /run/lock (world-writable and sticky on Debian and most
/// distributions, so unprivileged runs take the same lock), else the temp dir.
pub fn path() -> PathBuf {
    let dir = Path::new("/run/lock");
    let dir = if dir.is_dir() { dir.to_path_buf() } else { std::env::temp_dir() };
    dir.join("pagelab.lock")
}

/// Who holds the lock, as it wrote itself into the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    pub pid: i32,
    pub what: String,
    pub since_unix_s: u64,
}

impl Holder {
    fn parse(text: &str) -> Option<Holder> {
        let mut it = text.split_whitespace();
        let pid = it.next()?.parse().ok()?;
        let since_unix_s = it.next()?.parse().ok()?;
        let what = it.collect::<Vec<_>>().join(" ");
        Some(Holder { pid, what, since_unix_s })
    }

    pub fn describe(&self) -> String {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let what = if self.what.is_empty() { "a run".to_string() } else { format!("`pagelab {}`", self.what) };
        format!("{what} (pid {}, for {} s)", self.pid, now.saturating_sub(self.since_unix_s))
    }
}

/// The held lock. Dropping it releases the lock (unless a child still holds a copy).
#[derive(Debug)]
pub struct RunLock {
    file: File,
}

fn flock_nb(fd: i32) -> std::io::Result<bool> {
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) { Ok(false) } else { Err(e) }
}

fn open(path: &Path) -> Result<File> {
    let rw = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path);
    match rw {
        Ok(f) => Ok(f),
        // Another user's lock file: flock works on a read-only descriptor too.
        Err(_) => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| SandboxError::io("opening the run lock", path, e)),
    }
}

/// The lock `lab` passed down, if the named descriptor really is the lock file
/// and holds the lock (flock again on the same open file succeeds only then).
fn inherited(path: &Path) -> Option<RunLock> {
    let fd: i32 = std::env::var(ENV_FD).ok()?.parse().ok()?;
    if fd < 3 {
        return None;
    }
    let want = std::fs::metadata(path).ok()?;
    // SAFETY: a C struct of integers (and pointers), for which all-zero bytes are a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat with a valid out-pointer; a bad fd just fails.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_ino != want.ino() || st.st_dev != want.dev() {
        return None;
    }
    // Whether this descriptor's open file already holds the lock: a lock held by
    // another open file makes this fail with EWOULDBLOCK.
    if !flock_nb(fd).ok()? {
        return None;
    }
    // Close-on-exec again: this process's own workers need not hold it.
    // SAFETY: fcntl on an open descriptor.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: the descriptor is open (fstat succeeded) and from here on ours.
    Some(RunLock { file: unsafe { File::from_raw_fd(fd) } })
}

/// Takes the run lock for `what` (e.g. "eat"). When another run holds it: with
/// `wait`, calls `on_wait` once with the holder and waits (polling `stop`, which
/// ends the wait with an error); without, refuses with the holder named.
pub fn acquire(what: &str, wait: bool, stop: &dyn Fn() -> bool, on_wait: &mut dyn FnMut(&Holder)) -> Result<RunLock> {
    let path = path();
    if let Some(l) = inherited(&path) {
        return Ok(l);
    }
    let mut file = open(&path)?;
    let mut told = false;
    let started = Instant::now();
    loop {
        match flock_nb(file.as_raw_fd()) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => return Err(SandboxError::io("locking", &path, e)),
        }
        let holder = read_holder(&mut file).unwrap_or_default();
        if !wait {
            return Err(SandboxError::Busy(format!(
                "another pagelab run holds the machine: {}; its stores and figures would mix with this run's. \
Wait for it (run again without --no-wait to wait) or stop it",
                holder.describe()
            )));
        }
        if !told {
            on_wait(&holder);
            told = true;
        }
        if stop() {
            return Err(SandboxError::Other(format!(
                "stopped while waiting {:.0} s for the run lock",
                started.elapsed().as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Say who holds it, for whoever waits next (best effort: the file may be
    // another user's, open read-only).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let line = format!("{} {now} {what}\n", std::process::id());
    let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(line.as_bytes()));
    Ok(RunLock { file })
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut s = String::new();
    file.rewind().ok()?;
    file.take(4096).read_to_string(&mut s).ok()?;
    Holder::parse(&s)
}

impl RunLock {
    /// Lets a child process inherit the lock: clears close-on-exec on the
    /// descriptor and returns the environment variable to give the child.
    pub fn for_child(&self) -> (&'static str, String) {
        let fd = self.file.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            }
        }
        (ENV_FD, fd.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_line_round_trips() {
        let h = Holder::parse("812 1700000000 eat\n").unwrap();
        assert_eq!(h, Holder { pid: 812, what: "eat".into(), since_unix_s: 1_700_000_000 });
        assert!(h.describe().starts_with("`pagelab eat` (pid 812, for "), "{}", h.describe());
        assert!(Holder::parse("").is_none());
        assert!(Holder::parse("x 1 eat").is_none());
    }
}
