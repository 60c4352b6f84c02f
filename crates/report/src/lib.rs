//! Rendering run records: CSV, text summaries (and later charts and HTML).
//!
//! This crate reads run directories only; it never touches /proc or /sys. Every
//! per-interval value comes from `record::derive`.

pub mod charts;
pub mod compare;
pub mod experiment;
pub mod finding_chart;
#[doc(hidden)]
pub mod fuzzing;
pub mod headline;
pub mod html;
pub mod lab;
pub mod model;
pub mod openmetrics;
pub mod stats;
pub mod summary;
pub mod timeline;
pub mod verdict;

/// Writes a whole output file of a run directory the safe way
/// ([`record::safe::write_in_run_dir`]): never through a link (the run
/// directory's own name included), never over what is not a regular file.
pub fn write_file(path: impl AsRef<std::path::Path>, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    record::safe::write_in_run_dir(path.as_ref(), contents.as_ref())
}
