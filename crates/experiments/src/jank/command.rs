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
use workloads::backing::{self, BackingKind};
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

/// The command, started in its memory group (and, on cgroup v1, the blkio
/// group of a slowed drive), told SIGKILL if pagelab dies: when it started
/// (monotonic ns), and its pid, which the caller reaps with wait4 (for its
/// rusage), not through a `Child`.
fn start(hog: &CommandHog, cg: &sandbox::cgroup::MemCgroup) -> Result<(u64, i32), ExperimentError> {
    let mut cmd = std::process::Command::new(&hog.argv[0]);
    cmd.args(&hog.argv[1..]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    for g in std::iter::once(&cg.dir).chain(&cg.also) {
        sandbox::cgroup::join_before_exec(&mut cmd, g)
            .map_err(|e| ExperimentError::Worker(format!("{}: {e}", g.display())))?;
    }
    sandbox::worker::die_with_parent(&mut cmd);
    let t0 = probe::sample::monotonic_ns();
    let child = cmd.spawn().map_err(|e| ExperimentError::Worker(format!("cannot run '{}': {e}", hog.argv[0])))?;
    Ok((t0, child.id() as i32))
}

/// One run of the command on `arm`: the store and settings set up (and
/// undone), the group made at the arm's limit (and, beside a swap of the
/// host's own, its swap capped at the store's room, or at none for an arm
/// without a store), the frame probes started and ready, a baseline, the
/// command until it ends (or its timeout, or Ctrl-C), whatever it left in
/// the group killed, and the watch.
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
    let x = Extras { compressor, store_extra: 0, sysctls: &sysctls, min_ttl_ms: arm.min_ttl_ms, zswap_shrinker: arm.zswap_shrinker, companions: &companions, swap_iops: None };
    // Read before the run's own store is made: the host's swap, not ours.
    let host_swap = !sb.user_swaps().is_empty();
    let seen = crate::thrash::work::settings(&mut sb, &x)?;
    let back = backing::setup(&mut sb, kind, compressor, hog.store, &cfg.hog.swapfile_dir)?;
    let mut notes: Vec<String> = back.notes.clone();
    let cpu_only = cfg.cpu_only || arm.store == Store::CpuOnly;
    let limit = hog.limit_of(cpu_only);
    let v1 = matches!(p.memory_controller(), Ok(Some((probe::cgroup::CgroupVersion::V1, _))));
    let swappiness = sysctls.iter().find(|(k, _)| *k == "vm.swappiness").and_then(|(_, v)| v.parse().ok()).filter(|_| v1);
    let mut limits = sandbox::cgroup::Limits { max: Some(limit), swappiness, ..Default::default() };
    let mut cg = sb.memory_cgroup("jank", &limits)?;
    if host_swap {
        // An arm without a store of its own (`none`, `cpu-only`; the Backing
        // lists the host's areas too) gets no swap.
        limits.swap_max = Some(if back.kind != BackingKind::None { hog.store } else { 0 });
        notes.extend(crate::thrash::work::cap_swap(&cg, &limits, v1)?);
    }
    if let Some(iops) = cfg.swap_iops.filter(|_| arm.store == Store::Swapfile) {
        notes.push(crate::thrash::work::slow_disk(&mut sb, &mut cg, back.swap_file.as_deref(), iops)?);
    }
    for n in &notes {
        obs.note(n);
    }
    let mut comp = Vec::new();
    for c in &companions {
        comp.push(crate::thrash::work::spawn(
            &mut sandbox::worker::Processes,
            &cfg.hog,
            c.kind, &c.spec, c.inside.then_some(&cg), c.label.clone())?);
    }
    for w in comp.iter_mut() {
        crate::thrash::work::wait_ready(w.as_mut(), stop)?;
    }
    let probes: Vec<i32> = comp.iter().map(|w| w.pid()).collect();
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
    let v0 = p.vmstat().ok().flatten();
    let (t0, pid) = start(hog, &cg)?;
    obs.event("phase_start", "command", t0, json!({"repeat": rep}));
    let Ended { status, ru, t_end, timed_out, peak, vmstat: v1_end, oom_kills, left } =
        wait_command(&cg, pid, &probes, (hog.timeout, stop), &mut p)?;
    // What it left running in the group is the run's too: ended with it.
    let survivors = cg.kill_all_but(&probes, Duration::from_secs(5));
    if left > 0 {
        notes.push(format!("the command left {left} process(es) in the group when it ended; they were killed"));
    }
    if !survivors.is_empty() {
        notes.push(format!("{} process(es) it left survived 5 s of SIGKILL and ran on through the watch", survivors.len()));
    }
    obs.event("phase_end", "command", t_end, Value::Null);
    if record::stop::sleep(hog.watch) || stop() {
        return Err(ExperimentError::Interrupted);
    }
    let stop_t = probe::sample::monotonic_ns();
    let replies: Vec<Option<Value>> = comp.into_iter().map(crate::thrash::work::stop_and_collect).collect();
    if replies.first().is_some_and(Option::is_none) {
        notes.push("the frame probe inside the group did not answer (killed, perhaps by the group's OOM killer)".into());
    }
    obs.targets(vec![], None, vec![]);
    let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let run = CommandRun {
        outcome: outcome(exit_code, timed_out, oom_kills).into(),
        exit_code,
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        seconds: (t_end - t0) as f64 / 1e9,
        limit_bytes: limit,
        peak_bytes: cg.peak().or((peak > 0).then_some(peak)).map(|p| p.max(peak)),
        major_faults: ru.ru_majflt as u64,
        oom_kills,
    };
    let result = hog_result(
        (arm, rep),
        &back,
        (limit, companions.iter().filter(|c| c.inside).map(|c| c.counted_bytes).sum()),
        (&v0, &v1_end),
        (t0, t_end, stop_t, base_t),
        notes,
        oom_kills,
    );
    drop(cg);
    sb.restore()?;
    Ok((Outcome { result, t0_ns: t0, companions: replies, settings: seen }, run))
}

/// How the command ended: its wait status and rusage, when (monotonic ns:
/// its reaping, or the moment its timeout was seen), whether at its
/// timeout, the group's highest charge polled meanwhile, and what was read
/// at that moment: /proc/vmstat, the group's OOM kills (so that one in the
/// watch is not the command's) and the processes it had in the group but
/// the probes (`left`, before any kill).
struct Ended {
    status: i32,
    ru: libc::rusage,
    t_end: u64,
    timed_out: bool,
    peak: u64,
    vmstat: Option<probe::vmstat::Vmstat>,
    oom_kills: Option<u64>,
    left: usize,
}

/// Waits for the command (`pid`, our child), polling every 20 ms; at its
/// timeout it is killed with everything in the group but the probes
/// (`keep`), and at Ctrl-C too (then Interrupted). A command reaped in the
/// same round as its timeout ended by itself.
fn wait_command(
    cg: &sandbox::cgroup::MemCgroup,
    pid: i32,
    keep: &[i32],
    (timeout, stop): (Duration, fn() -> bool),
    p: &mut probe::Probe,
) -> Result<Ended, ExperimentError> {
    let started = Instant::now();
    let mut peak = 0u64;
    let unreaped = || ExperimentError::Worker(format!("the command (pid {pid}) was killed but could not be reaped within 10 s"));
    loop {
        peak = peak.max(cg.usage().unwrap_or(0));
        let timed_out = started.elapsed() >= timeout;
        let reaped = crate::rightsize::work::reap(pid, false);
        let t_end = probe::sample::monotonic_ns();
        let at_end = |p: &mut probe::Probe| {
            (p.vmstat().ok().flatten(), cg.oom_kills(), cg.procs().into_iter().filter(|q| !keep.contains(q)).count())
        };
        if let Some((status, ru)) = reaped {
            let (vmstat, oom_kills, left) = at_end(p);
            return Ok(Ended { status, ru, t_end, timed_out: false, peak, vmstat, oom_kills, left });
        }
        if stop() {
            crate::rightsize::work::kill_and_reap(cg, pid, keep);
            return Err(ExperimentError::Interrupted);
        }
        if timed_out {
            // Everything it started is still in the group: count it, then
            // the command and the group go together.
            let (vmstat, oom_kills, left) = at_end(p);
            let (status, ru) = crate::rightsize::work::kill_and_reap(cg, pid, keep).ok_or_else(unreaped)?;
            return Ok(Ended { status, ru, t_end, timed_out: true, peak, vmstat, oom_kills, left: left.saturating_sub(1) });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The hog's record for a command's run: thrash's result with what a
/// command's run reads (its store, limit, paging from /proc/vmstat at the
/// command's start and end, OOM kills, windows) and every figure of thrash's
/// own consumers unknown (NaN, null in JSON), never 0.
fn hog_result(
    (arm, rep): (&Arm, u32),
    back: &backing::Backing,
    (limit, counted): (u64, u64),
    (v0, v1): (&Option<probe::vmstat::Vmstat>, &Option<probe::vmstat::Vmstat>),
    (t0, t_end, stop_t, base_t): (u64, u64, u64, u64),
    notes: Vec<String>,
    oom_kills: Option<u64>,
) -> ThrashResult {
    let delta = |k: &str| Some(v1.as_ref()?.get(k)?.saturating_sub(v0.as_ref()?.get(k)?));
    let out = |v: &Option<probe::vmstat::Vmstat>| v.as_ref().and_then(crate::thrash::work::swapped_out);
    let s = |t: u64| (t as f64 - t0 as f64) / 1e9;
    let nan = f64::NAN;
    let mut notes = notes;
    let uncapped = notes.iter().any(|n| n.starts_with(crate::thrash::work::UNCAPPED));
    if back.kind == BackingKind::None && !uncapped {
        notes.push(format!("no swap backs this run ({})", arm.name()));
    }
    ThrashResult {
        preset: "command".into(),
        repeat_index: rep,
        backing: back.kind,
        compressor: back.compressor.clone(),
        limit_bytes: limit,
        companion_bytes: counted,
        oom_kills,
        pswpout_active: out(v1).zip(out(v0)).map(|(e, s)| e.saturating_sub(s)),
        pswpout_total: delta("pswpout").unwrap_or(0),
        pswpin_total: delta("pswpin").unwrap_or(0),
        pgmajfault_total: delta("pgmajfault").unwrap_or(0),
        cpu_user_pct_mean: nan,
        cpu_system_pct_mean: nan,
        cpu_iowait_pct_mean: nan,
        psi_some_pct_mean: nan,
        psi_full_pct_mean: nan,
        pswpout_per_s_peak: nan,
        progress_ratio_min: nan,
        progress_ratio_median: nan,
        overcommitted_s: nan,
        pswpout_per_s_active: nan,
        lateness_max_s: nan,
        collector_lateness_p99_ms: nan,
        collector_lateness_max_ms: nan,
        cpu_user_share: nan,
        thrash_start_s: 0.0,
        thrash_end_s: s(t_end),
        recovery_from_s: Some(s(t_end)),
        end_s: s(stop_t),
        wall_s: (stop_t - base_t) as f64 / 1e9,
        protocol_breaks: vec![USER_HOG.into()],
        notes,
        ..Default::default()
    }
}

/// How the command ended: killed at the timeout; ended by a kill with the
/// group's OOM killer at work (`oom`: an exit 0 is `ok` whatever else the
/// killer took); exit 0; anything else `failed`.
fn outcome(exit_code: Option<i32>, timed_out: bool, oom_kills: Option<u64>) -> &'static str {
    if timed_out {
        "timed_out"
    } else if exit_code == Some(0) {
        "ok"
    } else if oom_kills.is_some_and(|n| n > 0) {
        "oom"
    } else {
        "failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outcome_puts_a_timeout_first_and_an_oom_kill_only_where_it_did_not_exit_0() {
        assert_eq!(outcome(Some(0), false, Some(0)), "ok");
        assert_eq!(outcome(Some(3), false, Some(0)), "failed");
        assert_eq!(outcome(None, false, None), "failed"); // killed by a signal, kills unread
        assert_eq!(outcome(None, false, Some(1)), "oom");
        // An exit 0 is the command's own end, whatever the killer took (the probe).
        assert_eq!(outcome(Some(0), false, Some(1)), "ok");
        assert_eq!(outcome(None, true, Some(1)), "timed_out");
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
