//! The fuzz target `kernel_files` (fuzz/) on its seeds and on every input that
//! once crashed it (fuzz/regressions/kernel_files/): none may panic again.

use std::path::Path;

fn inputs(sub: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut v: Vec<_> = ["seeds", "regressions"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d).join(sub)).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

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
