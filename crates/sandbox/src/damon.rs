//! A DAMON monitor of pagelab's own: one kdamond with one virtual-address
//! context on one process, and a `stat` scheme (which acts on no page) whose
//! tried regions report each region's access count and age.
//!
//! DAMON's sysfs admin interface has one list of kdamonds, and writing
//! `nr_kdamonds` replaces the whole list. pagelab therefore creates its
//! kdamond only when the list is empty (no kdamond of anyone else's, running
//! or not), journals it first, and on undo stops and removes it only when the
//! list is still exactly the one it made (one kdamond, watching the journaled
//! process).

use crate::cgroup::write_file as write;
use crate::error::{Result, SandboxError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kdamonds directory under a sys root.
pub fn kdamonds_dir(sys: &Path) -> PathBuf {
    sys.join("kernel/mm/damon/admin/kdamonds")
}

/// How the monitor samples: DAMON's own defaults are 5 ms and 100 ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intervals {
    pub sample: Duration,
    pub aggr: Duration,
    pub update: Duration,
}

impl Default for Intervals {
    fn default() -> Self {
        Intervals { sample: Duration::from_millis(5), aggr: Duration::from_millis(100), update: Duration::from_secs(1) }
    }
}

/// One region DAMON reports: `[start, end)`, how many of the last aggregation
/// interval's samples found it accessed, and for how many aggregation
/// intervals that count has stayed about the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub end: usize,
    pub nr_accesses: u32,
    pub age: u32,
}

/// Why pagelab cannot own a kdamond here, or None when it can.
pub fn unavailable(sys: &Path) -> Option<String> {
    let d = kdamonds_dir(sys);
    if !d.join("nr_kdamonds").exists() {
        return Some("not in this kernel, or no DAMON sysfs interface (/sys/kernel/mm/damon/admin)".into());
    }
    match std::fs::read_to_string(d.join("nr_kdamonds")).map(|t| t.trim().parse::<u32>()) {
        Ok(Ok(0)) => None,
        Ok(Ok(n)) => Some(format!(
            "DAMON already has {n} kdamond(s) that are not pagelab's; writing nr_kdamonds would replace them, so pagelab leaves DAMON alone"
        )),
        Ok(Err(_)) => Some("nr_kdamonds is not a number".into()),
        Err(e) => Some(format!("cannot read nr_kdamonds ({e}); DAMON's admin files need root")),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| SandboxError::io("reading", path, e))
}

/// A running kdamond pagelab created (through [`crate::Sandbox::damon_vaddr`]).
#[derive(Debug)]
pub struct Monitor {
    pub dir: PathBuf,
    pub pid: i32,
    pub intervals: Intervals,
}

/// Configures kdamond 0 (just created) for `pid` and turns it on.
pub(crate) fn configure(kd: &Path, pid: i32, iv: Intervals) -> Result<()> {
    let ctx = kd.join("contexts/0");
    write(&kd.join("contexts/nr_contexts"), "1")?;
    let avail = read(&ctx.join("avail_operations")).unwrap_or_default();
    if !avail.split_whitespace().any(|o| o == "vaddr") {
        return Err(SandboxError::Unsupported(format!(
            "DAMON here offers no virtual-address monitoring (avail_operations: {avail})"
        )));
    }
    write(&ctx.join("operations"), "vaddr")?;
    let attrs = ctx.join("monitoring_attrs");
    write(&attrs.join("intervals/sample_us"), &iv.sample.as_micros().to_string())?;
    write(&attrs.join("intervals/aggr_us"), &iv.aggr.as_micros().to_string())?;
    write(&attrs.join("intervals/update_us"), &iv.update.as_micros().to_string())?;
    // max before min: the kernel refuses min > max.
    write(&attrs.join("nr_regions/max"), "2000")?;
    write(&attrs.join("nr_regions/min"), "20")?;
    write(&ctx.join("targets/nr_targets"), "1")?;
    write(&ctx.join("targets/0/pid_target"), &pid.to_string())?;
    write(&ctx.join("schemes/nr_schemes"), "1")?;
    let scheme = ctx.join("schemes/0");
    write(&scheme.join("action"), "stat")?;
    // The access pattern's ranges start at [0, 0], which no region matches:
    // open them so that every region is "tried", and so reported.
    write(&scheme.join("access_pattern/sz/max"), &u64::MAX.to_string())?;
    write(&scheme.join("access_pattern/nr_accesses/max"), &u32::MAX.to_string())?;
    write(&scheme.join("access_pattern/age/max"), &u32::MAX.to_string())?;
    write(&kd.join("state"), "on")
}

/// Whether the kdamonds list is still the one a journal recorded: one
/// kdamond, watching `pid`. Only then may it be stopped and removed.
pub(crate) fn is_ours(kdamonds: &Path, pid: i32) -> std::result::Result<bool, String> {
    let n = std::fs::read_to_string(kdamonds.join("nr_kdamonds")).map_err(|e| e.to_string())?;
    if n.trim() == "0" {
        return Ok(false);
    }
    let target = std::fs::read_to_string(kdamonds.join("0/contexts/0/targets/0/pid_target")).unwrap_or_default();
    // Killed before the target was written: the list holds our bare kdamond.
    let bare = !kdamonds.join("0/contexts/0/targets/0").exists();
    Ok(n.trim() == "1" && (bare || target.trim() == pid.to_string()))
}

/// Stops kdamond 0 (if on) and empties the list.
pub(crate) fn remove(kdamonds: &Path) -> Result<()> {
    let state = kdamonds.join("0/state");
    if read(&state).unwrap_or_default() == "on" {
        write(&state, "off")?;
        // The kdamond thread takes a moment to exit; nr_kdamonds is busy until then.
        for _ in 0..200 {
            if read(&state).unwrap_or_default() != "on" {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut last = None;
    for _ in 0..100 {
        match write(&kdamonds.join("nr_kdamonds"), "0") {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(last.expect("an error"))
}

impl Monitor {
    /// Whether the kdamond still runs (it stops by itself when its process exits).
    pub fn running(&self) -> bool {
        read(&self.dir.join("state")).is_ok_and(|s| s == "on")
    }

    /// The regions as of the last aggregation interval.
    pub fn regions(&self) -> Result<Vec<Region>> {
        write(&self.dir.join("state"), "update_schemes_tried_regions")?;
        let dir = self.dir.join("contexts/0/schemes/0/tried_regions");
        let rd = std::fs::read_dir(&dir).map_err(|e| SandboxError::io("reading", &dir, e))?;
        let mut out = Vec::new();
        for e in rd.flatten() {
            let p = e.path();
            if !p.is_dir() || !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let num = |f: &str| -> Result<u64> {
                let t = read(&p.join(f))?;
                t.parse().map_err(|_| SandboxError::Other(format!("{}: '{t}' is not a number", p.join(f).display())))
            };
            out.push(Region {
                start: num("start")? as usize,
                end: num("end")? as usize,
                nr_accesses: num("nr_accesses")? as u32,
                age: num("age")? as u32,
            });
        }
        out.sort_by_key(|r| r.start);
        let _ = write(&self.dir.join("state"), "clear_schemes_tried_regions");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_is_checked_before_undo() {
        let t = tempfile::tempdir().unwrap();
        let k = t.path();
        std::fs::write(k.join("nr_kdamonds"), "0\n").unwrap();
        assert!(!is_ours(k, 42).unwrap());
        std::fs::write(k.join("nr_kdamonds"), "1\n").unwrap();
        // Created, killed before the target existed.
        std::fs::create_dir_all(k.join("0/contexts/0")).unwrap();
        assert!(is_ours(k, 42).unwrap());
        std::fs::create_dir_all(k.join("0/contexts/0/targets/0")).unwrap();
        std::fs::write(k.join("0/contexts/0/targets/0/pid_target"), "42\n").unwrap();
        assert!(is_ours(k, 42).unwrap());
        assert!(!is_ours(k, 43).unwrap(), "a kdamond watching another process is not ours");
        std::fs::write(k.join("nr_kdamonds"), "2\n").unwrap();
        assert!(!is_ours(k, 42).unwrap(), "a list of two was not made by pagelab");
    }

    #[test]
    fn a_list_of_someone_elses_is_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let sys = t.path();
        assert!(unavailable(sys).unwrap().contains("not in this kernel"));
        let k = kdamonds_dir(sys);
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("nr_kdamonds"), "1\n").unwrap();
        assert!(unavailable(sys).unwrap().contains("not pagelab's"));
        std::fs::write(k.join("nr_kdamonds"), "0\n").unwrap();
        assert_eq!(unavailable(sys), None);
    }
}
