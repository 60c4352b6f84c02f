//! The page itself: its CSS, its sections (findings, environment, each
//! experiment's) and the notes.

use super::*;

const CSS: &str = "
:root{--fg:#1d1f23;--muted:#5b6270;--line:#d8dce3;--bg:#fff;--panel:#f6f7f9;--ok:#1a7f37;--bad:#b3261e;--na:#8a6d00}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);background:var(--bg)}
header{padding:28px 40px 12px;border-bottom:1px solid var(--line)}
header h1{margin:0 0 4px;font-size:26px}
header p{margin:0;color:var(--muted)}
nav{padding:8px 40px;border-bottom:1px solid var(--line);position:sticky;top:0;background:var(--bg);z-index:1}
nav a{margin-right:18px;color:#0b57d0;text-decoration:none}
main{padding:0 40px 40px;max-width:1280px}
section{margin-top:28px}
h2{font-size:21px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:17px;margin-top:22px}
h4{font-size:15px}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13.5px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--panel)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto}
pre{background:var(--panel);padding:10px;overflow-x:auto;font-size:12px;line-height:1.35}
code{background:var(--panel);padding:0 3px;border-radius:3px}
.status{display:inline-block;padding:1px 8px;border-radius:10px;font-size:13px;font-weight:600}
.complete,.matches{color:var(--ok)}
.failed,.interrupted,.differs{color:var(--bad)}
.skipped,.not-checked{color:var(--na)}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;flex:1 1 560px;max-width:900px;border:1px solid var(--line);padding:6px;background:#fff}
figure svg,figure img{width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:12px}
.muted{color:var(--muted)}
";

fn env_table(env: &probe::environment::Environment) -> String {
    let mut o = String::from("<table>");
    let row = |k: &str, v: String| format!("<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    // Each field as its JSON reads (a string bare, none as "-").
    fn s<T: serde::Serialize>(x: &T) -> String {
        match serde_json::to_value(x).unwrap_or(Value::Null) {
            Value::String(s) => s,
            Value::Null => "-".into(),
            other => other.to_string(),
        }
    }
    o += &row("host", env.hostname.clone());
    o += &row("kernel", env.kernel.clone());
    o += &row("CPU", format!("{} × {}", env.cpus, env.cpu_model));
    o += &row("RAM", units::bytes(env.ram_bytes));
    o += &row("page size", env.page_size.to_string());
    o += &row("transparent huge pages", s(&env.thp));
    o += &row("swappiness / page-cluster", format!("{} / {}", s(&env.swappiness), s(&env.page_cluster)));
    o += &row("cgroups", format!("{}, memory controller {}", s(&env.cgroup_layout), s(&env.memory_controller)));
    o += &row("PSI", env.psi.to_string());
    o += &row("swap areas at the start", env.swaps.len().to_string());
    let z = &env.zswap;
    o += &row(
        "zswap",
        if z.present {
            format!(
                "present, {}, compressor {}, max pool {} %",
                if z.enabled == Some(true) { "on" } else { "off" },
                s(&z.compressor),
                s(&z.max_pool_percent)
            )
        } else {
            "absent".into()
        },
    );
    o += "</table>\n";
    o
}

fn doctor_table(d: &crate::lab::Doctor) -> String {
    let mut o = String::from(
        "<table><thead><tr><th>check</th><th>status</th><th>detail</th><th>affects</th></tr></thead><tbody>",
    );
    for c in d.checks.iter().take(MAX_NOTES) {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.name),
            esc(&c.status.replace('_', " ")),
            esc(&c.detail),
            esc(&c.affects.join(", "))
        );
    }
    o += "</tbody></table>\n";
    o
}

/// The whole self-contained page.
pub fn html(r: &Report) -> String {
    let env = r.environment();
    let host = env.map_or("?", |e| e.hostname.as_str()).to_string();
    let when = r
        .lab
        .as_ref()
        .map(|l| l.started_unix_ms)
        .or_else(|| r.sections.iter().find_map(|s| s.record.as_ref().map(|x| x.run.started_unix_ms)))
        .map(utc)
        .unwrap_or_default();
    let title = match &r.lab {
        Some(l) => format!("pagelab lab --{} on {host}", l.mode),
        None => format!("pagelab {} on {host}", r.sections.first().map(|s| s.experiment.as_str()).unwrap_or("run")),
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"pagelab {}\">\n\
<title>{}</title>\n<style>{CSS}</style></head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&title)
    );
    let _ = writeln!(o, "<header><h1>{}</h1>", esc(&title));
    let mut sub =
        format!("{when} · kernel {} · {}", env.map_or("?", |e| e.kernel.as_str()), esc(&r.dir.display().to_string()));
    if let Some(l) = &r.lab {
        sub += &format!(
            " · {} · {}",
            if l.root { "as root" } else { "without root" },
            l.wall_s.map(|w| format!("wall time {}", fmt_secs(w))).unwrap_or("not finished".into())
        );
    }
    let _ = writeln!(o, "<p>{}</p></header>", esc(&sub));
    if let Some(m) = &r.control {
        let _ = writeln!(o, "<p class=\"control\"><strong>This is {}</strong></p>", esc(&m.sentence()));
    }
    o += "<nav><a href=\"#findings\">Findings</a><a href=\"#summary\">Summary</a><a href=\"#environment\">Environment</a>";
    for s in &r.sections {
        let _ = write!(o, "<a href=\"#exp-{0}\">{0}</a>", esc(&s.experiment));
    }
    o += "</nav>\n<main>\n";

    findings_html(&mut o, r);

    // Summary.
    o += "<section id=\"summary\"><h2>Summary</h2>\n<div class=\"scroll\"><table id=\"headline\"><thead><tr>";
    for h in SUMMARY_HEAD {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o += "</tr></thead><tbody>\n";
    for (row, s) in summary_rows(r).iter().zip(&r.sections) {
        let _ = writeln!(
            o,
            "<tr><td><a href=\"#exp-{0}\">{0}</a></td><td class=\"{1}\">{2}</td><td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            esc(&row[0]),
            esc(&s.state),
            esc(&row[1]),
            esc(&row[2]),
            esc(&row[3]),
            esc(&row[4])
        );
    }
    o += "</tbody></table></div>\n";
    if let Some(l) = &r.lab {
        for n in l.notes.iter().take(MAX_NOTES) {
            let _ = writeln!(o, "<p class=\"muted\">{}</p>", esc(n));
        }
    }
    o += "</section>\n";

    environment_html(&mut o, r);

    for s in &r.sections {
        section_html(&mut o, s, r.lab.as_ref());
    }
    o += "</main>\n</body></html>\n";
    o
}

/// Every finding's interval against its region (the tables are per experiment).
fn findings_html(o: &mut String, r: &Report) {
    let findings = r.findings();
    if let Some(svg) = crate::finding_chart::svg(&findings) {
        let f = verdict::Findings::of(findings).with_passes(r.alpha_by_pass());
        let _ = writeln!(
            *o,
            "<section id=\"findings\"><h2>Findings</h2>\n<p>{} of {} findings this run could check are decided \
             ({} match, {} differ). Each is a claim fixed before the data, judged by its 95 % interval against the \
             study's acceptance region. Each study's findings are one family, and pagelab's own checks another \
             ({}): Holm's correction inside each keeps the chance of any wrong verdict about a study at 5 %{} (<a \
             href=\"#exp-{}\">tables below</a>; each table shows the unadjusted interval).{}{}</p>\n<div \
             class=\"scroll\">{svg}</div></section>",
            f.decided,
            f.checkable,
            f.findings.iter().filter(|x| x.verdict.outcome == Outcome::Matches).count(),
            f.findings.iter().filter(|x| x.verdict.outcome == Outcome::Differs).count(),
            esc(&f.families.iter().map(|x| format!("{} {}", x.name, x.size)).collect::<Vec<_>>().join(", ")),
            if f.alpha_by_pass.len() > 1 {
                format!(
                    ", split between the lab's passes ({} %)",
                    f.alpha_by_pass
                        .iter()
                        .map(|a| record::stats::claim::num(100.0 * a))
                        .collect::<Vec<_>>()
                        .join(" + ")
                )
            } else {
                String::new()
            },
            esc(f.findings.first().map_or("", |x| x.experiment)),
            r.lab.as_ref().map(|l| noise_line(&crate::lab::Doctor::from_json(&l.doctor))).unwrap_or_default(),
            if f.checks > 0 {
                format!(
                    " Apart from them, {} checks (values the configuration fixes, identical in every repeat: \
                     evidence of nothing but the set-up) passed {} of {}.",
                    f.checks, f.checks_passed, f.checks
                )
            } else {
                String::new()
            },
        );
    }
}

/// The environment: the machine, the lab's command line and doctor's checks.
fn environment_html(o: &mut String, r: &Report) {
    let env = r.environment();
    *o += "<section id=\"environment\"><h2>Environment</h2>\n";
    match env {
        Some(e) => *o += &env_table(e),
        None => *o += "<p class=\"muted\">No run of this report recorded its environment.</p>\n",
    }
    if let Some(l) = &r.lab {
        let _ = writeln!(
            *o,
            "<p>Command: <code>{}</code>. Planned for {} CPUs and {} of RAM, {}.</p>",
            esc(&l.command_line.join(" ")),
            l.cpus,
            units::bytes(l.ram_bytes),
            if l.root { "as root" } else { "without root" }
        );
        let doctor = crate::lab::Doctor::from_json(&l.doctor);
        let limited = doctor.checks.iter().any(|c| !c.affects.is_empty());
        let _ = writeln!(
            *o,
            "<details{}><summary>pagelab doctor: {}</summary>",
            if limited { " open" } else { "" },
            if limited { "some experiments are limited on this machine" } else { "everything is available" }
        );
        *o += &doctor_table(&doctor);
        *o += "</details>\n";
    }
    *o += "</section>\n";
}

fn section_html(o: &mut String, s: &Section, lab: Option<&Lab>) {
    let _ = writeln!(
        o,
        "<section id=\"exp-{0}\" class=\"experiment\" data-experiment=\"{0}\" data-state=\"{1}\">\n<h2>{0} <span class=\"status {1}\">{1}</span></h2>",
        esc(&s.experiment),
        esc(&s.state)
    );
    let _ = writeln!(o, "<p class=\"muted\">Reproduces: {}.</p>", esc(s.exp.map_or("", |e| e.study())));
    if let Some(why) = &s.reason {
        let _ = writeln!(o, "<p><strong>{}:</strong> {}</p>", esc(&s.state), esc(why));
    }
    if let Some(note) = &s.note {
        let _ = writeln!(o, "<p><strong>In part:</strong> {}</p>", esc(note));
    }
    if let Some(step) = lab.and_then(|l| l.steps.iter().find(|x| x.experiment == s.experiment)) {
        let _ = writeln!(
            o,
            "<p class=\"muted\">Command: <code>pagelab {} {}</code>{}</p>",
            esc(&step.experiment),
            esc(&step.argv().join(" ")),
            s.seconds.map(|x| format!("; took {}", fmt_secs(x))).unwrap_or_default()
        );
    }
    let Some(rec) = &s.record else {
        o.push_str("</section>\n");
        return;
    };
    let v = s.verdicts();
    if let (true, Some(why)) = (v.is_empty(), s.exp.and_then(|e| e.no_findings())) {
        let _ = writeln!(o, "<p>No finding is judged: {}.</p>", esc(why));
    }
    if !v.is_empty() {
        o.push_str("<h3>Against the published study</h3>\n<div class=\"scroll\"><table class=\"verdicts\"><thead><tr><th>the study found</th><th>study</th><th>quantity</th><th>accepted</th><th>this run (95 % CI)</th><th></th><th>why</th></tr></thead><tbody>\n");
        for x in &v {
            let class = x.outcome.word().replace(' ', "-");
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
                esc(x.claim),
                esc(x.study),
                esc(x.quantity),
                esc(&x.acceptance),
                esc(&x.ours),
                x.outcome.word(),
                esc(&x.why)
            );
        }
        o.push_str("</tbody></table></div>\n");
    }
    let dir = s.dir.clone().unwrap_or_default();
    // Read through the directory opened once, never through a link at its
    // name (a step swapped for one after the report was loaded shows nothing).
    let open = record::rundir::OpenDir::open(&dir).ok();
    let svgs = open.as_ref().map(|d| charts(&d.path())).unwrap_or_default();
    if !svgs.is_empty() {
        o.push_str("<h3>Charts</h3>\n<div class=\"charts\">\n");
        for (i, p) in svgs.iter().enumerate() {
            let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            if i == MAX_CHARTS || o.len() > MAX_PAGE_BYTES {
                let _ = writeln!(
                    o,
                    "<figure class=\"chart\"><figcaption>{}{}: not embedded (a section shows at most {MAX_CHARTS} charts, a page at most {} MiB)</figcaption></figure>",
                    esc(&name),
                    if i == MAX_CHARTS { " and the rest" } else { "" },
                    units::whole_mib(MAX_PAGE_BYTES as u64)
                );
                if i == MAX_CHARTS {
                    break;
                }
                continue;
            }
            // A link is not followed: its target could be any file root can read.
            let img = if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file()) {
                record::rundir::read_bounded(p, MAX_EMBED_BYTES).ok().flatten().and_then(|t| chart_img(&t, &name))
            } else {
                None
            };
            match img {
                Some(img) => {
                    let _ =
                        writeln!(o, "<figure class=\"chart\">{img}<figcaption>{}</figcaption></figure>", esc(&name));
                }
                None => {
                    let _ = writeln!(
                        o,
                        "<figure class=\"chart\"><figcaption>{}: not embedded (not a readable SVG file)</figcaption></figure>",
                        esc(&name)
                    );
                }
            }
        }
        o.push_str("</div>\n");
    }
    let m = s.metrics();
    if !m.is_empty() {
        o.push_str("<h3>Headline metrics</h3>\n");
        o.push_str(&markdown_to_html(&metrics_table(&m), 0));
    }
    // The tables from the run's typed entries (the first pass's, as the
    // file `<name>.md` beside them has), not read back from that file.
    if o.len() <= MAX_PAGE_BYTES
        && let Some(e) = s.exp
        && let Some((_, parsed)) = s.parsed.first()
    {
        let md = e.tables(rec, parsed);
        if md.len() as u64 > MAX_EMBED_BYTES {
            let _ = writeln!(
                o,
                "<h3>Tables</h3>\n<p class=\"muted\">Not shown: {} bytes of tables, over {MAX_EMBED_BYTES}.</p>",
                md.len()
            );
        } else if !md.trim().is_empty() {
            o.push_str("<h3>Tables</h3>\n");
            o.push_str(&markdown_to_html(&md, 2));
        }
    }
    notes_html(o, rec);
    o.push_str("</section>\n");
}

/// What a kill or a full disk left unread (issue 59), named, not hidden;
/// then the run's notes.
fn notes_html(o: &mut String, rec: &record::rundir::RunRecord) {
    if rec.skipped_lines > 0 || !rec.missing.is_empty() {
        let mut what = Vec::new();
        if rec.skipped_lines > 0 {
            what.push(format!("{} torn or unreadable JSONL line(s) skipped", rec.skipped_lines));
        }
        if !rec.missing.is_empty() {
            what.push(format!("missing: {}", rec.missing.join(", ")));
        }
        let _ = writeln!(o, "<p class=\"muted\">Not whole: {}; the rest is read.</p>", esc(&what.join("; ")));
    }
    if !rec.run.notes.is_empty() {
        o.push_str("<details><summary>Run notes</summary><ul>");
        for n in rec.run.notes.iter().take(MAX_NOTES) {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul></details>\n");
    }
}

/// The machine's noise as doctor measured it before the lab (lab.json's
/// `doctor.noise`), in a sentence; empty for labs from before the field.
fn noise_line(doctor: &crate::lab::Doctor) -> String {
    let Some(n) = doctor.noise else { return String::new() };
    let (Some(cv), Some(mm), Some(runs)) = (n.cv, n.max_over_min, n.runs) else {
        return String::new();
    };
    let steal = n.steal_fraction.map(|s| format!(", CPU steal {:.1} %", 100.0 * s)).unwrap_or_default();
    format!(
        " This machine's noise before the lab: a fixed CPU loop varied by CV {:.1} % (slowest ÷ fastest {mm:.2}, \
         {runs} runs){steal}; a ratio of arms run side by side cancels the drift it measures.",
        100.0 * cv
    )
}
