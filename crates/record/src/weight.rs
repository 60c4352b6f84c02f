//! How much memory reading a record may take, whatever its files say.
//!
//! A file's size does not bound what parsing it costs: `[0,0,0,…]` is two
//! bytes an element in the file and 32 in a `serde_json::Value`, and `{}` in a
//! list of structs is three bytes in the file and the struct's size in memory.
//! So every JSON text pagelab reads from a run or lab directory is weighed
//! before it is parsed ([`estimate`], an upper bound of what parsing it
//! allocates), and what is kept is weighed after ([`Weigh`]). Both are charged
//! to one [`Budget`] per report: a lab whose files together would take more is
//! refused in one line, never read until an allocation fails (issue 46).

use crate::rundir::{Event, ReadError};
use probe::Sample;
use std::cell::Cell;
use std::path::Path;

/// What one report (a run or a lab, or both labs of `compare`) may hold of
/// its records. A quick lab's take a few MiB; a lab with thrash and jank
/// (`lab --budget 62m`) took about 98 MiB by these weights on 2026-12-02
/// (thrash's run.json 29 MiB by [`estimate`] and its samples thinned to 32
/// MiB, jank's 11 and about 20), past the 96 MiB this was until then, so its
/// report was refused. The bound is against crafted input, not real labs:
/// it leaves a real lab of every experiment at the full lab's scales room.
pub const READ_BUDGET: usize = 256 << 20;

// A lab with thrash and jank was refused at 96 MiB (2026-12-02): its two
// large runs weigh up to a thinned samples file each, run.json texts of 29
// and 11 MiB by the estimate, and events of a few hundred KiB. Two such runs
// with their samples at the cap, their run.json texts doubled and their
// events at 4 MiB, must fit with room for eight other steps of 4 MiB.
const _: () = assert!(READ_BUDGET >= 2 * MAX_FILE_WEIGHT + 2 * ((29 + 11) << 20) + 2 * (4 << 20) + 8 * (4 << 20));

/// What one line of a JSONL file may weigh before it is parsed (a real sample
/// weighs about 100 KiB by [`estimate`], and holds about 3 KiB).
pub const MAX_LINE_WEIGHT: usize = 8 << 20;

/// What the values kept from one JSONL file may weigh: past it the file is
/// thinned (every other value dropped) until they fit.
pub const MAX_FILE_WEIGHT: usize = 32 << 20;

/// What an object costs at most when parsed, beyond its fields: the largest
/// struct a record's lists hold (checked by a test) or a map's entries.
const PER_OBJECT: usize = 512;
/// What an array element or a map entry costs at most: a `Value` (32 bytes)
/// in a vector that may have doubled, or a map entry's key and node share.
const PER_ELEMENT: usize = 128;

/// An upper bound of the bytes parsing `json` allocates (into a `Value` or
/// into pagelab's record types): its length (strings) plus [`PER_OBJECT`] per
/// `{` and [`PER_ELEMENT`] per `[`, `,` and `:` outside strings. A scan, with
/// no allocation.
pub fn estimate(json: &[u8]) -> usize {
    let (mut objects, mut elements) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => objects += 1,
            b'[' | b',' | b':' => elements += 1,
            _ => {}
        }
    }
    json.len().saturating_add(objects.saturating_mul(PER_OBJECT)).saturating_add(elements.saturating_mul(PER_ELEMENT))
}

/// Bytes a value holds, its own size included (an estimate from sizes and
/// capacities; the allocator's rounding is not counted).
pub trait Weigh {
    fn weight(&self) -> usize;
}

/// What a heap block of `n` bytes takes at least (glibc's smallest chunk is
/// 32 bytes with its header): many small keys cost more than their length.
fn block(n: usize) -> usize {
    n.max(24) + 8
}

/// A key-to-counter table as parsed from a file: its keys (each its own
/// block), its values and the table itself.
fn counters(c: &probe::counters::Counters) -> usize {
    32 + c.iter().map(|(k, _)| size_of::<Box<str>>() + block(k.len()) + 8).sum::<usize>()
}

/// A map entry's share of a B-tree: its key and value in a node that may be
/// half empty (nodes hold 11 entries and split in two), plus the key's block.
fn map_entry(key: &str, value_size: usize) -> usize {
    2 * (size_of::<String>() + value_size) + block(key.len())
}

impl Weigh for Sample {
    /// Every allocation a parsed sample holds (a review found the first
    /// version counting the lists only: a 4 MiB cgroup path or 30 000
    /// meminfo keys a sample were charged a few hundred bytes).
    fn weight(&self) -> usize {
        use probe::sample::{PidSample, ZramSample};
        let tables = [self.meminfo.as_ref().map(|m| &m.0), self.vmstat.as_ref().map(|v| &v.0)];
        let mut w = size_of::<Sample>() + tables.into_iter().flatten().map(counters).sum::<usize>();
        if let Some(st) = &self.stat {
            w += st.cpus.capacity() * size_of::<probe::stat::CpuTimes>();
        }
        if let Some(c) = &self.cgroup {
            w += block(c.path.capacity()) + [&c.stat, &c.events].into_iter().flatten().map(counters).sum::<usize>();
        }
        w += self.pids.capacity() * size_of::<PidSample>();
        for p in &self.pids {
            if let Some(sr) = &p.smaps_rollup {
                w += sr.0.keys().map(|k| map_entry(k, 8)).sum::<usize>();
            }
        }
        w += self.zram.capacity() * size_of::<ZramSample>();
        w + self.zram.iter().filter_map(|z| z.comp_algorithm.as_ref()).map(|a| block(a.capacity())).sum::<usize>()
    }
}

impl Weigh for Event {
    fn weight(&self) -> usize {
        size_of::<Event>() + block(self.kind.capacity()) + block(self.name.capacity()) + value_weight(&self.detail)
    }
}

impl Weigh for serde_json::Value {
    fn weight(&self) -> usize {
        size_of::<serde_json::Value>() + value_weight(self)
    }
}

/// Bytes a `serde_json::Value` holds beyond its own 32.
pub fn value_weight(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::String(s) => block(s.capacity()),
        Value::Array(a) => a.capacity() * size_of::<Value>() + a.iter().map(value_weight).sum::<usize>(),
        Value::Object(m) => m.iter().map(|(k, x)| map_entry(k, size_of::<Value>()) + value_weight(x)).sum::<usize>(),
        _ => 0,
    }
}

/// The memory one report may still take for its records. Each text is
/// charged before it is parsed, each kept list after it is read.
#[derive(Debug)]
pub struct Budget {
    total: usize,
    used: Cell<usize>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(READ_BUDGET)
    }
}

impl Budget {
    pub fn new(total: usize) -> Self {
        Budget { total, used: Cell::new(0) }
    }

    /// Bytes still free.
    pub fn left(&self) -> usize {
        self.total.saturating_sub(self.used.get())
    }

    /// Takes `bytes` for `path`, or refuses: the file (with what was read
    /// before it) would take more memory than a report may.
    pub fn charge(&self, path: &Path, bytes: usize) -> Result<(), ReadError> {
        if bytes > self.left() {
            return Err(ReadError::Refused {
                path: path.to_path_buf(),
                why: format!(
                    "reading it would take about {} MiB{}, more than the {} MiB pagelab holds for one report's records \
                     (a real lab's take a few MiB, up to about 100 with thrash and jank)",
                    bytes.div_ceil(1 << 20),
                    match self.used.get() {
                        0 => String::new(),
                        u => format!(" beside the {} MiB already read", u.div_ceil(1 << 20)),
                    },
                    units::whole_mib(self.total as u64)
                ),
            });
        }
        self.used.set(self.used.get() + bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_bounds_what_parsing_allocates() {
        // Structure counts; text inside strings does not.
        assert_eq!(estimate(b"[0,0]"), 5 + 2 * PER_ELEMENT);
        assert_eq!(estimate(br#"{"a":"[,{:"}"#), 12 + PER_OBJECT + PER_ELEMENT);
        assert_eq!(estimate(br#"["\"[",1]"#), 9 + 2 * PER_ELEMENT);
        // A parsed Value never holds more than the estimate.
        for text in [
            format!("[{}0]", "0,".repeat(10_000)),
            format!("{{{}\"z\":0}}", (0..10_000).map(|i| format!("\"k{i}\":[],")).collect::<String>()),
            format!("[{}{{}}]", "{},".repeat(10_000)),
            format!("[{}\"\"]", "\"abc\",".repeat(10_000)),
        ] {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let held = size_of::<serde_json::Value>() + value_weight(&v);
            assert!(held <= estimate(text.as_bytes()), "{held} > {}", estimate(text.as_bytes()));
        }
    }

    #[test]
    fn every_struct_a_records_lists_hold_fits_the_per_object_bound() {
        // A list of `{}` costs a struct each: the bound must cover the largest.
        for (name, size) in [
            ("PidSample", size_of::<probe::sample::PidSample>()),
            ("ZramSample", size_of::<probe::sample::ZramSample>()),
            ("Event", size_of::<Event>()),
            ("Phase", size_of::<crate::rundir::Phase>()),
        ] {
            assert!(size <= PER_OBJECT, "{name} is {size} bytes, more than PER_OBJECT ({PER_OBJECT})");
        }
    }

    #[test]
    fn a_budget_refuses_what_would_pass_it_and_names_the_file() {
        let b = Budget::new(10 << 20);
        b.charge(Path::new("a/run.json"), 6 << 20).unwrap();
        let e = b.charge(Path::new("b/run.json"), 5 << 20).unwrap_err().to_string();
        assert!(e.starts_with("b/run.json: reading it would take about 5 MiB beside the 6 MiB already read"), "{e}");
        assert!(e.contains("10 MiB"), "{e}");
        assert_eq!(b.left(), 4 << 20, "a refused charge takes nothing");
        b.charge(Path::new("c"), 4 << 20).unwrap();
    }

    #[test]
    fn samples_and_events_weigh_what_they_hold() {
        let mut s = Sample::default();
        let empty = s.weight();
        s.pids = vec![Default::default(); 10];
        assert_eq!(s.weight(), empty + 10 * size_of::<probe::sample::PidSample>());
        // The tables and strings count: 30 000 meminfo keys, a 1 MiB cgroup path.
        let keys: Vec<String> = (0..30_000).map(|i| format!("k{i}")).collect();
        s.meminfo =
            Some(probe::meminfo::Meminfo(probe::counters::Counters::from_pairs(keys.iter().map(|k| (k.as_str(), 0)))));
        s.cgroup = Some(probe::cgroup::CgroupSample { path: "A".repeat(1 << 20), ..Default::default() });
        assert!(s.weight() > empty + 30_000 * 40 + (1 << 20), "{}", s.weight());
        let e = Event { t_ns: 1, kind: "info".into(), name: "x".into(), detail: serde_json::json!([1, 2, 3]) };
        assert!(e.weight() >= size_of::<Event>() + 3 * size_of::<serde_json::Value>() + 5);
    }
}
