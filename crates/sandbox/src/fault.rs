//! Fault injection for the crash tests: with `PAGELAB_FAULT_AT=N` in the
//! environment, the Nth checkpoint reached by this process kills the process with
//! SIGKILL, exactly as an OOM kill or `kill -9` would, so tests can check that the
//! journal restores the system from every point of a run. Without the variable a
//! checkpoint costs one relaxed atomic load.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

static TARGET: OnceLock<Option<u64>> = OnceLock::new();
static COUNT: AtomicU64 = AtomicU64::new(0);

/// A point where a crash may be injected. `what` is printed to stderr just before.
pub fn point(what: &str) {
    let target = *TARGET.get_or_init(|| std::env::var("PAGELAB_FAULT_AT").ok().and_then(|v| v.parse().ok()));
    let Some(t) = target else { return };
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    if std::env::var_os("PAGELAB_FAULT_TRACE").is_some() {
        say::errln!("fault point {n}: {what}");
    }
    if n == t {
        say::errln!("pagelab: injected SIGKILL at fault point {n} ({what})");
        // SAFETY: raising a signal on ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
}

/// How many checkpoints this process has passed.
pub fn count() -> u64 {
    COUNT.load(Ordering::SeqCst)
}
