//! thrash's charts like the study's, raw and smoothed (moving average,
//! Bézier), with the min..max band across repeats; PSI and the probes.

use super::*;

/// Centred moving average over `k` points (shorter at the ends).
pub fn moving_average(v: &[(f64, f64)], k: usize) -> Vec<(f64, f64)> {
    let h = k / 2;
    (0..v.len())
        .map(|i| {
            let lo = i.saturating_sub(h);
            let hi = (i + h + 1).min(v.len());
            let ys: Vec<f64> = v[lo..hi].iter().map(|p| p.1).collect();
            (v[i].0, record::stats::mean(&ys).unwrap_or(f64::NAN))
        })
        .collect()
}

/// One Bézier curve through `n_out` parameter steps with every point as a control
/// point (de Casteljau).
pub fn bezier(v: &[(f64, f64)], n_out: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = v.iter().copied().filter(|p| p.1.is_finite()).collect();
    if pts.len() < 3 {
        return pts;
    }
    let mut buf = pts.clone();
    (0..n_out)
        .map(|j| {
            let t = j as f64 / (n_out - 1).max(1) as f64;
            buf.copy_from_slice(&pts);
            for level in (1..buf.len()).rev() {
                for i in 0..level {
                    buf[i] = (buf[i].0 + t * (buf[i + 1].0 - buf[i].0), buf[i].1 + t * (buf[i + 1].1 - buf[i].1));
                }
            }
            buf[0]
        })
        .collect()
}

/// The charts' smoother (`--smooth`; run.json's `config.smooth` by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Smooth {
    /// A centred 5-point moving average.
    #[default]
    Ma,
    /// The study's Bézier curves.
    Bezier,
}

fn smooth(v: &[(f64, f64)], how: Smooth) -> Vec<(f64, f64)> {
    match how {
        Smooth::Bezier => bezier(v, 300),
        Smooth::Ma => moving_average(v, 5),
    }
}

/// A series of the charts, by accessor.
type SeriesOf = fn(&Series) -> &Vec<f64>;

fn xy(r: &ThrashResult, key: SeriesOf) -> Vec<(f64, f64)> {
    r.series.t_s.iter().copied().zip(key(&r.series).iter().copied()).collect()
}

/// Median line and min..max band across repeats of the moving-average-smoothed
/// series, on a 1 s grid (bins of rounded seconds).
/// (x, min, max) across repeats.
type Band = Vec<(f64, f64, f64)>;

fn across(reps: &[&ThrashResult], key: SeriesOf) -> (Vec<(f64, f64)>, Band) {
    let mut bins: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for r in reps {
        for (t, y) in moving_average(&xy(r, key), 5) {
            if y.is_finite() {
                bins.entry(t.round() as i64).or_default().push(y);
            }
        }
    }
    let mut mid = Vec::new();
    let mut band = Vec::new();
    for (t, v) in bins {
        let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        band.push((t as f64, lo, hi));
        mid.push((t as f64, median(&v).unwrap_or(f64::NAN)));
    }
    (mid, band)
}

pub fn render(rec: &RunRecord, rs: &[ThrashResult]) -> Result<Vec<PathBuf>, Box<dyn std::error::Error + Send + Sync>> {
    let dir = &rec.dir;
    let config: Config = record::results::typed_one(&rec.run.config).unwrap_or_default();
    // A run from before `smooth` was recorded: the default.
    let how = crate::kit::names::parse::<Smooth>("smoother", &config.smooth).unwrap_or_default();
    let mut written = Vec::new();
    for p in presets(rs) {
        let reps: Vec<&ThrashResult> = rs.iter().filter(|r| group(r, rs) == p).collect();
        let first = reps[0];
        let n = reps.len();
        let band_note = if n > 1 { format!(", band: min..max of {n} runs") } else { String::new() };
        let pair = |a: (SeriesOf, &str), b: (SeriesOf, &str)| -> Vec<Trace> {
            let mut t = Vec::new();
            for (c, (key, name)) in [a, b].into_iter().enumerate() {
                let raw = xy(first, key);
                t.push(Trace { name: String::new(), color: c, points: raw.clone(), faint: true, band: vec![] });
                let (mid, band) = across(&reps, key);
                let line =
                    if n > 1 { if how == Smooth::Bezier { bezier(&mid, 300) } else { mid } } else { smooth(&raw, how) };
                t.push(Trace {
                    name: format!("{name} ({})", if how == Smooth::Bezier { "Bézier" } else { "5 s moving average" }),
                    color: c,
                    points: line,
                    faint: false,
                    band: if n > 1 { band } else { vec![] },
                });
            }
            t
        };
        let stem = dir.join(format!("thrash-{}-cpu", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: CPU (faint: raw, run 1{band_note})"),
            "seconds since the start signal",
            "% of all CPUs",
            &pair((|s| &s.cpu_user_pct, "user"), (|s| &s.cpu_system_pct, "system")),
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let stem = dir.join(format!("thrash-{}-paging", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: paging (faint: raw, run 1{band_note})"),
            "seconds since the start signal",
            "pages per second",
            &pair((|s| &s.pswpin_per_s, "page-in (pswpin)"), (|s| &s.pswpout_per_s, "page-out (pswpout)")),
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let mut psi = pair((|s| &s.psi_some_pct, "memory some"), (|s| &s.psi_full_pct, "memory full"));
        let cgroup_psi = xy(first, |s| &s.cgroup_psi_some_pct);
        if cgroup_psi.iter().any(|p| p.1.is_finite()) {
            psi.push(Trace {
                name: "cgroup memory some".into(),
                color: 3,
                points: moving_average(&cgroup_psi, 5),
                ..Default::default()
            });
        }
        let stem = dir.join(format!("thrash-{}-psi", report::plain_name(&p.to_string())));
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: memory pressure (PSI, system){band_note}"),
            "seconds since the start signal",
            "% of time stalled",
            &psi,
            false,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
        let (ts, te) = (first.thrash_start_s, first.thrash_end_s);
        let stem = dir.join(format!("thrash-{}-probes", report::plain_name(&p.to_string())));
        let mut probe_tr = Vec::new();
        for (c, (raw, name)) in
            [(&first.series.probe_outside, "outside the cgroup"), (&first.series.probe_inside, "inside the cgroup")]
                .into_iter()
                .enumerate()
        {
            let raw: Vec<(f64, f64)> = raw.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
            probe_tr.push(Trace { name: String::new(), color: c, points: raw.clone(), faint: true, band: vec![] });
            probe_tr.push(Trace {
                name: (*name).into(),
                color: c,
                points: moving_average(&raw, 11),
                ..Default::default()
            });
        }
        charts::traces(
            &stem,
            &format!("pagelab thrash {p}: probe wake-up to done (run 1; thrash {ts:.0}..{te:.0} s)"),
            "seconds since the start signal",
            "ms (log; line: 11-point moving average)",
            &probe_tr,
            true,
        )?;
        written.extend([stem.with_extension("svg"), stem.with_extension("png")]);
    }
    report::write_file(dir.join("thrash.md"), format!("# pagelab thrash\n\n{}", tables(&config, rs)))?;
    written.push(dir.join("thrash.md"));
    Ok(written)
}

/// The run's tables in Markdown: `thrash.md` below its title, and the lab
/// report's tables.
pub fn tables(config: &Config, rs: &[ThrashResult]) -> String {
    format!(
        "```\n{}```\n\n## The study's findings, checked here\n\n{}\nRecovery rule: {}.\n",
        text_table(rs),
        findings_markdown(rs),
        config.recovery_rule
    )
}

// ---- The experiment, as the report sees it (report::experiment).
