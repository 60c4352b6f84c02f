//! Visible skips, shared by every test binary of the workspace.

/// Says why a test did not run, and records it in target/tmp/skipped-tests.txt,
/// where `.ci/run` counts it as skipped (libtest can only count it as passed).
#[allow(dead_code)]
pub fn skip(why: &str) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| s.rsplit_once('-').map(|(a, _)| a.to_string()).unwrap_or(s))
        .unwrap_or_default();
    println!("SKIP {bin}::{test}: {why}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = std::io::Write::write_all(&mut f, format!("{bin}::{test}: {why}\n").as_bytes());
    }
}
