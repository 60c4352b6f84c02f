//! The typed protocol between an experiment and its worker (issue 60): a
//! worker kind's commands are one enum ([`commands!`]), each command's
//! reply is its type's ([`Request`]), and an answer is matched to its
//! command by the number the link gave it ([`WorkerCommand::seq`],
//! [`Want::Reply`]), never by a name.

use super::{EventKind, WorkerEvent, WorkerLink};
use serde::{Deserialize, Serialize};

/// A command to a worker as it crosses the control pipe: the link numbers
/// each command it sends, and the worker's answer carries the number back,
/// so that which reply goes with which command is a number's match, not a
/// name's. `C` is the worker kind's command set ([`commands!`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerCommand<C> {
    pub seq: u64,
    pub command: C,
}

/// A worker kind's command set: one enum, a variant per command with its
/// argument as the variant's type (made by [`commands!`], which also makes
/// each argument type a [`Request`] of it). A worker reads only its own
/// set ([`child::WorkerIo::command`]): a command of another kind's set, or
/// one it does not know, is refused as it is read.
pub trait Commands: Serialize + serde::de::DeserializeOwned {
    /// The command's name, for messages.
    fn label(&self) -> &'static str;
}

/// A command an experiment sends its worker, typed, with the reply the
/// worker sends back in its `done` event (issue 60): which reply goes with
/// which command is the type's, not a convention, and an argument cannot be
/// left out (the worker refuses the command rather than reading a default).
/// The parent sends it with [`send`] and reads the reply with
/// [`Sent::reply`]; the worker reads its set with
/// [`child::WorkerIo::command`] and answers with [`child::WorkerIo::reply`].
pub trait Request: Serialize + serde::de::DeserializeOwned {
    /// The command set it belongs to.
    type Set: Commands;
    /// What the worker answers.
    type Reply: Serialize + serde::de::DeserializeOwned;
    /// This command as a member of its set.
    fn command(&self) -> Self::Set;
}

/// Declares a worker kind's command set: an enum whose variants are its
/// commands, each with its argument type and its reply type. Every
/// argument type must be `Clone` and serde's; each becomes a [`Request`]
/// whose `Set` is the enum.
///
/// ```ignore
/// sandbox::commands! {
///     /// eat's worker commands.
///     pub enum Command {
///         /// Map the region.
///         Alloc(Alloc) -> Allocated,
///         Exit(Exit) -> (),
///     }
/// }
/// ```
#[macro_export]
macro_rules! commands {
    ($(#[$m:meta])* $vis:vis enum $set:ident { $($(#[$vm:meta])* $var:ident($ty:ty) -> $reply:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "cmd", content = "arg", rename_all = "snake_case", deny_unknown_fields)]
        $vis enum $set {
            $($(#[$vm])* $var($ty),)*
        }
        impl $crate::worker::Commands for $set {
            fn label(&self) -> &'static str {
                match self {
                    $($set::$var(_) => stringify!($var),)*
                }
            }
        }
        $(impl $crate::worker::Request for $ty {
            type Set = $set;
            type Reply = $reply;
            fn command(&self) -> $set {
                $set::$var(self.clone())
            }
        })*
    };
}

/// A command sent ([`send`]): its number, for the wait for its answer
/// ([`Want::Reply`]), and the type of that answer ([`Sent::reply`]).
#[derive(Debug)]
pub struct Sent<R> {
    pub seq: u64,
    request: std::marker::PhantomData<fn() -> R>,
}

impl<R: Request> Sent<R> {
    /// What to wait for: this command's `done`.
    pub fn want(&self) -> Want {
        Want::Reply(self.seq)
    }
    /// `R`'s reply from its `done` event, or why it is not one (a field
    /// missing or of the wrong type is an error, never a 0).
    pub fn reply(&self, done: WorkerEvent) -> std::result::Result<R::Reply, String> {
        reply::<R>(done.data)
    }
}

/// What a wait on a worker waits for: an event of a kind, or the answer to
/// one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Kind(EventKind),
    /// The `done` that answers the command of this number.
    Reply(u64),
    /// The worker's report of its work ([`child::WorkerIo::report`]): the
    /// `done` that answers no command.
    Report,
}

impl Want {
    /// Whether `ev` is what is waited for.
    pub fn matches(&self, ev: &WorkerEvent) -> bool {
        match *self {
            Want::Kind(k) => ev.kind == k,
            Want::Reply(n) => ev.kind == EventKind::Done && ev.seq == Some(n),
            Want::Report => ev.kind == EventKind::Done && ev.seq.is_none(),
        }
    }
}

impl std::fmt::Display for Want {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Want::Kind(k) => write!(f, "'{k}'"),
            Want::Reply(n) => write!(f, "the answer to command {n}"),
            Want::Report => f.write_str("its report"),
        }
    }
}

/// Sends `r` to `w`: what to wait for, and how to read the answer.
pub fn send<R: Request>(w: &mut dyn WorkerLink, r: &R) -> std::io::Result<Sent<R>> {
    let seq = w.send(serde_json::to_value(r.command()).map_err(std::io::Error::other)?)?;
    Ok(Sent { seq, request: std::marker::PhantomData })
}

/// `R`'s reply from its `done` event's data, or why it is not one (a field
/// missing or of the wrong type is an error that names the reply's type,
/// never a 0).
pub fn reply<R: Request>(data: serde_json::Value) -> std::result::Result<R::Reply, String> {
    serde_json::from_value(data)
        .map_err(|e| format!("the reply to {}: {e}", std::any::type_name::<R>().rsplit("::").next().unwrap_or("?")))
}

/// The control line for command `seq` (the set's value as serialized).
pub(super) fn command_line(seq: u64, command: serde_json::Value) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&WorkerCommand { seq, command })?;
    line.push(b'\n');
    Ok(line)
}
