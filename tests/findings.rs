//! `pagelab report DIR --json` lists every finding with its interval, region
//! and verdict, valid against schema/findings.schema.json; a lab judges each
//! study's findings as one family, and a second pass by a combination test.

mod common;
use assert_cmd::Command;
use std::path::Path;

/// How many findings eat and wscap make, from their own lists: a finding
/// added to one is counted here without an edit.
fn eat_and_wscap() -> usize {
    experiments::eat::report::FINDINGS.len() + experiments::wscap::report::FINDINGS.len()
}

fn report_json(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(common::bin()).arg("report").arg(dir).args(extra).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn report_json_lists_every_finding_with_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wscap");
    common::copy_fixture("wscap", &dir);
    let v = report_json(&dir, &[]);
    common::assert_schema("report-output", &v);
    let f = &v["findings"];
    common::assert_schema("findings", f);
    let rows = f["findings"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{f:#}");
    let slow = rows.iter().find(|r| r["id"] == "wscap.cap_slowdown").unwrap();
    // The fixture's cap slowdown is 669× over two repeats: far above 100×.
    assert_eq!(slow["verdict"], "matches", "{slow:#}");
    let ci = slow["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() > 100.0 && ci[1].as_f64().unwrap() > ci[0].as_f64().unwrap(), "{slow:#}");
    assert_eq!(slow["region"]["lo"], 100.0);
    assert_eq!(slow["family"], f["family"]);
    assert_eq!(f["checkable"], 3);
    // Issue 57: every entry says what it is, and a finding names the
    // control under which its claim is false (wscap's three are findings).
    for r in rows {
        assert_eq!(r["kind"], "finding", "{r:#}");
        assert!(r["control"].as_str().is_some_and(|c| c.len() > 20), "{r:#}");
    }
    assert_eq!((f["checks"].as_u64(), f["checks_passed"].as_u64()), (Some(0), Some(0)));
    // eat's fixture: its stored fractions of const and random are checks,
    // kept out of the family and the decided share.
    let dir = tmp.path().join("eat");
    common::copy_fixture("eat", &dir);
    let v = report_json(&dir, &[]);
    let f = &v["findings"];
    common::assert_schema("findings", f);
    let rows = f["findings"].as_array().unwrap();
    let kind = |id: &str| rows.iter().find(|r| r["id"] == id).map(|r| (r["kind"].clone(), r["family"].clone()));
    for id in ["eat.const_fraction", "eat.random_fraction"] {
        assert_eq!(kind(id), Some((serde_json::json!("check"), serde_json::json!(0))), "{id}: {f:#}");
    }
    assert_eq!(f["checks"], 2, "{f:#}");
    assert_eq!(f["family"].as_u64().unwrap() + 2, rows.len() as u64, "{f:#}");
}

#[test]
fn a_lab_judges_each_studys_findings_as_one_family() {
    // A lab directory of two fixture runs, as `pagelab lab` lays it out.
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    common::copy_fixture("wscap", &lab.join("wscap"));
    common::copy_fixture("eat", &lab.join("eat"));
    let step = |e: &str| serde_json::json!({"experiment": e, "args": [], "expect_s": 1.0, "state": "complete", "dir": e, "seconds": 1.0});
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "ended_unix_ms": 2, "wall_s": 1.0, "root": true, "cpus": 2, "ram_bytes": 1,
        "expect_s": 2.0, "doctor": {}, "steps": [step("eat"), step("wscap")]
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let v = report_json(&lab, &[]);
    common::assert_schema("report-output", &v);
    let f = &v["findings"];
    common::assert_schema("findings", f);
    let rows = f["findings"].as_array().unwrap();
    assert_eq!(rows.len(), eat_and_wscap(), "eat's findings and wscap's");
    let with_p = rows.iter().filter(|r| !r["p"].is_null()).count() as u64;
    assert_eq!(f["family"].as_u64(), Some(with_p), "every finding with a test, over the families");
    // Two families, one per study, each as large as its findings with a test.
    let families: Vec<(&str, u64)> = f["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["name"].as_str().unwrap(), x["size"].as_u64().unwrap()))
        .collect();
    // A study's findings are its family; pagelab's own checks are "pagelab".
    let size = |fam: &str| rows.iter().filter(|r| r["family_name"] == fam && !r["p"].is_null()).count() as u64;
    let mut names: Vec<&str> =
        rows.iter().filter(|r| !r["p"].is_null()).map(|r| r["family_name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.contains(&"eat") && names.contains(&"wscap"), "{names:?}");
    let want: Vec<(&str, u64)> = names.iter().map(|n| (*n, size(n))).collect();
    assert_eq!(families, want, "{f:#}");
    assert!(f["guarantee"].as_str().unwrap().starts_with("per study"), "{f:#}");
    for r in rows.iter().filter(|r| !r["p"].is_null()) {
        let (e, fam) = (r["experiment"].as_str().unwrap(), r["family_name"].as_str().unwrap());
        assert!(fam == e || fam == "pagelab", "{r:#}");
        assert_eq!(r["family"].as_u64(), Some(size(fam)), "{r:#}");
        // Holm's adjusted p is never below the finding's own.
        assert!(r["p_adjusted"].as_f64().unwrap() >= r["p"].as_f64().unwrap() - 1e-12, "{r:#}");
    }
    let decided = rows.iter().filter(|r| r["verdict"] == "matches" || r["verdict"] == "differs").count();
    assert_eq!(f["decided"].as_u64(), Some(decided as u64));
}

#[test]
fn a_budgeted_labs_second_pass_adds_repeats_and_keeps_first_pass_verdicts() {
    // eat ran twice: the plan, then a second pass of the same arms (as
    // `lab --budget` lays it out); wscap once. The error is split 4 % + 1 %.
    let tmp = tempfile::tempdir().unwrap();
    let lab = tmp.path().join("lab");
    common::copy_fixture("eat", &lab.join("eat"));
    common::copy_fixture("eat", &lab.join("eat-pass2"));
    common::copy_fixture("wscap", &lab.join("wscap"));
    let step = |e: &str, dir: &str, pass: u32| serde_json::json!({"experiment": e, "args": [], "expect_s": 1.0, "state": "complete", "dir": dir, "seconds": 1.0, "pass": pass});
    let doc = serde_json::json!({
        "format": 1, "kind": "lab", "mode": "quick", "pagelab_version": "0", "command_line": [],
        "started_unix_ms": 1, "ended_unix_ms": 2, "wall_s": 1.0, "root": true, "cpus": 2, "ram_bytes": 1,
        "expect_s": 2.0, "budget_s": 3.0, "passes": 2, "doctor": {},
        "steps": [step("eat", "eat", 1), step("wscap", "wscap", 1), step("eat", "eat-pass2", 2)]
    });
    std::fs::write(lab.join("lab.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let one = report_json(&lab.join("eat"), &[]);
    let v = report_json(&lab, &[]);
    common::assert_schema("report-output", &v);
    let f = &v["findings"];
    common::assert_schema("findings", f);
    let split: Vec<f64> = f["alpha_by_pass"].as_array().unwrap().iter().map(|a| a.as_f64().unwrap()).collect();
    assert_eq!(split.len(), 2);
    assert!((split[0] - 0.04).abs() < 1e-12 && (split.iter().sum::<f64>() - 0.05).abs() < 1e-12, "{split:?}");
    let rows = f["findings"].as_array().unwrap();
    assert_eq!(rows.len(), eat_and_wscap(), "one section per experiment: {f:#}");
    let alone = one["findings"]["findings"].as_array().unwrap();
    for r in rows.iter().filter(|r| r["experiment"] == "eat") {
        let single = alone.iter().find(|x| x["id"] == r["id"]).unwrap();
        let n1 = single["n"].as_u64().unwrap();
        match r["pass"].as_u64().unwrap() {
            // Decided by the first pass: its verdict and n are the first pass's.
            1 => assert_eq!(r["n"].as_u64(), Some(n1), "{r:#}"),
            // Judged again on both passes' repeats, each pass tested alone and
            // combined, at the second pass's 1 % ÷ the family's size.
            2 => {
                assert_eq!(r["n"].as_u64(), Some(2 * n1), "{r:#}");
                let (p, adj) = (r["p"].as_f64().unwrap(), r["p_adjusted"].as_f64().unwrap());
                assert!((adj - (p * r["family"].as_f64().unwrap()).min(1.0)).abs() < 1e-12, "{r:#}");
                let decided = r["verdict"] == "matches" || r["verdict"] == "differs";
                assert_eq!(decided, adj <= 0.01, "{r:#}");
            }
            p => panic!("pass {p}: {r:#}"),
        }
    }
    // Some finding was left to the second pass (the fixture's two repeats do
    // not decide every eat claim at 4 %).
    assert!(rows.iter().any(|r| r["pass"] == 2), "{f:#}");
}
