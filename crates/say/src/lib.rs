//! pagelab's terminal output. std's `println!` and `eprintln!` panic when a
//! write fails: `pagelab doctor | head -1` (a closed pipe), a run whose
//! terminal hung up (EIO after SIGHUP, while it restores what it changed),
//! a report sent to a full disk. A panic mid-run leaves the run's record
//! `running` and skips what the run would have done next, so pagelab prints
//! through these macros instead (tests/house.rs holds every other source to
//! them):
//!
//! - [`outln!`] and [`out!`] write to stdout. A failed write is never a
//!   panic: the first error is kept, later writes are dropped, and
//!   [`stdout_failure`] says at exit what went wrong (a closed pipe is a
//!   reader that left, not a fault; any other error means what was printed
//!   is incomplete).
//! - [`errln!`] and [`err!`] write to stderr, each call as one write, and
//!   drop a failure: stderr is where a failure would be told.
//!
//! Where the calling crate is compiled for its own tests (`cfg(test)` at
//! the macro's use), they are std's macros, so that the harness captures
//! them. A library's prints reached from another crate's tests (an
//! integration test calling `experiments`) are `say`'s and go to the
//! terminal uncaptured.
//!
//! Any failed write turns stdout off for good: a reader that left, a full
//! disk, a stdout a parent made non-blocking (`WouldBlock`).

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether a write to stdout failed; [`FIRST_FAILURE`] holds how.
static FAILED: AtomicBool = AtomicBool::new(false);
/// The first failed write to stdout: (kind, text).
static FIRST_FAILURE: Mutex<Option<(io::ErrorKind, String)>> = Mutex::new(None);

fn fail(e: &io::Error) {
    let mut first = FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    first.get_or_insert_with(|| (e.kind(), e.to_string()));
    FAILED.store(true, Ordering::SeqCst);
}

/// Writes to stdout, the way [`outln!`] and [`out!`] do: nothing more
/// once a write failed (a pipe's reader that left reads nothing more; a
/// full disk would keep only scraps).
#[doc(hidden)]
pub fn write_out(args: fmt::Arguments<'_>, newline: bool) {
    if FAILED.load(Ordering::SeqCst) {
        return;
    }
    // Formatted before the lock, as `write_err` does: a Display that
    // prints, or takes a lock another printing thread holds, cannot land
    // inside this line or wait on it.
    let mut s = fmt::format(args);
    if newline {
        s.push('\n');
    }
    if let Err(e) = io::stdout().lock().write_all(s.as_bytes()) {
        fail(&e);
    }
}

/// Writes to stderr, the way [`errln!`] and [`err!`] do: one write a call.
#[doc(hidden)]
pub fn write_err(args: fmt::Arguments<'_>, newline: bool) {
    let mut s = fmt::format(args);
    if newline {
        s.push('\n');
    }
    let _ = io::stderr().lock().write_all(s.as_bytes());
}

/// How writing stdout failed, after flushing it: `None` if every write
/// went through. A closed pipe (the reader left, as `| head` does) is
/// `Failure::ReaderLeft`, anything else (a full disk, a hung-up terminal)
/// `Failure::Incomplete` with the error's text.
pub fn stdout_failure() -> Option<Failure> {
    if !FAILED.load(Ordering::SeqCst)
        && let Err(e) = io::stdout().lock().flush()
    {
        fail(&e);
    }
    let first = FIRST_FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    first.as_ref().map(|(kind, text)| match kind {
        io::ErrorKind::BrokenPipe => Failure::ReaderLeft,
        _ => Failure::Incomplete(text.clone()),
    })
}

/// How a write to stdout failed ([`stdout_failure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A closed pipe: whoever read stdout stopped reading.
    ReaderLeft,
    /// Any other error: what was printed is incomplete.
    Incomplete(String),
}

/// `println!` that never panics ([crate docs](crate)).
#[macro_export]
macro_rules! outln {
    () => { $crate::outln!("") };
    ($($t:tt)*) => {{
        #[cfg(test)]
        ::std::println!($($t)*);
        #[cfg(not(test))]
        $crate::write_out(::std::format_args!($($t)*), true);
    }};
}

/// `print!` that never panics ([crate docs](crate)).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        #[cfg(test)]
        ::std::print!($($t)*);
        #[cfg(not(test))]
        $crate::write_out(::std::format_args!($($t)*), false);
    }};
}

/// `eprintln!` that never panics ([crate docs](crate)).
#[macro_export]
macro_rules! errln {
    () => { $crate::errln!("") };
    ($($t:tt)*) => {{
        #[cfg(test)]
        ::std::eprintln!($($t)*);
        #[cfg(not(test))]
        $crate::write_err(::std::format_args!($($t)*), true);
    }};
}

/// `eprint!` that never panics ([crate docs](crate)).
#[macro_export]
macro_rules! err {
    ($($t:tt)*) => {{
        #[cfg(test)]
        ::std::eprint!($($t)*);
        #[cfg(not(test))]
        $crate::write_err(::std::format_args!($($t)*), false);
    }};
}
