//! What every experiment's command shares: the arguments every run takes
//! ([`cli`]), the lab's planning helpers ([`plan`]), a run's lifecycle from lock
//! to report ([`run`]), sizes and durations on the command line ([`units`]),
//! and the errors and JSON output conventions of the whole binary.

pub mod cli;
pub mod error;
pub mod lab_args;
pub mod names;
pub mod pages;
pub mod plan;
pub mod process;
pub mod run;
pub mod schema;
pub mod store;
pub mod units;

pub use error::{Error, Result};

/// The version of every `--json` output's layout (schema/*.schema.json). Raise it
/// when a field is renamed, removed or changes meaning; adding a field does not.
pub const JSON_FORMAT: u32 = 1;

/// Prints a `--json` document, with `"format": JSON_FORMAT` added.
pub fn print_json(v: &impl serde::Serialize) -> Result<()> {
    let mut v = serde_json::to_value(v)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("format".into(), JSON_FORMAT.into());
    }
    say::outln!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

/// Bad input: the one-line message names the flag or file (exit code 2).
pub fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// Writes an output file whole, the safe way ([`record::safe::write`]). A path
/// pagelab refuses (a link, a device, a FIFO) is bad input (exit 2, one line
/// naming it); so is any failure to write a path the user named with `flag`.
pub fn write_output(path: &std::path::Path, bytes: &[u8], flag: Option<&str>) -> Result<()> {
    record::safe::write(path, bytes).map_err(|e| match flag {
        Some(f) if record::safe::is_refused(&e) => usage(format!("{f} {e}")),
        Some(f) => usage(format!("{f} {}: {e}", path.display())),
        None if record::safe::is_refused(&e) => usage(e.to_string()),
        None => Error::File { what: format!("writing {}", path.display()), cause: e },
    })
}

/// Undoes what runs that died left behind, and says so.
pub fn restore_stale_runs() {
    let dir = sandbox::journal::dir();
    if !dir.exists() {
        return;
    }
    let rep = sandbox::journal::restore_stale(&dir, false);
    for a in &rep.actions {
        say::errln!("pagelab: restored after an earlier run that died: {a}");
    }
    for e in &rep.errors {
        say::errln!("pagelab: {e}; run `pagelab restore` as root");
    }
}

/// An experiment's subcommand: its `Args` under its name and help line.
pub fn command<A: clap::Args>(name: &'static str, about: &'static str) -> clap::Command {
    // After the arguments: the structs they flatten bring doc comments of
    // their own, which would otherwise become the help line.
    A::augment_args(clap::Command::new(name)).about(about).long_about(None::<&str>)
}

/// Runs an experiment's command from its parsed subcommand.
pub fn dispatch<A: clap::FromArgMatches>(m: &clap::ArgMatches, run: fn(&A) -> crate::Result<()>) -> crate::Result<()> {
    let a = A::from_arg_matches(m).map_err(|e| usage(e.to_string()))?;
    run(&a)
}

/// Says why a unit test did not run, and records it where scripts/test counts
/// it as skipped, not passed: target/tmp/skipped-tests.txt, as
/// tests/common/skip.rs does for the integration tests. A unit test has no
/// CARGO_TARGET_TMPDIR, so the file is found from the test binary
/// (target/<profile>/deps/<crate>-<hash>).
#[cfg(test)]
pub(crate) fn skip_test(why: &str) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let exe = std::env::current_exe().unwrap_or_default();
    let bin = exe.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let bin = bin.rsplit_once('-').map_or(bin.clone(), |(a, _)| a.to_string());
    say::outln!("SKIP {bin}::{test}: {why}");
    if let Some(target) = exe.ancestors().nth(3) {
        let path = target.join("tmp/skipped-tests.txt");
        let line = format!("{bin}::{test}: {why}\n");
        let open = std::fs::OpenOptions::new().create(true).append(true).open(path);
        let _ = open.and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}
