//! rightsize's whole run without root (issue 60 item 3): its program a real
//! process, each run's group made on a fake cgroup-v2 tree.

use super::*;
use crate::rightsize::results::CheckAnswer;
use workloads::observe::Recorder;

/// A fake cgroup-v2 machine whose groups read [`sandbox::testing::FAKE_USAGE`].
fn machine() -> tempfile::TempDir {
    let tree = tempfile::tempdir().unwrap();
    sandbox::testing::fake_cgroup_v2(tree.path()).unwrap();
    tree
}

/// `--check`'s session drives the program (`sleep`, a process of this
/// user's: no root) once per run, each in a group of its own, the
/// baseline unlimited and the pairs at the limit checked; reads each
/// run's peak from its group; answers the limit; and leaves no group and
/// no journal behind. A stop kills the program and ends the session.
#[test]
fn a_check_drives_its_program_and_groups_without_root() {
    let tree = machine();
    let sandbox = || {
        Sandbox::with_journal_dir("rightsize", &tree.path().join("journal"))
            .with_roots(probe::Roots::under(tree.path()))
            .with_kernel_files(sandbox::testing::kernel_files)
    };
    let cfg = BatchConfig {
        // rightsize measures a program of a second or more.
        command: vec!["sleep".into(), "1.02".into()],
        search: SearchConfig { baselines: 1, pairs: 2, max_runs: 5, budget_s: 120.0, ..Default::default() },
        backing: BackingKind::None,
        compressor: None,
        swapfile_dir: "/tmp".into(),
        guard_max: 64 * MIB,
        synthetic: None,
        node: crate::rightsize::kube::Node { memory_bytes: 16 << 30, swap_bytes: 0, given: true },
    };
    let limit = 4 * MIB;
    let mut obs = Recorder::default();
    let res = check_with(&cfg, &[(limit, "4MiB".into())], &mut obs, &|| false, &sandbox).unwrap();
    let limits: Vec<Option<u64>> = res.runs.iter().map(|r| r.limit_bytes).collect();
    // A baseline, then two pairs side by side (limited and unlimited), ABBA.
    assert_eq!(limits, [None, Some(limit), None, None, Some(limit)], "{:?}", res.runs);
    let pairs: Vec<Option<u32>> = res.runs.iter().map(|r| r.paired_with).collect();
    assert_eq!(pairs, [None, Some(3), Some(2), Some(5), Some(4)]);
    for r in &res.runs {
        assert_eq!(r.outcome, "ok", "{r:?}");
        assert!(r.seconds >= 1.0, "{r:?}");
        // Its group's peak, as the (fake) kernel gave it.
        assert_eq!(r.peak_bytes, sandbox::testing::FAKE_USAGE, "{r:?}");
    }
    // Each run a process of its own, the run's one target.
    let pids: Vec<i32> = obs.pids.iter().filter(|p| !p.is_empty()).map(|p| p[0]).collect();
    assert_eq!(pids.len(), 5, "{:?}", obs.pids);
    assert!(pids.windows(2).all(|w| w[0] != w[1]), "{pids:?}");
    assert_eq!(res.checks.len(), 1);
    let c = &res.checks[0];
    assert_eq!((c.limit_bytes, c.pairs, c.limited_runs, c.oom_killed), (limit, 2, 2, 0), "{c:?}");
    // The same program at a limit the fake group does not enforce: never too slow.
    assert!(matches!(c.answer, CheckAnswer::Verified | CheckAnswer::Undecided), "{c:?}");
    let left = |dir: &str| std::fs::read_dir(tree.path().join(dir)).map_or(0, |d| d.count());
    assert_eq!((left("sys/fs/cgroup/pagelab"), left("journal")), (0, 0), "a group or a journal was left");
    // A stop: the program is killed at once, and nothing is left.
    let t = Instant::now();
    let e = check_with(&cfg, &[(limit, "4MiB".into())], &mut Recorder::default(), &|| true, &sandbox).unwrap_err();
    assert!(matches!(e, ExperimentError::Interrupted), "{e}");
    assert!(t.elapsed() < Duration::from_millis(900), "the program was not killed: {:?}", t.elapsed());
    assert_eq!((left("sys/fs/cgroup/pagelab"), left("journal")), (0, 0), "a stopped run left a group or a journal");
}
