//! The seam between an experiment and its worker: [`WorkerLink`] (what the
//! experiment's loop needs of a worker) and [`Spawn`] (what starts one), with
//! the real process ([`Processes`]) and, for tests, a worker's own main on a
//! thread of this process ([`Threads`]).

use super::{EventKind, Events, RecvTimeoutError, Want, Worker, WorkerEvent, WorkerFailure, WorkerSpec, child};
use super::{command_line, read_events, wait_on};
use crate::error::{Result, SandboxError};
use std::io::Write;
use std::time::Duration;

/// What an experiment needs of its worker: the seam between the experiment's
/// loop and the process (or, in tests, the thread) that does its work.
pub trait WorkerLink {
    /// The process whose memory the worker uses (ours, for a thread).
    fn pid(&self) -> i32;
    /// Sends a command (a command set's value, as [`super::send`] makes
    /// it): the number its answer will carry.
    fn send(&mut self, command: serde_json::Value) -> std::io::Result<u64>;
    /// The next event, waiting up to `timeout`; `Err` once the worker ended
    /// and every event was read.
    fn recv(&mut self, timeout: Duration) -> std::result::Result<Option<WorkerEvent>, WorkerFailure>;
    /// Waits for what `want` names, passing every event seen to `on_event`;
    /// fails if the worker ends, `timeout` passes or `stop` says so.
    fn wait_for(
        &mut self,
        want: Want,
        timeout: Duration,
        on_event: &mut dyn FnMut(&WorkerEvent),
        stop: &dyn Fn() -> bool,
    ) -> std::result::Result<WorkerEvent, WorkerFailure>;
    /// How the worker ended (once it has).
    fn failure(&mut self) -> WorkerFailure;
    /// Closes its control pipe and waits up to `timeout` for its end.
    fn finish(self: Box<Self>, timeout: Duration) -> std::result::Result<(), WorkerFailure>;
}

/// Starts workers: processes (the real [`Processes`]) or threads ([`Threads`]).
pub trait Spawn {
    fn spawn(&mut self, spec: WorkerSpec<'_>) -> Result<Box<dyn WorkerLink>>;
    /// Whether what it starts can be placed in a cgroup (a thread cannot).
    fn containable(&self) -> bool {
        true
    }
}

/// The real spawner: each worker a process ([`Worker::spawn`]).
pub struct Processes;

impl Spawn for Processes {
    fn spawn(&mut self, spec: WorkerSpec<'_>) -> Result<Box<dyn WorkerLink>> {
        Ok(Box::new(Worker::spawn(spec)?))
    }
}

impl WorkerLink for Worker {
    fn pid(&self) -> i32 {
        self.pid
    }
    fn send(&mut self, command: serde_json::Value) -> std::io::Result<u64> {
        Worker::send(self, command)
    }
    fn recv(&mut self, timeout: Duration) -> std::result::Result<Option<WorkerEvent>, WorkerFailure> {
        Worker::recv(self, timeout)
    }
    fn wait_for(
        &mut self,
        want: Want,
        timeout: Duration,
        on_event: &mut dyn FnMut(&WorkerEvent),
        stop: &dyn Fn() -> bool,
    ) -> std::result::Result<WorkerEvent, WorkerFailure> {
        Worker::wait_for(self, want, timeout, on_event, stop)
    }
    fn failure(&mut self) -> WorkerFailure {
        Worker::failure(self)
    }
    fn finish(self: Box<Self>, timeout: Duration) -> std::result::Result<(), WorkerFailure> {
        Worker::finish(*self, timeout)
    }
}

/// A worker's main: what `pagelab __worker KIND` runs with the arguments
/// after KIND.
pub type WorkerMain = fn(&mut child::WorkerIo, &[String]) -> std::result::Result<(), String>;

/// The in-process spawner for tests: each worker's main runs on a thread of
/// this process, over a socket pair instead of pipes, with no root and no
/// process. A cgroup given is not joined (a thread cannot be; on a fake
/// tree there is no kernel behind it). Its kinds are given as (kind, main).
pub struct Threads(pub Vec<(&'static str, WorkerMain)>);

impl Spawn for Threads {
    fn spawn(&mut self, spec: WorkerSpec<'_>) -> Result<Box<dyn WorkerLink>> {
        let kind = spec.args.get(1).cloned().unwrap_or_default();
        let main = self
            .0
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, m)| *m)
            .ok_or_else(|| SandboxError::Other(format!("no in-process worker of kind '{kind}'")))?;
        // A thread shares this process's environment: one it was to be given
        // (LD_PRELOAD) would silently not apply.
        if let Some((k, _)) = spec.env.first() {
            return Err(SandboxError::Invalid(format!("{}: an in-process worker cannot be given {k}", spec.label)));
        }
        Ok(Box::new(InProcess::start(spec.label, main, spec.args[2..].to_vec())?))
    }
    fn containable(&self) -> bool {
        false
    }
}

/// A worker on a thread of this process ([`Threads`]).
pub struct InProcess {
    label: String,
    control: Option<std::os::unix::net::UnixStream>,
    /// The number the next command gets.
    seq: u64,
    events: Events,
    thread: Option<std::thread::JoinHandle<std::result::Result<(), String>>>,
}

impl InProcess {
    fn start(label: String, main: WorkerMain, args: Vec<String>) -> Result<InProcess> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()
            .map_err(|e| SandboxError::Other(format!("worker {label}: socketpair: {e}")))?;
        let reader = ours.try_clone().map_err(|e| SandboxError::Other(format!("worker {label}: {e}")))?;
        let events = read_events(reader, &format!("worker-{label}-events"))?;
        let thread = std::thread::Builder::new()
            .name(format!("worker-{label}"))
            .spawn(move || {
                let mut io = child::WorkerIo::over_socket(theirs).map_err(|e| e.to_string())?;
                let r = main(&mut io, &args);
                if let Err(e) = &r {
                    io.emit(EventKind::Error, e, serde_json::Value::Null);
                }
                r
            })
            .map_err(|e| SandboxError::Other(format!("starting worker {label}: {e}")))?;
        Ok(InProcess { label, control: Some(ours), seq: 1, events, thread: Some(thread) })
    }
}

impl WorkerLink for InProcess {
    fn pid(&self) -> i32 {
        std::process::id() as i32
    }
    fn recv(&mut self, timeout: Duration) -> std::result::Result<Option<WorkerEvent>, WorkerFailure> {
        match self.events.rx.recv_timeout(timeout) {
            Ok(ev) => Ok(Some(ev)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            // The events ended: how the worker did, as a process's failure says.
            Err(RecvTimeoutError::Disconnected) => Err(self.failure()),
        }
    }
    fn send(&mut self, command: serde_json::Value) -> std::io::Result<u64> {
        let c = self.control.as_mut().ok_or_else(|| std::io::Error::other("control closed"))?;
        let seq = self.seq;
        c.write_all(&command_line(seq, command)?)?;
        c.flush()?;
        self.seq += 1;
        Ok(seq)
    }
    fn wait_for(
        &mut self,
        want: Want,
        timeout: Duration,
        on_event: &mut dyn FnMut(&WorkerEvent),
        stop: &dyn Fn() -> bool,
    ) -> std::result::Result<WorkerEvent, WorkerFailure> {
        let label = self.label.clone();
        let ph = self.events.phase.clone();
        wait_on(
            &label,
            &|| ph.lock().unwrap().clone(),
            &mut || self.recv(Duration::from_millis(50)),
            want,
            timeout,
            on_event,
            stop,
        )
    }
    fn failure(&mut self) -> WorkerFailure {
        // As a process's: its end if it ended within a moment, else "still running".
        let end = self.join_within(Duration::from_secs(2));
        let exited_normally = matches!(end, Some(Ok(Ok(()))));
        let reason = match end {
            Some(Ok(Ok(()))) => "exited normally".to_string(),
            Some(Ok(Err(e))) => format!("failed: {e}"),
            Some(Err(_)) => "panicked".to_string(),
            None if self.thread.is_some() => "is still running".to_string(),
            None => "ended".to_string(),
        };
        WorkerFailure {
            label: self.label.clone(),
            phase: self.events.phase.lock().unwrap().clone(),
            reason,
            oom_killed: false,
            exited_normally,
        }
    }
    fn finish(mut self: Box<Self>, timeout: Duration) -> std::result::Result<(), WorkerFailure> {
        // End of commands: its loop ends as a process's does when stdin closes.
        if let Some(c) = self.control.take() {
            let _ = c.shutdown(std::net::Shutdown::Write);
        }
        // Waits for its end up to `timeout` (a thread cannot be killed: one
        // that does not end is reported still running, and left).
        let t0 = std::time::Instant::now();
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) && t0.elapsed() < timeout {
            std::thread::sleep(Duration::from_millis(5));
        }
        let f = self.failure();
        if f.exited_normally { Ok(()) } else { Err(f) }
    }
}

impl InProcess {
    /// The thread's end, if it ends within `timeout` (joined); None if it
    /// was joined before or is still running.
    fn join_within(&mut self, timeout: Duration) -> Option<std::thread::Result<std::result::Result<(), String>>> {
        let t0 = std::time::Instant::now();
        while !self.thread.as_ref()?.is_finished() {
            if t0.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.thread.take().map(|t| t.join())
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        // Closing the socket ends the worker's command loop (its writes fail
        // from then on); the thread is joined if it ends within a while, so
        // that its memory is freed before the caller goes on, else left.
        if let Some(c) = self.control.take() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        let _ = self.join_within(Duration::from_secs(30));
    }
}
