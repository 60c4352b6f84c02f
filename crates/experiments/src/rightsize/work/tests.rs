//! What a recommendation says it needs in all, per store and cgroup version.

use probe::cgroup::CgroupVersion;
use super::*;
use crate::rightsize::results::{Baseline, CurvePoint, ProgramRun, Recommendation};

const NODE: crate::rightsize::kube::Node =
    crate::rightsize::kube::Node { memory_bytes: 16 << 30, swap_bytes: 4 << 30, given: true };

/// A zswap run verified at 100 MiB whose pool held 40 MiB (of 120 MiB it
/// was given), against a 300 MiB peak, on cgroup `version`.
fn verified_at_100(version: &str) -> Recommendation {
    let (res, v) = zswap_at_100(version);
    recommend(&res, 100 * MIB, &v, Some(0), NODE).expect("the store was read")
}

fn zswap_at_100(version: &str) -> (RightsizeResult, search::Verification) {
    let limit = 100 * MIB;
    let res = RightsizeResult {
        mode: crate::rightsize::results::Mode::Batch,
        command: vec!["prog".into()],
        backing: Some(BackingKind::Zswap),
        cgroup_version: Some(if version == "v2" { CgroupVersion::V2 } else { CgroupVersion::V1 }),
        target_slowdown: 0.2,
        baseline: Some(Baseline { peak_bytes_max: 300 * MIB, ..Default::default() }),
        curve: vec![CurvePoint { limit_bytes: limit, store_used_bytes: Some(40 * MIB), ..Default::default() }],
        runs: vec![ProgramRun { limit_bytes: Some(limit), store_orig_bytes: Some(120 * MIB), ..Default::default() }],
        ..Default::default()
    };
    let v = search::Verification {
        limit,
        ratios: vec![1.05, 1.02, 1.04],
        looks: Vec::new(),
        verified: true,
        ended: "verified",
        capped: 0,
        oom: 0,
    };
    (res, v)
}

/// Unknown is not zero: a compressed store whose size at the limit was not
/// read gives no answer (what the limit needs in all is unknown), and the
/// curve's point says so; a disk keeps nothing in RAM, so its total is the
/// limit, measured not assumed.
#[test]
fn an_unread_store_gives_no_total() {
    let (mut res, v) = zswap_at_100("v1");
    res.curve[0].store_used_bytes = None;
    let why = recommend(&res, 100 * MIB, &v, Some(0), NODE).expect_err("an unread store");
    assert!(why.contains("zswap store's size at 100 MiB could not be read"), "{why}");
    // What it held only says whether it compressed: unread, that is unknown.
    let (mut res, v) = zswap_at_100("v1");
    res.runs[0].store_orig_bytes = None;
    let r = recommend(&res, 100 * MIB, &v, Some(0), NODE).expect("the store's RAM was read");
    assert_eq!((r.total_bytes, r.store_compresses), (140 * MIB, None));
    // A verified limit left unanswered says it was verified, not that nothing was.
    let (res, v) = zswap_at_100("v1");
    let u = unanswered(&res, &v, "the zswap store's size at 100 MiB could not be read");
    assert!(u.summary.starts_with("100 MiB was verified within 20 %"), "{}", u.summary);
    assert!(u.summary.contains("but the zswap store's size") && !u.summary.contains("Nothing verified"), "{}", u.summary);
    assert_eq!(u.safe_limit_bytes, 300 * MIB);
    let (mut res, v) = zswap_at_100("v1");
    res.backing = Some(BackingKind::Swapfile);
    res.curve[0].store_used_bytes = None;
    res.runs[0].store_orig_bytes = None;
    assert_eq!(recommend(&res, 100 * MIB, &v, Some(0), NODE).expect("a disk needs no store").total_bytes, 100 * MIB);
    let why = recommend(&res, 100 * MIB, &v, None, NODE).expect_err("the swap at the limit unread");
    assert!(why.contains("swap in use at 100 MiB could not be read"), "{why}");
    // The curve: a run whose store or PSI was unread leaves its point's unknown.
    let run = |store: Option<u64>, psi: Option<u64>| ProgramRun {
        limit_bytes: Some(100 * MIB),
        outcome: "ok".into(),
        seconds: 1.0,
        ratio: 1.1,
        psi_some_us: psi,
        store_used_bytes: store,
        ..Default::default()
    };
    let read = curve(&[run(Some(MIB), Some(10_000)), run(Some(2 * MIB), Some(10_000))], None, false, true);
    assert_eq!((read[0].store_used_bytes, read[0].total_bytes), (Some(2 * MIB), Some(102 * MIB)));
    assert!((read[0].psi_some_pct - 1.0).abs() < 1e-9, "{}", read[0].psi_some_pct);
    let unread = curve(&[run(Some(MIB), None), run(None, Some(10_000))], None, false, true);
    assert_eq!((unread[0].store_used_bytes, unread[0].total_bytes), (None, None));
    assert!(unread[0].psi_some_pct.is_nan());
    let disk = curve(&[run(None, Some(0))], None, false, false);
    assert_eq!(disk[0].total_bytes, Some(100 * MIB));
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
    assert!(
        pool_inside_limit(Some(BackingKind::Zswap), true)
            && !pool_inside_limit(Some(BackingKind::Zram), true)
            && !pool_inside_limit(Some(BackingKind::Zswap), false)
            && !pool_inside_limit(None, true)
    );
}

/// A record written before the version and the PSI scope were types said ""
/// for "unknown": that reads as None, the values as their enums, and an
/// unknown value is an error, not a default.
#[test]
fn an_older_records_empty_version_and_scope_read_as_unknown() {
    use crate::rightsize::results::{PsiScope, RightsizeResult};
    let read = |v: serde_json::Value| serde_json::from_value::<RightsizeResult>(v).map_err(|e| e.to_string());
    let r = read(serde_json::json!({"mode": "batch", "cgroup_version": "", "psi_scope": ""})).unwrap();
    assert_eq!((r.cgroup_version, r.psi_scope), (None, None));
    let r = read(serde_json::json!({"mode": "service", "cgroup_version": "v2", "psi_scope": "machine"})).unwrap();
    assert_eq!((r.cgroup_version, r.psi_scope), (Some(CgroupVersion::V2), Some(PsiScope::Machine)));
    let back = serde_json::to_value(&r).unwrap();
    assert_eq!((back["cgroup_version"].as_str(), back["psi_scope"].as_str()), (Some("v2"), Some("machine")));
    assert!(read(serde_json::json!({"mode": "batch", "cgroup_version": "v3"})).unwrap_err().contains("v3"));
}
