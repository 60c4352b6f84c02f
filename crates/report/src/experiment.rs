//! The experiments as the report sees them: one list, and a trait each
//! experiment's module implements. The html report, the Markdown, the headline
//! metrics, the verdicts, `compare` and the lab's `--only` all go through it:
//! an experiment that is not in [`ALL`] is not rendered anywhere, and one that
//! is cannot be forgotten by any of them.

use crate::headline::{Builder, Figure, Metric};
use crate::html::Renderer;
use crate::verdict::{Claim, Ms, Verdict};
use serde_json::Value;

/// One experiment's part of the report.
pub trait Experiment: Sync {
    /// Its name: the subcommand, and run.json's `experiment`.
    fn name(&self) -> &'static str;
    /// The published study it reproduces, in a line.
    fn study(&self) -> &'static str;
    /// Writes its charts and `<name>.md` into a run directory.
    fn renderer(&self) -> Renderer;
    /// Its headline figures, each declared once as a constant.
    fn figures(&self) -> &'static [Figure];
    /// Its headline figures' values, one per repeat (what `compare` tests).
    fn metrics(&self, results: &[Value], b: &mut Builder);
    /// Err(why) when the run broke the study's protocol (Ok where the study set
    /// no condition a run could break).
    fn protocol(&self, _results: &[Value]) -> Result<(), String> {
        Ok(())
    }
    /// The study's findings as claims, fixed before any data (ids `<name>.*`).
    fn claims(&self) -> &'static [Claim];
    /// Its claims judged, each alone (see [`crate::verdict::judge`]); the
    /// report forms the family.
    fn verdicts(&self, m: &Ms, results: &[Value]) -> Vec<Verdict>;
    /// The few figures the lab's summary table shows.
    fn summary(&self, m: &[Metric]) -> Vec<String>;
}

/// Every experiment, in the order the lab runs them.
pub static ALL: [&dyn Experiment; 7] = [
    &crate::eat::Eat,
    &crate::wscap::Wscap,
    &crate::heap::Heap,
    &crate::mapping::Mapping,
    &crate::thrash::Thrash,
    &crate::assess::Assess,
    &crate::rightsize::Rightsize,
];

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    ALL.iter().copied().find(|e| e.name() == name)
}

/// The experiments' names, in the lab's order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|e| e.name()).collect()
}

/// The median of `fig` in the first metric whose group starts with `group`.
pub fn median_of(m: &[Metric], group: &str, fig: &Figure) -> Option<f64> {
    m.iter().find(|x| x.group.starts_with(group) && x.name == fig.name).and_then(Metric::median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let n = names();
        let mut d = n.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), n.len(), "{n:?}");
        for x in n {
            assert_eq!(find(x).map(|e| e.name()), Some(x));
        }
        assert!(find("nope").is_none());
    }

    /// Every figure can be exported: a Prometheus name in base units, unique in
    /// its experiment, that ends in its OpenMetrics unit, and a scale.
    #[test]
    fn every_figure_has_an_export_name() {
        for e in ALL {
            let mut seen = Vec::new();
            for f in e.figures() {
                let x = f.export;
                assert!(!x.name.is_empty(), "{} / {} has no export name", e.name(), f.name);
                assert!(
                    x.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{}",
                    x.name
                );
                assert!(x.unit.is_empty() || x.name.ends_with(&format!("_{}", x.unit)), "{} / {}", x.name, x.unit);
                for bad in ["_total", "_count", "_sum", "_bucket", "_created", "_info", "milli", "micro", "nano"] {
                    assert!(!x.name.contains(bad), "{}: {bad} is not a Prometheus base-unit name", x.name);
                }
                assert!(x.scale.is_finite() && x.scale > 0.0, "{}", x.name);
                assert!(!seen.contains(&x.name), "{} twice in {}", x.name, e.name());
                seen.push(x.name);
            }
        }
    }
}
