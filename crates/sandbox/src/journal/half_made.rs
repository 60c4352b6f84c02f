//! Journals made but never named. `Journal::create` writes a journal's header
//! under `NAME.journal.new`, links it to `NAME.journal`, and removes the
//! `.new` name, all before the run records any change. A run killed inside
//! those steps left the `.new` name behind, which no restore read, so it
//! stayed in the journal directory for good. Each pass of `restore_stale`
//! now removes such a name when that cannot lose an undo:
//!
//! - it is a second name of its journal (`NAME.journal` is the same
//!   file): the journal keeps the contents, and is restored from there;
//! - it is the only name, and holds no change (a header at most), and its
//!   maker is dead (by the header's pid, start time and boot, as a
//!   journal's owner; a file with no header yet, by an age of a minute).
//!
//! Anything else (a maker still alive, a `.new` that holds changes and no
//! other name) is left alone, the last reported.

use super::{Header, RestoreReport, journal_name, parse, trusted_file};
use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How old a `.new` file with no header must be before it is taken as a
/// dead maker's: its maker writes the header a moment after creating it.
const NO_HEADER_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// The `<pid>-<n>-<ns>.journal.new` names in `dir`.
fn half_made_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "new") && journal_name(&p.with_extension("")))
        .collect();
    v.sort();
    v
}

/// Removes the half-made journals in `dir` that hold nothing to undo
/// (module docs), saying so in `rep`; with `dry_run`, says what it would.
pub(super) fn clear(dir: &Path, dry_run: bool, rep: &mut RestoreReport) {
    for path in half_made_files(dir) {
        if let Err(why) = trusted_file(&path) {
            rep.errors.push(format!("half-made journal {} left alone: {why}", path.display()));
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW).open(&path)
        else {
            continue;
        };
        // No lock taken: a maker that is alive must get its own at once
        // (`Journal::create` fails if it cannot), and nothing here needs one.
        // A second name is removed whoever is alive (its maker's own removal
        // then finds it gone, which it ignores), and an only name only once
        // its maker is known dead.
        let Ok(text) = super::read_all(&file) else { continue };
        let Ok(meta) = file.metadata() else { continue };
        let (header, pending) = parse(&text);
        // A maker still alive is left alone whatever it has done so far.
        if header.as_ref().is_some_and(|h| !maker_dead(Some(h), &meta)) {
            continue;
        }
        let journal = path.with_extension("");
        let second = std::fs::symlink_metadata(&journal).is_ok_and(|j| (j.dev(), j.ino()) == (meta.dev(), meta.ino()));
        let what = if second {
            format!("a second name of {}, which keeps its contents", journal.display())
        } else if !pending.is_empty() {
            rep.errors.push(format!(
                "half-made journal {} left alone: it holds {} change(s) and is the journal's only name",
                path.display(),
                pending.len()
            ));
            continue;
        } else if !maker_dead(header.as_ref(), &meta) {
            continue;
        } else {
            let who = header.map(|h| format!("pagelab {} (pid {})", h.label, h.pid));
            format!("made by {} and holding no change", who.unwrap_or_else(|| "a pagelab run".into()))
        };
        let verb = if dry_run { "would remove" } else { "removed" };
        rep.actions.push(format!("{verb} the half-made journal {} ({what})", path.display()));
        if !dry_run {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Whether the run that made a half-made journal is gone: the header's
/// owner is (or it is from an earlier boot); with no header, the file is
/// older than [`NO_HEADER_AGE`].
fn maker_dead(header: Option<&Header>, meta: &std::fs::Metadata) -> bool {
    match header {
        Some(h) => (!h.boot_id.is_empty() && h.boot_id != super::boot_id()) || !super::owner::owner_alive(h),
        None => meta.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= NO_HEADER_AGE),
    }
}
