//! `thrash`: many processes whose working sets exceed the memory they are given,
//! contained in a memory cgroup, with recovery and responsiveness measured.
//!
//! Reproduces Maziero, dos Santos and Santin, "Evaluation of desktop operating
//! systems under thrashing conditions" (2012). N consumers start together; consumer
//! i sleeps `initial + i × t_c`, allocates S bytes, and for `t_p = N × t_c + t_c`
//! loops "W writes of a random byte at a random position, then sleep t_s", then
//! frees the memory. Here the consumers are worker processes in one memory cgroup
//! whose limit makes N × S about 2.5 × the limit (the study's 25 × 100 MB on a
//! 1 GB machine), so the host never thrashes.
//!
//! Around them:
//! - the parent's mlocked 1 s collector (the experiment's sampler) records CPU,
//!   paging, major faults and PSI, and its own lateness;
//! - a second, unlocked sampler runs inside the thrashing cgroup, for comparison;
//! - two responsiveness probes wake every 100 ms and touch a few MiB, one outside
//!   the cgroup and one inside; their wake-up-to-done latency is reported for the
//!   windows before, during and after the thrash;
//! - recovery: with the consumers alive, their load fallen back, the time from
//!   when it fits under the limit until paging, memory stalls and the probe
//!   inside are calm again (see [`RECOVERY`]).

mod analysis;
mod config;
mod group;
pub mod guard;
mod link;
mod run;
#[cfg(test)]
mod seam_tests;
mod watch;
mod worker;

pub use analysis::*;
pub use config::*;
pub(crate) use group::{UNCAPPED, cap_swap, slow_disk};
use group::make_group;
pub(crate) use link::{Link, spawn, stop_and_collect, wait_ready};
pub use run::*;
pub use worker::*;

use serde_json::{Value, json};
use std::time::Duration;
use workloads::backing::{self, BackingKind};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The study's e2 at full scale (shared with run.rs's tests).
    pub(crate) fn cfg() -> ThrashConfig {
        ThrashConfig {
            presets: vec!["e2".into()],
            consumers: None,
            size: None,
            writes: None,
            sleep: None,
            stagger: None,
            initial_delay: Duration::from_secs(10),
            limit: None,
            backings: vec![BackingKind::Zram],
            time_scale: None,
            scale: 1.0,
            repeat: 1,
            exe: "/bin/true".into(),
            host_floor: None,
            swapfile_dir: "/tmp".into(),
            after_load: AfterLoad::Falls,
            cpu_only: false,
        }
    }

    #[test]
    fn each_consumer_starts_a_stagger_later_with_its_own_seed() {
        let p = &cfg().plans()[0];
        let a = consumer_spec(p, 0, 0);
        let b = consumer_spec(p, 3, 0);
        let c = consumer_spec(p, 3, 1);
        assert_eq!(a.delay_us, 10_000_000);
        assert_eq!(b.delay_us - a.delay_us, 3 * 30_000_000);
        assert_eq!((b.size, b.writes, b.sleep_us, b.active_us), (100 << 20, 10_000, 100_000, 780_000_000));
        assert!(a.seed != b.seed && b.seed != c.seed);
        // The spec travels whole, and a missing field is refused.
        let argv = sandbox::worker::argv_spec(CONSUMER, &b);
        assert_eq!(sandbox::worker::spec_of::<ConsumerSpec>(CONSUMER, &argv[2..]).unwrap(), b);
        let e = sandbox::worker::spec_of::<ProbeSpec>(PROBE, &["--spec".into(), r#"{"ws": 1, "inside": true}"#.into()]);
        assert!(e.unwrap_err().contains("period_ms"));
    }

    #[test]
    fn presets_follow_the_study_and_scale_in_proportion() {
        let p = &cfg().plans()[0];
        assert_eq!((p.consumers, p.size_bytes, p.writes), (25, 100 << 20, 10_000));
        assert_eq!((p.sleep_ms, p.stagger_ms, p.initial_delay_ms), (100.0, 30_000.0, 10_000.0));
        // t_p = N t_c + t_c; the last consumer ends at initial + (N-1) t_c + t_p.
        assert_eq!(p.active_ms, 26.0 * 30_000.0);
        assert_eq!(p.planned_duration_ms, 10_000.0 + 24.0 * 30_000.0 + 780_000.0);
        let mut c = cfg();
        c.scale = 0.1;
        c.presets = vec!["e4".into()];
        let q = &c.plans()[0];
        assert_eq!(q.size_bytes, 10 << 20);
        assert_eq!(q.writes, 1000);
        assert_eq!(q.stagger_ms, 100.0);
        assert!((q.sleep_ms - 10.0).abs() < 1e-9, "t_s scales with W: the paging demand per second is the study's");
        assert!((q.initial_delay_ms - 1000.0).abs() < 1e-9);
        // A separate time scale: sizes at 0.1, times at 0.5.
        c.time_scale = Some(0.5);
        let t = &c.plans()[0];
        assert_eq!((t.size_bytes, t.writes), (10 << 20, 1000));
        assert_eq!((t.sleep_ms, t.stagger_ms, t.time_scale), (50.0, 500.0, 0.5));
        assert_eq!(parse_presets("all").unwrap().len(), 4);
        assert!(parse_presets("e5").unwrap_err().contains("e1, e2"));
    }

    #[test]
    fn repeats_run_round_robin_over_the_presets() {
        let mut c = cfg();
        c.presets = vec!["e1".into(), "e2".into(), "e4".into()];
        c.repeat = 2;
        c.backings = vec![workloads::backing::BackingKind::Zram, workloads::backing::BackingKind::Swapfile];
        let order: Vec<String> = c.schedule().iter().map(|(b, p, r)| format!("{b:?}:{}:{r}", p.preset)).collect();
        assert_eq!(
            order,
            [
                "Zram:e1:0",
                "Zram:e2:0",
                "Zram:e4:0",
                "Zram:e4:1",
                "Zram:e2:1",
                "Zram:e1:1",
                "Swapfile:e1:0",
                "Swapfile:e2:0",
                "Swapfile:e4:0",
                "Swapfile:e4:1",
                "Swapfile:e2:1",
                "Swapfile:e1:1"
            ]
        );
        // Two rounds of three presets: ABBA (a partial Williams square would
        // not balance). Four presets over four rounds: a Williams square.
        c.presets = ["e1", "e2", "e3", "e4"].map(String::from).to_vec();
        c.repeat = 4;
        c.backings = vec![workloads::backing::BackingKind::Swapfile];
        let order: Vec<String> = c.schedule().iter().map(|(_, p, _)| p.preset.clone()).collect();
        assert_eq!(order.join(" "), "e1 e2 e4 e3 e2 e3 e1 e4 e3 e4 e2 e1 e4 e1 e3 e2");
    }

    #[test]
    fn windows_split_probe_samples_by_time() {
        let s: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, if (30..60).contains(&i) { 50.0 } else { 1.0 })).collect();
        let w = windows(&s, 30.0, 60.0);
        assert_eq!((w.before.n, w.during.n, w.after.n), (30, 30, 40));
        assert_eq!(w.during.p50, Some(50.0));
        assert_eq!(w.before.max, Some(1.0));
    }

    fn consumer(start_s: f64, end_s: f64, per_bin: u32, cycle_ms_min: f64) -> Consumer {
        let bins =
            (0..(end_s / 0.1).ceil() as usize).map(|b| if b as f64 * 0.1 >= start_s { per_bin } else { 0 }).collect();
        Consumer { completed: true, start_s, end_s, bins, cycle_ms_min, ..Default::default() }
    }

    #[test]
    fn progress_counts_only_the_overcommitted_bins() {
        // Three consumers of 10 bytes in a room of 25: overcommitted only while
        // all three run (2 s to 4 s). Consumer 0 runs 0-4 s at full speed (10
        // cycles per bin of a 10 ms cycle) until 2 s, then at a quarter.
        let mut c0 = consumer(0.0, 4.0, 10, 10.0);
        for b in 20..40 {
            c0.bins[b] = 2;
        }
        let c1 = consumer(1.0, 5.0, 10, 10.0);
        let mut c2 = consumer(2.0, 6.0, 10, 10.0);
        for b in 20..40 {
            c2.bins[b] = 5;
        }
        let mut cs = vec![c0, c1, c2];
        let (median, secs) = overcommitted(&mut cs, 10, 25);
        assert!((secs - 2.0).abs() < 1e-9, "{secs}");
        assert!((cs[0].progress_overcommitted.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(cs[1].progress_overcommitted, Some(1.0));
        assert!((cs[2].progress_overcommitted.unwrap() - 0.5).abs() < 1e-9);
        assert!((median.unwrap() - 0.5).abs() < 1e-9);
        // With room for all, nothing is overcommitted and no ratio is given.
        let (median, secs) = overcommitted(&mut cs, 10, 30);
        assert_eq!((median, secs), (None, 0.0));
        assert!(cs.iter().all(|c| c.progress_overcommitted.is_none()));
        // A consumer that did not complete neither counts nor occupies a bin.
        cs[2].completed = false;
        // Room 15: consumers 0 and 1 overlap from 1 s to 4 s; consumer 0 did
        // 10 × 10 + 20 × 2 = 140 of 300 cycles there, consumer 1 all 300.
        let (median, secs) = overcommitted(&mut cs, 10, 15);
        assert!((secs - 3.0).abs() < 1e-9, "{secs}");
        assert!((cs[0].progress_overcommitted.unwrap() - 140.0 / 300.0).abs() < 1e-9);
        assert_eq!(cs[2].progress_overcommitted, None);
        assert!((median.unwrap() - (140.0 / 300.0 + 1.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn recovery_needs_three_calm_seconds_after_the_end() {
        // Paging stays high until t=14, then calm; PSI spikes at t=16.
        let pts: Vec<(f64, f64, f64)> = (1..=30)
            .map(|t| {
                let t = t as f64;
                (t, if t <= 14.0 { 5000.0 } else { 0.0 }, if t == 16.0 { 5.0 } else { 0.0 })
            })
            .collect();
        // From t=10: calm intervals start at 15 but 16 breaks it; 17,18,19 are calm.
        assert_eq!(recovery(&pts, 10.0, 0.0), Some(17.0 - 1.0 - 10.0));
        // Never calm: None.
        let busy: Vec<(f64, f64, f64)> = (1..=30).map(|t| (t as f64, 1e4, 0.0)).collect();
        assert_eq!(recovery(&busy, 0.0, 0.0), None);
        // A busy baseline raises the threshold.
        assert!(recovery(&busy, 0.0, 6000.0).is_some());
        // PSI not read (NaN) is not calm: quiet paging alone never ends it.
        let unread: Vec<(f64, f64, f64)> = (1..=30).map(|t| (t as f64, 0.0, f64::NAN)).collect();
        assert_eq!(recovery(&unread, 0.0, 0.0), None);
    }

    /// The recovery counts from the moment the load falls back enough to
    /// fit: consumers of 10 units in a room of 25, each falling back to 2
    /// at its t_p's end.
    #[test]
    fn the_recovery_counts_from_when_the_load_fits() {
        let c = |start: f64, end: f64| Consumer { completed: true, start_s: start, end_s: end, ..Default::default() };
        // Three at once from 2 s (30 > 25); the first falls back at 5 s
        // (22 ≤ 25): from then on it fits.
        let cs = [c(0.0, 5.0), c(1.0, 6.0), c(2.0, 7.0)];
        assert_eq!(overcommit_end(&cs, 10, 25), Some(5.0));
        // A fourth starting at 5.5 s goes over again (32): it fits from 6 s (24).
        let cs = [c(0.0, 5.0), c(1.0, 6.0), c(2.0, 7.0), c(5.5, 9.0)];
        assert_eq!(overcommit_end(&cs, 10, 25), Some(6.0));
        // Never over the room: nothing to recover from.
        assert_eq!(overcommit_end(&[c(0.0, 5.0), c(1.0, 6.0)], 10, 25), None);
        // A consumer that did not complete is not counted.
        let cs = [c(0.0, 5.0), c(1.0, 6.0), Consumer { completed: false, ..c(2.0, 7.0) }];
        assert_eq!(overcommit_end(&cs, 10, 25), None);
        // Still over after every fall-back (a room under N × the fallen-back share).
        assert_eq!(overcommit_end(&[c(0.0, 5.0), c(1.0, 6.0), c(2.0, 7.0)], 10, 5), None);
    }

    /// The recovery with the consumers alive (issue 57): 0.1 s intervals
    /// from the fall-back at t = 10 s; it ends where paging, PSI and the
    /// probe inside have all been calm for 1 s, at the interval's
    /// resolution.
    #[test]
    fn recovery_alive_needs_paging_psi_and_the_probe_calm_for_a_second() {
        let pt = |t: f64, paging: f64, psi: f64| RecoveryPoint { t_s: t, paging_per_s: paging, psi_some_pct: psi };
        // Paging until 10.5 s, then calm: recovered 0.5 s after the fall-back.
        let watch: Vec<RecoveryPoint> =
            (1..=40).map(|i| 10.0 + i as f64 * 0.1).map(|t| pt(t, if t <= 10.5 + 1e-9 { 900.0 } else { 0.0 }, 0.0)).collect();
        let r = recovery_alive(&watch, &[], 10.0, 0.0, 10.0).unwrap();
        assert!((r - 0.5).abs() < 1e-6, "{r}");
        // The probe inside late by 750 ms from its wake-up at 10.9 s: calm
        // only from the end of the interval its lateness ends in, 11.7 s.
        let probe = [(10.8, 1.0), (10.9, 750.0), (11.8, 1.0)];
        let r = recovery_alive(&watch, &probe, 10.0, 0.0, 10.0).unwrap();
        assert!((r - 1.7).abs() < 1e-6, "{r}");
        // A late probe under the limit does not count.
        let r = recovery_alive(&watch, &probe, 10.0, 0.0, 900.0).unwrap();
        assert!((r - 0.5).abs() < 1e-6, "{r}");
        // A PSI spike at 11.2 s (15 % of its 0.1 s: 15 ms, over the 10 ms
        // a second may stall) restarts the stretch after it.
        let spiky: Vec<RecoveryPoint> =
            watch.iter().map(|p| if (p.t_s - 11.2).abs() < 1e-6 { pt(p.t_s, 0.0, 15.0) } else { *p }).collect();
        let r = recovery_alive(&spiky, &[], 10.0, 0.0, 10.0).unwrap();
        assert!((r - 1.2).abs() < 1e-6, "{r}");
        // 5 % of one interval (5 ms) is within the second's 1 %: calm.
        let mild: Vec<RecoveryPoint> =
            watch.iter().map(|p| if (p.t_s - 11.2).abs() < 1e-6 { pt(p.t_s, 0.0, 5.0) } else { *p }).collect();
        assert!((recovery_alive(&mild, &[], 10.0, 0.0, 10.0).unwrap() - 0.5).abs() < 1e-6);
        // So are ten stray pages in one interval (10 over the second, under 16).
        let stray: Vec<RecoveryPoint> =
            watch.iter().map(|p| if (p.t_s - 11.2).abs() < 1e-6 { pt(p.t_s, 100.0, 0.0) } else { *p }).collect();
        assert!((recovery_alive(&stray, &[], 10.0, 0.0, 10.0).unwrap() - 0.5).abs() < 1e-6);
        // Calm for less than a second before the watch ends: none.
        assert_eq!(recovery_alive(&watch[..14], &[], 10.0, 0.0, 10.0), None);
        // PSI unread (NaN) is never calm.
        let unread: Vec<RecoveryPoint> = watch.iter().map(|p| pt(p.t_s, 0.0, f64::NAN)).collect();
        assert_eq!(recovery_alive(&unread, &[], 10.0, 0.0, 10.0), None);
        // A busy baseline raises the paging threshold.
        assert!(recovery_alive(&watch, &[], 10.0, 500.0, 10.0).is_some_and(|r| r < 1e-6));
    }
}
