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

/// eat's and wscap's findings as their own lists declare them: the id, the
/// family it must be judged in (its study's, or "pagelab" for pagelab's own
/// check, `Claim::own`), and whether it is a check (kept out of every
/// family). The expectations below come from here, never from the output
/// under test.
fn listed() -> Vec<(&'static str, &'static str, bool)> {
    let eat = experiments::eat::report::FINDINGS.iter().map(|f| (f.claim, "eat"));
    let wscap = experiments::wscap::report::FINDINGS.iter().map(|f| (f.claim, "wscap"));
    eat.chain(wscap).map(|(c, study)| (c.id, if c.own { "pagelab" } else { study }, c.check)).collect()
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
    // The fixture's cap slowdown is 1874× over two repeats: far above 100×.
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

/// A run `bench controls` made under a control says so first, in JSON,
/// text, HTML and Markdown; any other run says nothing of it, and a mark
/// that is not one is refused by name.
#[test]
fn a_control_runs_report_says_it_is_one_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wscap");
    common::copy_fixture("wscap", &dir);
    assert!(report_json(&dir, &[]).get("control").is_none(), "a plain run is no control run");
    let mark = serde_json::json!({
        "made_by": "pagelab bench controls",
        "control": "--cap at twice --size: a cap above the working set",
        "findings": [{"id": "wscap.cap_slowdown", "role": "negative", "side": "below"}],
    });
    std::fs::write(dir.join("control.json"), mark.to_string()).unwrap();
    let v = report_json(&dir, &[]);
    common::assert_schema("report-output", &v);
    assert_eq!(v["control"], mark);
    let text = Command::new(common::bin()).arg("report").arg(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let first = "This is a control run, made by pagelab bench controls for wscap.cap_slowdown (negative, below): --cap";
    assert!(text.starts_with(first), "{text}");
    let md = Command::new(common::bin()).arg("report").arg(&dir).arg("--markdown").output().unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains(&format!("**{first}")));
    Command::new(common::bin()).arg("report").arg(&dir).arg("--html").output().unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<strong>This is a control run, made by pagelab bench controls"), "no banner");
    std::fs::write(dir.join("control.json"), "{\"made_by\": \"me\"}").unwrap();
    let out = Command::new(common::bin()).arg("report").arg(&dir).arg("--json").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("control.json") && err.lines().count() == 1, "{err}");
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
    // Every listed finding is there, in the family its list puts it in; a
    // check is in none.
    let mut want: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for (id, fam, check) in listed() {
        let r = rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} is not in the report: {f:#}"));
        if check {
            assert_eq!((r["kind"].as_str(), r["family"].as_u64()), (Some("check"), Some(0)), "{r:#}");
            continue;
        }
        assert_eq!(r["family_name"], fam, "{id} judged in the wrong family: {r:#}");
        assert!(r["p"].is_number(), "{id} has no test: {r:#}");
        *want.entry(fam).or_default() += 1;
    }
    // The families, each as large as its list says.
    let families: Vec<(&str, u64)> = f["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["name"].as_str().unwrap(), x["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(families, want.iter().map(|(n, k)| (*n, *k)).collect::<Vec<_>>(), "{f:#}");
    assert_eq!(f["family"].as_u64(), Some(want.values().sum()), "every finding with a test, over the families");
    assert!(f["guarantee"].as_str().unwrap().starts_with("per study"), "{f:#}");
    for r in rows.iter().filter(|r| !r["p"].is_null()) {
        let fam = r["family_name"].as_str().unwrap();
        assert_eq!(r["family"].as_u64(), want.get(fam).copied(), "{r:#}");
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
