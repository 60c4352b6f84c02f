//! Plain statements of what matches the published studies and what does not,
//! computed from a run's results: the top of each section of the lab report.

use crate::headline::{Metric, metrics};
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Matches,
    Differs,
    NotChecked,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Matches => "matches",
            Outcome::Differs => "differs",
            Outcome::NotChecked => "not checked",
        }
    }
}

/// One published observation, what this run measured, and whether they agree.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub claim: &'static str,
    pub study: &'static str,
    pub ours: String,
    pub outcome: Outcome,
    /// Why they agree or not, in a sentence.
    pub why: String,
}

/// The study each experiment reproduces.
pub fn study(experiment: &str) -> &'static str {
    match experiment {
        "eat" => "Mangan, Windows 10 memory compression (2016): 5 GB per pattern, 16 GB RAM",
        "wscap" => "Dawson, working-set caps on Windows: a 64 MiB scan under a 32 MiB cap",
        "heap" => "HeapPerf, Windows 7 default and lock-free heaps, 1 to 128 threads",
        "mapping" => "Gerstmann, Memory Mapping on Windows: 300 MiB regions on an i7-5960X",
        "thrash" => {
            "Maziero et al., thrashing on four OSes (Linux 2.6.35 among them): 25 consumers × 100 MB on 1 GB machines"
        }
        _ => "",
    }
}

struct Ms<'a>(&'a [Metric]);

impl Ms<'_> {
    /// The median of `name` in the first group that starts with `group`.
    fn get(&self, group: &str, name: &str) -> Option<f64> {
        self.0
            .iter()
            .find(|m| (m.group == group || m.group.starts_with(&format!("{group} "))) && m.name == name)?
            .median()
    }
}

fn v(claim: &'static str, study: &'static str, ours: String, ok: Option<bool>, yes: &str, no: &str) -> Verdict {
    let (outcome, why) = match ok {
        Some(true) => (Outcome::Matches, yes.to_string()),
        Some(false) => (Outcome::Differs, no.to_string()),
        None => (Outcome::NotChecked, "this run did not measure it".to_string()),
    };
    Verdict { claim, study, ours: if ok.is_none() { "-".into() } else { ours }, outcome, why }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The statements for one run of `experiment`.
pub fn verdicts(experiment: &str, results: &[Value]) -> Vec<Verdict> {
    let all = metrics(experiment, results);
    let m = Ms(&all);
    match experiment {
        "eat" => eat(&m, results),
        "wscap" => wscap(&m),
        "heap" => heap(&all),
        "mapping" => mapping(&m),
        "thrash" => thrash(&m),
        _ => Vec::new(),
    }
}

fn eat(m: &Ms, results: &[Value]) -> Vec<Verdict> {
    let stored = results.iter().any(|r| r["stored_fraction"].as_f64().is_some());
    let frac = |p: &str| if stored { m.get(p, "stored fraction") } else { None };
    let trim = |p: &str| m.get(p, "trim µs/page");
    let read = |p: &str| m.get(p, "read-back µs/page");
    let f3 = |x: Option<f64>| x.map(|x| format!("{x:.3}")).unwrap_or_default();
    let reads: Vec<f64> = ["random", "semi", "const"].iter().filter_map(|p| read(p)).collect();
    let spread = if reads.len() == 3 {
        Some(reads.iter().cloned().fold(0.0, f64::max) / reads.iter().cloned().fold(f64::INFINITY, f64::min))
    } else {
        None
    };
    let rs = ratio(trim("random"), trim("semi"));
    let cs = ratio(trim("const"), trim("semi"));
    vec![
        v(
            "the semi pattern compresses to about a fifth",
            "0.20",
            f3(frac("semi")),
            frac("semi").map(|x| (0.1..=0.35).contains(&x)),
            "both stores find the same redundancy in 20-byte blocks",
            "the compressor here finds more or less redundancy than Windows' Xpress in 20-byte blocks",
        ),
        v(
            "constant pages cost almost nothing to store",
            "0.0046",
            f3(frac("const")),
            frac("const").map(|x| x < 0.01),
            "zram keeps a page of one repeated value as a 'same page' with no data at all, even less than Windows",
            "the store here does not detect same-value pages",
        ),
        v(
            "random data does not compress",
            "slightly above 1",
            f3(frac("random")),
            frac("random").map(|x| x >= 0.95),
            "incompressible pages are stored as they are",
            "the store reports less than the data trimmed: check that every page reached swap",
        ),
        v(
            "trimming random data takes about twice as long as semi",
            "about 2",
            rs.map(|x| format!("{x:.2}")).unwrap_or_default(),
            rs.map(|x| x >= 1.5),
            "compressing incompressible data costs the most, as on Windows",
            "this compressor gives up on incompressible pages faster than it compresses the semi pattern, \
             so random pages are the cheaper ones here; Xpress on Windows paid more for them",
        ),
        v(
            "trimming constant data takes about half the time of semi",
            "about 0.5",
            cs.map(|x| format!("{x:.2}")).unwrap_or_default(),
            cs.map(|x| x < 0.8),
            "same-value pages need no compression at all",
            "on this machine the per-page cost of the swap path outweighs the compression saved",
        ),
        v(
            "reading back costs about the same for every pattern",
            "similar",
            spread.map(|x| format!("slowest ÷ fastest = {x:.2}")).unwrap_or_default(),
            spread.map(|x| x <= 2.0),
            "read-back is dominated by the fault path, not by decompression",
            "semi pages must be decompressed on every fault, while zram returns same-value and raw pages \
             without decompressing; the study saw no such difference",
        ),
    ]
}

fn wscap(m: &Ms) -> Vec<Verdict> {
    let cap = m.get("cap-max", "scans/s");
    let none = m.get("none", "scans/s");
    let slow = ratio(none, cap);
    let periodic: Vec<(&str, f64)> = ["periodic-pageout", "periodic-cold", "periodic-reclaim"]
        .iter()
        .filter_map(|p| ratio(none, m.get(p, "scans/s")).map(|s| (*p, s)))
        .collect();
    let worst = periodic.iter().map(|(_, s)| *s).fold(0.0, f64::max);
    vec![
        v(
            "a cap at half the working set slows scanning by orders of magnitude",
            "about 250×, sometimes 800×",
            slow.map(|x| format!("{x:.0}×")).unwrap_or_default(),
            slow.map(|x| x >= 25.0),
            "every scan faults the capped half back in from (compressed) swap, one page at a time",
            "the cap here costs far less: the swap-in path is much cheaper on this machine than the study's",
        ),
        v(
            "trimming periodically costs far less than a cap",
            "argued, not measured",
            periodic.iter().map(|(p, s)| format!("{p} {s:.2}×")).collect::<Vec<_>>().join(", "),
            (slow.is_some() && !periodic.is_empty()).then(|| worst * 10.0 < slow.unwrap_or(0.0)),
            "a periodic trim pays the refaults once per period, a cap pays them on every scan",
            "a periodic trim cost nearly as much as the cap here",
        ),
    ]
}

fn heap(all: &[Metric]) -> Vec<Verdict> {
    let alloc: Vec<(&str, u64, f64)> = all
        .iter()
        .filter(|m| m.name == "alloc ns")
        .filter_map(|m| {
            let (name, threads) = m.group.rsplit_once(" ×")?;
            Some((name, threads.parse().ok()?, m.median()?))
        })
        .collect();
    let most = alloc.iter().map(|a| a.1).max();
    let at = |who: &str, t: Option<u64>| alloc.iter().find(|a| a.0.starts_with(who) && Some(a.1) == t).map(|a| a.2);
    let grow = match (at("glibc", Some(1)), at("glibc", most)) {
        (Some(a), Some(b)) if most > Some(1) => Some((a, b)),
        _ => None,
    };
    let best_other =
        alloc.iter().filter(|a| !a.0.starts_with("glibc") && Some(a.1) == most).min_by(|a, b| a.2.total_cmp(&b.2));
    let glibc_most = at("glibc", most);
    vec![
        v(
            "time per call grows with the thread count",
            "default heap: 121 → 2717 ms per 1M allocations from 1 to 128 threads",
            grow.map(|(a, b)| format!("glibc: {a:.0} → {b:.0} ns per allocation, 1 → {} threads", most.unwrap_or(0)))
                .unwrap_or_default(),
            grow.map(|(a, b)| b > 1.5 * a),
            "contention and preemption inside calls grow once threads outnumber cores",
            "the sweep did not go far enough past the core count for contention to show",
        ),
        v(
            "a heap built for concurrency beats the default heap with many threads",
            "lock-free heap 1475 against default 2717 ms per 1M at 128 threads",
            match (best_other, glibc_most) {
                (Some(o), Some(g)) => format!("{} {:.0} against glibc {g:.0} ns at {} threads", o.0, o.2, o.1),
                _ => String::new(),
            },
            match (best_other, glibc_most) {
                (Some(o), Some(g)) => Some(o.2 < g),
                _ => None,
            },
            "per-thread caches avoid the shared arena locks",
            "glibc's per-thread arenas kept up at this thread count",
        ),
    ]
}

fn mapping(m: &Ms) -> Vec<Verdict> {
    let t = |meth: &str| m.get(meth, "total ms");
    let (mm, dn, fr, fd) = (t("mmap-munmap"), t("dontneed"), t("free"), t("memfd"));
    let both = |a: Option<f64>, b: Option<f64>| a.zip(b);
    let cheapest = match (mm, dn, fr, fd) {
        (Some(a), Some(b), Some(c), Some(d)) => Some(a <= b.min(c).min(d)),
        _ => None,
    };
    vec![
        v(
            "a lazy reset (MEM_RESET, MADV_FREE) is cheaper than decommitting (MEM_DECOMMIT, MADV_DONTNEED)",
            "77.3 against 116.8 ms",
            both(fr, dn).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            both(fr, dn).map(|(a, b)| a < b),
            "a lazy release leaves the pages in place until memory is short, so touching them again is cheap",
            "the lazy release cost as much as the eager one here",
        ),
        v(
            "allocating fresh and freeing (VirtualAlloc/VirtualFree, mmap/munmap) is the cheapest cycle",
            "64.4 ms, the lowest of the four",
            mm.map(|a| format!("{a:.1} ms")).unwrap_or_default(),
            cheapest,
            "creating and destroying mappings is cheap on both systems",
            "on Linux MADV_FREE and MADV_DONTNEED keep the mapping and avoid its setup and teardown, so they \
             beat a fresh mmap; on Windows decommit and re-commit were the slow path",
        ),
        v(
            "shared-memory views cost more than private memory",
            "103.6 against 64.4 ms",
            both(fd, mm).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            both(fd, mm).map(|(a, b)| a > b),
            "shared pages go through the page cache (shmem) on both systems",
            "shared pages were as cheap as private ones here",
        ),
    ]
}

fn thrash(m: &Ms) -> Vec<Verdict> {
    let groups: Vec<&str> = {
        let mut g: Vec<&str> = m.0.iter().map(|x| x.group.as_str()).collect();
        g.dedup();
        g
    };
    let first = groups.first().copied().unwrap_or("e2");
    let rec = m.get(first, "recovery s");
    let peak = m.get(first, "peak swap-outs/s");
    let progress = m.get(first, "progress ratio median");
    vec![
        v(
            "the working sets exceed memory and the system pages heavily",
            "continuous paging while all consumers run",
            peak.map(|x| format!("{first}: peak {x:.0} swap-outs/s")).unwrap_or_default(),
            peak.map(|x| x >= 1000.0),
            "the consumers' cgroup holds 40 % of what they touch, as the study's RAM did",
            "the consumers fitted in their cgroup: little paging happened",
        ),
        v(
            "Linux recovers fastest once the load ends",
            "Linux recovered fastest of the four systems (seconds)",
            rec.map(|x| format!("{first}: {x:.1} s")).unwrap_or_else(|| "did not recover in the window".into()),
            if peak.is_some() { Some(rec.is_some_and(|x| x <= 10.0)) } else { None },
            "paging and memory pressure fall back to the baseline within seconds after the last consumer exits",
            "paging or memory pressure stayed above the recovery rule's threshold after the load",
        ),
        v(
            "consumers keep making progress while thrashing",
            "Linux kept the most user CPU during the thrash",
            progress.map(|x| format!("{first}: median progress ratio {x:.2}")).unwrap_or_default(),
            progress.map(|x| x >= 0.5),
            "the consumers completed most of their planned cycles on time",
            "the consumers fell far behind their planned cycles",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eat_result(pattern: &str, frac: f64, trim: f64, read: f64) -> Value {
        json!({"pattern": pattern, "backing": "zram", "compressor": "lz4", "stored_fraction": frac,
               "trim_us_per_page": trim, "restore_us_per_page": read})
    }

    #[test]
    fn eat_statements_follow_the_numbers() {
        let rs = vec![
            eat_result("random", 1.0, 10.0, 4.0),
            eat_result("semi", 0.21, 5.0, 4.5),
            eat_result("const", 0.0, 2.0, 4.2),
        ];
        let v = verdicts("eat", &rs);
        let by = |claim: &str| v.iter().find(|x| x.claim.contains(claim)).unwrap().outcome;
        assert_eq!(by("semi pattern"), Outcome::Matches);
        assert_eq!(by("twice as long"), Outcome::Matches);
        assert_eq!(by("reading back"), Outcome::Matches);
        let rs = vec![
            eat_result("random", 1.0, 4.0, 4.0),
            eat_result("semi", 0.5, 5.0, 12.0),
            eat_result("const", 0.0, 2.0, 4.0),
        ];
        let v = verdicts("eat", &rs);
        let by = |claim: &str| v.iter().find(|x| x.claim.contains(claim)).unwrap().outcome;
        assert_eq!(by("semi pattern"), Outcome::Differs);
        assert_eq!(by("twice as long"), Outcome::Differs);
        assert_eq!(by("reading back"), Outcome::Differs);
    }

    #[test]
    fn without_a_store_eat_checks_no_fractions() {
        let rs = vec![json!({"pattern": "semi", "backing": "none", "trim_us_per_page": 1.0})];
        let v = verdicts("eat", &rs);
        assert_eq!(v.iter().find(|x| x.claim.contains("semi pattern")).unwrap().outcome, Outcome::NotChecked);
    }

    #[test]
    fn heap_growth_needs_more_than_one_thread_count() {
        let run = |t: u64, ns: f64, a: &str| json!({"result": {"allocator": a, "heap_mode": "default", "threads": t, "runs": [{"alloc_ns_mean": ns}]}});
        let v = verdicts("heap", &[run(1, 40.0, "glibc")]);
        assert_eq!(v[0].outcome, Outcome::NotChecked);
        let v = verdicts("heap", &[run(1, 40.0, "glibc"), run(8, 400.0, "glibc"), run(8, 100.0, "jemalloc")]);
        assert_eq!(v[0].outcome, Outcome::Matches);
        assert_eq!(v[1].outcome, Outcome::Matches);
        assert!(v[1].ours.contains("jemalloc"), "{}", v[1].ours);
    }
}
