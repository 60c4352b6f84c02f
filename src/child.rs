//! An experiment run as a child of pagelab (`lab`'s steps, `bench
//! controls`' runs): in a process group of its own, so that a Ctrl-C on the
//! terminal reaches the parent only, which passes exactly one SIGINT on (a
//! second signal makes a pagelab process leave at once, without its final
//! status); and told to stop (SIGTERM) if the parent dies first.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Set in a child's environment to the parent's pid: where that is the
/// child's parent when it starts, its signal handler takes the signals the
/// parent sends (the one forwarded stop, the SIGTERM of the parent's death)
/// as a stop, never as the second signal that makes a pagelab process leave
/// at once without restoring (src/main.rs).
pub(crate) const SUPERVISED: &str = "PAGELAB_SUPERVISED";

/// A command for `exe`, set up as above; the caller adds the arguments and
/// where its output goes.
pub(crate) fn command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0).env(SUPERVISED, parent.to_string());
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between
    // fork and exec. If the parent dies, the child is told to stop.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: no signal will come.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd
}

/// Waits for `child`, calling `tick` with the time since the wait began
/// every [`TICK`]; when a stop is requested (a signal to this process,
/// [`record::stop`]), passes one SIGINT on to the child and keeps waiting
/// for it to restore and leave.
pub(crate) fn wait(child: &mut Child, mut tick: impl FnMut(Duration)) -> std::io::Result<ExitStatus> {
    let started = Instant::now();
    let mut forwarded = false;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        if record::stop::requested() && !forwarded {
            // SAFETY: sending a signal to our own child, which has not been
            // reaped (try_wait saw it running), so its pid is still its own.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            forwarded = true;
        }
        tick(started.elapsed());
        std::thread::sleep(TICK);
    }
}

/// How often [`wait`] looks at the child and the stop flag.
pub(crate) const TICK: Duration = Duration::from_millis(200);
