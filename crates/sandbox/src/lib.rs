//! Changing the system, always undoably.
//!
//! Every change pagelab makes to a machine (a memory cgroup, a zram swap device, a
//! swap file, a zswap parameter, a sysctl) goes through a [`Sandbox`]. Each change is
//! first written to an on-disk journal under `/run/pagelab/` and fsynced, then made.
//! The sandbox undoes its changes in reverse order when it is dropped, when
//! [`Sandbox::restore`] is called, from the panic hook, and, after a SIGKILL, at the
//! next start of any pagelab command (or `pagelab restore`) through the journal.
//!
//! pagelab never swaps off, resizes or reuses a swap device, cgroup or setting it did
//! not create: only changes recorded in a journal are ever undone.
//!
//! The crate also runs worker processes: the pagelab binary re-executed in a hidden
//! worker mode, placed in its cgroup before it allocates anything.

pub mod cgroup;
pub mod damon;
pub mod disk;
pub mod error;
pub mod fault;
pub mod guard;
pub mod journal;
pub mod mm;
pub mod privilege;
pub mod runlock;
pub mod sandbox;
pub mod swap;
pub mod testing;
pub mod worker;
pub mod zram;

pub use error::SandboxError;
pub use sandbox::Sandbox;
