//! wscap's worker commands and their replies, as types (issue 60:
//! [`sandbox::worker::Request`]).

use serde::{Deserialize, Serialize};

/// The reply to `setup`: where the region lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupDone {
    pub addr: usize,
    pub len: usize,
}

/// The reply to `scan`: the window's scans, their times and the worker's usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanDone {
    pub scans: u64,
    pub seconds: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub utime_s: f64,
    pub stime_s: f64,
    /// Scans completed in each whole second of the window.
    pub per_second: Vec<u64>,
}

/// The reply to `baseline`: the instrumented loop against a minimal one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineDone {
    pub instrumented_scans_per_sec: f64,
    pub minimal_scans_per_sec: f64,
    pub instrumented_vs_minimal: f64,
}

/// `setup`: fill the region with random bytes; the reply says where it lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup;

/// `scan`: scan for the window, timing every scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scan {
    pub duration_s: f64,
}

/// `baseline`: the instrumented loop against a minimal one, over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub duration_s: f64,
}

/// `exit`: the worker ends (no reply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit;

sandbox::commands! {
    /// What the wscap worker is told, each with its reply.
    pub enum Command {
        Setup(Setup) -> SetupDone,
        Scan(Scan) -> ScanDone,
        Baseline(Baseline) -> BaselineDone,
        Exit(Exit) -> (),
    }
}
