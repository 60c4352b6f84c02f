//! The fuzz target `lab_dir` (fuzz/) on its seeds and on every input that
//! once crashed it (fuzz/regressions/lab_dir/): none may panic again.

#[path = "../../../fuzz/regressions/inputs.rs"]
mod inputs;
use inputs::inputs;

#[test]
fn seeds_and_past_crashes_read_without_panicking() {
    let files = inputs("lab_dir");
    assert!(files.len() >= 4, "the seeds are missing: {files:?}");
    for f in files {
        let data = std::fs::read(&f).unwrap();
        if std::panic::catch_unwind(|| experiments::fuzzing::lab_dir(&data)).is_err() {
            panic!("{} panicked", f.display());
        }
    }
    let decoy = std::env::temp_dir().join(format!("pagelab-fuzz-decoy-{}", std::process::id()));
    std::fs::remove_dir_all(decoy).unwrap();
}

/// Issue 59 item 1: a run directory killed mid-write. run.json cut at every
/// byte offset never makes the reader (and the summary `report` prints)
/// panic; samples.jsonl cut at every offset keeps every whole line before
/// the cut, counts at most the torn one as unreadable, and reads the same
/// through the file reader `report` uses.
#[test]
fn a_run_cut_at_every_byte_reads_without_panicking_and_keeps_every_whole_line() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-dirs/mapping");
    let run = std::fs::read_to_string(fixture.join("run.json")).unwrap();
    let samples = std::fs::read_to_string(fixture.join("samples.jsonl")).unwrap();
    let events = std::fs::read_to_string(fixture.join("events.jsonl")).unwrap();
    for cut in 0..=run.len() {
        let data = [&run.as_bytes()[..cut], b"\0", samples.as_bytes(), b"\0", events.as_bytes()].concat();
        if std::panic::catch_unwind(|| report::fuzzing::read_run(&data)).is_err() {
            panic!("run.json cut at byte {cut} of {} panicked", run.len());
        }
    }
    // A JSONL stream cut: eat's events, 97 lines (mapping's run.json, shorter to parse).
    let eat = fixture.with_file_name("eat");
    let samples = std::fs::read_to_string(eat.join("samples.jsonl")).unwrap();
    let events = std::fs::read_to_string(eat.join("events.jsonl")).unwrap();
    let dir = std::path::Path::new("/nonexistent/run");
    assert!(events.lines().count() > 50, "the fixture has {} events", events.lines().count());
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("run.json"), &run).unwrap();
    std::fs::write(tmp.path().join("samples.jsonl"), &samples).unwrap();
    // Every offset near a line's end (where a cut is subtle), every 11th elsewhere.
    let near_end = |c: usize| (c.saturating_sub(2)..(c + 3).min(events.len())).any(|i| events.as_bytes()[i] == b'\n');
    for cut in (0..=events.len()).filter(|&c| c % 11 == 0 || c == events.len() || near_end(c)) {
        let text = String::from_utf8_lossy(&events.as_bytes()[..cut]);
        let before = text.matches('\n').count();
        let rec = record::RunRecord::from_texts(dir, &run, Some(&samples), Some(&text)).unwrap();
        // Every whole line is kept; the torn one is read only if it is whole JSON.
        assert!(
            rec.events.len() == before || rec.events.len() == before + 1,
            "cut at {cut}: {} events read, {before} whole lines",
            rec.events.len()
        );
        assert!(rec.skipped_lines <= 1, "cut at {cut}: {} lines skipped", rec.skipped_lines);
        // The file reader `report` uses, at a spread of offsets.
        if cut % 97 == 0 || cut == events.len() {
            std::fs::write(tmp.path().join("events.jsonl"), &events.as_bytes()[..cut]).unwrap();
            let loaded = record::RunRecord::load(tmp.path()).unwrap();
            assert_eq!(loaded.events.len(), rec.events.len(), "cut at {cut}: the file reader differs");
            assert_eq!(loaded.skipped_lines, rec.skipped_lines, "cut at {cut}");
        }
    }
}
