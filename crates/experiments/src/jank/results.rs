//! `jank`: one entry per arm and repeat, `{"result": {...}}`.

use crate::jank::frames::FrameFigures;
use crate::thrash::results::ThrashResult;
use serde::{Deserialize, Serialize};

/// A frame probe's account of one run, by window: before the hog (the
/// baseline), during it (its first allocation to its last consumer's t_p),
/// and after (from when its load fits again until the watch ended).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ProbeFigures {
    /// Inside the hog's group (counted in its overcommit), or outside it.
    pub inside: bool,
    /// Its working set, bytes.
    pub ws_bytes: u64,
    pub before: FrameFigures,
    pub during: FrameFigures,
    pub after: FrameFigures,
    /// A frame is on time when it takes at most this long, ms
    /// ([`crate::jank::frames::on_time_ms`]).
    #[serde(default = "record::results::nan")]
    pub on_time_ms: f64,
    /// From when the hog's load fit again (its end, for an arm that never
    /// overcommitted) until frames were on time for a second, s; None: not
    /// within the watch (censored at its end).
    pub back_on_time_s: Option<f64>,
    /// How long frames were watched after the load fit, s: a run whose
    /// frames were not on time again within it counts as at least this long
    /// (censored, a lower bound; never dropped).
    #[serde(default = "record::results::nan")]
    pub watch_s: f64,
    /// Frames it skipped because the one before ended past their time.
    pub missed: u64,
    /// The longest frame in each 0.25 s, (s after the start signal, ms): the chart.
    pub series: Vec<(f64, f64)>,
}

/// A global setting an arm ran under (journaled and restored), as the
/// kernel read it back once set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Setting {
    pub name: String,
    pub value: String,
}

/// One run of one arm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct JankResult {
    /// The arm's name (`zram:lz4`, `swapfile`, `cpu-only`, with its settings).
    pub arm: String,
    pub repeat_index: u32,
    /// The CPU-only control: the hog's group holds it twice over, nothing pages.
    pub cpu_only: bool,
    /// The store's compressor, as the kernel reported it after setup.
    pub compressor: Option<String>,
    pub settings: Vec<Setting>,
    /// The compressors this machine's zram offered (what the zstd finding
    /// says when it could not run).
    pub zram_offers: Vec<String>,
    pub inside: ProbeFigures,
    pub outside: ProbeFigures,
    /// The hog: thrash's run, as thrash records it (its protocol figures
    /// and breaks decide whether this arm is inside the study's protocol).
    /// For a user's command: its store, limit, swap-outs, OOM kills and
    /// windows, with the break that thrash's protocol does not apply.
    pub hog: ThrashResult,
    /// The hog when it was a user's command (`jank -- CMD`): what it did.
    pub command: Option<CommandRun>,
}

/// What a user's command did in one run, in the group in place of thrash's
/// consumers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CommandRun {
    /// `timed_out` (killed at `--timeout`), `ok` (exit 0, whatever else the
    /// group's OOM killer took), `oom` (it did not exit 0, and the group's
    /// OOM kills were above 0 when it ended) or `failed` (another exit code
    /// or a signal).
    pub outcome: String,
    pub exit_code: Option<i32>,
    /// The signal that ended it, where one did.
    pub signal: Option<i32>,
    /// From its start to its end, s.
    #[serde(default = "record::results::nan")]
    pub seconds: f64,
    /// The group's limit in this run: `--limit`, or for the CPU-only control
    /// `--limit` and the store's room together.
    pub limit_bytes: u64,
    /// The group's highest charge (the command and the frame probe inside);
    /// None where the kernel does not keep it and no poll read it.
    pub peak_bytes: Option<u64>,
    /// Its own major faults and its waited-for children's (getrusage).
    pub major_faults: u64,
    /// OOM kills in the group when it ended (the frame probe inside counts
    /// too); None where they could not be read.
    pub oom_kills: Option<u64>,
}

/// run.json's `results` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Entry {
    pub result: JankResult,
}

/// run.json's `config`: the hog's plan and what every arm shares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Config {
    pub arms: Vec<String>,
    pub repeat: u32,
    pub hog: Option<crate::thrash::results::Plan>,
    /// The frame probe: its period (ms), its working set's share of the
    /// room, the pages it touches and the work it does each frame.
    #[serde(default = "record::results::nan")]
    pub frame_ms: f64,
    #[serde(default = "record::results::nan")]
    pub share: f64,
    pub ws_bytes: u64,
    pub touch_pages: u64,
    pub work: u64,
    /// The hog when it was a user's command: its argv, the group's limit
    /// and the store's room (empty, None: thrash's consumers).
    pub command: Vec<String>,
    pub limit_bytes: Option<u64>,
    pub store_bytes: Option<u64>,
    /// The disk under the swap file limited, for the hog's group, to this
    /// many reads and writes a second (`--swap-iops`: a slow drive); None:
    /// the disk as it is.
    pub swap_iops: Option<u64>,
}
