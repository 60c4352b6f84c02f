//! Rendering run records: CSV, text summaries (and later charts and HTML).
//!
//! This crate reads run directories only; it never touches /proc or /sys. Every
//! per-interval value comes from `record::derive`.

pub mod charts;
pub mod eat;
pub mod heap;
pub mod mapping;
pub mod summary;
pub mod thrash;
pub mod timeline;
pub mod wscap;
