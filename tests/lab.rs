//! `pagelab lab`: the whole suite as root writes a report that a real browser
//! opens offline (no console errors, no network requests, every experiment's
//! section and charts present); without root the same command completes and the
//! report says what was skipped and why. Bad input exits 2.
//!
//! The labs here are smoke labs (`--smoke`: every experiment, step and report
//! section at toy sizes, in about a minute and a half): what
//! these tests ask is whether a lab runs and reports, not what the quick lab's
//! figures are. The quick lab's time and verdicts are benchmarks
//! (`pagelab lab --quick` itself; docs/stability.md).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

#[path = "common/browser.rs"]
mod browser;
mod common;
use common::{bin, system_state};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn journals() -> std::path::PathBuf {
    std::env::temp_dir().join("pagelab-lab-test-journals")
}

fn lab_json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("lab.json")).unwrap()).unwrap()
}

const PAGE_FACTS: &str = r#"JSON.stringify({
  sections: [...document.querySelectorAll('section.experiment')].map(s => ({
    id: s.dataset.experiment, state: s.dataset.state,
    charts: s.querySelectorAll('figure.chart svg').length
      + [...s.querySelectorAll('figure.chart img')].filter(i => i.complete && i.naturalWidth > 0).length,
    verdicts: s.querySelectorAll('table.verdicts tbody tr').length,
    tables: s.querySelectorAll('table').length })),
  headline: document.querySelectorAll('#headline tbody tr').length,
  environment: !!document.querySelector('#environment table'),
  title: document.title })"#;

/// Opens report.html in headless Chromium and checks it; returns the page facts.
fn browse(report: &Path, shot: &Path) -> Option<Value> {
    let Some(exe) = browser::chromium() else {
        println!("SKIP browser check: chromium is not installed (.ci/run installs it)");
        return None;
    };
    let c = browser::check_page(&exe, report, PAGE_FACTS, 1280, 1500);
    assert!(c.console_errors.is_empty(), "console errors: {:#?}", c.console_errors);
    let remote: Vec<&String> =
        c.requests.iter().filter(|u| !u.starts_with("file:") && !u.starts_with("data:")).collect();
    assert!(remote.is_empty(), "network requests: {remote:?}");
    assert!(c.png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    std::fs::write(shot, &c.png).unwrap();
    println!("screenshot: {} ({} bytes)", shot.display(), c.png.len());
    Some(c.value)
}

#[test]
fn lab_as_root_writes_a_report_the_browser_opens_offline() {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs root and zram");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = system_state();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let out = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", journals())
        .args(["lab", "--smoke", "--json", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(system_state(), before, "the lab left changes behind: {err}");
    // Plain progress lines (stdout is not a terminal), on stderr because of --json.
    assert!(err.contains("[1/8] eat: running") && err.contains("[8/8] rightsize: complete"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["mode"], "smoke");
    common::assert_schema("lab", &v);
    let lab = lab_json(&dir);
    for s in lab["steps"].as_array().unwrap() {
        assert_eq!(s["state"], "complete", "{s}");
        assert!(dir.join(s["dir"].as_str().unwrap()).join("run.json").exists());
    }
    let report = dir.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(!html.contains("http://") || html.matches("http://").count() == html.matches("xmlns=\"http://").count());
    assert!(!html.contains("https://"), "the report links out");
    let Some(page) = browse(&report, &dir.join("report.png")) else { return };
    let shot = std::env::var_os("PAGELAB_SCREENSHOT");
    if let Some(p) = shot {
        std::fs::copy(dir.join("report.png"), p).unwrap();
    }
    assert_eq!(page["headline"], experiments::ALL.len(), "{page}");
    assert_eq!(page["environment"], true);
    let sections = page["sections"].as_array().unwrap();
    let ids: Vec<&str> = sections.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["eat", "wscap", "heap", "mapping", "thrash", "jank", "assess", "rightsize"]);
    for s in sections {
        assert_eq!(s["state"], "complete", "{s}");
        // rightsize's batch report has one chart (its curve); the others two or more.
        let charts = if s["id"] == "rightsize" { 1 } else { 2 };
        assert!(s["charts"].as_u64().unwrap() >= charts, "too few charts: {s}");
        // Each compares with its study on two findings or more, from its
        // finding list; one with none (rightsize: its answer is verified by
        // its own pairs) shows no verdict, and says why instead.
        let e = experiments::ALL.iter().find(|e| e.name() == s["id"]).expect("an experiment");
        let claims = report::experiment::Experiment::claims(e.report).len() as u64;
        let verdicts = s["verdicts"].as_u64().unwrap();
        if claims == 0 {
            assert_eq!(verdicts, 0, "{s}");
        } else {
            assert!(verdicts >= claims.min(2), "no comparison with the study: {s}");
        }
    }
}

#[test]
fn lab_without_root_completes_and_reports_what_it_skipped() {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
        common::skip("needs root (to drop to an unprivileged user) and setpriv");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = system_state();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let dir = tmp.path().join("lab");
    let bin = common::bin_for_anyone(tmp.path());
    let as_nobody = |args: &[&str]| {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
            .arg(&bin)
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    // The whole smoke lab's plan, as JSON, before anything runs: what needs
    // no root is planned, the rest skipped with why.
    let plan = as_nobody(&["lab", "--smoke", "--dry-run", "--json"]);
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let plan: Value = serde_json::from_slice(&plan.stdout).expect("lab --dry-run --json prints JSON");
    common::assert_schema("lab-plan", &plan);
    assert_eq!((plan["kind"].as_str(), plan["root"].as_bool()), (Some("lab-plan"), Some(false)), "{plan}");
    let planned = |n: &str| plan["steps"].as_array().unwrap().iter().find(|s| s["experiment"] == n).unwrap().clone();
    for n in ["heap", "mapping", "assess"] {
        assert_eq!(planned(n)["state"], "planned", "{plan}");
    }
    for n in ["thrash", "jank", "rightsize"] {
        assert_eq!(planned(n)["state"], "skipped", "{plan}");
        assert!(planned(n)["reason"].as_str().unwrap().contains("needs root"), "{plan}");
    }
    // Run where nobody may write (its directory is 0777): a dry run wrote nothing there.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "a dry run wrote nothing beside the binary's copy");
    // --only: one pass, no budget (the VM test runs a part of the smoke lab
    // as nobody on pure cgroup v2): steps that complete without root (eat,
    // its store skipped; heap; mapping) and two that are skipped.
    let out = as_nobody(&["lab", "--smoke", "--only", "eat,heap,mapping,wscap,thrash", "--out", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(system_state(), before);
    let lab = lab_json(&dir);
    assert_eq!(lab["root"], false);
    assert!(lab["steps"].as_array().unwrap().iter().all(|s| s["pass"].as_u64().unwrap_or(1) == 1), "{lab}");
    let step = |n: &str| lab["steps"].as_array().unwrap().iter().find(|s| s["experiment"] == n).unwrap().clone();
    let swap_active = std::fs::read_to_string("/proc/swaps").unwrap().lines().count() > 1;
    let thrash = step("thrash");
    assert_eq!(thrash["state"], "skipped");
    assert!(thrash["reason"].as_str().unwrap().contains("needs root"));
    if !swap_active {
        assert_eq!(step("wscap")["state"], "skipped");
        assert!(step("eat")["note"].as_str().unwrap().contains("root"));
    }
    for n in ["eat", "heap", "mapping"] {
        assert_eq!(step(n)["state"], "complete", "{}", step(n));
    }
    assert_eq!(lab["steps"].as_array().unwrap().len(), 5, "{lab}");
    // The text summary and the report both say what was skipped and why.
    assert!(text.contains("skipped: needs root"), "{text}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("data-experiment=\"thrash\" data-state=\"skipped\""));
    assert!(html.contains("the consumers must be contained in a memory cgroup"));
    assert!(html.contains("without root"));
}

#[test]
fn bad_lab_input_exits_2_without_running() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("x"), "").unwrap();
    for (args, want) in [
        (vec!["lab", "--only", "eat,disk"], "unknown experiment 'disk'"),
        (vec!["lab", "--quick", "--full"], "--full"),
        (vec!["lab", "--out", full.to_str().unwrap()], "exists and is not empty"),
        (vec!["report", tmp.path().to_str().unwrap(), "--html"], "not a pagelab run directory"),
        (vec!["compare", tmp.path().to_str().unwrap()], "required"),
        (vec!["compare", "/nonexistent-a", "/nonexistent-b"], "no such run or lab directory"),
        (vec!["compare", "a", "b", "--alpha", "2"], "expected a level between 0 and 1"),
    ] {
        let out = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1, "--out was written to");
}

#[test]
fn an_interrupted_lab_still_writes_its_report() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let child = Command::new(bin())
        .args(["lab", "--smoke", "--only", "heap,mapping", "--out", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until heap has written its first result, then Ctrl-C the lab alone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let started = std::fs::read_to_string(dir.join("heap/run.json")).is_ok_and(|t| t.contains("\"result\""));
        if started {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "heap never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let lab = lab_json(&dir);
    assert_eq!(lab["steps"][0]["state"], "interrupted", "{lab}");
    assert_eq!(lab["steps"][1]["state"], "skipped");
    // The child stopped cleanly (one signal), so its own record says so too.
    let run: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("heap/run.json")).unwrap()).unwrap();
    assert_eq!(run["status"]["state"], "interrupted", "{}", run["status"]);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("data-experiment=\"heap\" data-state=\"interrupted\""));
}

/// Issue 17 item 4: a child killed by someone else (here kill -9 after 15 s, in
/// the middle of thrash, with its swap file and cgroup in place) is a failed
/// step with its signal, not an interruption; the lab undoes what the child left
/// before it goes on, and exits 1, not 130.
#[test]
fn a_killed_lab_child_is_a_failed_step_and_its_changes_are_undone() {
    if unsafe { libc::geteuid() } != 0 || probe::Probe::default().memory_controller().ok().flatten().is_none() {
        common::skip("needs root and a memory cgroup controller");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = system_state();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let lab = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", journals())
        // The full lab's thrash (the quick lab leaves it out: issue 57): its
        // runs last minutes, so the kill lands inside one, its store on.
        .args(["lab", "--full", "--only", "thrash", "--out", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The child: the lab's only child process; wait until thrash's store is on.
    let children = format!("/proc/{0}/task/{0}/children", lab.id());
    let swaps_before = std::fs::read_to_string("/proc/swaps").unwrap().lines().count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let child: i32 = loop {
        let kids = std::fs::read_to_string(&children).unwrap_or_default();
        // A store of pagelab's is on: a swap area more than before (the
        // full lab's first store is zram, named /dev/zramN in /proc/swaps).
        let swapping = std::fs::read_to_string("/proc/swaps").unwrap().lines().count() > swaps_before;
        if let (Some(pid), true) = (kids.split_whitespace().next(), swapping) {
            break pid.parse().unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "thrash never turned its store on");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // Then until its group holds its workers: the kill lands inside the run,
    // store, group and workers in place (a condition, not a fixed wait).
    let root = probe::Probe::default().memory_controller().unwrap().unwrap().1.join("pagelab");
    common::wait_until("thrash's group holding its workers", std::time::Duration::from_secs(60), || {
        std::fs::read_dir(&root).into_iter().flatten().flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with("thrash-")
                && std::fs::read_to_string(e.path().join("cgroup.procs")).is_ok_and(|p| !p.trim().is_empty())
        })
    });
    assert_ne!(system_state(), before, "thrash has its store and cgroup in place");
    unsafe { libc::kill(child, libc::SIGKILL) };
    let out = lab.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lab = lab_json(&dir);
    let step = &lab["steps"][0];
    assert_eq!(step["state"], "failed", "{lab}");
    assert_eq!(step["reason"], "killed by signal 9 (SIGKILL)", "{step}");
    assert_eq!(system_state(), before, "the lab undid what its killed child left: {err}");
    assert!(dir.join("report.html").exists());
}

/// Issue 59 item 2: a lab killed with SIGKILL during its second step reads
/// "killed" there (not "running"), and `lab --resume` keeps the first step,
/// runs the cut one again whole (its partial directory moved aside, kept),
/// runs the rest, and writes the report of every step.
#[test]
fn a_lab_killed_midway_is_named_killed_and_resumes_to_a_whole_report() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lab");
    let d = dir.to_str().unwrap();
    let mut lab = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", journals())
        .args(["lab", "--smoke", "--only", "eat,mapping", "--out", d])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill the lab itself once mapping, its second step, is running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let running = std::fs::read_to_string(dir.join("lab.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|l| l["steps"][1]["state"] == "running");
        // Its child has written its run directory: a kill now cuts it.
        if running && dir.join("mapping/run.json").exists() {
            break;
        }
        assert!(lab.try_wait().unwrap().is_none(), "the lab ended before mapping ran");
        assert!(std::time::Instant::now() < deadline, "mapping never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(lab.id() as i32, libc::SIGKILL) };
    lab.wait().unwrap();
    let out = Command::new(bin()).args(["report", d]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("mapping") && l.contains("killed: the lab")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("eat") && l.contains("complete")), "{text}");

    // A resume while a lab is live is refused; this one is not live.
    let out = Command::new(bin()).env("PAGELAB_JOURNAL_DIR", journals()).args(["lab", "--resume", d]).output().unwrap();
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{so}\n{se}");
    assert!(so.contains("running again: mapping (cut midway when the lab was killed)"), "{so}");
    let lab = lab_json(&dir);
    let states: Vec<&str> = lab["steps"].as_array().unwrap().iter().map(|s| s["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["complete", "complete"], "{lab}");
    assert_eq!(lab["resumed"].as_array().unwrap().len(), 1, "{lab}");
    // What the cut step left is kept aside, and the report says it resumed.
    assert!(dir.join("mapping.cut-1").is_dir());
    assert!(so.contains("resumed "), "{so}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("data-experiment=\"mapping\" data-state=\"complete\""));
    // Finished: nothing left to resume, exit 2.
    let out = Command::new(bin()).args(["lab", "--resume", d]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to resume"));
}

/// `bench controls` runs each experiment as its child, as the lab does: a
/// SIGINT to `bench controls` alone (not its process group) is passed on
/// once, the child stops and restores, and bench controls leaves with 130
/// instead of going on to the next run; killed outright (SIGKILL), its child
/// is told to stop (SIGTERM) and stops too. Two cases with the child held
/// stopped (SIGSTOP) until its parent's signal is pending beside another:
/// a SIGTERM to both at once, as a service manager stops a service, and a
/// second SIGINT that ends `bench controls` (its child then gets the SIGTERM
/// of its parent's death). Neither signal from the parent may count as the
/// second signal that makes a pagelab process leave without restoring.
#[test]
fn bench_controls_passes_a_stop_to_its_child() {
    if unsafe { libc::geteuid() } != 0 || probe::Probe::default().memory_controller().ok().flatten().is_none() {
        common::skip("needs root and a memory cgroup controller (bench controls runs as root)");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = system_state();
    for case in [Stop::Int, Stop::Kill, Stop::TermBoth, Stop::IntTwice] {
        stop_bench_controls(case, &before);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Int,
    Kill,
    TermBoth,
    IntTwice,
}

/// If a case fails midway, its child must not stay stopped (a root run
/// holding its group and the run lock would stall every test after it):
/// continue it and kill `bench controls`, whose death tells it to stop.
struct Release(i32, i32);
impl Drop for Release {
    fn drop(&mut self) {
        if std::thread::panicking() {
            unsafe { libc::kill(self.1, libc::SIGCONT) };
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// The state letter of `/proc/PID/stat` (None: gone).
fn proc_state(pid: i32) -> Option<char> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    st.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next())
}

/// Waits until `sigs` are all pending for `pid` (process-wide: kill(2)'s).
fn pending(pid: i32, sigs: &[i32]) {
    let want = sigs.iter().fold(0u64, |m, s| m | 1 << (s - 1));
    common::wait_until("the signals pending", std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|st| {
                let x = st.lines().find_map(|l| l.strip_prefix("ShdPnd:"))?;
                u64::from_str_radix(x.trim(), 16).ok()
            })
            .is_some_and(|p| p & want == want)
    });
}

fn stop_bench_controls(case: Stop, before: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("controls");
    let mut bench = Command::new(bin())
        .env("PAGELAB_JOURNAL_DIR", journals())
        .args(["bench", "controls", "--only", "mapping.shared_costlier", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = bench.id() as i32;
    // Its child, once it has written its run directory.
    let run = out.join("mapping-as-the-lab/run.json");
    let children = format!("/proc/{b}/task/{b}/children");
    let mut child = 0;
    common::wait_until("bench controls' first run", std::time::Duration::from_secs(60), || {
        assert!(bench.try_wait().unwrap().is_none(), "{case:?}: bench controls ended before its first run started");
        let kids = std::fs::read_to_string(&children).unwrap_or_default();
        child = kids.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(0);
        child > 0 && run.exists()
    });
    let _release = Release(b, child);
    let hold = || {
        unsafe { libc::kill(child, libc::SIGSTOP) };
        common::wait_until("the child to stop", std::time::Duration::from_secs(10), || proc_state(child) == Some('T'));
    };
    match case {
        Stop::Int => {
            unsafe { libc::kill(b, libc::SIGINT) };
        }
        Stop::Kill => {
            unsafe { libc::kill(b, libc::SIGKILL) };
        }
        Stop::TermBoth => {
            hold();
            unsafe { libc::kill(child, libc::SIGTERM) };
            unsafe { libc::kill(b, libc::SIGTERM) };
            // Both pending: whichever handler runs first, only the SIGTERM
            // sent here may count (before this rule, both did).
            pending(child, &[libc::SIGINT, libc::SIGTERM]);
            unsafe { libc::kill(child, libc::SIGCONT) };
        }
        Stop::IntTwice => {
            hold();
            unsafe { libc::kill(b, libc::SIGINT) };
            pending(child, &[libc::SIGINT]);
            // The second ends bench controls at once; its death sends the
            // child SIGTERM (and the kernel a SIGHUP and a SIGCONT to its
            // process group, left without a parent in the session).
            unsafe { libc::kill(b, libc::SIGINT) };
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(st) = bench.try_wait().unwrap() {
            break st;
        }
        assert!(std::time::Instant::now() < deadline, "{case:?}: bench controls never ended");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut bench.stderr.take().unwrap(), &mut err).unwrap();
    unsafe { libc::kill(child, libc::SIGCONT) };
    // The child has ended: gone, or a zombie its new parent has not reaped yet.
    common::wait_until("the child to end", std::time::Duration::from_secs(60), || {
        proc_state(child).is_none_or(|c| c == 'Z')
    });
    // It stopped as a stop (its record says interrupted), not cut short.
    let state: Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    assert_eq!(state["status"]["state"], "interrupted", "{case:?}: {}\n{err}", state["status"]);
    if matches!(case, Stop::Int | Stop::TermBoth) {
        assert_eq!(status.code(), Some(130), "{case:?}: {err}");
        assert!(err.contains("bench controls stopped"), "{case:?}: {err}");
    }
    if case == Stop::IntTwice {
        assert_eq!(status.code(), Some(130), "{case:?}: the second signal ends it at once: {err}");
    }
    // It went no further: no control run, no table.
    assert!(!out.join("mapping-control-shared_costlier").exists() && !out.join("controls.json").exists());
    assert_eq!(system_state(), before, "{case:?}: {err}");
}
