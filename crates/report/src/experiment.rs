//! The experiments as the report sees them: one list, and a trait each
//! experiment's module implements. The html report, the Markdown, the headline
//! metrics, the verdicts, `compare` and the lab's `--only` all go through it:
//! an experiment that is not in [`ALL`] is not rendered anywhere, and one that
//! is cannot be forgotten by any of them.

use crate::headline::{Builder, Figure, Metric};
use crate::verdict::{Claim, Finding, Ms, Verdict};
use record::results::EntryError;
use record::rundir::RunRecord;
use serde_json::Value;
use std::any::Any;
use std::path::PathBuf;

type DynErr = Box<dyn std::error::Error + Send + Sync>;

/// One run's results, parsed once (when the run is loaded) into its
/// experiment's own entry type; every consumer reads that type.
pub struct Parsed(Box<dyn Any + Send + Sync>);

impl Parsed {
    /// Entries already typed (an experiment's own, for the generic code).
    pub fn of<T: Send + Sync + 'static>(entries: Vec<T>) -> Parsed {
        Parsed(Box::new(entries))
    }

    /// No entries (a run of an experiment the catalog does not know).
    pub fn none() -> Parsed {
        Parsed(Box::new(()))
    }

    /// The entries, as the experiment that parsed them typed them; none when
    /// `T` is not that type.
    pub fn entries<T: 'static>(&self) -> &[T] {
        self.0.downcast_ref::<Vec<T>>().map_or(&[], Vec::as_slice)
    }
}

/// One experiment's part of the report, on its own types. Each experiment
/// implements this; the report's generic code sees it as [`Experiment`].
pub trait Study: Sync + 'static {
    /// One entry of run.json's `results`, typed.
    type Entry: Clone + Send + Sync + 'static;
    /// Its name: the subcommand, and run.json's `experiment`.
    fn name(&self) -> &'static str;
    /// The published study it reproduces, in a line.
    fn study(&self) -> &'static str;
    /// Its headline figures, each declared once as a constant.
    fn figures(&self) -> &'static [Figure];
    /// The study's findings, each a claim fixed before any data (ids
    /// `<name>.*`) with the function that draws its evidence: the claims and
    /// the verdicts are derived from this one list.
    fn findings(&self) -> &'static [Finding<Self::Entry>];
    /// Why it judges no finding, when its list is empty (a house rule: an
    /// experiment without findings says why).
    fn no_findings(&self) -> Option<&'static str> {
        None
    }
    /// The few figures the lab's summary table shows.
    fn summary(&self, m: &[Metric]) -> Vec<String>;
    /// run.json's `results`, read into its entries; an entry that is not one
    /// (another version's shape, a damaged file, a required field missing)
    /// is an error naming the entry and the field.
    fn parse(&self, results: &[Value]) -> Result<Vec<Self::Entry>, EntryError>;
    /// Writes its charts and `<name>.md` into the run directory, returning the
    /// files written.
    fn render(&self, rec: &RunRecord, r: &[Self::Entry]) -> Result<Vec<PathBuf>, DynErr>;
    /// Its tables in Markdown (`##` headings at most): what `<name>.md`
    /// holds below its title, and what the lab report shows, made from the
    /// run's typed entries (never read back from the file).
    fn tables(&self, rec: &RunRecord, r: &[Self::Entry]) -> String;
    /// Its headline figures' values, one per repeat (what `compare` tests).
    fn metrics(&self, r: &[Self::Entry], b: &mut Builder);
    /// Err(why) when the run broke the study's protocol (Ok where the study set
    /// no condition a run could break).
    fn protocol(&self, _r: &[Self::Entry]) -> Result<(), String> {
        Ok(())
    }
}

/// An experiment as the report's generic code (HTML, Markdown, verdicts,
/// `compare`, the exports) sees it: results behind [`Parsed`]. Every
/// [`Study`] is one.
pub trait Experiment: Sync {
    fn name(&self) -> &'static str;
    fn study(&self) -> &'static str;
    fn figures(&self) -> &'static [Figure];
    /// Its findings' claims, in order.
    fn claims(&self) -> Vec<Claim>;
    /// Why it judges no finding, when it has none.
    fn no_findings(&self) -> Option<&'static str>;
    fn summary(&self, m: &[Metric]) -> Vec<String>;
    /// Parses a run's `results` (once, when the run is loaded); Err names
    /// the entry and field that is not the experiment's.
    fn parse(&self, results: &[Value]) -> Result<Parsed, EntryError>;
    /// The size of one parsed entry (what a `{}` in `results` costs).
    fn entry_size(&self) -> usize;
    fn render(&self, rec: &RunRecord, p: &Parsed) -> Result<Vec<PathBuf>, DynErr>;
    fn tables(&self, rec: &RunRecord, p: &Parsed) -> String;
    fn metrics(&self, p: &Parsed, b: &mut Builder);
    /// Whether the runs (a lab's passes, together) kept the study's protocol.
    fn protocol(&self, runs: &[&Parsed]) -> Result<(), String>;
    /// The claims judged on the runs together (arms pair by repeat across
    /// them), each alone (see [`crate::verdict::judge`]); the report forms the
    /// family.
    fn verdicts(&self, m: &Ms, runs: &[&Parsed]) -> Vec<Verdict>;
}

impl<S: Study> Experiment for S {
    fn name(&self) -> &'static str {
        Study::name(self)
    }
    fn study(&self) -> &'static str {
        Study::study(self)
    }
    fn figures(&self) -> &'static [Figure] {
        Study::figures(self)
    }
    fn claims(&self) -> Vec<Claim> {
        Study::findings(self).iter().map(|f| f.claim).collect()
    }
    fn no_findings(&self) -> Option<&'static str> {
        Study::no_findings(self)
    }
    fn summary(&self, m: &[Metric]) -> Vec<String> {
        Study::summary(self, m)
    }
    fn parse(&self, results: &[Value]) -> Result<Parsed, EntryError> {
        Ok(Parsed(Box::new(Study::parse(self, results)?)))
    }
    fn entry_size(&self) -> usize {
        size_of::<S::Entry>()
    }
    fn render(&self, rec: &RunRecord, p: &Parsed) -> Result<Vec<PathBuf>, DynErr> {
        Study::render(self, rec, p.entries::<S::Entry>())
    }
    fn tables(&self, rec: &RunRecord, p: &Parsed) -> String {
        Study::tables(self, rec, p.entries::<S::Entry>())
    }
    fn metrics(&self, p: &Parsed, b: &mut Builder) {
        Study::metrics(self, p.entries::<S::Entry>(), b)
    }
    fn protocol(&self, runs: &[&Parsed]) -> Result<(), String> {
        Study::protocol(self, &joined::<S>(runs))
    }
    fn verdicts(&self, m: &Ms, runs: &[&Parsed]) -> Vec<Verdict> {
        let entries = joined::<S>(runs);
        Study::findings(self).iter().map(|f| f.judge(m, &entries)).collect()
    }
}

/// The entries of several runs, in order.
fn joined<S: Study>(runs: &[&Parsed]) -> Vec<S::Entry> {
    runs.iter().flat_map(|p| p.entries::<S::Entry>().iter().cloned()).collect()
}

/// The experiments a report knows, in the lab's order: the binary's list
/// (`experiments::ALL`), passed in. The report's generic code names none of
/// them; a run of an experiment that is not here loads, with no section of
/// its own to draw.
#[derive(Clone, Copy)]
pub struct Catalog(pub &'static [&'static dyn Experiment]);

impl Catalog {
    /// The experiment called `name`.
    pub fn find(&self, name: &str) -> Option<&'static dyn Experiment> {
        self.0.iter().copied().find(|e| e.name() == name)
    }

    /// The experiments' names, in the lab's order.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|e| e.name()).collect()
    }

    /// The claim with this id, from any experiment.
    pub fn claim(&self, id: &str) -> Option<Claim> {
        self.0.iter().flat_map(|e| e.claims()).find(|c| c.id == id)
    }
}

/// The median of `fig` in the first metric whose group starts with `group`.
pub fn median_of(m: &[Metric], group: &str, fig: &Figure) -> Option<f64> {
    m.iter().find(|x| x.group.starts_with(group) && x.name == fig.name).and_then(Metric::median)
}

/// Checks that hold for every experiment in a catalog (its test suite calls
/// this with the real list).
pub mod checks {
    use super::*;

    /// Names are unique, and each is found.
    pub fn names_are_unique_and_found(cat: Catalog) {
        let n = cat.names();
        let mut d = n.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), n.len(), "{n:?}");
        for x in n {
            assert_eq!(cat.find(x).map(|e| e.name()), Some(x));
        }
        assert!(cat.find("nope").is_none());
    }

    /// Every figure can be exported: a Prometheus name in base units, unique in
    /// its experiment, that ends in its OpenMetrics unit, and a scale.
    pub fn every_figure_has_an_export_name(cat: Catalog) {
        for e in cat.0 {
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
