//! Processes as a whole: the process table (`/proc/<pid>/comm`), a process's
//! mappings (`/proc/<pid>/maps`) and memory cgroup (`/proc/<pid>/cgroup`), and
//! two machine-wide lists the workloads consult: the crypto API's compressors
//! (`/proc/crypto`) and the CPU's flags (`/proc/cpuinfo`). proc(5) and
//! Documentation/admin-guide/cgroup-v1/cgroups.rst describe the formats.

use crate::cgroup::CgroupVersion;
use crate::error::ParseError;

/// One line of /proc/<pid>/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    pub start: usize,
    pub end: usize,
    /// `rwxp` or `rwxs`, as the kernel prints it.
    pub perms: String,
    pub offset: u64,
    pub inode: u64,
    /// The backing file, `[heap]`, `[stack]`, `[vsyscall]`..., or empty (anonymous).
    pub name: String,
}

impl MapEntry {
    /// Private (copy-on-write or anonymous), as opposed to shared.
    pub fn is_private(&self) -> bool {
        self.perms.as_bytes().get(3) == Some(&b'p')
    }
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// Parses /proc/<pid>/maps: `start-end perms offset dev inode [name]`, the name
/// possibly holding spaces. A line that does not have that shape is an error.
pub fn parse_maps(text: &str) -> Result<Vec<MapEntry>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = || ParseError::new(n, format!("expected 'start-end perms offset dev inode [path]', found '{line}'"));
        let mut it = line.splitn(6, ' ');
        let (range, perms, offset, _dev, inode) = (
            it.next().ok_or_else(bad)?,
            it.next().ok_or_else(bad)?,
            it.next().ok_or_else(bad)?,
            it.next().ok_or_else(bad)?,
            it.next().ok_or_else(bad)?,
        );
        let (a, b) = range.split_once('-').ok_or_else(bad)?;
        let hex = |s: &str| usize::from_str_radix(s, 16).map_err(|_| bad());
        let (start, end) = (hex(a)?, hex(b)?);
        if perms.len() != 4 || end < start {
            return Err(bad());
        }
        out.push(MapEntry {
            start,
            end,
            perms: perms.to_string(),
            offset: u64::from_str_radix(offset, 16).map_err(|_| bad())?,
            inode: inode.parse().map_err(|_| bad())?,
            name: it.next().unwrap_or("").trim_start().to_string(),
        });
    }
    Ok(out)
}

/// The memory cgroup's path (relative to its hierarchy's root, with a leading
/// `/`) in /proc/<pid>/cgroup: on v1 the line whose controllers include
/// `memory`, on v2 the `0::` line. None where the file names none.
pub fn parse_proc_cgroup(text: &str, version: CgroupVersion) -> Option<String> {
    text.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let (_, ctrls, path) = (it.next()?, it.next()?, it.next()?);
        let hit = match version {
            CgroupVersion::V1 => ctrls.split(',').any(|c| c == "memory"),
            CgroupVersion::V2 => ctrls.is_empty(),
        };
        hit.then(|| path.to_string())
    })
}

/// The compression algorithms in /proc/crypto (types compression, scomp, acomp),
/// each once, in the file's order.
pub fn parse_crypto_compressors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let get = |k: &str| {
            block.lines().find_map(|l| {
                let (a, b) = l.split_once(':')?;
                (a.trim() == k).then(|| b.trim().to_string())
            })
        };
        if let (Some(name), Some(ty)) = (get("name"), get("type"))
            && matches!(ty.as_str(), "compression" | "scomp" | "acomp")
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// The first CPU's flags in /proc/cpuinfo (x86 `flags`, arm64 `Features`).
pub fn parse_cpu_flags(text: &str) -> Vec<String> {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "flags" | "Features").then(|| v.split_whitespace().map(String::from).collect())
        })
        .unwrap_or_default()
}

/// A process in the process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: i32,
    /// /proc/<pid>/comm, trimmed.
    pub comm: String,
    /// VmRSS, bytes (0 for kernel threads).
    pub rss: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a28000 r--p 00000000 fe:01 1835066                    /usr/bin/cat
55d0c1d8e000-55d0c1daf000 rw-p 00000000 00:00 0                          [heap]
7f1e2c000000-7f1e2c021000 rw-s 00000000 00:01 2049                       /memfd:pagelab (deleted)
7f1e2c400000-7f1e2c500000 rw-p 00000000 00:00 0 
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn maps_lines_with_and_without_names() {
        let m = parse_maps(MAPS).unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].name, "/usr/bin/cat");
        assert_eq!(m[0].inode, 1835066);
        assert_eq!(m[1].name, "[heap]");
        assert_eq!(m[1].len(), 0x21000);
        assert!(!m[2].is_private() && m[2].name == "/memfd:pagelab (deleted)", "{:?}", m[2]);
        assert!(m[3].is_private() && m[3].name.is_empty());
        assert_eq!(m[4].name, "[vsyscall]");
    }

    #[test]
    fn maps_refuse_what_is_not_maps() {
        for bad in ["zzzz-1000 rw-p 0 00:00 0", "1000-2000 rw-p", "2000-1000 rw-p 0 00:00 0", "1000-2000 rw 0 00:00 0"]
        {
            let e = parse_maps(bad).unwrap_err();
            assert_eq!(e.line, 1, "{bad}");
        }
    }

    #[test]
    fn proc_cgroup_by_version() {
        let v1 = "12:memory:/system.slice/ssh.service\n11:cpu,cpuacct:/\n0::/system.slice/ssh.service\n";
        assert_eq!(parse_proc_cgroup(v1, CgroupVersion::V1).as_deref(), Some("/system.slice/ssh.service"));
        assert_eq!(parse_proc_cgroup("0::/user.slice\n", CgroupVersion::V2).as_deref(), Some("/user.slice"));
        assert_eq!(parse_proc_cgroup("0::/user.slice\n", CgroupVersion::V1), None);
        // A controller list that merely contains "memory" as a substring is not it.
        assert_eq!(parse_proc_cgroup("3:memory_x:/a\n", CgroupVersion::V1), None);
    }

    #[test]
    fn crypto_and_cpu_flags() {
        let crypto = "name         : lz4\ndriver       : lz4-scomp\ntype         : scomp\n\n\
                      name         : sha256\ntype         : shash\n\n\
                      name         : lz4\ntype         : compression\n\n\
                      name         : deflate\ntype         : acomp\n";
        assert_eq!(parse_crypto_compressors(crypto), ["lz4", "deflate"]);
        let cpu = "processor\t: 0\nflags\t\t: fpu constant_tsc nonstop_tsc\n\nprocessor\t: 1\nflags\t\t: fpu\n";
        assert_eq!(parse_cpu_flags(cpu), ["fpu", "constant_tsc", "nonstop_tsc"]);
        assert_eq!(parse_cpu_flags("Features\t: fp asimd\n"), ["fp", "asimd"]);
        assert!(parse_cpu_flags("").is_empty());
    }
}
