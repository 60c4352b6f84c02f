//! The kernel requests that change no setting, on fake trees (no root needed):
//! which file each writes, and what.

use std::path::Path;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn clear_refs_writes_one_to_the_pids_file() {
    let t = tempfile::tempdir().unwrap();
    // No such process: the error is the kernel's (here: no directory).
    assert!(sandbox::mm::clear_refs(t.path(), 42).is_err());
    std::fs::create_dir_all(t.path().join("42")).unwrap();
    std::fs::write(t.path().join("42/clear_refs"), "").unwrap();
    sandbox::mm::clear_refs(t.path(), 42).unwrap();
    assert_eq!(read(&t.path().join("42/clear_refs")), "1");
}

#[test]
fn lru_gen_age_writes_the_documented_command() {
    let t = tempfile::tempdir().unwrap();
    let e = sandbox::mm::lru_gen_age(t.path(), 42, 0, 6).unwrap_err().to_string();
    assert!(e.contains("'+ 42 0 6 1 1'"), "the failing command is named: {e}");
    std::fs::create_dir_all(t.path().join("kernel/debug")).unwrap();
    sandbox::mm::lru_gen_age(t.path(), 42, 1, 6).unwrap();
    assert_eq!(read(&t.path().join("kernel/debug/lru_gen")), "+ 42 1 6 1 1");
}

#[test]
fn a_child_joins_the_group_before_exec() {
    // A fake group: cgroup.procs is a plain file, so the child's write lands there.
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("cgroup.procs"), "").unwrap();
    let mut cmd = std::process::Command::new("true");
    sandbox::cgroup::join_before_exec(&mut cmd, t.path()).unwrap();
    assert!(cmd.status().unwrap().success());
    assert_eq!(read(&t.path().join("cgroup.procs")), "0", "the child wrote itself (0) before exec");
    // A group that is not there: the child never runs and spawn says why.
    let mut cmd = std::process::Command::new("true");
    sandbox::cgroup::join_before_exec(&mut cmd, &t.path().join("gone")).unwrap();
    let e = cmd.status().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
}
