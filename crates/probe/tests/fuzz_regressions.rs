//! The fuzz target `kernel_files` (fuzz/) on its seeds and on every input that
//! once crashed it (fuzz/regressions/kernel_files/): none may panic again.

#[path = "../../../fuzz/regressions/inputs.rs"]
mod inputs;
use inputs::inputs;

#[test]
fn seeds_and_past_crashes_parse_without_panicking() {
    let files = inputs("kernel_files");
    assert!(files.len() >= 10, "the seeds are missing: {files:?}");
    for f in files {
        let data = std::fs::read(&f).unwrap();
        if std::panic::catch_unwind(|| probe::fuzzing::parse_everything(&data)).is_err() {
            panic!("{} panicked", f.display());
        }
    }
}
