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
    /// A figure the claim rests on has a CV above 5 % (or a single repeat).
    Unstable,
    /// The study's protocol did not hold in this run (e.g. a consumer was OOM-killed).
    OutsideProtocol,
    NotChecked,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Matches => "matches",
            Outcome::Differs => "differs",
            Outcome::Unstable => "unstable",
            Outcome::OutsideProtocol => "outside the protocol",
            Outcome::NotChecked => "not checked",
        }
    }
}

/// What a verdict rests on, besides the comparison itself.
#[derive(Debug, Clone)]
pub struct Basis<'a> {
    /// The figures the claim compares (each with its repeats).
    pub figures: Vec<Option<&'a Metric>>,
    /// Err(why) when the study's protocol did not hold in this run.
    pub protocol: Result<(), String>,
    /// Err(why) when this run's configuration cannot test the claim at all.
    pub tested: Result<(), String>,
}

/// The verdict rules, in order (docs/stability.md):
/// 1. the protocol broke → outside the protocol;
/// 2. the run's configuration cannot test the claim → not checked;
/// 3. a figure is missing → not checked;
/// 4. a figure has one repeat, or a CV above [`record::stats::CV_STABLE`] (and
///    a spread above its metric's absolute resolution) → unstable;
/// 5. otherwise matches or differs, as the comparison says.
pub fn decide(b: &Basis, ok: Option<bool>) -> (Outcome, Option<String>) {
    if let Err(why) = &b.protocol {
        return (Outcome::OutsideProtocol, Some(why.clone()));
    }
    if let Err(why) = &b.tested {
        return (Outcome::NotChecked, Some(why.clone()));
    }
    if b.figures.iter().any(Option::is_none) || ok.is_none() {
        return (Outcome::NotChecked, Some("this run did not measure it".into()));
    }
    let shaky: Vec<String> = b
        .figures
        .iter()
        .flatten()
        .filter(|m| !m.stable())
        .map(|m| match m.cv() {
            None => format!("{} {}: n = 1, no spread to judge", m.group, m.name),
            Some(c) => format!("{} {}: CV {:.1} % over n = {}", m.group, m.name, 100.0 * c, m.values.len()),
        })
        .collect();
    if !shaky.is_empty() {
        return (Outcome::Unstable, Some(format!("{} (a verdict needs CV ≤ 5 %)", shaky.join("; "))));
    }
    match ok {
        Some(true) => (Outcome::Matches, None),
        _ => (Outcome::Differs, None),
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

struct Ms<'a> {
    all: &'a [Metric],
    /// Err(why) when the run broke the study's protocol.
    protocol: Result<(), String>,
}

/// `group` names a configuration: "e2" is also "e2-custom" and "e2 lz4".
fn group_is(g: &str, want: &str) -> bool {
    g == want || g.starts_with(&format!("{want} ")) || g.starts_with(&format!("{want}-"))
}

impl<'a> Ms<'a> {
    fn metric(&self, group: &str, name: &str) -> Option<&'a Metric> {
        self.all.iter().find(|m| group_is(&m.group, group) && m.name == name)
    }
    /// The median of `name` in the first group that is `group`.
    fn get(&self, group: &str, name: &str) -> Option<f64> {
        self.metric(group, name)?.median()
    }
    fn basis(&self, figures: Vec<Option<&'a Metric>>) -> Basis<'a> {
        Basis { figures, protocol: self.protocol.clone(), tested: Ok(()) }
    }
}

/// Builds one verdict under the rules of [`decide`].
fn judge(
    claim: &'static str,
    study: &'static str,
    ours: String,
    basis: Basis,
    ok: Option<bool>,
    yes: &str,
    no: &str,
) -> Verdict {
    let (outcome, why) = decide(&basis, ok);
    let why = match (outcome, why) {
        (_, Some(w)) => w,
        (Outcome::Matches, None) => yes.to_string(),
        (_, None) => no.to_string(),
    };
    let shown = matches!(outcome, Outcome::NotChecked) && ours.is_empty();
    Verdict { claim, study, ours: if shown { "-".into() } else { ours }, outcome, why }
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
    let m = Ms { all: &all, protocol: protocol(experiment, results) };
    match experiment {
        "eat" => eat(&m, results),
        "wscap" => wscap(&m),
        "heap" => heap(&m),
        "mapping" => mapping(&m),
        "thrash" => thrash(&m),
        _ => Vec::new(),
    }
}

/// Whether a run kept the study's protocol. thrash: every consumer completed
/// and none was OOM-killed, in every repeat (Maziero et al. checked each
/// allocation and the system logs after each run).
pub fn protocol(experiment: &str, results: &[Value]) -> Result<(), String> {
    if experiment != "thrash" {
        return Ok(());
    }
    let mut why = Vec::new();
    for r in results.iter().filter_map(|r| r.get("result")) {
        let name =
            format!("{} repeat {}", r["preset"].as_str().unwrap_or("?"), r["repeat_index"].as_u64().unwrap_or(0) + 1);
        let breaks: Vec<String> = match r["protocol_breaks"].as_array() {
            Some(b) => b.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
            // Runs recorded before the protocol field: judge from the counts.
            None => {
                let (n, done, oom) = (
                    r["consumers"].as_u64().unwrap_or(0),
                    r["consumers_completed"].as_u64().unwrap_or(0),
                    r["oom_kills"].as_u64().unwrap_or(0),
                );
                let mut b = Vec::new();
                if oom > 0 {
                    b.push(format!("{oom} consumer(s) OOM-killed"));
                }
                if done < n {
                    b.push(format!("{} of {n} consumers did not complete", n - done));
                }
                b
            }
        };
        if !breaks.is_empty() {
            why.push(format!("{name}: {}", breaks.join("; ")));
        }
    }
    if why.is_empty() { Ok(()) } else { Err(why.join(" / ")) }
}

fn eat(m: &Ms, results: &[Value]) -> Vec<Verdict> {
    let stored = results.iter().any(|r| r["stored_fraction"].as_f64().is_some());
    let frac_m = |p: &str| if stored { m.metric(p, "stored fraction") } else { None };
    let frac = |p: &str| frac_m(p).and_then(Metric::median);
    let trim_m = |p: &str| m.metric(p, "trim µs/page");
    let trim = |p: &str| m.get(p, "trim µs/page");
    let read_m = |p: &str| m.metric(p, "read-back µs/page");
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
        judge(
            "the semi pattern compresses to about a fifth",
            "0.20",
            f3(frac("semi")),
            m.basis(vec![frac_m("semi")]),
            frac("semi").map(|x| (0.1..=0.35).contains(&x)),
            "both stores find the same redundancy in 20-byte blocks",
            "the compressor here finds more or less redundancy than Windows' Xpress in 20-byte blocks",
        ),
        judge(
            "constant pages cost almost nothing to store",
            "0.0046",
            f3(frac("const")),
            m.basis(vec![frac_m("const")]),
            frac("const").map(|x| x < 0.01),
            "zram keeps a page of one repeated value as a 'same page' with no data at all, even less than Windows",
            "the store here does not detect same-value pages",
        ),
        judge(
            "random data does not compress",
            "slightly above 1",
            f3(frac("random")),
            m.basis(vec![frac_m("random")]),
            frac("random").map(|x| x >= 0.95),
            "incompressible pages are stored as they are",
            "the store reports less than the data trimmed: check that every page reached swap",
        ),
        judge(
            "trimming random data takes about twice as long as semi",
            "about 2",
            rs.map(|x| format!("{x:.2}")).unwrap_or_default(),
            m.basis(vec![trim_m("random"), trim_m("semi")]),
            rs.map(|x| x >= 1.5),
            "compressing incompressible data costs the most, as on Windows",
            "this compressor gives up on incompressible pages faster than it compresses the semi pattern, \
             so random pages are the cheaper ones here; Xpress on Windows paid more for them",
        ),
        judge(
            "trimming constant data takes about half the time of semi",
            "about 0.5",
            cs.map(|x| format!("{x:.2}")).unwrap_or_default(),
            m.basis(vec![trim_m("const"), trim_m("semi")]),
            cs.map(|x| x < 0.8),
            "same-value pages need no compression at all",
            "on this machine the per-page cost of the swap path outweighs the compression saved",
        ),
        judge(
            "reading back costs about the same for every pattern",
            "similar",
            spread.map(|x| format!("slowest ÷ fastest = {x:.2}")).unwrap_or_default(),
            m.basis(vec![read_m("random"), read_m("semi"), read_m("const")]),
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
    let periodic: Vec<(&str, f64, &Metric)> = ["periodic-pageout", "periodic-cold", "periodic-reclaim"]
        .iter()
        .filter_map(|p| {
            let x = m.metric(p, "scans/s")?;
            ratio(none, x.median()).map(|s| (*p, s, x))
        })
        .collect();
    let worst = periodic.iter().map(|(_, s, _)| *s).fold(0.0, f64::max);
    let mut both = vec![m.metric("none", "scans/s"), m.metric("cap-max", "scans/s")];
    both.extend(periodic.iter().map(|p| Some(p.2)));
    vec![
        judge(
            "a cap at half the working set slows scanning by orders of magnitude",
            "about 250×, sometimes 800×",
            slow.map(|x| format!("{x:.0}×")).unwrap_or_default(),
            m.basis(vec![m.metric("none", "scans/s"), m.metric("cap-max", "scans/s")]),
            slow.map(|x| x >= 25.0),
            "every scan faults the capped half back in from (compressed) swap, one page at a time",
            "the cap here costs far less: the swap-in path is much cheaper on this machine than the study's",
        ),
        judge(
            "trimming periodically costs far less than a cap",
            "argued, not measured",
            periodic.iter().map(|(p, s, _)| format!("{p} {s:.2}×")).collect::<Vec<_>>().join(", "),
            m.basis(both),
            (slow.is_some() && !periodic.is_empty()).then(|| worst * 10.0 < slow.unwrap_or(0.0)),
            "a periodic trim pays the refaults once per period, a cap pays them on every scan",
            "a periodic trim cost nearly as much as the cap here",
        ),
    ]
}

fn heap(m: &Ms) -> Vec<Verdict> {
    let alloc: Vec<(&str, u64, &Metric)> = m
        .all
        .iter()
        .filter(|x| x.name == "alloc ns")
        .filter_map(|x| {
            let (name, threads) = x.group.rsplit_once(" ×")?;
            Some((name, threads.parse().ok()?, x))
        })
        .collect();
    let most = alloc.iter().map(|a| a.1).max();
    let at = |who: &str, t: Option<u64>| alloc.iter().find(|a| a.0.starts_with(who) && Some(a.1) == t).map(|a| a.2);
    let med = |x: Option<&Metric>| x.and_then(Metric::median);
    let (g1, gm) = (at("glibc", Some(1)), at("glibc", most));
    let grow = match (med(g1), med(gm)) {
        (Some(a), Some(b)) if most > Some(1) => Some((a, b)),
        _ => None,
    };
    let best_other = alloc
        .iter()
        .filter(|a| !a.0.starts_with("glibc") && Some(a.1) == most)
        .filter(|a| a.2.median().is_some())
        .min_by(|a, b| a.2.median().unwrap_or(f64::MAX).total_cmp(&b.2.median().unwrap_or(f64::MAX)));
    let mut growth = m.basis(vec![g1, gm]);
    if most <= Some(1) {
        growth.tested = Err("the run had one thread count; growth needs several".into());
    }
    vec![
        judge(
            "time per call grows with the thread count",
            "default heap: 121 → 2717 ms per 1M allocations from 1 to 128 threads",
            grow.map(|(a, b)| format!("glibc: {a:.1} → {b:.1} ns per allocation, 1 → {} threads", most.unwrap_or(0)))
                .unwrap_or_default(),
            growth,
            grow.map(|(a, b)| b > 1.5 * a),
            "contention and preemption inside calls grow once threads outnumber cores",
            "the sweep did not go far enough past the core count for contention to show",
        ),
        judge(
            "a heap built for concurrency beats the default heap with many threads",
            "lock-free heap 1475 against default 2717 ms per 1M at 128 threads",
            match (best_other, med(gm)) {
                (Some(o), Some(g)) => {
                    format!("{} {:.1} against glibc {g:.1} ns at {} threads", o.0, o.2.median().unwrap_or(0.0), o.1)
                }
                _ => String::new(),
            },
            m.basis(vec![best_other.map(|o| o.2), gm]),
            match (best_other.and_then(|o| o.2.median()), med(gm)) {
                (Some(o), Some(g)) => Some(o < g),
                _ => None,
            },
            "per-thread caches avoid the shared arena locks",
            "glibc's per-thread arenas kept up at this thread count",
        ),
    ]
}

fn mapping(m: &Ms) -> Vec<Verdict> {
    let tm = |meth: &str| m.metric(meth, "total ms");
    let t = |meth: &str| m.get(meth, "total ms");
    let (mm, dn, fr, fd) = (t("mmap-munmap"), t("dontneed"), t("free"), t("memfd"));
    let both = |a: Option<f64>, b: Option<f64>| a.zip(b);
    let cheapest = match (mm, dn, fr, fd) {
        (Some(a), Some(b), Some(c), Some(d)) => Some(a <= b.min(c).min(d)),
        _ => None,
    };
    vec![
        judge(
            "a lazy reset (MEM_RESET, MADV_FREE) is cheaper than decommitting (MEM_DECOMMIT, MADV_DONTNEED)",
            "77.3 against 116.8 ms",
            both(fr, dn).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("free"), tm("dontneed")]),
            both(fr, dn).map(|(a, b)| a < b),
            "a lazy release leaves the pages in place until memory is short, so touching them again is cheap",
            "the lazy release cost as much as the eager one here",
        ),
        judge(
            "allocating fresh and freeing (VirtualAlloc/VirtualFree, mmap/munmap) is the cheapest cycle",
            "64.4 ms, the lowest of the four",
            mm.map(|a| format!("{a:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("mmap-munmap"), tm("dontneed"), tm("free"), tm("memfd")]),
            cheapest,
            "creating and destroying mappings is cheap on both systems",
            "on Linux MADV_FREE and MADV_DONTNEED keep the mapping and avoid its setup and teardown, so they \
             beat a fresh mmap; on Windows decommit and re-commit were the slow path",
        ),
        judge(
            "shared-memory views cost more than private memory",
            "103.6 against 64.4 ms",
            both(fd, mm).map(|(a, b)| format!("{a:.1} against {b:.1} ms")).unwrap_or_default(),
            m.basis(vec![tm("memfd"), tm("mmap-munmap")]),
            both(fd, mm).map(|(a, b)| a > b),
            "shared pages go through the page cache (shmem) on both systems",
            "shared pages were as cheap as private ones here",
        ),
    ]
}

/// Maziero et al.'s three findings compare e2 with e1 (fewer writes), e3 (a
/// longer sleep) and e4 (a faster stagger); a run without that preset beside
/// e2 has not tested the finding.
fn thrash<'a>(m: &Ms<'a>) -> Vec<Verdict> {
    let has = |p: &str| m.all.iter().any(|x| group_is(&x.group, p));
    let need = |p: &str| -> Result<(), String> {
        if !has("e2") {
            Err("the findings compare against e2, which this run did not run".into())
        } else if !has(p) {
            Err(format!("this finding needs {p} beside e2; this run ran {}", presets(m)))
        } else {
            Ok(())
        }
    };
    let out = |p: &str| m.metric(p, "pages swapped out");
    let rate = |p: &str| m.metric(p, "swap-outs/s while active");
    let prog = m.metric("e2", "progress while overcommitted");
    let rec = m.metric("e2", "recovery s");
    let med = |x: Option<&Metric>| x.and_then(Metric::median);
    let cmp = |a: Option<&Metric>, b: Option<&Metric>, what: &str| match (med(a), med(b)) {
        (Some(x), Some(y)) => format!("{what} {x:.0} against {y:.0}"),
        _ => String::new(),
    };
    let with = |figures: Vec<Option<&'a Metric>>, p: &str| -> Basis<'a> {
        let mut b = m.basis(figures);
        b.tested = need(p);
        b
    };
    let mut deep = m.basis(vec![prog]);
    if !has("e2") {
        deep.tested = Err(format!("depth is judged on e2; this run ran {}", presets(m)));
    }
    vec![
        judge(
            "the consumers thrash deeply: they progress slowly",
            "deep thrashing by design (parameters chosen to reach it without exhausting memory)",
            med(prog)
                .map(|x| format!("e2: median progress while overcommitted {x:.2} (deep ≤ 0.5)"))
                .unwrap_or_default(),
            deep,
            med(prog).map(|x| x <= 0.5),
            "while memory was overcommitted the median consumer completed at most half the cycles it would have \
             unthrashed",
            "the consumers were slowed too little to call it deep thrashing (a fast store such as zram makes each fault cheap)",
        ),
        judge(
            "more writes per cycle mean more paging",
            "e2 (W = 10000) pages more than e1 (W = 1000)",
            cmp(out("e2"), out("e1"), "pages out: e2"),
            with(vec![out("e2"), out("e1")], "e1"),
            med(out("e2")).zip(med(out("e1"))).map(|(a, b)| a > b),
            "more writes touch more of each working set per cycle, so more of it must be paged in and out",
            "e1 paged as much as e2",
        ),
        judge(
            "a longer sleep means less paging",
            "e3 (t_s = 1 s) pages less than e2 (t_s = 0.1 s)",
            cmp(out("e3"), out("e2"), "pages out: e3"),
            with(vec![out("e3"), out("e2")], "e3"),
            med(out("e3")).zip(med(out("e2"))).map(|(a, b)| a < b),
            "longer sleeps spread the same writes over more time",
            "e3 paged as much as e2",
        ),
        judge(
            "a faster stagger means more aggressive thrashing",
            "e4 (t_c = 1 s) reaches a higher paging rate than e2 (t_c = 30 s)",
            cmp(rate("e4"), rate("e2"), "swap-outs/s while the consumers ran: e4"),
            with(vec![rate("e4"), rate("e2")], "e4"),
            med(rate("e4")).zip(med(rate("e2"))).map(|(a, b)| a > b),
            "consumers that start close together overcommit memory at once",
            "e4's consumers paged no faster than e2's while they ran",
        ),
        judge(
            "Linux recovers fastest once the load ends",
            "Linux recovered fastest of the four systems (seconds)",
            med(rec).map(|x| format!("e2: {x:.1} s")).unwrap_or_else(|| "did not recover in the window".into()),
            m.basis(vec![rec]),
            med(rec).map(|x| x <= 10.0),
            "paging and memory pressure fall back to the baseline within seconds after the last consumer exits",
            "paging or memory pressure stayed above the recovery rule's threshold after the load",
        ),
    ]
}

fn presets(m: &Ms) -> String {
    let mut g: Vec<&str> = m.all.iter().map(|x| x.group.as_str()).collect();
    g.dedup();
    if g.is_empty() { "none".into() } else { g.join(", ") }
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
        let one = vec![
            eat_result("random", 1.0, 10.0, 4.0),
            eat_result("semi", 0.21, 5.0, 4.5),
            eat_result("const", 0.0, 2.0, 4.2),
        ];
        // One repeat each: nothing to judge the spread by.
        let v = verdicts("eat", &one);
        assert!(v.iter().all(|x| x.outcome == Outcome::Unstable), "{v:?}");
        // Two repeats of the same figures: CV 0, judged.
        let rs: Vec<Value> = one.iter().chain(one.iter()).cloned().collect();
        let v = verdicts("eat", &rs);
        let by = |claim: &str| v.iter().find(|x| x.claim.contains(claim)).unwrap().outcome;
        assert_eq!(by("semi pattern"), Outcome::Matches);
        assert_eq!(by("twice as long"), Outcome::Matches);
        assert_eq!(by("reading back"), Outcome::Matches);
        let one = [
            eat_result("random", 1.0, 4.0, 4.0),
            eat_result("semi", 0.5, 5.0, 12.0),
            eat_result("const", 0.0, 2.0, 4.0),
        ];
        let rs: Vec<Value> = one.iter().chain(one.iter()).cloned().collect();
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
        let run = |t: u64, ns: &[f64], a: &str| {
            let runs: Vec<Value> = ns.iter().map(|x| json!({"alloc_ns_mean": x})).collect();
            json!({"result": {"allocator": a, "heap_mode": "default", "threads": t, "runs": runs}})
        };
        let v = verdicts("heap", &[run(1, &[40.0, 40.5], "glibc")]);
        assert_eq!(v[0].outcome, Outcome::NotChecked);
        assert!(v[0].why.contains("one thread count"), "{}", v[0].why);
        let v = verdicts(
            "heap",
            &[run(1, &[40.0, 40.4], "glibc"), run(8, &[400.0, 401.0], "glibc"), run(8, &[100.0, 101.0], "jemalloc")],
        );
        assert_eq!(v[0].outcome, Outcome::Matches);
        assert_eq!(v[1].outcome, Outcome::Matches);
        assert!(v[1].ours.contains("jemalloc"), "{}", v[1].ours);
    }

    fn metric(values: &[f64]) -> Metric {
        Metric {
            experiment: "x".into(),
            group: "g".into(),
            name: "m",
            unit: "",
            lower_is_better: true,
            values: values.to_vec(),
            resolution: 0.0,
        }
    }

    #[test]
    fn the_rules_apply_in_order() {
        let stable = metric(&[100.0, 101.0, 99.0]);
        let shaky = metric(&[100.0, 140.0, 70.0]);
        let single = metric(&[100.0]);
        fn b(f: Vec<Option<&Metric>>) -> Basis<'_> {
            Basis { figures: f, protocol: Ok(()), tested: Ok(()) }
        }
        // Stable figures: the comparison decides.
        assert_eq!(decide(&b(vec![Some(&stable)]), Some(true)).0, Outcome::Matches);
        assert_eq!(decide(&b(vec![Some(&stable)]), Some(false)).0, Outcome::Differs);
        // CV above 5 %, or one repeat: unstable, whatever the comparison says.
        let (o, why) = decide(&b(vec![Some(&stable), Some(&shaky)]), Some(true));
        assert_eq!(o, Outcome::Unstable);
        assert!(why.unwrap().contains("CV 34.0 %"), "the reason names the CV");
        let (o, why) = decide(&b(vec![Some(&single)]), Some(true));
        assert_eq!(o, Outcome::Unstable);
        assert!(why.unwrap().contains("n = 1"));
        // A missing figure: not checked.
        assert_eq!(decide(&b(vec![Some(&stable), None]), Some(true)).0, Outcome::NotChecked);
        // An untested claim beats instability; a broken protocol beats everything.
        let mut x = b(vec![Some(&shaky)]);
        x.tested = Err("needs e1".into());
        assert_eq!(decide(&x, Some(true)), (Outcome::NotChecked, Some("needs e1".into())));
        x.protocol = Err("consumer OOM-killed".into());
        assert_eq!(decide(&x, Some(true)).0, Outcome::OutsideProtocol);
    }

    #[test]
    fn a_near_zero_fraction_is_stable_within_its_resolution() {
        let mut m = metric(&[0.0001, 0.0003, 0.0002]);
        assert!(!m.stable(), "CV is 50 % without a resolution");
        m.resolution = 0.005;
        assert!(m.stable());
    }

    fn thrash_run(preset: &str, rep: u64, out: f64, peak: f64, progress: f64, breaks: &[&str]) -> Value {
        json!({"result": {"preset": preset, "repeat_index": rep, "consumers": 8, "consumers_completed": 8,
            "oom_kills": 0, "pswpout_total": out, "pswpout_per_s_active": peak, "progress_overcommitted_median": progress,
            "recovery_s": 1.0, "protocol_breaks": breaks}})
    }

    #[test]
    fn thrash_findings_need_their_presets_and_the_protocol() {
        // e2 alone (the old quick lab): no finding is tested, nothing "matches".
        let e2 = [thrash_run("e2", 0, 1e5, 5e3, 0.4, &[]), thrash_run("e2", 1, 1.01e5, 5.05e3, 0.41, &[])];
        let v = verdicts("thrash", &e2);
        let by = |v: &[Verdict], c: &str| v.iter().find(|x| x.claim.contains(c)).unwrap().outcome;
        for c in ["more writes", "longer sleep", "faster stagger"] {
            assert_eq!(by(&v, c), Outcome::NotChecked, "{c}");
        }
        assert_eq!(by(&v, "thrash deeply"), Outcome::Matches);
        // With e1, e3 and e4 beside e2 (custom-sized presets count too).
        let mut all = e2.to_vec();
        for (p, out, peak) in [("e1-custom", 2e4, 1e3), ("e3-custom", 3e4, 2e3), ("e4-custom", 6e4, 9e3)] {
            all.push(thrash_run(p, 0, out, peak, 0.9, &[]));
            all.push(thrash_run(p, 1, out * 1.01, peak * 1.01, 0.9, &[]));
        }
        let v = verdicts("thrash", &all);
        for c in ["more writes", "longer sleep", "faster stagger"] {
            assert_eq!(by(&v, c), Outcome::Matches, "{c}");
        }
        // One OOM-killed consumer in one repeat: every verdict is outside the protocol.
        all.push(thrash_run(
            "e2",
            2,
            1e5,
            5e3,
            0.4,
            &["1 consumer(s) OOM-killed by the kernel (memcg OOM in /pagelab/x)"],
        ));
        let v = verdicts("thrash", &all);
        assert!(v.iter().all(|x| x.outcome == Outcome::OutsideProtocol), "{v:?}");
        assert!(v[0].why.contains("e2 repeat 3") && v[0].why.contains("OOM"), "{}", v[0].why);
    }

    #[test]
    fn old_thrash_records_without_the_protocol_field_are_judged_from_their_counts() {
        let r = json!({"result": {"preset": "e2", "repeat_index": 0, "consumers": 12, "consumers_completed": 11, "oom_kills": 1}});
        let p = protocol("thrash", &[r]).unwrap_err();
        assert!(p.contains("1 consumer(s) OOM-killed") && p.contains("1 of 12"), "{p}");
        assert!(protocol("heap", &[]).is_ok());
    }
}
