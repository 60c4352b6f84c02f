//! The run directory: the record format of DESIGN.md.
//!
//! ```text
//! run.json       meta, environment, config, phases, results, status
//! samples.jsonl  raw Samples, one per line, appended as they are taken
//! events.jsonl   phase and user events, appended as they happen
//! ```
//!
//! run.json is replaced atomically (write to a temporary file, then rename), so it is
//! always whole. The JSONL files are written one line per `write(2)` with no user
//! space buffering: a SIGKILL at any moment loses at most the line being written,
//! and the reader skips a torn last line. A run.json that still says `running`
//! while its process is gone is reported as `interrupted`.

use probe::Sample;
use probe::environment::Environment;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::jsonl::read_jsonl;
use crate::weight::Budget;

pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Running => "running",
            State::Complete => "complete",
            State::Interrupted => "interrupted",
            State::Failed => "failed",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStatus {
    pub state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RunStatus {
    pub fn new(state: State, reason: Option<String>) -> Self {
        RunStatus { state, reason }
    }
}

/// A timed phase of a run (from the workload's events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phase {
    /// 1-based marker number on charts.
    pub index: u32,
    pub name: String,
    /// CLOCK_MONOTONIC, nanoseconds.
    pub start_ns: u64,
    pub end_ns: Option<u64>,
}

/// Something that happened during a run: a phase boundary, a trim, a user mark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// CLOCK_MONOTONIC, nanoseconds.
    pub t_ns: u64,
    /// `phase_start`, `phase_end`, `mark`, `trim`, `info`, ...
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: serde_json::Value,
}

impl Event {
    pub fn now(kind: &str, name: &str, detail: serde_json::Value) -> Self {
        Event { t_ns: probe::sample::monotonic_ns(), kind: kind.into(), name: name.into(), detail }
    }
}

/// A run directory's run.json (docs/schema.md): what ran, where, on what
/// machine, and its results. Written atomically; a run still `running` whose
/// writer is gone reads as interrupted. schema/run.schema.json is generated
/// from this type, each experiment's results from its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunJson {
    pub format: u32,
    pub experiment: String,
    pub pagelab_version: String,
    pub command_line: Vec<String>,
    /// The process that wrote the run, and its start time in clock ticks after boot
    /// (together they tell whether the writer is still alive).
    pub pid: u32,
    pub pid_starttime: Option<u64>,
    pub started_unix_ms: u64,
    /// CLOCK_MONOTONIC at the start, nanoseconds: the zero of the run's time axis.
    pub start_monotonic_ns: u64,
    pub ended_unix_ms: Option<u64>,
    /// The machine the run happened on.
    pub environment: Environment,
    /// The experiment's settings.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>", extend("type" = ["object", "null"]))]
    pub config: serde_json::Value,
    pub phases: Vec<Phase>,
    /// One entry per configuration and repeat; see `$defs/<experiment>_result`.
    #[schemars(with = "Vec<serde_json::Value>", extend("type" = ["array", "null"]))]
    pub results: serde_json::Value,
    pub status: RunStatus,
    /// The sampler's own statistics (lateness, missed deadlines).
    pub sampler: Option<crate::sampler::SamplerStats>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl RunJson {
    pub fn new(experiment: &str, version: &str, environment: Environment, config: serde_json::Value) -> Self {
        let pid = std::process::id();
        RunJson {
            format: FORMAT_VERSION,
            experiment: experiment.into(),
            pagelab_version: version.into(),
            command_line: std::env::args().collect(),
            pid,
            pid_starttime: probe::Probe::default().pid_stat(pid as i32).ok().flatten().map(|s| s.starttime),
            started_unix_ms: probe::sample::realtime_ns() / 1_000_000,
            start_monotonic_ns: probe::sample::monotonic_ns(),
            ended_unix_ms: None,
            environment,
            config,
            phases: Vec::new(),
            results: serde_json::Value::Null,
            status: RunStatus::new(State::Running, None),
            sampler: None,
            notes: Vec::new(),
        }
    }
}

/// One JSON value per line, each line a single write(2).
#[derive(Debug)]
pub struct JsonlWriter {
    file: File,
    line: Vec<u8>,
}

impl JsonlWriter {
    pub fn open_append(path: &Path) -> std::io::Result<Self> {
        let file = crate::safe::append(path)?;
        Ok(JsonlWriter { file, line: Vec::with_capacity(8192) })
    }
    pub fn write<T: Serialize>(&mut self, v: &T) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, v)?;
        self.line.push(b'\n');
        self.file.write_all(&self.line)
    }
}

/// A run directory being written.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    run: Mutex<RunJson>,
    events: Mutex<JsonlWriter>,
}

impl RunDir {
    /// Creates the directory and its files. Refuses a directory that already
    /// holds a run.
    pub fn create(path: &Path, run: RunJson) -> std::io::Result<RunDir> {
        use std::io::{Error, ErrorKind};
        if path.exists() && !path.is_dir() {
            return Err(Error::new(ErrorKind::AlreadyExists, "exists and is not a directory; give a new directory"));
        }
        std::fs::create_dir_all(path)?;
        let taken = || Error::new(ErrorKind::AlreadyExists, "already holds a run (run.json); give a new directory");
        if path.join("run.json").exists() {
            return Err(taken());
        }
        // The claim: samples.jsonl made with O_EXCL. Of two processes given the
        // same directory, exactly one gets it; the other is refused here.
        match crate::safe::create_new(&path.join("samples.jsonl")) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => return Err(taken()),
            Err(e) => return Err(e),
        }
        write_atomic(&path.join("run.json"), &run)?;
        let events = JsonlWriter::open_append(&path.join("events.jsonl"))?;
        Ok(RunDir { path: path.to_path_buf(), run: Mutex::new(run), events: Mutex::new(events) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A writer for samples.jsonl, to move into the sampler's sink.
    pub fn sample_writer(&self) -> std::io::Result<JsonlWriter> {
        JsonlWriter::open_append(&self.path.join("samples.jsonl"))
    }

    /// Appends an event; phase events also update run.json's phase list.
    pub fn event(&self, ev: &Event) -> std::io::Result<()> {
        self.events.lock().expect("event writer").write(ev)?;
        match ev.kind.as_str() {
            "phase_start" => self.update(|r| {
                let index = r.phases.len() as u32 + 1;
                r.phases.push(Phase { index, name: ev.name.clone(), start_ns: ev.t_ns, end_ns: None });
            }),
            "phase_end" => self.update(|r| {
                if let Some(p) = r.phases.iter_mut().rev().find(|p| p.name == ev.name && p.end_ns.is_none()) {
                    p.end_ns = Some(ev.t_ns);
                }
            }),
            _ => Ok(()),
        }
    }

    /// Changes run.json and writes it out atomically.
    pub fn update(&self, f: impl FnOnce(&mut RunJson)) -> std::io::Result<()> {
        let mut r = self.run.lock().expect("run.json");
        f(&mut r);
        write_atomic(&self.path.join("run.json"), &*r)
    }

    pub fn snapshot(&self) -> RunJson {
        self.run.lock().expect("run.json").clone()
    }

    /// Records the final status.
    pub fn finish(&self, status: RunStatus) -> std::io::Result<()> {
        self.update(|r| {
            r.status = status;
            r.ended_unix_ms = Some(probe::sample::realtime_ns() / 1_000_000);
        })
    }
}

fn write_atomic<T: Serialize>(path: &Path, v: &T) -> std::io::Result<()> {
    crate::safe::write_with(path, |f| {
        serde_json::to_writer_pretty(&mut *f, v)?;
        f.write_all(b"\n")
    })
}

/// Creates a new directory `<parent>/<stem>`, or `<stem>-2`, `<stem>-3`, … when
/// that exists: two runs started in the same second each get their own.
pub fn create_unique_dir(parent: &Path, stem: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(parent)?;
    for n in 1..10_000u32 {
        let name = if n == 1 { stem.to_string() } else { format!("{stem}-{n}") };
        let p = parent.join(name);
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, format!("{stem}-2 … {stem}-9999 all exist")))
}

/// Errors reading a run directory.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a pagelab run.json ({})", brief(.source))]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: {why}")]
    Refused { path: PathBuf, why: String },
    #[error(
        "{path}: record format {found}, newer than the format {supported} this pagelab reads; read it with a newer pagelab"
    )]
    Format { path: PathBuf, found: u64, supported: u32 },
}

impl ReadError {
    /// The same error, naming `path` (the name the user knows, not the
    /// descriptor's path it was read through).
    pub fn at(self, path: &Path) -> ReadError {
        let path = path.to_path_buf();
        match self {
            ReadError::Io { source, .. } => ReadError::Io { path, source },
            ReadError::Json { source, .. } => ReadError::Json { path, source },
            ReadError::Refused { why, .. } => ReadError::Refused { path, why },
            ReadError::Format { found, supported, .. } => ReadError::Format { path, found, supported },
        }
    }
}

/// `O_NOFOLLOW`, except for a directory this process holds open
/// (`/proc/self/fd/N`, as [`OpenDir::path`] gives it): that name is a link by
/// nature, to the directory already opened, and is the way to reach it.
pub fn no_follow(dir: &Path) -> libc::c_int {
    if dir.parent() == Some(Path::new("/proc/self/fd")) { 0 } else { libc::O_NOFOLLOW }
}

/// A run directory opened once, without following a link at its own name
/// (`O_DIRECTORY | O_NOFOLLOW`). Its files are read through the open
/// directory (`/proc/self/fd/N/NAME`), so a lab's step swapped for a link
/// after it was checked cannot redirect a read (issue 46: "no link in any
/// component").
pub struct OpenDir {
    file: File,
}

impl OpenDir {
    pub fn open(dir: &Path) -> Result<OpenDir, ReadError> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | no_follow(dir) | libc::O_CLOEXEC)
            .open(dir)
            .map(|file| OpenDir { file })
            .map_err(|source| match source.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR)
                    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) =>
                {
                    ReadError::Refused { path: dir.to_path_buf(), why: LINKED.into() }
                }
                _ => ReadError::Io { path: dir.to_path_buf(), source },
            })
    }

    /// The directory a user named on the command line, opened once: a link
    /// at its name is followed now (it is trusted as named, at this moment)
    /// and never again. Paths below [`OpenDir::path`] reach the directory
    /// that was opened, so replacing the named directory with a link while a
    /// command runs redirects no read and no write.
    pub fn named(dir: &Path) -> Result<OpenDir, ReadError> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
            .map(|file| OpenDir { file })
            .map_err(|source| ReadError::Io { path: dir.to_path_buf(), source })
    }

    /// The open directory itself, as a path (`/proc/self/fd/N`).
    pub fn path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// The path that reaches `name` inside the open directory; `None` when
    /// `name` is not one plain name (a `/`, `.`, `..` or nothing), so that a
    /// name from a file cannot reach another directory.
    pub fn at(&self, name: &str) -> Option<PathBuf> {
        let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0']);
        plain.then(|| self.path().join(name))
    }
}

/// A parse error with what it quotes from the file cut short: a file read by
/// mistake (a key, a password file) should not end up in a terminal or a log.
/// Quoted spans (in `backticks` or "double quotes") longer than 16 characters
/// keep their first 8 and say how long they were.
///
/// Text between quotes is cut the same way once it is longer than 64
/// characters: an embedded quote in a value pairs the wrong marks, and the
/// value's rest would otherwise come out as "unquoted" text (issue 46 item
/// 13: 300 characters after an embedded backtick). The text before the first
/// quote (a path, the error's kind) is kept whole.
pub fn brief(e: &impl std::fmt::Display) -> String {
    fn cut(out: &mut String, text: &str, longest: usize) {
        let n = text.chars().count();
        if n > longest {
            out.extend(text.chars().take(8));
            out.push_str(&format!("… ({n} characters)"));
        } else {
            out.push_str(text);
        }
    }
    let s = e.to_string();
    let mut out = String::with_capacity(s.len().min(512));
    let mut rest = s.as_str();
    let mut first = true;
    while let Some(i) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[i] as char;
        if first {
            out.push_str(&rest[..i]);
        } else {
            cut(&mut out, &rest[..i], 64);
        }
        first = false;
        out.push(q);
        let after = &rest[i + 1..];
        let Some(j) = after.find(q) else {
            rest = after;
            break;
        };
        cut(&mut out, &after[..j], 16);
        out.push(q);
        rest = &after[j + 1..];
    }
    if first {
        out.push_str(rest);
    } else {
        cut(&mut out, rest, 64);
    }
    // And at most 160 characters from the first quote on, whatever the quotes
    // (a review let a secret through 16 characters at a time between quotes).
    if let Some(q) = out.find(['`', '"']) {
        let n = out[q..].chars().count();
        if n > 160 {
            let kept: String = out[q..].chars().take(120).collect();
            out = format!("{}{kept}… ({} more characters)", &out[..q], n - 120);
        }
    }
    // One line, always: a control character from the file (a newline, a
    // carriage return, an escape sequence) is shown escaped, never sent to
    // the terminal (a value holding "a\nb" made the refusal two lines).
    one_line(out)
}

/// `s` with every control character shown escaped (a newline, a carriage
/// return, an escape sequence from a file), so that a message quoting a file
/// stays one line and sends nothing to the terminal.
pub fn one_line(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    s.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// Refuses a run.json or lab.json written in a newer format than
/// [`FORMAT_VERSION`] (schema/run.schema.json, schema/lab.schema.json): its
/// fields may mean something else now. Older formats are read.
pub fn check_format(path: &Path, text: &str) -> Result<(), ReadError> {
    #[derive(Deserialize)]
    struct Head {
        format: Option<serde_json::Value>,
    }
    let Ok(Head { format: Some(f) }) = serde_json::from_str::<Head>(text) else { return Ok(()) };
    match f.as_u64() {
        Some(found) if found > FORMAT_VERSION as u64 => {
            Err(ReadError::Format { path: path.to_path_buf(), found, supported: FORMAT_VERSION })
        }
        _ => Ok(()),
    }
}

/// The largest run.json or lab.json pagelab reads (a real one is a few MiB;
/// what parsing it may take is bounded apart, by [`crate::weight`]).
pub const MAX_JSON_BYTES: u64 = 32 << 20;
/// The largest samples.jsonl or events.jsonl pagelab reads: a day of samples
/// every 100 ms is about 2.5 GiB; 4 GiB leaves room and still ends.
pub const MAX_JSONL_BYTES: u64 = 4 << 30;

/// Why a file of a run directory that is a symbolic link is not read: its
/// target could be any file root can read.
pub const LINKED: &str = "is a symbolic link; pagelab reads only the files a run writes, never through a link";

/// Opens a file of a run or lab directory: never through a link at its name
/// (`O_NOFOLLOW`), never blocking on a FIFO (`O_NONBLOCK`: a FIFO with no
/// writer must not wait), and only a regular file. `Ok(None)` when it does
/// not exist.
pub(crate) fn open_regular(path: &Path) -> Result<Option<File>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |why: String| ReadError::Refused { path: path.to_path_buf(), why };
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused(LINKED.into())),
        Err(source) => return Err(ReadError::Io { path: path.to_path_buf(), source }),
    };
    let meta = f.metadata().map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if !meta.file_type().is_file() {
        return Err(refused("not a regular file; pagelab reads only the files a run writes".into()));
    }
    Ok(Some(f))
}

/// Reads a file of a run or lab directory, never through a link at its name
/// (`O_NOFOLLOW`): only a regular file (a FIFO, a
/// device such as /dev/zero, or a directory is refused without blocking), and at
/// most `limit` bytes (a larger file is refused, not read until memory runs out).
/// `Ok(None)` when it does not exist.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Option<String>, ReadError> {
    use std::io::Read;
    let refused = |why: String| ReadError::Refused { path: path.to_path_buf(), why };
    let Some(f) = open_regular(path)? else { return Ok(None) };
    let meta = f.metadata().map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if meta.len() > limit {
        return Err(refused(format!(
            "{} bytes, more than the {limit} bytes pagelab reads from such a file",
            meta.len()
        )));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // The file may still grow (a live run): read no more than the limit.
    f.take(limit + 1).read_to_end(&mut buf).map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    if buf.len() as u64 > limit {
        return Err(refused(format!("grew past the {limit} bytes pagelab reads from such a file")));
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// A run directory read back.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub dir: PathBuf,
    pub run: RunJson,
    pub samples: Vec<Sample>,
    pub events: Vec<Event>,
    /// Lines that could not be parsed (a torn last line after a kill, usually).
    pub skipped_lines: usize,
    /// Files a run writes that this directory lacks (`samples.jsonl`, `events.jsonl`).
    pub missing: Vec<String>,
    /// Samples in the file when more than [`MAX_SAMPLES`] were thinned to
    /// every k-th on reading (memory bounded by what is drawn, not by the file).
    pub thinned_from: Option<usize>,
}

/// The most samples a run is read with: a longer run is thinned evenly (every
/// 2nd, 4th, … sample) as it is read, so that reading costs memory in
/// proportion to what a chart can draw, whatever the file's size. Rates come
/// from cumulative counters, so a thinned interval's rate is its span's.
pub const MAX_SAMPLES: usize = 4_096;

/// The most events a run is read with (a run writes a few hundred).
pub const MAX_EVENTS: usize = 100_000;

impl RunRecord {
    /// Reads a run directory within a budget of its own ([`Budget::default`]).
    pub fn load(dir: &Path) -> Result<RunRecord, ReadError> {
        RunRecord::load_within(dir, &Budget::default())
    }

    /// Reads a run directory, charging what it holds to `budget` (a lab's
    /// runs share one): run.json is weighed before it is parsed, and the
    /// samples and events kept after they are read.
    pub fn load_within(dir: &Path, budget: &Budget) -> Result<RunRecord, ReadError> {
        let d = OpenDir::open(dir)?;
        let rj = dir.join("run.json");
        let text =
            read_bounded(&d.path().join("run.json"), MAX_JSON_BYTES).map_err(|e| e.at(&rj))?.ok_or_else(|| {
                ReadError::Io { path: rj.clone(), source: std::io::Error::from(std::io::ErrorKind::NotFound) }
            })?;
        budget.charge(&rj, crate::weight::estimate(text.as_bytes()))?;
        let mut rec = RunRecord::from_texts(dir, &text, Some(""), Some(""))?;
        rec.missing.clear();
        match read_jsonl(&d.path().join("samples.jsonl"), MAX_SAMPLES, budget)
            .map_err(|e| e.at(&dir.join("samples.jsonl")))?
        {
            Some((v, skipped, thinned)) => {
                rec.samples = v;
                rec.skipped_lines += skipped;
                rec.thinned_from = thinned;
            }
            None => rec.missing.push("samples.jsonl".into()),
        }
        match read_jsonl(&d.path().join("events.jsonl"), MAX_EVENTS, budget)
            .map_err(|e| e.at(&dir.join("events.jsonl")))?
        {
            Some((v, skipped, _)) => {
                rec.events = v;
                rec.skipped_lines += skipped;
            }
            None => rec.missing.push("events.jsonl".into()),
        }
        if rec.run.status.state == State::Running && !writer_alive(&rec.run) {
            rec.run.status = RunStatus::new(
                State::Interrupted,
                Some(format!("the recording process (pid {}) ended without finishing the run", rec.run.pid)),
            );
        }
        Ok(rec)
    }

    /// A run from the texts of its files (`None`: the file is missing). No file
    /// is touched: this is what the fuzz target `run_record` drives.
    pub fn from_texts(
        dir: &Path,
        run_json: &str,
        samples: Option<&str>,
        events: Option<&str>,
    ) -> Result<RunRecord, ReadError> {
        check_format(&dir.join("run.json"), run_json)?;
        let run: RunJson =
            serde_json::from_str(run_json).map_err(|source| ReadError::Json { path: dir.join("run.json"), source })?;
        let mut skipped = 0;
        let mut missing = Vec::new();
        for (name, text) in [("samples.jsonl", samples), ("events.jsonl", events)] {
            if text.is_none() {
                missing.push(name.to_string());
            }
        }
        let samples = parse_jsonl(samples.unwrap_or(""), &mut skipped);
        let events = parse_jsonl(events.unwrap_or(""), &mut skipped);
        Ok(RunRecord {
            dir: dir.to_path_buf(),
            run,
            samples,
            events,
            skipped_lines: skipped,
            missing,
            thinned_from: None,
        })
    }

    /// The effective status (running runs whose writer is gone read as interrupted).
    pub fn status(&self) -> &RunStatus {
        &self.run.status
    }
}

fn parse_jsonl<T: serde::de::DeserializeOwned>(text: &str, skipped: &mut usize) -> Vec<T> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            Err(_) => *skipped += 1,
        }
    }
    out
}

/// Whether the process that wrote a run is still alive (same pid and start time).
pub fn writer_alive(run: &RunJson) -> bool {
    process_alive(run.pid, run.pid_starttime)
}

/// Whether process `pid` is alive and, when `starttime` is known, is the one
/// that started then (clock ticks since boot): a pid reused by another
/// process is not it.
pub fn process_alive(pid: u32, starttime: Option<u64>) -> bool {
    let Ok(Some(st)) = probe::Probe::default().pid_stat(pid as i32) else {
        return false;
    };
    starttime.is_none_or(|t| t == st.starttime)
}

/// This process's pid and start time, as [`process_alive`] checks them.
pub fn this_process() -> (u32, Option<u64>) {
    let pid = std::process::id();
    (pid, probe::Probe::default().pid_stat(pid as i32).ok().flatten().map(|s| s.starttime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_error_quotes_at_most_a_few_characters_of_the_file() {
        let secret = "s".repeat(300);
        // Plain: the quoted value is cut to 8 characters.
        let b = brief(&format!("/x/run.json: unknown variant `{secret}`, expected one of `eat`"));
        assert!(b.starts_with("/x/run.json: unknown variant `ssssssss… (300 characters)`"), "{b}");
        // Issue 46 item 13: an embedded backtick paired the wrong marks and
        // 300 characters came out as "unquoted" text.
        let b = brief(&format!("unknown variant `ab`{secret}`, expected one of `eat`, `wscap`"));
        assert!(!b.contains(&"s".repeat(20)), "{b}");
        assert!(b.len() < 140, "{} characters: {b}", b.len());
        // The same after an unmatched quote.
        let b = brief(&format!("invalid type: string \"ab{secret}"));
        assert!(!b.contains(&"s".repeat(20)), "{b}");
        // What comes before the first quote (a path) is kept whole; short
        // messages are unchanged.
        let long_path = format!("/{}/run.json: expected `,`", "d".repeat(80));
        assert_eq!(brief(&long_path), long_path);
        let m = "unknown field `x`, expected one of `a`, `b` at line 1 column 5";
        assert_eq!(brief(&m), m);
        // A control character from the file is escaped: the message stays one
        // line and sends no escape sequence to the terminal.
        let b = brief(&"unknown variant `a\nb\r\nc\u{1b}[2J`, expected one of `x`");
        assert_eq!(b, "unknown variant `a\\nb\\r\\nc\\u{1b}[2J`, expected one of `x`");
        // A secret with a quote every 15 characters: each span is short, the
        // whole is cut.
        let chopped: String = (0..40).map(|i| format!("part{i:02}-secret\"")).collect();
        let b = brief(&format!("invalid value: \"{chopped}"));
        assert!(b.chars().count() < 200 && b.contains("more characters)"), "{b}");
        assert!(!b.contains("part20"), "{b}");
    }
}
