//! pagelab: the binary is glue. It parses the command line, installs the signal
//! and panic handlers, restores what crashed runs left behind, and dispatches to
//! the crates that do the work.

mod bench;
mod child;
mod cli;
mod compare_cmd;
mod controls;
mod doctor;
mod drill;
mod lab;
#[cfg(test)]
mod lab_sim;
mod monitor;
mod record_cmd;
mod report_cmd;
mod serve;
#[cfg(test)]
mod walk;
mod worker;

pub use experiments::kit::run as experiment;
pub use experiments::kit::{JSON_FORMAT, restore_stale_runs, units};

/// Bad input: a one-line message naming the flag or file (exit code 2).
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    experiments::kit::usage(msg).into()
}

/// A stop by a signal (exit code 130).
pub fn interrupted() -> anyhow::Error {
    experiments::Error::Interrupted.into()
}

/// Prints a `--json` document ([`experiments::kit::print_json`]).
pub fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    Ok(experiments::kit::print_json(v)?)
}

/// Writes an output file whole, the safe way ([`experiments::kit::write_output`]).
pub fn write_output(path: &std::path::Path, bytes: &[u8], flag: Option<&str>) -> anyhow::Result<()> {
    Ok(experiments::kit::write_output(path, bytes, flag)?)
}

/// Whether `e` is bad input or a machine refused (exit code 2): the
/// experiments' usage error or a sandbox refusal, under any context.
pub fn is_usage(e: &anyhow::Error) -> bool {
    experiment_error(e).is_some_and(|x| x.is_usage())
        || e.chain().any(|c| c.downcast_ref::<sandbox::SandboxError>().is_some_and(|s| s.is_usage()))
}

/// The experiments' own error in `e`, under any context the binary added.
pub fn experiment_error(e: &anyhow::Error) -> Option<&experiments::Error> {
    e.chain().find_map(|c| c.downcast_ref::<experiments::Error>())
}

use cli::{Cli, Cmd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// A command's own exit code (`record` passes on the command's).
#[derive(Debug)]
pub struct ExitCode(pub i32);
impl std::fmt::Display for ExitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}", self.0)
    }
}
impl std::error::Error for ExitCode {}

static SIGNALS: AtomicU32 = AtomicU32::new(0);
/// The pid of the pagelab that started this process as its child (a lab's
/// step, a `bench controls` run: [`child::SUPERVISED`]), 0 otherwise.
static PARENT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let parent = PARENT.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler;
    // si_code and si_pid are only read. kill(2) and the parent-death signal
    // both come as SI_USER with the sender's pid (a sigqueue can claim any
    // pid, and is not taken for the parent's).
    let from_parent =
        parent > 0 && !info.is_null() && unsafe { (*info).si_code == libc::SI_USER && (*info).si_pid() == parent };
    if from_parent || sig == libc::SIGHUP {
        // The pagelab above passes a stop on once, and tells this process
        // SIGTERM if it dies: neither is a user's second signal. A service
        // manager's stop reaches this process and its parent both (systemd
        // signals the whole group), and the parent's forward must not make
        // this one leave without restoring. Nor is a hang-up anyone's
        // insistence: a terminal that closed, or a service manager that
        // follows its SIGTERM with a SIGHUP (systemd's SendSIGHUP=yes). Each
        // requests the stop and never forces the run out.
        record::stop::request_from_signal();
    } else if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
        record::stop::request_from_signal();
    } else {
        // Second signal: leave at once. The journal restores at the next start.
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

fn install_signal_handlers() {
    if let Some(v) = std::env::var_os(child::SUPERVISED) {
        // SAFETY: getppid has no preconditions.
        let ppid = unsafe { libc::getppid() };
        // Only the pagelab that started this process, and only while it is
        // still its parent: a variable set by hand, or a parent that died
        // before this line, leaves the count of signals as it is.
        if v.to_str().and_then(|s| s.parse::<i32>().ok()) == Some(ppid) && ppid > 1 {
            PARENT.store(ppid, Ordering::SeqCst);
        }
        // SAFETY: at start-up, before any thread of pagelab's own: nothing
        // reads the environment meanwhile. Not passed on to its workers.
        unsafe { std::env::remove_var(child::SUPERVISED) };
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // A hang-up that was ignored when pagelab started (`nohup pagelab lab
        // &`) stays ignored: the run was asked to outlive its terminal.
        if sig == libc::SIGHUP && hangup_ignored() {
            continue;
        }
        // SAFETY: installing a handler that only touches atomics, reads its
        // siginfo and calls _exit.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether SIGHUP's disposition, as this process inherited it, is to ignore it.
fn hangup_ignored() -> bool {
    // SAFETY: a C struct of integers and a mask, for which all-zero bytes are valid.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: reading the current disposition (a null new action changes nothing).
    let ok = unsafe { libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) } == 0;
    ok && old.sa_sigaction == libc::SIG_IGN
}

fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        for line in sandbox::sandbox::restore_own_journals() {
            say::errln!("pagelab: restored after panic: {line}");
        }
        default(info);
    }));
}

/// `pagelab __panic`: a panic in a named frame of pagelab's own, whose
/// backtrace shows whether the build kept line tables.
#[inline(never)]
fn deliberate_panic() -> ! {
    panic!("pagelab __panic: a deliberate panic, to show the backtrace")
}

/// clap's errors span several lines; the convention here is one line.
fn one_line_clap_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        if !l.is_empty() {
            parts.push(l.to_string());
        }
    }
    let mut s = parts.join(" ");
    if !s.starts_with("error:") {
        s = format!("error: {s}");
    }
    s
}

/// What the command line asked for: an experiment (from [`experiments::ALL`])
/// with its arguments, or one of the binary's own commands.
enum Invocation {
    Experiment(&'static experiments::Experiment, clap::ArgMatches),
    Own(Cli),
}

fn parse() -> Result<Invocation, clap::Error> {
    use clap::FromArgMatches;
    let m = cli::command().try_get_matches()?;
    if let Some((name, sub)) = m.subcommand()
        && let Some(e) = experiments::find(name)
    {
        return Ok(Invocation::Experiment(e, sub.clone()));
    }
    Ok(Invocation::Own(Cli::from_arg_matches(&m)?))
}

fn main() {
    let cli = match parse() {
        Ok(Invocation::Own(c)) => c,
        Ok(Invocation::Experiment(e, m)) => {
            install_signal_handlers();
            install_panic_hook();
            restore_stale_runs();
            finish((e.run)(&m).map_err(anyhow::Error::from))
        }
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(e.kind(), DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand) {
                use std::io::IsTerminal;
                // Through say, so that `--help > /dev/full` is told, not
                // dropped; styled only for a terminal, as clap's own print.
                let text = e.render();
                if e.use_stderr() {
                    let styled = std::io::stderr().is_terminal();
                    say::err!("{}", if styled { text.ansi().to_string() } else { text.to_string() });
                } else {
                    let styled = std::io::stdout().is_terminal();
                    say::out!("{}", if styled { text.ansi().to_string() } else { text.to_string() });
                }
                exit(if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 });
            }
            say::errln!("pagelab: {} (see pagelab --help)", one_line_clap_error(&e).trim_start_matches("error: "));
            std::process::exit(2);
        }
    };
    if let Cmd::HotCold { hot, cold, passes } = cli.command {
        // A plain program (rightsize's known target): no handlers, no journal.
        let h = experiments::rightsize::work::hotcold::HotCold { hot, cold, passes };
        // The program's one reader of its own /proc/self: its edge.
        if let Err(e) = experiments::rightsize::work::hotcold::run(&h, &mut probe::Probe::default()) {
            say::errln!("pagelab __hotcold: {e}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    if let Cmd::Worker { kind, args } = &cli.command {
        // Workers are controlled by their parent; the terminal's Ctrl-C is the parent's.
        // SAFETY: setting a signal disposition.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        std::process::exit(worker::main(kind, args));
    }
    // Commands that only read files keep the default dispositions: a signal ends
    // them at once (they have nothing to restore, and no stop to honour).
    if !matches!(cli.command, Cmd::Report(_) | Cmd::Compare(_) | Cmd::Completions { .. } | Cmd::Man { .. }) {
        install_signal_handlers();
    }
    install_panic_hook();
    if matches!(cli.command, Cmd::Panic) {
        deliberate_panic();
    }
    if !matches!(cli.command, Cmd::Restore(_) | Cmd::Completions { .. } | Cmd::Man { .. }) {
        restore_stale_runs();
    }
    let r = match cli.command {
        Cmd::Doctor(a) => doctor::run(&a),
        Cmd::Record(a) => record_cmd::run(a),
        Cmd::HotCold { .. } | Cmd::Panic => unreachable!(),
        Cmd::Monitor(a) => monitor::run(&a),
        Cmd::MonitorDemo { png, process } => monitor::demo_png(&png, process),
        Cmd::Report(a) => report_cmd::run(&a),
        Cmd::Compare(a) => compare_cmd::run(&a),
        Cmd::Lab(a) => lab::run(&a),
        Cmd::Restore(a) => restore(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Completions { shell } => {
            // Into a buffer: clap_complete panics when its writer fails.
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cli::command(), "pagelab", &mut buf);
            say::out!("{}", String::from_utf8_lossy(&buf));
            Ok(())
        }
        Cmd::Man { out } => man(out),
        Cmd::SandboxDrill(a) => drill::run(&a),
        Cmd::Worker { .. } => unreachable!(),
    };
    finish(r)
}

/// Flushes, then exits with the code the result calls for. A write to
/// stdout that failed is told here, not by a panic where it happened
/// ([`say`]): a reader that left (`| head`) changes nothing, and any other
/// failure (a full disk) makes a command that would have exited 0 exit 1.
fn finish(r: anyhow::Result<()>) -> ! {
    exit(exit_code(r))
}

/// Exits with `code`, after telling a failed write to stdout ([`finish`]).
fn exit(code: i32) -> ! {
    let code = match say::stdout_failure() {
        None | Some(say::Failure::ReaderLeft) => code,
        Some(say::Failure::Incomplete(why)) => {
            say::errln!("pagelab: writing to standard output failed: {why}; what it printed is incomplete");
            if code == 0 { 1 } else { code }
        }
    };
    std::process::exit(code)
}

/// The exit code for a command's result, after telling its error.
fn exit_code(r: anyhow::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            if let Some(ExitCode(c)) = e.downcast_ref::<ExitCode>() {
                *c
            } else if experiment_error(&e).is_some_and(|x| x.exit_code() == 130)
                && let Some(why) = record::stop::reason()
            {
                // Stopped by a guard of its own (the host guard, a sample
                // file that could not be written), not by a user: a fault
                // with its cause, exit 1 (issue 59).
                say::errln!("pagelab: stopped: {why}");
                1
            } else if experiment_error(&e).is_some_and(|x| x.exit_code() == 130) {
                say::errln!("pagelab: interrupted");
                130
            } else if let Some(x) = experiment_error(&e).filter(|x| x.exit_code() == 3) {
                // A verdict, not a failure: rightsize --check found a limit not verified.
                say::errln!("pagelab: {}", record::rundir::one_line(x.to_string().replace('\n', " ")));
                3
            } else {
                let usage = is_usage(&e);
                say::errln!("pagelab: {}", refusal(&e));
                if usage { 2 } else { 1 }
            }
        }
    }
}

/// What pagelab prints of an error: its chain, each cause once (some
/// errors already print theirs), on one line whatever a file's value held
/// (a newline, a carriage return, an escape sequence): the last place a
/// value from a file passes before the terminal.
fn refusal(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for c in e.chain() {
        let t = c.to_string();
        if !msg.contains(&t) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&t);
        }
    }
    record::rundir::one_line(msg.replace('\n', " "))
}

#[cfg(test)]
#[test]
fn a_refusal_is_one_line_whatever_a_file_held() {
    let e = anyhow::anyhow!("lab.json has mode 'a\rb\u{1b}[2J': expected quick, smoke or full").context("--resume d");
    let r = refusal(&e);
    assert_eq!(r, "--resume d: lab.json has mode 'a\\rb\\u{1b}[2J': expected quick, smoke or full");
    assert!(!r.chars().any(char::is_control), "{r:?}");
    assert_eq!(refusal(&anyhow::anyhow!("two\nlines")), "two lines");
}

fn restore(a: &cli::RestoreArgs) -> anyhow::Result<()> {
    let dir = sandbox::journal::dir();
    if dir.exists()
        && let Err(e) = std::fs::read_dir(&dir)
    {
        // Not "nothing to restore": we cannot know.
        return Err(usage(format!(
            "cannot read the journal directory {}: {e}; run pagelab restore as root",
            dir.display()
        )));
    }
    let rep = sandbox::journal::restore_stale(&dir, a.dry_run);
    if a.json {
        print_json(&rep)?;
    } else {
        if rep.restored.is_empty() && rep.actions.is_empty() {
            say::outln!("nothing to restore: no journals of dead pagelab runs in {}", dir.display());
        }
        for l in &rep.actions {
            say::outln!("{l}");
        }
        for l in &rep.live {
            say::outln!("left alone (its pagelab process is still running): {}", l.display());
        }
        for e in &rep.errors {
            say::errln!("pagelab: {e}");
        }
    }
    if !rep.errors.is_empty() {
        anyhow::bail!("{} change(s) could not be undone", rep.errors.len());
    }
    Ok(())
}

fn man(out: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let cmd = cli::command();
    match out {
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            say::out!("{}", String::from_utf8_lossy(&buf));
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| usage(format!("--out {}: {e}", dir.display())))?;
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd.clone()).render(&mut buf)?;
            write_output(&dir.join("pagelab.1"), &buf, Some("--out"))?;
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let name = format!("pagelab-{}", sub.get_name());
                let mut buf = Vec::new();
                clap_mangen::Man::new(sub.clone().name(name.clone())).render(&mut buf)?;
                write_output(&dir.join(format!("{name}.1")), &buf, Some("--out"))?;
            }
            say::outln!("wrote man pages to {}", dir.display());
        }
    }
    Ok(())
}
