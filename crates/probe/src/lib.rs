//! Reading kernel counters, and nothing else.
//!
//! Every kernel file has a pure `parse(&str)` function that returns a typed value,
//! so the parsers can be tested on text copied verbatim from real kernels. The
//! [`Probe`] reads those files from injectable roots (`proc`, `sys`, the cgroup
//! mounts), so tests can point it at a fake tree in a temporary directory.
//!
//! Rules this crate keeps:
//! - a missing file is missing data (`Ok(None)`), never an error;
//! - a malformed file is an error that names the path and the line;
//! - counters are stored raw and cumulative; rates are computed elsewhere
//!   (`record::derive`), never here;
//! - no policy: this crate never writes to the system.

pub mod cgroup;
pub mod counters;
pub mod environment;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod kmsg;
pub mod lru_gen;
pub mod meminfo;
pub mod mountinfo;
pub mod pid;
pub mod pressure;
pub mod process;
pub mod reader;
pub mod sample;
pub mod stat;
pub mod swaps;
pub mod util;
pub mod vmstat;
pub mod zram;

pub use error::{ParseError, ProbeError};
pub use reader::{CgroupTarget, Probe, Roots, Targets};
pub use sample::Sample;
