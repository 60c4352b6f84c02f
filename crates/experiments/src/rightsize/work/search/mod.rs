//! The search for the smallest limit, apart from how a run is made: a
//! [`Runner`] runs the program once (unlimited or under a limit, stopped at a
//! time cap) and the search decides where to spend the next run.
//!
//! The unit of evidence is a **pair**: a limited run and an unlimited run
//! side by side (limited first in even pairs, unlimited first in odd ones:
//! ABBA), and its log ratio. This machine's speed drifts by tens of percent
//! over minutes; two runs side by side agree far better, so a pair cancels the
//! drift. Every limited run, probe or verification, has its pair.
//!
//! 1. **Baseline**: `baselines` unlimited runs: the runtime, the peak charge,
//!    the working set (from the first), and the spread.
//! 2. **Plan**: from that spread, the pairs a verification needs for 80 %
//!    power at a limit that costs a quarter of the target, and whether the run
//!    and time budget buy them. When they do not, the search says which target
//!    this budget can verify and stops with the safe answer (the peak), unless
//!    told to go on (`insist`).
//! 3. **Search**, between nothing and the peak: first just above the working
//!    set, then just below it if that fit (or a third higher if not), then
//!    bisection. A limit *fits* when its pair's log ratio is within half the
//!    target. A pair that misses by less than two pair spreads gets a second
//!    pair before the bracket moves: one noisy run is never the evidence for
//!    "too slow", unless it passed the time cap or was OOM-killed.
//! 4. **Verification**, at the smallest limit that fit, with fresh pairs
//!    only (the probe there was chosen for being fast): looks after `pairs`
//!    pairs, then after about half as many again each time. At each look the
//!    one-sided upper bound of the mean log ratio is compared with
//!    ln(1 + s). The bound is t's, with the spread of the candidate's own
//!    pairs (never the unlimited runs': a run under a limit is the noisier
//!    one), and that spread is never taken below what paging's unseen stalls
//!    could add ([`STALL_SHARE`] of limited runs at +[`STALL_SLOWDOWN`]:
//!    [`stall_sd`]), because a few pairs that show no stall say little about
//!    a stall that comes in one limited run of seven. The looks spend α by the share of the pairs the budget buys
//!    that they have used ([`spend`], fixed before the first verification
//!    pair; a Bonferroni split over the looks), so the chance that any look,
//!    at any candidate, accepts a limit whose true slowdown exceeds s is at
//!    most α, however the looks and candidates went. A look whose one-sided 95 %
//!    lower bound is already above the target stops the candidate (futility,
//!    which costs no α), and the next larger limit that fit (or halfway to the
//!    peak, or the peak) is verified instead.

pub mod check;
mod plan;
#[cfg(test)]
mod tests;

pub use plan::{looks, plan, power, spend, t_upper};

pub const MIB: u64 = 1 << 20;

/// The stalls the verification allows for without having seen them: under a
/// limit a run can stall in reclaim or in a burst of major faults, which an
/// unlimited run beside it never does. The verification holds its α when up
/// to this share of the limited runs stall ...
pub const STALL_SHARE: f64 = 0.15;
/// ... each this much slower (+40 %), with no stall among the pairs seen.
pub const STALL_SLOWDOWN: f64 = 0.40;

/// The spread (log) that stalls at [`STALL_SHARE`] and [`STALL_SLOWDOWN`]
/// give a pair: √(p(1 − p)) · ln(1 + s), 0.120. A candidate's pair spread is
/// never taken below it: the count of stalls among n pairs is binomial, so
/// how far its mean can fall short of the truth (stalls not seen) scales as
/// this spread over √n, and t's margin covers it.
pub fn stall_sd() -> f64 {
    (STALL_SHARE * (1.0 - STALL_SHARE)).sqrt() * (1.0 + STALL_SLOWDOWN).ln()
}

/// The spread a verification's bound uses: the candidate's own pairs' `sd`,
/// at least [`stall_sd`].
pub fn verify_sd(sd: f64) -> f64 {
    if sd.is_finite() { sd.max(stall_sd()) } else { sd }
}

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
    /// What it touched in its steady part (the first unlimited run's), bytes.
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
    /// Progress: the plan, the bracket after each probe, each look, said to the user.
    fn progress(&mut self, _msg: &str) {}
}

#[derive(Debug, Clone, Copy)]
pub struct SearchConfig {
    /// The slowdown accepted (0.10 = 10 %).
    pub slowdown: f64,
    /// Runs of the program in all.
    pub max_runs: u32,
    /// Pairs before a verification's first look.
    pub pairs: u32,
    /// A limited run is stopped at this many times the unlimited median.
    pub cap_factor: f64,
    /// The bisection stops when the bracket is at most this share of the peak.
    pub resolution: f64,
    /// Wall time for everything, seconds.
    pub budget_s: f64,
    /// Unlimited runs before the first limited one.
    pub baselines: u32,
    /// The chance, at most, of recommending a limit whose true slowdown
    /// exceeds the target (one-sided).
    pub alpha: f64,
    /// Go on when the plan says the budget cannot verify the target.
    pub insist: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            slowdown: 0.05,
            max_runs: 40,
            pairs: 3,
            cap_factor: 2.0,
            resolution: 0.05,
            budget_s: 600.0,
            baselines: 4,
            alpha: 0.05,
            insist: false,
        }
    }
}

/// Every run made, with its role and limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub role: Role,
    pub limit: Option<u64>,
    pub trial: Trial,
    /// The index (in `runs`) of the run it is paired with.
    pub pair: Option<usize>,
}

/// A limited run and the unlimited run beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub limit: u64,
    pub limited: usize,
    pub unlimited: usize,
    /// ln(limited ÷ unlimited); a stopped run counts at its cap.
    pub log_ratio: f64,
    /// The limited run ended on its own (not stopped, not OOM-killed).
    pub ok: bool,
    pub role: Role,
}

/// One look of a verification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// Fresh pairs at the limit so far.
    pub pairs: u32,
    /// The share of α this look spends.
    pub alpha: f64,
    /// Degrees of freedom of the pooled spread.
    pub df: f64,
    /// The runtime ratio (geometric mean of the pairs').
    pub ratio: f64,
    /// One-sided upper bound at this look's α.
    pub upper: f64,
    /// One-sided 95 % lower bound (futility).
    pub lower: f64,
    /// One-sided lower bound at this look's share of α (`--check`'s "too slow").
    pub lower_spent: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub limit: u64,
    /// Limited over unlimited, per pair (a stopped run counts at its cap).
    pub ratios: Vec<f64>,
    pub looks: Vec<Look>,
    pub verified: bool,
    /// `verified`, `futile` (its lower bound above the target, or a run
    /// stopped), `too slow` or `oom` (`--check`), or `out of runs`.
    pub ended: &'static str,
    /// Limited runs stopped at the time cap (counted at the cap), and
    /// killed by the OOM killer (`--check` goes on past them to its look).
    pub capped: u32,
    pub oom: u32,
}

impl Verification {
    /// The last look (its upper bound is at that look's share of α).
    pub fn last(&self) -> Option<&Look> {
        self.looks.last()
    }
}

/// What the budget allows, decided from the unlimited runs before the first
/// limited one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The spread of a pair's log ratio the plan assumes (√2 × the unlimited
    /// runs' log sd, at least 2 %).
    pub pair_sd: f64,
    /// Verification pairs for 80 % power at a limit that costs a quarter of
    /// the target; None when no count up to 400 gives it.
    pub pairs_needed: Option<u32>,
    /// Runs the whole search needs: baselines, probes, the verification.
    pub runs_needed: Option<u32>,
    /// Runs the budget buys (--runs, and --budget at the unlimited median).
    pub runs_affordable: u32,
    /// The budget buys the pairs needed.
    pub enough: bool,
    /// The smallest target this budget can verify at this noise.
    pub verifiable_slowdown: Option<f64>,
    /// The probe pairs the plan assumes the search takes.
    pub probe_pairs: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub runs: Vec<Done>,
    pub pairs: Vec<Pair>,
    pub peak: u64,
    /// The bracket when the bisection stopped: (too small, fits).
    pub bracket: (u64, u64),
    pub plan: Option<Plan>,
    pub verifications: Vec<Verification>,
    /// The verified limit, if any.
    pub recommended: Option<u64>,
    /// Why nothing was verified, when nothing was.
    pub why_not: Option<String>,
    /// The pooled spread of a pair's log ratio at the end, and its degrees of freedom.
    pub pair_sd: (f64, f64),
}

impl SearchResult {
    /// The unlimited runs' runtimes.
    pub fn baseline_seconds(&self) -> Vec<f64> {
        self.runs.iter().filter(|d| d.limit.is_none()).map(|d| d.trial.seconds).collect()
    }
    /// The unverified candidate with the lowest upper bound (each at its last
    /// look's α), when nothing verified.
    pub fn best_unverified(&self) -> Option<&Verification> {
        if self.recommended.is_some() {
            return None;
        }
        self.verifications
            .iter()
            .filter(|v| v.last().is_some())
            .min_by(|a, b| a.last().unwrap().upper.total_cmp(&b.last().unwrap().upper))
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
    pairs: Vec<Pair>,
    spent_s: f64,
    /// `--check`: a limited run stopped at the cap or OOM-killed does not end
    /// the limit's pairs at once (see [`State::verify`]).
    check_mode: bool,
    /// The unlimited runs before the first limited one whose spread counts
    /// (until the pairs have degrees of freedom of their own): all but the
    /// first, a warm-up (its page cache may be cold), when there are three
    /// or more.
    spread_runs: std::ops::Range<usize>,
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
    fn run(&mut self, role: Role, limit: Option<u64>) -> Result<usize, R::Error> {
        let cap = limit.map(|_| self.cap());
        let trial = self.runner.run(role, limit, cap)?;
        self.spent_s += trial.seconds;
        self.runs.push(Done { role, limit, trial, pair: None });
        Ok(self.runs.len() - 1)
    }
    /// Pairs the remaining runs and time buy.
    fn pairs_affordable(&self) -> u32 {
        let by_time = ((self.cfg.budget_s - self.spent_s) / (2.0 * self.reference() * 1.1)).floor().max(0.0) as u32;
        (self.left() / 2).min(by_time)
    }
    /// One pair at `limit`: limited first in even pairs, unlimited first in odd ones.
    fn pair(&mut self, limit: u64, role: Role) -> Result<Pair, R::Error> {
        let (l, b) = if self.pairs.len() % 2 == 0 {
            let l = self.run(role, Some(limit))?;
            (l, self.run(role, None)?)
        } else {
            let b = self.run(role, None)?;
            (self.run(role, Some(limit))?, b)
        };
        self.runs[l].pair = Some(b);
        self.runs[b].pair = Some(l);
        let (tl, tb) = (self.runs[l].trial, self.runs[b].trial);
        let p = Pair {
            limit,
            limited: l,
            unlimited: b,
            log_ratio: (tl.seconds / tb.seconds).ln(),
            ok: tl.outcome == Outcome::Ok,
            role,
        };
        self.pairs.push(p);
        Ok(p)
    }
    /// The spread of a pair's log ratio, pooled over every verification pair
    /// that ended on its own, the limit as a factor (each limit's own mean);
    /// while those give fewer than 4 degrees of freedom, the baseline runs'
    /// spread (× √2, for a difference of two runs; drift only makes it
    /// larger) counts too. The probes' pairs are left out: a probe is
    /// repeated only when its first pair landed near the threshold, which
    /// makes the spread of a repeated probe too small. (sd, df); sd NaN when
    /// there are no degrees of freedom at all.
    fn pooled(&self) -> (f64, f64) {
        let fresh = |p: &&Pair| p.ok && p.role == Role::Verify;
        let mut limits: Vec<u64> = self.pairs.iter().filter(fresh).map(|p| p.limit).collect();
        limits.sort_unstable();
        limits.dedup();
        let (mut ss, mut df) = (0.0, 0.0);
        for l in limits {
            let y: Vec<f64> = self.pairs.iter().filter(fresh).filter(|p| p.limit == l).map(|p| p.log_ratio).collect();
            // The sum of squares about the limit's own mean: var × (n − 1).
            if let Some((_, var)) = record::stats::mean_var(&y) {
                ss += var * (y.len() as f64 - 1.0);
                df += y.len() as f64 - 1.0;
            }
        }
        if df < 4.0 {
            let b: Vec<f64> = self.runs[self.spread_runs.clone()].iter().map(|d| d.trial.seconds.ln()).collect();
            if let Some((_, var)) = record::stats::mean_var(&b) {
                ss += 2.0 * var * (b.len() as f64 - 1.0);
                df += b.len() as f64 - 1.0;
            }
        }
        if df > 0.0 { ((ss / df).sqrt(), df) } else { (f64::NAN, 0.0) }
    }
    /// A probe at `limit`: does it fit (within half the target)?
    fn probe(&mut self, limit: u64, theta: f64, reserve: u32) -> Result<bool, R::Error> {
        let threshold = theta / 2.0;
        let p = self.pair(limit, Role::Probe)?;
        if !p.ok {
            return Ok(false);
        }
        if p.log_ratio <= threshold {
            return Ok(true);
        }
        let sd = self.pooled().0;
        let near = !sd.is_finite() || p.log_ratio < threshold + 2.0 * sd;
        if near && self.left() >= reserve + 2 && self.pairs_affordable() * 2 >= reserve + 2 {
            let q = self.pair(limit, Role::Probe)?;
            return Ok(q.ok && (p.log_ratio + q.log_ratio) / 2.0 <= threshold);
        }
        Ok(false)
    }
}

/// Searches the smallest limit whose slowdown is verified within
/// `cfg.slowdown` (the one-sided upper bound, α split over the looks). Fails
/// only when a run fails (the runner's error).
/// The working set the search starts from: at most 95 % of the (rounded)
/// peak, None under a MiB.
pub fn usable_working_set(ws: u64, peak: u64) -> Option<u64> {
    Some(ws.min(peak - peak / 20)).filter(|&w| w >= MIB)
}

/// The search's first probe from a working set `w` under a rounded `peak`:
/// just above it (W + 10 % + 4 MiB), or W itself where that reaches the peak.
pub fn first_probe(w: u64, peak: u64) -> u64 {
    Some(round_mib_up(w + w / 10 + 4 * MIB)).filter(|&p| p < peak).unwrap_or(round_mib_up(w))
}

pub fn search<R: Runner>(cfg: SearchConfig, runner: &mut R) -> Result<SearchResult, R::Error> {
    let mut st = State { cfg, runner, runs: Vec::new(), pairs: Vec::new(), spent_s: 0.0, spread_runs: 0..0, check_mode: false };
    for _ in 0..cfg.baselines.max(1) {
        st.run(Role::Baseline, None)?;
    }
    let nb = st.runs.len();
    st.spread_runs = if nb >= 3 { 1..nb } else { 0..nb };
    let peak = round_mib_up(st.runs.iter().map(|d| d.trial.peak_bytes).max().unwrap_or(0).max(MIB));
    let ws = st.runs.iter().find_map(|d| d.trial.working_set).and_then(|w| usable_working_set(w, peak));
    let base: Vec<f64> = st.runs[st.spread_runs.clone()].iter().map(|d| d.trial.seconds).collect();
    let base_sd = claim_log_sd(&base);
    // Probes the plan assumes: two from the working set, else a bisection to
    // the resolution (the second pairs near the threshold come out of the
    // same runs).
    let probe_pairs = if ws.is_some() { 3 } else { ((1.0 / cfg.resolution).log2().ceil() as u32).clamp(2, 6) };
    let the_plan = plan(&cfg, base_sd, base.len() as f64 - 1.0, st.reference(), nb as u32, probe_pairs);
    let msg = the_plan.describe(&cfg);
    st.runner.progress(&msg);
    let (bracket, verifications, why_not) = if !the_plan.enough && !cfg.insist {
        let lone = plan::lone_slow_run(&base).map(|h| format!("; {h}")).unwrap_or_default();
        let why =
            format!("{msg}; give more --runs or a longer --budget, a larger --slowdown, or --insist to try anyway{lone}");
        ((0, peak), Vec::new(), Some(why))
    } else {
        let first = cfg.pairs.max(2);
        // The verification keeps the pairs the plan asked for (at least its
        // first look's), out of what the budget buys after the probes.
        let reserve = 2 * the_plan.pairs_needed.unwrap_or(u32::MAX / 4).clamp(
            first,
            (the_plan.runs_affordable.saturating_sub(st.runs.len() as u32 + 2 * probe_pairs) / 2).max(first),
        );
        let (bracket, fitted) = st.bisect(peak, ws, reserve)?;
        let vs = st.verify_from(bracket.1, &fitted, peak)?;
        let why = why_not(&cfg, &vs);
        (bracket, vs, why)
    };
    let recommended = verifications.iter().find(|v| v.verified).map(|v| v.limit);
    let pair_sd = st.pooled();
    Ok(SearchResult {
        runs: st.runs,
        pairs: st.pairs,
        peak,
        bracket,
        plan: Some(the_plan),
        verifications,
        recommended,
        why_not,
        pair_sd,
    })
}

/// The verification as built, or one of the tests' mutants (each a way to
/// get the error rate wrong, which the tests of the error rate must catch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Mutant {
    None,
    /// The full α at every look, on the candidate's own pairs, no stall floor.
    Naive,
    /// The unlimited runs' spread (× √2, with their degrees of freedom)
    /// stands for the candidate's, as if a run under a limit were as steady
    /// as one without; the stall floor kept.
    Borrow,
    /// Round two's rule: the spread pooled over every verification pair, the
    /// unlimited runs' spread borrowed while that has fewer than 4 degrees of
    /// freedom, no stall floor.
    Pooled,
    /// Round two's borrowing alone: as `Pooled`, with the stall floor kept.
    PooledFloored,
}

#[cfg(test)]
thread_local! {
    /// Set by the tests: which verification runs (see `verify`).
    pub(crate) static MUTANT: std::cell::Cell<Mutant> = const { std::cell::Cell::new(Mutant::None) };
}

fn mutant() -> Mutant {
    #[cfg(test)]
    return MUTANT.with(|c| c.get());
    #[cfg(not(test))]
    Mutant::None
}

/// `--check`'s decision at a look, or None to go on: an OOM kill ends it;
/// with no run stopped at the cap, the upper bound within the target
/// verifies; the lower bound at the look's share of α above the target is
/// too slow (a capped run counts at its cap, which only lowers that bound);
/// with no pair left (`more` false) it is undecided (`out of runs`). It
/// never stops early for want of hope: the user gave the pairs, and an
/// estimate from three pairs is too rough to give up on.
fn check_look(v: &Verification, look: &Look, theta: f64, more: bool) -> Option<&'static str> {
    if v.oom > 0 {
        return Some("oom");
    }
    if v.capped == 0 && look.upper.is_finite() && look.upper.ln() <= theta {
        return Some("verified");
    }
    if look.lower_spent.ln() > theta {
        return Some("too slow");
    }
    (!more).then_some("out of runs")
}

/// The sample standard deviation of log ratios (NaN for fewer than two).
pub fn log_sd(ys: &[f64]) -> f64 {
    record::stats::sd(ys).unwrap_or(f64::NAN)
}

/// The sample standard deviation of the logs (0 for fewer than two): the
/// verdicts' estimate's.
fn claim_log_sd(v: &[f64]) -> f64 {
    record::stats::claim::estimate(v).map_or(0.0, |e| e.log_sd)
}

/// Why nothing verified (None when something did).
fn why_not(cfg: &SearchConfig, verifications: &[Verification]) -> Option<String> {
    if verifications.iter().any(|v| v.verified) {
        return None;
    }
    let Some(v) = verifications.last() else {
        return Some(format!(
            "no verification fit the budget ({} runs, {:.0} s): give more --runs or a longer --budget",
            cfg.max_runs, cfg.budget_s
        ));
    };
    let bound = v.last().map(|l| format!("upper bound {:.3}", l.upper)).unwrap_or_else(|| "no look".into());
    Some(format!(
        "at {} MiB the runtime ratio's {bound} after {} pairs ({}) is not within 1 + {:.1} %; more --runs would \
         narrow it, or the limit is too small",
        v.limit / MIB,
        v.ratios.len(),
        v.ended,
        cfg.slowdown * 100.0
    ))
}

/// The bracket when the bisection stopped (too small, fits) and every limit
/// that fit, sorted.
type Bisected = ((u64, u64), Vec<u64>);

impl<R: Runner> State<'_, R> {
    /// The bisection: the working set's guesses first, then halves, until the
    /// bracket is narrow or only the verification's `reserve` runs are left.
    /// The bracket (too small, fits) and every limit that fit, sorted.
    fn bisect(&mut self, peak: u64, ws: Option<u64>, reserve: u32) -> Result<Bisected, R::Error> {
        let cfg = self.cfg;
        let theta = (1.0 + cfg.slowdown).ln();
        let (mut lo, mut hi) = (0u64, peak);
        let mut fitted = vec![peak];
        // The model's guess first: just above the working set; then just below
        // it if that fit, or a third higher if it did not. (A working set at or
        // above the peak says it touches everything: the guess starts just under it.)
        let above = |w: u64| first_probe(w, peak);
        let mut planned: Vec<u64> = ws.map(|w| vec![above(w)]).unwrap_or_default();
        let mut first_guess = ws.is_some();
        loop {
            let narrow = (hi - lo) as f64 <= cfg.resolution * peak as f64 || hi - lo <= MIB;
            // Room for a probe and its second pair.
            let room = self.left() >= reserve + 4 && self.pairs_affordable() * 2 >= reserve + 4;
            if narrow || !room {
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
            let fit = self.probe(mid, theta, reserve)?;
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
            self.runner.progress(&msg);
        }
        fitted.sort_unstable();
        Ok(((lo, hi), fitted))
    }

    /// The verifications, from `start` up: the α split over the pairs the
    /// budget buys now, before any of them is run; a futile candidate gives
    /// way to the next larger limit that fit, then halfway to the peak while
    /// the pairs left buy two more candidates, then the peak itself.
    fn verify_from(&mut self, start: u64, fitted: &[u64], peak: u64) -> Result<Vec<Verification>, R::Error> {
        let first = self.cfg.pairs.max(2);
        let n_max = self.pairs_affordable();
        let mut verifications: Vec<Verification> = Vec::new();
        let mut used = 0u32;
        let mut candidate = (n_max >= first).then_some(start);
        while let Some(c) = candidate {
            let v = self.verify(c, n_max, &mut used)?;
            let (verified, futile) = (v.verified, v.ended == "futile");
            verifications.push(v);
            if verified || !futile || n_max.saturating_sub(used) < first {
                break;
            }
            let left = n_max.saturating_sub(used);
            let next = fitted.iter().copied().find(|&f| f > c && f < peak);
            candidate = next
                .or_else(|| Some((c + peak) / 2 / MIB * MIB).filter(|&h| h > c && c < peak && left >= 2 * first))
                .or_else(|| (c < peak).then_some(peak));
        }
        Ok(verifications)
    }

    /// One candidate's verification: fresh pairs up to each look, a look's α
    /// from [`spend`] over `n_max`; `used` counts the verification pairs of
    /// every candidate.
    fn verify(&mut self, c: u64, n_max: u32, used: &mut u32) -> Result<Verification, R::Error> {
        let cfg = self.cfg;
        let theta = (1.0 + cfg.slowdown).ln();
        let first = cfg.pairs.max(2);
        let mut v = Verification {
            limit: c,
            ratios: Vec::new(),
            looks: Vec::new(),
            verified: false,
            ended: "out of runs",
            capped: 0,
            oom: 0,
        };
        let mut ys: Vec<f64> = Vec::new();
        let mut last_look = *used;
        let mut next = first;
        loop {
            // Pairs up to the next look, or as many as are left.
            let want = next.saturating_sub(ys.len() as u32).min(n_max.saturating_sub(*used));
            if want == 0 || (ys.is_empty() && want < first) {
                return Ok(v);
            }
            for _ in 0..want {
                let p = self.pair(c, Role::Verify)?;
                *used += 1;
                ys.push(p.log_ratio);
                v.ratios.push(p.log_ratio.exp());
                if !p.ok {
                    // Stopped or killed: no bound can put it within the target.
                    // (--check counts it and goes on to its look: one capped
                    // run is no evidence of "too slow", and "k of n" needs n.)
                    let oom = self.runs[p.limited].trial.outcome == Outcome::Oom;
                    if !self.check_mode {
                        v.ended = "futile";
                        return Ok(v);
                    }
                    if oom { v.oom += 1 } else { v.capped += 1 }
                }
            }
            let n = ys.len() as f64;
            let mean = record::stats::mean(&ys).unwrap_or(f64::NAN);
            let a = spend(cfg.alpha, *used, n_max) - spend(cfg.alpha, last_look, n_max);
            // The candidate's own pairs' spread, at least the stalls'.
            let (a, sd, df) = match mutant() {
                Mutant::None => (a, verify_sd(log_sd(&ys)), n - 1.0),
                Mutant::Naive => (cfg.alpha, log_sd(&ys), n - 1.0),
                Mutant::Borrow => {
                    // Every unlimited run after the warm-up: the baselines'
                    // and those beside this candidate's limited runs.
                    let b: Vec<f64> = (self.spread_runs.start..self.runs.len())
                        .filter(|&i| self.runs[i].limit.is_none())
                        .map(|i| self.runs[i].trial.seconds)
                        .collect();
                    (a, verify_sd(claim_log_sd(&b) * 2f64.sqrt()), b.len() as f64 - 1.0)
                }
                Mutant::Pooled => {
                    let (sd, df) = self.pooled();
                    (a, sd, df)
                }
                Mutant::PooledFloored => {
                    let (sd, df) = self.pooled();
                    (a, verify_sd(sd), df)
                }
            };
            last_look = *used;
            let se = sd / n.sqrt();
            let look = Look {
                pairs: ys.len() as u32,
                alpha: a,
                df,
                ratio: mean.exp(),
                upper: (mean + t_upper(a, df) * se).exp(),
                lower: (mean - t_upper(0.05, df) * se).exp(),
                lower_spent: (mean - t_upper(a, df) * se).exp(),
            };
            v.looks.push(look);
            let msg = format!(
                "look at {} MiB after {} pairs: ratio {:.3}, upper bound {:.3} (α {:.4}), target {:.3}",
                c / MIB,
                look.pairs,
                look.ratio,
                look.upper,
                a,
                1.0 + cfg.slowdown
            );
            self.runner.progress(&msg);
            let n_final = n + n_max.saturating_sub(*used) as f64;
            let a_final = cfg.alpha - spend(cfg.alpha, last_look, n_max);
            let margin_final = t_upper(a_final, df + n_final - n) * sd / n_final.sqrt();
            if self.check_mode {
                if let Some(end) = check_look(&v, &look, theta, n_final > n) {
                    v.verified = end == "verified";
                    v.ended = end;
                    return Ok(v);
                }
                next = ys.len() as u32 + (ys.len() as u32 / 2).max(2);
                continue;
            }
            if look.upper.is_finite() && look.upper.ln() <= theta {
                v.verified = true;
                v.ended = "verified";
                return Ok(v);
            }
            // Futile (which costs no α): the lower bound is above the target,
            // or the estimate as it stands could not verify even with every
            // pair left and all the α left at one last look.
            let hopeless = n_final > n && mean + margin_final > theta;
            if look.lower.ln() > theta || hopeless {
                v.ended = "futile";
                return Ok(v);
            }
            next = ys.len() as u32 + (ys.len() as u32 / 2).max(2);
        }
    }
}
