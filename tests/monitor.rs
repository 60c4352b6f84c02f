//! `pagelab monitor` used for real, under tmux: as root with a zram swap, follow a
//! process that holds memory, press `t`, quit, and check from the recorded run
//! that the target's RSS dropped and the compressed store grew.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::bin;

fn tmux(args: &[&str]) -> bool {
    Command::new("tmux").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

#[test]
fn trim_under_tmux_drops_rss_into_zram() {
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
        common::skip("needs root and zram");
        return;
    }
    if !tmux(&["-V"]) {
        common::skip("tmux is not installed (Debian: tmux)");
        return;
    }
    let jdir = tempfile::tempdir().unwrap();
    let mut sb = sandbox::Sandbox::with_journal_dir("monitor-test", jdir.path());
    sb.zram_swap(&sandbox::sandbox::ZramSpec { disksize: 256 << 20, algorithm: None, priority: 32767 }).unwrap();
    // A process holding 64 MiB, each page written.
    let mut holder = Command::new(bin())
        .args(["__worker", "hold", "--spec", &format!(r#"{{"bytes": {}}}"#, 64u64 << 20)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut r = std::io::BufReader::new(holder.stdout.as_mut().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).unwrap() > 0 && !line.contains("\"ready\"") {
            line.clear();
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    let session = format!("pagelab-test-{}", std::process::id());
    let cmd = format!("{} monitor --pid {} --interval 200ms --record {}", bin().display(), holder.id(), dir.display());
    assert!(tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "48", &cmd]), "tmux new-session");
    // Wait until the monitor has drawn and sampled for a while (a loaded machine
    // may take seconds to start it), then trim, and wait for the trim's event.
    let capture = || {
        let o = Command::new("tmux").args(["capture-pane", "-p", "-t", &session]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let t = Instant::now();
    let mut screen = capture();
    while !screen.contains("faults/s") && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        screen = capture();
    }
    // A few samples before the trim, to compare with.
    let samples = dir.join("samples.jsonl");
    common::wait_until("3 samples before the trim", Duration::from_secs(20), || common::lines_in(&samples) >= 3);
    // Every page back in RAM and just used, then two more samples: a host may
    // run a DAMON pageout scheme of its own (this project's machine does), and
    // it paged the idle holder out into this test's zram before the trim once
    // (RSS 15.6 MB of 64 MiB before it; issue 42).
    {
        use std::io::{BufRead, Write};
        writeln!(holder.stdin.as_mut().unwrap(), r#"{{"seq":1,"command":{{"cmd":"touch","arg":null}}}}"#).unwrap();
        let mut r = std::io::BufReader::new(holder.stdout.as_mut().unwrap());
        let mut line = String::new();
        // Its answer: the `done` event that carries the command's number.
        let answered = |l: &str| l.contains("\"kind\":\"done\"") && l.contains("\"seq\":1");
        while r.read_line(&mut line).unwrap() > 0 && !answered(&line) {
            line.clear();
        }
        assert!(answered(&line), "the holder did not answer touch: {line}");
    }
    let touched = common::lines_in(&samples);
    common::wait_until("2 samples after the touch", Duration::from_secs(20), || {
        common::lines_in(&samples) >= touched + 2
    });
    // The last sample taken before the key is the one to compare with: the trim
    // event is written when the trim ends, and a sample taken while it ran (a
    // loaded machine's trim of 64 MiB can take a second) already shows a low RSS.
    let before_key = common::lines_in(&samples);
    assert!(tmux(&["send-keys", "-t", &session, "t"]));
    let t = Instant::now();
    while !std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default().contains("trim: RSS")
        && t.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    // Samples well after the trim (the check below reads them), then quit.
    let at_trim = common::lines_in(&samples);
    common::wait_until("4 samples after the trim", Duration::from_secs(20), || {
        common::lines_in(&samples) >= at_trim + 4
    });
    assert!(tmux(&["send-keys", "-t", &session, "q"]));
    let t = Instant::now();
    while tmux(&["has-session", "-t", &session]) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let still = tmux(&["has-session", "-t", &session]);
    if still {
        tmux(&["kill-session", "-t", &session]);
    }
    let _ = holder.kill();
    let _ = holder.wait();
    sb.restore().unwrap();
    assert!(!still, "monitor did not quit on q");
    assert!(screen.contains("RAM by category") && screen.contains(&format!("pid {}", holder.id())), "{screen}");
    let rec = record::RunRecord::load(&dir).unwrap();
    assert_eq!(rec.run.status.state, record::rundir::State::Complete);
    let trim = rec.events.iter().find(|e| e.kind == "action" && e.name.starts_with("trim: RSS")).expect("a trim event");
    let rss = |s: &probe::Sample| s.pids.first().and_then(|p| p.status).and_then(|st| st.vm_rss).unwrap_or(0);
    let stored = |s: &probe::Sample| s.zram.iter().filter_map(|z| z.mm_stat.map(|m| m.orig_data_size)).sum::<u64>();
    let b = &rec.samples[before_key - 1];
    assert!(b.t_ns < trim.t_ns, "the sample before the key precedes the trim's event");
    let after: Vec<&probe::Sample> = rec.samples.iter().filter(|s| s.t_ns > trim.t_ns + 300_000_000).collect();
    assert!(!after.is_empty(), "samples after the trim");
    let a = after.last().unwrap();
    assert!(rss(a) < rss(b) / 2, "RSS {} -> {}", rss(b), rss(a));
    assert!(stored(a) >= stored(b) + (32 << 20), "zram stored {} -> {}", stored(b), stored(a));
}

#[test]
fn monitor_without_a_terminal_refuses_with_a_hint() {
    let out = Command::new(bin()).arg("monitor").stdout(Stdio::piped()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("pagelab record"), "{err}");
    let out = Command::new(bin()).args(["monitor", "--pid", "999999999"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pid"));
}

/// A monitor whose terminal goes away (its tmux session killed: a SIGHUP,
/// then EIO on every write) finishes its record. ratatui's drop reported a
/// failure to show the cursor with std's `eprintln!`, whose panic on the
/// dead terminal left the record `running`.
#[test]
fn a_monitor_whose_terminal_hangs_up_finishes_its_record() {
    if !tmux(&["-V"]) {
        common::skip("tmux is not installed (Debian: tmux)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    let session = format!("pagelab-hup-{}", std::process::id());
    let cmd = format!("{} monitor --interval 200ms --record {}", bin().display(), dir.display());
    assert!(tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "40", &cmd]), "tmux new-session");
    let drawn = || {
        let o = Command::new("tmux").args(["capture-pane", "-p", "-t", &session]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).contains("faults/s")
    };
    let t = Instant::now();
    while !drawn() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let drew = drawn();
    assert!(tmux(&["kill-session", "-t", &session]), "tmux kill-session");
    assert!(drew, "the monitor never drew");
    let state = || {
        let text = std::fs::read(dir.join("run.json")).unwrap_or_default();
        serde_json::from_slice::<serde_json::Value>(&text).map(|v| v["status"]["state"].clone()).unwrap_or_default()
    };
    let t = Instant::now();
    while state() == "running" && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(state(), "interrupted", "the record after the hang-up");
}
