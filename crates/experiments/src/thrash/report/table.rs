//! thrash's tables: each preset's repeats, median and CV as text, and the
//! study's findings as Markdown.

use super::*;

/// One headline metric of one preset, over its repeats.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Spread {
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub cv: Option<f64>,
    pub n: usize,
}

/// One preset's repeats, summarized (`thrash --json`'s `summary`).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct PresetSummary {
    pub preset: String,
    pub repeats: usize,
    pub consumers_completed: u64,
    pub consumers: u64,
    /// By headline metric's key.
    pub metrics: std::collections::BTreeMap<&'static str, Spread>,
}

/// Per preset: for each headline metric, the median across repeats, min, max and CV.
pub fn summary(rs: &[ThrashResult]) -> Vec<PresetSummary> {
    let mut out = Vec::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let mut metrics: std::collections::BTreeMap<&'static str, Spread> = Default::default();
        for Row { key, value, .. } in HEADLINE {
            let v: Vec<f64> = reps.iter().filter_map(|r| value(r)).collect();
            metrics.insert(
                key,
                Spread {
                    median: median(&v),
                    min: v.iter().cloned().reduce(f64::min),
                    max: v.iter().cloned().reduce(f64::max),
                    cv: cv(&v),
                    n: v.len(),
                },
            );
        }
        out.push(PresetSummary {
            preset: p.to_string(),
            repeats: reps.len(),
            consumers_completed: reps.iter().map(|r| u64::from(r.consumers_completed)).sum(),
            consumers: reps.iter().map(|r| u64::from(r.consumers)).sum(),
            metrics,
        });
    }
    out
}

fn fmt(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

pub fn text_table(rs: &[ThrashResult]) -> String {
    let mut s = String::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let first = reps[0];
        // As JSON prints them (5.0, not 5; null for a run without a plan).
        let plan = |f: fn(&Plan) -> Value| first.plan.as_ref().map(f).unwrap_or(Value::Null);
        let _ = writeln!(
            s,
            "preset {p}: {} consumers × {:.1} MiB in {:.1} MiB ({} backing), W={} t_s={} ms t_c={} ms, scale {}",
            plan(|p| json!(p.consumers)),
            units::mib(first.plan.as_ref().map_or(0, |p| p.size_bytes)),
            units::mib(first.limit_bytes),
            first.backing,
            plan(|p| json!(p.writes)),
            plan(|p| json!(p.sleep_ms)),
            plan(|p| json!(p.stagger_ms)),
            plan(|p| json!(p.scale))
        );
        let _ = write!(s, "{:<50}", "metric");
        for r in &reps {
            let _ = write!(s, " {:>9}", format!("run {}", r.repeat_index + 1));
        }
        let _ = writeln!(s, " {:>9} {:>7}", "median", "CV");
        let _ = write!(s, "{:<50}", "consumers completed");
        for r in &reps {
            let _ = write!(s, " {:>9}", format!("{}/{}", r.consumers_completed, r.consumers));
        }
        let _ = writeln!(s);
        for Row { label, value, .. } in HEADLINE {
            let v: Vec<Option<f64>> = reps.iter().map(|r| value(r)).collect();
            let _ = write!(s, "{label:<50}");
            for x in &v {
                let _ = write!(s, " {:>9}", fmt(*x));
            }
            let have: Vec<f64> = v.iter().flatten().copied().collect();
            let _ = writeln!(
                s,
                " {:>9} {:>7}",
                fmt(median(&have)),
                cv(&have).map(|c| format!("{:.0}%", c * 100.0)).unwrap_or("-".into())
            );
        }
        let window = |w: &Windows, which: &str| match which {
            "before" => w.before.clone(),
            "during" => w.during.clone(),
            _ => w.after.clone(),
        };
        for w in ["before", "during", "after"] {
            let _ = write!(s, "{:<50}", format!("probe p50/p99/max ms {w}: outside | inside"));
            for r in &reps {
                let (o, i) = (window(&r.probe_outside_ms, w), window(&r.probe_inside_ms, w));
                let _ = write!(
                    s,
                    "  {}/{}/{} | {}/{}/{}",
                    fmt(o.p50),
                    fmt(o.p99),
                    fmt(o.max),
                    fmt(i.p50),
                    fmt(i.p99),
                    fmt(i.max)
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s);
    }
    s
}

/// The study's findings, checked on this machine's runs by the verdict rules
/// ([`report::verdict`]): a finding is judged only when its presets ran beside
/// e2 and the protocol held, from its 95 % interval against its region.
pub fn findings_markdown(rs: &[ThrashResult]) -> String {
    let mut s =
        String::from("| the study found | the study | accepted | here (95 % CI) | verdict |\n|---|---|---|---|---|\n");
    for v in report::verdict::verdicts(&Thrash, &report::experiment::Parsed::of(rs.to_vec())) {
        let why = if v.why.is_empty() { String::new() } else { format!(": {}", v.why) };
        let _ =
            writeln!(s, "| {} | {} | {} | {} | {}{why} |", v.claim, v.study, v.acceptance, v.ours, v.outcome.word());
    }
    let _ = writeln!(
        s,
        "\nThe study (N = 25, S = 100 MB, 1 GB machines, Linux 2.6.35 among four systems) also found that Linux kept \
the most user CPU during the thrash and recovered fastest; here, CPU user % and recovery are in the table per preset. \
Its setups, as (W, t_s, t_c): {}.",
        STUDY.iter().map(|(p, w, ts, tc)| format!("{p} ({w}, {ts} ms, {tc} s)")).collect::<Vec<_>>().join(", ")
    );
    let _ = write!(s, "\n{}", protocol::markdown(rs));
    s
}
