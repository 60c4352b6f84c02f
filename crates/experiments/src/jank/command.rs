//! jank's hog when it is a user's own command (`pagelab jank … -- CMD`):
//! the command runs in the memory cgroup in place of thrash's consumers,
//! once per arm and repeat, under the arm's store and settings, with the
//! frame probes beside it (one inside the group, counted in its limit, one
//! outside). Thrash's protocol does not apply to it, so its runs judge no
//! finding; every figure of the arms' table does.

use crate::jank::results::CommandRun;
use crate::jank::work::{Arm, JankConfig, Store};
use crate::thrash::results::ThrashResult;
use crate::thrash::work::{Extras, Outcome};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use workloads::backing;
use workloads::observe::ExperimentError;

/// The hog: a user's command and the room it is given.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandHog {
    pub argv: Vec<String>,
    /// The group's limit (`--limit`): the command and the frame probe inside.
    pub limit: u64,
    /// The store's room for what the command pages out (`--store-size`);
    /// the CPU-only control's limit is `limit + store`, with no swap.
    pub store: u64,
    /// A command still running this long after its start is killed
    /// (`timed_out`).
    pub timeout: Duration,
    /// Frames watched after the command ended (`--watch`).
    pub watch: Duration,
}

/// Frames recorded before the command starts: the baseline.
pub const BEFORE: Duration = Duration::from_secs(2);

/// Why a command's run judges no finding.
pub const USER_HOG: &str = "the hog is a user's command, not thrash's consumers: the study's protocol does not apply";

impl CommandHog {
    /// The group's limit in an arm: the CPU-only control holds the command
    /// and everything the store could have taken.
    pub fn limit_of(&self, cpu_only: bool) -> u64 {
        if cpu_only { self.limit.saturating_add(self.store) } else { self.limit }
    }
}

/// One run of the command on `arm`: the store and settings set up (and
/// undone), the group made at the arm's limit, the frame probes started and
/// ready, a baseline, the command until it ends (or its timeout, or Ctrl-C),
/// whatever it left in the group killed, and the watch.
pub fn run_one<O: workloads::observe::Observer>(
    cfg: &JankConfig,
    hog: &CommandHog,
    (arm, rep): (&Arm, u32),
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<(Outcome, CommandRun), ExperimentError> {
    let mut sb = sandbox::Sandbox::new("jank");
    let mut p = sb.probe();
    let (kind, compressor) = arm.backing();
    let sysctls = arm.sysctls();
    let companions = cfg.companions();
    let x = Extras { compressor, store_extra: 0, sysctls: &sysctls, min_ttl_ms: arm.min_ttl_ms, companions: &companions };
    let seen = crate::thrash::work::settings(&mut sb, &x)?;
    let back = backing::setup(&mut sb, kind, compressor, hog.store, &cfg.hog.swapfile_dir)?;
    for n in &back.notes {
        obs.note(n);
    }
    let cpu_only = cfg.cpu_only || arm.store == Store::CpuOnly;
    let limit = hog.limit_of(cpu_only);
    let v1 = matches!(p.memory_controller(), Ok(Some((probe::cgroup::CgroupVersion::V1, _))));
    let swappiness = sysctls.iter().find(|(k, _)| *k == "vm.swappiness").and_then(|(_, v)| v.parse().ok()).filter(|_| v1);
    let cg = sb.memory_cgroup("jank", &sandbox::cgroup::Limits { max: Some(limit), swappiness, ..Default::default() })?;
    let mut comp = Vec::new();
    for c in &companions {
        comp.push(crate::thrash::work::spawn(&cfg.hog, c.kind, &c.spec, c.inside.then_some(&cg), c.label.clone())?);
    }
    for w in comp.iter_mut() {
        crate::thrash::work::wait_ready(w, stop)?;
    }
    let probes: Vec<i32> = comp.iter().map(|w| w.pid).collect();
    obs.targets(
        probes.clone(),
        Some(probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() }),
        back.zram_id.into_iter().collect(),
    );
    obs.note(&format!(
        "jank {} repeat {}: `{}` in a {} group{}, the frame probe's {} inside it",
        arm.name(),
        rep + 1,
        hog.argv.join(" "),
        ::units::bytes(limit),
        if cpu_only { " (the CPU-only control: room for the command and all the store could take, no swap)" } else { "" },
        ::units::bytes(cfg.ws()),
    ));
    let base_t = probe::sample::monotonic_ns();
    if record::stop::sleep(BEFORE) || stop() {
        return Err(ExperimentError::Interrupted);
    }
    let out0 = crate::thrash::work::pswpout(&mut p);
    let mut cmd = std::process::Command::new(&hog.argv[0]);
    cmd.args(&hog.argv[1..]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    sandbox::cgroup::join_before_exec(&mut cmd, &cg.dir)
        .map_err(|e| ExperimentError::Worker(format!("{}: {e}", cg.dir.display())))?;
    sandbox::worker::die_with_parent(&mut cmd);
    let t0 = probe::sample::monotonic_ns();
    let started = Instant::now();
    let child = cmd.spawn().map_err(|e| ExperimentError::Worker(format!("cannot run '{}': {e}", hog.argv[0])))?;
    let pid = child.id() as i32;
    // Reaped below with wait4 (for its rusage), not through `child`.
    drop(child);
    obs.event("phase_start", "command", t0, json!({"repeat": rep}));
    let mut peak = 0u64;
    let mut timed_out = false;
    let (status, ru) = loop {
        peak = peak.max(cg.usage().unwrap_or(0));
        if let Some(r) = crate::rightsize::work::reap(pid, false) {
            break r;
        }
        if stop() {
            kill_all_but(&cg, &probes);
            let _ = crate::rightsize::work::reap(pid, true);
            return Err(ExperimentError::Interrupted);
        }
        if started.elapsed() >= hog.timeout {
            timed_out = true;
            kill_all_but(&cg, &probes);
            match crate::rightsize::work::reap(pid, true) {
                Some(r) => break r,
                None => return Err(ExperimentError::Worker(format!("the command (pid {pid}) could not be reaped"))),
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let t_end = probe::sample::monotonic_ns();
    // What it left running in the group is the run's too: ended with it.
    kill_all_but(&cg, &probes);
    let out1 = crate::thrash::work::pswpout(&mut p);
    obs.event("phase_end", "command", t_end, Value::Null);
    if record::stop::sleep(hog.watch) || stop() {
        return Err(ExperimentError::Interrupted);
    }
    let stop_t = probe::sample::monotonic_ns();
    let oom_kills = cg.oom_kills();
    let replies: Vec<Option<Value>> = comp.into_iter().map(crate::thrash::work::stop_and_collect).collect();
    obs.targets(vec![], None, vec![]);
    let run = CommandRun {
        outcome: outcome(status, timed_out, oom_kills).into(),
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        seconds: started.elapsed().min(Duration::from_nanos(t_end - t0)).as_secs_f64(),
        limit_bytes: limit,
        peak_bytes: cg.peak().or((peak > 0).then_some(peak)).map(|p| p.max(peak)),
        major_faults: ru.ru_majflt as u64,
    };
    let s = |t: u64| (t as f64 - t0 as f64) / 1e9;
    let result = ThrashResult {
        preset: "command".into(),
        repeat_index: rep,
        backing: back.kind,
        compressor: back.compressor.clone(),
        limit_bytes: limit,
        companion_bytes: companions.iter().filter(|c| c.inside).map(|c| c.counted_bytes).sum(),
        oom_kills,
        pswpout_active: out1.zip(out0).map(|(e, s)| e.saturating_sub(s)),
        thrash_start_s: 0.0,
        thrash_end_s: s(t_end),
        recovery_from_s: Some(s(t_end)),
        end_s: s(stop_t),
        wall_s: (stop_t - base_t) as f64 / 1e9,
        protocol_breaks: vec![USER_HOG.into()],
        notes: if back.has_swap() { vec![] } else { vec!["no swap backs this run".into()] },
        ..Default::default()
    };
    drop(cg);
    sb.restore()?;
    Ok((Outcome { result, t0_ns: t0, companions: replies, settings: seen }, run))
}

/// How the command ended: a timeout first (it was killed), then the
/// group's OOM killer, then its own exit.
fn outcome(status: i32, timed_out: bool, oom_kills: Option<u64>) -> &'static str {
    if timed_out {
        "timed_out"
    } else if oom_kills.is_some_and(|n| n > 0) {
        "oom"
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        "ok"
    } else {
        "failed"
    }
}

/// Kills every process in the group but the frame probe's (`keep`), until
/// none is left (or 5 s have passed).
fn kill_all_but(cg: &sandbox::cgroup::MemCgroup, keep: &[i32]) {
    for _ in 0..250 {
        let pids: Vec<i32> = cg.procs().into_iter().filter(|p| !keep.contains(p)).collect();
        if pids.is_empty() {
            return;
        }
        for p in pids {
            // SAFETY: signalling a process in a group pagelab made for the run.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_puts_a_timeout_before_an_oom_kill_before_the_exit() {
        let exit = |c: i32| c << 8; // as wait(2) encodes an exit code
        assert_eq!(outcome(exit(0), false, Some(0)), "ok");
        assert_eq!(outcome(exit(3), false, Some(0)), "failed");
        assert_eq!(outcome(9, false, None), "failed"); // killed by SIGKILL, kills unread
        assert_eq!(outcome(9, false, Some(1)), "oom");
        assert_eq!(outcome(9, true, Some(1)), "timed_out");
    }

    #[test]
    fn the_cpu_only_control_holds_the_command_and_the_store() {
        let h = CommandHog {
            argv: vec!["x".into()],
            limit: 64 << 20,
            store: 128 << 20,
            timeout: Duration::from_secs(60),
            watch: Duration::from_secs(10),
        };
        assert_eq!(h.limit_of(false), 64 << 20);
        assert_eq!(h.limit_of(true), 192 << 20);
    }
}
