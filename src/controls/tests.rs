//! `bench controls`' lists, roles, turns and resumes.

use super::turn::{Moved, row};
use super::*;

/// Every finding (checks apart) is in `bench controls`' lists: run
/// (CONTROLS, at most one control of each role) or named once with why
/// not (NOT_RUN), never both. The eighth-experiment trial added a thrash
/// finding that neither list named, and the benchmark left it out
/// without a word.
#[test]
fn every_finding_is_run_or_said_not_run() {
    let run: Vec<(&str, Role)> = CONTROLS.iter().flat_map(|c| c.ids.iter().copied()).collect();
    let mut findings: Vec<&str> = Vec::new();
    for e in experiments::ALL {
        findings.extend(e.report.claims().into_iter().filter(|c| !c.check).map(|c| c.id));
    }
    for id in &findings {
        let not = NOT_RUN.iter().filter(|x| x.0 == *id).count();
        let roles: Vec<Role> = run.iter().filter(|x| x.0 == *id).map(|x| x.1).collect();
        assert!(
            (not == 1 && roles.is_empty()) || (not == 0 && !roles.is_empty()),
            "{id}: run by {} controls and said not run {not} times (CONTROLS or NOT_RUN, src/controls.rs)",
            roles.len()
        );
        for r in ["negative", "positive", "instrument"] {
            let n = roles.iter().filter(|x| x.word() == r).count();
            assert!(n <= 1, "{id}: {n} {r:?} controls");
        }
    }
    for id in run.iter().map(|x| x.0).chain(NOT_RUN.iter().map(|x| x.0)) {
        assert!(findings.contains(&id), "{id}: listed in bench controls but not a finding");
    }
    // Two controls of one finding have directories of their own.
    let mut dirs: Vec<String> = CONTROLS.iter().map(|c| format!("{}{}", c.ids[0].0, c.tag)).collect();
    dirs.sort();
    let n = dirs.len();
    dirs.dedup();
    assert_eq!(dirs.len(), n, "two controls would share a directory: {dirs:?}");
}

/// `--resume` keeps a finished run of exactly the same command, and
/// refuses (naming the directory, deleting nothing) one that is not.
#[test]
fn a_resumed_bench_keeps_only_finished_runs_of_the_same_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("thrash-as-the-lab");
    std::fs::create_dir(&dir).unwrap();
    let args: Vec<String> = ["--preset", "all", "--repeat", "4"].iter().map(|x| x.to_string()).collect();
    let write = |state: &str, line: &[&str]| {
        let r = serde_json::json!({
            "status": {"state": state},
            "pagelab_version": env!("CARGO_PKG_VERSION"),
            "command_line": line,
        });
        std::fs::write(dir.join("run.json"), r.to_string()).unwrap();
    };
    // No binary to run: a kept run must not need one.
    let exe = tmp.path().join("no-such-pagelab");
    let line = ["/x/pagelab", "thrash", "--preset", "all", "--repeat", "4", "--out", "d"];
    write("complete", &line);
    run_or_keep(&exe, "thrash", &args, &dir).expect("kept");
    // Stopped, failed or still running: refused, and left in place.
    for state in ["interrupted", "failed", "running"] {
        write(state, &line);
        let e = run_or_keep(&exe, "thrash", &args, &dir).unwrap_err().to_string();
        assert!(e.contains("thrash-as-the-lab") && e.contains("no complete run"), "{state}: {e}");
    }
    // Another command (the control's extra flag): refused, either way round.
    write("complete", &["/x/pagelab", "thrash", "--preset", "all", "--repeat", "4", "--cpu-only", "--out", "d"]);
    let more: Vec<String> = args.iter().cloned().chain(["--cpu-only".to_string()]).collect();
    assert!(run_or_keep(&exe, "thrash", &args, &dir).is_err());
    run_or_keep(&exe, "thrash", &more, &dir).expect("the control's own run is kept");
    write("complete", &line);
    assert!(run_or_keep(&exe, "thrash", &more, &dir).is_err());
    // A directory others may write is not trusted.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = run_or_keep(&exe, "thrash", &args, &dir).unwrap_err().to_string();
    assert!(e.contains("written by others"), "{e}");
    assert!(dir.join("run.json").exists(), "nothing was deleted");
}

#[test]
fn each_control_changes_its_lab_steps_arguments() {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let steps = plan(&m, Scale::Quick, Some(experiments::jank::cmd::quick_budget_s()), &[]);
    let step = |e: &str| steps.iter().find(|s| s.experiment == e).unwrap().clone();
    for c in CONTROLS {
        let part = (c.base.part)(&step(c.experiment)).unwrap().unwrap();
        let changed = (c.change)(&part).unwrap().unwrap_or_else(|| panic!("{}: {:?}", c.experiment, part.argv()));
        assert_ne!(changed.argv(), part.argv(), "{}: the control changes nothing", c.what);
        assert_eq!(changed.repeat, part.repeat, "{}: the same repeats", c.what);
        // Both command lines are ones pagelab takes.
        for a in [part.argv(), changed.argv()] {
            let line = ["pagelab", c.experiment].into_iter().chain(a.iter().map(String::as_str));
            crate::cli::command()
                .try_get_matches_from(line)
                .unwrap_or_else(|e| panic!("{}: pagelab {} {a:?}: {e}", c.what, c.experiment));
        }
        // Every finding named exists, and names a control of its own.
        for (id, _) in c.ids {
            let e = experiments::catalog().find(c.experiment).unwrap();
            let claim = e.claims().into_iter().find(|x| x.id == *id).unwrap_or_else(|| panic!("{id}"));
            assert!(!claim.check && !claim.control.is_empty(), "{id}");
        }
    }
    let heap = |part: &Base, s: &Step| HeapLab::of(&(part.part)(s).unwrap().unwrap()).unwrap();
    let speed = heap(&HEAP_SPEED, &step("heap"));
    assert!(speed.over_time.is_none() && speed.sweep.is_some(), "{speed:?}");
    assert!(!(HEAP_SPEED.part)(&step("heap")).unwrap().unwrap().argv().iter().any(|a| a.starts_with("--over")));
    let ot = heap(&HEAP_OVER_TIME, &step("heap"));
    assert!(ot.sweep.is_none() && ot.over_time.is_some(), "{ot:?}");
    let ot_argv = (HEAP_OVER_TIME.part)(&step("heap")).unwrap().unwrap().argv();
    assert!(ot_argv.contains(&"--over-time".to_string()), "{ot_argv:?}");
    assert!(!ot_argv.iter().any(|a| ["--speed", "--threads", "--ops"].contains(&a.as_str())), "{ot_argv:?}");
    // heap.growth's control: N → 2N within the cores, judged from N.
    let growth = CONTROLS.iter().find(|c| c.ids == [("heap.growth", Negative(Below))]).unwrap();
    for (cpus, want) in [(2, (vec![1, 2], 1)), (16, (vec![8, 16], 8)), (3, (vec![1, 2], 1))] {
        let m = Machine { cpus, ..m };
        let s = plan(&m, Scale::Quick, None, &[]).into_iter().find(|s| s.experiment == "heap").unwrap();
        let g = (growth.change)(&(HEAP_SPEED.part)(&s).unwrap().unwrap()).unwrap().unwrap();
        let sw = HeapLab::of(&g).unwrap().sweep.unwrap();
        assert_eq!((sw.threads.unwrap(), sw.growth_from.unwrap()), want, "{cpus}: {:?}", g.argv());
    }
    let mut one = speed.clone();
    one.sweep.as_mut().unwrap().threads = Some(vec![1, 2]);
    assert_eq!(growth_within_the_cores(&mut one), None, "one CPU: no such step");
    // --only names an experiment or a finding.
    let only = |o: &[&str]| -> Vec<&str> {
        let o: Vec<String> = o.iter().map(|x| x.to_string()).collect();
        CONTROLS.iter().filter(|c| selected(c, &o)).map(|c| c.ids[0].0).collect()
    };
    assert_eq!(only(&["heap.growth"]), ["heap.growth"]);
    assert_eq!(only(&["eat.read_back_alike", "mapping.lazy_reset"]), ["eat.trim_random_semi", "mapping.lazy_reset"]);
    assert_eq!(only(&["heap"]).len(), CONTROLS.iter().filter(|c| c.experiment == "heap").count());
    assert!(only(&["heap.nothing", "jank.min_ttl"]).is_empty(), "a finding without a control run selects none");
    // A swap-file control is no control where zswap compresses in front of the file.
    let on = probe::environment::Zswap { present: true, enabled: Some(true), ..Default::default() };
    let off = probe::environment::Zswap { enabled: Some(false), ..on.clone() };
    assert!(swap_file_compresses(&on).is_some_and(|w| w.contains("zswap is on")));
    assert_eq!(swap_file_compresses(&off), None);
    // The swap-file control is unavailable where zswap is on; the
    // deflate one where zswap or its deflate is missing.
    let here = |zswap: &probe::environment::Zswap, comp: &[&str]| Here {
        zswap: zswap.clone(),
        zswap_compressors: comp.iter().map(|x| x.to_string()).collect(),
    };
    let why = |c: &Control, h: &Here| c.unavailable.and_then(|u| u(h));
    let swapfile = CONTROLS.iter().find(|c| c.tag.is_empty() && c.ids[0].0 == "eat.trim_random_semi").unwrap();
    assert_eq!(EatLab::of(&(swapfile.change)(&step("eat")).unwrap().unwrap()).unwrap().backing, BackingKind::Swapfile);
    assert!(why(swapfile, &here(&on, &["deflate"])).is_some_and(|w| w.contains("zswap is on")));
    assert_eq!(why(swapfile, &here(&off, &[])), None);
    let deflate = CONTROLS.iter().find(|c| c.tag == "-zswap-deflate").unwrap();
    let d = EatLab::of(&(deflate.change)(&step("eat")).unwrap().unwrap()).unwrap();
    assert_eq!((d.backing, d.compressor.as_deref()), (BackingKind::Zswap, Some("deflate")));
    assert_eq!(why(deflate, &here(&off, &["deflate", "lzo"])), None);
    assert_eq!(
        why(deflate, &here(&on, &["deflate"])),
        None,
        "zswap on already: eat sets its compressor and restores it (journaled)"
    );
    let absent = probe::environment::Zswap::default();
    assert!(why(deflate, &here(&absent, &["deflate"])).is_some_and(|w| w.contains("needs zswap,")));
    assert!(why(deflate, &here(&off, &["lz4", "lzo"])).is_some_and(|w| w.contains("offers: lz4, lzo")));
    assert!(why(deflate, &here(&off, &[])).is_some_and(|w| w.contains("offers: none")));
    // Only eat's controls and jank's slow drive need anything of the
    // machine beyond the lab step.
    assert!(
        CONTROLS.iter().filter(|c| c.unavailable.is_some()).all(|c| c.experiment == "eat" || c.tag == "-slow-disk")
    );
    // thrash's CPU-only control is the one that leaves the protocol.
    let th = step("thrash");
    let cpu = (CONTROLS.iter().find(|c| c.lifts_gate.is_some()).unwrap().change)(&th).unwrap().unwrap();
    assert!(ThrashLab::of(&cpu).unwrap().cpu_only && !ThrashLab::of(&th).unwrap().cpu_only);
    // thrash.writes': the step with no sleep, every preset as it is (its
    // Williams square, the same rules); only e1's and e2's runs lift its
    // gate (thrash_sleep_removed).
    let w = CONTROLS.iter().find(|c| c.ids == [("thrash.writes", Negative(Below))]).unwrap();
    let nosleep = ThrashLab::of(&(w.change)(&th).unwrap().unwrap()).unwrap();
    assert_eq!(nosleep.sleep, Some(Dur(std::time::Duration::ZERO)));
    assert_eq!(nosleep.preset, ThrashLab::of(&th).unwrap().preset);
    assert_eq!(
        (nosleep.scale, nosleep.time_scale),
        (ThrashLab::of(&th).unwrap().scale, ThrashLab::of(&th).unwrap().time_scale)
    );
    assert!(w.lifts_gate.is_some());
    // thrash.deep's positive control: e2 alone at a larger size factor, the
    // time factor as it is, inside the protocol (no gate lifted).
    let d = CONTROLS.iter().find(|c| c.ids == [("thrash.deep", Positive)]).unwrap();
    let (base, deep) = (ThrashLab::of(&th).unwrap(), ThrashLab::of(&(d.change)(&th).unwrap().unwrap()).unwrap());
    assert_eq!((deep.preset.as_slice(), deep.scale, deep.time_scale), (&["e2".to_string()][..], 0.1, base.time_scale));
    assert!(deep.scale > base.scale && !deep.cpu_only && deep.sleep.is_none() && deep.consumers.is_none());
    assert!(d.lifts_gate.is_none() && d.tag == "-scale");
    assert!(CONTROLS.iter().filter(|c| c.lifts_gate.is_some()).all(|c| c.experiment == "thrash"));
    // A step that is not the control's experiment's is a bug of the
    // plan, said as one, not a control this machine cannot make.
    assert!((w.change)(&step("eat")).unwrap_err().to_string().contains("not thrash's"));
}

/// A control turns its finding only the way its role says: a negative
/// one from matches to differs, a positive one from differs to matches;
/// the review found a negative control counted as turned from differs to
/// matches, and (2026-11-30) eat.semi_fraction's `--block 1` counted as
/// turned into a check, the random pattern's fact.
#[test]
fn a_control_turns_only_the_way_its_role_says() {
    let n = Negative(Above);
    for (base, control, role, side, want) in [
        ("matches", "differs", n, true, (true, false, false, false, false)),
        // Into a check's result (every value of the control the same):
        // shown as moved, never counted, as a check on the lab's side.
        ("matches", "check failed", n, true, (false, true, false, false, false)),
        ("matches", "differs", n, false, (false, false, false, false, false)),
        ("matches", "check failed", n, false, (false, false, false, false, false)),
        ("differs", "matches", n, true, (false, false, false, false, true)),
        ("differs", "differs", n, true, (false, false, false, false, true)),
        ("inconclusive", "differs", n, true, (false, false, false, false, false)),
        // From a check's result of the same direction (every value of the
        // lab's run the same): shown as moved, never counted as a turn.
        ("check passed", "differs", n, true, (false, false, true, false, false)),
        ("check passed", "check failed", n, true, (false, false, true, false, false)),
        ("check passed", "differs", n, false, (false, false, false, false, false)),
        ("check passed", "inconclusive", n, true, (false, false, false, false, false)),
        ("check failed", "differs", n, true, (false, false, false, false, true)),
        ("matches", "inconclusive", n, true, (false, false, false, false, false)),
        ("matches", "check passed", n, true, (false, false, false, false, false)),
        ("matches", "not checked", n, true, (false, false, false, false, false)),
        ("differs", "matches", Positive, false, (true, false, false, false, false)),
        ("differs", "check passed", Positive, true, (false, true, false, false, false)),
        ("matches", "differs", Positive, true, (false, false, false, false, true)),
        ("differs", "check failed", Positive, true, (false, false, false, false, false)),
        ("inconclusive", "matches", Positive, true, (false, false, false, false, false)),
        ("check failed", "matches", Positive, true, (false, false, true, false, false)),
        ("check passed", "matches", Positive, true, (false, false, false, false, true)),
        ("check failed", "matches", Instrument, true, (false, false, false, false, false)),
        ("differs", "matches", Instrument, true, (false, false, false, true, false)),
        // An instrument check reads either way, never into a check.
        ("differs", "check passed", Instrument, true, (false, false, false, false, false)),
        ("matches", "differs", Instrument, true, (false, false, false, true, false)),
        ("matches", "differs", Instrument, false, (false, false, false, true, false)),
        ("matches", "inconclusive", Instrument, true, (false, false, false, false, false)),
    ] {
        let (turned, as_check, from_check, reads_other_way, cannot) = want;
        let want = Moved { turned, as_check, from_check, reads_other_way, cannot };
        assert_eq!(super::turned(base, control, role, side), want, "{base} -> {control} ({role:?}, side {side})");
    }
    // The side: beyond the region's edge on the predicted side only.
    let r = |lo, hi| record::stats::claim::Region { lo, hi };
    assert!(Above.holds(Some(1.2), &r(Some(0.9), Some(1.1))));
    assert!(!Above.holds(Some(0.8), &r(Some(0.9), Some(1.1))), "differs below is no turn of an above");
    assert!(Below.holds(Some(0.8), &r(Some(0.9), None)));
    assert!(!Below.holds(Some(0.8), &r(None, Some(1.1))), "a region without a lower edge has no side below");
    assert!(!Above.holds(None, &r(None, Some(1.1))));
    // A turn as the run loop makes it, from the verdicts.
    let t = |id: &str, role: Role, base: &str, control: &str| {
        let m = turned(base, control, role, true);
        Turn {
            id: id.into(),
            control: "c".into(),
            role,
            verdict: base.into(),
            estimate: Some(1.0),
            pass: 1,
            control_verdict: control.into(),
            control_estimate: None,
            control_pass: 2,
            control_gate_lifted: false,
            turned: m.turned,
            turned_as_check: m.as_check,
            turned_from_check: m.from_check,
            reads_other_way: m.reads_other_way,
            cannot_turn: m.cannot,
        }
    };
    // A finding with two controls counts once, turned if either turned it
    // its way; a finding whose only control is an instrument check counts,
    // and never turns.
    let turns = [
        t("eat.a", n, "differs", "differs"),
        t("eat.a", Positive, "differs", "matches"),
        t("eat.b", n, "differs", "matches"),
        t("mapping.c", Instrument, "differs", "matches"),
        t("mapping.d", n, "matches", "differs"),
        t("thrash.e", n, "check passed", "differs"),
        t("eat.f", n, "matches", "check failed"),
    ];
    // thrash.e moved its way from a check, eat.f into one: run, shown, not
    // turned.
    assert_eq!(count(&turns), (2, 6));
    assert!(turns[6].turned_as_check && !turns[6].turned);
    assert!(row(&turns[6]).contains("| no: it moved its way into a check"), "{}", row(&turns[6]));
    assert!(turns[5].turned_from_check && !turns[5].turned);
    assert!(row(&turns[5]).contains("| no: it moved its way from a check"), "{}", row(&turns[5]));
    assert_eq!(serde_json::to_value(&turns[5]).unwrap()["turned_from_check"], true);
    assert!(
        row(&turns[0]).contains("| negative (above) | cannot: the lab's run already differs |"),
        "{}",
        row(&turns[0])
    );
    assert!(row(&turns[1]).contains("| positive | yes |"));
    // Which pass gave a verdict: the second, where the passes were combined.
    assert!(row(&turns[1]).contains("| differs (1.00) | matches in pass 2 (-) |"), "{}", row(&turns[1]));
    assert!(row(&turns[2]).contains("| cannot: "), "a negative control's move to matches is no turn");
    assert!(!turns[3].turned && turns[3].reads_other_way && row(&turns[3]).contains("not a turn"));
    // One shape in controls.json: role as a word, a negative one's side beside it.
    let j = |t: &Turn| serde_json::to_value(t).unwrap();
    assert_eq!((j(&turns[0])["role"].clone(), j(&turns[0])["side"].clone()), ("negative".into(), "above".into()));
    assert_eq!(
        (j(&turns[1])["role"].clone(), j(&turns[1])["side"].clone()),
        ("positive".into(), serde_json::Value::Null)
    );
    assert_eq!(j(&turns[3])["reads_other_way"], true);
}

/// The factor a finding was decided at, which its control is held to:
/// Holm's where the report gave a p, the family's size where Holm capped
/// it or there was no p (a check, not judged, outside the protocol).
#[test]
fn a_finding_is_decided_at_holms_factor_or_its_familys_size() {
    use super::judged::decided_at;
    // Second of three by p: Holm's factor 2.
    assert_eq!(decided_at(Some(0.01), Some(0.02), 3, 2), (3, 2.0));
    // Holm's step-down may carry a larger p forward: never below 1.
    assert_eq!(decided_at(Some(0.02), Some(0.02), 3, 2), (3, 1.0));
    // Capped at 1: the family's size, not 1 ÷ p.
    assert_eq!(decided_at(Some(0.4), Some(1.0), 3, 2), (3, 3.0));
    // No p: the report left the family at 1 (0 for a check); it is itself
    // and the others with a p.
    assert_eq!(decided_at(None, None, 1, 2), (3, 3.0));
    assert_eq!(decided_at(None, None, 0, 0), (1, 1.0));
}

/// A negative control's side is one its finding's region has: an edge to be
/// beyond (a region at most x has no side below it).
#[test]
fn each_negative_control_predicts_a_side_its_region_has() {
    for c in CONTROLS {
        for &(id, role) in c.ids {
            let r = region(c.experiment, id).unwrap();
            match role {
                Negative(Above) => assert!(r.hi.is_some(), "{id}: no upper edge to be above"),
                Negative(Below) => assert!(r.lo.is_some(), "{id}: no lower edge to be below"),
                _ => {}
            }
        }
    }
}

/// The region of finding `id` of `experiment`, as its claim fixes it.
fn region(experiment: &str, id: &str) -> anyhow::Result<record::stats::claim::Region> {
    let e = experiments::catalog().find(experiment).ok_or_else(|| anyhow::anyhow!("no experiment {experiment}"))?;
    let claim = e.claims().into_iter().find(|c| c.id == id).ok_or_else(|| anyhow::anyhow!("no finding {id}"))?;
    Ok(claim.region)
}

/// A control run is marked as one (report::control), once: a kept run's
/// mark stays, and a link at its name is neither followed nor replaced.
#[test]
fn a_control_run_is_marked_once_and_never_through_a_link() {
    let tmp = tempfile::tempdir().unwrap();
    let c = CONTROLS.iter().find(|c| c.ids.len() == 3 && c.experiment == "eat").unwrap();
    mark::mark(c, tmp.path()).unwrap();
    let m = report::control::Mark::load(tmp.path()).unwrap().unwrap();
    let roles: Vec<(&str, &str, Option<&str>)> =
        m.findings.iter().map(|f| (f.id.as_str(), f.role.as_str(), f.side.as_deref())).collect();
    assert_eq!(
        roles,
        [
            ("eat.trim_random_semi", "negative", Some("below")),
            ("eat.trim_const_semi", "negative", Some("above")),
            ("eat.read_back_alike", "positive", None)
        ]
    );
    assert_eq!(m.control, c.what);
    let other = CONTROLS.iter().find(|c| c.experiment == "heap").unwrap();
    mark::mark(other, tmp.path()).unwrap();
    assert_eq!(report::control::Mark::load(tmp.path()).unwrap().unwrap(), m, "the first mark stays");
    let linked = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    std::os::unix::fs::symlink(&target, linked.path().join(report::control::FILE)).unwrap();
    mark::mark(c, linked.path()).unwrap();
    assert!(!target.exists(), "nothing written through the link");
}

/// A lifted gate reads only the runs of the presets its finding compares:
/// thrash.writes' control is not refused for an e4 run it never reads.
#[test]
fn a_lifted_gate_reads_only_its_findings_presets() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/crates/experiments/tests/fixtures/run-dirs/thrash/run.json");
    std::fs::copy(fixture, tmp.path().join("run.json")).unwrap();
    // The fixture holds e1 and e2 (custom), two repeats each.
    assert_eq!(each_thrash_run(tmp.path(), &["e2"], |_| true), Ok(()));
    let e = each_thrash_run(tmp.path(), &["e2"], |r| !r.preset.starts_with("e2")).unwrap_err();
    assert!(e.contains("e2-custom repeat 1"), "{e}");
    assert_eq!(each_thrash_run(tmp.path(), &["e1"], |r| !r.preset.starts_with("e2")), Ok(()));
    assert_eq!(each_thrash_run(tmp.path(), &["e4"], |_| true), Err("it has no runs".into()));
}

/// jank's slow drive: zram:lz4 beside the swap file, the drive slowed;
/// refused where zswap would keep the file's pages in RAM first.
#[test]
fn janks_slow_drive_is_zram_beside_a_slowed_swap_file_where_zswap_is_off() {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let steps = plan(&m, Scale::Quick, Some(experiments::jank::cmd::quick_budget_s()), &[]);
    let jank = steps.iter().find(|s| s.experiment == "jank").unwrap();
    let slow = CONTROLS.iter().find(|c| c.tag == "-slow-disk").unwrap();
    assert_eq!(slow.ids, [("jank.zram_tenfold", Positive)]);
    let j = JankLab::of(&(slow.change)(jank).unwrap().unwrap()).unwrap();
    assert_eq!(j.arms, [Store::Zram(Some("lz4".into())), Store::Swapfile]);
    assert_eq!((j.swap_iops, j.cpu_only), (Some(SLOW_DISK_IOPS), false));
    assert_eq!(JankLab::of(jank).unwrap().swap_iops, None, "the lab's own step runs the disk as it is");
    let on = probe::environment::Zswap { present: true, enabled: Some(true), ..Default::default() };
    let off = probe::environment::Zswap { enabled: Some(false), ..on.clone() };
    let here = |zswap: &probe::environment::Zswap| Here { zswap: zswap.clone(), zswap_compressors: vec![] };
    let why = |h: &Here| slow.unavailable.and_then(|u| u(h));
    assert!(why(&here(&on)).is_some_and(|w| w.contains("zswap is on")));
    assert_eq!(why(&here(&off)), None);
}

/// What the first pass left open gets the lab's own second pass (issue 57:
/// "the same repeats and rules"): 4 % of the 5 % for the first pass, the
/// rest for a second of up to ten more repeats of the same arms where the
/// lab's budget leaves time for them, in a directory beside the first's.
#[test]
fn a_run_left_open_gets_the_labs_second_pass() {
    let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
    let budget = experiments::jank::cmd::quick_budget_s();
    let steps = plan(&m, Scale::Quick, Some(budget), &[]);
    let rules = later::Rules::of(&m, budget, &steps);
    assert_eq!(rules.alphas, report::verdict::alpha_by_pass(crate::lab::BUDGET_PASSES));
    assert!(rules.first() < record::stats::claim::ALPHA && rules.second().is_some(), "{:?}", rules.alphas);
    for e in ["eat", "wscap", "heap", "mapping"] {
        let s = steps.iter().find(|s| s.experiment == e).unwrap();
        let l = rules.later_step(e, s, &[]).unwrap_or_else(|| panic!("{e}: no later pass"));
        assert_eq!((l.repeat, l.pass), (Some(crate::lab::MORE_MAX), 2), "{e}");
        assert_eq!(l.args, s.args, "{e}: the same arms");
    }
    // thrash's step of about half an hour does not fit twice in what its
    // budget leaves: no later pass, as its lab would take none.
    let t = steps.iter().find(|s| s.experiment == "thrash").unwrap();
    assert_eq!(rules.later_step("thrash", t, &["thrash.writes"]).map(|s| s.repeat), None);
    assert_eq!(later::dir_of(Path::new("/x/heap-control-growth")), PathBuf::from("/x/heap-control-growth-pass2"));
}
