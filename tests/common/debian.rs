//! Debian packages for the tests that use real programs (the VM test's kernels
//! and busybox; the fleet test's Prometheus, node_exporter and kubectl): fetched
//! with `apt-get download`, cached under target/, unpacked with `dpkg-deb -x`.
//! Nothing is installed on the machine, and no service is started.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// `target/<name>`, made if missing: where fetched packages are kept, so that a
/// second run needs no network.
pub fn cache_dir(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join(name);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// The newest package matching `pattern` (version sort), or the cached one.
pub fn package(cache: &Path, pattern: &str, prefix: &str) -> Result<PathBuf, String> {
    let cached = |cache: &Path| -> Option<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().to_string();
                n.starts_with(prefix) && n.ends_with("_amd64.deb") && !n.contains("-dbg")
            })
            .collect();
        v.sort();
        v.pop()
    };
    if let Some(p) = cached(cache) {
        return Ok(p);
    }
    let names = run(Command::new("apt-cache").args(["search", "--names-only", pattern]))?;
    let mut names: Vec<String> = names.lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect();
    if names.is_empty() {
        return Err(format!("no package matches {pattern} (apt-get update?)"));
    }
    names.sort_by_key(|a| version_key(a));
    let name = names.pop().unwrap();
    run(Command::new("apt-get").args(["download", "-q", &name]).current_dir(cache))
        .map_err(|e| format!("apt-get download {name}: {e}"))?;
    cached(cache).ok_or_else(|| format!("apt-get download {name} left no .deb in {}", cache.display()))
}

/// Numbers in a package name, for a version sort.
fn version_key(s: &str) -> Vec<u64> {
    s.split(|c: char| !c.is_ascii_digit()).filter(|x| !x.is_empty()).filter_map(|x| x.parse().ok()).collect()
}

pub fn unpack(deb: &Path, into: &Path) -> Result<(), String> {
    if into.join(".done").exists() {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(into);
    std::fs::create_dir_all(into).map_err(|e| e.to_string())?;
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(into))?;
    std::fs::write(into.join(".done"), "").map_err(|e| e.to_string())
}
