//! The house rules, checked over the source (issue 32 and shared/STYLE.md):
//! small files, small functions, a SAFETY comment on every unsafe block, and
//! one median and percentile (record::stats). Each rule names the offenders,
//! so a new long function or a hand-rolled median fails `cargo test` with its
//! file and line.

use std::path::{Path, PathBuf};

/// Most lines a source file may have.
const FILE_LINES: usize = 800;
/// Most lines a function outside tests may have, from `fn` to its closing brace.
const FN_LINES: usize = 120;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every .rs file of the binary and the library crates (not tests/, benches/,
/// fuzz/ or build output).
fn sources() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("src")];
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        dirs.push(e.path().join("src"));
    }
    let mut out = Vec::new();
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() > 50, "found only {} sources under {}", out.len(), root().display());
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The source with string literals, char literals and comments blanked (their
/// characters replaced by spaces, newlines kept), so that braces and keywords
/// inside them do not count.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &x in &b[i..j.min(b.len())] {
                out.push(blank(x));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'').map(|k| k + 1)
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..e {
                        out.push(' ');
                    }
                    i = e;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The line (0-based) where `#[cfg(test)]` first opens a module with a
/// body (`mod tests {`, `pub(crate) mod tests {`): what follows it is tests,
/// by this codebase's habit of putting them last. A module declared
/// `#[cfg(test)] mod name;` is a file of its own (`test_only_files`), and the
/// code after its declaration is not tests.
fn tests_start(lines: &[&str]) -> usize {
    let opens_a_module = |l: &str| {
        let l = l.trim();
        let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
        l.starts_with("mod ") && l.ends_with('{')
    };
    lines
        .iter()
        .enumerate()
        .find(|(k, l)| {
            l.trim() == "#[cfg(test)]"
                && lines[k + 1..].iter().find(|n| !n.trim().starts_with("#[")).is_some_and(|n| opens_a_module(n))
        })
        .map(|(k, _)| k)
        .unwrap_or(lines.len())
}

/// (name, first line, lines) of each function with a body, outside tests.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let end = tests_start(&lines);
    let mut out = Vec::new();
    for (k, l) in lines.iter().enumerate().take(end) {
        let Some(name) = fn_name(l) else { continue };
        // The body opens at the first `{` after the signature (or the
        // signature ends with `;`: a trait method without a body).
        let mut depth = 0usize;
        let mut opened = false;
        let mut last = None;
        'scan: for (j, line) in lines.iter().enumerate().skip(k) {
            let from = if j == k { l.find("fn ").unwrap() } else { 0 };
            for ch in line[from..].chars() {
                match ch {
                    ';' if !opened && depth == 0 => break 'scan,
                    '{' => {
                        opened = true;
                        depth += 1;
                    }
                    '}' if opened => {
                        depth -= 1;
                        if depth == 0 {
                            last = Some(j);
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(j) = last {
            out.push((name, k + 1, j - k + 1));
        }
    }
    out
}

fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let mut words = t.split_whitespace().peekable();
    while let Some(w) = words.peek() {
        let w = *w;
        if w == "pub" || w.starts_with("pub(") || ["const", "async", "unsafe", "extern", "default"].contains(&w) {
            words.next();
        } else {
            break;
        }
    }
    let rest: String = words.collect::<Vec<_>>().join(" ");
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn no_source_file_is_over_800_lines() {
    let long: Vec<String> = sources()
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).unwrap().lines().count();
            (n > FILE_LINES).then(|| format!("{} ({n} lines)", rel(p)))
        })
        .collect();
    assert!(long.is_empty(), "files over {FILE_LINES} lines (split them into a folder of steps): {long:#?}");
}

#[test]
fn no_function_outside_tests_is_over_120_lines() {
    let mut long = Vec::new();
    for p in sources() {
        let code = code_only(&std::fs::read_to_string(&p).unwrap());
        for (name, line, n) in functions(&code) {
            if n > FN_LINES {
                long.push(format!("{}:{line} {name} ({n} lines)", rel(&p)));
            }
        }
    }
    assert!(long.is_empty(), "functions over {FN_LINES} lines (split them into named steps): {long:#?}");
}

#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let mut bare = Vec::new();
    for p in sources() {
        let src = std::fs::read_to_string(&p).unwrap();
        let code = code_only(&src);
        let raw: Vec<&str> = src.lines().collect();
        for (k, l) in code.lines().enumerate() {
            if !has_unsafe(l) {
                continue;
            }
            // A `// SAFETY:` comment on this line or among the few above it
            // (an expression may span lines), or `# Safety` in an unsafe fn's
            // doc.
            let from = k.saturating_sub(6);
            let said = raw[from..=k].iter().any(|r| r.contains("SAFETY") || r.contains("# Safety"));
            if !said {
                bare.push(format!("{}:{}", rel(&p), k + 1));
            }
        }
    }
    assert!(bare.is_empty(), "unsafe without a `// SAFETY:` comment: {bare:#?}");
}

fn has_unsafe(code_line: &str) -> bool {
    let mut rest = code_line;
    while let Some(at) = rest.find("unsafe") {
        let before = rest[..at].chars().last();
        let after = rest[at + 6..].chars().next();
        let word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
        // `unsafe extern "C"` in a signature type and `#[allow(unsafe_code)]`
        // are not blocks; `unsafe {`, `unsafe fn` and `unsafe impl` are.
        if word {
            let tail = rest[at + 6..].trim_start();
            if tail.starts_with('{') || tail.starts_with("fn") || tail.starts_with("impl") || tail.is_empty() {
                return true;
            }
        }
        rest = &rest[at + 6..];
    }
    false
}

#[test]
fn one_median_and_one_percentile() {
    // A median or percentile by hand: picking the middle of a sorted vector.
    let mut hand = Vec::new();
    for p in sources() {
        let r = rel(&p);
        if r.ends_with("record/src/stats.rs") {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&p).unwrap());
        for (k, l) in code.lines().enumerate() {
            let squashed: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            let named = ["fn median(", "fn percentile(", "fn median<", "fn percentile<"].iter().any(|f| l.contains(f));
            // A function called median or percentile must hand the work to
            // record::stats within its first lines.
            let delegates = named && code.lines().skip(k).take(4).any(|b| b.contains("stats::"));
            if squashed.contains("len()/2]") || squashed.contains("len()/2)") || (named && !delegates) {
                hand.push(format!("{r}:{}: {}", k + 1, l.trim()));
            }
        }
    }
    assert!(hand.is_empty(), "medians or percentiles outside record::stats (use record::stats): {hand:#?}");
}

/// Mean, variance and Student's t are written once (record::stats), and
/// bytes become MiB through `units` only: no `sum / len` mean, no sum of
/// squared deviations, no `StudentsT` of their own elsewhere, and no
/// `/ 1048576.0` or `>> 20` (tests aside).
#[test]
fn one_mean_variance_t_and_one_mib() {
    let mut hand = Vec::new();
    for p in sources() {
        let r = rel(&p);
        if r.ends_with("/tests.rs") || r.contains("/tests/") {
            continue;
        }
        let src = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        let code = code_only(&src);
        let end = tests_start(&lines);
        let stats = r.contains("record/src/stats");
        for (k, l) in code.lines().enumerate().take(end) {
            let squashed: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            let mean = squashed.contains(".sum::<f64>()/") && squashed.contains("len()");
            let var = squashed.contains("powi(2)).sum::<f64>()");
            let t = squashed.contains("StudentsT::new");
            let mib = squashed.contains("1048576") || squashed.contains(">>20");
            if (!stats && (mean || var || t)) || (mib && !r.starts_with("crates/units/")) {
                hand.push(format!("{r}:{}: {}", k + 1, l.trim()));
            }
        }
    }
    assert!(hand.is_empty(), "statistics outside record::stats, or MiB outside units: {hand:#?}");
}

#[test]
fn the_scanner_finds_what_it_should() {
    // The rules above pass on an empty list; check that the scanner is not
    // blind, on a source made for it.
    let src = "fn a() {\n    let s = \"}\";\n    // }\n    let c = '}';\n}\n\npub(crate) fn b<'a>(x: &'a str) -> &'a str {\n    x\n}\ntrait T {\n    fn c(&self);\n}\n#[cfg(test)]\nmod tests {\n    fn d() {}\n}\n";
    let f = functions(&code_only(src));
    let got: Vec<(&str, usize, usize)> = f.iter().map(|(n, l, k)| (n.as_str(), *l, *k)).collect();
    assert_eq!(got, [("a", 1, 5), ("b", 7, 3)]);
    assert!(has_unsafe("    unsafe { libc::getpid() };"));
    assert!(has_unsafe("unsafe impl Send for X {}"));
    assert!(!has_unsafe("#![deny(unsafe_op_in_unsafe_fn)]"));
    assert!(!has_unsafe("let unsafe_count = 1;"));
    assert_eq!(code_only("let r = r#\"{\"#; x").trim_end(), "let r =       ; x");
}

/// Every proc macro is built unoptimized in the test build (Cargo.toml's
/// `[profile.dev.package]` list): `package."*"`'s opt-level 2 wins over
/// `build-override`, and a new proc macro left off the list costs each
/// fresh clone its optimized build (syn alone: 30 s, twice).
#[test]
fn every_proc_macro_is_built_unoptimized() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", "x86_64-unknown-linux-gnu"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut macros: Vec<&str> = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["targets"].as_array().unwrap().iter().any(|t| t["kind"] == serde_json::json!(["proc-macro"])))
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(macros.contains(&"serde_derive"), "no proc macro found: {macros:?}");
    macros.push("syn");
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let missing: Vec<&&str> =
        macros.iter().filter(|n| !manifest.contains(&format!("\n{n} = {{ opt-level = 0 }}"))).collect();
    assert!(missing.is_empty(), "not in Cargo.toml's [profile.dev.package] at opt-level 0: {missing:?}");
}

/// The files that only tests compile: each module declared under
/// `#[cfg(test)]` as `mod name;`, and everything beneath it.
fn test_only_files(sources: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for p in sources {
        let src = std::fs::read_to_string(p).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        let own = matches!(p.file_name().and_then(|n| n.to_str()), Some("mod.rs" | "lib.rs" | "main.rs"));
        let here = if own { p.parent().unwrap().to_path_buf() } else { p.with_extension("") };
        for w in lines.windows(2) {
            let decl = w[1].trim().strip_prefix("mod ").and_then(|m| m.strip_suffix(';'));
            if w[0].trim() == "#[cfg(test)]"
                && let Some(name) = decl
            {
                dirs.push(here.join(name));
            }
        }
    }
    sources.iter().filter(|p| dirs.iter().any(|d| *p == &d.with_extension("rs") || p.starts_with(d))).cloned().collect()
}

/// std's print macros panic when a write fails (`pagelab doctor | head -1`,
/// a terminal that hung up while a run restores, stdout on a full disk):
/// pagelab prints through `say`'s, which never do (crates/say). Tests keep
/// std's, which the harness captures.
#[test]
fn no_std_print_macro_outside_tests() {
    let all = sources();
    let tests = test_only_files(&all);
    assert!(tests.iter().any(|p| p.ends_with("src/lab_sim.rs")), "test-only files not found: {tests:?}");
    let mut found = Vec::new();
    for p in all.iter().filter(|p| !tests.contains(p) && !p.starts_with(root().join("crates/say"))) {
        let code = code_only(&std::fs::read_to_string(p).unwrap());
        let lines: Vec<&str> = code.lines().collect();
        for (k, l) in lines[..tests_start(&lines)].iter().enumerate() {
            let b: Vec<char> = l.chars().collect();
            for m in ["println!", "print!", "eprintln!", "eprint!"] {
                let hit = l.match_indices(m).any(|(at, _)| {
                    let i = l[..at].chars().count();
                    !ident_before(&b, i) && l[at + m.len()..].trim_start().starts_with(['(', '[', '{'])
                });
                if hit {
                    found.push(format!("{}:{}: {m}", rel(p), k + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "std's print macros (use say::outln!, say::out!, say::errln!, say::err!): {found:#?}");
}
