//! The files a fuzz target's regression test feeds it: its seeds and every
//! input that once crashed it. Included by crates/{probe,report}/tests/fuzz_regressions.rs.

use std::path::{Path, PathBuf};

pub fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut v: Vec<_> = ["seeds", "regressions"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d).join(target)).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}
