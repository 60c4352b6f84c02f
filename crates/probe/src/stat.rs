//! `/proc/stat`: CPU time in clock ticks (USER_HZ) per CPU and in total, context
//! switches, and runnable/blocked task counts (proc(5)).

use crate::error::ParseError;
use crate::util::parse_u64;
use serde::{Deserialize, Serialize};

/// Cumulative CPU time in USER_HZ ticks (normally 1/100 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// All ticks (guest time is already included in user and nice).
    pub fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// The parts of /proc/stat pagelab uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// The aggregate "cpu" line.
    pub total: CpuTimes,
    /// One entry per "cpuN" line, in file order.
    pub cpus: Vec<CpuTimes>,
    /// Context switches since boot.
    pub ctxt: u64,
    /// Tasks currently runnable.
    pub procs_running: u64,
    /// Tasks currently blocked on I/O.
    pub procs_blocked: u64,
}

fn parse_cpu(fields: &[&str], n: usize) -> Result<CpuTimes, ParseError> {
    // Old kernels had only 4 fields; steal arrived in 2.6.11. Missing ones are 0.
    if fields.len() < 4 {
        return Err(ParseError::new(n, format!("cpu line has {} fields, expected at least 4", fields.len())));
    }
    let mut v = [0u64; 8];
    for (slot, f) in v.iter_mut().zip(fields.iter()) {
        *slot = parse_u64(f, n, "cpu time")?;
    }
    Ok(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
    })
}

pub fn parse(text: &str) -> Result<Stat, ParseError> {
    let mut stat = Stat::default();
    let mut saw_total = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        let rest: Vec<&str> = it.collect();
        match key {
            "cpu" => {
                stat.total = parse_cpu(&rest, n)?;
                saw_total = true;
            }
            k if k.starts_with("cpu") && k[3..].bytes().all(|b| b.is_ascii_digit()) => {
                stat.cpus.push(parse_cpu(&rest, n)?)
            }
            "ctxt" | "procs_running" | "procs_blocked" => {
                let [v] = rest.as_slice() else {
                    return Err(ParseError::new(n, format!("{key}: expected one value, found '{line}'")));
                };
                let v = parse_u64(v, n, key)?;
                match key {
                    "ctxt" => stat.ctxt = v,
                    "procs_running" => stat.procs_running = v,
                    _ => stat.procs_blocked = v,
                }
            }
            _ => {}
        }
    }
    if !saw_total {
        return Err(ParseError::new(0, "no aggregate 'cpu' line"));
    }
    Ok(stat)
}
