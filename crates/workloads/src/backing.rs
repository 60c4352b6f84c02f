//! What backs an experiment's trimmed pages: a zram swap made for the run, zswap
//! in front of a swap area, a swap file, the user's existing swap, or nothing.
//!
//! `auto` follows the rule of the eat issue: as root with no swap active, a zram
//! swap sized for the run is created through the sandbox; with a user swap active,
//! that swap is used and named. pagelab never changes swap areas it did not make.

use sandbox::error::SandboxError;
use sandbox::sandbox::ZramSpec;
use sandbox::{Sandbox, privilege};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What backs the trimmed pages. Its names are spelled once, in [`BackingKind::name`]:
/// the flag, the record (serde) and the errors all read them there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackingKind {
    Auto,
    Zram,
    Zswap,
    Swapfile,
    Existing,
    #[default]
    None,
}

impl BackingKind {
    pub const ALL: [BackingKind; 6] = [
        BackingKind::Auto,
        BackingKind::Zram,
        BackingKind::Zswap,
        BackingKind::Swapfile,
        BackingKind::Existing,
        BackingKind::None,
    ];
    /// Its name: what `--backing` takes and what a run records.
    pub fn name(self) -> &'static str {
        match self {
            BackingKind::Auto => "auto",
            BackingKind::Zram => "zram",
            BackingKind::Zswap => "zswap",
            BackingKind::Swapfile => "swapfile",
            BackingKind::Existing => "existing",
            BackingKind::None => "none",
        }
    }
    /// A compressed store in RAM (zram, zswap): the one place that says so.
    pub fn compressed(self) -> bool {
        matches!(self, BackingKind::Zram | BackingKind::Zswap)
    }
    /// Every name, comma-separated, for errors.
    pub fn names() -> String {
        BackingKind::ALL.map(BackingKind::name).join(", ")
    }
    pub fn parse(s: &str) -> Option<Self> {
        BackingKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl Serialize for BackingKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for BackingKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str> as Deserialize>::deserialize(d)?;
        BackingKind::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown backing '{s}': expected {}", BackingKind::names()))
        })
    }
}

impl std::fmt::Display for BackingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl schemars::JsonSchema for BackingKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BackingKind".into()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::BackingKind").into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = BackingKind::ALL.map(BackingKind::name).to_vec();
        schemars::json_schema!({ "type": "string", "enum": names, "description": "What backs the trimmed pages, by its name." })
    }
}

/// A backing that may not have been made (rightsize before its first
/// limited run): none, which records before the type wrote as "".
pub fn none_if_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<BackingKind>, D::Error> {
    match <Option<std::borrow::Cow<'de, str>> as Deserialize>::deserialize(d)? {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => BackingKind::parse(&s).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown backing '{s}': expected {}", BackingKind::names()))
        }),
    }
}

/// The backing a run actually got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Backing {
    /// What the run got: never `Auto`, which [`setup`] resolves.
    pub kind: BackingKind,
    /// The compression algorithm of the store, if any.
    pub compressor: Option<String>,
    /// The zram device made for the run.
    pub zram_id: Option<u32>,
    /// The swap areas active during the run (ours and the user's).
    pub swap_areas: Vec<String>,
    /// The swap file made for the run (a swap file's, or zswap's behind it),
    /// as the sandbox resolved its path.
    pub swap_file: Option<PathBuf>,
    pub notes: Vec<String>,
}

impl Backing {
    /// Whether trimmed anonymous pages have somewhere to go.
    pub fn has_swap(&self) -> bool {
        !self.swap_areas.is_empty()
    }
    pub fn compressed(&self) -> bool {
        self.kind.compressed()
    }
}

/// Compression algorithms zswap can use: those the crypto API has loaded
/// (/proc/crypto) plus compression modules installed for this kernel, which it
/// loads on demand. The kernel's answer to the write of `compressor` is the final
/// check. (zram's list is no guide: since Linux 6.12 zram has its own backends.)
pub fn zswap_compressors(p: &mut probe::Probe) -> Vec<String> {
    let mut v = crypto_compressors(p);
    let release = p.kernel_release();
    let dir = p.roots().rebase("/lib/modules").join(release).join("kernel/crypto");
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let stem = name.split(".ko").next().unwrap_or("").to_string();
        if ["lz4", "lz4hc", "zstd", "842", "lzo", "lzo-rle", "deflate"].contains(&stem.as_str()) && !v.contains(&stem) {
            v.push(stem);
        }
    }
    v.sort();
    v
}

/// Compression algorithms the kernel's crypto API has loaded (/proc/crypto).
pub fn crypto_compressors(p: &mut probe::Probe) -> Vec<String> {
    let mut v = p.crypto_compressors();
    v.sort();
    v
}

/// Algorithms `--compressor all` means for a backing, on the machine `p` reads.
pub fn all_compressors(kind: BackingKind, p: &mut probe::Probe) -> Vec<String> {
    match kind {
        BackingKind::Zswap => zswap_compressors(p),
        _ => sandbox::zram::algorithms(&p.roots().sys).unwrap_or_default(),
    }
}

fn active_areas(p: &mut probe::Probe) -> Vec<String> {
    let areas = p.swaps().ok().flatten().unwrap_or_default();
    areas.into_iter().map(|a| format!("{} ({}, prio {})", a.filename, a.kind, a.priority)).collect()
}

/// Resolves `auto` without changing anything, on the machine `p` reads (the
/// host's at a command's edge, a fake tree in tests).
pub fn resolve(kind: BackingKind, p: &mut probe::Probe) -> BackingKind {
    if kind != BackingKind::Auto {
        return kind;
    }
    // Another pagelab run's store is not the user's swap (that run holds the run
    // lock; this one waits for it, and its store is gone by then).
    if !sandbox::swap::user_areas_of(p).is_empty() {
        BackingKind::Existing
    } else if privilege::is_root() && sandbox::zram::can_add(&p.roots().sys) {
        BackingKind::Zram
    } else {
        BackingKind::None
    }
}

/// Checks a request, with the directory a swap file would go in, without
/// changing anything, on the machine `p` reads.
pub fn validate_with_dir(
    kind: BackingKind,
    compressor: Option<&str>,
    swapfile_dir: &Path,
    p: &mut probe::Probe,
) -> Result<(), SandboxError> {
    validate(kind, compressor, p)?;
    let needs_file = matches!(resolve(kind, p), BackingKind::Swapfile | BackingKind::Zswap);
    if needs_file {
        sandbox::sandbox::check_swap_fs(swapfile_dir)?;
    }
    Ok(())
}

/// The size of the store [`setup`] makes to take `capacity` bytes: room
/// for the data plus a margin, rounded to pages.
pub fn store_size(capacity: u64) -> u64 {
    let page = probe::environment::page_size();
    capacity.saturating_add(capacity / 8 + (16 << 20)).div_ceil(page).saturating_mul(page)
}

/// Whether `--swapfile-dir` has room for the swap file a `kind` store
/// for `capacity` bytes would be (swapfile and zswap make one), checked
/// before any change so that a full disk refuses a run before it starts,
/// not at its store. Read only.
pub fn check_room(
    kind: BackingKind,
    capacity: u64,
    swapfile_dir: &Path,
    p: &mut probe::Probe,
) -> Result<(), SandboxError> {
    if !matches!(resolve(kind, p), BackingKind::Swapfile | BackingKind::Zswap) {
        return Ok(());
    }
    let real = sandbox::sandbox::safe_swap_dir(swapfile_dir)?;
    sandbox::sandbox::check_swap_room(swapfile_dir, &real, store_size(capacity))
}

/// Every name a kernel's zram has offered (its comp_algorithm lists a subset):
/// what a compressor is checked against where no zram device can be read.
pub const ZRAM_NAMES: [&str; 7] = ["lzo", "lzo-rle", "lz4", "lz4hc", "zstd", "deflate", "842"];

/// Checks a request without changing anything (so bad input exits before any
/// change), on the machine `p` reads.
pub fn validate(kind: BackingKind, compressor: Option<&str>, p: &mut probe::Probe) -> Result<(), SandboxError> {
    let kind = resolve(kind, p);
    match (kind, compressor) {
        (BackingKind::Zram, Some(c)) => {
            let algs = sandbox::zram::algorithms(&p.roots().sys).unwrap_or_default();
            // With no zram device to read the list from, the names zram has
            // at all: a typo is refused here, not when its arm comes (hours
            // into a run, after other arms changed the system).
            if algs.is_empty() && !ZRAM_NAMES.contains(&c) {
                return Err(SandboxError::Invalid(format!(
                    "--compressor {c}: not a zram algorithm; expected one of {} (no zram device here to read this \
                     kernel's own list from)",
                    ZRAM_NAMES.join(", ")
                )));
            }
            if !algs.is_empty() && !algs.iter().any(|a| a == c) {
                return Err(SandboxError::Invalid(format!(
                    "--compressor {c}: unknown zram algorithm; this kernel offers {}",
                    algs.join(", ")
                )));
            }
        }
        (BackingKind::Zswap, Some(c)) => {
            let algs = zswap_compressors(p);
            if !algs.iter().any(|a| a == c) {
                return Err(SandboxError::Invalid(format!(
                    "--compressor {c}: unknown zswap compressor; this kernel offers {}",
                    algs.join(", ")
                )));
            }
        }
        (BackingKind::Existing | BackingKind::Swapfile | BackingKind::None, Some(c)) => {
            return Err(SandboxError::Invalid(format!(
                "--compressor {c} needs --backing zram or zswap (or auto, which picks zram as root without swap)"
            )));
        }
        _ => {}
    }
    if kind == BackingKind::Existing && sandbox::swap::user_areas_of(p).is_empty() {
        let why = if p.swaps().ok().flatten().unwrap_or_default().is_empty() {
            "no swap is active on this machine"
        } else {
            "the only active swap is another pagelab run's store, which is not this run's to use"
        };
        return Err(SandboxError::Invalid(format!("--backing existing: {why}")));
    }
    if matches!(kind, BackingKind::Zram | BackingKind::Zswap | BackingKind::Swapfile)
        && let Some(a) = sandbox::swap::user_areas_of(p).into_iter().find(|a| a.priority >= i16::MAX as i64)
    {
        // The kernel takes turns between areas of one priority: the run's
        // store could not come first, and its pages would go into the
        // user's swap too.
        return Err(SandboxError::Invalid(format!(
            "--backing {}: the machine's swap {} has priority {}, the highest, so the store this run makes could not \
             come before it and the run's pages would go into it too; give that swap a lower priority (swapon -p) \
             or use --backing existing",
            kind.name(),
            a.filename,
            a.priority
        )));
    }
    let op = match kind {
        BackingKind::Zram => Some(("creating a zram swap device", "run as root or use --backing existing")),
        BackingKind::Zswap => Some(("enabling zswap", "run as root or use --backing existing")),
        BackingKind::Swapfile => Some(("creating a swap file", "run as root or use --backing existing")),
        _ => None,
    };
    if let Some((op, hint)) = op {
        privilege::require_admin(op, hint)?;
    }
    Ok(())
}

/// A swap file name no other run (or earlier store of this run) has:
/// `pagelab-<pid>-<n>.swap`. The sandbox creates it with O_EXCL, so a name that
/// exists anyway is refused, never reused.
fn swapfile_path(dir: &Path) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!("pagelab-{}-{n}.swap", std::process::id()))
}

/// Sets up the backing through the sandbox. `capacity` is how much data it must
/// be able to take (uncompressed).
pub fn setup(
    sb: &mut Sandbox,
    kind: BackingKind,
    compressor: Option<&str>,
    capacity: u64,
    swapfile_dir: &Path,
) -> Result<Backing, SandboxError> {
    let kind = resolve(kind, &mut sb.probe());
    let mut b = Backing::default();
    let size = store_size(capacity);
    match kind {
        BackingKind::Zram => {
            let z = sb.zram_swap(&ZramSpec {
                disksize: size,
                algorithm: compressor.map(str::to_string),
                priority: i16::MAX as i32,
            })?;
            b.kind = BackingKind::Zram;
            b.compressor = Some(z.algorithm.clone());
            b.zram_id = Some(z.id);
            if sb.probe().swaps().ok().flatten().unwrap_or_default().len() > 1 {
                b.notes.push(format!(
                    "other swap areas are active; zram{} has the highest priority, so the run's pages go there first",
                    z.id
                ));
            }
        }
        BackingKind::Zswap => {
            // Always a swap file of its own, at the highest priority: what
            // zswap writes back (and what it rejects) goes there, never into
            // the user's swap, which pagelab did not make.
            let users = sb.user_swaps();
            let path = swapfile_path(swapfile_dir);
            b.swap_file = Some(sb.swap_file(&path, size, i16::MAX as i32)?);
            b.notes.push(format!("zswap writes back to a swap file of its own: created {}", path.display()));
            if !users.is_empty() {
                let names: Vec<&str> = users.iter().map(|a| a.filename.as_str()).collect();
                b.notes.push(format!(
                    "the machine's own swap ({}) is left as it is; the run's file has the highest priority, so its \
                     pages go there first (zswap, while on, compresses the rest of the machine's swap-outs too)",
                    names.join(", ")
                ));
            }
            sb.zswap("enabled", "Y")?;
            if let Some(c) = compressor {
                sb.zswap("compressor", c)?;
            }
            b.kind = BackingKind::Zswap;
            b.compressor = sb.probe().zswap().compressor;
        }
        BackingKind::Swapfile => {
            let path: PathBuf = swapfile_path(swapfile_dir);
            b.swap_file = Some(sb.swap_file(&path, size, i16::MAX as i32)?);
            b.kind = BackingKind::Swapfile;
        }
        BackingKind::Existing => {
            b.kind = BackingKind::Existing;
            let z = sb.probe().zswap();
            if z.enabled == Some(true) {
                b.compressor = z.compressor;
                b.notes.push("zswap is enabled in front of the existing swap".into());
            }
        }
        BackingKind::None | BackingKind::Auto => {
            b.kind = BackingKind::None;
        }
    }
    b.swap_areas = active_areas(&mut sb.probe());
    Ok(b)
}

#[cfg(test)]
mod kind_tests {
    use super::BackingKind;

    #[test]
    fn one_spelling_for_the_flag_the_record_and_the_errors() {
        for k in BackingKind::ALL {
            assert_eq!(BackingKind::parse(k.name()), Some(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<BackingKind>(&json).unwrap(), k);
        }
        assert_eq!(BackingKind::names(), "auto, zram, zswap, swapfile, existing, none");
        assert_eq!(BackingKind::parse("Zram"), None);
        let e = serde_json::from_str::<BackingKind>("\"disk\"").unwrap_err().to_string();
        assert!(e.contains("unknown backing 'disk': expected auto, zram"), "{e}");
    }
}

#[cfg(test)]
mod seam_tests {
    use super::*;

    /// A swap file's room is checked before any change: a store larger
    /// than the directory's file system can hold is refused with the flag
    /// named and the sizes; one that fits, or a store that makes no file
    /// (zram), passes.
    #[test]
    fn a_swap_file_without_room_is_refused_before_the_run() {
        let d = tempfile::tempdir().unwrap();
        let mut p = probe::Probe::default();
        let free = sandbox::guard::disk_free(d.path()).expect("statvfs of a temporary directory");
        for kind in [BackingKind::Swapfile, BackingKind::Zswap] {
            let e = check_room(kind, free, d.path(), &mut p).unwrap_err().to_string();
            let want = format!("--swapfile-dir {}: a swap file of ", d.path().display());
            assert!(e.starts_with(&want) && e.contains("to spare, and its file system has"), "{e}");
            check_room(kind, 1 << 20, d.path(), &mut p).unwrap();
        }
        check_room(BackingKind::Zram, free, d.path(), &mut p).unwrap();
        assert_eq!(store_size(0) % probe::environment::page_size(), 0);
        assert!(store_size(u64::MAX) >= u64::MAX / 2, "no overflow to a small size");
    }

    /// `auto` and `existing` are decided on the machine the probe reads, not
    /// the host's: a fake tree whose /proc/swaps lists the user's partition
    /// resolves `auto` to it (the host here has no swap, so its answer
    /// would be zram or none), and one that lists nothing refuses `existing`
    /// with why; zram's algorithms come from the tree's /sys.
    #[test]
    fn auto_and_existing_are_read_from_the_machine_given() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::create_dir_all(d.path().join("sys/block/zram0")).unwrap();
        std::fs::write(d.path().join("sys/block/zram0/comp_algorithm"), "lzo [lz4] zstd\n").unwrap();
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        std::fs::write(d.path().join("proc/swaps"), header).unwrap();
        let mut p = probe::Probe::new(probe::Roots::under(d.path()));
        let e = validate(BackingKind::Existing, None, &mut p).unwrap_err().to_string();
        assert!(e.contains("--backing existing: no swap is active on this machine"), "{e}");
        std::fs::write(d.path().join("proc/swaps"), format!("{header}/dev/vdb2   partition\t1048572\t0\t-2\n"))
            .unwrap();
        assert_eq!(resolve(BackingKind::Auto, &mut p), BackingKind::Existing);
        validate(BackingKind::Existing, None, &mut p).unwrap();
        // A user's swap at the highest priority: a store of the run's own
        // could not come first, so none is made; `existing` still runs.
        std::fs::write(d.path().join("proc/swaps"), format!("{header}/dev/vdb2   partition\t1048572\t0\t32767\n"))
            .unwrap();
        for k in [BackingKind::Zram, BackingKind::Zswap, BackingKind::Swapfile] {
            let e = validate(k, None, &mut p).unwrap_err().to_string();
            assert!(
                e.contains(&format!("--backing {}: the machine's swap /dev/vdb2 has priority 32767", k.name())),
                "{e}"
            );
        }
        validate(BackingKind::Existing, None, &mut p).unwrap();
        std::fs::write(d.path().join("proc/swaps"), format!("{header}/dev/vdb2   partition\t1048572\t0\t-2\n"))
            .unwrap();
        let mut zram = probe::Probe::new(probe::Roots::under(d.path()));
        assert_eq!(all_compressors(BackingKind::Zram, &mut zram), ["lzo", "lz4", "zstd"]);
        let e = validate(BackingKind::Zram, Some("lz5"), &mut zram).unwrap_err().to_string();
        assert!(e.contains("this kernel offers lzo, lz4, zstd"), "{e}");
        // No zram device to read the list from: a typo is still refused.
        std::fs::remove_dir_all(d.path().join("sys/block/zram0")).unwrap();
        let mut none = probe::Probe::new(probe::Roots::under(d.path()));
        let e = validate(BackingKind::Zram, Some("bogus"), &mut none).unwrap_err().to_string();
        assert!(e.contains("--compressor bogus: not a zram algorithm") && e.contains("lzo-rle"), "{e}");
        validate(BackingKind::Zram, Some("zstd"), &mut none).unwrap();
    }
}
