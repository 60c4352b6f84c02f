//! The study's protocol as figures (issue 57 item 2), each with its threshold
//! fixed here before any data: a preset that thrashes as Maziero et al.'s did
//! overcommits its room by about 2.5 and keeps paging well past the fill.
//!
//! - **overcommit**: N × S ÷ the room under the limit (the limit less the
//!   group's idle usage, as the study's 1 GB less the OS's share), the limit
//!   at its largest after the guard's raises, within ±10 % of the study's 2.5;
//! - **depth**: every consumer makes at least three full passes over its
//!   working set (its cycles × W ÷ its pages), and the run pages out at
//!   least three times the fill's overflow (N × S less the room). A preset
//!   that only fills and ends is not thrashing;
//! - **intensity**: writes per page per second (W ÷ pages ÷ t_s), printed
//!   beside the study's. Not a gate: it cannot hold at any time factor short
//!   of the study's own hours (docs/thrash.md says how far each finding
//!   depends on it).
//!
//! A preset outside the protocol makes every finding that compares it
//! "outside the protocol", never matches or differs. A run recorded before
//! these figures (no plan) cannot be checked: its findings are "not
//! checked" ([`unchecked`]).

use super::results::{Plan, ThrashResult};
use super::work::{DEFAULT_SIZE, OVERCOMMIT, PRESETS};
use serde::{Deserialize, Serialize};

/// How far N × S ÷ limit may stray from the study's 2.5: ±10 %.
pub const OVERCOMMIT_TOLERANCE: f64 = 0.10;
/// The fewest passes over its working set a consumer must make.
pub const MIN_PASSES: f64 = 3.0;
/// The least pages out, as a multiple of the fill's overflow.
pub const MIN_OVERFLOW_MULTIPLE: f64 = 3.0;
/// The page the figures count in (the consumers' sizes are whole pages of
/// the machine that ran them; 4 KiB on every machine pagelab runs on).
const PAGE: f64 = 4096.0;

/// One run's protocol figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
pub struct Protocol {
    /// The study's preset this run scaled (e1 … e4), without "-custom".
    pub preset: String,
    /// The size factor (N's sizes and W) and the time factor (t_s, t_c)
    /// against the study's own.
    pub size_factor: f64,
    pub time_factor: f64,
    /// N × S ÷ the room under the largest limit after the guard's raises (the
    /// limit less the group's idle usage); null without a plan.
    pub overcommit: Option<f64>,
    /// The fewest passes any consumer made over its working set.
    pub passes_min: Option<f64>,
    /// Pages swapped out ÷ the fill's overflow in pages.
    pub pages_out_per_overflow: Option<f64>,
    /// Writes per page per second the time factor implies, and the study's.
    pub writes_per_page_per_s: Option<f64>,
    pub study_writes_per_page_per_s: Option<f64>,
    /// What broke overcommit or depth (empty: inside the protocol).
    pub breaks: Vec<String>,
}

impl Protocol {
    pub fn held(&self) -> bool {
        self.breaks.is_empty()
    }
}

/// The study's preset a plan's name scales ("e4-custom" is e4).
fn base(preset: &str) -> &str {
    preset.split(['-', ' ']).next().unwrap_or(preset)
}

/// The study's writes per page per second for a preset: W ÷ (S ÷ page) ÷ t_s.
pub fn study_intensity(preset: &str) -> Option<f64> {
    let p = PRESETS.iter().find(|p| p.0 == base(preset))?;
    Some(p.1 as f64 / (DEFAULT_SIZE as f64 / PAGE) / p.2.as_secs_f64())
}

/// The protocol figures of one run, from what it recorded.
pub fn of(r: &ThrashResult) -> Protocol {
    let mut p = Protocol {
        preset: base(&r.preset).to_string(),
        study_writes_per_page_per_s: study_intensity(&r.preset),
        ..Default::default()
    };
    let Some(plan) = &r.plan else {
        p.breaks.push("the run recorded no plan, so its protocol cannot be checked".into());
        return p;
    };
    (p.size_factor, p.time_factor) = (plan.scale, plan.time_scale);
    let pages = plan.size_bytes as f64 / PAGE;
    // A companion inside the group (jank's frame probe) counts with N × S.
    let total = plan.consumers as f64 * plan.size_bytes as f64 + r.companion_bytes as f64;
    if pages > 0.0 && plan.sleep_ms > 0.0 {
        p.writes_per_page_per_s = Some(plan.writes as f64 / pages / (plan.sleep_ms / 1e3));
    }
    let idle = r.idle_usage_bytes.saturating_sub(r.companion_bytes);
    // The largest limit: on v1 the guard's highest raise; on v2 the highest
    // charge memory.high let through (memory.max is only the hard stop).
    let largest = if r.guard.method == "memory.high" {
        r.guard.usage_max_bytes.map(|u| u.max(r.limit_bytes))
    } else {
        Some(r.limit_bytes.max(r.guard.limit_max_bytes))
    };
    p.passes_min = passes_min(r, plan);
    // Unread (v2's highest charge): both figures unknown, never a room of 0.
    if let Some(room_max) = largest.map(|l| l.saturating_sub(idle)).filter(|&r| r > 0) {
        p.overcommit = Some(total / room_max as f64);
        // The overflow past the same room the overcommit is judged on.
        let overflow = (total - room_max as f64) / PAGE;
        if overflow > 0.0 {
            p.pages_out_per_overflow = Some(r.pswpout_active.unwrap_or(r.pswpout_total) as f64 / overflow);
        }
    }
    p.breaks = breaks(&p);
    if largest.is_none() {
        p.breaks = vec![UNREAD_CHARGE.to_string()];
    }
    if plan.preset.ends_with("-custom") {
        // Issue 57 item 2: the study's preset, changed by one size factor and
        // one time factor only. N, W, t_s or t_c given apart from them (the
        // smoke lab's four consumers, say) make another experiment.
        p.breaks.insert(0, CUSTOM.to_string());
    }
    p
}

/// Whether a run broke the protocol only as the CPU-only control
/// (`--cpu-only`) must: it ran with the control's limit, the study's preset
/// (only the size and time factors changed), every consumer completed and
/// none was OOM-killed, and every consumer made the protocol's passes; only
/// the overcommit (under 1 by design) and the overflow (none) are missing.
/// `bench controls` judges such a run on its estimates alone, and no other.
pub fn only_paging_removed(r: &ThrashResult) -> bool {
    let p = current(r);
    r.plan.as_ref().is_some_and(|plan| plan.cpu_only && !plan.preset.ends_with("-custom"))
        && r.protocol_held
        && r.oom_kills == Some(0)
        && p.passes_min.is_some_and(|x| x >= MIN_PASSES)
        && p.overcommit.is_some_and(|x| x < 1.0)
}

/// Whether a run broke the protocol only as thrash.writes' control
/// (`--sleep 0s`) must: its preset is the study's but for t_s, which is 0
/// (so each consumer writes nonstop, and W no longer sets its write rate);
/// N, S, W and t_c are the preset's under the size and time factors; and
/// the protocol held otherwise (overcommit, depth, every consumer
/// completed, none OOM-killed). `bench controls` judges such a run on its
/// estimates alone, and no other.
pub fn only_sleep_removed(r: &ThrashResult) -> bool {
    let Some(plan) = r.plan.as_ref() else { return false };
    let Some(study) = plan.preset.strip_suffix("-custom").and_then(|n| {
        crate::thrash::work::PRESETS.iter().find(|p| p.0 == n)
    }) else {
        return false;
    };
    let scaled = |d: std::time::Duration| d.as_secs_f64() * 1e3 * plan.time_scale;
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    let p = current(r);
    plan.sleep_ms == 0.0
        && !plan.cpu_only
        && plan.consumers == crate::thrash::work::DEFAULT_CONSUMERS
        && plan.size_bytes
            == crate::thrash::work::scaled_size(
                crate::thrash::work::DEFAULT_SIZE,
                plan.scale,
                workloads::mm::page_size() as u64,
            )
        && plan.writes == ((study.1 as f64 * plan.scale).round() as u64).max(1)
        && near(plan.stagger_ms, scaled(study.3))
        && p.breaks.iter().all(|b| b == CUSTOM)
        && r.protocol_held
        && r.oom_kills == Some(0)
}

/// Why a v2 run whose highest charge was not read is outside the protocol.
pub const UNREAD_CHARGE: &str = "overcommit and depth: the group's highest charge under memory.high was not read, so \
the room's largest extent is unknown";

/// A run's protocol figures: as recorded, with the custom-preset break a
/// record from before it lacks (a smoke lab's four consumers read "held"
/// there), or computed for a record without them.
pub fn current(r: &ThrashResult) -> Protocol {
    let mut p = r.protocol.clone().unwrap_or_else(|| of(r));
    let custom = r.plan.as_ref().is_some_and(|plan| plan.preset.ends_with("-custom"));
    if custom && !p.breaks.iter().any(|b| b == CUSTOM) {
        p.breaks.insert(0, CUSTOM.to_string());
    }
    p
}

/// Why a preset with its own N, W, t_s or t_c is outside the protocol.
pub const CUSTOM: &str = "not the study's preset: N, W, t_s or t_c set apart from the size and time factors";

/// The fewest passes over its working set any consumer made (None without
/// consumers' accounts).
fn passes_min(r: &ThrashResult, plan: &Plan) -> Option<f64> {
    let pages = plan.size_bytes as f64 / PAGE;
    if pages <= 0.0 {
        return None;
    }
    r.consumer_details.iter().map(|c| c.cycles as f64 * plan.writes as f64 / pages).reduce(f64::min)
}

/// What breaks overcommit or depth, in words.
fn breaks(p: &Protocol) -> Vec<String> {
    let mut b = Vec::new();
    let (lo, hi) = (OVERCOMMIT * (1.0 - OVERCOMMIT_TOLERANCE), OVERCOMMIT * (1.0 + OVERCOMMIT_TOLERANCE));
    match p.overcommit {
        Some(x) if (lo..=hi).contains(&x) => {}
        Some(x) => b.push(format!(
            "overcommit: N × S ÷ the room under the largest limit after the guard's raises was {x:.2}, outside the \
             study's 2.5 ± 10 % ({lo:.2} – {hi:.2})"
        )),
        None => b.push("overcommit: the limit was not recorded".into()),
    }
    match p.passes_min {
        Some(x) if x >= MIN_PASSES => {}
        Some(x) => b.push(format!(
            "depth: a consumer made {x:.1} passes over its working set, fewer than {MIN_PASSES:.0} (it filled and ended)"
        )),
        None => b.push("depth: no consumer's cycles were recorded".into()),
    }
    match p.pages_out_per_overflow {
        Some(x) if x >= MIN_OVERFLOW_MULTIPLE => {}
        Some(x) => b.push(format!(
            "depth: it paged out {x:.1} times the fill's overflow, less than {MIN_OVERFLOW_MULTIPLE:.0} (a fill burst, not \
             thrashing)"
        )),
        None => b.push("depth: N × S did not overflow the limit".into()),
    }
    b
}

/// Why a finding that compares `presets` cannot be checked against the
/// protocol: a run of them recorded no plan (before the protocol's figures).
pub fn unchecked(rs: &[ThrashResult], presets: &[&str]) -> Option<String> {
    rs.iter().filter(|r| presets.contains(&base(&r.preset))).find(|r| r.plan.is_none()).map(|r| {
        format!(
            "{} repeat {} recorded no plan (a run from before the protocol's figures), so the study's protocol cannot \
             be checked: run thrash again to judge it",
            r.preset,
            r.repeat_index + 1
        )
    })
}

/// Why a finding that compares `presets` is outside the protocol: each
/// preset's breaks with the repeats they broke in, or None when every run of
/// those presets held.
pub fn outside(rs: &[ThrashResult], presets: &[&str]) -> Option<String> {
    let mut why: Vec<(String, Vec<u32>)> = Vec::new();
    for r in rs.iter().filter(|r| presets.contains(&base(&r.preset)) && r.plan.is_some()) {
        let p = current(r);
        for b in &p.breaks {
            let key = format!("{}: {b}", r.preset);
            match why.iter_mut().find(|w| w.0 == key) {
                Some(w) => w.1.push(r.repeat_index + 1),
                None => why.push((key, vec![r.repeat_index + 1])),
            }
        }
    }
    (!why.is_empty()).then(|| {
        why.iter()
            .map(|(k, reps)| {
                let reps: Vec<String> = reps.iter().map(u32::to_string).collect();
                let (preset, b) = k.split_once(": ").unwrap_or((k, ""));
                format!("{preset} (repeat {}): {b}", reps.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The protocol figures of every run as a Markdown table, with the
/// thresholds they were held to.
pub fn markdown(rs: &[ThrashResult]) -> String {
    use std::fmt::Write as _;
    let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |x| format!("{x:.d$}"));
    let mut s = format!(
        "The study's protocol, run by run (thresholds fixed before the data: N × S ÷ the room under the limit within {:.2} – {:.2}; \
         every consumer at least {MIN_PASSES:.0} passes over its working set; pages out at least \
         {MIN_OVERFLOW_MULTIPLE:.0}× the fill's overflow; writes per page per second shown beside the study's, not a \
         gate):\n\n| run | size × | time × | N × S ÷ room | passes (fewest) | pages out ÷ overflow | writes/page/s (study) | \
         protocol |\n|---|---|---|---|---|---|---|---|\n",
        OVERCOMMIT * (1.0 - OVERCOMMIT_TOLERANCE),
        OVERCOMMIT * (1.0 + OVERCOMMIT_TOLERANCE)
    );
    for r in rs {
        let p = current(r);
        let _ = writeln!(
            s,
            "| {} #{} | {} | {} | {} | {} | {} | {} ({}) | {} |",
            r.preset,
            r.repeat_index + 1,
            p.size_factor,
            p.time_factor,
            f(p.overcommit, 2),
            f(p.passes_min, 1),
            f(p.pages_out_per_overflow, 1),
            f(p.writes_per_page_per_s, 2),
            f(p.study_writes_per_page_per_s, 2),
            if p.held() { "held".to_string() } else { format!("outside: {}", p.breaks.join("; ")) }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thrash::results::Consumer;

    fn run(preset: &str, limit: u64, raised: u64, out: u64, cycles: u64) -> ThrashResult {
        let plan = Plan {
            preset: preset.into(),
            consumers: 4,
            size_bytes: 10 << 20,
            writes: 1000,
            sleep_ms: 3.5,
            stagger_ms: 35.0,
            scale: 0.1,
            time_scale: 0.035,
            ..Default::default()
        };
        let mut r = ThrashResult {
            preset: preset.into(),
            plan: Some(plan),
            limit_bytes: limit,
            pswpout_total: out,
            consumer_details: (0..4).map(|_| Consumer { cycles, ..Default::default() }).collect(),
            ..Default::default()
        };
        r.guard.limit_max_bytes = raised;
        r.guard.method = "oom_control".into();
        r
    }

    #[test]
    fn on_v2_the_room_is_the_highest_charge_memory_high_let_through() {
        // memory.max (1.25 × the target) is only the hard stop: read as the
        // limit it would put every v2 run at 2.0, outside.
        let mut r = run("e2", 16 << 20, 20 << 20, 3 * 6144 + 1, 100);
        r.guard.method = "memory.high".into();
        r.guard.usage_max_bytes = Some((16 << 20) + (1 << 20));
        let p = of(&r);
        assert!((p.overcommit.unwrap() - 40.0 / 17.0).abs() < 1e-9, "{p:?}");
        assert!(p.held(), "{p:?}");
        // A charge far above the target (throttling that lagged) is outside.
        r.guard.usage_max_bytes = Some(20 << 20);
        assert!(of(&r).breaks[0].starts_with("overcommit"), "{:?}", of(&r));
        // Unread: unknown, never the target, and no overflow past a room of 0.
        r.guard.usage_max_bytes = None;
        let p = of(&r);
        assert_eq!((p.overcommit, p.pages_out_per_overflow), (None, None));
        assert_eq!(p.breaks, [UNREAD_CHARGE]);
    }

    #[test]
    fn a_custom_run_recorded_before_the_rule_is_outside_when_read_again() {
        // Recorded held, by a pagelab that did not yet know the rule.
        let mut r = run("e2-custom", 16 << 20, 16 << 20, 3 * 6144 + 1, 100);
        r.protocol = Some(Protocol { breaks: vec![], ..of(&r) });
        assert_eq!(current(&r).breaks, [CUSTOM]);
        assert!(outside(std::slice::from_ref(&r), &["e2"]).is_some_and(|w| w.contains(CUSTOM)));
        // The study's preset as recorded stays as recorded.
        let mut s = run("e2", 16 << 20, 16 << 20, 3 * 6144 + 1, 100);
        s.protocol = Some(of(&s));
        assert!(current(&s).held());
    }

    /// The CPU-only control is judged on its estimates only where nothing
    /// but the paging was taken away.
    #[test]
    fn only_the_cpu_only_controls_own_breaks_are_lifted() {
        // 4 × 10 MiB under a 100 MiB limit: overcommit 0.4, no overflow; 100 passes.
        let control = |f: &dyn Fn(&mut ThrashResult)| {
            let mut r = run("e2", 100 << 20, 0, 0, 100);
            r.plan.as_mut().unwrap().cpu_only = true;
            (r.protocol_held, r.oom_kills) = (true, Some(0));
            f(&mut r);
            r.protocol = Some(of(&r));
            only_paging_removed(&r)
        };
        assert!(control(&|_| {}));
        assert!(!current(&{
            let mut r = run("e2", 100 << 20, 0, 0, 100);
            r.plan.as_mut().unwrap().cpu_only = true;
            r
        })
        .held());
        // Anything else broken keeps it outside.
        assert!(!control(&|r| r.plan.as_mut().unwrap().cpu_only = false), "not the control's limit");
        assert!(!control(&|r| r.protocol_held = false), "a consumer did not complete");
        assert!(!control(&|r| r.oom_kills = None), "OOM kills unread");
        assert!(!control(&|r| r.consumer_details[0].cycles = 1), "a consumer made too few passes");
        assert!(!control(&|r| r.plan.as_mut().unwrap().preset = "e2-custom".into()), "not the study's preset");
        assert!(!control(&|r| r.limit_bytes = 20 << 20), "overcommitted after all");
    }

    /// thrash.writes' control is judged on its estimates only where the
    /// sleep alone was taken away: the study's N, W and t_c under its
    /// factors, t_s 0, and the protocol held otherwise.
    #[test]
    fn only_the_sleep_controls_own_break_is_lifted() {
        // e2 at size × 0.1, time × 0.035: 25 × 10 MiB under 100 MiB is 2.5;
        // the overflow, 150 MiB, paged out three times over; 100 passes.
        let control = |f: &dyn Fn(&mut ThrashResult)| {
            let mut r = run("e2-custom", 100 << 20, 100 << 20, 3 * 38_400 + 1, 2560);
            r.consumer_details = (0..25).map(|_| Consumer { cycles: 2560, ..Default::default() }).collect();
            let plan = r.plan.as_mut().unwrap();
            (plan.consumers, plan.sleep_ms, plan.stagger_ms) = (25, 0.0, 1050.0);
            (r.protocol_held, r.oom_kills) = (true, Some(0));
            f(&mut r);
            r.protocol = Some(of(&r));
            only_sleep_removed(&r)
        };
        assert!(control(&|_| {}));
        assert!(!control(&|r| r.plan.as_mut().unwrap().sleep_ms = 3.5), "it slept");
        assert!(!control(&|r| r.plan.as_mut().unwrap().writes = 100), "W is not the preset's");
        assert!(!control(&|r| r.plan.as_mut().unwrap().size_bytes = 20 << 20), "S is not the preset's");
        assert!(!control(&|r| r.plan.as_mut().unwrap().stagger_ms = 35.0), "t_c is not the preset's");
        assert!(!control(&|r| r.plan.as_mut().unwrap().consumers = 4), "N is not the study's");
        assert!(!control(&|r| r.plan.as_mut().unwrap().preset = "e9-custom".into()), "no such preset");
        assert!(!control(&|r| r.plan.as_mut().unwrap().cpu_only = true), "the CPU-only control's limit");
        assert!(!control(&|r| r.protocol_held = false), "a consumer did not complete");
        assert!(!control(&|r| r.oom_kills = None), "OOM kills unread");
        assert!(!control(&|r| (r.limit_bytes, r.guard.limit_max_bytes) = (60 << 20, 60 << 20)), "overcommit off");
        assert!(!control(&|r| r.pswpout_total = 100), "not deep: it filled and ended");
    }

    /// A companion inside the group (jank's frame probe) counts with N × S:
    /// 4 × 10 MiB and a 5 MiB probe under an 18 MiB limit (the probe's
    /// pages the only idle usage) is (40 + 5) ÷ 18 = 2.5.
    #[test]
    fn a_companion_inside_counts_in_the_overcommit() {
        let mut r = run("e2", 18 << 20, 18 << 20, 3 * 6912 + 1, 100);
        (r.idle_usage_bytes, r.companion_bytes) = (5 << 20, 5 << 20);
        let p = of(&r);
        assert!((p.overcommit.unwrap() - 2.5).abs() < 1e-9, "{p:?}");
        // The overflow is (45 - 18) MiB: 6912 pages, paged out 3 times over.
        assert!(p.held(), "{p:?}");
        // Not counted, the consumers alone would overcommit the 13 MiB its
        // pages leave 3.1 times: outside.
        r.companion_bytes = 0;
        assert!(!of(&r).held());
    }

    #[test]
    fn a_fill_burst_and_a_raised_limit_are_outside_the_protocol() {
        // 4 × 10 MiB on 16 MiB: 2.5, overflow 6144 pages.
        let ok = of(&run("e2", 16 << 20, 16 << 20, 3 * 6144 + 1, 100));
        assert!(ok.held(), "{ok:?}");
        assert!((ok.overcommit.unwrap() - 2.5).abs() < 1e-9);
        // 100 cycles × 1000 writes over 2560 pages.
        assert!((ok.passes_min.unwrap() - 100.0 * 1000.0 / 2560.0).abs() < 1e-9);
        // The study's e2: 10 000 writes over 25 600 pages every 0.1 s, 3.9.
        assert!((ok.study_writes_per_page_per_s.unwrap() - 3.90625).abs() < 1e-9);
        // Here 1000 ÷ 2560 ÷ 0.0035 s: 112, as the review measured.
        assert!((ok.writes_per_page_per_s.unwrap() - 111.6).abs() < 0.1);
        // Paging about the overflow once: a fill burst.
        let burst = of(&run("e4-custom", 16 << 20, 16 << 20, 6144, 100));
        assert!(burst.breaks.iter().any(|b| b.contains("fill burst")), "{burst:?}");
        // Four consumers, not the study's 25: another experiment, whatever its figures.
        assert_eq!(burst.breaks[0], CUSTOM);
        let custom = of(&run("e2-custom", 16 << 20, 16 << 20, 3 * 6144 + 1, 100));
        assert_eq!(custom.breaks, [CUSTOM]);
        assert!(!custom.held());
        assert_eq!(burst.preset, "e4");
        // The guard raised the limit to 45.8 MB: 0.92, not 2.5.
        let raised = of(&run("e2", 16 << 20, 45_800_000, 30_000, 100));
        assert!(raised.breaks.iter().any(|b| b.starts_with("overcommit")), "{raised:?}");
        // A consumer that made a pass and ended.
        let short = of(&run("e2", 16 << 20, 16 << 20, 30_000, 5));
        assert!(short.breaks.iter().any(|b| b.contains("passes")), "{short:?}");
        // A finding comparing e2 with e1 is outside when either is.
        let rs = [run("e1", 16 << 20, 16 << 20, 30_000, 100), run("e2", 16 << 20, 45_800_000, 30_000, 100)];
        assert!(outside(&rs, &["e1"]).is_none());
        assert!(outside(&rs, &["e1", "e2"]).is_some_and(|w| w.starts_with("e2 (repeat 1): overcommit")), "{:?}", outside(&rs, &["e1", "e2"]));
    }
}
