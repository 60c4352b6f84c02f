//! thrash's workers through the worker-link seam ([`sandbox::worker::Spawn`]):
//! started, waited for, and told to exit with their reply collected (jank's
//! command runs use them too).

use super::*;
use sandbox::worker::{EventKind, Spawn, Want, WorkerLink};
use serde::Serialize;
use workloads::observe::ExperimentError;

/// A worker as the run drives it: a process, or in tests a thread
/// ([`sandbox::worker::Spawn`]).
pub(crate) type Link = Box<dyn WorkerLink>;

/// Starts one worker of `kind` with `spec` (inside `cg` where given).
pub(crate) fn spawn(
    sp: &mut dyn Spawn,
    cfg: &ThrashConfig,
    kind: &str,
    spec: &impl Serialize,
    cg: Option<&sandbox::cgroup::MemCgroup>,
    label: String,
) -> Result<Link, ExperimentError> {
    let a = sandbox::worker::argv_spec(kind, spec);
    // Workers in the thrashing group run without glibc's rseq registration
    // ([`NO_RSEQ`]); a thread (tests) is in no group and has no environment
    // of its own.
    let env =
        if cg.is_some() && sp.containable() { vec![(NO_RSEQ.0.to_string(), NO_RSEQ.1.to_string())] } else { vec![] };
    Ok(sp.spawn(sandbox::worker::WorkerSpec {
        exe: cfg.exe.clone(),
        args: a,
        cgroup: cg,
        env,
        label,
    })?)
}

pub(crate) fn wait_ready(w: &mut dyn WorkerLink, stop: fn() -> bool) -> Result<Value, ExperimentError> {
    w.wait_for(Want::Kind(EventKind::Ready), Duration::from_secs(60), &mut |_| {}, &stop)
        .map(|e| e.data)
        .map_err(|f| if stop() { ExperimentError::Interrupted } else { ExperimentError::Failed(f) })
}

pub(crate) fn stop_and_collect(w: Link) -> Option<Value> {
    let mut w = w;
    let sent = sandbox::worker::send(w.as_mut(), &Exit).ok()?;
    let d = w.wait_for(sent.want(), Duration::from_secs(30), &mut |_| {}, &|| false).ok().map(|e| e.data);
    let _ = w.finish(Duration::from_secs(5));
    d
}

