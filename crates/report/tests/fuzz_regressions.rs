//! The fuzz target `run_record` (fuzz/) on its seeds and on every input that
//! once crashed it (fuzz/regressions/run_record/): none may panic again.

#[path = "../../../fuzz/regressions/inputs.rs"]
mod inputs;
use inputs::inputs;

#[test]
fn seeds_and_past_crashes_parse_without_panicking() {
    let files = inputs("run_record");
    assert!(!files.is_empty(), "the seeds are missing: {files:?}");
    for f in files {
        let data = std::fs::read(&f).unwrap();
        if std::panic::catch_unwind(|| report::fuzzing::read_run(&data)).is_err() {
            panic!("{} panicked", f.display());
        }
    }
}
