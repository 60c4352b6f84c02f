//! The self-contained HTML report: one file, inline CSS and SVG, no scripts and
//! nothing fetched when it is opened (a Content-Security-Policy says so to the
//! browser, too). Also the Markdown of the same tables.

use crate::headline::Metric;
use crate::lab::Lab;
use crate::verdict::{self, Outcome, Verdict};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::model::{Render, Report, Section, disk_full, mark_below_noise, noise_floor};

/// The longest text one field of the page shows (a note, a step's
/// arguments, a check's detail); a longer one from a crafted file is cut,
/// so that no field can make the page (or pagelab) large.
pub const MAX_FIELD_CHARS: usize = 4000;
/// The most notes one list of the page shows.
pub const MAX_NOTES: usize = 200;

/// `s` escaped for HTML, cut after [`MAX_FIELD_CHARS`] characters.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len().min(MAX_FIELD_CHARS));
    for (i, c) in s.chars().enumerate() {
        if i == MAX_FIELD_CHARS {
            let _ = write!(o, "… ({} characters)", s.chars().count());
            break;
        }
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Seconds as `12.3 s` or `2 min 51 s`.
pub fn fmt_secs(s: f64) -> String {
    if s >= 90.0 {
        // Whole seconds first: 119.6 s is "2 min 00 s", not "1 min 60 s" (issue 46 item 15).
        let t = s.round() as u64;
        format!("{} min {:02} s", t / 60, t % 60)
    } else {
        format!("{s:.1} s")
    }
}

/// A few figures that say what a run found, for the summary table.
pub fn headline(s: &Section) -> String {
    let m = s.metrics();
    let parts = s.exp.map(|e| e.summary(&m)).unwrap_or_default();
    let mut out = parts.join("; ");
    let shaky = m.iter().filter(|x| !x.stable()).count();
    if shaky > 0 {
        out += &format!(" — {shaky} of {} figures vary by more than 5 % across repeats, or ran once", m.len());
    }
    out
}

fn verdict_counts(v: &[Verdict]) -> String {
    let n = |o: Outcome| v.iter().filter(|x| x.outcome == o).count();
    if v.is_empty() {
        return "-".into();
    }
    if n(Outcome::NotChecked) == v.len() {
        return "not checked: this run tested none of the study's findings".into();
    }
    let checks = n(Outcome::CheckPassed) + n(Outcome::CheckFailed);
    let checkable = v.len() - n(Outcome::NotChecked) - n(Outcome::OutsideProtocol) - checks;
    let mut s = format!(
        "{} of {checkable} decided ({} match, {} differ)",
        n(Outcome::Matches) + n(Outcome::Differs),
        n(Outcome::Matches),
        n(Outcome::Differs)
    );
    for o in [Outcome::Inconclusive, Outcome::OutsideProtocol, Outcome::NotChecked] {
        if n(o) > 0 {
            s += &format!(", {} {}", n(o), o.word());
        }
    }
    if checks > 0 {
        s += &format!("; checks: {} of {checks} passed", n(Outcome::CheckPassed));
    }
    s
}

/// The headline table as (columns, rows), shared by HTML, Markdown and text.
pub fn summary_rows(r: &Report) -> Vec<[String; 5]> {
    r.sections
        .iter()
        .map(|s| {
            let status = match (&s.reason, &s.note) {
                (Some(why), _) if s.state != "complete" => format!("{}: {why}", s.state),
                (_, Some(note)) => format!("{}, in part: {note}", s.state),
                _ => s.state.clone(),
            };
            [
                s.experiment.clone(),
                status,
                s.seconds.map(fmt_secs).unwrap_or_else(|| "-".into()),
                headline(s),
                verdict_counts(&s.verdicts()),
            ]
        })
        .collect()
}

pub const SUMMARY_HEAD: [&str; 5] = ["experiment", "status", "time", "headline figures (medians)", "published study"];

fn metrics_table(m: &[Metric]) -> String {
    let mut o =
        String::from("| configuration | metric | median | min .. max | n | CV | |\n|---|---|---|---|---|---|---|\n");
    for x in m {
        let lo = x.values.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = x.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        // A group or a name from a run directory cannot start a row or a table.
        let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} .. {} | {} | {} | {} |",
            cell(&x.group),
            cell(x.name),
            x.median().map(fmt_num).unwrap_or("-".into()),
            fmt_num(lo),
            fmt_num(hi),
            x.values.len(),
            x.cv().map(|c| format!("{:.1} %", 100.0 * c)).unwrap_or("-".into()),
            if x.stable() { "" } else { "CV > 5 %" }
        );
    }
    o
}

/// Unix milliseconds as a UTC time to the minute ("2026-11-22 10:05 UTC"),
/// from humantime's RFC 3339 form.
pub fn utc(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let s = humantime::format_rfc3339_seconds(t).to_string();
    format!("{} {} UTC", &s[..10], &s[11..16])
}

mod embed;
mod markdown;
mod page;
pub use embed::*;
pub use markdown::*;
pub use page::*;

#[cfg(test)]
mod tests;
