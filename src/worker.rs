//! The hidden worker mode: `pagelab __worker KIND ARGS...`. Each experiment's target
//! work runs in such a process, so the parent can place it in a cgroup before it
//! allocates, trim it from outside, and survive its death.

use sandbox::worker::EventKind;
use sandbox::worker::child::WorkerIo;
use serde_json::json;

/// Runs a worker and returns its exit code.
pub fn main(kind: &str, args: &[String]) -> i32 {
    let mut io = WorkerIo::new();
    let r = match kind {
        // pagelab's own workers (tests, the drill, bench); the experiments' are in their list.
        HOLD => hold(&mut io, args),
        experiments::thrash::work::SAMPLER => sampler(&mut io, args),
        other => match experiments::worker(other) {
            Some(main) => main(&mut io, args),
            None => Err(format!("unknown worker kind '{other}'")),
        },
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            io.emit(EventKind::Error, &e, serde_json::Value::Null);
            1
        }
    }
}

/// The holding worker's kind (the drill, the monitor's test).
pub const HOLD: &str = "hold";

/// The holding worker's start (`--spec`): how much it allocates and touches.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldSpec {
    pub bytes: u64,
}

/// The holding worker's commands (the drill, the monitor's test): each
/// answers with its `done` event.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Touch;
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Status;
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Exit;
sandbox::commands! {
    /// What the holding worker is told.
    pub enum HoldCommand {
        /// The sum of the pages' first bytes, and the worker's status after.
        Touch(Touch) -> serde_json::Value,
        Status(Status) -> serde_json::Value,
        Exit(Exit) -> (),
    }
}

/// The worker's own memory, read through its probe; a status that cannot be
/// read gives nulls, never zeros.
fn self_status(io: &mut WorkerIo) -> serde_json::Value {
    let s = io.probe().pid_status(std::process::id() as i32).ok().flatten().unwrap_or_default();
    json!({"rss_bytes": s.vm_rss, "swap_bytes": s.vm_swap, "hwm_bytes": s.vm_hwm})
}

/// Allocates and touches [`HoldSpec`]'s bytes, reports `ready`, then obeys
/// `touch` and `exit`.
fn hold(io: &mut WorkerIo, args: &[String]) -> Result<(), String> {
    let HoldSpec { bytes } = sandbox::worker::spec_of(HOLD, args)?;
    let bytes = usize::try_from(bytes).map_err(|_| format!("hold: {bytes} bytes do not fit this machine"))?;
    let page = probe::environment::page_size() as usize;
    let mut m =
        workloads::mm::Mapping::anon(bytes.max(page), 0).map_err(|e| format!("mmap of {bytes} bytes failed: {e}"))?;
    io.emit(EventKind::PhaseStart, "touch", json!({}));
    let buf = m.as_mut_slice();
    for (i, chunk) in buf.chunks_mut(page).enumerate() {
        chunk[0] = (i as u8) | 1;
    }
    io.emit(EventKind::PhaseEnd, "touch", json!({}));
    let st = self_status(io);
    io.emit(EventKind::Ready, "", st);
    while let Some(c) = io.command::<HoldCommand>() {
        match c? {
            HoldCommand::Touch(_) => {
                let mut sum = 0u64;
                for chunk in m.as_slice().chunks(page) {
                    sum = sum.wrapping_add(chunk[0] as u64);
                }
                let st = self_status(io);
                io.reply::<Touch>(&json!({"sum": sum, "status": st}));
            }
            HoldCommand::Status(_) => {
                let st = self_status(io);
                io.reply::<Status>(&st)
            }
            HoldCommand::Exit(_) => break,
        }
    }
    Ok(())
}

/// An unlocked sampler (no mlockall), for comparison with the experiment's locked
/// collector: samples until `exit`, then reports each sample's lateness.
fn sampler(io: &mut WorkerIo, args: &[String]) -> Result<(), String> {
    use record::sampler::{Sampler, SamplerConfig, Verdict};
    let experiments::thrash::work::SamplerSpec { interval_ms: ms } =
        sandbox::worker::spec_of(experiments::thrash::work::SAMPLER, args)?;
    let lat = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, f64)>::new()));
    let l2 = lat.clone();
    let cfg =
        SamplerConfig { interval: std::time::Duration::from_millis(ms), lock_memory: false, ..Default::default() };
    let s = Sampler::start(cfg, probe::Targets::default(), move |smp| {
        if let Ok(mut v) = l2.lock() {
            v.push((smp.t_ns, smp.lateness_ns.unwrap_or(0) as f64 / 1e6));
        }
        Verdict::Continue
    })
    .map_err(|e| format!("starting the sampler: {e}"))?;
    io.emit(EventKind::Ready, "", serde_json::Value::Null);
    // thrash's probes' commands: it runs beside them, and ends as they do.
    use experiments::thrash::work::Command;
    while let Some(c) = io.command::<Command>() {
        if let Command::Exit(_) = c? {
            break;
        }
    }
    let st = s.stop();
    let v = lat.lock().map(|v| v.clone()).unwrap_or_default();
    io.reply::<experiments::thrash::work::Exit>(&json!({"lateness": v, "stats": st}));
    Ok(())
}
