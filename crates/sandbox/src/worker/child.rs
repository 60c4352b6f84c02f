//! The worker's side of the pipes.

use super::{Commands, EventKind, Request, WorkerCommand, WorkerEvent};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Event and control pipes of a worker process (its stdout and stdin).
pub struct WorkerIo {
    out: Box<dyn Write>,
    /// Buffered here, so that [`WorkerIo::wait_input`] can see a command
    /// already read from the descriptor and not yet taken.
    input: BufReader<Box<dyn Read>>,
    /// The number of the command being answered (the last one read).
    current: Option<u64>,
    /// The descriptor commands come on, where there is one to wait on.
    fd: Option<RawFd>,
    /// The worker's reader of the kernel's files (its own /proc/self among
    /// them): the machine's, unless its starter gave it other roots
    /// ([`WorkerIo::with_probe`]). A worker reads the system through this
    /// and nothing else.
    probe: probe::Probe,
}

impl Default for WorkerIo {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerIo {
    /// The process's own: stdout for events, stdin for commands.
    pub fn new() -> Self {
        WorkerIo { fd: Some(0), ..Self::over(std::io::stdin(), std::io::stdout()) }
    }

    /// Over any pair of streams; its input cannot be waited for
    /// ([`WorkerIo::wait_input`] only sleeps).
    pub fn over(input: impl Read + 'static, out: impl Write + 'static) -> Self {
        WorkerIo {
            out: Box::new(out),
            input: BufReader::new(Box::new(input)),
            current: None,
            fd: None,
            // A worker's one reader of the machine: its edge.
            probe: probe::Probe::default(),
        }
    }

    /// With `p` as the worker's reader of the kernel's files (a fake tree's
    /// in tests).
    pub fn with_probe(mut self, p: probe::Probe) -> Self {
        self.probe = p;
        self
    }

    /// The worker's reader of the kernel's files.
    pub fn probe(&mut self) -> &mut probe::Probe {
        &mut self.probe
    }

    /// Over a socket, both ways (an in-process worker's): its input can be
    /// waited for, as a process's stdin can.
    pub fn over_socket(s: std::os::unix::net::UnixStream) -> std::io::Result<Self> {
        let fd = s.as_raw_fd();
        let out = s.try_clone()?;
        Ok(WorkerIo { fd: Some(fd), ..Self::over(s, out) })
    }

    /// Waits up to `timeout` for input: true when a command, or the end of
    /// the parent's commands, is there to read (then reading does not block).
    /// A worker that works between commands waits with this, so that it
    /// ends when its parent closes its commands, as a thread or a process.
    pub fn wait_input(&mut self, timeout: Duration) -> bool {
        if !self.input.buffer().is_empty() {
            return true;
        }
        let Some(fd) = self.fd else {
            std::thread::sleep(timeout);
            return false;
        };
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        let mut fds = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd; a relative timeout.
        match unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) } {
            n if n > 0 => true,
            0 => false,
            // Interrupted: the caller waits again. Any other error: sleep the
            // timeout out, so that a caller's loop does not spin.
            _ => {
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    std::thread::sleep(timeout);
                }
                false
            }
        }
    }

    /// Whether the parent has closed its commands: reads one line (a
    /// command is consumed and dropped). For a worker that takes none.
    pub fn at_end(&mut self) -> bool {
        let mut line = String::new();
        matches!(self.input.read_line(&mut line), Ok(0) | Err(_))
    }

    /// Sends one event and flushes it.
    pub fn emit(&mut self, kind: EventKind, name: &str, data: serde_json::Value) {
        self.send(WorkerEvent { t_ns: probe::sample::monotonic_ns(), kind, name: name.into(), seq: None, data });
    }

    fn send(&mut self, ev: WorkerEvent) {
        let mut line = serde_json::to_vec(&ev).expect("event");
        line.push(b'\n');
        // If the parent is gone the write fails; PDEATHSIG will end us anyway.
        let _ = self.out.write_all(&line).and_then(|_| self.out.flush());
    }

    /// Answers `R`, the command last read: its `done` event, with that
    /// command's number and the reply as its data.
    pub fn reply<R: Request>(&mut self, r: &R::Reply) {
        let data = serde_json::to_value(r).expect("a reply serializes");
        let ev = WorkerEvent {
            t_ns: probe::sample::monotonic_ns(),
            kind: EventKind::Done,
            name: String::new(),
            // Once: a second reply, or one after a refused line, carries no
            // command's number.
            seq: self.current.take(),
            data,
        };
        self.send(ev);
    }

    /// The worker's report of its work, once (a `done` that answers no
    /// command: [`Want::Report`](super::Want::Report)).
    pub fn report(&mut self, r: &impl serde::Serialize) -> std::result::Result<(), String> {
        let data = serde_json::to_value(r).map_err(|e| format!("the report does not serialize: {e}"))?;
        self.emit(EventKind::Done, "", data);
        Ok(())
    }

    /// Blocks for the next command of set `C`: `None` when the parent
    /// closed the pipe, `Some(Err(why))` for a line that is not one of
    /// `C`'s commands with its argument (the worker then refuses it:
    /// nothing is read as a default).
    pub fn command<C: Commands>(&mut self) -> Option<std::result::Result<C, String>> {
        let mut line = String::new();
        if self.input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        Some(match serde_json::from_str::<WorkerCommand<C>>(line.trim()) {
            Ok(c) => {
                self.current = Some(c.seq);
                Ok(c.command)
            }
            Err(e) => {
                self.current = None;
                let cut: String = line.trim().chars().take(200).collect();
                Err(format!("a command this worker does not take ({e}): {cut}"))
            }
        })
    }
}
