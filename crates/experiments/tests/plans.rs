//! Property tests over the plan functions: whatever sizes and counts a user
//! types, a plan's bytes never wrap, so the host guard sees the true size and
//! refuses what does not fit before anything is changed.

use experiments::thrash::work::PlanExt;
use experiments::thrash::work::ThrashConfig;
use probe::counters::Counters;
use probe::meminfo::Meminfo;
use proptest::prelude::*;
use sandbox::guard::HostGuard;
use std::time::Duration;
use workloads::backing::BackingKind;

/// A 24 GiB machine with 20 GiB available.
fn machine() -> (HostGuard, Meminfo) {
    let m = Meminfo(Counters::from_pairs([("MemTotal", 24u64 << 30), ("MemAvailable", 20u64 << 30)]));
    (HostGuard::new(None, &m), m)
}

fn thrash(consumers: Option<u32>, size: Option<u64>, scale: f64, limit: Option<u64>) -> ThrashConfig {
    ThrashConfig {
        presets: vec!["e2".into()],
        consumers,
        size,
        writes: None,
        sleep: None,
        stagger: None,
        initial_delay: Duration::from_secs(1),
        limit,
        backings: vec![BackingKind::Zram],
        scale,
        time_scale: None,
        repeat: 1,
        exe: "/bin/true".into(),
        host_floor: None,
        swapfile_dir: "/tmp".into(),
        after_load: experiments::thrash::work::AfterLoad::Falls,
        cpu_only: false,
    }
}

proptest! {
    #[test]
    fn eat_wscap_mapping_plans_never_wrap(size in any::<u64>()) {
        let (g, m) = machine();
        for (planned, factor) in [
            (experiments::eat::work::planned_bytes(size, true), 2u128),
            (experiments::eat::work::planned_bytes(size, false), 1),
            (experiments::wscap::work::planned_bytes(size), 2),
            (experiments::mapping::work::planned_bytes(size), 3),
        ] {
            prop_assert!(planned >= factor * size as u128);
            if size > 20 << 30 {
                prop_assert!(g.check_plan(planned, "x", &m).is_err(), "{size} bytes passed the guard");
            }
        }
    }

    #[test]
    fn thrash_plans_never_wrap(
        consumers in 1u32..=u32::MAX,
        size in 1u64..=u64::MAX,
        scale in 0.001f64..=10.0,
        limit in proptest::option::of(1u64..=u64::MAX),
    ) {
        let (g, m) = machine();
        for p in thrash(Some(consumers), Some(size), scale, limit).plans() {
            let page = 4096;
            prop_assert!(p.size_bytes >= page);
            prop_assert_eq!(p.total_bytes(), p.consumers as u128 * p.size_bytes as u128);
            prop_assert!(p.planned_bytes() >= p.total_bytes());
            if p.total_bytes() > 20 << 30 {
                prop_assert!(g.check_plan(p.planned_bytes(), "thrash", &m).is_err());
            }
        }
    }
}

#[test]
fn the_reviews_overflow_cases_are_refused_by_the_guard() {
    let (g, m) = machine();
    // eat/wscap --size 2^63: 2 × size wrapped to 64 MiB before.
    assert!(g.check_plan(experiments::eat::work::planned_bytes(1 << 63, true), "eat", &m).is_err());
    assert!(g.check_plan(experiments::wscap::work::planned_bytes(1 << 63), "wscap", &m).is_err());
    // mapping --size 6148914691236517206: 3 × size wrapped to 2 bytes.
    assert!(g.check_plan(experiments::mapping::work::planned_bytes(6148914691236517206), "mapping", &m).is_err());
    // thrash --consumers 4 --size 2^62: N × S wrapped to 0.
    let p = &thrash(Some(4), Some(1 << 62), 1.0, None).plans()[0];
    assert_eq!(p.total_bytes(), 1u128 << 64);
    assert!(g.check_plan(p.planned_bytes(), "thrash", &m).is_err());
}
