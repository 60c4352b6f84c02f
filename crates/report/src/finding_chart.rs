//! The chart that opens a report: every finding's 95 % interval against its
//! acceptance region, one row each, on one log axis.
//!
//! Findings measure different things (a slowdown of 700×, a fraction of 0.2),
//! so each row is drawn relative to its region's edge: x = log10(value ÷ edge)
//! (for a region with two edges, ÷ their geometric middle). The region is the
//! shaded part of the row; the interval a bar, its estimate a dot, coloured by
//! the verdict. Hand-built SVG: no scripts, no fonts fetched.

use crate::verdict::{Outcome, Verdict};
use std::fmt::Write as _;

/// Decades shown either side of the edge; values beyond are drawn at the rim
/// with an arrow.
const DECADES: f64 = 2.0;
const LABEL_W: f64 = 330.0;
const PLOT_W: f64 = 420.0;
const ROW_H: f64 = 20.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn colour(o: Outcome) -> &'static str {
    match o {
        Outcome::Matches => "#1a7f37",
        Outcome::Differs => "#cf222e",
        Outcome::Inconclusive => "#9a6700",
        Outcome::CheckPassed => "#57606a",
        Outcome::CheckFailed => "#cf222e",
        Outcome::OutsideProtocol | Outcome::NotChecked => "#6e7781",
    }
}

/// The reference a row is drawn against, and the region's span in decades
/// relative to it.
fn frame(v: &Verdict) -> Option<(f64, f64, f64)> {
    let (lo, hi) = (v.region.lo, v.region.hi);
    let r = match (lo, hi) {
        (Some(a), Some(b)) => (a * b).sqrt(),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => return None,
    };
    let rel = |x: Option<f64>, open: f64| x.map_or(open, |x| (x / r).log10());
    Some((r, rel(lo, -f64::INFINITY), rel(hi, f64::INFINITY)))
}

fn x_of(d: f64) -> f64 {
    LABEL_W + (d.clamp(-DECADES, DECADES) + DECADES) / (2.0 * DECADES) * PLOT_W
}

/// The chart as an SVG element; `None` when no finding has a region to draw.
pub fn svg(rows: &[(&str, &Verdict)]) -> Option<String> {
    let rows: Vec<&(&str, &Verdict)> = rows.iter().filter(|(_, v)| frame(v).is_some()).collect();
    if rows.is_empty() {
        return None;
    }
    let h = 30.0 + ROW_H * rows.len() as f64 + 30.0;
    let w = LABEL_W + PLOT_W + 110.0;
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"finding-chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" \
         height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\"findings against their \
         acceptance regions\">"
    );
    // Axis: decades from the edge.
    for d in -2..=2 {
        let x = x_of(d as f64);
        let _ = write!(
            o,
            "<line x1=\"{x}\" y1=\"24\" x2=\"{x}\" y2=\"{}\" stroke=\"#d0d7de\"/><text x=\"{x}\" y=\"18\" \
             text-anchor=\"middle\">{}</text>",
            h - 28.0,
            match d {
                0 => "edge".to_string(),
                d if d > 0 => format!("×{}", 10f64.powi(d)),
                d => format!("÷{}", 10f64.powi(-d)),
            }
        );
    }
    for (i, (exp, v)) in rows.iter().enumerate() {
        let y = 30.0 + ROW_H * i as f64;
        let Some((r, lo, hi)) = frame(v) else { continue };
        let (x0, x1) = (x_of(lo), x_of(hi));
        let _ = write!(
            o,
            "<rect x=\"{x0}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#dafbe1\"/>",
            y + 3.0,
            (x1 - x0).max(1.0),
            ROW_H - 6.0
        );
        let label: String = format!("{exp}: {}", v.claim).chars().take(52).collect();
        let _ = write!(
            o,
            "<text x=\"4\" y=\"{}\"><title>{}</title>{}</text>",
            y + 14.0,
            esc(&format!("{} — accepted {}; this run {}", v.claim, v.acceptance, v.ours)),
            esc(&label)
        );
        let c = colour(v.outcome);
        let at = |x: f64| x_of((x / r).log10());
        if let Some([a, b]) = v.ci95 {
            let _ = write!(
                o,
                "<line x1=\"{}\" y1=\"{2}\" x2=\"{}\" y2=\"{2}\" stroke=\"{c}\" stroke-width=\"3\"/>",
                at(a),
                at(b),
                y + ROW_H / 2.0
            );
        }
        if let Some(e) = v.estimate.filter(|e| *e > 0.0) {
            let _ = write!(o, "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{c}\"/>", at(e), y + ROW_H / 2.0);
        }
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{}</text>",
            LABEL_W + PLOT_W + 8.0,
            y + 14.0,
            v.outcome.word()
        );
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">each row: this run's 95 % interval (bar) and estimate (dot) ÷ \
         the edge of its accepted region (green), log scale</text></svg>",
        LABEL_W + PLOT_W / 2.0,
        h - 8.0
    );
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::stats::claim::Region;

    fn v(region: Region, est: f64, ci: [f64; 2], o: Outcome) -> Verdict {
        Verdict {
            id: "x.y",
            kind: crate::verdict::Kind::Finding,
            control: Some("a control"),
            claim: "a <claim>",
            study: "",
            quantity: "",
            region,
            acceptance: region.describe(),
            ours: String::new(),
            estimate: Some(est),
            ci95: Some(ci),
            n: 3,
            values: vec![],
            resolution: 0.001,
            unusable: 0,
            censored: 0,
            cv: None,
            p: None,
            p_adjusted: None,
            family: 1,
            family_name: String::new(),
            outcome: o,
            why: String::new(),
            repeats_to_decide: None,
            pass: 1,
            at_resolution: false,
            carryover_fitted: false,
            fit: None,
            fit_resolution: None,
            raw: vec![],
            ungated: None,
        }
    }

    #[test]
    fn rows_are_drawn_against_their_edge() {
        let a = v(Region::at_least(100.0), 700.0, [300.0, 1500.0], Outcome::Matches);
        let b = v(Region::within(0.133, 0.3), 0.2, [0.19, 0.21], Outcome::Differs);
        let s = svg(&[("wscap", &a), ("eat", &b)]).unwrap();
        assert_eq!(s.matches("<circle").count(), 2);
        assert!(s.contains("a &lt;claim&gt;"), "labels are escaped");
        // 700 ÷ 100 is 0.85 decades right of the edge.
        let x = x_of(7f64.log10());
        assert!(s.contains(&format!("cx=\"{x}\"")), "{s}");
        assert!(s.contains("#1a7f37") && s.contains("#cf222e"));
        // The region of "≥ 100" runs from the edge to the right rim.
        assert!(s.contains(&format!("<rect x=\"{}\"", x_of(0.0))));
        assert!(svg(&[]).is_none());
    }
}
