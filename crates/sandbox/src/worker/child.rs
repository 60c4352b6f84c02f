//! The worker's side of the pipes.

use super::{Commands, EventKind, Request, WorkerCommand, WorkerEvent};
use std::io::{BufRead, Write};

/// Event and control pipes of a worker process (its stdout and stdin).
pub struct WorkerIo {
    out: Box<dyn Write>,
    input: Box<dyn BufRead>,
    /// The number of the command being answered (the last one read).
    current: Option<u64>,
}

impl Default for WorkerIo {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerIo {
    /// The process's own: stdout for events, stdin for commands.
    pub fn new() -> Self {
        Self::over(std::io::stdin().lock(), std::io::stdout())
    }

    /// Over any pair of streams (an in-process worker's socket).
    pub fn over(input: impl BufRead + 'static, out: impl Write + 'static) -> Self {
        WorkerIo { out: Box::new(out), input: Box::new(input), current: None }
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
            seq: self.current,
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
                let cut: String = line.trim().chars().take(200).collect();
                Err(format!("a command this worker does not take ({e}): {cut}"))
            }
        })
    }
}
