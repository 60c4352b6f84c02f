//! Worker processes: the pagelab binary re-executed in a hidden worker mode.
//!
//! - The parent places the child in its cgroup before the child runs any code of
//!   its own: between fork and exec the child writes `0` (itself) to the group's
//!   `cgroup.procs`, through a descriptor the parent opened.
//! - The child dies with its parent (`PR_SET_PDEATHSIG`, SIGKILL). The signal is
//!   tied to the parent *thread*, so workers must be spawned from a thread that
//!   outlives them (the main thread).
//! - The child's stdout is the event pipe: JSON lines (phase start and end with
//!   monotonic timestamps, results, errors). Its stdin is the control pipe:
//!   numbered commands of its kind's command set (protocol.rs: typed, and an
//!   answer matched to its command by number). Its stderr is inherited.
//! - When a worker dies, [`Worker::failure`] says which phase it was in and why,
//!   e.g. `killed by the OOM killer in cgroup pagelab/eat-1 (limit 64.00 MiB)`.

use crate::cgroup::MemCgroup;
use crate::error::{Result, SandboxError};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod link;
mod protocol;
pub use link::{InProcess, Processes, Spawn, Threads, WorkerLink, WorkerMain};
use protocol::command_line;
pub use protocol::{Commands, Request, Sent, Want, WorkerCommand, reply, send};

/// Makes the process `cmd` starts die with this thread (`PR_SET_PDEATHSIG`,
/// SIGKILL), as workers do: a program run under a limit must not outlive a
/// pagelab that was killed (issue 46 item 8: `rightsize -- PROGRAM` killed
/// with -9 left the program running in its cgroup). Spawn from a thread that
/// outlives the child (the main thread).
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: no signal will come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// The longest event line a worker may write (a result with every sample of a
/// long run fits); a longer one is skipped as it is read, never held whole.
pub const MAX_EVENT_LINE: usize = 64 << 20;

/// Unreadable worker lines quoted in the errors; more are only counted.
const MAX_QUOTED: usize = 20;

/// Reads one line (without its newline) into `buf`, holding at most `max`
/// bytes: `Some(true)` for a line that fit, `Some(false)` for one that was
/// longer (its rest read and dropped, `buf` empty), `None` at the end.
pub fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Option<bool>> {
    buf.clear();
    let (mut any, mut over) = (false, false);
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(any.then_some(!over));
        }
        any = true;
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if !over {
            if buf.len() + take <= max {
                buf.extend_from_slice(&avail[..take]);
            } else {
                over = true;
                buf.clear();
            }
        }
        r.consume(take + usize::from(done));
        if done {
            return Ok(Some(!over));
        }
    }
}

/// The worker lines that were not events: the first few quoted (cut short),
/// the rest counted (issue 46 item 7: every one was kept whole, and a worker
/// that wrote 256 MiB without a newline grew the parent to 817 MB).
#[derive(Default)]
struct Unreadable {
    seen: usize,
}

impl Unreadable {
    /// The error to keep for this line, if it is among the first few.
    fn note(&mut self, line: &[u8], fit: bool) -> Option<String> {
        self.seen += 1;
        if self.seen > MAX_QUOTED {
            return None;
        }
        Some(if fit {
            let text = String::from_utf8_lossy(line);
            let cut: String = text.chars().take(200).collect();
            let more = if text.chars().count() > 200 { "…" } else { "" };
            format!("unreadable worker output: {cut}{more}")
        } else {
            format!("unreadable worker output: a line over {} MiB, skipped", units::whole_mib(MAX_EVENT_LINE as u64))
        })
    }
    /// How many more were not quoted.
    fn summary(&self) -> Option<String> {
        (self.seen > MAX_QUOTED).then(|| format!("and {} more unreadable worker lines", self.seen - MAX_QUOTED))
    }
}

/// What a worker's event is: one list, the wire's names in snake case
/// (issue 60: no event is named by a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Set up, waiting for commands; its data says how it stands.
    Ready,
    /// A phase began or ended; the event's name is the phase's.
    PhaseStart,
    PhaseEnd,
    /// A command's answer ([`Request`]): its `seq` is the command's, its
    /// data the reply. Without a `seq`: the worker's own report of its end
    /// (a worker that takes no commands).
    Done,
    /// A failure: its name says what failed, and the wait for any other
    /// event ends with it.
    Error,
    /// A note to the parent (an unknown command).
    Info,
    /// heap over time's worker asks the parent to squeeze it.
    Squeeze,
    /// thrash's consumer has written its working set.
    Alloc,
    /// An event of a kind this build does not know (a newer worker's).
    #[serde(other)]
    Other,
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        f.write_str(v.as_str().unwrap_or("?"))
    }
}

/// A message from a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerEvent {
    /// CLOCK_MONOTONIC in the worker, nanoseconds (same clock as the parent's).
    pub t_ns: u64,
    pub kind: EventKind,
    #[serde(default)]
    pub name: String,
    /// The command a `done` answers: its [`WorkerCommand::seq`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

/// How to start a worker.
pub struct WorkerSpec<'a> {
    /// The program (normally the pagelab binary itself).
    pub exe: PathBuf,
    pub args: Vec<String>,
    pub cgroup: Option<&'a MemCgroup>,
    pub env: Vec<(String, String)>,
    /// Name used in messages (`eat`, `consumer 3`, ...).
    pub label: String,
}

/// A worker's command line: `__worker KIND ARGS...` (the one place it is
/// spelled; `pagelab __worker` dispatches on KIND).
pub fn argv<S: Into<String>>(kind: &str, args: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut a = vec!["__worker".to_string(), kind.to_string()];
    a.extend(args.into_iter().map(Into::into));
    a
}

/// A worker's command line with a typed start: `__worker KIND --spec JSON`;
/// the worker reads it back with [`spec_of`].
pub fn argv_spec(kind: &str, spec: &impl Serialize) -> Vec<String> {
    argv(kind, ["--spec".to_string(), serde_json::to_string(spec).expect("a worker spec serializes")])
}

/// The typed start a worker was given with [`argv_spec`]: Err(why) when it is
/// missing or does not parse (an unknown or missing field included, where the
/// type denies them).
pub fn spec_of<T: serde::de::DeserializeOwned>(kind: &str, args: &[String]) -> std::result::Result<T, String> {
    let text = args
        .iter()
        .position(|a| a == "--spec")
        .and_then(|i| args.get(i + 1))
        .ok_or_else(|| format!("the {kind} worker needs --spec JSON"))?;
    serde_json::from_str(text).map_err(|e| format!("the {kind} worker: bad --spec: {e}"))
}

#[derive(Debug, Clone)]
struct CgroupInfo {
    name: String,
    limit: Option<u64>,
    dir: PathBuf,
    version: probe::cgroup::CgroupVersion,
    oom_before: Option<u64>,
}

/// Why a worker did not finish normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerFailure {
    pub label: String,
    /// The phase it was in (the last phase_start without a phase_end).
    pub phase: Option<String>,
    pub reason: String,
    /// True when the kernel's OOM killer ended it.
    pub oom_killed: bool,
    /// True when it ended on its own with status 0 (or, in process, returned
    /// Ok): no failure at all.
    pub exited_normally: bool,
}

impl std::fmt::Display for WorkerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker {}", self.label)?;
        if let Some(p) = &self.phase {
            write!(f, " (phase {p})")?;
        }
        write!(f, " {}", self.reason)
    }
}

/// A running worker.
pub struct Worker {
    pub pid: i32,
    pub label: String,
    child: Child,
    control: Option<ChildStdin>,
    /// The number the next command gets.
    seq: u64,
    events: Receiver<WorkerEvent>,
    phase: Arc<Mutex<Option<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
    cgroup: Option<CgroupInfo>,
}

/// A worker's event stream as the parent sees it: the events, its current
/// phase and the errors it reported (or lines that were not events).
struct Events {
    rx: Receiver<WorkerEvent>,
    phase: Arc<Mutex<Option<String>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

/// Reads JSON-line events from `r` on a thread of its own, bounded per line.
fn read_events(r: impl std::io::Read + Send + 'static, thread: &str) -> Result<Events> {
    let (tx, rx) = std::sync::mpsc::channel();
    let phase = Arc::new(Mutex::new(None));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (phase2, errors2) = (phase.clone(), errors.clone());
    std::thread::Builder::new()
        .name(thread.into())
        .spawn(move || {
            let mut r = BufReader::new(r);
            let mut buf = Vec::new();
            let mut bad = Unreadable::default();
            while let Ok(Some(fit)) = read_line_bounded(&mut r, &mut buf, MAX_EVENT_LINE) {
                let ev = if fit { serde_json::from_slice::<WorkerEvent>(&buf).ok() } else { None };
                let Some(ev) = ev else {
                    if let Some(msg) = bad.note(&buf, fit) {
                        errors2.lock().unwrap().push(msg);
                    }
                    continue;
                };
                match ev.kind {
                    EventKind::PhaseStart => *phase2.lock().unwrap() = Some(ev.name.clone()),
                    EventKind::PhaseEnd => *phase2.lock().unwrap() = None,
                    EventKind::Error => errors2.lock().unwrap().push(ev.name.clone()),
                    _ => {}
                }
                if tx.send(ev).is_err() {
                    break;
                }
            }
            if let Some(msg) = bad.summary() {
                errors2.lock().unwrap().push(msg);
            }
        })
        .map_err(|e| SandboxError::Other(format!("starting the event reader: {e}")))?;
    Ok(Events { rx, phase, errors })
}

/// Waits on `next` (an event, or none within a moment) for an event of
/// `kind` (and `name`), passing each to `on_event`: the one loop of every link.
#[allow(clippy::too_many_arguments)]
fn wait_on(
    label: &str,
    phase: &dyn Fn() -> Option<String>,
    next: &mut dyn FnMut() -> std::result::Result<Option<WorkerEvent>, WorkerFailure>,
    want: Want,
    timeout: Duration,
    on_event: &mut dyn FnMut(&WorkerEvent),
    stop: &dyn Fn() -> bool,
) -> std::result::Result<WorkerEvent, WorkerFailure> {
    let t0 = Instant::now();
    let fail = |reason: String| WorkerFailure {
        label: label.into(),
        phase: phase(),
        reason,
        oom_killed: false,
        exited_normally: false,
    };
    loop {
        if stop() {
            return Err(fail("stopped: the run was interrupted".into()));
        }
        if t0.elapsed() > timeout {
            return Err(fail(format!("did not send {want} within {:.0} s", timeout.as_secs_f64())));
        }
        if let Some(ev) = next()? {
            on_event(&ev);
            if ev.kind == EventKind::Error {
                return Err(fail(format!("failed: {}", ev.name)));
            }
            if want.matches(&ev) {
                return Ok(ev);
            }
        }
    }
}

impl Worker {
    pub fn spawn(spec: WorkerSpec<'_>) -> Result<Worker> {
        let mut cmd = Command::new(&spec.exe);
        cmd.args(&spec.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        // The group's cgroup.procs, then those of the groups of other v1
        // hierarchies it has (blkio), each joined before exec.
        let procs = match spec.cgroup {
            Some(cg) => std::iter::once(&cg.dir)
                .chain(&cg.also)
                .map(|d| {
                    let p = d.join("cgroup.procs");
                    std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_CLOEXEC)
                        .open(&p)
                        .map_err(|e| SandboxError::io("opening", p, e))
                })
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        let procs_fds: Vec<i32> = procs.iter().map(|f| f.as_raw_fd()).collect();
        // Dies with this thread; then (closures run in the order they were
        // added) joins its group, before exec.
        die_with_parent(&mut cmd);
        // SAFETY: the closure only makes an async-signal-safe call (write)
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &procs_fds {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let cgroup = spec.cgroup.map(|cg| CgroupInfo {
            name: cg.name.clone(),
            limit: cg.limit().filter(|l| *l != probe::cgroup::UNLIMITED),
            dir: cg.dir.clone(),
            version: cg.version,
            oom_before: cg.oom_kills(),
        });
        let mut child = cmd.spawn().map_err(|e| {
            SandboxError::Other(format!("starting worker {} ({}): {e}", spec.label, spec.exe.display()))
        })?;
        drop(procs);
        let pid = child.id() as i32;
        let stdout = child.stdout.take().expect("piped stdout");
        let control = child.stdin.take();
        let Events { rx, phase, errors } = read_events(stdout, &format!("worker-{pid}-events"))?;
        Ok(Worker { pid, label: spec.label, child, control, seq: 1, events: rx, phase, errors, cgroup })
    }

    /// Sends a command (a set's value, serialized) on the control pipe: its number.
    pub fn send(&mut self, command: serde_json::Value) -> std::io::Result<u64> {
        let c = self.control.as_mut().ok_or_else(|| std::io::Error::other("control pipe closed"))?;
        let seq = self.seq;
        c.write_all(&command_line(seq, command)?)?;
        c.flush()?;
        self.seq += 1;
        Ok(seq)
    }

    /// The next event, waiting up to `timeout`. `Err` once the worker has exited
    /// and every event was read.
    pub fn recv(&mut self, timeout: Duration) -> std::result::Result<Option<WorkerEvent>, WorkerFailure> {
        match self.events.recv_timeout(timeout) {
            Ok(ev) => Ok(Some(ev)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(self.failure()),
        }
    }

    /// Waits for what `want` names, passing every event seen to `on_event`.
    /// Fails if the worker dies or `timeout` passes, or when a stop was
    /// requested and `stop` returns true.
    pub fn wait_for(
        &mut self,
        want: Want,
        timeout: Duration,
        mut on_event: impl FnMut(&WorkerEvent),
        stop: impl Fn() -> bool,
    ) -> std::result::Result<WorkerEvent, WorkerFailure> {
        let label = self.label.clone();
        let ph = self.phase.clone();
        wait_on(
            &label,
            &|| ph.lock().unwrap().clone(),
            &mut || self.recv(Duration::from_millis(50)),
            want,
            timeout,
            &mut on_event,
            &stop,
        )
    }

    /// The phase the worker is in.
    pub fn phase(&self) -> Option<String> {
        self.phase.lock().unwrap().clone()
    }

    /// Waits for the process to exit (up to `timeout`), then explains how it ended.
    /// `Ok` for a clean exit with status 0.
    pub fn finish(mut self, timeout: Duration) -> std::result::Result<(), WorkerFailure> {
        drop(self.control.take());
        let t0 = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if t0.elapsed() < timeout => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        let f = self.failure();
        if f.exited_normally { Ok(()) } else { Err(f) }
    }

    /// Kills the worker (SIGKILL) and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// How the worker ended (reaping it if needed). Call once it has exited.
    pub fn failure(&mut self) -> WorkerFailure {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Some(s),
            _ => {
                // The event pipe closed: the process is exiting; give it a moment.
                let t0 = Instant::now();
                loop {
                    match self.child.try_wait() {
                        Ok(Some(s)) => break Some(s),
                        Ok(None) if t0.elapsed() < Duration::from_secs(2) => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        _ => break None,
                    }
                }
            }
        };
        let phase = self.phase();
        let errors = self.errors.lock().unwrap().clone();
        let mut oom_killed = false;
        let exited_normally = status.is_some_and(|s| s.success());
        let reason = match status {
            None => "is still running".to_string(),
            Some(s) if s.success() => "exited normally".to_string(),
            Some(s) => match s.signal() {
                Some(sig) => {
                    let oom = self.cgroup.as_ref().is_some_and(|c| {
                        // Both counts read, or no claim of an OOM kill.
                        matches!((probe::cgroup::read_oom_kills(&c.dir, c.version), c.oom_before), (Some(n), Some(b)) if n > b)
                    });
                    if sig == libc::SIGKILL && oom {
                        oom_killed = true;
                        let c = self.cgroup.as_ref().expect("cgroup");
                        match c.limit {
                            Some(l) => {
                                format!("was killed by the OOM killer in cgroup {} (limit {})", c.name, units::bytes(l))
                            }
                            None => format!("was killed by the OOM killer in cgroup {}", c.name),
                        }
                    } else {
                        format!("was killed by signal {sig} ({})", signal_name(sig))
                    }
                }
                None => match errors.last() {
                    Some(e) => format!("failed: {e}"),
                    None => format!("exited with status {}", s.code().unwrap_or(-1)),
                },
            },
        };
        WorkerFailure { label: self.label.clone(), phase, reason, oom_killed, exited_normally }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A terminating signal's name ("SIGKILL"), or "signal" for one not named
/// here: pagelab's one list (worker failures, the lab's children).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// The worker's side of the pipes.
pub mod child;

#[cfg(test)]
mod tests;
