//! Running the experiment: the cgroup, the store, the consumers, the probes and
//! the second sampler, for each preset and repeat.

use sandbox::worker::{EventKind, Spawn};
use super::*;
use super::watch::Watch;
use workloads::observe::ExperimentError;

/// What the parent keeps of a worker while the run goes on.
struct Running {
    w: Link,
    index: u32,
    done: Option<Value>,
    alloc_ns: Option<u64>,
    failure: Option<String>,
}

fn probe_points(d: &Option<Value>, t0_ns: u64) -> Vec<(f64, f64)> {
    d.as_ref()
        .and_then(|v| v["samples"].as_array())
        .map(|a| {
            a.iter().filter_map(|p| Some(((p[0].as_u64()? as f64 - t0_ns as f64) / 1e9, p[1].as_f64()?))).collect()
        })
        .unwrap_or_default()
}

/// A worker a run starts beside its own (jank's frame probes): spawned with
/// the others, inside the group or outside, ready before the limit is set,
/// and told `exit` after the recovery's watch; its reply comes back in
/// [`Outcome::companions`], in order. One inside the group counts its
/// `counted_bytes` in the overcommit: the room under the limit is
/// (N × S + counted) ÷ 2.5 above the idle usage less those bytes
/// ([`ThrashResult::companion_bytes`]).
pub struct Companion {
    pub kind: &'static str,
    pub spec: Value,
    pub inside: bool,
    pub label: String,
    pub counted_bytes: u64,
}

/// What a run sets up beyond thrash's own (jank's arms): the store's
/// compressor, global settings (journaled, restored after the run), and
/// companion workers. `Extras::default()` is thrash's own run.
#[derive(Default)]
pub struct Extras<'a> {
    pub compressor: Option<&'a str>,
    /// The store's room for swapped pages beyond N × S (the idle workers'
    /// and companions' pages, which a store must hold too: zswap keeps a
    /// swap slot for each page it stores); 0 for thrash's own runs.
    pub store_extra: u64,
    /// sysctls such as ("vm.swappiness", "100").
    pub sysctls: &'a [(&'static str, String)],
    /// MGLRU's min_ttl_ms, with MGLRU enabled for the run (both journaled).
    pub min_ttl_ms: Option<u32>,
    /// zswap's shrinker (`shrinker_enabled`, Linux 6.8), on or off for the
    /// run (journaled); None leaves it as it is.
    pub zswap_shrinker: Option<bool>,
    pub companions: &'a [Companion],
    /// The swap file's disk limited to this many reads and writes a second
    /// for the group (`jank --swap-iops`: a slow drive); None: as it is.
    pub swap_iops: Option<u64>,
}

/// One run's result, its start signal, and its companions' replies (None:
/// one that did not answer).
pub struct Outcome {
    pub result: ThrashResult,
    pub t0_ns: u64,
    pub companions: Vec<Option<Value>>,
    /// The arm's settings as the kernel read them back once set.
    pub settings: Vec<(String, String)>,
}

/// Runs one plan once on `kind`, with `x`'s setup and companions.
pub fn run_one<O: workloads::observe::Observer>(
    cfg: &ThrashConfig,
    run: (&Plan, BackingKind, u32),
    obs: &mut O,
    stop: fn() -> bool,
    x: &Extras,
) -> Result<Outcome, ExperimentError> {
    run_one_with(cfg, run, obs, stop, x, &mut sandbox::worker::Processes, sandbox::Sandbox::new("thrash"))
}

/// [`run_one`] with its workers started by `sp` (processes; in tests,
/// threads) in the sandbox `sb` (the machine's; in tests, a fake tree's).
pub(crate) fn run_one_with<O: workloads::observe::Observer>(
    cfg: &ThrashConfig,
    (plan, kind, rep): (&Plan, BackingKind, u32),
    obs: &mut O,
    stop: fn() -> bool,
    x: &Extras,
    sp: &mut dyn Spawn,
    mut sb: sandbox::Sandbox,
) -> Result<Outcome, ExperimentError> {
    let mut p = sb.probe(); // the machine's counters, as the sandbox reads them
    let total = plan.consumers as u64 * plan.size_bytes;
    // Read before the run's own store is made: the host's swap, not ours.
    let host_swap = !sb.user_swaps().is_empty();
    let seen = settings(&mut sb, x)?;
    let back = backing::setup(&mut sb, kind, x.compressor, total + x.store_extra, &cfg.swapfile_dir)?;
    for n in &back.notes {
        obs.note(n);
    }
    let mut r = ThrashResult {
        preset: plan.preset.clone(),
        repeat_index: rep,
        plan: Some(plan.clone()),
        backing: back.kind,
        compressor: back.compressor.clone(),
        consumers: plan.consumers,
        recovery_rule: RECOVERY.into(),
        ..Default::default()
    };
    // A run without a store of its own (`none`; the Backing lists every
    // active area, the host's too) gets no swap: beside a host swap the
    // group's is capped at 0, and a store's at what it was made to hold.
    let stores = back.kind != BackingKind::None;
    let swap_cap = host_swap.then_some(if stores { total + x.store_extra } else { 0 });
    let mut cg = make_group(&mut sb, &mut p, plan, x, swap_cap, &mut r)?;
    if let Some(iops) = x.swap_iops {
        r.notes.push(slow_disk(&mut sb, &mut cg, back.swap_file.as_deref(), iops)?);
    }
    let uncapped = r.notes.iter().any(|n| n.starts_with(UNCAPPED));
    if !stores && !uncapped && (host_swap || !back.has_swap()) {
        r.notes.push("no swap backs this run: consumers beyond the limit can only be OOM-killed".into());
    }
    for n in &r.notes {
        obs.note(n);
    }
    let cg_target = probe::CgroupTarget { version: cg.version, dir: cg.dir.clone(), name: cg.name.clone() };
    let zram: Vec<u32> = back.zram_id.into_iter().collect();
    let Workers { probe_out, probe_in, sampler_in, mut cons, comp } = start_workers(sp, cfg, plan, rep, &cg, x, stop)?;
    r.companion_bytes = x.companions.iter().filter(|c| c.inside).map(|c| c.counted_bytes).sum();
    std::thread::sleep(Duration::from_millis(200));
    // The default limit is built on it: unread, the run cannot be sized.
    r.idle_usage_bytes = cg
        .usage()
        .ok_or_else(|| ExperimentError::Worker(format!("{}: the group's usage could not be read", cg.name)))?;
    r.limit_bytes = limit_for(plan, r.idle_usage_bytes, total, r.companion_bytes);
    let guard = guard::Guard::start(&cg, r.limit_bytes)?;
    let mut pids: Vec<i32> = cons.iter().map(|c| c.w.pid()).collect();
    pids.extend([probe_out.pid(), probe_in.pid()]);
    pids.extend(comp.iter().map(|w| w.pid()));
    obs.targets(pids, Some(cg_target), zram);
    obs.note(&announce(plan, rep, &r));
    // Baseline: the probes and the collector with nothing else going on.
    let base_t = probe::sample::monotonic_ns();
    let baseline_paging = baseline(&mut p, plan, obs, stop)?;
    // Go: every consumer counts its delay from now.
    let t0 = probe::sample::monotonic_ns();
    let watch = Watch::start(t0, sb.probe());
    let out_t0 = pswpout(&mut p);
    obs.event("phase_start", &format!("{} consumers", plan.preset), t0, json!({"repeat": rep}));
    for c in cons.iter_mut() {
        sandbox::worker::send(c.w.as_mut(), &Start { t0_ns: t0 })
            .map_err(|e| ExperimentError::Worker(format!("consumer {}: {e}", c.index)))?;
    }
    // Wait for every consumer: done, or dead. A consumer far past its planned end
    // (t_p or 2 minutes, whichever is longer) is killed and counted as not completed.
    let give_up = t0 + ((plan.planned_duration_ms + plan.active_ms.max(120_000.0)) * 1e6) as u64;
    // The guard watches on its own thread, so that a stalled consumer's raise
    // does not wait for the main thread's round of the consumers.
    let guard_stop = std::sync::atomic::AtomicBool::new(false);
    let regions = guard.regions();
    let (waited, mut guard) = std::thread::scope(|s| {
        let watcher = s.spawn(|| guard.watch(&cg, &guard_stop));
        let waited = wait_consumers(&mut cons, obs, stop, give_up, &regions);
        guard_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (waited, watcher.join().expect("the guard thread does not panic"))
    });
    waited?;
    let out_end = pswpout(&mut p);
    // The consumer phase's guard (v2: with the peak) as the protocol reads it; it guards the recovery too.
    guard.read_peak(&cg);
    r.guard = guard.report.clone();
    let first_alloc = cons.iter().filter_map(|c| c.alloc_ns).min().unwrap_or(t0);
    let last_exit = cons
        .iter()
        .filter_map(|c| c.done.as_ref().and_then(|d| d["end_ns"].as_u64()))
        .max()
        .unwrap_or_else(probe::sample::monotonic_ns);
    obs.event("phase_end", &format!("{} consumers", plan.preset), last_exit, Value::Null);
    consumers_done(&mut r, &mut cons, plan);
    swapped_while_active(&mut r, (out_t0, out_end), (last_exit as f64 - first_alloc as f64) / 1e9);
    let stop_t = recovery_phase(&mut r, plan, obs, stop, &cg, guard, cons, watch, baseline_paging, (t0, last_exit))?;
    r.oom_kills = cg.oom_kills();
    if r.oom_kills.is_none() {
        // Unknown is not none: the protocol cannot be said to have held.
        r.protocol_breaks.push(format!("{}: the group's OOM kills could not be read", cg.name));
    }
    protocol(&mut r, &cg.name);
    sample_past(obs, stop_t);
    let replies = comp.into_iter().map(stop_and_collect).collect();
    let probes = [probe_out, probe_in, sampler_in].map(stop_and_collect);
    obs.targets(vec![], None, vec![]);
    let samples = obs.samples();
    analyze(&mut r, &samples, t0, first_alloc, last_exit, stop_t, baseline_paging);
    read_probes(&mut r, probes, t0, baseline_paging);
    r.end_s = (stop_t as f64 - t0 as f64) / 1e9;
    r.wall_s = (stop_t - base_t) as f64 / 1e9;
    drop(cg);
    sb.restore()?;
    Ok(Outcome { result: r, t0_ns: t0, companions: replies, settings: seen })
}

/// The probes' samples (outside, inside) and the unlocked sampler's
/// lateness, by window, and the recovery read with the probe inside.
fn read_probes(r: &mut ThrashResult, [out_d, in_d, sam_d]: [Option<Value>; 3], t0: u64, baseline_paging: f64) {
    r.series.probe_outside = probe_points(&out_d, t0);
    r.series.probe_inside = probe_points(&in_d, t0);
    let (ts, te) = (r.thrash_start_s, r.thrash_end_s);
    r.probe_outside_ms = windows(&r.series.probe_outside, ts, te);
    r.probe_inside_ms = windows(&r.series.probe_inside, ts, te);
    read_recovery(r, baseline_paging);
    if let Some(d) = sam_d {
        let lat = lateness_within(&d, t0, ts, te);
        r.unlocked_lateness_p99_ms = record::stats::percentile(&lat, 0.99);
        r.unlocked_lateness_max_ms = record::stats::percentile(&lat, 1.0);
    }
}

/// The run's worker processes: two probes (outside and inside the group), the
/// unlocked sampler, the consumers and the companions, spawned and ready.
struct Workers {
    probe_out: Link,
    probe_in: Link,
    sampler_in: Link,
    cons: Vec<Running>,
    comp: Vec<Link>,
}

fn start_workers(
    sp: &mut dyn Spawn,
    cfg: &ThrashConfig,
    plan: &Plan,
    rep: u32,
    cg: &sandbox::cgroup::MemCgroup,
    x: &Extras,
    stop: fn() -> bool,
) -> Result<Workers, ExperimentError> {
    let probe = |inside: bool| ProbeSpec { ws: PROBE_WS, period_ms: PROBE_PERIOD.as_millis() as u64, inside };
    let probe_out = spawn(sp, cfg, PROBE, &probe(false), None, "probe outside the cgroup".into())?;
    let probe_in = spawn(sp, cfg, PROBE, &probe(true), Some(cg), "probe inside the cgroup".into())?;
    let sampler_in = spawn(sp, cfg, SAMPLER, &SamplerSpec { interval_ms: 1000 }, Some(cg), "unlocked sampler".into())?;
    let mut cons: Vec<Running> = Vec::new();
    for i in 0..plan.consumers {
        let spec = consumer_spec(plan, i, rep);
        let w = spawn(sp, cfg, CONSUMER, &spec, Some(cg), format!("consumer {i}"))?;
        cons.push(Running { w, index: i, done: None, alloc_ns: None, failure: None });
    }
    let comp = x
        .companions
        .iter()
        .map(|c| spawn(sp, cfg, c.kind, &c.spec, c.inside.then_some(cg), c.label.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut w = Workers { probe_out, probe_in, sampler_in, cons, comp };
    for w in [&mut w.probe_out, &mut w.probe_in, &mut w.sampler_in]
        .into_iter()
        .chain(w.cons.iter_mut().map(|c| &mut c.w))
        .chain(w.comp.iter_mut())
    {
        wait_ready(w.as_mut(), stop)?;
    }
    Ok(w)
}

/// Consumer `i`'s start in repeat `rep`: its delay is `i` staggers after the
/// initial delay, and its seed differs per consumer and repeat.
pub fn consumer_spec(plan: &Plan, i: u32, rep: u32) -> ConsumerSpec {
    ConsumerSpec {
        index: i,
        size: plan.size_bytes,
        writes: plan.writes,
        sleep_us: (plan.sleep_ms * 1e3) as u64,
        delay_us: ((plan.initial_delay_ms + i as f64 * plan.stagger_ms) * 1e3).round() as u64,
        active_us: (plan.active_ms * 1e3) as u64,
        seed: 0x5eed_0000 + i as u64 + 1000 * rep as u64,
        after_bytes: (plan.size_bytes as f64 * plan.after_share) as u64,
    }
}

/// An arm's global settings (journaled; restored with the sandbox), and
/// each as the kernel reads it back once set: (name, value), the sysctls
/// by their names, MGLRU's as `lru_gen.min_ttl_ms` and zswap's shrinker as
/// `zswap.shrinker_enabled` ("unread" where the file could not be read).
pub(crate) fn settings(sb: &mut sandbox::Sandbox, x: &Extras) -> Result<Vec<(String, String)>, ExperimentError> {
    let roots = sb.roots().clone();
    let back = |p: std::path::PathBuf| std::fs::read_to_string(p).map_or("unread".into(), |s| s.trim().to_string());
    let mut seen = Vec::new();
    for (k, v) in x.sysctls {
        sb.sysctl(k, v)?;
        seen.push((k.to_string(), back(roots.proc.join("sys").join(k.replace('.', "/")))));
    }
    if let Some(ms) = x.min_ttl_ms {
        sb.lru_gen("enabled", "y")?;
        sb.lru_gen("min_ttl_ms", &ms.to_string())?;
        seen.push(("lru_gen.min_ttl_ms".into(), back(roots.sys.join("kernel/mm/lru_gen/min_ttl_ms"))));
    }
    if let Some(on) = x.zswap_shrinker {
        sb.zswap("shrinker_enabled", if on { "Y" } else { "N" })?;
        seen.push(("zswap.shrinker_enabled".into(), back(roots.sys.join("module/zswap/parameters/shrinker_enabled"))));
    }
    Ok(seen)
}

/// The group's limit: the one given, or one built on the idle workers'
/// usage: N × S ÷ 2.5 above it (the study's overcommit), or, for the
/// CPU-only control, twice N × S. A companion's `counted` bytes inside the
/// group count with N × S, and come out of the idle usage.
fn limit_for(plan: &Plan, idle: u64, total: u64, counted: u64) -> u64 {
    let load = total + counted;
    let room = if plan.cpu_only { 2 * load } else { (load as f64 / OVERCOMMIT) as u64 };
    plan.limit_bytes.unwrap_or(idle.saturating_sub(counted) + room)
}

/// The run's opening line in the log.
fn announce(plan: &Plan, rep: u32, r: &ThrashResult) -> String {
    format!(
        "thrash {} repeat {}: {} consumers × {:.1} MiB in a {:.1} MiB cgroup (idle workers {:.1} MiB), W={} t_s={} ms t_c={} ms, \
planned {:.0} s plus recovery{}",
        plan.preset,
        rep + 1,
        plan.consumers,
        units::mib(plan.size_bytes),
        units::mib(r.limit_bytes),
        units::mib(r.idle_usage_bytes),
        plan.writes,
        // To the microsecond: a time factor of 0.035 would print 3.5000000000000004.
        (plan.sleep_ms * 1e3).round() / 1e3,
        (plan.stagger_ms * 1e3).round() / 1e3,
        (plan.baseline().as_secs_f64() + plan.planned_duration_ms / 1e3),
        if plan.cpu_only { "; the CPU-only control: the limit holds every consumer twice over, so nothing should page" } else { "" }
    )
}

/// Swap-outs from the start signal to the last exit (`out`: the counter at
/// both ends), and their rate over the consumers' `span_s`; unknown (null,
/// NaN) when either end was unread.
fn swapped_while_active(r: &mut ThrashResult, out: (Option<u64>, Option<u64>), span_s: f64) {
    r.pswpout_active = out.1.zip(out.0).map(|(e, s)| e.saturating_sub(s));
    r.pswpout_per_s_active = match r.pswpout_active {
        Some(n) if span_s > 0.0 => n as f64 / span_s,
        // No span (no consumer allocated) has no rate either.
        _ => f64::NAN,
    };
}

fn vmstat(p: &mut probe::Probe) -> Option<probe::vmstat::Vmstat> {
    p.vmstat().ok().flatten()
}

pub(crate) fn pswpout(p: &mut probe::Probe) -> Option<u64> {
    vmstat(p).as_ref().and_then(swapped_out)
}

/// Pages that left RAM for swap since boot: pswpout counts the block
/// device's writes (zram's, a swap file's); zswap's stores count in zswpout
/// instead, and its writebacks (zswpwb) in both, once.
pub(crate) fn swapped_out(v: &probe::vmstat::Vmstat) -> Option<u64> {
    let out = v.get("pswpout")?;
    Some(out + v.get("zswpout").unwrap_or(0).saturating_sub(v.get("zswpwb").unwrap_or(0)))
}

/// Pages swapped in and out since boot (zswap's loads and stores with them).
pub(super) fn paging(v: &Option<probe::vmstat::Vmstat>) -> u64 {
    v.as_ref()
        .map(|v| v.get("pswpin").unwrap_or(0) + v.get("zswpin").unwrap_or(0) + swapped_out(v).unwrap_or(0))
        .unwrap_or(0)
}

/// The baseline phase: the probes and the collector with nothing else going
/// on. Returns its paging rate (pages/s).
fn baseline<O: workloads::observe::Observer>(
    p: &mut probe::Probe,
    plan: &Plan,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<f64, ExperimentError> {
    let base_t = probe::sample::monotonic_ns();
    let v0 = vmstat(p);
    obs.event("phase_start", &format!("{} baseline", plan.preset), base_t, Value::Null);
    record::stop::sleep(plan.baseline());
    if stop() {
        return Err(ExperimentError::Interrupted);
    }
    let v1 = vmstat(p);
    let secs = (probe::sample::monotonic_ns() - base_t) as f64 / 1e9;
    Ok(paging(&v1).saturating_sub(paging(&v0)) as f64 / secs.max(1e-3))
}

/// The consumers' reports (completed, progress, lateness). A consumer that
/// did not complete is killed and leaves `cons`; the others stay alive, at
/// their fallen-back load, until the recovery has been watched.
fn consumers_done(r: &mut ThrashResult, cons: &mut Vec<Running>, plan: &Plan) {
    for c in std::mem::take(cons) {
        let mut x = Consumer { index: c.index, failure: c.failure.clone(), ..Default::default() };
        if let Some(d) = &c.done {
            x = serde_json::from_value(d.clone()).unwrap_or(x);
            x.completed = true;
        }
        r.consumer_details.push(x);
        if c.done.is_none() {
            // Ended now: no wait (a process is killed at once).
            let _ = c.w.finish(Duration::ZERO);
        } else {
            cons.push(c);
        }
    }
    r.consumers_completed = r.consumer_details.iter().filter(|c| c.completed).count() as u32;
    let room = r.limit_bytes.saturating_sub(r.idle_usage_bytes);
    (r.progress_overcommitted_median, r.overcommitted_s) =
        overcommitted(&mut r.consumer_details, plan.size_bytes, room);
    let prog: Vec<f64> = r.consumer_details.iter().filter(|c| c.completed).map(|c| c.progress_ratio).collect();
    r.progress_ratio_min = record::stats::percentile(&prog, 0.0).unwrap_or(0.0);
    r.progress_ratio_median = record::stats::median(&prog).unwrap_or(0.0);
    r.deep = r.progress_overcommitted_median.is_some_and(|p| p <= DEEP_PROGRESS);
    r.lateness_max_s = r.consumer_details.iter().filter(|c| c.completed).map(|c| c.lateness_s).fold(0.0, f64::max);
}

/// Whether the study's protocol held: no OOM kill, every consumer completed.
fn protocol(r: &mut ThrashResult, cgroup: &str) {
    if let Some(kills) = r.oom_kills.filter(|&n| n > 0) {
        let why = probe::kmsg::read_kmsg()
            .map(|t| probe::kmsg::oom_reports(&t, cgroup))
            .and_then(|v| v.last().map(probe::kmsg::OomReport::line))
            .unwrap_or_else(|| "the kernel log could not be read".into());
        r.protocol_breaks.push(format!("{kills} consumer(s) OOM-killed by the kernel ({why})"));
        // The guard over the whole run: it guards the recovery's watch too.
        let g = r.guard_with_recovery.clone().unwrap_or_else(|| r.guard.clone());
        if g.gave_up {
            r.protocol_breaks.push(format!(
                "the guard let the kernel decide after raising the limit to {:.0} MiB ({}× the target){}",
                units::mib(g.limit_max_bytes),
                guard::MAX_RAISE,
                if r.guard.gave_up { "" } else { ", while the recovery was watched" }
            ));
        }
    }
    let not_done = r.consumers - r.consumers_completed;
    if not_done > 0 {
        r.protocol_breaks.push(format!("{not_done} of {} consumers did not complete", r.consumers));
    }
    r.protocol_held = r.protocol_breaks.is_empty();
    // The study's overcommit and depth, per preset: a preset outside them
    // leaves the findings that compare it unjudged (not the others).
    let figures = crate::thrash::protocol::of(r);
    if !figures.held() {
        r.notes.push(format!("outside the study's protocol: {}", figures.breaks.join("; ")));
    }
    r.protocol = Some(figures);
}

/// The recovery phase (issue 57): with the consumers alive at their
/// fallen-back load, the watch from when the load fits (under the guard,
/// which keeps guarding); then the consumers exit. Returns the watch's end.
#[allow(clippy::too_many_arguments)]
fn recovery_phase<O: workloads::observe::Observer>(
    r: &mut ThrashResult,
    plan: &Plan,
    obs: &mut O,
    stop: fn() -> bool,
    cg: &sandbox::cgroup::MemCgroup,
    guard: guard::Guard,
    cons: Vec<Running>,
    watch: Watch,
    baseline_paging: f64,
    (t0, last_exit): (u64, u64),
) -> Result<u64, ExperimentError> {
    r.recovery_alive = plan.after_share > 0.0;
    let room = r.limit_bytes.saturating_sub(r.idle_usage_bytes);
    r.recovery_from_s = overcommit_end(&r.consumer_details, plan.size_bytes, room);
    // The watch lasts past the finding's edge from that moment, so that a
    // run not calm within it is censored (a lower bound past the edge), not
    // unusable; and past the last fall-back's calm second.
    let watch_past = r.recovery_from_s.map_or(0.0, |f| f + RECOVERY_WATCH_PAST_S);
    // The recovery, with the consumers alive at their fallen-back load; then
    // they exit, and the group's OOM kills are read over the whole run.
    let guard_stop = std::sync::atomic::AtomicBool::new(false);
    let mut cons = cons;
    let (stop_t, guard) = std::thread::scope(|s| {
        let watcher = s.spawn(|| guard.watch(cg, &guard_stop));
        let stop_t =
            recover(plan, obs, baseline_paging, stop, &watch, (last_exit as f64 - t0 as f64) / 1e9, t0, watch_past);
        // The consumers end under the guard (a load that stays would
        // otherwise meet the OOM killer the guard turns back on).
        for c in cons.iter_mut() {
            let _ = sandbox::worker::send(c.w.as_mut(), &Exit);
        }
        for c in std::mem::take(&mut cons) {
            let _ = c.w.finish(Duration::from_secs(10));
        }
        guard_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (stop_t, watcher.join().expect("the guard thread does not panic"))
    });
    r.guard_with_recovery = Some(guard.finish(cg));
    let points = watch.finish();
    if stop() {
        // Cut short: the watch ended early, so no recovery can be read from it.
        return Err(ExperimentError::Interrupted);
    }
    if let Some(from) = r.recovery_from_s {
        r.recovery_watch = points.into_iter().filter(|p| p.t_s >= from - 1.0).collect();
    }
    Ok(stop_t)
}

/// The recovery read from the watch and the probe inside the group, from
/// when the load fit ([`recovery_alive`]).
fn read_recovery(r: &mut ThrashResult, baseline_paging: f64) {
    if r.recovery_alive {
        let limit = r.probe_inside_ms.before.p99.map_or(PROBE_CALM_MS, |p| (2.0 * p).max(PROBE_CALM_MS));
        r.recovery_probe_limit_ms = Some(limit);
        r.recovery_s = r
            .recovery_from_s
            .and_then(|from| recovery_alive(&r.recovery_watch, &r.series.probe_inside, from, baseline_paging, limit));
        // PSI never read after the moment: not measured (not "slow").
        r.psi_unread = r.recovery_s.is_none()
            && r.recovery_from_s.is_some_and(|f| {
                let after: Vec<&RecoveryPoint> = r.recovery_watch.iter().filter(|p| p.t_s > f).collect();
                !after.is_empty() && after.iter().all(|p| p.psi_some_pct.is_nan())
            });
        if r.recovery_from_s.is_none() {
            r.notes.push("no recovery to measure: the consumers' load never went above the room under the limit, or never fell back under it".into());
        }
    }
}


/// The recovery watch's end: once paging and PSI have been calm for
/// [`RECOVERY_CALM`] after the last consumer's fall-back (`last_s`, s after
/// the start signal `t0`), at least as long an "after" window as the
/// baseline has passed, and the watch has reached `past_s`; or
/// [`RECOVERY_MAX`]. Returns its end.
#[allow(clippy::too_many_arguments)]
fn recover<O: workloads::observe::Observer>(
    plan: &Plan,
    obs: &mut O,
    baseline_paging: f64,
    stop: fn() -> bool,
    watch: &Watch,
    last_s: f64,
    t0: u64,
    past_s: f64,
) -> u64 {
    let rec_t = probe::sample::monotonic_ns();
    obs.event("phase_start", &format!("{} recovery", plan.preset), rec_t, Value::Null);
    while probe::sample::monotonic_ns() - rec_t < RECOVERY_MAX.as_nanos() as u64 && !stop() {
        record::stop::sleep(RECOVERY_POLL);
        let now = probe::sample::monotonic_ns();
        let calm = recovery_alive(&watch.since(last_s), &[], last_s, baseline_paging, f64::INFINITY);
        if calm.is_some()
            && now - rec_t >= plan.baseline().as_nanos() as u64
            && (now as f64 - t0 as f64) / 1e9 >= past_s
        {
            break;
        }
    }
    let stop_t = probe::sample::monotonic_ns();
    obs.event("phase_end", &format!("{} recovery", plan.preset), stop_t, Value::Null);
    stop_t
}

/// Waits until the collector has a sample past `t`, so that the samples read
/// next cover the run's end: at most its 1 s period and a margin (the whole
/// of it where the observer keeps no samples to look at).
fn sample_past<O: workloads::observe::Observer>(obs: &mut O, t: u64) {
    let until = std::time::Instant::now() + Duration::from_millis(1100);
    while std::time::Instant::now() < until {
        if obs.last_sample_ns().is_some_and(|s| s > t) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The unlocked sampler's lateness (ms) within the thrashing window (s after t0).
fn lateness_within(d: &Value, t0: u64, ts: f64, te: f64) -> Vec<f64> {
    d["lateness"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    let t = (p[0].as_u64()? as f64 - t0 as f64) / 1e9;
                    (t > ts && t <= te + 1.0).then_some(p[1].as_f64()?)
                })
                .collect()
        })
        .unwrap_or_default()
}


/// Waits for every consumer: done, or dead. One past `give_up` is killed and
/// counted as not completed.
fn wait_consumers<O: workloads::observe::Observer>(
    cons: &mut [Running],
    obs: &mut O,
    stop: fn() -> bool,
    give_up: u64,
    regions: &guard::Regions,
) -> Result<(), ExperimentError> {
    loop {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        let mut pending = 0;
        for c in cons.iter_mut().filter(|c| c.done.is_none() && c.failure.is_none()) {
            pending += 1;
            match c.w.recv(Duration::from_millis(2)) {
                Ok(Some(ev)) if ev.kind == EventKind::Alloc => {
                    c.alloc_ns = Some(ev.t_ns);
                    let at = |k: &str| ev.data[k].as_u64().map(|v| v as usize);
                    // The pidfd now, while the consumer is our live child.
                    if let (Some(addr), Some(len), Ok(fd)) =
                        (at("addr"), at("len"), workloads::mm::PidFd::open(c.w.pid()))
                        && let Ok(mut r) = regions.lock()
                    {
                        r.push(guard::Region { pid: c.w.pid(), pidfd: std::sync::Arc::new(fd), addr, len });
                    }
                    // A consumer whose mmap failed with ENOMEM and was tried again says so.
                    let detail = match ev.data["enomem_retries"].as_u64() {
                        Some(n) if n > 0 => serde_json::json!({ "enomem_retries": n }),
                        _ => Value::Null,
                    };
                    obs.event("info", &format!("consumer {} allocated", c.index), ev.t_ns, detail);
                }
                Ok(Some(ev)) if ev.kind == EventKind::Done => {
                    obs.event("info", &format!("consumer {} done", c.index), ev.t_ns, Value::Null);
                    c.done = Some(ev.data);
                }
                Ok(Some(ev)) if ev.kind == EventKind::Error => c.failure = Some(ev.name),
                Ok(_) => {}
                Err(f) => c.failure = Some(f.to_string()),
            }
        }
        if pending == 0 {
            break;
        }
        if probe::sample::monotonic_ns() > give_up {
            for c in cons.iter_mut().filter(|c| c.done.is_none() && c.failure.is_none()) {
                c.failure = Some("did not finish within the planned time plus max(t_p, 2 min); killed".into());
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Runs every plan `repeat` times, in [`ThrashConfig::schedule`]'s order.
pub fn run<O: workloads::observe::Observer<Entry = crate::thrash::results::Entry>>(
    cfg: &ThrashConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<ThrashResult>, ExperimentError> {
    run_with(cfg, obs, stop, &mut sandbox::worker::Processes, &|| sandbox::Sandbox::new("thrash"))
}

/// [`run`] with its workers started by `sp` and each run's sandbox made by
/// `sandbox` ([`run_one_with`]).
pub(crate) fn run_with<O: workloads::observe::Observer<Entry = crate::thrash::results::Entry>>(
    cfg: &ThrashConfig,
    obs: &mut O,
    stop: fn() -> bool,
    sp: &mut dyn Spawn,
    sandbox: &dyn Fn() -> sandbox::Sandbox,
) -> Result<Vec<ThrashResult>, ExperimentError> {
    let mut out = Vec::new();
    for (kind, plan, rep) in cfg.schedule() {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        let r = run_one_with(cfg, (&plan, kind, rep), obs, stop, &Extras::default(), sp, sandbox())?.result;
        obs.note(&format!(
                "thrash {} on {} repeat {}: {}/{} consumers completed, {} pages swapped out, {:.0}/s while active, progress \
median {:.2}, while overcommitted {}{}, recovery {}, {} OOM stalls held by the guard{}",
                r.preset,
                r.backing,
                rep + 1,
                r.consumers_completed,
                r.consumers,
                r.pswpout_active.map_or("an unread number of".into(), |n| n.to_string()),
                r.pswpout_per_s_active,
                r.progress_ratio_median,
                r.progress_overcommitted_median.map(|p| format!("{p:.2}")).unwrap_or("n/a".into()),
                if r.deep { " (deep)" } else { "" },
                match (r.recovery_s, r.psi_unread) {
                    (Some(s), _) => format!("{s:.1} s"),
                    (None, true) => "not measured (PSI unread)".into(),
                    (None, false) => "not within 60 s".into(),
                },
                r.guard.oom_stalls,
                if r.protocol_held {
                    String::new()
                } else {
                    format!("; OUTSIDE the protocol: {}", r.protocol_breaks.join("; "))
                }
            ));
        obs.result(&crate::thrash::results::Entry { result: r.clone() })?;
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Swap-outs while active: the counter's rise over the span; unknown
    /// (null, NaN) when either end was unread or nothing ran.
    #[test]
    fn swap_outs_while_active_are_unknown_when_unread() {
        let mut r = ThrashResult::default();
        swapped_while_active(&mut r, (Some(100), Some(400)), 2.0);
        assert_eq!((r.pswpout_active, r.pswpout_per_s_active), (Some(300), 150.0));
        swapped_while_active(&mut r, (None, Some(400)), 2.0);
        assert!(r.pswpout_active.is_none() && r.pswpout_per_s_active.is_nan());
        swapped_while_active(&mut r, (Some(100), None), 2.0);
        assert!(r.pswpout_active.is_none() && r.pswpout_per_s_active.is_nan());
        swapped_while_active(&mut r, (Some(100), Some(100)), 0.0);
        assert!(r.pswpout_active == Some(0) && r.pswpout_per_s_active.is_nan());
    }

    /// zswap's stores count as swap-outs (zswpout), its writebacks once
    /// (they are in pswpout already); a kernel without zswap's counters
    /// counts pswpout alone, and without pswpout nothing is known.
    #[test]
    fn zswaps_stores_are_swap_outs_and_its_writebacks_count_once() {
        let v = probe::vmstat::parse("pswpin 7\npswpout 100\nzswpin 20\nzswpout 500\nzswpwb 40\n").unwrap();
        assert_eq!(swapped_out(&v), Some(100 + 500 - 40));
        assert_eq!(paging(&Some(v)), 7 + 20 + 560);
        let plain = probe::vmstat::parse("pswpin 7\npswpout 100\n").unwrap();
        assert_eq!(swapped_out(&plain), Some(100));
        assert_eq!(swapped_out(&probe::vmstat::parse("zswpout 5\n").unwrap()), None);
    }

    #[test]
    fn a_consumer_that_did_not_complete_breaks_the_protocol() {
        let mut r = ThrashResult { consumers: 5, consumers_completed: 4, ..Default::default() };
        protocol(&mut r, "pagelab/thrash-test");
        assert!(!r.protocol_held);
        assert_eq!(r.protocol_breaks, ["1 of 5 consumers did not complete"]);
        let mut ok = ThrashResult { consumers: 5, consumers_completed: 5, ..Default::default() };
        protocol(&mut ok, "pagelab/thrash-test");
        assert!(ok.protocol_held && ok.protocol_breaks.is_empty());
    }

    #[test]
    fn the_unlocked_samplers_lateness_is_cut_to_the_thrashing_window() {
        // Samples at 1, 2, 3 and 9 s after t0 (ns), lateness 5, 6, 7 and 8 ms;
        // the window is (1.5 s, 3 s] plus a second.
        let t0 = 1_000_000_000_000u64;
        let d = serde_json::json!({"lateness": [[t0 + 1_000_000_000, 5.0], [t0 + 2_000_000_000, 6.0], [t0 + 3_000_000_000, 7.0], [t0 + 9_000_000_000u64, 8.0]]});
        assert_eq!(lateness_within(&d, t0, 1.5, 3.0), [6.0, 7.0]);
        assert!(lateness_within(&serde_json::json!({}), t0, 0.0, 10.0).is_empty());
    }

    #[test]
    fn the_opening_line_names_the_plan() {
        let cfg = ThrashConfig { scale: 0.1, ..crate::thrash::work::tests::cfg() };
        let p = &cfg.plans()[0];
        let r = ThrashResult { limit_bytes: 2000 << 20, idle_usage_bytes: 50 << 20, ..Default::default() };
        let line = announce(p, 1, &r);
        assert!(line.starts_with("thrash e2 repeat 2: 25 consumers × 10.0 MiB in a 2000.0 MiB cgroup"), "{line}");
        let cfg = ThrashConfig { scale: 0.02, time_scale: Some(0.035), ..crate::thrash::work::tests::cfg() };
        let line = announce(&cfg.plans()[0], 0, &r);
        assert!(line.contains("t_s=3.5 ms t_c=1050 ms") && !line.contains("CPU-only"), "{line}");
        let cpu = ThrashConfig { cpu_only: true, ..crate::thrash::work::tests::cfg() };
        assert!(announce(&cpu.plans()[0], 0, &r).ends_with("so nothing should page"));
        // The CPU-only control's limit holds N × S twice over; the study's is N × S ÷ 2.5.
        assert_eq!(limit_for(&cpu.plans()[0], 10, 1000, 0), 10 + 2000);
        assert_eq!(limit_for(&cfg.plans()[0], 10, 1000, 0), 10 + 400);
        // A companion's 250 bytes inside (in the idle usage of 260) count
        // with N × S: (1000 + 250) ÷ 2.5 above the other 10.
        assert_eq!(limit_for(&cfg.plans()[0], 260, 1000, 250), 10 + 500);
        assert_eq!(limit_for(&cpu.plans()[0], 260, 1000, 250), 10 + 2500);
    }
}
