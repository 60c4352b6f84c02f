//! Rendering run records: CSV, text summaries (and later charts and HTML).
//!
//! This crate reads run directories only; it never touches /proc or /sys. Every
//! per-interval value comes from `record::derive`.

pub mod charts;
pub mod compare;
pub mod control;
pub mod error;
pub mod experiment;
pub mod finding_chart;
#[doc(hidden)]
pub mod fuzzing;
pub mod headline;
pub mod html;
pub mod lab;
pub mod model;
pub mod openmetrics;
pub mod summary;
pub mod timeline;
pub mod verdict;

/// `s` as one plain part of a file name: anything but an ASCII letter, a
/// digit, `-`, `_` or `.` becomes `_`, and so does a leading `.`. A chart's
/// name built from a run's data (a preset, a pattern) then never names
/// another directory (a review wrote charts outside the run directory with a
/// pattern of `a/../../x`).
pub fn plain_name(s: &str) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || (c == '.' && i > 0) { c } else { '_' })
        .collect()
}

/// Writes a whole output file of a run directory the safe way
/// ([`record::safe::write_in_run_dir`]): never through a link (the run
/// directory's own name included), never over what is not a regular file.
pub fn write_file(path: impl AsRef<std::path::Path>, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    record::safe::write_in_run_dir(path.as_ref(), contents.as_ref())
}
