//! The allocators and heap modes `pagelab heap` can compare, behind one small
//! per-thread interface so that the workload is compiled once per allocator.
//!
//! | allocator | default | shared | per-thread |
//! | --- | --- | --- | --- |
//! | glibc | malloc/free | `M_ARENA_MAX=1` (one arena for all threads) | unsupported: glibc has no explicit heap handle |
//! | mimalloc (linked) | mi_malloc/mi_free | unsupported: a `mi_heap_t` belongs to one thread | one `mi_heap_new()` per thread |
//! | jemalloc (linked, prefixed `_rjem_`) | malloc/free | one created arena, every thread bound to it | one created arena per thread |
//! | preload:PATH | plain malloc/free resolved to PATH via LD_PRELOAD | unsupported | unsupported |
//!
//! `glibc-shared` runs glibc as `shared` and every other allocator as
//! `default` ([`HeapMode::of`]); each result records the mode it ran in.

use std::ffi::c_void;

/// jemalloc's entry points: the linked library (tikv-jemalloc-sys, prefixed
/// `_rjem_`), or, in a build without the `jemalloc` feature, entry points
/// that fail (malloc gives null, mallctl ENOENT), behind which `heap`
/// refuses `jemalloc` by name ([`Allocator::parse`]). Only the fuzz targets
/// build without it: they never run a heap experiment, and jemalloc's build
/// script (configure and make) cost them 100 s of a 290 s build.
#[cfg(feature = "jemalloc")]
pub(crate) use tikv_jemalloc_sys as je_sys;
#[cfg(not(feature = "jemalloc"))]
pub(crate) mod je_sys {
    use std::ffi::c_void;
    /// # Safety
    /// None needed: it touches nothing (the signature is jemalloc's).
    pub unsafe fn malloc(_size: usize) -> *mut c_void {
        std::ptr::null_mut()
    }
    /// # Safety
    /// None needed: it touches nothing (the signature is jemalloc's).
    pub unsafe fn free(_p: *mut c_void) {}
    /// # Safety
    /// None needed: it touches nothing (the signature is jemalloc's).
    pub unsafe fn mallctl(
        _name: *const libc::c_char,
        _old: *mut c_void,
        _oldlen: *mut usize,
        _new: *mut c_void,
        _newlen: usize,
    ) -> libc::c_int {
        libc::ENOENT
    }
}

/// An allocator as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocator {
    Glibc,
    Mimalloc,
    Jemalloc,
    Preload(std::path::PathBuf),
}

pub const ALLOCATOR_FORMS: &str = "glibc, mimalloc, jemalloc, preload:PATH.so";
/// How threads share a heap (`--heap-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HeapMode {
    /// The allocator's own way.
    #[default]
    Default,
    /// One heap for all threads: glibc M_ARENA_MAX=1, one jemalloc arena.
    Shared,
    /// A heap per thread: a mimalloc heap or a jemalloc arena.
    PerThread,
    /// glibc with one arena (as `shared`), every other allocator its own way
    // heap.concurrent_linux's negative control: glibc's per-thread arenas
    // taken away, its comparator left as it is.
    GlibcShared,
    /// glibc with a thread cache deep enough for the workload's batches
    /// (GLIBC_TUNABLES glibc.malloc.tcache_count=65535), every other
    /// allocator its own way
    // heap.concurrent_linux's positive control: glibc's per-thread cache
    // holds 7 blocks a size by default, against batches of a thousand calls.
    GlibcCached,
}

/// The tunable `glibc-cached` gives glibc's workers: the deepest thread
/// cache glibc takes (a size class's count is 16 bits since glibc 2.30).
pub const DEEP_TCACHE: &str = "glibc.malloc.tcache_count=65535";

/// GLIBC_TUNABLES for a `glibc-cached` worker: pagelab's own, if any, with
/// [`DEEP_TCACHE`] last (the last setting of a tunable wins).
pub fn deep_tcache_tunables() -> String {
    match std::env::var("GLIBC_TUNABLES") {
        Ok(t) if !t.is_empty() => format!("{t}:{DEEP_TCACHE}"),
        _ => DEEP_TCACHE.to_string(),
    }
}

/// Whether glibc's thread cache keeps 64 blocks a size or more (its
/// default is 7), as [`DEEP_TCACHE`] makes it: 64 blocks of 600 B are
/// freed and taken again, and they come back last-freed first only from a
/// cache that kept all 64 (past its count they go to the arena's bins,
/// where neighbours merge). The count is glibc's, one for every thread.
/// Untimed; a `glibc-cached` worker checks it (after checking that malloc
/// is glibc's) before its threads start, so a tunable that did not take
/// effect is an error, not a run of plain glibc under another name.
pub fn deep_tcache() -> bool {
    const N: usize = 64;
    // SAFETY: plain malloc and free of blocks this function owns, each freed once.
    unsafe {
        let p: Vec<*mut c_void> = (0..N).map(|_| libc::malloc(600)).collect();
        // Keeps the last block off the top chunk, which a free would grow.
        let guard = libc::malloc(600);
        if p.iter().any(|x| x.is_null()) || guard.is_null() {
            p.iter().chain([&guard]).for_each(|&x| libc::free(x));
            return false;
        }
        for &x in &p {
            libc::free(x);
        }
        let q: Vec<*mut c_void> = (0..N).map(|_| libc::malloc(600)).collect();
        let lifo = q.iter().zip(p.iter().rev()).all(|(a, b)| a == b);
        q.iter().chain([&guard]).for_each(|&x| libc::free(x));
        lifo
    }
}

impl HeapMode {
    /// The mode `a` runs in under this one: `glibc-shared` is `shared` for
    /// glibc and `default` for the others; `glibc-cached` is itself for
    /// glibc and `default` for the others.
    pub fn of(self, a: &Allocator) -> HeapMode {
        match (self, a) {
            (HeapMode::GlibcShared, Allocator::Glibc) => HeapMode::Shared,
            (HeapMode::GlibcCached, Allocator::Glibc) => HeapMode::GlibcCached,
            (HeapMode::GlibcShared | HeapMode::GlibcCached, _) => HeapMode::Default,
            (m, _) => m,
        }
    }

    /// The modes that change glibc alone.
    pub fn glibc_only(self) -> bool {
        matches!(self, HeapMode::GlibcShared | HeapMode::GlibcCached)
    }
}
crate::serde_by_name!(HeapMode, "heap mode");

/// The allocation pattern (`--workload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Workload {
    /// A seeded script of what standard containers do (work/script.rs).
    #[default]
    Containers,
}
crate::serde_by_name!(Workload, "workload");

impl Allocator {
    pub fn parse(s: &str) -> Result<Allocator, String> {
        match s {
            "glibc" => Ok(Allocator::Glibc),
            "mimalloc" => Ok(Allocator::Mimalloc),
            "jemalloc" if !cfg!(feature = "jemalloc") => {
                Err("jemalloc is not in this build of pagelab (built without its `jemalloc` feature)".into())
            }
            "jemalloc" => Ok(Allocator::Jemalloc),
            _ => match s.strip_prefix("preload:") {
                Some(p) if !p.is_empty() => Ok(Allocator::Preload(p.into())),
                _ => Err(format!("unknown allocator '{s}': expected {ALLOCATOR_FORMS}")),
            },
        }
    }

    pub fn name(&self) -> String {
        match self {
            Allocator::Glibc => "glibc".into(),
            Allocator::Mimalloc => "mimalloc".into(),
            Allocator::Jemalloc => "jemalloc".into(),
            Allocator::Preload(p) => format!("preload:{}", p.display()),
        }
    }

    /// None if the allocator can run in this mode, else why not.
    pub fn unsupported(&self, mode: HeapMode) -> Option<&'static str> {
        match (self, mode.of(self)) {
            (_, HeapMode::Default) => None,
            (Allocator::Glibc, HeapMode::Shared | HeapMode::GlibcCached) | (Allocator::Jemalloc, _) => None,
            (Allocator::Mimalloc, HeapMode::PerThread) => None,
            (Allocator::Glibc, _) => Some("glibc has no per-thread heap handle (its arenas are assigned implicitly)"),
            (Allocator::Mimalloc, _) => {
                Some("a mimalloc heap (mi_heap_t) may only allocate from the thread that made it")
            }
            (Allocator::Preload(_), _) => Some("a preloaded allocator is reached only through plain malloc/free"),
        }
    }
}

/// One thread's view of a heap. `alloc`/`free` are the timed calls.
pub trait ThreadHeap {
    /// # Safety
    /// Returns memory the caller frees with `free` of the same heap kind.
    unsafe fn alloc(&mut self, size: usize) -> *mut u8;
    /// # Safety
    /// `p` came from `alloc` of this heap kind (any thread for the shared kinds).
    unsafe fn free(&mut self, p: *mut u8);
}

#[derive(Clone, Copy)]
pub struct Libc;
impl ThreadHeap for Libc {
    // SAFETY (callers): size > 0, and the block is freed by this allocator's own free.
    #[inline(always)]
    unsafe fn alloc(&mut self, size: usize) -> *mut u8 {
        // SAFETY: plain malloc.
        unsafe { libc::malloc(size).cast() }
    }
    // SAFETY (callers): p came from this allocator's alloc and is freed once.
    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: p came from malloc.
        unsafe { libc::free(p.cast()) }
    }
}

#[derive(Clone, Copy)]
pub struct MiDefault;
impl ThreadHeap for MiDefault {
    // SAFETY (callers): size > 0, and the block is freed by this allocator's own free.
    #[inline(always)]
    unsafe fn alloc(&mut self, size: usize) -> *mut u8 {
        // SAFETY: mimalloc's malloc.
        unsafe { libmimalloc_sys::mi_malloc(size).cast() }
    }
    // SAFETY (callers): p came from this allocator's alloc and is freed once.
    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: p came from mimalloc.
        unsafe { libmimalloc_sys::mi_free(p.cast()) }
    }
}

/// A mimalloc heap owned by this thread.
pub struct MiHeap(*mut libmimalloc_sys::mi_heap_t);
impl MiHeap {
    pub fn new() -> Result<MiHeap, String> {
        // SAFETY: creates a heap owned by the calling thread.
        let h = unsafe { libmimalloc_sys::mi_heap_new() };
        if h.is_null() { Err("mi_heap_new failed".into()) } else { Ok(MiHeap(h)) }
    }
}
impl ThreadHeap for MiHeap {
    // SAFETY (callers): size > 0, and the block is freed by this allocator's own free.
    #[inline(always)]
    unsafe fn alloc(&mut self, size: usize) -> *mut u8 {
        // SAFETY: allocating from our own thread's heap.
        unsafe { libmimalloc_sys::mi_heap_malloc(self.0, size).cast() }
    }
    // SAFETY (callers): p came from this allocator's alloc and is freed once.
    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: p came from a mimalloc heap.
        unsafe { libmimalloc_sys::mi_free(p.cast()) }
    }
}
impl Drop for MiHeap {
    fn drop(&mut self) {
        // SAFETY: the heap is ours; delete moves any live blocks to the default heap.
        unsafe { libmimalloc_sys::mi_heap_delete(self.0) }
    }
}

/// jemalloc through its prefixed entry points. Binding the thread to an arena (see
/// [`je_create_arena`], [`je_bind`]) happens before the first timed call.
#[derive(Clone, Copy)]
pub struct Je;
impl ThreadHeap for Je {
    // SAFETY (callers): size > 0, and the block is freed by this allocator's own free.
    #[inline(always)]
    unsafe fn alloc(&mut self, size: usize) -> *mut u8 {
        // SAFETY: jemalloc's malloc.
        unsafe { je_sys::malloc(size).cast() }
    }
    // SAFETY (callers): p came from this allocator's alloc and is freed once.
    #[inline(always)]
    unsafe fn free(&mut self, p: *mut u8) {
        // SAFETY: p came from jemalloc.
        unsafe { je_sys::free(p.cast()) }
    }
}

/// Creates a jemalloc arena and returns its index.
pub fn je_create_arena() -> Result<u32, String> {
    let mut idx: libc::c_uint = 0;
    let mut len = std::mem::size_of::<libc::c_uint>();
    // SAFETY: "arenas.create" writes an unsigned into idx.
    let r = unsafe {
        je_sys::mallctl(
            c"arenas.create".as_ptr(),
            (&mut idx as *mut libc::c_uint).cast::<c_void>(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if r != 0 { Err(format!("jemalloc mallctl(arenas.create) failed: error {r}")) } else { Ok(idx) }
}

/// Binds the calling thread to jemalloc arena `idx`.
pub fn je_bind(idx: u32) -> Result<(), String> {
    let mut v: libc::c_uint = idx;
    // SAFETY: "thread.arena" reads an unsigned from v.
    let r = unsafe {
        je_sys::mallctl(
            c"thread.arena".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&mut v as *mut libc::c_uint).cast::<c_void>(),
            std::mem::size_of::<libc::c_uint>(),
        )
    };
    if r != 0 { Err(format!("jemalloc mallctl(thread.arena={idx}) failed: error {r}")) } else { Ok(()) }
}

/// The arena the calling thread is bound to.
pub fn je_thread_arena() -> Option<u32> {
    let mut idx: libc::c_uint = 0;
    let mut len = std::mem::size_of::<libc::c_uint>();
    // SAFETY: reading "thread.arena" into idx.
    let r = unsafe {
        je_sys::mallctl(
            c"thread.arena".as_ptr(),
            (&mut idx as *mut libc::c_uint).cast::<c_void>(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    (r == 0).then_some(idx)
}

/// The file that the process's `malloc` symbol resolves to (dladdr), which shows
/// whether an LD_PRELOAD took effect.
pub fn malloc_provider() -> Option<String> {
    // SAFETY: a C struct of integers (and pointers), for which all-zero bytes are a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: looking up the dynamic symbol "malloc" in the global scope.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"malloc".as_ptr()) };
    if sym.is_null() {
        return None;
    }
    // SAFETY: sym is a valid address; info is a valid out-pointer.
    if unsafe { libc::dladdr(sym, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    Some(unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

/// What LD_PRELOAD splits its list on: a path holding one of these names two
/// libraries, and ld.so would load the first part.
const PRELOAD_SEPARATORS: [char; 4] = [' ', ':', '\t', '\n'];

/// Checks a `preload:PATH` before any worker starts, in every mode (issue 46
/// item 6): an absolute path with no space or colon (LD_PRELOAD splits on
/// them: `preload:/opt/a/lib x.so` loaded `/opt/a/lib`), to an ELF file; and,
/// when pagelab is root, only code that only root can change: the file, what
/// a link leads to, and every directory above either are owned by root and
/// writable by no one else (a library of another user, mode 666, in a 0777
/// directory or behind a link, ran its constructor as uid 0). The error names
/// the path and what is wrong.
pub fn check_preload(p: &std::path::Path) -> Result<(), String> {
    let shown = p.display();
    let Some(text) = p.to_str() else { return Err(format!("preload:{shown}: the path is not UTF-8")) };
    if text.contains(PRELOAD_SEPARATORS) {
        return Err(format!(
            "preload:{text}: the path has a space or a colon, where LD_PRELOAD splits its list (it would load \
             another file); move or link the library to a plain path"
        ));
    }
    if !p.is_absolute() {
        return Err(format!("preload:{text}: give an absolute path (e.g. preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)"));
    }
    let mut magic = [0u8; 4];
    let is_file = std::fs::metadata(p).is_ok_and(|m| m.is_file());
    let elf = is_file && std::fs::File::open(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok();
    if !is_file || !elf || magic != *b"\x7fELF" {
        return Err(format!(
            "preload:{text}: {} (expected preload:PATH to a shared library, e.g. \
             preload:/usr/lib/x86_64-linux-gnu/libjemalloc.so.2)",
            if !is_file { "no such file" } else { "not a shared library (no ELF header)" }
        ));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        only_root_can_change(p).map_err(|why| format!("preload:{text}: {why}; root loads only code that only root can change"))?;
    }
    Ok(())
}

/// The path, each link on it resolved, and every directory above: owned by
/// root, and (links aside, whose mode means nothing) not writable by group or
/// others.
fn only_root_can_change(p: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let canon = std::fs::canonicalize(p).map_err(|e| format!("cannot resolve it: {e}"))?;
    for path in [p, canon.as_path()] {
        let mut at = Some(path);
        while let Some(c) = at {
            let m = std::fs::symlink_metadata(c).map_err(|e| format!("{}: {e}", c.display()))?;
            if m.uid() != 0 {
                return Err(format!("{} is owned by uid {}, not root", c.display(), m.uid()));
            }
            if !m.file_type().is_symlink() && m.mode() & 0o022 != 0 {
                return Err(format!("{} is writable by others than root (mode {:o})", c.display(), m.mode() & 0o7777));
            }
            at = c.parent();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preloaded_library_is_checked_before_any_worker() {
        // Plain-path and ELF rules hold for everyone.
        for (p, says) in [
            ("/opt/a/lib x.so", "space or a colon"),
            ("/opt/a:/b.so", "space or a colon"),
            ("relative/lib.so", "absolute"),
            ("/etc/passwd", "no ELF header"),
            ("/no/such/lib.so", "no such file"),
        ] {
            let e = check_preload(std::path::Path::new(p)).unwrap_err();
            assert!(e.contains(says) && e.starts_with(&format!("preload:{p}")), "{p}: {e}");
        }
        // libc itself passes, as root and not.
        let libc_path = malloc_provider().expect("dladdr of malloc");
        let libc_path = std::fs::canonicalize(&libc_path).unwrap();
        check_preload(&libc_path).unwrap();
    }

    #[test]
    fn a_preloaded_library_only_root_can_change_is_required_as_root() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return crate::kit::skip_test("the ownership rules apply as root only");
        }
        let tmp = tempfile::tempdir().unwrap();
        let libc_path = std::fs::canonicalize(malloc_provider().expect("dladdr of malloc")).unwrap();
        // A copy of a real library where others can change it: under /tmp
        // (mode 1777), in a 0777 directory, with mode 666, owned by nobody,
        // and a link in a root-owned directory to one.
        use std::os::unix::fs::PermissionsExt;
        let lib = tmp.path().join("lib.so");
        std::fs::copy(&libc_path, &lib).unwrap();
        let e = check_preload(&lib).unwrap_err();
        assert!(e.contains("writable by others") && e.contains("only root can change"), "{e}");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_preload(&lib).unwrap_err().contains("lib.so is writable"), "the file itself first");
        std::os::unix::fs::chown(&lib, Some(65534), None).unwrap();
        assert!(check_preload(&lib).unwrap_err().contains("owned by uid 65534"));
    }

    #[test]
    fn parse_and_support_matrix() {
        assert_eq!(Allocator::parse("glibc").unwrap(), Allocator::Glibc);
        assert_eq!(Allocator::parse("preload:/x.so").unwrap(), Allocator::Preload("/x.so".into()));
        assert!(Allocator::parse("preload:").is_err());
        assert!(Allocator::parse("tcmalloc").unwrap_err().contains("preload:PATH"));
        assert!(Allocator::Glibc.unsupported(HeapMode::PerThread).is_some());
        assert!(Allocator::Mimalloc.unsupported(HeapMode::Shared).is_some());
        assert!(Allocator::Jemalloc.unsupported(HeapMode::PerThread).is_none());
        // glibc-shared: glibc shared, every other allocator its own way.
        let g = HeapMode::GlibcShared;
        assert_eq!(g.of(&Allocator::Glibc), HeapMode::Shared);
        for a in [Allocator::Mimalloc, Allocator::Jemalloc, Allocator::Preload("/x.so".into())] {
            assert_eq!(g.of(&a), HeapMode::Default, "{a:?}");
            assert!(a.unsupported(g).is_none(), "{a:?}");
        }
        assert_eq!(HeapMode::PerThread.of(&Allocator::Glibc), HeapMode::PerThread);
        // glibc-cached: glibc with its deep cache, every other allocator its own way.
        let c = HeapMode::GlibcCached;
        assert_eq!(c.of(&Allocator::Glibc), HeapMode::GlibcCached);
        assert!(Allocator::Glibc.unsupported(c).is_none());
        for a in [Allocator::Mimalloc, Allocator::Jemalloc, Allocator::Preload("/x.so".into())] {
            assert_eq!(c.of(&a), HeapMode::Default, "{a:?}");
        }
        assert!(c.glibc_only() && g.glibc_only() && !HeapMode::Shared.glibc_only());
    }

    /// glibc's cache as it comes holds 7 blocks a size, so the check reads
    /// no deep cache in this process (tests/heap.rs runs `glibc-cached`,
    /// whose workers pass it only with the tunable in effect).
    #[test]
    fn glibcs_default_cache_is_not_deep() {
        if std::env::var_os("GLIBC_TUNABLES").is_some() || std::env::var_os("LD_PRELOAD").is_some() {
            crate::kit::skip_test("GLIBC_TUNABLES or LD_PRELOAD is set in this test's environment");
            return;
        }
        assert!(!deep_tcache());
        let t = std::env::var("GLIBC_TUNABLES");
        assert!(t.is_err() && deep_tcache_tunables() == DEEP_TCACHE);
    }

    #[test]
    fn jemalloc_arenas_bind_per_thread() {
        let a = je_create_arena().unwrap();
        let b = je_create_arena().unwrap();
        assert_ne!(a, b);
        std::thread::spawn(move || {
            je_bind(b).unwrap();
            assert_eq!(je_thread_arena(), Some(b));
        })
        .join()
        .unwrap();
        je_bind(a).unwrap();
        assert_eq!(je_thread_arena(), Some(a));
    }

    #[test]
    fn malloc_resolves_to_libc_without_preload() {
        let p = malloc_provider().expect("dladdr of malloc");
        assert!(p.contains("libc"), "malloc comes from {p}");
    }
}
