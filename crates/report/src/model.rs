//! What a report is made of, apart from how it is drawn: a lab or run
//! directory loaded into sections (one per experiment, its passes merged), and
//! their findings judged in their families. `html` and `markdown` draw it;
//! `compare` and the exports read it.

use crate::error::LoadError;
use crate::experiment::{Catalog, Experiment, Parsed};
use crate::headline::Metric;
use crate::lab::Lab;
use crate::verdict::{self, Verdict};
use record::rundir::RunRecord;
use record::weight::Budget;
use std::path::{Path, PathBuf};

/// One experiment's part of the report.
pub struct Section {
    pub experiment: String,
    /// The experiment, when the catalog knows it.
    pub exp: Option<&'static dyn Experiment>,
    pub state: String,
    pub reason: Option<String>,
    /// What ran only in part, and why (from lab.json).
    pub note: Option<String>,
    pub seconds: Option<f64>,
    pub dir: Option<PathBuf>,
    pub record: Option<RunRecord>,
    /// The runs of a budgeted lab's later passes, with their pass: more
    /// repeats of the same arms ([`Section::runs`]).
    pub more: Vec<(u32, RunRecord)>,
    /// Its findings, judged in their families ([`Report::judge`]).
    pub findings: Vec<Verdict>,
    /// Each run's results, parsed once when it was loaded, with its pass
    /// (`record`'s first, then `more`'s).
    pub parsed: Vec<(u32, Parsed)>,
}

impl Section {
    /// The store each entry of its first run names (eat and wscap at the top
    /// level, thrash inside `result`); `compare` labels runs with it.
    pub fn stores(&self) -> Vec<record::results::Store> {
        self.record.as_ref().map(|r| record::results::stores_of(&r.run.results)).unwrap_or_default()
    }

    /// Its figures over every pass's repeats.
    pub fn metrics(&self) -> Vec<Metric> {
        match self.exp {
            Some(e) => crate::headline::metrics_of_runs(e, &self.runs(u32::MAX)),
            None => Vec::new(),
        }
    }

    /// The parsed results of each run up to pass `upto`, the first pass's first.
    pub fn runs(&self, upto: u32) -> Vec<&Parsed> {
        self.parsed.iter().filter(|(p, _)| *p <= upto).map(|(_, r)| r).collect()
    }

    /// The parsed results of the runs of pass `pass` alone.
    pub fn runs_of(&self, pass: u32) -> Vec<&Parsed> {
        self.parsed.iter().filter(|(p, _)| *p == pass).map(|(_, r)| r).collect()
    }

    /// The first run's entries, typed as its experiment typed them.
    pub fn entries<T: 'static>(&self) -> &[T] {
        self.parsed.first().map_or(&[], |(_, p)| p.entries())
    }

    /// Its findings as the report judged them ([`Report::judge`]).
    pub fn verdicts(&self) -> Vec<Verdict> {
        self.findings.clone()
    }
}

/// One run directory's record, read within `budget` and parsed by its
/// experiment (an unknown experiment parses to nothing).
fn load_run(d: &Path, cat: Catalog, budget: &Budget) -> Result<(RunRecord, Parsed), LoadError> {
    let mut rec = RunRecord::load_within(d, budget).map_err(|cause| LoadError::Run { dir: d.into(), cause })?;
    // Once, in place: the typed readers then never copy an entry (a
    // `null` reads as a missing field either way).
    record::results::strip_nulls(&mut rec.run.results);
    let Some(e) = cat.find(&rec.run.experiment) else { return Ok((rec, Parsed::none())) };
    let results = match rec.run.results.as_array() {
        Some(a) => a.as_slice(),
        None if rec.run.results.is_null() => &[][..],
        None => return Err(LoadError::Invalid { file: d.join("run.json"), why: "results: not an array".into() }),
    };
    // Typed entries: `{}` in the file is a whole entry in memory.
    budget.charge(&d.join("run.json"), results.len().saturating_mul(e.entry_size()))?;
    let parsed = e.parse(results).map_err(|cause| LoadError::Entry { file: d.join("run.json"), cause })?;
    Ok((rec, parsed))
}

/// Whether a run's charts are (re)drawn: always, or only when its page is missing.
fn wants_render(render: Render, d: &Path, rec: &RunRecord) -> bool {
    let md = d.join(format!("{}.md", rec.run.experiment));
    render == Render::Always || (render == Render::IfMissing && !md.exists())
}

/// Draws a loaded lab's charts: each first pass's run, then the later passes'
/// (`later`: directory, section, index in its `more`).
fn render_lab(
    sections: &[Section],
    later: &[(PathBuf, String, usize)],
    render: Render,
    cat: Catalog,
) -> Result<Vec<String>, LoadError> {
    let mut unwritten = Vec::new();
    for sec in sections {
        let (Some(d), Some(rec), Some((_, parsed))) = (&sec.dir, &sec.record, sec.parsed.first()) else {
            continue;
        };
        unwritten.extend(render_run(cat, d, rec, parsed, wants_render(render, d, rec))?);
    }
    for (d, exp, k) in later {
        let Some(sec) = sections.iter().find(|x| &x.experiment == exp) else { continue };
        let (Some((_, rec)), Some((_, parsed))) =
            (sec.more.get(*k), sec.parsed.get(sec.parsed.len() - sec.more.len() + k))
        else {
            continue;
        };
        unwritten.extend(render_run(cat, d, rec, parsed, wants_render(render, d, rec))?);
    }
    Ok(unwritten)
}

/// Draws a run's charts and Markdown into its directory when `wanted`.
/// A full disk is not a reason to lose the report: what could not be
/// written comes back, in words, and the rest is read.
fn render_run(
    cat: Catalog,
    d: &Path,
    rec: &RunRecord,
    parsed: &Parsed,
    wanted: bool,
) -> Result<Option<String>, LoadError> {
    match cat.find(&rec.run.experiment) {
        Some(e) if wanted => match e.render(rec, parsed) {
            Ok(_) => Ok(None),
            Err(e) if disk_full(e.as_ref()) => Ok(Some(format!("{}: charts not written: {e}", d.display()))),
            Err(e) => Err(LoadError::Render { dir: d.into(), why: e.to_string() }),
        },
        _ => Ok(None),
    }
}

/// Whether an error, or one of its sources, is a full disk.
pub fn disk_full(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(x) = at {
        if x.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull) {
            return true;
        }
        at = x.source();
    }
    false
}

/// A lab step's run directory: one plain name inside the lab, not a link.
fn step_dir(dir: &Path, i: usize, s: &crate::lab::Step) -> Result<Option<PathBuf>, LoadError> {
    if let Some(d) = &s.dir
        && !crate::lab::inside(d)
    {
        return Err(LoadError::Invalid {
            file: dir.join(crate::lab::FILE),
            why: format!("step {} ({}): dir {:?} is not a name inside the lab directory", i + 1, s.experiment, d),
        });
    }
    let path = s.dir.as_ref().map(|d| dir.join(d));
    if let Some(p) = &path
        && std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(LoadError::Invalid {
            file: p.clone(),
            why: "is a symbolic link; a lab's run directories must be its own".into(),
        });
    }
    Ok(path)
}

/// What a run's record holds once its samples and events are let go: its
/// results, configuration and notes, and the typed entries parsed from them
/// (what `compare` keeps of each directory).
fn held(rec: &RunRecord, entry_size: usize) -> usize {
    use record::weight::value_weight;
    let results = rec.run.results.as_array().map_or(0, Vec::len);
    size_of::<RunRecord>()
        + value_weight(&rec.run.results)
        + value_weight(&rec.run.config)
        + rec.run.notes.iter().map(|n| n.capacity() + 32).sum::<usize>()
        + rec.run.command_line.iter().map(|n| n.capacity() + 32).sum::<usize>()
        + results * entry_size
}

/// What a report is made of: a lab directory, or a single run directory.
pub struct Report {
    pub dir: PathBuf,
    pub lab: Option<Lab>,
    pub sections: Vec<Section>,
    /// Charts and Markdown a full disk kept from being written: the report
    /// is read whole without them (issue 59), and says which.
    pub unwritten: Vec<String>,
    /// A run that `pagelab bench controls` made under a control says so
    /// ([`crate::control`]); a lab never is one.
    pub control: Option<crate::control::Mark>,
}

/// Why a step of a lab whose process is gone reads "killed".
fn killed_why(lab: &Lab) -> String {
    let who = lab.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
    format!(
        "the lab{who} was killed while this step ran; `pagelab lab --resume` on this directory runs it again and \
         keeps the steps that finished"
    )
}

fn run_state(rec: &RunRecord) -> (String, Option<String>) {
    // RunRecord::load has already turned "running" into "interrupted" when the
    // process that wrote the run is gone.
    (rec.run.status.state.to_string(), rec.run.status.reason.clone())
}

/// Whether loading a report writes charts and Markdown into the run directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    /// Read only (compare).
    Never,
    /// Render runs that have no `<experiment>.md` yet.
    IfMissing,
    /// Render every run anew.
    Always,
}

impl Report {
    /// Loads a lab directory (lab.json) or a run directory (run.json).
    /// `cat` is the experiments it knows (the binary's `experiments::catalog()`);
    /// each run's results are parsed here, once.
    pub fn load(dir: &Path, render: Render, cat: Catalog) -> Result<Report, LoadError> {
        Report::load_within(dir, render, cat, &Budget::default())
    }

    /// [`Report::load`], with what the records hold charged to `budget`
    /// (`compare` reads both labs within one).
    pub fn load_within(dir: &Path, render: Render, cat: Catalog, budget: &Budget) -> Result<Report, LoadError> {
        if dir.join(crate::lab::FILE).exists() {
            Report::load_lab(dir, render, cat, budget)
        } else if dir.join("run.json").exists() {
            let (rec, parsed) = load_run(dir, cat, budget)?;
            let control = crate::control::Mark::load(dir)?;
            let unwritten: Vec<String> =
                render_run(cat, dir, &rec, &parsed, wants_render(render, dir, &rec))?.into_iter().collect();
            let (state, reason) = run_state(&rec);
            let seconds = rec.run.ended_unix_ms.map(|e| e.saturating_sub(rec.run.started_unix_ms) as f64 / 1e3);
            Ok(Report {
                dir: dir.to_path_buf(),
                unwritten,
                control,
                lab: None,
                sections: vec![Section {
                    experiment: rec.run.experiment.clone(),
                    exp: cat.find(&rec.run.experiment),
                    state,
                    reason,
                    note: None,
                    seconds,
                    dir: Some(dir.to_path_buf()),
                    record: Some(rec),
                    more: Vec::new(),
                    findings: Vec::new(),
                    parsed: vec![(1, parsed)],
                }],
            }
            .judge(cat))
        } else {
            Err(LoadError::NotARecord(dir.into()))
        }
    }

    /// A lab directory: every step's run loaded and parsed first, then the
    /// charts drawn, so that a lab whose third run is refused leaves the
    /// first two as they were.
    fn load_lab(dir: &Path, render: Render, cat: Catalog, budget: &Budget) -> Result<Report, LoadError> {
        let lab = Lab::load_within(dir, budget)?;
        let mut sections = Vec::new();
        // Later passes' runs: (directory, section, index in its `more`).
        let mut later: Vec<(PathBuf, String, usize)> = Vec::new();
        if lab.steps.len() > crate::lab::MAX_STEPS {
            return Err(LoadError::Invalid {
                file: dir.join(crate::lab::FILE),
                why: format!(
                    "{} steps; a lab has at most {} (one per experiment and pass)",
                    lab.steps.len(),
                    crate::lab::MAX_STEPS
                ),
            });
        }
        let live = lab.live();
        for (i, s) in lab.steps.iter().enumerate() {
            let path = step_dir(dir, i, s)?;
            let record = match &path {
                Some(p) if p.join("run.json").exists() => Some(load_run(p, cat, budget)?),
                _ => None,
            };
            // A later pass adds its repeats to the first pass's section; one
            // that did not complete adds nothing (its repeats may be partial).
            if s.pass > 1 {
                if let (Some((rec, parsed)), Some(sec)) =
                    (record, sections.iter_mut().find(|x: &&mut Section| x.experiment == s.experiment))
                    && s.state == crate::lab::StepState::Complete
                {
                    if let Some(p) = &path {
                        later.push((p.clone(), sec.experiment.clone(), sec.more.len()));
                    }
                    sec.more.push((s.pass, rec));
                    sec.parsed.push((s.pass, parsed));
                    sec.seconds = Some(sec.seconds.unwrap_or(0.0) + s.seconds.unwrap_or(0.0));
                }
                continue;
            }
            // A step still "running" in lab.json: the run's own record knows
            // whether its process is alive (running) or died (interrupted).
            let (state, reason) = match (&record, s.state) {
                // The lab's process is gone while this step ran: it was
                // killed with the lab, whatever its child wrote on the way
                // out (issue 59: not "running").
                (_, crate::lab::StepState::Running) if !live => ("killed".into(), Some(killed_why(&lab))),
                (Some((rec, _)), crate::lab::StepState::Running) => run_state(rec),
                // Not run: the lab's process is gone (a lab from before
                // pid-keeping: it has not ended).
                (None, crate::lab::StepState::Running | crate::lab::StepState::Planned)
                    if (lab.pid.is_some() && !live) || (lab.pid.is_none() && lab.ended_unix_ms.is_none()) =>
                {
                    ("not run".into(), Some("the lab ended before this experiment finished".into()))
                }
                _ => (s.state.word().to_string(), s.reason.clone()),
            };
            let (record, parsed) = match record {
                Some((rec, p)) => (Some(rec), vec![(1, p)]),
                None => (None, Vec::new()),
            };
            sections.push(Section {
                experiment: s.experiment.clone(),
                exp: cat.find(&s.experiment),
                state,
                reason,
                note: s.note.clone(),
                seconds: s.seconds,
                dir: path,
                record,
                more: Vec::new(),
                findings: Vec::new(),
                parsed,
            });
        }
        let unwritten = render_lab(&sections, &later, render, cat)?;
        Ok(Report { dir: dir.to_path_buf(), lab: Some(lab), sections, unwritten, control: None }.judge(cat))
    }

    /// Judges the findings: one family per study (its experiment's findings)
    /// and one for pagelab's own checks, with Holm inside each, so that the
    /// chance of any wrong verdict about a study is at most 5 %
    /// (docs/stability.md).
    ///
    /// A budgeted lab planned later passes, and splits the error between them
    /// ([`Lab::alpha_by_pass`]). The first pass judges on its own repeats at
    /// its share. A later pass k judges each finding still inconclusive on
    /// every pass's repeats, each pass tested alone and the one-sided p-values
    /// combined with the weights lab.json fixed before any data
    /// ([`verdict::judge_stages`]); a finding keeps the verdict of the first
    /// pass that decided it.
    pub fn judge(mut self, cat: Catalog) -> Report {
        let alphas = self.alpha_by_pass();
        let weights = self.pass_weights();
        // Pass 1.
        for s in &mut self.sections {
            let runs = s.runs_of(1);
            s.findings = match s.exp {
                Some(e) if !runs.is_empty() => verdict::verdicts_of_runs(e, &runs),
                _ => Vec::new(),
            };
        }
        let all: Vec<&mut Verdict> = self.sections.iter_mut().flat_map(|s| s.findings.iter_mut()).collect();
        verdict::families(all, &|id| cat.claim(id), alphas[0]);
        // Each family's size in the first pass: the later passes' Bonferroni.
        let mut sizes: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for v in self.sections.iter().flat_map(|s| s.findings.iter()).filter(|v| v.p.is_some()) {
            *sizes.entry(v.family_name.clone()).or_default() += 1;
        }
        let ran = self.sections.iter().flat_map(|s| s.parsed.iter().map(|(p, _)| *p)).max().unwrap_or(1);
        for pass in 2..=ran.min(alphas.len() as u32) {
            let alpha = alphas[pass as usize - 1];
            for s in &mut self.sections {
                let Some(e) = s.exp else { continue };
                if s.runs_of(pass).is_empty() {
                    continue;
                }
                // Each pass's findings on its own repeats.
                let stages: Vec<Vec<Verdict>> = (1..=pass)
                    .map(|p| {
                        let runs = s.runs_of(p);
                        if runs.is_empty() { Vec::new() } else { verdict::verdicts_of_runs(e, &runs) }
                    })
                    .collect();
                for v in s.findings.iter_mut().filter(|v| v.outcome == verdict::Outcome::Inconclusive) {
                    let Some(c) = cat.claim(v.id) else { continue };
                    let each: Vec<Option<&Verdict>> =
                        stages.iter().map(|st| st.iter().find(|x| x.id == v.id)).collect();
                    let family = sizes.get(&v.family_name).copied().unwrap_or(1);
                    verdict::judge_later(v, &c, &each, &weights, alpha, family, pass);
                }
            }
        }
        if let Some(floor) = self.lab.as_ref().and_then(|l| noise_floor(&crate::lab::Doctor::from_json(&l.doctor))) {
            for v in self.sections.iter_mut().flat_map(|s| s.findings.iter_mut()) {
                mark_below_noise(v, floor);
            }
        }
        self
    }

    /// The weight of each pass's p-values in a later pass's combination
    /// ([`Lab::pass_weights`]; one pass: 1).
    pub fn pass_weights(&self) -> Vec<f64> {
        self.lab.as_ref().map_or_else(|| vec![1.0], Lab::pass_weights)
    }

    /// The family-wise error each pass spent: all of it in one pass unless
    /// the lab planned more.
    pub fn alpha_by_pass(&self) -> Vec<f64> {
        self.lab.as_ref().map_or_else(|| verdict::alpha_by_pass(1), Lab::alpha_by_pass)
    }

    /// The findings as a document (`report --json`, lab.json).
    /// What its records hold without their samples and events ([`held`]).
    pub fn held_weight(&self) -> usize {
        let mut w = 0;
        for s in &self.sections {
            let size = s.exp.map_or(0, |e| e.entry_size());
            for rec in s.record.iter().chain(s.more.iter().map(|(_, r)| r)) {
                w += held(rec, size);
            }
        }
        w
    }

    pub fn findings_doc(&self) -> verdict::Findings<'_> {
        verdict::Findings::of(self.findings()).with_passes(self.alpha_by_pass())
    }

    /// Every finding of the report, with its experiment.
    pub fn findings(&self) -> Vec<(&str, &Verdict)> {
        self.sections.iter().flat_map(|s| s.findings.iter().map(move |v| (s.experiment.as_str(), v))).collect()
    }

    pub(crate) fn environment(&self) -> Option<&probe::environment::Environment> {
        self.sections.iter().find_map(|s| s.record.as_ref()).map(|r| &r.run.environment)
    }
}

/// The machine's noise floor as doctor measured it before the lab: how far
/// the slowest run of a fixed CPU loop was from the fastest (0.012 for 1.2 %).
pub fn noise_floor(doctor: &crate::lab::Doctor) -> Option<f64> {
    doctor.noise?.max_over_min.filter(|x| x.is_finite() && *x >= 1.0).map(|x| x - 1.0)
}

/// A comparison of arms (a ratio, "÷") whose estimated effect is smaller than
/// the machine's noise floor says so in its reason: side by side, drift
/// cancels, but an effect that small is one this machine barely resolves.
pub fn mark_below_noise(v: &mut Verdict, floor: f64) {
    let Some(e) = v.estimate.filter(|e| *e > 0.0) else { return };
    if !v.quantity.contains('÷') || floor <= 0.0 || e.ln().abs() >= (1.0 + floor).ln() {
        return;
    }
    v.why = format!(
        "{}; the effect ({} %) is smaller than this machine's noise floor ({} %: a fixed loop's slowest ÷ fastest run)",
        v.why,
        record::stats::claim::num(100.0 * (e - 1.0)),
        record::stats::claim::num(100.0 * floor)
    );
}
