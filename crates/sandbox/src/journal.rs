//! The journal: what was there before each change, on disk before the change.
//!
//! One file per sandbox, `/run/pagelab/<pid>-<n>-<nanos>.journal`, of JSON lines:
//!
//! ```text
//! {"journal":1,"pid":812,"starttime":4711,"boot_id":"…","label":"eat"}   header
//! {"seq":1,"change":{"op":"cgroup_dir",…}}     written and fsynced before the change
//! {"seq":1,"update":{"op":"zram_device",…}}    more facts learned after it (zram id)
//! {"seq":1,"undone":true}                      after the undo succeeded
//! ```
//!
//! The owner holds an exclusive `flock` on its journal for as long as it lives; the
//! kernel drops the lock when the process dies, however it dies. A journal whose
//! lock can be taken therefore belongs to a dead process, and its remaining changes
//! are undone, newest first. A journal from an earlier boot (`boot_id` differs) is
//! discarded: the reboot already undid its changes, and device numbers may now
//! belong to someone else.
//!
//! Undo actions are idempotent, and the "undone" markers are read back from the file
//! before each undo, so two undo passes (a panic hook, then a destructor) never
//! undo twice.

mod half_made;
mod owner;

use crate::cgroup::kill_and_remove;
use crate::error::{Result, SandboxError};
use crate::fault;
use crate::swap;
use owner::{INHERITED_LOCK_WAIT, Lock, holders, lock_unless_live, read_all};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub const DEFAULT_DIR: &str = "/run/pagelab";

/// The journal directory: `PAGELAB_JOURNAL_DIR` if set (tests), else /run/pagelab.
pub fn dir() -> PathBuf {
    std::env::var_os("PAGELAB_JOURNAL_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// Serializes every undo in this process.
static UNDO_LOCK: Mutex<()> = Mutex::new(());

/// One undoable change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// A cgroup directory pagelab created. Undo: kill and reap its processes, rmdir.
    CgroupDir { path: PathBuf },
    /// A file pagelab overwrote (a sysctl, a zswap parameter). Undo: write `previous` back.
    WriteFile { path: PathBuf, previous: String },
    /// A zram device pagelab hot-added. `id` is unknown until hot_add answered; then
    /// the new device is the one not in `before` that no live journal claims.
    ZramDevice { sys: PathBuf, before: Vec<u32>, id: Option<u32> },
    /// A swap area pagelab activated. Undo: swapoff if still active.
    SwapOn { path: PathBuf },
    /// A swap file pagelab created. Undo: swapoff if active, delete.
    SwapFile { path: PathBuf },
    /// A device node pagelab created with mknod. Undo: delete.
    DeviceNode { path: PathBuf },
    /// A DAMON kdamond pagelab added to an empty kdamonds list, watching `pid`.
    /// Undo: turn it off and empty the list, if the list is still that one.
    DamonKdamond { kdamonds: PathBuf, pid: i32 },
}

impl Change {
    pub fn describe(&self) -> String {
        match self {
            Change::CgroupDir { path } => format!("cgroup {}", path.display()),
            Change::WriteFile { path, previous } => {
                format!("{} (was '{}')", path.display(), previous.trim())
            }
            Change::ZramDevice { id: Some(id), .. } => format!("zram device zram{id}"),
            Change::ZramDevice { id: None, .. } => "zram device (hot_add in progress)".to_string(),
            Change::SwapOn { path } => format!("swap on {}", path.display()),
            Change::SwapFile { path } => format!("swap file {}", path.display()),
            Change::DeviceNode { path } => format!("device node {}", path.display()),
            Change::DamonKdamond { pid, .. } => format!("DAMON kdamond watching pid {pid}"),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Header {
    journal: u32,
    pid: u32,
    starttime: Option<u64>,
    boot_id: String,
    label: String,
    created_unix_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    change: Option<Change>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    update: Option<Change>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    undone: bool,
}

pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// An open journal owned by this process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    next_seq: u64,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn io<T>(what: &str, path: &Path, r: std::io::Result<T>) -> Result<T> {
    r.map_err(|e| SandboxError::io(what, path, e))
}

fn fsync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

impl Journal {
    /// Creates and locks a new journal in `dir` (created with mode 0700 if needed).
    pub fn create(dir: &Path, label: &str) -> Result<Journal> {
        if !dir.exists() {
            let r = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
            io("creating the journal directory", dir, r)?;
        }
        trusted_dir(dir).map_err(|why| {
            SandboxError::Other(format!(
                "journal directory {}: {why}; pagelab keeps its journal only in its own",
                dir.display()
            ))
        })?;
        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = dir.join(format!("{pid}-{n}-{}.journal", probe::sample::monotonic_ns()));
        // Made under a name no restore reads (`journal_name`), locked and
        // given its header there, and only then linked in place: a restore
        // starting meanwhile (another pagelab's) never finds it unlocked and
        // empty, which it would take for a dead run's and delete.
        let mut making = path.clone().into_os_string();
        making.push(".new");
        let making = PathBuf::from(making);
        let file = io(
            "creating the journal",
            &making,
            OpenOptions::new().create_new(true).append(true).mode(0o600).custom_flags(libc::O_CLOEXEC).open(&making),
        )?;
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let _ = std::fs::remove_file(&making);
            return Err(SandboxError::io("locking the journal", &making, std::io::Error::last_os_error()));
        }
        let mut j = Journal { path: making.clone(), file, next_seq: 1 };
        let header = Header {
            journal: 1,
            pid,
            starttime: probe::Probe::default().pid_stat(pid as i32).ok().flatten().map(|s| s.starttime),
            boot_id: boot_id(),
            label: label.to_string(),
            created_unix_ms: probe::sample::realtime_ns() / 1_000_000,
        };
        let placed = j.append(&serde_json::to_value(&header).expect("header")).and_then(|()| {
            // A link never replaces a file at the new name (rename would).
            io("naming the journal", &path, std::fs::hard_link(&making, &path))
        });
        let _ = std::fs::remove_file(&making);
        placed?;
        j.path = path;
        fsync_dir(dir);
        Ok(j)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append<T: Serialize>(&mut self, v: &T) -> Result<()> {
        let mut line = serde_json::to_vec(v).expect("journal line");
        line.push(b'\n');
        io("writing the journal", &self.path, self.file.write_all(&line))?;
        io("syncing the journal", &self.path, self.file.sync_data())
    }

    /// Records a change before it is made. Returns its sequence number.
    pub fn record(&mut self, change: Change) -> Result<u64> {
        fault::point(&format!("before journaling {}", change.describe()));
        let seq = self.next_seq;
        self.next_seq += 1;
        self.append(&Line { seq, change: Some(change.clone()), update: None, undone: false })?;
        fault::point(&format!("journaled, before making {}", change.describe()));
        Ok(seq)
    }

    /// Records what was learned after making a change (e.g. the zram id).
    pub fn update(&mut self, seq: u64, change: Change) -> Result<()> {
        self.append(&Line { seq, change: None, update: Some(change), undone: false })
    }

    /// Marks change `seq` as never made (its making failed): a restore
    /// must not undo what this run did not do, such as a directory that
    /// already existed under the name it journaled.
    pub fn forget(&mut self, seq: u64) -> Result<()> {
        self.append(&Line { seq, change: None, update: None, undone: true })
    }

    /// Undoes every change not yet undone, newest first. Returns what was done.
    /// On failure the journal keeps the changes still to undo.
    pub fn undo_all(&mut self) -> Result<Vec<String>> {
        let _g = UNDO_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let text = io("reading the journal", &self.path, std::fs::read_to_string(&self.path))?;
        let (_, pending) = parse(&text);
        let mut log = Vec::new();
        let mut first_err = None;
        for (seq, change) in pending.into_iter().rev() {
            fault::point(&format!("before undoing {}", change.describe()));
            match undo(&change, &self.path, false) {
                Ok(msg) => {
                    log.push(msg);
                    self.append(&Line { seq, change: None, update: None, undone: true })?;
                }
                Err(e) => {
                    log.push(format!("could not undo {}: {e}", change.describe()));
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(log),
        }
    }

    /// Deletes the journal file (after a complete undo).
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Parses a journal: the header, and the changes not undone (with updates applied).
fn parse(text: &str) -> (Option<Header>, Vec<(u64, Change)>) {
    let mut lines = text.lines();
    let header = lines.next().and_then(|l| serde_json::from_str::<Header>(l).ok());
    let mut changes: Vec<(u64, Change)> = Vec::new();
    for l in lines {
        // A torn last line (killed mid-write) is skipped: its change was not made yet,
        // because every change is made only after its line is fsynced.
        let Ok(line) = serde_json::from_str::<Line>(l) else {
            continue;
        };
        if let Some(c) = line.change {
            changes.push((line.seq, c));
        } else if let Some(u) = line.update {
            if let Some(slot) = changes.iter_mut().find(|(s, _)| *s == line.seq) {
                slot.1 = u;
            }
        } else if line.undone {
            changes.retain(|(s, _)| *s != line.seq);
        }
    }
    (header, changes)
}

/// zram ids claimed by journals other than `except`.
fn claimed_zram_ids(dir: &Path, except: &Path) -> Vec<u32> {
    let mut ids = Vec::new();
    for p in journal_files(dir) {
        if p == except {
            continue;
        }
        if let Ok(t) = std::fs::read_to_string(&p) {
            for (_, c) in parse(&t).1 {
                if let Change::ZramDevice { id: Some(id), .. } = c {
                    ids.push(id);
                }
            }
        }
    }
    ids
}

/// Whether `path` lies under the system's temporary directory: fake /sys,
/// /proc and cgroup trees of tests live there, and nothing of the host does.
fn in_temp_dir(path: &Path) -> bool {
    let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap_or_else(|_| std::env::temp_dir());
    path.starts_with(&tmp) || path.starts_with(std::env::temp_dir())
}

fn zram_node(path: &Path) -> bool {
    path.parent() == Some(Path::new("/dev"))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("zram"))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

fn pagelab_swap_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("pagelab-") && n.ends_with(".swap"))
}

/// Checks that a journaled change is one pagelab makes, before undoing it: a
/// journal is a file, and `restore` kills processes, removes directories and
/// deletes files on its word. Only these shapes are accepted (fake trees of
/// tests only under the temp directory):
/// - a cgroup named `pagelab`, or a child of one, under /sys/fs/cgroup;
/// - a setting under /proc/sys/vm/, /sys/module/zswap/parameters/ or
///   /sys/kernel/mm/lru_gen/ (MGLRU's enabled and min_ttl_ms);
/// - a zram device of /sys; a swap area that is /dev/zramN or `pagelab-*.swap`;
/// - a swap file `pagelab-*.swap` that is a regular file; a node /dev/zramN;
/// - DAMON's kdamonds list at /sys/kernel/mm/damon/admin/kdamonds.
pub fn validate_change(change: &Change) -> std::result::Result<(), String> {
    let path = match change {
        Change::CgroupDir { path }
        | Change::WriteFile { path, .. }
        | Change::SwapOn { path }
        | Change::SwapFile { path }
        | Change::DeviceNode { path } => path,
        Change::ZramDevice { sys, .. } => sys,
        Change::DamonKdamond { kdamonds, .. } => kdamonds,
    };
    if !path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("{} is not an absolute path without '..'", path.display()));
    }
    let fake = in_temp_dir(path);
    let ok = match change {
        Change::CgroupDir { path } => {
            let named = |p: Option<&Path>| p.and_then(|p| p.file_name()).is_some_and(|n| n == "pagelab");
            (named(Some(path)) || named(path.parent())) && (path.starts_with("/sys/fs/cgroup") || fake)
        }
        Change::WriteFile { path, .. } => {
            let under = |dir: &str| path.parent().is_some_and(|p| p.ends_with(dir));
            (under("sys/vm") || under("module/zswap/parameters") || under("kernel/mm/lru_gen"))
                && (path.starts_with("/proc/sys/vm")
                    || path.starts_with("/sys/module/zswap/parameters")
                    || path.starts_with("/sys/kernel/mm/lru_gen")
                    || fake)
        }
        Change::ZramDevice { sys, .. } => sys == Path::new("/sys") || fake,
        Change::SwapOn { path } => zram_node(path) || pagelab_swap_file(path),
        Change::SwapFile { path } => {
            pagelab_swap_file(path) && std::fs::symlink_metadata(path).map(|m| m.file_type().is_file()).unwrap_or(true)
        }
        Change::DeviceNode { path } => zram_node(path),
        Change::DamonKdamond { kdamonds, .. } => kdamonds == Path::new("/sys/kernel/mm/damon/admin/kdamonds") || fake,
    };
    if ok { Ok(()) } else { Err(format!("{} is not something pagelab creates", change.describe())) }
}

/// Whether a journal file may be trusted: a regular file owned by this user
/// (or root) that nobody else can write.
/// Whether `dir` may hold journals: a real directory (not a link), owned by
/// this user or root, that nobody else may write (so nobody else can plant a
/// journal, or a file with a journal's name, for root to act on or delete).
pub fn trusted_dir(dir: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() {
        return Err(if m.file_type().is_symlink() { "a symbolic link".into() } else { "not a directory".into() });
    }
    if m.uid() != me && m.uid() != 0 {
        return Err(format!("owned by uid {}, not by this user or root", m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "writable by others (mode {:o}); a journal directory must be 0700 or 0755",
            m.mode() & 0o777
        ));
    }
    Ok(())
}

/// Whether a file name is one pagelab gives a journal: `<pid>-<n>-<ns>.journal`.
fn journal_name(path: &Path) -> bool {
    let Some(stem) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".journal")) else {
        return false;
    };
    let parts: Vec<&str> = stem.split('-').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn trusted_file(path: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_file() {
        return Err("not a regular file".into());
    }
    if m.uid() != me && m.uid() != 0 {
        return Err(format!("owned by uid {}, not by this user or root", m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!("writable by others (mode {:o})", m.mode() & 0o777));
    }
    Ok(())
}

fn undo(change: &Change, journal: &Path, dry_run: bool) -> Result<String> {
    validate_change(change).map_err(|why| SandboxError::Other(format!("refused: {why}")))?;
    let verb = if dry_run { "would undo" } else { "undid" };
    match change {
        Change::CgroupDir { path } => undo_cgroup(path, dry_run),
        Change::WriteFile { path, previous } => {
            let now = std::fs::read_to_string(path).unwrap_or_default();
            if current_matches(&now, previous) {
                return Ok(format!("{} already '{}'", path.display(), previous.trim()));
            }
            if !dry_run {
                io("restoring a setting", path, std::fs::write(path, previous.trim()))?;
            }
            Ok(format!("{verb} {}: '{}' -> '{}'", path.display(), selected(&now), previous.trim()))
        }
        Change::SwapOn { path } => {
            if !swap::is_active(path) {
                return Ok(format!("swap on {} already off", path.display()));
            }
            if !dry_run {
                swap::swapoff(path)?;
            }
            Ok(format!("{verb} swapon {} (swapoff)", path.display()))
        }
        Change::SwapFile { path } => {
            if !dry_run {
                if swap::is_active(path) {
                    swap::swapoff(path)?;
                }
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(format!("swap file {} already gone", path.display()));
                    }
                    Err(e) => return Err(SandboxError::io("deleting the swap file", path, e)),
                }
            }
            Ok(format!("{verb} swap file {} (deleted)", path.display()))
        }
        Change::DeviceNode { path } => {
            if !dry_run {
                let _ = std::fs::remove_file(path);
            }
            Ok(format!("{verb} device node {}", path.display()))
        }
        Change::DamonKdamond { kdamonds, pid } => match crate::damon::is_ours(kdamonds, *pid) {
            Ok(true) => {
                if !dry_run {
                    crate::damon::remove(kdamonds)?;
                }
                Ok(format!("{verb} the DAMON kdamond watching pid {pid} (off, nr_kdamonds 0)"))
            }
            Ok(false) => Ok(format!("DAMON kdamond watching pid {pid} already gone (or not pagelab's): left alone")),
            Err(_) => Ok(format!("DAMON kdamond watching pid {pid}: no DAMON admin files; nothing to undo")),
        },
        Change::ZramDevice { sys, before, id } => undo_zram(sys, before, *id, journal, dry_run, verb),
    }
}

/// Removes a cgroup pagelab made (killing its workers first); the shared
/// `pagelab` parent only when no other run still uses it.
fn undo_cgroup(path: &Path, dry_run: bool) -> Result<String> {
    if !path.exists() {
        return Ok(format!("cgroup {} already gone", path.display()));
    }
    if path.file_name().is_some_and(|n| n == "pagelab") {
        // The shared parent: another pagelab run may still have a group in it;
        // whoever removes the last child removes it (see kill_and_remove).
        if dry_run {
            return Ok(format!("would remove cgroup {} if empty", path.display()));
        }
        return match std::fs::remove_dir(path) {
            Ok(()) => Ok(format!("removed cgroup {}", path.display())),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::ENOTEMPTY)) => {
                Ok(format!("left cgroup {}: another pagelab run still uses it", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(format!("cgroup {} already gone", path.display())),
            Err(e) if !path.join("cgroup.procs").exists() => {
                // A fake tree in tests.
                std::fs::remove_dir_all(path).map_err(|_| SandboxError::io("removing the cgroup", path, e))?;
                Ok(format!("removed cgroup {}", path.display()))
            }
            Err(e) => Err(SandboxError::io("removing the cgroup", path, e)),
        };
    }
    if !dry_run {
        let killed = kill_and_remove(path)?;
        return Ok(format!(
            "removed cgroup {}{}",
            path.display(),
            if killed > 0 { format!(" (killed {killed} worker processes first)") } else { String::new() }
        ));
    }
    Ok(format!("would remove cgroup {} (killing its processes first)", path.display()))
}

/// Removes a zram device pagelab added: by its id, or (a crash between
/// hot_add and recording it) the one new, unset device no other journal claims.
fn undo_zram(sys: &Path, before: &[u32], id: Option<u32>, journal: &Path, dry_run: bool, verb: &str) -> Result<String> {
    let id = match id {
        Some(id) => id,
        None => {
            // Crashed between hot_add and recording the id: the device is new,
            // unset (disksize 0), and claimed by no other journal.
            let claimed = claimed_zram_ids(journal.parent().unwrap_or(Path::new(DEFAULT_DIR)), journal);
            let candidates: Vec<u32> = crate::zram::device_ids(sys)
                .into_iter()
                .filter(|i| !before.contains(i) && !claimed.contains(i))
                .filter(|i| crate::zram::disksize(sys, *i) == Some(0))
                .collect();
            match candidates.as_slice() {
                [] => {
                    return Ok("zram hot_add had not happened; nothing to remove".to_string());
                }
                [one] => *one,
                _ => {
                    return Ok(format!(
                        "zram hot_add was interrupted and several new devices are unset ({candidates:?}); left alone"
                    ));
                }
            }
        }
    };
    if !sys.join(format!("block/zram{id}")).exists() {
        return Ok(format!("zram{id} already removed"));
    }
    if !dry_run {
        crate::zram::remove_device(sys, id)?;
    }
    Ok(format!("{verb} zram{id} (swapoff, reset, hot_remove)"))
}

fn selected(s: &str) -> String {
    probe::environment::selected_choice(s).unwrap_or_else(|| s.trim().to_string())
}

/// Whether a settings file already holds `previous` ("a [b] c" files compare by selection).
fn current_matches(now: &str, previous: &str) -> bool {
    let p = previous.trim();
    now.trim() == p || probe::environment::selected_choice(now).as_deref() == Some(p)
}

/// The swap areas that pagelab runs (live or dead) turned on and have not yet
/// turned off, from every journal in `dir`: none of them is the user's swap.
pub fn pagelab_swaps(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for p in journal_files(dir) {
        if let Ok(t) = std::fs::read_to_string(&p) {
            for (_, c) in parse(&t).1 {
                if let Change::SwapOn { path } | Change::SwapFile { path } = c {
                    v.push(path);
                }
            }
        }
    }
    v
}

/// Journal files in `dir`, oldest first.
pub fn journal_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| journal_name(p)).collect();
    v.sort();
    v
}

/// What a restore found and did (`pagelab restore --json`; its schema,
/// schema/restore-output.schema.json, is generated from this type).
#[derive(Debug, Default, Clone, Serialize, schemars::JsonSchema)]
pub struct RestoreReport {
    /// Journals of live pagelab processes, left alone.
    pub live: Vec<PathBuf>,
    /// Journals restored (or, with dry_run, that would be).
    pub restored: Vec<PathBuf>,
    /// One line per action.
    pub actions: Vec<String>,
    pub errors: Vec<String>,
}

/// Undoes the journals of dead pagelab processes in `dir`.
pub fn restore_stale(dir: &Path, dry_run: bool) -> RestoreReport {
    let mut rep = RestoreReport::default();
    let _g = UNDO_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if dir.exists()
        && let Err(why) = trusted_dir(dir)
    {
        rep.errors.push(format!("journal directory {} left alone: {why}", dir.display()));
        return rep;
    }
    half_made::clear(dir, dry_run, &mut rep);
    let mut open: Vec<Stale> = Vec::new();
    // One wait for every journal of this pass (see `lock_unless_live`).
    let deadline = std::time::Instant::now() + INHERITED_LOCK_WAIT;
    for path in journal_files(dir) {
        if let Err(why) = trusted_file(&path) {
            rep.errors.push(format!("journal {} left alone: {why}", path.display()));
            continue;
        }
        let Ok(file) =
            OpenOptions::new().read(true).append(true).custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW).open(&path)
        else {
            continue;
        };
        match lock_unless_live(&file, deadline) {
            Lock::Taken => {}
            Lock::Live => {
                rep.live.push(path);
                continue;
            }
            Lock::HeldAfterOwner(pid) => {
                rep.errors.push(format!(
                    "journal {} left alone: the pagelab run that wrote it (pid {pid}) has ended, but {} still \
                     holds it after {} s; run `pagelab restore` again once they have ended",
                    path.display(),
                    holders(&path),
                    INHERITED_LOCK_WAIT.as_secs()
                ));
                continue;
            }
        }
        // Another restorer undid it and removed it while this one waited.
        if file.metadata().is_ok_and(|m| std::os::unix::fs::MetadataExt::nlink(&m) == 0) {
            continue;
        }
        let text = match read_all(&file) {
            Ok(t) => t,
            Err(e) => {
                rep.errors.push(format!("journal {} left alone: it could not be read: {e}", path.display()));
                continue;
            }
        };
        let (header, pending) = parse(&text);
        if header.is_none() && !text.trim().is_empty() {
            // Not a journal pagelab can read: it may still be undo information,
            // so it is moved aside and named, never deleted (issue 46 item 16).
            rep.errors.push(match set_aside(&path, dry_run) {
                Ok(aside) => format!(
                    "journal {} is not one pagelab can read (no header line): {} {}; nothing was undone from it",
                    path.display(),
                    if dry_run { "would move it to" } else { "moved it to" },
                    aside.display()
                ),
                Err(e) => {
                    format!("journal {} is not one pagelab can read, and could not be moved aside: {e}", path.display())
                }
            });
            continue;
        }
        let who = header
            .as_ref()
            .map(|h| format!("pagelab {} (pid {})", h.label, h.pid))
            .unwrap_or_else(|| "an unknown pagelab run".into());
        if let Some(h) = &header
            && !h.boot_id.is_empty()
            && h.boot_id != boot_id()
        {
            rep.actions.push(format!("discarded journal of {who} from an earlier boot: the reboot undid its changes"));
            if !dry_run {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        open.push(Stale { path, file, who, pending, ok: true });
    }
    undo_all(&mut open, dry_run, &mut rep);
    for j in open {
        if j.ok && !dry_run {
            let _ = std::fs::remove_file(&j.path);
        }
        rep.restored.push(j.path);
    }
    rep
}

/// Undoes what the stale journals in `open` hold, marking each change undone
/// in its journal as it goes, and saying so in `rep`.
fn undo_all(open: &mut [Stale], dry_run: bool, rep: &mut RestoreReport) {
    // Every journal's cgroups first, then the rest (issue 46 item 8: a run's
    // zram in one journal was swapped off while its cgroup, in another, still
    // held the program, which the kernel OOM-killed inside swapoff). Inside a
    // journal, newest first, as the changes were made.
    for first in [true, false] {
        for j in open.iter_mut() {
            let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut j.pending)
                .into_iter()
                .partition(|(_, c)| matches!(c, Change::CgroupDir { .. }) == first);
            j.pending = later;
            for (seq, change) in now.into_iter().rev() {
                match undo(&change, &j.path, dry_run) {
                    Ok(msg) => {
                        rep.actions.push(format!("{}: {msg}", j.who));
                        if !dry_run {
                            let mut line =
                                serde_json::to_vec(&Line { seq, change: None, update: None, undone: true }).unwrap();
                            line.push(b'\n');
                            let _ = j.file.write_all(&line).and_then(|_| j.file.sync_data());
                        }
                    }
                    Err(e) => {
                        j.ok = false;
                        rep.errors.push(format!("{}: could not undo {}: {e}", j.who, change.describe()));
                    }
                }
            }
        }
    }
}

/// A dead run's journal, locked, with what is left to undo.
struct Stale {
    path: PathBuf,
    file: std::fs::File,
    who: String,
    pending: Vec<(u64, Change)>,
    ok: bool,
}

/// Moves an unreadable journal to `NAME.unreadable` (or `.unreadable.N`, never
/// over an existing file) beside it, which no later restore reads as a journal.
fn set_aside(path: &Path, dry_run: bool) -> std::io::Result<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("journal");
    for n in 0..1000 {
        let aside =
            path.with_file_name(if n == 0 { format!("{name}.unreadable") } else { format!("{name}.unreadable.{n}") });
        if aside.symlink_metadata().is_ok() {
            continue;
        }
        if dry_run {
            return Ok(aside);
        }
        // A hard link then an unlink: unlike rename, link never replaces a file
        // that appeared at the new name in between.
        match std::fs::hard_link(path, &aside) {
            Ok(()) => {
                std::fs::remove_file(path)?;
                return Ok(aside);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("a thousand names beside it are taken"))
}

/// Undoes a journal owned by this very process (from the panic hook), without
/// taking its lock, which this process holds through another descriptor.
pub fn restore_own(path: &Path) -> Vec<String> {
    let _g = UNDO_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let (_, pending) = parse(&text);
    let mut out = Vec::new();
    let mut file = OpenOptions::new().append(true).open(path).ok();
    for (seq, change) in pending.into_iter().rev() {
        match undo(&change, path, false) {
            Ok(m) => {
                out.push(m);
                if let Some(f) = file.as_mut() {
                    let mut line = serde_json::to_vec(&Line { seq, change: None, update: None, undone: true }).unwrap();
                    line.push(b'\n');
                    let _ = f.write_all(&line).and_then(|_| f.sync_data());
                }
            }
            Err(e) => out.push(format!("could not undo {}: {e}", change.describe())),
        }
    }
    out
}
