//! Processes as a whole: the process table (`/proc/<pid>/comm`), a process's
//! mappings (`/proc/<pid>/maps`) and memory cgroup (`/proc/<pid>/cgroup`), and
//! two machine-wide lists the workloads consult: the crypto API's compressors
//! (`/proc/crypto`) and the CPU's flags (`/proc/cpuinfo`). proc(5) and
//! Documentation/admin-guide/cgroup-v1/cgroups.rst describe the formats.

use crate::cgroup::CgroupVersion;
use crate::error::ParseError;

/// One entry of /proc/<pid>/pagemap (Documentation/admin-guide/mm/pagemap.rst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEntry(pub u64);

impl PageEntry {
    /// Bit 63: the page is in RAM.
    pub fn present(self) -> bool {
        self.0 & (1 << 63) != 0
    }
    /// Bit 62: the page is swapped out.
    pub fn swapped(self) -> bool {
        self.0 & (1 << 62) != 0
    }
    /// Bit 61: a file page or shared anonymous page.
    pub fn file_or_shared(self) -> bool {
        self.0 & (1 << 61) != 0
    }
}

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

/// One mapping of /proc/<pid>/smaps: its maps line and the sizes the kernel
/// counts in it, bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmapsEntry {
    pub map: MapEntry,
    pub rss: u64,
    /// Private anonymous pages (and copy-on-write copies of file pages).
    pub anonymous: u64,
    /// Pages whose accessed bit is set: touched since the last clear_refs (or
    /// since the kernel's reclaim last aged them).
    pub referenced: u64,
    pub swap: u64,
}

/// What kind of memory a mapping holds, as assess splits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemKind {
    Anon,
    File,
    Shmem,
}

impl MapEntry {
    /// Shared memory: a shared mapping of tmpfs, memfd, SysV shm or /dev/zero.
    pub fn is_shmem(&self) -> bool {
        !self.is_private()
            && (self.name.starts_with("/dev/shm/")
                || self.name.starts_with("/memfd:")
                || self.name.starts_with("/SYSV")
                || self.name.starts_with("/dev/zero")
                || self.name.is_empty()
                || self.name.starts_with("[anon"))
    }
}

/// Parses /proc/<pid>/smaps: a maps line, then `Key: value kB` lines, per mapping.
pub fn parse_smaps(text: &str) -> Result<Vec<SmapsEntry>, ParseError> {
    let mut out: Vec<SmapsEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        // A field line is `Name:   value [kB]`; a mapping line starts with hex-hex.
        let head = line.split(' ').next().unwrap_or("");
        if head.contains('-') && head.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            let map = parse_maps(line).map_err(|e| ParseError::new(i + 1, e.to_string()))?.remove(0);
            out.push(SmapsEntry { map, rss: 0, anonymous: 0, referenced: 0, swap: 0 });
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(ParseError::new(i + 1, format!("expected 'Key: value', found '{line}'")));
        };
        let Some(cur) = out.last_mut() else {
            return Err(ParseError::new(i + 1, "a field before any mapping line"));
        };
        let kib = || -> Result<u64, ParseError> {
            let v = v.trim().trim_end_matches("kB").trim();
            v.parse::<u64>().map(|x| x * 1024).map_err(|_| ParseError::new(i + 1, format!("'{k}': not a size: '{v}'")))
        };
        match k {
            "Rss" => cur.rss = kib()?,
            "Anonymous" => cur.anonymous = kib()?,
            "Referenced" => cur.referenced = kib()?,
            "Swap" => cur.swap = kib()?,
            _ => {}
        }
    }
    Ok(out)
}

impl SmapsEntry {
    /// The mapping's resident bytes by kind: anonymous pages are anon; the rest
    /// is shmem for a shared-memory mapping, file otherwise.
    pub fn split(&self) -> [(MemKind, u64); 3] {
        let rest = self.rss.saturating_sub(self.anonymous);
        let (file, shmem) = if self.map.is_shmem() { (0, rest) } else { (rest, 0) };
        [(MemKind::Anon, self.anonymous), (MemKind::File, file), (MemKind::Shmem, shmem)]
    }
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

    #[test]
    fn smaps_splits_mappings_and_sizes() {
        let text = "\
55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
Rss:                  12 kB
Anonymous:            12 kB
Referenced:            8 kB
Swap:                  4 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0000100000 r--p 00000000 fe:01 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 800 kB
Anonymous:             0 kB
Referenced:          400 kB
7f1000000000-7f1000400000 rw-s 00000000 00:01 99                         /memfd:pool (deleted)
Rss:                4096 kB
Anonymous:             0 kB
Referenced:         1024 kB
";
        let m = parse_smaps(text).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].rss, m[0].anonymous, m[0].referenced, m[0].swap), (12 << 10, 12 << 10, 8 << 10, 4 << 10));
        assert_eq!(m[0].map.name, "[heap]");
        assert_eq!(m[1].split()[1], (MemKind::File, 800 << 10));
        assert_eq!(m[2].split()[2], (MemKind::Shmem, 4096 << 10));
        assert!(parse_smaps("Rss: 4 kB\n").is_err(), "a field before a mapping");
        assert!(parse_smaps("55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0\nRss: lots kB\n").is_err());
    }
}
