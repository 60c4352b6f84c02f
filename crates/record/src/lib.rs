//! Time series of kernel counters, and run directories.
//!
//! - [`sampler`]: a deadline-scheduled, mlocked thread that takes a `Sample` every
//!   interval and hands it to a sink;
//! - [`derive`]: the one place where raw counters become per-interval values, rates
//!   and memory categories (the live monitor and the report both use it);
//! - [`rundir`]: the on-disk record (run.json, samples.jsonl, events.jsonl), written
//!   as the run proceeds so that a run killed at any moment can still be read;
//! - [`results`]: the typed results each experiment writes into run.json.
//!
//! This crate never prints and never changes the system.

pub mod derive;
pub mod jsonl;
pub mod results;
pub mod rundir;
pub mod safe;
pub mod sampler;
pub mod stats;
pub mod stop;
pub mod weight;

pub use rundir::{Event, RunDir, RunJson, RunRecord, RunStatus};
pub use sampler::{Sampler, SamplerConfig, SamplerStats};
