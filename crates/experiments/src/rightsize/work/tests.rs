//! What a recommendation says it needs in all, per store and cgroup version.

use super::*;
use crate::rightsize::results::{Baseline, CurvePoint, ProgramRun};

/// A zswap run verified at 100 MiB whose pool held 40 MiB (of 120 MiB it
/// was given), against a 300 MiB peak, on cgroup `version`.
fn verified_at_100(version: &str) -> Recommendation {
    let limit = 100 * MIB;
    let res = RightsizeResult {
        mode: "batch".into(),
        command: vec!["prog".into()],
        backing: "zswap".into(),
        cgroup_version: version.into(),
        target_slowdown: 0.2,
        baseline: Some(Baseline { peak_bytes_max: 300 * MIB, ..Default::default() }),
        curve: vec![CurvePoint { limit_bytes: limit, store_used_bytes: 40 * MIB, ..Default::default() }],
        runs: vec![ProgramRun { limit_bytes: Some(limit), store_orig_bytes: 120 * MIB, ..Default::default() }],
        ..Default::default()
    };
    let v = search::Verification {
        limit,
        ratios: vec![1.05, 1.02, 1.04],
        looks: Vec::new(),
        verified: true,
        ended: "verified",
    };
    recommend(&res, limit, &v, 0)
}

#[test]
fn zswaps_pool_counts_beside_the_limit_on_v1_and_inside_it_on_v2() {
    let v1 = verified_at_100("v1");
    assert_eq!(v1.total_bytes, 140 * MIB);
    assert!(v1.summary.contains("and the 40 MiB the compressed store held"), "{}", v1.summary);
    let v2 = verified_at_100("v2");
    assert_eq!(v2.total_bytes, 100 * MIB, "the pool was counted twice");
    assert_eq!(v2.saved_bytes, (200 * MIB) as i64);
    assert!(v2.summary.contains("cgroup v2 charges it there"), "{}", v2.summary);
    assert!(pool_inside_limit("zswap", true) && !pool_inside_limit("zram", true) && !pool_inside_limit("zswap", false));
}
