//! `pagelab compare`: two eat runs that differ on purpose (zram lz4 against
//! lzo-rle) are flagged as different; two runs of the same configuration are not.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

mod common;
use common::bin;

fn journals() -> std::path::PathBuf {
    std::env::temp_dir().join("pagelab-compare-test-journals")
}

fn eat(dir: &Path, compressor: &str) {
    let out = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", journals())
        .args(["eat", "--size", "32MiB", "--pattern", "random,semi,const", "--repeat", "3", "--backing", "zram"])
        .args(["--compressor", compressor, "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn compare(dirs: &[&Path], flag: &str) -> (String, i32) {
    let out = Command::new(bin()).arg("compare").args(dirs).arg(flag).output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code().unwrap_or(-1))
}

/// zram's algorithms, as `pagelab doctor` finds them.
fn zram_algorithms() -> Vec<String> {
    let out = Command::new(bin()).args(["doctor", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let algs = v["zram"]["algorithms"].as_array().cloned().unwrap_or_default();
    algs.iter().filter_map(|x| x.as_str().map(String::from)).collect()
}

#[test]
fn lz4_against_lzo_rle_differs_and_a_repeat_does_not() {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs root and zram");
        return;
    }
    let algs = zram_algorithms();
    if !algs.iter().any(|a| a == "lz4") || !algs.iter().any(|a| a == "lzo-rle") {
        common::skip("the kernel lacks lz4 or lzo-rle");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A first run on a cold machine (zram's module, the page allocator) is often
    // slower than the ones after it: warm up once, as any benchmark would.
    eat(&tmp.path().join("warm-up"), "lzo-rle");
    let (a, a2, b) = (tmp.path().join("lzo-rle"), tmp.path().join("lzo-rle-again"), tmp.path().join("lz4"));
    eat(&a, "lzo-rle");
    eat(&a2, "lzo-rle");
    eat(&b, "lz4");

    let (json, code) = compare(&[&a, &b, &a2], "--json");
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&json).unwrap();
    let cs = v["comparisons"].as_array().unwrap();
    assert_eq!(cs.len(), 2);
    let row = |c: &Value, group: &str, metric: &str| {
        c["rows"].as_array().unwrap().iter().find(|r| r["group"] == group && r["metric"] == metric).unwrap().clone()
    };
    // lz4 against lzo-rle: the semi pattern's stored fraction changes, with a p-value.
    let semi = row(&cs[0], "semi", "stored fraction");
    assert_eq!(semi["call"], "differs", "{semi}");
    assert!(semi["p"].as_f64().unwrap() < 0.05);
    assert!(semi["change_pct"].as_f64().unwrap().abs() >= 2.0);
    // The store is named as what differs between the runs.
    let env = cs[0]["environment"].to_string();
    assert!(env.contains("lzo-rle") && env.contains("lz4"), "{env}");
    // Random data is stored as-is by both: no difference there.
    assert_ne!(row(&cs[0], "random", "stored fraction")["call"], "differs");
    // The same configuration twice. What the runs store is the same data, so no
    // stored fraction may be flagged at the default threshold.
    let flagged = |c: &Value, timing: bool| -> Vec<String> {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["call"] == "differs" && (r["unit"] != "") == timing)
            .map(|r| format!("{} {} p={} change={}%", r["group"], r["metric"], r["p"], r["change_pct"]))
            .collect()
    };
    let same = flagged(&cs[1], false);
    assert!(same.is_empty(), "a repeat of the same configuration was flagged: {same:?}");
    // Timings are another matter: on a shared 2-vCPU machine two runs minutes apart
    // drift by what the within-run repeats cannot know (7 % in fill GB/s was seen in
    // CI, and once 33 % in the const pattern's few-millisecond fill), so a repeat's
    // timings are shown, not judged: a speed claim is a benchmark's, not a test's.
    // What can be asserted is the arithmetic: a run against itself is the same
    // sample twice, and no row of it, timings included, may be flagged.
    let out = Command::new(bin()).arg("compare").args([&a, &a]).arg("--json").output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let itself = [flagged(&v["comparisons"][0], true), flagged(&v["comparisons"][0], false)].concat();
    assert!(itself.is_empty(), "a run compared with itself was flagged: {itself:?}");
    let timed = cs[1]["rows"].as_array().unwrap().iter().filter(|r| r["unit"] != "").count();
    assert!(timed > 0, "the repeat's comparison has no timing rows: {}", cs[1]);
    eprintln!("the repeat's timing calls (not judged): {:?}", flagged(&cs[1], true));
    assert!(cs[1]["environment"].as_array().unwrap().is_empty(), "{}", cs[1]["environment"]);

    // The other formats carry the same verdicts.
    let (md, _) = compare(&[&a, &b], "--markdown");
    assert!(md.contains("| eat | semi | stored fraction |") && md.contains("**DIFFERS"), "{md}");
    let (html, _) = compare(&[&a, &b], "--html");
    assert!(html.starts_with("<!doctype html>") && html.contains("class=\"differs\""));
    let (text, _) = compare(&[&a, &b], "--alpha=0.05");
    assert!(text.contains("DIFFERS") && text.contains("Welch"), "{text}");
}
