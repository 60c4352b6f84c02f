//! The search on simulated programs: knees, ramps and slopes under the
//! noise real machines show.

use super::*;
use super::{MUTANT, Mutant};

/// A simulated program whose runtime is a known function of the limit,
/// with the noise real machines show: log-normal run noise, a random-walk
/// drift of the machine's speed, slow outliers (a heavy right tail) and an
/// order effect (a run after an unlimited one is a little faster: a warm
/// cache). Fixed-seed generator.
#[derive(Clone)]
struct Sim {
    knee: u64,
    peak: u64,
    base: f64,
    /// Log sd of a run's own noise.
    sigma: f64,
    /// Log sd of the drift's step, per run.
    drift_step: f64,
    /// Chance of a slow outlier, and its size (log).
    outlier_p: f64,
    outlier: f64,
    /// A run after an unlimited run is this much faster (log).
    order: f64,
    /// Below the knee the slowdown grows linearly over this many MiB
    /// (from 1 % to 31 %), then the program thrashes (10×).
    ramp_mib: f64,
    /// Above the knee: a slowdown of this much at the knee, falling to
    /// nothing at the peak (a program like sort, whose cost grows from
    /// the first MiB below its peak).
    slope: f64,
    rng: u64,
    /// The working set the runner reports (a model's guess, maybe wrong).
    hint: Option<u64>,
    /// The least favourable program: this ratio at every limit below the
    /// peak, none at the peak.
    flat: Option<f64>,
    drift: f64,
    last_unlimited: bool,
    /// The log sd of a limited run's own noise, when not `sigma`.
    limited_sigma: Option<f64>,
    /// Slow outliers on limited runs only (a stall in reclaim), each
    /// exactly `outlier` (log) when `outlier_fixed`.
    outliers_limited_only: bool,
    outlier_fixed: bool,
    /// A limited run under this is OOM-killed.
    oom_below: Option<u64>,
}

impl Sim {
    fn new(knee_mib: u64, peak_mib: u64, sigma: f64, rng: u64) -> Sim {
        Sim {
            knee: knee_mib * MIB,
            peak: peak_mib * MIB,
            base: 5.0,
            sigma,
            drift_step: 0.0,
            outlier_p: 0.0,
            outlier: 0.0,
            order: 0.0,
            ramp_mib: 0.0,
            slope: 0.01,
            rng,
            hint: None,
            flat: None,
            drift: 0.0,
            last_unlimited: false,
            limited_sigma: None,
            outliers_limited_only: false,
            outlier_fixed: false,
            oom_below: None,
        }
    }
    fn true_ratio(&self, limit: Option<u64>) -> f64 {
        if let (Some(l), Some(f)) = (limit, self.flat) {
            return if l >= self.peak { 1.0 } else { f };
        }
        match limit {
            None => 1.0,
            Some(l) if l >= self.knee => {
                1.0 + self.slope * (self.peak.saturating_sub(l) as f64 / self.peak.saturating_sub(self.knee).max(1) as f64)
            }
            Some(l) => {
                let below = (self.knee - l) as f64 / MIB as f64;
                let at_knee = 1.0 + self.slope;
                if below >= self.ramp_mib { 10.0 } else { at_knee + 0.3 * below / self.ramp_mib }
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
        self.drift += self.drift_step * self.normal();
        let sigma = limit.and(self.limited_sigma).unwrap_or(self.sigma);
        let mut e = sigma * self.normal() + self.drift;
        let may_stall = limit.is_some() || !self.outliers_limited_only;
        if self.uniform() < self.outlier_p && may_stall {
            e += if self.outlier_fixed { self.outlier } else { self.outlier * self.normal().abs() };
        }
        if self.last_unlimited {
            e -= self.order;
        }
        self.last_unlimited = limit.is_none();
        let t = self.base * self.true_ratio(limit) * e.exp();
        let peak = self.peak;
        if let (Some(l), Some(o)) = (limit, self.oom_below) {
            if l < o {
                return Ok(Trial { seconds: t.min(1.0), outcome: Outcome::Oom, peak_bytes: l, working_set: None });
            }
        }
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

fn cfg(slowdown: f64) -> SearchConfig {
    SearchConfig { slowdown, ..Default::default() }
}

/// Quiet programs (1 % noise) with a sharp knee, with the working set as a
/// hint (off by up to a fifth either way) or none: the knee is found within
/// 5 % of the peak, verified, in the default budget.
#[test]
fn a_sharp_knee_is_found_within_five_percent_of_the_peak() {
    for (i, knee_mib) in [40u64, 70, 100, 150, 230].into_iter().enumerate() {
        for hint in [Some(0.8), Some(1.0), Some(1.2), None] {
            let mut sim = Sim::new(knee_mib, 256, 0.01, 0x9e37_79b9_7f4a_7c15 + i as u64);
            sim.hint = hint.map(|f| (knee_mib as f64 * f) as u64 * MIB);
            let r = search(cfg(0.20), &mut sim).unwrap();
            assert!(r.runs.len() <= 40, "{} runs", r.runs.len());
            let rec = r.recommended.unwrap_or_else(|| panic!("{knee_mib} {hint:?}: {:?}", r.why_not));
            assert!(rec >= sim.knee, "{knee_mib} {hint:?}: recommended {} MiB below the knee", rec / MIB);
            assert!(
                (rec - sim.knee) as f64 <= 0.05 * sim.peak as f64,
                "{knee_mib} {hint:?}: recommended {} MiB, knee {knee_mib} MiB",
                rec / MIB
            );
            // Every limited run has its unlimited pair beside it.
            for d in r.runs.iter().filter(|d| d.limit.is_some()) {
                let p = d.pair.expect("paired");
                assert!(r.runs[p].limit.is_none());
            }
        }
    }
}

#[test]
fn a_program_that_fits_nowhere_below_its_peak_is_recommended_its_peak() {
    let mut sim = Sim::new(256, 256, 0.01, 7);
    let r = search(cfg(0.20), &mut sim).unwrap();
    assert_eq!(r.recommended, Some(256 * MIB));
    assert_eq!(r.bracket.1, 256 * MIB);
}

#[test]
fn too_slow_probes_are_stopped_at_the_cap() {
    let mut sim = Sim::new(100, 256, 0.01, 3);
    let r = search(cfg(0.20), &mut sim).unwrap();
    let stopped: Vec<&Done> = r.runs.iter().filter(|d| d.trial.outcome == Outcome::TooSlow).collect();
    assert!(!stopped.is_empty());
    assert!(stopped.iter().all(|d| d.trial.seconds <= 2.0 * 5.0 * 1.1));
}

/// One noisy probe near the threshold is never the evidence for "too
/// small": it gets a second pair before the bracket moves up.
#[test]
fn a_probe_just_over_the_threshold_gets_a_second_pair() {
    let mut seen = 0;
    for seed in 1..40u64 {
        let mut sim = Sim::new(60, 256, 0.08, seed);
        sim.hint = Some(64 * MIB);
        let r = search(SearchConfig { insist: true, ..cfg(0.20) }, &mut sim).unwrap();
        let theta = 1.2f64.ln();
        // "Near": within two pair spreads, the pair's spread from the
        // unlimited runs after the warm-up (√2 × their log sd), as the search
        // judges it then.
        let base: Vec<f64> = r.runs[1..4].iter().map(|d| d.trial.seconds).collect();
        let near = theta / 2.0 + 2.0 * 2f64.sqrt() * claim_log_sd(&base);
        let probes: Vec<&Pair> = r.pairs.iter().filter(|p| p.role == Role::Probe).collect();
        for (i, p) in probes.iter().enumerate() {
            let next = probes.get(i + 1);
            let repeated = next.is_some_and(|q| q.limit == p.limit);
            let before = i > 0 && probes[i - 1].limit == p.limit;
            if p.ok && !before && p.log_ratio > theta / 2.0 && p.log_ratio < near {
                assert!(repeated, "seed {seed}: probe at {} MiB ({:.3}) not repeated", p.limit / MIB, p.log_ratio);
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no probe landed near the threshold");
}

/// The plan is said before the first limited run, and a target the budget
/// cannot verify stops there with no limited run (unless insisted on).
#[test]
fn a_target_the_budget_cannot_verify_is_said_before_any_limited_run() {
    struct Talk(Sim, Vec<String>, Vec<Option<u64>>);
    impl Runner for Talk {
        type Error = ();
        fn run(&mut self, role: Role, limit: Option<u64>, cap: Option<f64>) -> Result<Trial, ()> {
            self.2.push(limit);
            self.0.run(role, limit, cap)
        }
        fn progress(&mut self, m: &str) {
            self.1.push(format!("{m} @{}", self.2.len()));
        }
    }
    let mut sim = Sim::new(80, 256, 0.12, 11);
    sim.hint = Some(80 * MIB);
    let mut t = Talk(sim.clone(), Vec::new(), Vec::new());
    let r = search(SearchConfig { max_runs: 20, ..cfg(0.05) }, &mut t).unwrap();
    let plan = r.plan.unwrap();
    assert!(!plan.enough, "{plan:?}");
    assert!(t.2.iter().all(|l| l.is_none()), "a limited run was made");
    assert!(t.1[0].starts_with("plan:") && t.1[0].contains("not 5 %"), "{}", t.1[0]);
    assert!(r.recommended.is_none() && r.why_not.as_deref().is_some_and(|w| w.contains("--insist")));
    let v = plan.verifiable_slowdown.expect("some target is verifiable");
    assert!(v > 0.05, "{v}");
    // With --insist it goes on, and says the plan first all the same.
    let mut t = Talk(sim, Vec::new(), Vec::new());
    let _ = search(SearchConfig { max_runs: 20, insist: true, ..cfg(0.05) }, &mut t).unwrap();
    assert!(t.2.iter().any(|l| l.is_some()));
    assert!(t.1[0].starts_with("plan:") && t.1[0].ends_with("@4"), "{:?}", t.1);
}

/// A plan stopped by one slow unlimited run says so (the CI run of
/// 2026-12-02: 4.04 s beside 2.30 s twice); two slow runs, or runs within
/// a quarter of their median, are the machine's noise and get no hint.
#[test]
fn one_slow_unlimited_run_is_named_in_the_plans_stop() {
    let h = plan::lone_slow_run(&[4.04, 2.30, 2.30]).expect("one run stands apart");
    assert!(h.contains("4.04 s") && h.contains("2.30 s"), "{h}");
    assert_eq!(plan::lone_slow_run(&[2.30, 2.80, 2.40]), None, "within a quarter");
    assert_eq!(plan::lone_slow_run(&[4.0, 3.9, 2.3]), None, "two slow runs");
    assert_eq!(plan::lone_slow_run(&[4.0, 2.3]), None, "too few runs");
    // Through the search: the sim's runs at 1 s, one unlimited run stalled.
    struct Stall(Sim, u32);
    impl Runner for Stall {
        type Error = ();
        fn run(&mut self, role: Role, limit: Option<u64>, cap: Option<f64>) -> Result<Trial, ()> {
            self.1 += 1;
            let mut t = self.0.run(role, limit, cap)?;
            if self.1 == 3 {
                t.seconds *= 3.0;
            }
            Ok(t)
        }
    }
    let mut sim = Sim::new(80, 256, 0.01, 7);
    sim.hint = Some(80 * MIB);
    let r = search(SearchConfig { max_runs: 20, ..cfg(0.05) }, &mut Stall(sim, 0)).unwrap();
    assert!(!r.plan.unwrap().enough);
    let why = r.why_not.unwrap();
    assert!(why.contains("--insist") && why.contains("one unlimited run took"), "{why}");
}

/// At a quiet machine's noise a 20 % target is affordable; at a noisy
/// one's a 5 % target is not, and the verifiable target is larger.
#[test]
fn the_plan_follows_the_noise() {
    let c = cfg(0.20);
    let quiet = plan(&c, 0.02, 2.0, 10.0, 3, 3);
    assert!(quiet.enough, "{quiet:?}");
    let noisy = plan(&SearchConfig { slowdown: 0.05, ..c }, 0.12, 2.0, 10.0, 3, 3);
    assert!(!noisy.enough && noisy.pairs_needed.unwrap_or(1000) > quiet.pairs_needed.unwrap());
    assert!(noisy.verifiable_slowdown.unwrap() > 0.05);
    // The budget in time counts too: 60 s of a 10 s program is 5 runs.
    let short = plan(&SearchConfig { budget_s: 60.0, ..c }, 0.02, 2.0, 10.0, 3, 3);
    assert_eq!(short.runs_affordable, 5);
    assert!(!short.enough && short.verifiable_slowdown.is_none());
}

/// Over 2000 simulated programs in the regime real VMs show (8–15 % run
/// to run, measured over ten unlimited runs: run noise, drift, slow
/// outliers, an order effect; knees, ramps
/// and slopes; hints right, wrong or missing; targets of 10 and 20 %), a
/// recommended limit's true slowdown exceeds the target in at most 5 % of
/// the programs (+3 standard errors), and of the recommendations; nothing
/// unverified is ever recommended. Prints the fraction recommended.
#[test]
fn the_recommendation_exceeds_the_target_in_at_most_five_percent() {
    let mut draw = Sim::new(1, 1, 0.0, 0x1234_5678_9abc_def1);
    let mut uni = || draw.uniform();
    let n = 2000u64;
    let (mut made, mut over, mut cv_sum) = (0u32, 0u32, 0.0);
    let (mut planned_enough, mut enough_made) = (0u32, 0u32);
    let mut by_target = [(0u32, 0u32); 2];
    for i in 0..n {
        let peak_mib = 128 + (uni() * 512.0) as u64;
        let knee_mib = ((uni() * 0.9 + 0.05) * peak_mib as f64) as u64;
        let (mut sim, cv) = noisy(Sim::new(knee_mib.max(1), peak_mib, 0.0, 0xdead_beef ^ (i * 0x9e37_79b9)), &mut uni);
        cv_sum += cv;
        sim.ramp_mib = uni() * 64.0;
        // A third with a slope above the knee, up to 30 % at the knee.
        sim.slope = if i % 3 == 0 { uni() * 0.3 } else { 0.01 };
        match i % 4 {
            0 | 1 => sim.hint = Some((sim.knee as f64 * (0.7 + 0.6 * uni())) as u64),
            2 => sim.hint = Some(sim.peak),
            _ => {}
        }
        let target = if i % 2 == 0 { 0.20 } else { 0.10 };
        let r = search(SearchConfig { insist: true, ..cfg(target) }, &mut sim).unwrap();
        assert!(r.runs.len() <= 40);
        let slot = &mut by_target[(i % 2) as usize];
        if r.plan.is_some_and(|p| p.enough) {
            planned_enough += 1;
            enough_made += r.recommended.is_some() as u32;
        }
        if let Some(rec) = r.recommended {
            made += 1;
            slot.0 += 1;
            let v = r.verifications.iter().find(|v| v.limit == rec).expect("its verification");
            assert!(v.last().is_some_and(|l| l.upper <= 1.0 + target + 1e-12), "{v:?}");
            if sim.true_ratio(Some(rec)) > 1.0 + target {
                over += 1;
                slot.1 += 1;
            }
        }
    }
    let se = (0.05 * 0.95 / n as f64).sqrt();
    eprintln!(
        "{n} simulated programs (mean run-to-run CV {:.1} %): {made} recommended a verified limit \
         ({:.0} %; 20 %: {} of {}, 10 %: {} of {}), {over} over the target ({:.2} % of programs, {:.2} % of recommendations); \
         the plan said the budget was enough for {planned_enough}, and {enough_made} of those verified",
        cv_sum / n as f64 * 100.0,
        made as f64 / n as f64 * 100.0,
        by_target[0].0,
        n / 2,
        by_target[1].0,
        n / 2,
        over as f64 / n as f64 * 100.0,
        over as f64 / made.max(1) as f64 * 100.0
    );
    assert!(over as f64 / n as f64 <= 0.05 + 3.0 * se, "{over} of {n} programs over the target");
    assert!(over as f64 <= 0.05 * made as f64, "{over} of {made} recommendations over the target");
    assert!(made as f64 >= 0.5 * n as f64, "only {made} of {n} recommended");
    assert!(enough_made as f64 >= 0.6 * planned_enough as f64, "{enough_made} of {planned_enough} planned verified");
}

/// Noise drawn until the program's run-to-run CV over ten unlimited runs in
/// a row lies in [8, 15] %: run noise, drift, slow outliers, an order effect.
/// The program and that CV.
fn noisy(mut sim: Sim, uni: &mut impl FnMut() -> f64) -> (Sim, f64) {
    loop {
        sim.sigma = 0.04 + uni() * 0.10;
        sim.base = 2.0 + uni() * 20.0;
        sim.drift_step = uni() * 0.04;
        sim.outlier_p = uni() * 0.1;
        sim.outlier = 0.1 + uni() * 0.3;
        sim.order = uni() * 0.03;
        sim.rng ^= (uni() * 1e15) as u64;
        let mut probe = sim.clone();
        let t: Vec<f64> = (0..10).map(|_| probe.run(Role::Baseline, None, None).unwrap().seconds).collect();
        let cv = record::stats::cv(&t).unwrap();
        if (0.08..=0.15).contains(&cv) {
            return (sim, cv);
        }
    }
}

/// The least favourable program: every limit below the peak costs just over
/// the target (20.5 % for 20 %), only the peak costs nothing. Over 1000 of
/// them (8–15 % noise), a limit below the peak is recommended for at most
/// 5 % (+3 standard errors); a naive verification (the full α at every look,
/// on the candidate's own pairs) recommends one far more often, so the
/// check can fail.
#[test]
fn at_the_least_favourable_program_the_error_is_at_most_five_percent() {
    let run = |naive: bool| {
        MUTANT.with(|c| c.set(if naive { Mutant::Naive } else { Mutant::None }));
        let mut draw = Sim::new(1, 1, 0.0, 0x5eed_5eed_1234_4321);
        let mut uni = || draw.uniform();
        let n = 1000u64;
        let mut wrong = 0u32;
        for i in 0..n {
            let peak_mib = 128 + (uni() * 512.0) as u64;
            let (mut sim, _) = noisy(Sim::new(peak_mib / 2, peak_mib, 0.0, 0xfeed ^ (i * 0x9e37_79b9)), &mut uni);
            sim.flat = Some(1.205);
            if i % 2 == 0 {
                sim.hint = Some((peak_mib as f64 * (0.2 + 0.6 * uni())) as u64 * MIB);
            }
            let r = search(SearchConfig { insist: true, ..cfg(0.20) }, &mut sim).unwrap();
            if r.recommended.is_some_and(|l| l < sim.peak) {
                wrong += 1;
            }
        }
        MUTANT.with(|c| c.set(Mutant::None));
        (wrong, n)
    };
    let (wrong, n) = run(false);
    let (naive_wrong, _) = run(true);
    let bound = n as f64 * (0.05 + 3.0 * (0.05 * 0.95 / n as f64).sqrt());
    eprintln!(
        "least favourable programs: {wrong} of {n} recommended a limit below the peak (bound {bound:.0}); \
         the naive verification: {naive_wrong}"
    );
    assert!(wrong as f64 <= bound, "{wrong} of {n}");
    assert!(naive_wrong as f64 > bound, "the naive verification passed too: {naive_wrong} of {n}");
}

#[test]
fn the_budget_bounds_the_runs() {
    let mut sim = Sim::new(100, 256, 0.01, 5);
    let r = search(SearchConfig { max_runs: 14, insist: true, ..cfg(0.10) }, &mut sim).unwrap();
    assert!(r.runs.len() <= 14);
    let r = search(SearchConfig { budget_s: 30.0, insist: true, ..cfg(0.10) }, &mut sim).unwrap();
    assert!(r.recommended.is_none() && r.why_not.is_some_and(|w| w.contains("budget")), "{:?}", r.runs.len());
}

#[test]
fn the_look_schedule_grows_by_about_half() {
    assert_eq!(looks(3, 20), vec![3, 5, 7, 10, 15, 20]);
    assert_eq!(looks(3, 3), vec![3]);
    assert!(looks(3, 2).is_empty());
}

/// Issue 58's noise grid: the unlimited runs' spread (log sd) 2, 8 or 15 %;
/// the limited runs' 1×, 2× or 3× that; and on limited runs only, no
/// stalls, stalls in 15 % of runs at +30 %, or at +40 %.
fn grid() -> Vec<(f64, f64, Option<f64>)> {
    let mut cells = Vec::new();
    for u in [0.02, 0.08, 0.15] {
        for r in [1.0, 2.0, 3.0] {
            for stall in [None, Some(0.30), Some(0.40)] {
                cells.push((u, r, stall));
            }
        }
    }
    cells
}

/// A program in one cell of the grid whose true slowdown is exactly the
/// target at every limit below its peak: the mean log ratio of limited over
/// unlimited runs, stalls included (what a user sees over many runs), is
/// ln(1 + target).
fn at_target(u: f64, r: f64, stall: Option<f64>, target: f64, seed: u64) -> Sim {
    at_target_with(u, r, stall.map(|s| (0.15, s)), target, seed)
}

/// [`at_target`] with stalls in a share `p` of limited runs at +`s`.
fn at_target_with(u: f64, r: f64, stall: Option<(f64, f64)>, target: f64, seed: u64) -> Sim {
    let mut sim = Sim::new(100, 256, u, seed);
    sim.limited_sigma = Some(r * u);
    sim.outliers_limited_only = true;
    sim.outlier_fixed = true;
    let (p, o) = stall.map_or((0.0, 0.0), |(p, s)| (p, (1.0f64 + s).ln()));
    sim.outlier_p = p;
    sim.outlier = o;
    sim.flat = Some(((1.0 + target).ln() - p * o).exp());
    sim
}

/// One verification of a limit below the peak, after the baselines, with
/// every pair the budget buys: (verified, runs made).
fn verify_once(sim: &mut Sim, cfg: SearchConfig, limit: u64) -> (bool, usize) {
    let mut st = State { cfg, runner: sim, runs: Vec::new(), pairs: Vec::new(), spent_s: 0.0, spread_runs: 0..0, check_mode: false };
    for _ in 0..cfg.baselines {
        st.run(Role::Baseline, None).unwrap();
    }
    let nb = st.runs.len();
    st.spread_runs = if nb >= 3 { 1..nb } else { 0..nb };
    let n_max = st.pairs_affordable();
    let mut used = 0;
    let v = st.verify(limit, n_max, &mut used).unwrap();
    (v.verified, st.runs.len())
}

/// Per cell: the share of verifications at the target that verified, the
/// mean runs made, over `n` programs, for the verification `m`.
fn grid_rates(m: Mutant, n: u64, cfg: SearchConfig, seed: u64) -> Vec<(f64, f64)> {
    MUTANT.with(|c| c.set(m));
    let out = grid()
        .into_iter()
        .enumerate()
        .map(|(k, (u, r, stall))| {
            let (mut yes, mut runs) = (0u64, 0usize);
            for i in 0..n {
                let s = seed ^ ((k as u64) << 40) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let mut sim = at_target(u, r, stall, cfg.slowdown, s | 1);
                let (v, made) = verify_once(&mut sim, cfg, 128 * MIB);
                yes += v as u64;
                runs += made;
            }
            (yes as f64 / n as f64, runs as f64 / n as f64)
        })
        .collect();
    MUTANT.with(|c| c.set(Mutant::None));
    out
}

/// With the truth exactly at the target, in every cell of the grid, a limit
/// is falsely verified at most 5 % of the time: at a 20 % target with the
/// default 40 runs, and at 10 % with 100. The mutant that takes the
/// unlimited runs' spread for the limited runs' verifies far more often in
/// some cell, and so does round two's rule (which borrowed it while its own
/// pairs had few degrees of freedom, with no stall floor): the test can fail.
/// Prints the table.
#[test]
fn at_the_target_no_cell_of_the_noise_grid_verifies_more_than_five_percent() {
    let n = 2000u64;
    let bound = 0.05 + 3.0 * (0.05 * 0.95 / n as f64).sqrt();
    let setups = [cfg(0.20), SearchConfig { max_runs: 100, budget_s: 1e9, ..cfg(0.10) }];
    for (j, c) in setups.into_iter().enumerate() {
        let seed = 0x5eed_0058 + j as u64;
        let ours = grid_rates(Mutant::None, n, c, seed);
        let borrow = grid_rates(Mutant::Borrow, n, c, seed);
        let pooled = grid_rates(Mutant::Pooled, n, c, seed);
        let floored = grid_rates(Mutant::PooledFloored, n, c, seed);
        eprintln!(
            "target {:.0} %, {} runs: unlimited sd, limited ×, stalls: verified at the target (runs) | borrowed | round two | round two's borrowing, floored",
            c.slowdown * 100.0,
            c.max_runs
        );
        for (k, (u, r, stall)) in grid().into_iter().enumerate() {
            let stall = stall.map_or("none".to_string(), |s| format!("15 % at +{:.0} %", s * 100.0));
            eprintln!(
                "  {:>3.0} % {r:.0}× {stall:<15} {:>5.1} % ({:>4.1}) | {:>5.1} % | {:>5.1} % | {:>5.1} %",
                u * 100.0,
                ours[k].0 * 100.0,
                ours[k].1,
                borrow[k].0 * 100.0,
                pooled[k].0 * 100.0,
                floored[k].0 * 100.0
            );
        }
        for (k, cell) in grid().into_iter().enumerate() {
            assert!(ours[k].0 <= 0.05, "{cell:?} at {:.0} %: {:.1} % verified", c.slowdown * 100.0, ours[k].0 * 100.0);
        }
        assert!(borrow.iter().any(|b| b.0 > bound), "the borrowing mutant held in every cell");
        assert!(pooled.iter().any(|b| b.0 > bound), "round two's rule held in every cell");
    }
    // Outside the assumption (stalls rarer and larger than 15 % at +40 %, or
    // as frequent and larger): printed, for the docs, not asserted.
    let c = cfg(0.20);
    for (u, r, p, st) in [(0.02, 1.0, 0.05, 0.8), (0.02, 1.0, 0.15, 0.6), (0.02, 1.0, 0.3, 0.4), (0.08, 1.0, 0.05, 0.8)] {
        let mut yes = 0u64;
        for i in 0..n {
            let mut sim = at_target_with(u, r, Some((p, st)), c.slowdown, (0x57e5 ^ i.wrapping_mul(0x9e37_79b9)) | 1);
            yes += verify_once(&mut sim, c, 128 * MIB).0 as u64;
        }
        eprintln!(
            "outside the assumption: {:.0} % {r:.0}× stalls {:.0} % at +{:.0} %: verified at the target {:.1} %",
            u * 100.0,
            p * 100.0,
            st * 100.0,
            yes as f64 / n as f64 * 100.0
        );
    }
}

/// `--check` on a program with a sharp knee at 100 MiB (peak 256 MiB) that is
/// OOM-killed under 40 MiB: the peak verifies, 60 MiB is too slow (its runs
/// stopped at the time cap, counted at the cap, put the lower bound above
/// the target at the first look), 30 MiB is OOM-killed in each of the first
/// look's runs; each limit's limited runs have their unlimited runs beside
/// them, and none takes more than its share.
#[test]
fn check_answers_each_limit_in_its_own_terms() {
    use check::Answer;
    let mut sim = Sim::new(100, 256, 0.02, 77);
    sim.oom_below = Some(40 * MIB);
    let r = check::check(cfg(0.20), &[256 * MIB, 60 * MIB, 30 * MIB], &mut sim).unwrap();
    assert_eq!(r.pairs_each, 6);
    let answers: Vec<Answer> = r.checked.iter().map(|c| c.answer).collect();
    assert_eq!(
        answers,
        [Answer::Verified, Answer::TooSlow { capped: 3 }, Answer::OomKilled { killed: 3, runs: 3 }],
        "{:?}",
        r.checked
    );
    for c in &r.checked {
        assert!(c.verification.ratios.len() as u32 <= r.pairs_each);
    }
    for p in &r.pairs {
        assert!(r.runs[p.limited].limit == Some(p.limit) && r.runs[p.unlimited].limit.is_none());
    }
}

/// A limit that costs 15 % against a 20 % target, at 8 % noise, with a
/// budget of five pairs: undecided, with more pairs than that to decide.
#[test]
fn a_check_the_budget_cannot_decide_says_what_would() {
    use check::Answer;
    let mut sim = Sim::new(100, 256, 0.08, 5);
    sim.flat = Some(1.15);
    let r = check::check(SearchConfig { max_runs: 14, ..cfg(0.20) }, &[128 * MIB], &mut sim).unwrap();
    assert_eq!(r.pairs_each, 5);
    match r.checked[0].answer {
        Answer::Undecided { pairs_to_decide: Some(n), capped: 0 } => assert!(n > 5, "{n}"),
        a => panic!("{a:?}: {:?}", r.checked[0].verification),
    }
    // On the target nothing decides; the farther from it, the fewer pairs.
    let theta = 1.2f64.ln();
    assert_eq!(check::pairs_to_decide(theta, 0.12, theta, 3, 0.05), None);
    let (near, far) = (check::pairs_to_decide(0.10, 0.12, theta, 3, 0.05), check::pairs_to_decide(0.0, 0.12, theta, 3, 0.05));
    assert!(far.unwrap() < near.unwrap(), "{far:?} {near:?}");
    // What it says is what the power of that many pairs gives: 80 %.
    let n = near.unwrap();
    assert!(power(n, n, 3, theta, 0.10, 0.12, 0.05, 0.0) >= 0.8 && power(n - 1, n - 1, 3, theta, 0.10, 0.12, 0.05, 0.0) < 0.8);
}

/// `--check` at the truth: in every cell of the grid, a limit whose true
/// slowdown (stalls included) is exactly the target is called verified at
/// most 5 % of the time, and too slow at most 5 % of the time (runs past
/// the time cap count at the cap and go on; the lower bound spends α over
/// the looks as the upper one does). One limit, the default 40 runs.
#[test]
fn at_the_target_check_says_neither_verified_nor_too_slow_more_than_five_percent() {
    use check::Answer;
    let n = 1000u64;
    let c = cfg(0.20);
    let mut worst = (0.0f64, 0.0f64);
    for (k, (u, r, stall)) in grid().into_iter().enumerate() {
        let (mut yes, mut slow) = (0u64, 0u64);
        for i in 0..n {
            let mut sim = at_target(u, r, stall, c.slowdown, (0xc4ec_0058 ^ ((k as u64) << 40) ^ i.wrapping_mul(0x9e37_79b9)) | 1);
            let res = check::check(c, &[128 * MIB], &mut sim).unwrap();
            match res.checked[0].answer {
                Answer::Verified => yes += 1,
                Answer::TooSlow { .. } => slow += 1,
                _ => {}
            }
        }
        let (y, sl) = (yes as f64 / n as f64, slow as f64 / n as f64);
        worst = (worst.0.max(y), worst.1.max(sl));
        assert!(y <= 0.05 && sl <= 0.05, "{:?}: verified {:.1} %, too slow {:.1} %", (u, r, stall), y * 100.0, sl * 100.0);
    }
    eprintln!("--check at the target: worst cell verified {:.1} %, too slow {:.1} %", worst.0 * 100.0, worst.1 * 100.0);
}
