//! The headline metrics of each experiment, with every repeat's value: what the
//! lab report's summary shows and what `compare` tests between runs.

use crate::experiment::{Experiment, Parsed};
use serde::Serialize;

/// One headline metric of one configuration, with a value per repeat (or per
/// counted iteration, for `mapping`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Metric {
    pub experiment: String,
    /// The configuration within the experiment, e.g. "semi lzo-rle", "glibc ×4".
    pub group: String,
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    pub values: Vec<f64>,
    /// The repeat each value came from (its position, unless the experiment
    /// names it): how the arms of a claim are paired.
    #[serde(skip)]
    pub repeats: Vec<u32>,
    /// The absolute spread below which differences mean nothing (0: none).
    #[serde(skip)]
    pub resolution: f64,
    /// How it is exported to Prometheus and Bencher.
    #[serde(skip)]
    pub export: Export,
}

impl Metric {
    /// experiment / group / name: how metrics of two runs are matched.
    pub fn key(&self) -> String {
        format!("{} / {} / {}", self.experiment, self.group, self.name)
    }

    pub fn median(&self) -> Option<f64> {
        record::stats::median(&self.values)
    }

    /// The value of repeat `k` (0-based), if this metric has one.
    pub fn at(&self, k: u32) -> Option<f64> {
        self.repeats.iter().position(|j| *j == k).map(|i| self.values[i])
    }

    /// The CV across the values (None for fewer than two).
    pub fn cv(&self) -> Option<f64> {
        record::stats::cv(&self.values)
    }

    /// The stability contract: at least two values, and a CV at most 5 % or a
    /// spread (max − min) within the metric's absolute resolution (a stored
    /// fraction of 0.0001 against 0.0002 is the same "nothing").
    pub fn stable(&self) -> bool {
        let spread = self.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            - self.values.iter().cloned().fold(f64::INFINITY, f64::min);
        self.values.len() >= 2 && (record::stats::stable(&self.values) || spread <= self.resolution)
    }

    /// "median (CV 3.1 %, n = 5)": the CV describes the figure, it decides nothing.
    pub fn with_spread(&self, fmt: impl Fn(f64) -> String) -> String {
        let Some(m) = self.median() else { return "-".into() };
        match self.cv() {
            None => format!("{} (n = 1)", fmt(m)),
            Some(c) => format!("{} (CV {:.1} %, n = {})", fmt(m), 100.0 * c, self.values.len()),
        }
    }
}

/// A headline figure: its label, unit, direction and absolute resolution. Each
/// experiment declares its figures once, as constants, and both its metrics and
/// its verdicts name them by constant: a renamed label cannot break a verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    /// The step the figure is read to, in its unit (one page, the timer's
    /// step, a recovery found on 1 s intervals): a difference below it means
    /// nothing, and a zero is "under one step".
    pub resolution: f64,
    pub export: Export,
}

/// How a figure is exported (`report --openmetrics`, `--bmf`): its name in base
/// units, as Prometheus names metrics (seconds, bytes, ratios), without the
/// `pagelab_<experiment>_` prefix; the OpenMetrics unit that name ends in ("" for
/// a count or a rate); and the factor from the figure's own unit to that one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Export {
    pub name: &'static str,
    pub unit: &'static str,
    pub scale: f64,
}

/// One 4 KiB page in MiB: the resolution of a figure of memory in MiB.
pub const PAGE_MIB: f64 = 4096.0 / units::MIB_F;

impl Figure {
    /// A figure and its resolution, in its own unit: the step it is read to
    /// (one page, the timer's or the sampler's step). Every figure states one:
    /// a verdict raises a zero to it and gives identical values at least its
    /// spread ([`record::stats::claim::estimate_at`]), so no repeat vanishes
    /// and no repeat is a certainty.
    pub const fn new(name: &'static str, unit: &'static str, lower_is_better: bool, resolution: f64) -> Figure {
        Figure { name, unit, lower_is_better, resolution, export: Export { name: "", unit: "", scale: 1.0 } }
    }
    /// Its exported name, OpenMetrics unit and scale (see [`Export`]).
    pub const fn export(self, name: &'static str, unit: &'static str, scale: f64) -> Figure {
        Figure { export: Export { name, unit, scale }, ..self }
    }
}

/// Collects an experiment's metrics: one per group and figure, a value per repeat.
pub struct Builder {
    experiment: String,
    out: Vec<Metric>,
    /// Added to every repeat: the repeats of a lab's later passes follow its
    /// first pass's ([`Builder::next_run`]).
    offset: u32,
}

impl Builder {
    pub fn new(experiment: &str) -> Builder {
        Builder { experiment: experiment.to_string(), out: Vec::new(), offset: 0 }
    }
    /// The values pushed from now on come from another run of the same
    /// experiment (a lab's extra pass): its repeats number on from the last.
    pub fn next_run(&mut self) {
        self.offset = self.out.iter().flat_map(|m| m.repeats.iter()).max().map_or(0, |r| r + 1);
    }
    /// The metrics, in the order their first values came.
    pub fn finish(self) -> Vec<Metric> {
        self.out
    }
    /// Adds one repeat's value; a missing or non-finite one (NaN: not measured)
    /// is no value. Its repeat is its position among the group's values.
    pub fn push(&mut self, group: &str, fig: &Figure, v: Option<f64>) {
        let off = self.offset;
        let at = self
            .out
            .iter()
            .find(|m| m.group == group && m.name == fig.name)
            .map_or(0, |m| m.repeats.iter().filter(|&&r| r >= off).count());
        self.push_rep(group, fig, at as u32, v)
    }
    /// Adds the value of the repeat a result names (1-based, as run.json
    /// writes it); 0 (a record from before the field) counts by position.
    pub fn push_of(&mut self, group: &str, fig: &Figure, repeat: u32, v: Option<f64>) {
        if repeat == 0 { self.push(group, fig, v) } else { self.push_rep(group, fig, repeat - 1, v) }
    }
    /// Adds the value of repeat `repeat` (0-based), which pairs it with the
    /// other arms' values of the same repeat.
    pub fn push_rep(&mut self, group: &str, fig: &Figure, repeat: u32, v: Option<f64>) {
        let Some(v) = v.filter(|v| v.is_finite()) else { return };
        let repeat = repeat + self.offset;
        match self.out.iter_mut().find(|m| m.group == group && m.name == fig.name) {
            Some(m) => {
                m.values.push(v);
                m.repeats.push(repeat);
            }
            None => self.out.push(Metric {
                experiment: self.experiment.clone(),
                group: group.to_string(),
                name: fig.name,
                unit: fig.unit,
                lower_is_better: fig.lower_is_better,
                values: vec![v],
                repeats: vec![repeat],
                resolution: fig.resolution,
                export: fig.export,
            }),
        }
    }
}

/// The headline metrics of one run.
pub fn metrics(e: &dyn Experiment, p: &Parsed) -> Vec<Metric> {
    metrics_of_runs(e, &[p])
}

/// The metrics of several runs of one experiment (a lab's passes), their
/// repeats numbered on from run to run so that arms still pair by repeat.
pub fn metrics_of_runs(e: &dyn Experiment, runs: &[&Parsed]) -> Vec<Metric> {
    let mut b = Builder::new(e.name());
    for r in runs {
        b.next_run();
        e.metrics(r, &mut b);
    }
    b.finish()
}
