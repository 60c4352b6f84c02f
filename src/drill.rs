//! `pagelab __sandbox-drill` (hidden): drives a sandbox through the changes the
//! experiments make (a sysctl, a zram swap, a swap file, a memory cgroup with a
//! worker inside) and restores them. The crash tests run it with
//! `PAGELAB_FAULT_AT=N` to kill it at every checkpoint.

use crate::cli::DrillArgs;
use sandbox::Sandbox;
use sandbox::cgroup::Limits;
use sandbox::sandbox::ZramSpec;
use sandbox::worker::EventKind;
use sandbox::worker::{Worker, WorkerSpec};
use serde_json::json;
use std::time::Duration;

pub fn run(a: &DrillArgs) -> anyhow::Result<()> {
    let mut sb = match &a.journal_dir {
        Some(d) => Sandbox::with_journal_dir("drill", d),
        None => Sandbox::new("drill"),
    };
    let mut out = json!({});
    if let Some(limit) = a.cgroup {
        sb.check_limits(&Limits { max: Some(limit), ..Default::default() })?;
    }
    // The host guard: the cgroup limit is the planned memory; refuse before any change.
    let meminfo = probe::Probe::default().meminfo()?.unwrap_or_default();
    let guard = sandbox::guard::HostGuard::new(a.host_floor, &meminfo);
    let planned = a.cgroup.unwrap_or(0).max(if a.cgroup.is_some() { 0 } else { a.touch });
    guard.check_plan(planned as u128, "this drill", &meminfo)?;
    if let Some(v) = a.swappiness {
        sb.sysctl("vm.swappiness", &v.to_string())?;
        out["swappiness"] = json!(v);
    }
    if let Some(size) = a.zram {
        let z = sb.zram_swap(&ZramSpec { disksize: size, algorithm: a.algorithm.clone(), priority: 32000 })?;
        out["zram"] = json!({"id": z.id, "device": z.device, "algorithm": z.algorithm});
    }
    if let Some(path) = &a.swapfile {
        sb.swap_file(path, 64 << 20, 10)?;
        out["swapfile"] = json!(path);
    }
    if let Some(limit) = a.cgroup {
        let cg = sb.memory_cgroup("drill", &Limits { max: Some(limit), ..Default::default() })?;
        out["cgroup"] = json!({"name": cg.name, "version": cg.version.to_string(), "writes": cg.writes()});
        let exe = std::env::current_exe()?;
        let mut w = Worker::spawn(WorkerSpec {
            exe,
            args: sandbox::worker::argv_spec(crate::worker::HOLD, &crate::worker::HoldSpec { bytes: a.touch }),
            cgroup: Some(&cg),
            env: vec![],
            label: crate::worker::HOLD.into(),
        })?;
        sandbox::fault::point("worker started");
        out["worker_pid"] = json!(w.pid);
        out["worker_in_cgroup"] = json!(cg.procs().contains(&w.pid));
        match w.wait_for(
            sandbox::worker::Want::Kind(EventKind::Ready),
            Duration::from_secs(60),
            |_| {},
            record::stop::requested,
        ) {
            Ok(ev) => {
                out["worker"] = json!({"outcome": "ready", "status": ev.data});
                out["cgroup_usage_bytes"] = json!(cg.usage());
                sandbox::fault::point("worker ready");
                hold(a.hold);
                let _ = sandbox::worker::send(&mut w, &crate::worker::Exit);
                if let Err(f) = w.finish(Duration::from_secs(10)) {
                    out["worker"]["exit"] = json!(f.to_string());
                }
            }
            Err(f) => {
                out["worker"] = json!({"outcome": "failed", "message": f.to_string(), "oom_killed": f.oom_killed})
            }
        }
    } else {
        hold(a.hold);
    }
    sandbox::fault::point("before restore");
    let log = sb.restore()?;
    out["restored"] = json!(log);
    say::outln!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn hold(d: Duration) {
    if !d.is_zero() {
        record::stop::sleep(d);
    }
}
