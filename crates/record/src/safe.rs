//! The one way pagelab writes a file. It runs as root, often in a directory
//! somebody else made (a run directory copied from another machine, a lab
//! directory in /tmp), so a name there may be a symbolic link to
//! /etc/shadow, a FIFO that blocks the writer, or a device node. Every output
//! file goes through here:
//!
//! - the final component is never followed (`O_NOFOLLOW`), and a path that
//!   exists must be a regular file: anything else is refused with an error that
//!   names the path and what it is ([`Refused`]);
//! - a whole file is written to a temporary file made with `O_EXCL` under an
//!   unpredictable name in the same directory, then renamed over the target;
//!   the temporary file is removed on every error path (a full disk included);
//! - an appended or streamed file is opened with `O_NOFOLLOW | O_NONBLOCK` and
//!   checked with `fstat` after the open, so a FIFO planted in the race between
//!   the check and the open neither blocks nor receives data.
//!
//! docs/security.md lists what pagelab trusts and the tests that show it.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A path pagelab will not write: it exists and is not a regular file.
#[derive(Debug)]
pub struct Refused {
    pub path: PathBuf,
    /// "a symbolic link", "a directory", "a FIFO", "a device node", "a socket".
    pub what: &'static str,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: is {}; pagelab writes only regular files and new paths (remove it or give another path)",
            self.path.display(),
            self.what
        )
    }
}

impl std::error::Error for Refused {}

/// Whether an I/O error is a [`Refused`] (bad input: exit 2).
pub fn is_refused(e: &Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Refused>())
}

fn refuse(path: &Path, what: &'static str) -> Error {
    Error::new(ErrorKind::InvalidInput, Refused { path: path.to_path_buf(), what })
}

/// What kind of thing a file type is, for [`Refused`].
fn kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device node")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Ok when `path` does not exist or is a regular file (not a link to one).
pub fn check_target(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => match kind(m.file_type()) {
            None => Ok(()),
            Some(what) => Err(refuse(path, what)),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// An unpredictable suffix for a temporary name (the clock and the pid mixed
/// with the address of a local, through SplitMix64).
fn nonce() -> u64 {
    let local = 0u8;
    let mut z = probe::sample::monotonic_ns()
        ^ (std::process::id() as u64).rotate_left(32)
        ^ (&local as *const u8 as u64).rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Opens a file after checking it: never through a link, never blocking on a
/// FIFO, and only a regular file once open.
fn open_checked(path: &Path, o: &mut OpenOptions) -> std::io::Result<File> {
    check_target(path)?;
    let f = o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path).map_err(|e| {
        // ELOOP: the last component became a link after the check.
        if e.raw_os_error() == Some(libc::ELOOP) { refuse(path, "a symbolic link") } else { e }
    })?;
    match kind(f.metadata()?.file_type()) {
        None => Ok(f),
        Some(what) => Err(refuse(path, what)),
    }
}

/// Opens `path` for appending, creating it (mode 0644) if it is new.
pub fn append(path: &Path) -> std::io::Result<File> {
    open_checked(path, OpenOptions::new().append(true).create(true).mode(0o644))
}

/// Creates `path` (or truncates the regular file there) for streaming into.
pub fn create(path: &Path) -> std::io::Result<File> {
    open_checked(path, OpenOptions::new().write(true).create(true).truncate(true).mode(0o644))
}

/// Creates `path`, which must not exist (`O_EXCL`): the claim on a new file.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Writes `bytes` to `path` whole: a temporary file beside it, then a rename.
/// A reader sees the old file or the new one, never half of one.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, |f| f.write_all(bytes))
}

/// Like [`write`], with the content streamed by `fill`. An error names the
/// file, and says what a fault means for it (issue 59): a full disk, a
/// directory removed or made read-only midway; nothing was written then.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut File) -> std::io::Result<()>) -> std::io::Result<()> {
    write_whole(path, fill).map_err(|e| {
        // A refusal says its own words, and so does an error of `fill`'s own
        // making; the system's errors (no path in them) get the file's name.
        if is_refused(&e) || e.raw_os_error().is_none() {
            return e;
        }
        let what = match e.raw_os_error() {
            Some(libc::ENOSPC) => "the disk is full".to_string(),
            Some(libc::ENOENT) => "its directory is gone".to_string(),
            Some(libc::EROFS) => "the file system is read-only".to_string(),
            _ => e.to_string(),
        };
        Error::new(e.kind(), format!("{}: {what} (nothing was written)", path.display()))
    })
}

fn write_whole(path: &Path, fill: impl FnOnce(&mut File) -> std::io::Result<()>) -> std::io::Result<()> {
    check_target(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| refuse(path, "not a file name"))?;
    let (tmp, mut f) = (0..16)
        .find_map(|_| {
            let tmp = dir.join(format!(".{}.{:016x}.tmp", name.to_string_lossy(), nonce()));
            match create_new(&tmp) {
                Err(e) if e.kind() == ErrorKind::AlreadyExists => None,
                r => Some(r.map(|f| (tmp, f))),
            }
        })
        .unwrap_or_else(|| Err(Error::new(ErrorKind::AlreadyExists, "no free temporary name")))?;
    let r = fill(&mut f).and_then(|_| f.sync_data()).and_then(|_| {
        // A link or a device put there since the first check is refused too;
        // rename itself never follows one.
        check_target(path)?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    });
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Makes a rename in `dir` durable: the file's data was synced before the
/// rename, and the directory entry is synced here, so that a power loss after
/// a write reported as done cannot lose it (issue 59). A file system that
/// cannot sync a directory (EINVAL) has nothing to make durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let d = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(dir)?;
    match d.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EROFS | libc::ENOTSUP)) => Ok(()),
        r => r,
    }
}

/// Like [`write`], for a file of a run directory that someone else may
/// control (a step of a lab in /tmp). The directory is opened once, without
/// following a link at its last component (`O_DIRECTORY | O_NOFOLLOW`), and
/// the temporary file is made and renamed inside that open directory (through
/// `/proc/self/fd/N`): a directory swapped for a link after a check cannot
/// redirect the write (issue 46: "no link in any component").
pub fn write_in_run_dir(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| refuse(path, "not a file name"))?;
    if path.components().any(|c| c == std::path::Component::ParentDir) {
        return Err(refuse(path, "a path through `..`"));
    }
    let d = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | crate::rundir::no_follow(dir) | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| match e.raw_os_error() {
            // A link at the last component: ELOOP, or ENOTDIR with O_DIRECTORY.
            Some(libc::ELOOP | libc::ENOTDIR) => match std::fs::symlink_metadata(dir).map(|m| kind(m.file_type())) {
                Ok(Some(what)) => refuse(dir, what),
                _ => e,
            },
            // The run directory removed midway (issue 59): named, and never
            // made again here.
            Some(libc::ENOENT) => {
                Error::new(e.kind(), format!("{}: its directory {} is gone ({e})", path.display(), dir.display()))
            }
            _ => Error::new(e.kind(), format!("{}: opening its directory {}: {e}", path.display(), dir.display())),
        })?;
    let via = PathBuf::from(format!("/proc/self/fd/{}", d.as_raw_fd())).join(name);
    write(&via, bytes).map_err(|e| {
        // Name the path the caller gave, not the descriptor's.
        match e.get_ref().and_then(|x| x.downcast_ref::<Refused>()) {
            Some(r) => refuse(path, r.what),
            None => {
                Error::new(e.kind(), e.to_string().replace(&via.display().to_string(), &path.display().to_string()))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_run_directory_that_is_a_link_is_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let step = d.path().join("eat");
        symlink(&outside, &step).unwrap();
        let e = write_in_run_dir(&step.join("eat.md"), b"x").unwrap_err();
        assert!(is_refused(&e) && e.to_string().contains("eat: is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written through the link");
        // A real directory is written, the file whole, no temporary left.
        std::fs::remove_file(&step).unwrap();
        std::fs::create_dir(&step).unwrap();
        write_in_run_dir(&step.join("eat.md"), b"table").unwrap();
        assert_eq!(std::fs::read(step.join("eat.md")).unwrap(), b"table");
        assert_eq!(std::fs::read_dir(&step).unwrap().count(), 1);
        // A link at the file's own name is refused under its own name.
        symlink(outside.join("x"), step.join("x.svg")).unwrap();
        let e = write_in_run_dir(&step.join("x.svg"), b"x").unwrap_err();
        assert_eq!(e.to_string().split(':').next().unwrap(), step.join("x.svg").display().to_string(), "{e}");
        assert!(!outside.join("x").exists());
    }

    #[test]
    fn a_link_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "secret").unwrap();
        let link = d.path().join("report.html");
        symlink(&victim, &link).unwrap();
        for r in [write(&link, b"x").map(|_| ()), append(&link).map(|_| ()), create(&link).map(|_| ())] {
            let e = r.unwrap_err();
            assert!(is_refused(&e), "{e}");
            assert!(e.to_string().contains("is a symbolic link"), "{e}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_fifo_or_directory_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("events.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: c is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(append(&fifo).unwrap_err().to_string().contains("is a FIFO"));
        assert!(write(&fifo, b"x").unwrap_err().to_string().contains("is a FIFO"));
        assert!(write(d.path(), b"x").unwrap_err().to_string().contains("is a directory"));
        assert!(create(Path::new("/dev/null")).unwrap_err().to_string().contains("is a device node"));
    }

    #[test]
    fn a_regular_file_is_replaced_whole_and_appended_to() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.json");
        write(&p, b"one").unwrap();
        write(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        append(&p).unwrap().write_all(b"+").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two+");
        // A failed fill leaves the old file and no temporary one.
        let e = write_with(&p, |_| Err(Error::other("boom"))).unwrap_err();
        assert_eq!(e.to_string(), "boom");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two+");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        assert!(create_new(&p).is_err(), "O_EXCL");
        assert_ne!(nonce(), nonce());
    }
}
