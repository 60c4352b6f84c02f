//! A short text summary of a run.

use record::derive::Interval;
use record::rundir::RunRecord;
use serde::Serialize;

/// Headline numbers of a recorded run.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub experiment: String,
    pub status: String,
    pub status_reason: Option<String>,
    pub samples: usize,
    pub intervals: usize,
    pub skipped_lines: usize,
    /// When the file held more than [`record::rundir::MAX_SAMPLES`] samples:
    /// how many (the run was read thinned evenly to `samples`).
    pub samples_in_file: Option<usize>,
    /// Files a run writes that the directory lacks.
    pub missing_files: Vec<String>,
    /// Time covered by the samples, seconds.
    pub duration_s: f64,
    pub cpu_user_pct_mean: Option<f64>,
    pub cpu_system_pct_mean: Option<f64>,
    pub cpu_iowait_pct_mean: Option<f64>,
    pub pswpin_total: u64,
    pub pswpout_total: u64,
    pub pgmajfault_total: u64,
    pub psi_memory_some_pct_mean: Option<f64>,
    pub psi_memory_full_pct_max: Option<f64>,
    pub target_rss_max_bytes: u64,
    pub target_swapped_max_bytes: u64,
    pub compressed_store_max_bytes: u64,
    pub free_min_bytes: Option<u64>,
    pub sampler_lateness_p99_ms: Option<f64>,
    pub phases: Vec<(String, f64)>,
}

fn vm_total(rec: &RunRecord, key: &str) -> u64 {
    match (rec.samples.first(), rec.samples.last()) {
        (Some(a), Some(b)) => record::derive::vmstat_delta(a, b, key),
        _ => 0,
    }
}

pub fn summarize(rec: &RunRecord, iv: &[Interval]) -> Summary {
    let mut lateness: Vec<u64> = rec.samples.iter().filter_map(|s| s.lateness_ns).collect();
    let span = match (rec.samples.first(), rec.samples.last()) {
        (Some(a), Some(b)) => b.t_ns.saturating_sub(a.t_ns) as f64 / 1e9,
        _ => 0.0,
    };
    let t = record::derive::totals(iv);
    Summary {
        experiment: rec.run.experiment.clone(),
        status: rec.status().state.to_string(),
        status_reason: rec.status().reason.clone(),
        samples: rec.samples.len(),
        intervals: iv.len(),
        skipped_lines: rec.skipped_lines,
        samples_in_file: rec.thinned_from,
        missing_files: rec.missing.clone(),
        duration_s: span,
        cpu_user_pct_mean: t.cpu_user_pct_mean,
        cpu_system_pct_mean: t.cpu_system_pct_mean,
        cpu_iowait_pct_mean: t.cpu_iowait_pct_mean,
        pswpin_total: vm_total(rec, "pswpin"),
        pswpout_total: vm_total(rec, "pswpout"),
        pgmajfault_total: vm_total(rec, "pgmajfault"),
        psi_memory_some_pct_mean: t.psi_memory_some_pct_mean,
        psi_memory_full_pct_max: t.psi_memory_full_pct_max,
        target_rss_max_bytes: iv.iter().map(|i| i.mem.target_rss()).max().unwrap_or(0),
        target_swapped_max_bytes: iv.iter().map(|i| i.mem.target_swapped).max().unwrap_or(0),
        compressed_store_max_bytes: iv.iter().map(|i| i.mem.compressed_store).max().unwrap_or(0),
        free_min_bytes: iv.iter().map(|i| i.mem.free).min(),
        sampler_lateness_p99_ms: (!lateness.is_empty()).then(|| record::sampler::percentile(&mut lateness, 0.99) / 1e6),
        phases: rec
            .run
            .phases
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.end_ns?.saturating_sub(p.start_ns) as f64 / 1e9)))
            .collect(),
    }
}

use units::bytes;

fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1} %")).unwrap_or_else(|| "n/a".into())
}

/// The text a user sees after `pagelab report`.
pub fn render_text(s: &Summary) -> String {
    let mut o = String::new();
    let status = match &s.status_reason {
        Some(r) => format!("{} ({r})", s.status),
        None => s.status.clone(),
    };
    o += &format!("run: {}  status: {status}\n", s.experiment);
    for f in &s.missing_files {
        let what = if f == "samples.jsonl" { "no timeline: every system figure below is empty" } else { "no events" };
        o += &format!("missing: {f} ({what})\n");
    }
    o += &format!("samples: {} over {:.1} s", s.samples, s.duration_s);
    if let Some(n) = s.samples_in_file {
        o += &format!(" (read evenly thinned from {n} in the file)");
    }
    if s.skipped_lines > 0 {
        o += &format!(" ({} torn or unreadable lines skipped)", s.skipped_lines);
    }
    o.push('\n');
    for (name, secs) in &s.phases {
        o += &format!("phase {name}: {secs:.3} s\n");
    }
    o += &format!(
        "cpu: user {}  system {}  iowait {}\n",
        pct(s.cpu_user_pct_mean),
        pct(s.cpu_system_pct_mean),
        pct(s.cpu_iowait_pct_mean)
    );
    o += &format!(
        "paging: {} pages swapped out, {} swapped in, {} major faults\n",
        s.pswpout_total, s.pswpin_total, s.pgmajfault_total
    );
    o += &format!(
        "memory: target RSS max {}, target swapped max {}, compressed store max {}, free min {}\n",
        bytes(s.target_rss_max_bytes),
        bytes(s.target_swapped_max_bytes),
        bytes(s.compressed_store_max_bytes),
        s.free_min_bytes.map(bytes).unwrap_or_else(|| "n/a".into())
    );
    o += &format!(
        "pressure: memory some {} mean, full {} max\n",
        pct(s.psi_memory_some_pct_mean),
        pct(s.psi_memory_full_pct_max)
    );
    if let Some(l) = s.sampler_lateness_p99_ms {
        o += &format!("sampler lateness p99: {l:.2} ms\n");
    }
    o
}
