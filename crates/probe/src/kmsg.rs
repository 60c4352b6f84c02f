//! The kernel log's memory-cgroup OOM reports, so that a run in which the
//! kernel killed a process can say why (which charge failed, in which group).
//!
//! Read from `/dev/kmsg` (one record per read, `PRI,SEQ,TS,FLAGS;message`), or
//! parsed from `dmesg` text (`[ ts] message`); both reduce to message lines.

/// One OOM kill in a memory cgroup, as the kernel reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OomReport {
    /// The group that ran out (`oom_memcg=` of the constraint line).
    pub memcg: String,
    /// The charge path that failed: the first `*charge*` frame of the call
    /// trace, e.g. `mem_cgroup_swapin_charge_folio`, and the frame that called it.
    pub charge: Option<String>,
    pub caller: Option<String>,
    /// The killed process, e.g. "9232 (pagelab)".
    pub killed: Option<String>,
}

impl OomReport {
    /// One line: "memcg OOM in /pagelab/x: mem_cgroup_swapin_charge_folio (from do_swap_page) failed; killed 9232 (pagelab)".
    pub fn line(&self) -> String {
        let mut s = format!("memcg OOM in {}", self.memcg);
        if let Some(c) = &self.charge {
            s += &format!(": {c}");
            if let Some(k) = &self.caller {
                s += &format!(" (from {k})");
            }
            s += " failed";
        }
        if let Some(k) = &self.killed {
            s += &format!("; killed {k}");
        }
        s
    }
}

/// The message part of a `/dev/kmsg` record or a `dmesg` line.
fn message(line: &str) -> &str {
    if let Some((head, msg)) = line.split_once(';') {
        if head.split(',').count() >= 3 && head.split(',').next().is_some_and(|p| p.parse::<u32>().is_ok()) {
            return msg;
        }
    }
    match line.trim_start().strip_prefix('[') {
        Some(rest) => rest.split_once(']').map(|(_, m)| m.trim_start()).unwrap_or(line),
        None => line,
    }
}

/// A call-trace frame's function name: " mem_cgroup_swapin_charge_folio+0x5d/0x150".
fn frame(msg: &str) -> Option<&str> {
    let f = msg.trim().trim_start_matches("? ");
    let (name, off) = f.split_once('+')?;
    (off.contains("/0x") && !name.contains(' ')).then_some(name)
}

/// Every memcg OOM report in `text` whose group path contains `memcg_part`.
pub fn oom_reports(text: &str, memcg_part: &str) -> Vec<OomReport> {
    let mut out = Vec::new();
    let mut cur: Option<(Option<String>, Option<String>)> = None;
    let mut pending: Option<OomReport> = None;
    let mut prev_frame: Option<String> = None;
    for line in text.lines() {
        let msg = message(line);
        if msg.contains("invoked oom-killer") {
            cur = Some((None, None));
            prev_frame = None;
            continue;
        }
        if let Some((charge, caller)) = cur.as_mut() {
            if let Some(f) = frame(msg) {
                if charge.is_some() && caller.is_none() && !f.contains("charge") {
                    *caller = Some(f.to_string());
                }
                if charge.is_none() && f.contains("charge") && !f.starts_with("try_charge") && f != "charge_memcg" {
                    *charge = Some(f.to_string());
                }
                prev_frame = Some(f.to_string());
            }
            if let Some(i) = msg.find("oom_memcg=") {
                let memcg = msg[i + 10..].split(',').next().unwrap_or("").to_string();
                let (charge, caller) = cur.take().unwrap_or_default();
                pending = Some(OomReport { memcg, charge, caller, killed: None });
            }
        }
        if msg.contains("Killed process") {
            if let Some(mut r) = pending.take() {
                r.killed = msg.split("Killed process ").nth(1).and_then(|s| {
                    let mut it = s.split_whitespace();
                    Some(format!("{} {}", it.next()?, it.next()?))
                });
                if r.memcg.contains(memcg_part) {
                    out.push(r);
                }
            }
        }
    }
    let _ = prev_frame;
    out
}

/// Reads the whole kernel log from `/dev/kmsg` without blocking (None without
/// the privilege to read it).
pub fn read_kmsg() -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg").ok()?;
    let mut out = String::new();
    let mut buf = vec![0u8; 8192];
    // Bounded: the ring buffer holds at most a few MiB.
    for _ in 0..200_000 {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.push_str(&String::from_utf8_lossy(&buf[..n]));
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            // EPIPE: a record was overwritten while reading; go on with the next.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Abridged from a real report on this project's VM (kernel 6.18, cgroup v1).
    const DMESG: &str = "[  313.976435] pagelab invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[  313.976483] Call Trace:
[  313.977139]  <TASK>
[  313.977312]  dump_stack_lvl+0x57/0x80
[  313.979576]  try_charge_memcg+0x422/0x6f0
[  313.979598]  charge_memcg+0x2f/0x90
[  313.979601]  mem_cgroup_swapin_charge_folio+0x5d/0x150
[  313.979603]  do_swap_page+0xe76/0x1470
[  313.979921]  ? __pfx_default_wake_function+0x10/0x10
[  313.980861] memory: usage 98304kB, limit 98304kB, failcnt 202934
[  313.981065] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/pagelab/thrash-9217-0,task_memcg=/pagelab/thrash-9217-0,task=pagelab,pid=9232,uid=0
[  313.981090] Memory cgroup out of memory: Killed process 9232 (pagelab) total-vm:51716kB, anon-rss:23552kB
";

    #[test]
    fn a_swapin_charge_oom_is_read_from_dmesg_text() {
        let r = oom_reports(DMESG, "thrash-9217");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].memcg, "/pagelab/thrash-9217-0");
        assert_eq!(r[0].charge.as_deref(), Some("mem_cgroup_swapin_charge_folio"));
        assert_eq!(r[0].caller.as_deref(), Some("do_swap_page"));
        assert_eq!(r[0].killed.as_deref(), Some("9232 (pagelab)"));
        assert!(r[0].line().contains("mem_cgroup_swapin_charge_folio (from do_swap_page) failed; killed 9232"));
        assert!(oom_reports(DMESG, "thrash-1-0").is_empty(), "another group's report is not ours");
    }

    #[test]
    fn kmsg_records_reduce_to_the_same_messages() {
        let kmsg: String = DMESG
            .lines()
            .enumerate()
            .map(|(i, l)| format!("6,{i},313976435,-;{}\n", l.split_once("] ").unwrap().1))
            .collect();
        assert_eq!(oom_reports(&kmsg, "thrash-9217"), oom_reports(DMESG, "thrash-9217"));
        assert!(oom_reports("garbage\n;;;\n[ 1.0 \n", "x").is_empty());
    }
}
