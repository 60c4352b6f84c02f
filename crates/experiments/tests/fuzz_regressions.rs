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
