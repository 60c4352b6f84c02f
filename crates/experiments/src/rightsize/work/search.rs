//! The search for the smallest limit, apart from how a run is made: a
//! [`Runner`] runs the program once (unlimited or under a limit, stopped at a
//! time cap) and the search decides where to spend the next run.
//!
//! 1. One unlimited run: its runtime, its peak charge and, where the runner
//!    can tell, its working set (what it touched after its first moments).
//! 2. A search between nothing and the peak (rounded to MiB): first just above
//!    and just below the working set when there is one (a model's guess, to
//!    be checked), then bisection. A limit *fits* when a single run there takes
//!    at most 1 + s/2 times the unlimited runs' median (half the target, so
//!    that the verification's interval has room; in simulation this verifies
//!    more programs than a threshold of 1 + s); a run past the time cap,
//!    or OOM-killed, is stopped at once and does not fit. It stops when the
//!    bracket is narrower than the resolution or the run budget leaves only
//!    the verification.
//! 3. Verification at the smallest limit that fit: `pairs` pairs of an
//!    unlimited and a limited run side by side, in ABBA order, so that a drift
//!    of the machine's speed cancels in each pair's ratio (this machine
//!    drifts by tens of percent over minutes; two runs side by side agree far
//!    better). The limit is recommended when the 95 % interval of the pairs'
//!    ratios (the verdicts' t interval on the logs, [`claim::estimate`]) lies
//!    within 1 + s. The first verification takes every run the search left
//!    over (at least `pairs` pairs). Probe runs do not count: they were chosen
//!    because they were fast. If it does not hold and the budget allows, the
//!    next larger limit that fit (or halfway to the peak) is verified instead.

use record::stats::claim;

pub const MIB: u64 = 1 << 20;

/// What one run of the program came to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    Ok,
    /// Stopped at the time cap.
    TooSlow,
    /// Killed by the OOM killer in its group.
    Oom,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    pub seconds: f64,
    pub outcome: Outcome,
    /// Peak charge of the run's group, bytes.
    pub peak_bytes: u64,
    /// What it touched after its first moments (an unlimited run's), bytes.
    pub working_set: Option<u64>,
}

/// Why a run is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Baseline,
    Probe,
    Verify,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Baseline => "baseline",
            Role::Probe => "probe",
            Role::Verify => "verify",
        }
    }
}

/// Runs the program once: `limit` None for unlimited; stopped (TooSlow) once
/// it has run `cap_s` seconds, if given.
pub trait Runner {
    type Error;
    fn run(&mut self, role: Role, limit: Option<u64>, cap_s: Option<f64>) -> Result<Trial, Self::Error>;
    /// Progress: the bracket after each probe, said to the user.
    fn progress(&mut self, _msg: &str) {}
}

#[derive(Debug, Clone, Copy)]
pub struct SearchConfig {
    /// The slowdown accepted (0.10 = 10 %).
    pub slowdown: f64,
    /// Runs of the program in all.
    pub max_runs: u32,
    /// Pairs in a verification.
    pub pairs: u32,
    /// A limited run is stopped at this many times the unlimited median.
    pub cap_factor: f64,
    /// The bisection stops when the bracket is at most this share of the peak.
    pub resolution: f64,
    /// Wall time for everything, seconds.
    pub budget_s: f64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig { slowdown: 0.05, max_runs: 12, pairs: 3, cap_factor: 2.0, resolution: 0.05, budget_s: 600.0 }
    }
}

/// Every run made, with its role and limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub role: Role,
    pub limit: Option<u64>,
    pub trial: Trial,
    /// For a verify run: the index (in `runs`) of the run it is paired with.
    pub pair: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub limit: u64,
    /// Limited over unlimited, per pair (a stopped run counts at its cap).
    pub ratios: Vec<f64>,
    pub estimate: Option<claim::Estimate>,
    pub verified: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub runs: Vec<Done>,
    pub peak: u64,
    /// The bracket when the bisection stopped: (too small, fits).
    pub bracket: (u64, u64),
    pub verifications: Vec<Verification>,
    /// The verified limit, if any.
    pub recommended: Option<u64>,
    /// Why nothing was verified, when nothing was.
    pub why_not: Option<String>,
}

impl SearchResult {
    /// The unlimited runs' runtimes.
    pub fn baseline_seconds(&self) -> Vec<f64> {
        self.runs.iter().filter(|d| d.limit.is_none()).map(|d| d.trial.seconds).collect()
    }
}

fn round_mib_up(b: u64) -> u64 {
    b.div_ceil(MIB) * MIB
}

fn median(v: &[f64]) -> f64 {
    record::stats::median(v).unwrap_or(f64::NAN)
}

struct State<'a, R: Runner> {
    cfg: SearchConfig,
    runner: &'a mut R,
    runs: Vec<Done>,
    spent_s: f64,
}

impl<R: Runner> State<'_, R> {
    fn left(&self) -> u32 {
        self.cfg.max_runs.saturating_sub(self.runs.len() as u32)
    }
    fn reference(&self) -> f64 {
        median(&self.runs.iter().filter(|d| d.limit.is_none()).map(|d| d.trial.seconds).collect::<Vec<_>>())
    }
    fn cap(&self) -> f64 {
        self.cfg.cap_factor * self.reference()
    }
    fn run(&mut self, role: Role, limit: Option<u64>, pair: Option<usize>) -> Result<usize, R::Error> {
        let cap = limit.map(|_| self.cap());
        let trial = self.runner.run(role, limit, cap)?;
        self.spent_s += trial.seconds;
        self.runs.push(Done { role, limit, trial, pair });
        Ok(self.runs.len() - 1)
    }
    /// Seconds a verification of `pairs` is expected to take.
    fn verify_cost_of(&self, pairs: u32) -> f64 {
        2.0 * pairs as f64 * self.reference() * 1.1
    }
    fn verify_cost(&self) -> f64 {
        self.verify_cost_of(self.cfg.pairs)
    }
    fn fits(&self, i: usize) -> bool {
        let t = &self.runs[i].trial;
        t.outcome == Outcome::Ok && t.seconds <= self.reference() * (1.0 + self.cfg.slowdown / 2.0)
    }
    fn verify(&mut self, limit: u64, pairs: u32) -> Result<Verification, R::Error> {
        let mut ratios = Vec::new();
        let mut stopped = false;
        for p in 0..pairs as usize {
            // ABBA: limited first in even pairs, unlimited first in odd ones.
            let (l, b) = if p % 2 == 0 {
                let l = self.run(Role::Verify, Some(limit), None)?;
                (l, self.run(Role::Verify, None, None)?)
            } else {
                let b = self.run(Role::Verify, None, None)?;
                (self.run(Role::Verify, Some(limit), None)?, b)
            };
            self.runs[l].pair = Some(b);
            self.runs[b].pair = Some(l);
            let (tl, tb) = (self.runs[l].trial, self.runs[b].trial);
            ratios.push(tl.seconds / tb.seconds);
            if tl.outcome != Outcome::Ok {
                // Stopped or killed: no interval can put it within the target.
                stopped = true;
                break;
            }
        }
        let estimate = claim::estimate(&ratios);
        let verified = !stopped && estimate.is_some_and(|e| e.ci95[1] <= 1.0 + self.cfg.slowdown);
        Ok(Verification { limit, estimate, ratios, verified })
    }
}

/// Searches the smallest limit whose slowdown's 95 % upper bound is within
/// `cfg.slowdown`. Fails only when a run fails (the runner's error).
pub fn search<R: Runner>(cfg: SearchConfig, runner: &mut R) -> Result<SearchResult, R::Error> {
    let mut st = State { cfg, runner, runs: Vec::new(), spent_s: 0.0 };
    let b0 = st.run(Role::Baseline, None, None)?;
    let peak = round_mib_up(st.runs[b0].trial.peak_bytes.max(MIB));
    let (mut lo, mut hi) = (0u64, peak);
    let mut fitted = vec![peak];
    // The model's guess first: just above the working set; then just below it
    // if that fit, or a third higher if it did not.
    // (A working set at or above the peak says it touches everything: the
    // guess starts just under the peak.)
    let ws = st.runs[b0].trial.working_set.map(|w| w.min(peak - peak / 20)).filter(|&w| w >= MIB);
    let above = |w: u64| Some(round_mib_up(w + w / 10 + 4 * MIB)).filter(|&p| p < peak).unwrap_or(round_mib_up(w));
    let mut planned: Vec<u64> = ws.map(|w| vec![above(w)]).unwrap_or_default();
    let mut first_guess = ws.is_some();
    let reserve = 2 * cfg.pairs;
    loop {
        let narrow = (hi - lo) as f64 <= cfg.resolution * peak as f64 || hi - lo <= MIB;
        let runs_left = st.left() > reserve;
        let time_left = st.spent_s + st.cap() + st.verify_cost() <= cfg.budget_s;
        if narrow || !runs_left || !time_left {
            break;
        }
        let mut guessed = false;
        let mid = loop {
            match planned.pop() {
                Some(p) if p > lo && p < hi => {
                    guessed = true;
                    break p;
                }
                Some(_) => continue,
                None => break ((lo + hi) / 2 / MIB).max(1) * MIB,
            }
        };
        if mid <= lo || mid >= hi {
            break;
        }
        let i = st.run(Role::Probe, Some(mid), None)?;
        let fit = st.fits(i);
        if fit {
            hi = mid;
            fitted.push(mid);
        } else {
            lo = mid;
        }
        if let (Some(w), true) = (ws, guessed && std::mem::take(&mut first_guess)) {
            planned = vec![if fit { (w - w / 10) / MIB * MIB } else { round_mib_up(w + w / 3 + 8 * MIB) }];
        }
        let msg = format!("bracket {} – {} MiB", lo / MIB, hi / MIB);
        st.runner.progress(&msg);
    }
    fitted.sort_unstable();
    let bracket = (lo, hi);
    let mut verifications: Vec<Verification> = Vec::new();
    let mut candidate = Some(hi);
    while let Some(c) = candidate {
        if st.left() < reserve || st.spent_s + st.verify_cost() > cfg.budget_s {
            break;
        }
        // The first verification takes the runs the search left over (more
        // pairs narrow the interval) as long as they fit the time budget.
        let mut pairs = cfg.pairs;
        if verifications.is_empty() {
            while pairs < st.left() / 2 && st.spent_s + st.verify_cost_of(pairs + 1) <= cfg.budget_s {
                pairs += 1;
            }
        }
        let v = st.verify(c, pairs)?;
        let ok = v.verified;
        verifications.push(v);
        if ok {
            break;
        }
        // The next larger limit that fit; past the last one, halfway to the peak.
        let next = fitted.iter().copied().find(|&f| f > c && f < peak);
        candidate = next
            .or_else(|| Some((c + peak) / 2 / MIB * MIB).filter(|&h| h > c && c < peak))
            .or_else(|| (c < peak).then_some(peak));
    }
    let recommended = verifications.iter().find(|v| v.verified).map(|v| v.limit);
    let why_not = if recommended.is_some() {
        None
    } else if verifications.is_empty() {
        Some(format!(
            "no verification fit the budget ({} runs, {:.0} s): give more --runs or a longer --budget",
            cfg.max_runs, cfg.budget_s
        ))
    } else {
        let v = verifications.last().expect("one");
        let ci = v.estimate.map(|e| format!("{:.3} – {:.3}", e.ci95[0], e.ci95[1])).unwrap_or_else(|| "none".into());
        Some(format!(
            "the runtime ratio's 95 % interval at {} MiB ({ci}, {} pairs) does not lie within 1 + {:.1} %; \
             more --runs (and --repeat) would narrow it, or the limit is too small",
            v.limit / MIB,
            v.ratios.len(),
            cfg.slowdown * 100.0
        ))
    };
    Ok(SearchResult { runs: st.runs, peak, bracket, verifications, recommended, why_not })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated program whose runtime is a known function of the limit,
    /// with log-normal noise (a fixed-seed generator).
    struct Sim {
        knee: u64,
        peak: u64,
        base: f64,
        sigma: f64,
        /// Below the knee the slowdown grows linearly over this many MiB
        /// (from 1 % to 31 %), then the program thrashes (10×).
        ramp_mib: f64,
        rng: u64,
        /// The working set the runner reports (a model's guess, maybe wrong).
        hint: Option<u64>,
    }

    impl Sim {
        fn true_ratio(&self, limit: Option<u64>) -> f64 {
            match limit {
                None => 1.0,
                Some(l) if l >= self.knee => 1.0 + 0.01 * (self.peak.saturating_sub(l) as f64 / self.peak as f64),
                Some(l) => {
                    let below = (self.knee - l) as f64 / MIB as f64;
                    if below >= self.ramp_mib { 10.0 } else { 1.01 + 0.3 * below / self.ramp_mib }
                }
            }
        }
        fn uniform(&mut self) -> f64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            ((self.rng >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (a, b) = (self.uniform(), self.uniform());
            (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
        }
    }

    impl Runner for Sim {
        type Error = ();
        fn run(&mut self, _role: Role, limit: Option<u64>, cap_s: Option<f64>) -> Result<Trial, ()> {
            let t = self.base * self.true_ratio(limit) * (self.sigma * self.normal()).exp();
            let peak = self.peak;
            Ok(match cap_s {
                Some(c) if t > c => {
                    Trial { seconds: c, outcome: Outcome::TooSlow, peak_bytes: peak, working_set: None }
                }
                _ => Trial {
                    seconds: t,
                    outcome: Outcome::Ok,
                    peak_bytes: peak,
                    working_set: limit.is_none().then_some(self.hint).flatten(),
                },
            })
        }
    }

    fn cfg() -> SearchConfig {
        SearchConfig { slowdown: 0.10, ..Default::default() }
    }

    /// With the working set as a hint (off by up to a fifth either way), a
    /// sharp knee is found within 5 % of the peak in 12 runs; without one, with
    /// three pairs in the verification, too.
    #[test]
    fn a_sharp_knee_is_found_within_five_percent_of_the_peak_in_twelve_runs() {
        for (i, knee_mib) in [40u64, 70, 100, 150, 230].into_iter().enumerate() {
            for (hint, pairs) in [(Some(0.8), 4), (Some(1.0), 4), (Some(1.2), 4), (None, 3)] {
                let mut sim = Sim {
                    knee: knee_mib * MIB,
                    peak: 256 * MIB,
                    base: 5.0,
                    sigma: 0.02,
                    ramp_mib: 0.0,
                    rng: 0x9e37_79b9_7f4a_7c15 + i as u64,
                    hint: hint.map(|f| (knee_mib as f64 * f) as u64 * MIB),
                };
                let r = search(SearchConfig { pairs, ..cfg() }, &mut sim).unwrap();
                assert!(r.runs.len() <= 12, "{} runs", r.runs.len());
                let rec = r.recommended.expect("verified");
                assert!(rec >= sim.knee, "{knee_mib} {hint:?}: recommended {} MiB below the knee", rec / MIB);
                assert!(
                    (rec - sim.knee) as f64 <= 0.05 * sim.peak as f64,
                    "{knee_mib} {hint:?}: recommended {} MiB, knee {knee_mib} MiB",
                    rec / MIB
                );
            }
        }
    }

    #[test]
    fn a_program_that_fits_nowhere_below_its_peak_is_recommended_its_peak() {
        let mut sim =
            Sim { knee: 256 * MIB, peak: 256 * MIB, base: 2.0, sigma: 0.01, ramp_mib: 0.0, rng: 7, hint: None };
        let r = search(cfg(), &mut sim).unwrap();
        assert_eq!(r.recommended, Some(256 * MIB));
        assert_eq!(r.bracket.1, 256 * MIB);
    }

    #[test]
    fn too_slow_probes_are_stopped_at_the_cap() {
        let mut sim =
            Sim { knee: 100 * MIB, peak: 256 * MIB, base: 2.0, sigma: 0.01, ramp_mib: 0.0, rng: 3, hint: None };
        let r = search(cfg(), &mut sim).unwrap();
        let stopped: Vec<&Done> = r.runs.iter().filter(|d| d.trial.outcome == Outcome::TooSlow).collect();
        assert!(!stopped.is_empty());
        assert!(stopped.iter().all(|d| d.trial.seconds <= 2.0 * 2.0 * 1.1));
    }

    /// Over many simulated programs (knees, ramps and noise drawn at random), a
    /// recommended limit's true slowdown exceeds the target in at most 5 % of
    /// cases, and nothing unverified is ever recommended.
    #[test]
    fn the_recommendation_rarely_exceeds_the_target() {
        let mut draw =
            Sim { knee: 0, peak: 0, base: 0.0, sigma: 0.0, ramp_mib: 0.0, rng: 0x1234_5678_9abc_def1, hint: None };
        let mut uni = || draw.uniform();
        let (mut made, mut over) = (0, 0);
        for i in 0..2000u64 {
            let peak = (128 + (uni() * 512.0) as u64) * MIB;
            let knee = ((uni() * 0.9 + 0.05) * peak as f64) as u64 / MIB * MIB;
            let mut sim = Sim {
                knee,
                peak,
                base: 1.0 + uni() * 10.0,
                sigma: 0.005 + uni() * 0.025,
                ramp_mib: uni() * 64.0,
                rng: 0xdead_beef ^ (i * 0x9e37_79b9),
                hint: None,
            };
            // Half with a working-set hint, off by up to 30 % either way.
            if i % 2 == 0 {
                sim.hint = Some((knee as f64 * (0.7 + 0.6 * uni())) as u64);
            }
            let r = search(cfg(), &mut sim).unwrap();
            assert!(r.runs.len() <= 12);
            if let Some(rec) = r.recommended {
                made += 1;
                assert!(r.verifications.iter().any(|v| v.limit == rec && v.verified));
                if sim.true_ratio(Some(rec)) > 1.10 {
                    over += 1;
                }
            }
        }
        eprintln!("{made} of 2000 recommended, {over} over the target");
        assert!(made > 1000, "only {made} of 2000 recommended");
        assert!(over as f64 <= 0.05 * made as f64, "{over} of {made} over the target");
    }

    #[test]
    fn the_budget_bounds_the_runs() {
        let mut sim =
            Sim { knee: 100 * MIB, peak: 256 * MIB, base: 2.0, sigma: 0.01, ramp_mib: 0.0, rng: 5, hint: None };
        let r = search(SearchConfig { max_runs: 8, ..cfg() }, &mut sim).unwrap();
        assert!(r.runs.len() <= 8);
        let r = search(SearchConfig { budget_s: 10.0, ..cfg() }, &mut sim).unwrap();
        assert!(r.recommended.is_none() && r.why_not.is_some_and(|w| w.contains("budget")));
    }
}
