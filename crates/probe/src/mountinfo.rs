//! `/proc/self/mountinfo` (proc(5)) and cgroup discovery from it.
//!
//! A line: `36 35 98:0 /root /mnt/point rw,noatime shared:1 - cgroup cgroup rw,memory`.
//! Fields before `-` are: mount id, parent id, major:minor, root, mount point, mount
//! options, then optional fields; after `-`: filesystem type, source, super options.

use crate::error::ParseError;
use crate::swaps::unescape_path;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub mount_point: String,
    pub root: String,
    pub fs_type: String,
    pub source: String,
    pub super_options: Vec<String>,
}

pub fn parse(text: &str) -> Result<Vec<Mount>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        let sep = f
            .iter()
            .position(|x| *x == "-")
            .ok_or_else(|| ParseError::new(n, format!("no ' - ' separator in '{line}'")))?;
        if sep < 6 || f.len() < sep + 3 {
            return Err(ParseError::new(n, format!("too few fields in '{line}'")));
        }
        out.push(Mount {
            root: unescape_path(f[3]),
            mount_point: unescape_path(f[4]),
            fs_type: f[sep + 1].to_string(),
            source: f[sep + 2].to_string(),
            super_options: f.get(sep + 3).map(|s| s.split(',').map(str::to_string).collect()).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Which cgroup hierarchies are mounted, as far as memory is concerned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupMounts {
    /// Mount point of the cgroup v1 hierarchy that has the memory controller.
    pub v1_memory: Option<String>,
    /// Mount point of the cgroup2 (unified) hierarchy.
    pub unified: Option<String>,
    /// Other v1 hierarchies (controllers joined by ','), for reporting.
    pub v1_other: Vec<String>,
}

impl CgroupMounts {
    pub fn from_mounts(mounts: &[Mount]) -> Self {
        let mut out = CgroupMounts::default();
        for m in mounts {
            match m.fs_type.as_str() {
                "cgroup2" if out.unified.is_none() => out.unified = Some(m.mount_point.clone()),
                "cgroup" => {
                    if m.super_options.iter().any(|o| o == "memory") {
                        out.v1_memory.get_or_insert_with(|| m.mount_point.clone());
                    } else {
                        out.v1_other.push(m.mount_point.clone());
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The cgroup layout as a user would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Only v1 hierarchies.
    V1,
    /// Only the unified hierarchy.
    V2,
    /// v1 controllers plus a unified mount (the memory controller may be on either).
    Hybrid,
    /// No cgroup filesystem mounted.
    None,
}

impl CgroupMounts {
    pub fn layout(&self) -> Layout {
        let v1 = self.v1_memory.is_some() || !self.v1_other.is_empty();
        match (v1, self.unified.is_some()) {
            (true, true) => Layout::Hybrid,
            (true, false) => Layout::V1,
            (false, true) => Layout::V2,
            (false, false) => Layout::None,
        }
    }
}
