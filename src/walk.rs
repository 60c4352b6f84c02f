//! A walk over [`experiments::ALL`] for every piece the binary gives each
//! experiment: its subcommand and help, its schema blocks, its lab step, its
//! report section and its docs page (docs/development.md). An experiment is
//! one folder in crates/experiments/src and one line in that list; a piece
//! forgotten fails here.

use experiments::{ALL, Need, affected_by, worker};

mod tests {
    use super::*;
    use crate::lab::{Machine, Scale};

    #[test]
    fn each_step_is_its_own_experiments() {
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        for e in ALL {
            for scale in [Scale::Smoke, Scale::Quick, Scale::Full] {
                assert_eq!((e.lab_step)(&m, scale, None).experiment, e.name());
            }
        }
    }

    /// Every lab step, at every scale and with or without root, parses through
    /// the real command line (a flag renamed or a bound tightened in a
    /// command fails here, not in a lab).
    #[test]
    fn every_lab_step_parses_through_the_command_line() {
        for root in [true, false] {
            let m = Machine { root, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
            for e in ALL {
                for (scale, budget) in
                    [Scale::Smoke, Scale::Quick, Scale::Full].into_iter().flat_map(|s| [(s, None), (s, Some(1e6))])
                {
                    let s = (e.lab_step)(&m, scale, budget);
                    let argv = ["pagelab", e.name()].into_iter().map(String::from).chain(s.argv());
                    let argv: Vec<String> = argv.chain(["--out".to_string(), "/nonexistent/x".to_string()]).collect();
                    if let Err(err) = crate::cli::command().try_get_matches_from(&argv) {
                        panic!("{} ({scale:?}): {argv:?}: {err}", e.name());
                    }
                }
            }
        }
    }

    #[test]
    fn needs_name_their_experiment() {
        for e in ALL {
            assert!(e.needs.iter().all(|(_, what)| what.starts_with(e.name())), "{}", e.name());
        }
        assert_eq!(
            affected_by(Need::Root),
            ["eat (zram, cgroup trim)", "wscap", "thrash", "jank", "assess --trim zram", "rightsize (batch)"]
        );
        assert!(affected_by(Need::MemoryCgroup).contains(&"mapping --pressure"));
    }

    /// Each experiment in the list has every piece the house gives one: its
    /// subcommand with help, its blocks in the schemas, a lab step, its report
    /// section (figures and claims named after it), and its docs page linked
    /// from the README. A piece forgotten (or a docs page removed) fails here.
    #[test]
    fn every_experiment_has_its_help_schema_lab_step_report_and_docs() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let mut cli = crate::cli::command();
        let help = cli.render_long_help().to_string();
        let run_schema: serde_json::Value = serde_json::from_str(&read("schema/run.schema.json")).unwrap();
        let out_schema = read("schema/experiment-output.schema.json");
        let readme = read("README.md");
        let m = Machine { root: true, cpus: 2, ram_bytes: 24 << 30, swap_active: false };
        for e in ALL {
            let name = e.name();
            let sub = cli.find_subcommand(name).unwrap_or_else(|| panic!("{name}: no subcommand"));
            assert!(sub.get_about().is_some_and(|a| !a.to_string().is_empty()), "{name}: no help line");
            assert!(help.contains(&format!("  {name}")), "{name}: not in pagelab --help");
            assert!(
                run_schema["$defs"].get(format!("{name}_result")).is_some(),
                "{name}: no $defs/{name}_result in schema/run.schema.json"
            );
            assert!(
                out_schema.contains(&format!("\"const\": \"{name}\"")),
                "{name}: not in experiment-output.schema.json"
            );
            assert_eq!((e.lab_step)(&m, Scale::Quick, None).experiment, name, "{name}: lab step");
            assert!(!e.report.study().is_empty(), "{name}: no study");
            // Findings, or a reason for none (rightsize: its answer is verified by its own pairs).
            assert_eq!(
                e.report.claims().is_empty(),
                e.report.no_findings().is_some(),
                "{name}: no claims and no reason for none, or both"
            );
            for c in e.report.claims() {
                assert!(c.id.starts_with(&format!("{name}.")), "{name}: claim {} is not named after it", c.id);
            }
            let page = format!("docs/{name}.md");
            assert!(root.join(&page).is_file(), "{name}: no {page}");
            assert!(read(&page).contains(&format!("pagelab {name}")), "{page} does not show `pagelab {name}`");
            assert!(readme.contains(&format!("]({page})")), "{name}: README does not link {page}");
        }
    }

    /// The published schemas are what the experiments' types make of them, byte for byte (generated: keys sorted, two-space indent);
    /// `PAGELAB_BLESS=1` rewrites them (after a fragment changed, or an
    /// experiment was added).
    #[test]
    fn schemas_are_assembled_from_each_experiments_fragment() {
        use experiments::kit::schema::{Doc, assemble};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let frags = experiments::schema_fragments().unwrap();
        for doc in Doc::ALL {
            let path = root.join(doc.path());
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            // The file is generated: byte for byte what assembling the
            // fragments on the document's own type writes.
            let want = serde_json::to_string_pretty(&assemble(doc, &doc.envelope(), &frags)).unwrap() + "\n";
            if want == text {
                continue;
            }
            if std::env::var_os("PAGELAB_BLESS").is_some() {
                std::fs::write(&path, want).unwrap();
                eprintln!("rewrote {}", doc.path());
            } else {
                panic!(
                    "{} is not what the experiments' types make of it; \
                     run PAGELAB_BLESS=1 cargo test --bin pagelab schemas",
                    doc.path()
                );
            }
        }
    }

    /// The `--json` documents whose schema is generated whole from their
    /// type ([`experiments::kit::schema::whole`]), byte for byte as the
    /// published file (issue 60: no schema written by hand);
    /// `PAGELAB_BLESS=1` rewrites them.
    #[test]
    fn whole_schemas_are_what_their_types_make() {
        use experiments::kit::schema::{finite, one_of, part, whole};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let docs = [
            (
                "schema/restore-output.schema.json",
                whole::<sandbox::journal::RestoreReport>(
                    "pagelab/schema/restore-output.schema.json",
                    "pagelab restore --json",
                ),
            ),
            (
                "schema/doctor-output.schema.json",
                whole::<crate::doctor::DoctorReport>(
                    "pagelab/schema/doctor-output.schema.json",
                    "pagelab doctor --json",
                ),
            ),
            (
                "schema/compare-output.schema.json",
                whole::<report::compare::CompareReport>(
                    "pagelab/schema/compare-output.schema.json",
                    "pagelab compare --json",
                ),
            ),
            (
                "schema/lab.schema.json",
                whole::<crate::lab::LabOutput>("pagelab/schema/lab.schema.json", "pagelab lab.json (and lab --json)"),
            ),
            (
                "schema/lab-plan.schema.json",
                whole::<crate::lab::LabPlan>("pagelab/schema/lab-plan.schema.json", "pagelab lab --dry-run --json"),
            ),
            (
                "schema/findings.schema.json",
                part::<report::verdict::Findings<'static>>("pagelab/schema/findings.schema.json", "pagelab findings"),
            ),
            (
                "schema/report-output.schema.json",
                one_of(
                    "pagelab/schema/report-output.schema.json",
                    "pagelab report --json",
                    "One of: a run's timeline and summary; a lab's report.html; the files --openmetrics and --bmf wrote.",
                    vec![
                        whole::<crate::report_cmd::RunReportOutput<'static>>("", ""),
                        whole::<crate::report_cmd::LabReportOutput<'static>>("", ""),
                        whole::<crate::report_cmd::ExportOutput>("", ""),
                    ],
                ),
            ),
            ("schema/bmf.schema.json", {
                let mut v = part::<report::openmetrics::Bmf>(
                    "pagelab/schema/bmf.schema.json",
                    "pagelab report --bmf (Bencher Metric Format)",
                );
                finite(&mut v);
                v
            }),
            (
                "schema/record-output.schema.json",
                whole::<crate::record_cmd::RecordOutput>(
                    "pagelab/schema/record-output.schema.json",
                    "pagelab record --json",
                ),
            ),
        ];
        // Every published schema is generated: these, and the two the
        // experiments' fragments assemble (the test above).
        let mut generated: Vec<&str> = docs.iter().map(|(p, _)| *p).collect();
        generated.extend(["schema/run.schema.json", "schema/experiment-output.schema.json"]);
        generated.sort();
        let mut published: Vec<String> = std::fs::read_dir(root.join("schema"))
            .unwrap()
            .map(|e| format!("schema/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        published.sort();
        assert_eq!(published, generated, "a schema under schema/ that no type makes (issue 60: none by hand)");
        for (path, schema) in docs {
            let want = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            let text = std::fs::read_to_string(root.join(path)).unwrap_or_default();
            if want == text {
                continue;
            }
            if std::env::var_os("PAGELAB_BLESS").is_some() {
                std::fs::write(root.join(path), want).unwrap();
                eprintln!("rewrote {path}");
            } else {
                panic!("{path} is not what its type makes of it; run PAGELAB_BLESS=1 cargo test --bin pagelab schemas");
            }
        }
    }

    #[test]
    fn worker_kinds_are_unique_and_found() {
        let kinds: Vec<&str> = ALL.iter().flat_map(|e| e.workers).map(|(k, _)| *k).collect();
        let mut d = kinds.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), kinds.len(), "{kinds:?}");
        assert!(kinds.iter().all(|k| worker(k).is_some()));
        assert!(worker("nope").is_none());
    }
}
