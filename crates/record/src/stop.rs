//! A process-wide stop request: set by the first Ctrl-C or SIGTERM, or by a guard
//! (the host guard, a sampler sink) with a reason. Long loops poll it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static REASON: Mutex<Option<String>> = Mutex::new(None);

/// Asks every loop to stop; the first reason given is kept.
pub fn request(reason: impl Into<String>) {
    if let Ok(mut r) = REASON.lock() {
        r.get_or_insert_with(|| reason.into());
    }
    STOP.store(true, Ordering::SeqCst);
}

/// Async-signal-safe variant for signal handlers: sets the flag only.
pub fn request_from_signal() {
    STOP.store(true, Ordering::SeqCst);
}

pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Why a stop was requested, if a reason was given.
pub fn reason() -> Option<String> {
    REASON.lock().ok().and_then(|r| r.clone())
}

/// Sleeps up to `d`, waking early if a stop is requested. Returns true if stopped.
pub fn sleep(d: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if requested() {
            return true;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(20)));
    }
}
