//! The body of the fuzz target `lab_dir` (fuzz/), kept here so that the
//! regression test (tests/fuzz_lab_dir.rs) runs the very same code on the
//! inputs fuzzing found.
//!
//! One input is a whole directory: a lab or a run directory as anyone may
//! have edited it, with links, FIFOs and subdirectories where files should
//! be. It is written under a scratch directory of this process, then read
//! and rendered by everything `report` and `compare` do with a directory:
//! the lab, its runs, every experiment's parser, judge and charts, the page,
//! Markdown, the findings, OpenMetrics and BMF. Nothing may panic; no JSON
//! may carry a `null` where a number belongs.

use std::path::{Path, PathBuf};

/// The most files one input writes (the rest is ignored).
const MAX_FILES: usize = 24;

/// What one input becomes on disk: a list of entries, each `NAME\0CONTENT`,
/// separated by `\0\0`. NAME is a relative path of at most two plain
/// components (`lab.json`, `eat/run.json`); CONTENT `@link:TARGET` makes a
/// symbolic link, `@fifo` a FIFO, `@dir` a directory, anything else a file.
pub fn entries(data: &[u8]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for part in data.split_inner(b"\0\0").take(MAX_FILES) {
        let (name, content) = match part.iter().position(|&b| b == 0) {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &[][..]),
        };
        let name = String::from_utf8_lossy(name);
        let comps: Vec<&str> = name.split('/').filter(|c| !c.is_empty()).collect();
        if comps.is_empty() || comps.len() > 2 || comps.iter().any(|c| *c == "." || *c == ".." || c.len() > 64) {
            continue;
        }
        out.push((comps.iter().collect(), content.to_vec()));
    }
    out
}

trait SplitInner {
    fn split_inner<'a>(&'a self, sep: &'a [u8]) -> Box<dyn Iterator<Item = &'a [u8]> + 'a>;
}

impl SplitInner for [u8] {
    fn split_inner<'a>(&'a self, sep: &'a [u8]) -> Box<dyn Iterator<Item = &'a [u8]> + 'a> {
        let mut rest = self;
        let mut done = false;
        Box::new(std::iter::from_fn(move || {
            if done {
                return None;
            }
            match rest.windows(sep.len()).position(|w| w == sep) {
                Some(i) => {
                    let (a, b) = rest.split_at(i);
                    rest = &b[sep.len()..];
                    Some(a)
                }
                None => {
                    done = true;
                    Some(rest)
                }
            }
        }))
    }
}

/// Writes the entries under `root` (which is emptied first), never through a
/// link: the fuzzer runs as root, and an input that makes `x -> /etc` and
/// then writes `x/passwd` must not reach /etc (an earlier version of this
/// harness overwrote /etc/passwd that way). A file is created with
/// `O_CREAT | O_EXCL | O_NOFOLLOW`, so a name that exists (a link, a FIFO,
/// a file) is never opened; the parent must be a real directory under
/// `root`. A link points into `decoy` (or at /dev/zero or /dev/null), never
/// at a path the input chose.
pub fn materialize(root: &Path, decoy: &Path, entries: &[(PathBuf, Vec<u8>)]) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).expect("the fuzz scratch directory");
    for (name, content) in entries {
        let p = root.join(name);
        let Some(parent) = p.parent() else { continue };
        if parent != root {
            match std::fs::symlink_metadata(parent) {
                Ok(m) if m.file_type().is_dir() => {}
                Ok(_) => continue,
                Err(_) => {
                    if std::fs::create_dir(parent).is_err() {
                        continue;
                    }
                }
            }
        }
        if let Some(target) = content.strip_prefix(b"@link:") {
            let t = String::from_utf8_lossy(target);
            let to = match t.as_ref() {
                "/dev/zero" | "/dev/null" => PathBuf::from(t.as_ref()),
                other => decoy.join(other.trim_start_matches('/').replace("..", "__")),
            };
            let _ = std::os::unix::fs::symlink(to, &p);
        } else if content == b"@fifo" {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap_or_default();
            // SAFETY: a valid NUL-terminated path; mkfifo never follows a link.
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        } else if content == b"@dir" {
            let _ = std::fs::create_dir(&p);
        } else if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&p)
        {
            let _ = std::io::Write::write_all(&mut f, content);
        }
    }
}

/// The decoy a fuzzed link points into: a secret, a run directory and its
/// Markdown, made once. What reading and rendering may not change.
pub fn make_decoy(decoy: &Path) {
    if decoy.join("sub").is_dir() {
        return;
    }
    std::fs::create_dir_all(decoy.join("sub")).expect("the fuzz decoy");
    std::fs::write(decoy.join("secret"), "secret\n").expect("the fuzz decoy");
    std::fs::write(decoy.join("sub/run.json"), "{}").expect("the fuzz decoy");
    std::fs::write(decoy.join("sub/eat.md"), "decoy\n").expect("the fuzz decoy");
}

/// Every name under `decoy` with its type, size and modification time.
pub fn signature(decoy: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut stack = vec![decoy.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.path().symlink_metadata() else { continue };
            if m.file_type().is_dir() {
                stack.push(e.path());
            }
            v.push(format!("{} {:?} {} {:?}", e.path().display(), m.file_type(), m.len(), m.modified().ok()));
        }
    }
    v.sort();
    v
}

/// Reads and renders `root` as `report` and `compare` would.
pub fn read_dir(root: &Path) {
    use report::html::{Render, Report};
    if !root.join("lab.json").exists() {
        if let Ok(rec) = record::RunRecord::load(root) {
            let iv = record::derive::intervals(&rec.samples);
            let _ = report::timeline::csv(&rec, &iv);
            let s = report::summary::summarize(&rec, &iv);
            let _ = report::summary::render_text(&s);
        }
    }
    // Charts are drawn for every other input: drawing is the slow part.
    let render = if root.join("render").exists() { Render::Always } else { Render::Never };
    let Ok(r) = Report::load(root, render, crate::catalog()) else { return };
    let _ = report::html::html(&r);
    let _ = report::html::markdown(&r);
    let _ = report::openmetrics::report_file(&r);
    for doc in [serde_json::to_value(r.findings_doc()).ok(), serde_json::to_value(report::openmetrics::bmf(&r)).ok()]
        .into_iter()
        .flatten()
    {
        no_null_figures(&doc, "");
    }
    let c = report::compare::compare(&r, &r, 0.05, 0.0);
    let _ = report::compare::markdown(&c);
}

/// What the published schemas require: a BMF figure (`value`,
/// `lower_value`, `upper_value`) is a number, and a finding's `ci95` is null
/// or two numbers, never an interval with a null end.
fn no_null_figures(v: &serde_json::Value, key: &str) {
    use serde_json::Value;
    match v {
        Value::Null if ["value", "lower_value", "upper_value"].contains(&key) => panic!("{key} is null"),
        Value::Array(a) => {
            if key == "ci95" {
                assert!(a.iter().all(|x| !x.is_null()), "ci95 holds a null: {v}");
            }
            a.iter().for_each(|x| no_null_figures(x, ""));
        }
        Value::Object(m) => m.iter().for_each(|(k, x)| no_null_figures(x, k)),
        _ => {}
    }
}

/// The fuzz target's body: one input, one directory, everything read; the
/// decoy its links point into must be as it was (nothing written outside).
pub fn lab_dir(data: &[u8]) {
    let tmp = std::env::temp_dir();
    let root = tmp.join(format!("pagelab-fuzz-lab-{}", std::process::id()));
    let decoy = tmp.join(format!("pagelab-fuzz-decoy-{}", std::process::id()));
    make_decoy(&decoy);
    let before = signature(&decoy);
    materialize(&root, &decoy, &entries(data));
    read_dir(&root);
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(signature(&decoy), before, "reading the directory changed what its links point to");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_becomes_plain_names_links_and_fifos_under_the_scratch_directory() {
        let data = b"lab.json\0{}\0\0eat/run.json\0{\"a\":1}\0\0../x\0no\0\0/etc/y\0abs\0\0a/b/c\0deep\0\0eat/l\0@link:/etc/passwd\0\0eat/f\0@fifo";
        let e = entries(data);
        let names: Vec<_> = e.iter().map(|(n, _)| n.to_string_lossy().into_owned()).collect();
        // `/etc/y` is taken as the plain name etc/y; `..` and three components are not.
        assert_eq!(names, ["lab.json", "eat/run.json", "etc/y", "eat/l", "eat/f"]);
        let tmp = std::env::temp_dir().join(format!("pagelab-fuzz-unit-{}", std::process::id()));
        let decoy = tmp.with_extension("decoy");
        make_decoy(&decoy);
        materialize(&tmp, &decoy, &e);
        let l = std::fs::read_link(tmp.join("eat/l")).unwrap();
        assert_eq!(l, decoy.join("etc/passwd"), "a link points into the decoy, whatever the input said");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(tmp.join("eat/f")).unwrap().file_type().is_fifo());
        assert_eq!(std::fs::read(tmp.join("eat/run.json")).unwrap(), b"{\"a\":1}");
        read_dir(&tmp);
        std::fs::remove_dir_all(&tmp).unwrap();
        std::fs::remove_dir_all(&decoy).unwrap();
    }

    #[test]
    fn an_input_never_writes_through_a_link_or_into_a_fifo() {
        let tmp = std::env::temp_dir().join(format!("pagelab-fuzz-links-{}", std::process::id()));
        let decoy = tmp.with_extension("decoy");
        make_decoy(&decoy);
        let before = signature(&decoy);
        // A link to the decoy's directory, then a file through it; a link to
        // the secret, then the same name as a file; a FIFO, then a file.
        let data = b"x\0@link:/\0\0x/secret\0pwned\0\0s\0@link:secret\0\0s\0pwned\0\0f\0@fifo\0\0f\0blocks?";
        materialize(&tmp, &decoy, &entries(data));
        assert_eq!(signature(&decoy), before);
        assert_eq!(std::fs::read_to_string(decoy.join("secret")).unwrap(), "secret\n");
        std::fs::remove_dir_all(&tmp).unwrap();
        std::fs::remove_dir_all(&decoy).unwrap();
    }

    #[test]
    #[should_panic(expected = "ci95 holds a null")]
    fn a_null_in_an_interval_is_what_the_target_reports() {
        no_null_figures(&serde_json::json!({"findings": [{"ci95": [0.0, null]}]}), "");
    }
}
