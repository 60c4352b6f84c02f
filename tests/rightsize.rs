//! `pagelab rightsize` on a program whose answer is known: pagelab's hot/cold
//! program touches a cold set once and then sweeps a hot set H, so the limit
//! it needs is H plus its own few MiB. Batch mode must find it and verify it;
//! service mode must settle near it without restarting anything. Bad input
//! exits 2 in one line and changes nothing.

use serde_json::Value;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::{bin, system_state};

const MIB: u64 = 1 << 20;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn can_make_stores() -> bool {
    root() && Path::new("/sys/class/zram-control/hot_add").exists() && common::swap_free()
}

/// A test that makes stores: skipped, with the reason printed, without root
/// or zram or with a swap already active; otherwise it runs alone (the serial
/// lock) and gets the system's state before it, to compare after.
fn store_test() -> Option<(std::sync::MutexGuard<'static, ()>, String)> {
    if !can_make_stores() {
        common::skip("needs root, zram and no active swap");
        return None;
    }
    Some((SERIAL.lock().unwrap_or_else(|e| e.into_inner()), system_state()))
}

fn rightsize(args: &[&str]) -> (Option<i32>, Value, String) {
    let o = Command::new(bin()).arg("rightsize").args(args).output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), v, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// pagelab's own hot/cold program as a service (it holds its memory until
/// killed), and the line it prints once its memory is written.
fn hotcold_service(hot: &str, cold: &str) -> (std::process::Child, String) {
    let mut w = Command::new(bin())
        .args(["__hotcold", "--hot", hot, "--cold", cold, "--passes", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(w.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (w, line)
}

fn refused(args: &[&str], names: &str) {
    let before = system_state();
    let (code, _, err) = rightsize(args);
    assert_eq!(code, Some(2), "{args:?}: {err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.contains(names), "{args:?}: the error does not name {names}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(system_state(), before, "{args:?} changed the system");
}

#[test]
fn bad_input_is_refused_in_one_line_and_changes_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    refused(&["--slowdown", "0", "--", "true"], "--slowdown");
    refused(&["--slowdown", "-5%", "--", "true"], "--slowdown");
    refused(&["--backing", "floppy", "--", "true"], "--backing");
    // Lists of stores: each at most once (disk is the swap file), no auto or
    // none among others, compressor names only, one store in service mode.
    refused(&["--backing", "zram,zram", "--", "true"], "--backing");
    refused(&["--backing", "swapfile,disk", "--", "true"], "--backing");
    refused(&["--backing", "auto,zram", "--", "true"], "--backing");
    refused(&["--backing", "zram,", "--", "true"], "--backing");
    refused(&["--compressor", "lz4,lz4", "--", "true"], "--compressor");
    refused(&["--compressor", "lz4;rm", "--", "true"], "--compressor");
    refused(&["--pid", "1", "--backing", "zram,disk"], "--backing");
    refused(&["--pid", "1", "--compressor", "lz4,zstd"], "--compressor");
    refused(&["--backing", "disk", "--compressor", "lz4", "--", "true"], "--compressor");
    refused(&["--time-cap", "1", "--", "true"], "--time-cap");
    refused(&["--runs", "2", "--", "true"], "--runs");
    refused(&["--pid", "1", "--cgroup", "/tmp"], "--cgroup");
    refused(&["--", "/nonexistent/program"], "/nonexistent/program");
    // --check reads Kubernetes' quantities: 512m is 0.512 bytes there, K is
    // not a suffix, MB is ambiguous; a limit twice, or under a MiB, is refused.
    for bad in ["512m", "1K", "512MB", "64Mi,64Mi", "100Ki", "-1Gi", "1Gi;rm"] {
        refused(&["--check", bad, "--", "true"], "--check");
    }
    refused(&["--check", "64Mi", "--pid", "1"], "--check");
    refused(&["--node-memory", "16Gi", "--", "true"], "--node-memory");
    refused(&["--node-swap", "4Gi", "--node-memory", "16G!", "--", "true"], "--node-memory");
    if !root() {
        common::skip("the rest needs root (batch mode makes a memory cgroup per run)");
        return;
    }
    refused(&[], "--");
    refused(&["--runs", "6", "--repeat", "3", "--", "true"], "--runs");
    refused(&["--cgroup", "/tmp"], "--cgroup");
    // A look-alike tree of regular files is not a cgroup: nothing is written into it.
    let fake = tempfile::tempdir().unwrap();
    for f in ["memory.current", "memory.reclaim", "memory.pressure"] {
        std::fs::write(fake.path().join(f), "0\n").unwrap();
    }
    refused(&["--cgroup", fake.path().to_str().unwrap(), "--duration", "2s"], "not a directory of a cgroup filesystem");
    assert_eq!(std::fs::read_to_string(fake.path().join("memory.reclaim")).unwrap(), "0\n");
    refused(&["--pid", "999999999"], "999999999");
    if probe::Probe::default()
        .memory_controller()
        .ok()
        .flatten()
        .is_some_and(|(v, _)| v == probe::cgroup::CgroupVersion::V1)
    {
        refused(&["--cgroup", "/sys/fs/cgroup/memory"], "--pid");
    }
    if can_make_stores() {
        // A program that runs too briefly, or fails on its own, is refused, and
        // leaves no run directory.
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("r");
        refused(&["--out", out.to_str().unwrap(), "--", "true"], "at least a second");
        assert!(!out.exists());
        refused(&["--out", out.to_str().unwrap(), "--", "sh", "-c", "sleep 1.2; exit 3"], "status 3");
        assert!(!out.exists());
        // More than the host guard allows (1 GiB of room, its group capped at a
        // fifth less): OOM-killed in its own group, refused.
        let floor = probe::Probe::default()
            .meminfo()
            .ok()
            .flatten()
            .and_then(|m| m.get("MemAvailable"))
            .map(|a| a.saturating_sub(1 << 30))
            .unwrap();
        refused(
            &[
                "--host-floor",
                &floor.to_string(),
                "--out",
                out.to_str().unwrap(),
                "--",
                bin().to_str().unwrap(),
                "__hotcold",
                "--hot",
                "4GiB",
                "--cold",
                "0",
                "--passes",
                "1",
            ],
            "host guard",
        );
        assert!(!out.exists());
    }
}

/// H = 16 MiB hot, C = 48 MiB cold, 25 % accepted: the recommendation lies in
/// [H, 1.25·H + 32 MiB], it is verified (the pairs' 95 % upper bound within
/// the target) in at most 24 runs, and the curve, the report and the JSON
/// carry it. (About 2.5 s a run: a program with a sharp knee at H, as the
/// search expects, at half the size and time of the one this test used
/// before (32 and 96 MiB, 5 s a run): the same question in half the time.
/// The one-time eviction of C costs a few percent, and a CI machine's pairs
/// differ by up to 15 %, so the target leaves the interval room;
/// docs/rightsize.md has the 10 % case.)
/// pagelab's hot/cold program, 16 MiB hot and 48 MiB cold, at a 25 % target
/// with `runs` runs on `backing`, as JSON into `out`: (exit code, JSON, stderr).
/// pagelab's hot/cold program, 16 MiB hot and 48 MiB cold, [`PASSES`]
/// passes.
fn synthetic(runs: &str, backing: &str, out: &std::path::Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let mut args = vec![
        "--synthetic-hot",
        "16MiB",
        "--synthetic-cold",
        "48MiB",
        "--slowdown",
        "25%",
        "--runs",
        runs,
        "--backing",
        backing,
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(["--synthetic-passes", PASSES]);
    args.extend_from_slice(extra);
    rightsize(&args)
}

/// Whether a run stopped at its plan: the budget judged short from the
/// unlimited runs' spread, and no limited run made.
fn stopped_at_the_plan(v: &Value) -> bool {
    let r = &v["results"][0];
    r["plan"]["enough"] == false && r["runs"].as_array().is_some_and(|x| x.iter().all(|x| x["limit_bytes"].is_null()))
}

/// 4000 passes: an unlimited run takes about 1.5 s on the project's 2-vCPU
/// VM (8000 passes took 3.0 s, CV 4.5 %, and the test run that much longer),
/// enough for a slowdown of 25 % to be verified in a handful of pairs; 2000
/// took 0.95 s, under rightsize's one-second floor.
const PASSES: &str = "4000";

/// The hot-set test's budget of runs (`--runs`).
const HOT_SET_RUNS: usize = 40;

#[test]
fn the_hot_set_is_found_and_verified() {
    let Some((_g, before)) = store_test() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // 40 runs: with 24, a first probe at the predicted knee judged too small
    // (1.06× and 1.14× in one CI run, 2026-11-29) left no room for a second
    // probe, and the search verified the peak, 66 MiB, above what this test
    // accepts. 32 bought the second probe (a third above the knee), but in
    // another CI run that day the second (30 MiB) missed too, by a hair (its
    // two pairs' mean log ratio 0.114 against the threshold's 0.112), and
    // the verification's reserve left no room for a third: the peak, 67 MiB,
    // again. 40 buy the third probe (halfway to the peak), which the search
    // only spends when the first two miss.
    let (mut code, mut v, mut err) = synthetic(&HOT_SET_RUNS.to_string(), "zram", &out, &[]);
    // The plan is made from three unlimited runs, before any limited one: a
    // single slow one among them (4.04 s beside 2.30 s twice, in a CI run of
    // 2026-12-02) reads as ±55 % and the run stops there, as it must for a
    // user. That says the machine was loud for a few seconds, not that the
    // search or its verification erred, so such a stop gets one fresh run;
    // a second stop, or any other failure, still fails.
    if code == Some(0) && stopped_at_the_plan(&v) {
        eprintln!("the plan stopped the run before any limited run ({}); once more", v["results"][0]["plan"]["said"]);
        let _ = std::fs::remove_dir_all(&out);
        (code, v, err) = synthetic(&HOT_SET_RUNS.to_string(), "zram", &out, &[]);
    }
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(system_state(), before, "the run left changes behind");
    common::assert_schema("experiment-output", &v);
    let run: Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    common::assert_schema("run", &run);
    let r = &v["results"][0];
    let rec = &r["recommendation"];
    assert_eq!(rec["verified"], true, "{err}");
    let limit = rec["limit_bytes"].as_u64().unwrap();
    assert!((16 * MIB..=20 * MIB + 32 * MIB).contains(&limit), "recommended {} MiB: {err}", limit / MIB);
    // The bound that decided: one-sided, at its look's share of α.
    let hi = rec["upper_bound"].as_f64().unwrap();
    assert!(hi <= 1.25, "upper bound {hi}");
    assert!(rec["look_alpha"].as_f64().unwrap() <= 0.05);
    let runs = r["runs"].as_array().unwrap();
    assert!(runs.len() <= HOT_SET_RUNS, "{} runs", runs.len());
    // Every limited run has the unlimited run beside it.
    for x in runs.iter().filter(|x| !x["limit_bytes"].is_null()) {
        let p = x["paired_with"].as_u64().unwrap_or_else(|| panic!("unpaired: {x}"));
        assert!(runs[p as usize - 1]["limit_bytes"].is_null());
    }
    assert!(runs.iter().filter(|x| x["role"] == "verify" && x["limit_bytes"] == limit).count() >= 3);
    // Below the hot set it thrashes, and the run is stopped at the time cap.
    let curve = r["curve"].as_array().unwrap();
    assert!(curve.iter().any(|p| p["limit_bytes"] == limit && p["outcome"] == "ok"));
    for p in curve.iter().filter(|p| p["limit_bytes"].as_u64().unwrap() < 16 * MIB) {
        assert_ne!(p["outcome"], "ok", "{p}");
    }
    assert!(
        rec["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains(&format!("MemoryMax={}M", limit / MIB)))
    );
    for f in ["rightsize.svg", "rightsize.png", "rightsize.md"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    println!("recommended {} MiB in {} runs; curve: {}", limit / MIB, runs.len(), r["curve"]);
}

/// Two stores compared in one run (issue 44 item 6): the search runs once per
/// store, each with its prediction said before its first limited run, and
/// the answer names the store that needs least in all. A disk swap keeps
/// nothing in RAM; zram keeps what it holds at its compressed size.
#[test]
fn two_stores_are_searched_and_compared_with_their_predictions() {
    let Some((_g, before)) = store_test() else { return };
    if let Err(e) = sandbox::sandbox::check_swap_fs(std::path::Path::new("/var/tmp")) {
        common::skip(&format!("a swap file cannot live in /var/tmp here: {e}"));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // --insist: on a noisy machine the plan from the unlimited runs may find
    // the runs short and stop before any store is made; this test is about
    // the two searches, their predictions and their comparison, not the plan
    // nor the answer (the hot-set test verifies one). 10 runs of pairs of
    // 2 a store, the fewest the command takes: the unlimited runs, the
    // prediction, a probe and a verification (16 took 96 s of the test run).
    let (code, v, err) = synthetic("10", "zram,disk", &out, &["--insist", "--repeat", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(system_state(), before, "the run left changes behind");
    common::assert_schema("experiment-output", &v);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 2, "{v}");
    assert_eq!((rs[0]["backing"].as_str(), rs[1]["backing"].as_str()), (Some("zram"), Some("swapfile")));
    for r in rs {
        let p = &r["prediction"];
        let knee = p["knee_bytes"].as_u64().unwrap_or_else(|| panic!("no prediction: {r}"));
        let ws = p["working_set_bytes"].as_u64().unwrap();
        // The knee holds the working set, which holds the hot set and little more.
        assert!(
            knee > ws && (12 * MIB..=40 * MIB).contains(&ws),
            "working set {} MiB, knee {} MiB",
            ws / MIB,
            knee / MIB
        );
        assert!(p["pages_read"].as_u64().unwrap() > 0, "no page was sampled: {p}");
        assert!(err.contains(p["said"].as_str().unwrap()), "the prediction was not said: {err}");
    }
    assert_eq!(rs[1]["prediction"]["store_bytes"], 0, "a disk swap keeps nothing in RAM");
    assert!(rs[0]["prediction"]["stored_fraction"].as_f64().is_some_and(|f| f > 0.0 && f <= 1.0));
    assert!(err.contains("store 1 of 2: zram") && err.contains("store 2 of 2: swapfile"), "{err}");
    let md = std::fs::read_to_string(out.join("rightsize.md")).unwrap();
    assert!(md.contains("which store") && (md.contains("needs least") || md.contains("no store verified")), "{md}");
    // One chart per store.
    let charts: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("rightsize-") && n.ends_with(".svg"))
        .collect();
    assert!(charts.len() == 2 && charts.iter().any(|n| n.starts_with("rightsize-zram")), "{charts:?}");
    assert!(charts.iter().any(|n| n == "rightsize-swapfile.svg"), "{charts:?}");
}

/// `--check` through the command (the answers' statistics are tested on
/// simulated programs, rightsize::work::search): with no swap, 8 MiB is
/// below the 64 MiB the program writes, so the limit's limited runs up to
/// its first look (two pairs) are OOM-killed; the run exits 3 (a limit not
/// verified: not 1, a failure, nor 2, bad input), says the limit's answer
/// in one line, and records it, with the limit as given, in the JSON and
/// run.json.
#[test]
fn check_says_each_limits_answer_and_exits_3_when_one_is_not_verified() {
    let Some((_g, before)) = store_test() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // One limit: the session itself (baselines, pairs side by side, each
    // limit's answer) is checked without root in rightsize::work::seam_tests;
    // here the kernel's OOM killer answers.
    let extra = ["--check", "8Mi", "--repeat", "2", "--node-memory", "16Gi", "--node-swap", "4Gi"];
    let (code, v, err) = synthetic("12", "none", &out, &extra);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(system_state(), before, "the run left changes behind");
    common::assert_schema("experiment-output", &v);
    let checks = v["results"][0]["checks"].as_array().unwrap_or_else(|| panic!("no checks: {v}"));
    assert_eq!(checks.len(), 1);
    for (c, (asked, mib)) in checks.iter().zip([("8Mi", 8)]) {
        assert_eq!((c["asked"].as_str(), c["limit_bytes"].as_u64()), (Some(asked), Some(mib * MIB)), "{c}");
        assert_eq!(c["answer"], "oom-killed", "{c}");
        assert_eq!((c["oom_killed"].as_u64(), c["pairs"].as_u64()), (Some(2), Some(2)), "{c}");
        let said = c["said"].as_str().unwrap();
        assert!(said.starts_with(&format!("{asked} ({mib} MiB): OOM-killed in 2 of 2 runs")), "{said}");
        assert!(err.contains(&format!("{mib} MiB: OOM-killed in 2 of 2 runs after 2 pairs\n")), "{err}");
    }
    assert!(err.lines().last().unwrap().contains("not verified within 25 %: 8Mi"), "{err}");
    // No search: four unlimited runs, then the limit's two pairs.
    let runs = v["results"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8, "{runs:?}");
    assert!(runs.iter().all(|r| r["role"] != "probe"));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["config"]["check"], serde_json::json!(["8Mi"]));
    assert_eq!(run["config"]["node_swap_bytes"], 4u64 << 30);
}

/// A program no one here wrote, with a start-up phase: a Python program that
/// writes 48 MiB of random bytes first (1 s), then sweeps 16 MiB. The working
/// set is read in its steady part (not its start), the plan is said before
/// the first limited run, and the answer is labelled: verified, with the
/// total saying that zram saves nothing on random bytes, or the safe peak. A
/// target the budget cannot verify stops after the unlimited runs with the
/// safe answer, and says which target it could verify.
#[test]
fn a_python_program_with_a_start_up_phase_gets_a_labelled_answer() {
    let Some((_g, before)) = store_test() else { return };
    if Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        common::skip("needs python3");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hotcold.py");
    let script = script.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let prog = ["--", "python3", script, "16", "48", "10000", "1"];
    // --insist: the plan from three short runs may find the budget short;
    // this part is about the search and the answer, verified or the safe
    // one (the 1 % case below is about the plan). 12 runs, the fewest the
    // command takes at its default pairs of 3: 24 took 57 s.
    let mut args = vec![
        "--slowdown",
        "30%",
        "--runs",
        "12",
        "--insist",
        "--backing",
        "zram",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(prog);
    let (code, v, err) = rightsize(&args);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(system_state(), before, "the run left changes behind");
    common::assert_schema("experiment-output", &v);
    let r = &v["results"][0];
    let runs = r["runs"].as_array().unwrap();
    // The working set of the second run's steady part: the hot set and the
    // interpreter, not the 48 MiB written first.
    let ws = runs[1]["working_set_bytes"].as_u64().expect("a working set");
    let peak = runs[0]["peak_bytes"].as_u64().unwrap();
    assert!(ws < 40 * MIB && peak > 60 * MIB, "working set {} MiB, peak {} MiB", ws / MIB, peak / MIB);
    // The plan comes before the first limited run.
    let plan_at = err.lines().position(|l| l.contains("plan: ")).unwrap_or_else(|| panic!("no plan line: {err}"));
    let first_limited =
        err.lines().position(|l| l.contains(" MiB … ")).unwrap_or_else(|| panic!("no limited run: {err}"));
    assert!(plan_at < first_limited, "{err}");
    assert!(r["plan"]["said"].as_str().unwrap().starts_with("plan:"));
    match r["recommendation"].as_object() {
        Some(rec) => {
            let limit = rec["limit_bytes"].as_u64().unwrap();
            // Not below the hot set; a candidate that stopped as futile may
            // hand over to a larger limit, up to the peak.
            let top = r["baseline"]["peak_bytes_max"].as_u64().unwrap();
            assert!((16 * MIB..=top.div_ceil(MIB) * MIB).contains(&limit), "recommended {} MiB: {err}", limit / MIB);
            assert!(rec["upper_bound"].as_f64().unwrap() <= 1.30);
            // Under 48 MiB at least 40 MiB of random bytes sit in zram, held
            // in about as much RAM: the first line says zram saves nothing.
            if limit <= 48 * MIB {
                assert_eq!(rec["store_compresses"], false, "{rec:?}");
                assert!(rec["summary"].as_str().unwrap().starts_with("zram saves nothing here"), "{rec:?}");
            }
        }
        None => {
            // The safe limit is the highest peak of the unlimited runs, not
            // the first's (it was 1 MiB over the first's once, 2026-12-01).
            let u = &r["unverified"];
            let top = r["baseline"]["peak_bytes_max"].as_u64().unwrap();
            assert!(top >= peak, "the peaks' maximum {top} under the first run's {peak}");
            assert_eq!(u["safe_limit_bytes"].as_u64().unwrap(), top.div_ceil(MIB) * MIB);
            let line = format!("MemoryMax={}M", top.div_ceil(MIB));
            assert!(u["lines"][0].as_str().unwrap().contains(&line), "{u}");
            println!("not verified here: {}", u["summary"]);
        }
    }
    // 1 %: the plan says before any limited run that the budget cannot
    // verify it, and the answer is the safe one, after the unlimited runs.
    let out2 = tmp.path().join("r2");
    let mut args =
        vec!["--slowdown", "1%", "--runs", "12", "--backing", "zram", "--json", "--out", out2.to_str().unwrap()];
    args.extend(prog);
    let (code, v, err) = rightsize(&args);
    assert_eq!(code, Some(0), "{err}");
    let r = &v["results"][0];
    assert_eq!(r["plan"]["enough"], false, "{}", r["plan"]);
    assert!(r["plan"]["said"].as_str().unwrap().contains("not 1 %"), "{}", r["plan"]);
    assert!(r["runs"].as_array().unwrap().iter().all(|x| x["limit_bytes"].is_null()), "a limited run was made");
    assert!(r["recommendation"].is_null());
    assert!(r["unverified"]["summary"].as_str().unwrap().starts_with("Nothing verified within 1 %"));
    assert!(r["unverified_reason"].as_str().unwrap().contains("--insist"));
    // What the hot-set test reads as a stop at the plan.
    assert!(stopped_at_the_plan(&v));
    assert_eq!(system_state(), before, "the run left changes behind");
}

/// Service mode on the running program (H = 64 MiB, C = 192 MiB): it settles
/// within 25 % of H plus the program's own memory, the pressure stays under
/// the threshold, and the program is never killed. (Steps of 10 % for 30 s:
/// 256 MiB falls to H in about 13 steps, so the last third, which the
/// settled figure is the median of, is the settled part; at the default 5 %
/// this took 60 s.)
#[test]
fn service_mode_settles_near_the_hot_set() {
    let Some((_g, before)) = store_test() else { return };
    let (mut w, line) = hotcold_service("64MiB", "192MiB");
    let ready: Value = serde_json::from_str(&line).unwrap();
    let own = ready["rss_before_bytes"].as_u64().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s");
    let pid = w.id().to_string();
    let (code, v, err) = rightsize(&[
        "--pid",
        &pid,
        "--duration",
        "30s",
        "--step",
        "10%",
        "--backing",
        "zram",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let alive = w.try_wait().unwrap().is_none();
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(code, Some(0), "{err}");
    assert!(alive, "the program died under service mode");
    assert_eq!(system_state(), before, "the run left changes behind");
    common::assert_schema("experiment-output", &v);
    let s = &v["results"][0]["service"];
    assert_eq!(s["method"], "process_madvise");
    // A process's OOM kill ends the run as an exit; there is no group count to read.
    assert!(s["oom_kills"].is_null(), "{s}");
    let want = (64 * MIB + own) as f64;
    let settled = s["settled_bytes"].as_u64().unwrap() as f64;
    assert!(
        (0.75 * want..=1.25 * want).contains(&settled),
        "settled at {} MiB, want {} MiB ± 25 %",
        settled / 1048576.0,
        want / 1048576.0
    );
    assert!(s["settled_psi_some_pct"].as_f64().unwrap() <= s["psi_threshold_pct"].as_f64().unwrap(), "{s}");
    assert!(s["start_bytes"].as_u64().unwrap() > 250 * MIB);
    println!("settled at {:.0} MiB (H + own = {:.0} MiB)", settled / 1048576.0, want / 1048576.0);
}

/// Issue 46 item 8: `rightsize -- PROGRAM` killed with -9 during a run left
/// the program running; it now dies with pagelab (a parent-death signal), and
/// the next `restore` removes what the run made.
#[test]
fn a_killed_rightsize_takes_its_program_with_it() {
    let Some((_g, before)) = store_test() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let jdir = tmp.path().join("journals");
    let mut pl = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", &jdir)
        .args(["rightsize", "--out", tmp.path().join("r").to_str().unwrap(), "--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The program, once pagelab has started it: a `sleep` whose parent is pagelab.
    let ppid = pl.id().to_string();
    let child_of_pagelab = || -> Option<i32> {
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 2..];
            let parent = after.split(' ').nth(1)?;
            (stat.contains("(sleep)") && parent == ppid).then_some(pid)
        })
    };
    let mut program = None;
    common::wait_until("rightsize starts its program", std::time::Duration::from_secs(30), || {
        program = child_of_pagelab();
        program.is_some()
    });
    let program = program.unwrap();
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pl.id() as i32, libc::SIGKILL) };
    let _ = pl.wait();
    let gone = || {
        !Path::new(&format!("/proc/{program}")).exists()
            || std::fs::read_to_string(format!("/proc/{program}/stat")).is_ok_and(|s| s.contains(") Z "))
    };
    let t = std::time::Instant::now();
    while !gone() && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let died = gone();
    // Restore whatever the outcome (it kills what the run's cgroup holds).
    let out = Command::new(bin()).env("PAGELAB_JOURNAL_DIR", &jdir).arg("restore").output().unwrap();
    assert!(died, "the program (pid {program}) outlived pagelab by 5 s");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(system_state(), before, "restore left something behind");
}

/// Issue 46 item 5: a target holding a large PROT_NONE reservation made
/// service mode read its whole pagemap into one buffer (64 GiB of reservation:
/// 176 MB of pagelab's RSS; 16 TiB: an abort). Readable ranges only, in
/// chunks: beside the same target without the reservation, pagelab's peak RSS
/// grows by far less than the 144 MB that the reservation's pagemap took.
#[test]
fn a_huge_reservation_in_the_target_does_not_grow_pagelab() {
    let Some((_g, before)) = store_test() else { return };
    if !Command::new("python3").arg("-V").output().is_ok_and(|o| o.status.success()) {
        common::skip("python3 is not installed");
        return;
    }
    let peak_mib = |reserve: u64| -> f64 {
        let script = format!(
            "import mmap, time\n\
             r = mmap.mmap(-1, {reserve}, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, 'MAP_NORESERVE', 0x4000), prot=0) if {reserve} else None\n\
             b = bytearray(32 << 20)\n\
             for i in range(0, len(b), 4096): b[i] = 1\n\
             print('ready', flush=True)\n\
             time.sleep(120)\n"
        );
        let mut target = Command::new("python3").args(["-c", &script]).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(target.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let tmp = tempfile::tempdir().unwrap();
        // Reaped below by wait4, for its rusage.
        #[allow(clippy::zombie_processes)]
        let pl = Command::new(bin())
            .args(["rightsize", "--pid", &target.id().to_string(), "--duration", "5s", "--step", "10%"])
            .args(["--backing", "zram", "--out", tmp.path().join("s").to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, once, with valid out-pointers.
        let r = unsafe { libc::wait4(pl.id() as i32, &mut status, 0, &mut usage) };
        let _ = target.kill();
        let _ = target.wait();
        assert_eq!(r, pl.id() as i32);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "rightsize ended with status {status:#x}");
        usage.ru_maxrss as f64 / 1024.0
    };
    let plain = peak_mib(0);
    let reserved = peak_mib(64 << 30);
    assert!(
        reserved < plain + 48.0,
        "pagelab's peak RSS: {reserved:.0} MiB beside {plain:.0} MiB without the reservation"
    );
    assert_eq!(system_state(), before, "the run left changes behind");
}

/// Issue 46 item 9: a target that exits between the liveness check and the
/// pager's step (here: killed by the probe, which runs in between) ended the
/// run "the process is gone", exit 1, with no results. It ends as an exit
/// does: exit 0, the timeline so far kept.
#[test]
fn a_target_that_exits_during_a_pager_step_ends_the_run_with_its_timeline() {
    let Some((_g, before)) = store_test() else { return };
    let (mut w, _) = hotcold_service("8MiB", "24MiB");
    let tmp = tempfile::tempdir().unwrap();
    let count = tmp.path().join("probes");
    let pid = w.id().to_string();
    // The first five probes are the baseline; the sixth kills the target,
    // after the loop checked that it was alive and before the pager's step.
    let probe = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; if [ $n -ge 6 ]; then kill -9 {pid}; fi; true",
        c = count.display()
    );
    let out = tmp.path().join("s");
    let (code, v, err) = rightsize(&[
        "--pid",
        &pid,
        "--probe",
        &probe,
        "--duration",
        "30s",
        "--every",
        "1s",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let _ = w.kill();
    let _ = w.wait();
    assert_eq!(code, Some(0), "{err}");
    let s = &v["results"][0]["service"];
    assert!(s["timeline"].as_array().is_some_and(|t| !t.is_empty()), "no timeline: {v}");
    let ended = s["ended"].as_str().unwrap_or_default();
    assert!(ended.contains("exited"), "ended: {ended:?} ({s})");
    assert_eq!(system_state(), before, "the run left changes behind");
}
