//! `pagelab record`: the system and a target, recorded while a command runs or for
//! a fixed time, into a run directory.

use crate::cli::RecordArgs;
use crate::{ExitCode, usage};
use anyhow::Context;
pub use experiments::kit::run::{create_run_dir, default_out, resolve_program};
use probe::{CgroupTarget, Probe, Targets};
use record::rundir::{Event, RunJson, RunStatus, State};
use record::sampler::{Sampler, SamplerConfig, Verdict};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Resolves `--cgroup` to a memory cgroup directory.
pub fn resolve_cgroup(p: &mut Probe, path: &Path) -> anyhow::Result<CgroupTarget> {
    let (version, root) = p.memory_controller()?.ok_or_else(|| {
        usage(format!("--cgroup {}: no memory cgroup controller is mounted on this machine", path.display()))
    })?;
    // A plain path inside the hierarchy: `..` would lead out of it lexically
    // (issue 46 item 4: `--cgroup ../../../../DIR` was read as a group).
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir | std::path::Component::CurDir)) {
        return Err(usage(format!(
            "--cgroup {}: give the group's path without . or .. (e.g. system.slice/foo.service, relative to {})",
            path.display(),
            root.display()
        )));
    }
    let dir = if path.is_absolute() && path.starts_with(&root) {
        path.to_path_buf()
    } else {
        root.join(path.strip_prefix("/").unwrap_or(path))
    };
    let marker = match version {
        probe::cgroup::CgroupVersion::V2 => "memory.current",
        probe::cgroup::CgroupVersion::V1 => "memory.usage_in_bytes",
    };
    if !dir.join(marker).exists() {
        return Err(usage(format!(
            "--cgroup {}: no memory cgroup at {} (expected a path relative to {}, e.g. system.slice)",
            path.display(),
            dir.display(),
            root.display()
        )));
    }
    // On a cgroup filesystem, where no file is a FIFO, a device or a link: a
    // look-alike tree elsewhere could hang the sampler on a FIFO or feed it
    // /dev/zero.
    if !sandbox::cgroup::is_cgroup_dir(&dir) {
        return Err(usage(format!(
            "--cgroup {}: {} is not a directory of a cgroup filesystem (give a group under {})",
            path.display(),
            dir.display(),
            root.display()
        )));
    }
    let name = dir.strip_prefix(&root).unwrap_or(&dir).display().to_string();
    Ok(CgroupTarget { version, dir, name })
}

/// The command line's own rules, before anything is created.
fn check(a: &RecordArgs) -> anyhow::Result<()> {
    if a.command.is_empty() && a.duration.is_none() {
        return Err(usage(
            "pagelab record needs a command after -- (e.g. pagelab record -- sleep 5) or --duration (e.g. --duration 10s)",
        ));
    }
    if !a.command.is_empty() && a.duration.is_some() {
        return Err(usage("--duration cannot be combined with a command: the recording lasts as long as the command"));
    }
    if let Some(cmd) = a.command.first()
        && resolve_program(cmd).is_none()
    {
        return Err(usage(format!("cannot run '{cmd}': not found or not executable (looked in PATH)")));
    }
    Ok(())
}

/// Waits for the recorded command; on a stop request, gives it 3 s, then
/// SIGTERM.
fn wait_child(child: &mut std::process::Child, pid: i32) -> anyhow::Result<std::process::ExitStatus> {
    let mut stop_seen: Option<Instant> = None;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(st);
        }
        if record::stop::requested() {
            let t = *stop_seen.get_or_insert_with(Instant::now);
            if t.elapsed() > Duration::from_secs(3) {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                return Ok(child.wait()?);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn run(a: RecordArgs) -> anyhow::Result<()> {
    check(&a)?;
    let mut p = Probe::default();
    if let Some(pid) = a.pid
        && (pid <= 0 || p.pid_stat(pid)?.is_none())
    {
        return Err(usage(format!("--pid {pid}: no such process")));
    }
    let cgroup = a.cgroup.as_deref().map(|c| resolve_cgroup(&mut p, c)).transpose()?;
    // Bound before anything is created, so a busy port changes nothing.
    let server = a.serve.map(crate::serve::Server::start).transpose()?;
    let env = p.environment();
    let zram: Vec<u32> = env.zram.iter().filter(|z| z.disksize_bytes > 0).map(|z| z.id).collect();
    let config = serde_json::json!({
        "interval_s": a.interval.as_secs_f64(),
        "pid": a.pid,
        "cgroup": cgroup.as_ref().map(|c| c.name.clone()),
        "duration_s": a.duration.map(|d| d.as_secs_f64()),
        "command": a.command,
    });
    let rd = create_run_dir(a.out.as_deref(), "--out", RunJson::new("record", env!("CARGO_PKG_VERSION"), env, config))?;
    let targets = Targets { pids: a.pid.into_iter().collect(), cgroup: cgroup.clone(), zram, smaps: false };
    let mut writer = rd.sample_writer()?;
    let publisher = server.as_ref().map(|s| s.publisher());
    if let Some(s) = &server {
        say::errln!("pagelab: serving OpenMetrics on http://{}/metrics", s.addr());
    }
    let sampler =
        Sampler::start(SamplerConfig { interval: a.interval, ..Default::default() }, targets.clone(), move |s| {
            if let Some(p) = &publisher {
                p.publish(s);
            }
            match writer.write(s) {
                Ok(()) => Verdict::Continue,
                Err(e) => Verdict::Abort(format!("writing samples.jsonl failed: {e}")),
            }
        })?;
    if let record::sampler::LockStatus::Failed(why) = sampler.lock_status() {
        say::errln!("pagelab: warning: {why}");
    }

    let mut exit_code = 0;
    let status;
    if !a.command.is_empty() {
        let mut child = std::process::Command::new(&a.command[0])
            .args(&a.command[1..])
            .spawn()
            .with_context(|| format!("starting '{}'", a.command[0]))?;
        let pid = child.id() as i32;
        rd.event(&Event::now("info", "command started", serde_json::json!({"pid": pid, "command": a.command})))?;
        if a.pid.is_none() && cgroup.is_none() {
            sampler.set_targets(Targets { pids: vec![pid], ..targets });
        }
        let st = wait_child(&mut child, pid)?;
        exit_code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
        rd.event(&Event::now("info", "command exited", serde_json::json!({"exit_code": exit_code})))?;
        status = if record::stop::requested() {
            RunStatus::new(State::Interrupted, Some(record::stop::reason().unwrap_or("interrupted by a signal".into())))
        } else {
            RunStatus::new(State::Complete, None)
        };
    } else {
        let d = a.duration.expect("duration");
        let stopped = record::stop::sleep(d);
        status = if stopped {
            RunStatus::new(State::Interrupted, Some(record::stop::reason().unwrap_or("interrupted by a signal".into())))
        } else {
            RunStatus::new(State::Complete, None)
        };
    }
    let stats = sampler.stop();
    let interrupted = status.state == State::Interrupted;
    rd.update(|r| r.sampler = Some(stats.clone()))?;
    rd.finish(status)?;
    let rec = record::RunRecord::load(rd.path())?;
    let iv = record::derive::intervals(&rec.samples);
    let summary = report::summary::summarize(&rec, &iv);
    if a.json {
        crate::print_json(&RecordOutput { dir: rd.path().display().to_string(), summary })?;
    } else {
        say::err!("{}", report::summary::render_text(&summary));
        say::errln!(
            "recorded {} samples to {}; render it with: pagelab report {}",
            stats.samples,
            rd.path().display(),
            rd.path().display()
        );
    }
    if interrupted {
        return Err(crate::interrupted());
    }
    if exit_code != 0 {
        return Err(ExitCode(exit_code).into());
    }
    Ok(())
}

/// What `pagelab record --json` prints (schema/record-output.schema.json is
/// generated from this type).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct RecordOutput {
    /// The run directory written.
    pub dir: String,
    /// The run's headline numbers.
    pub summary: report::summary::Summary,
}
