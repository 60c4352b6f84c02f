//! The self-contained HTML report: one file, inline CSS and SVG, no scripts and
//! nothing fetched when it is opened (a Content-Security-Policy says so to the
//! browser, too). Also the Markdown of the same tables.

use crate::headline::Metric;
use crate::lab::Lab;
use crate::verdict::{self, Outcome, Verdict};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::model::{Render, Report, Section, disk_full, mark_below_noise, noise_floor};

/// The longest text one field of the page shows (a note, a step's
/// arguments, a check's detail); a longer one from a crafted file is cut,
/// so that no field can make the page (or pagelab) large.
pub const MAX_FIELD_CHARS: usize = 4000;
/// The most notes one list of the page shows.
pub const MAX_NOTES: usize = 200;

/// `s` escaped for HTML, cut after [`MAX_FIELD_CHARS`] characters.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len().min(MAX_FIELD_CHARS));
    for (i, c) in s.chars().enumerate() {
        if i == MAX_FIELD_CHARS {
            let _ = write!(o, "… ({} characters)", s.chars().count());
            break;
        }
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

/// The largest Markdown file report.html renders (pagelab's own are under
/// 50 KB): GitHub's tables and nested containers make HTML larger than its
/// text, so this is less than [`MAX_EMBED_BYTES`].
pub const MAX_MARKDOWN_BYTES: u64 = 1 << 20;
/// The most table cells a Markdown file may imply (each table's header
/// columns × its rows, in all). GitHub's tables fill a short row with empty
/// cells up to the header's count, up to 2^18 cells a table in
/// pulldown-cmark: a crafted 4 MiB file of 1,446 such tables made about
/// 3.4 GB of HTML (a review, before this bound).
pub const MAX_MARKDOWN_CELLS: usize = 100_000;
/// The most container markers (`>`, list markers, indentation) a line may
/// open with: each level of a block quote is 27 bytes of HTML.
const MAX_MARKDOWN_PREFIX: usize = 64;
/// The most HTML one byte of Markdown may become before the page shows the
/// text instead (pagelab's tables: about 3).
const MAX_MARKDOWN_GROWTH: usize = 8;

/// Whether `md` is within the bounds above: its tables' implied cells and
/// its lines' container prefixes. Linear in its length.
fn markdown_is_tame(md: &str) -> bool {
    let lines: Vec<&str> = md.lines().collect();
    // The non-blank lines from each line on: a table's rows end at a blank
    // line (or sooner, which only over-counts).
    let mut run = vec![0usize; lines.len() + 1];
    for i in (0..lines.len()).rev() {
        run[i] = if lines[i].trim().is_empty() { 0 } else { run[i + 1] + 1 };
    }
    let mut cells = 0usize;
    for (i, l) in lines.iter().enumerate() {
        let prefix = l.chars().take_while(|c| c.is_whitespace() || "> -*+".contains(*c));
        if prefix.count() > MAX_MARKDOWN_PREFIX {
            return false;
        }
        let t = l.trim_start_matches(|c: char| c.is_whitespace() || c == '>');
        let delimiter = t.contains('-') && t.chars().all(|c| matches!(c, '|' | ':' | '-' | ' ' | '\t'));
        if delimiter && i > 0 {
            let columns = lines[i - 1].matches('|').count() + 1;
            cells = cells.saturating_add(columns.saturating_mul(run[i + 1] + 1));
        }
    }
    cells <= MAX_MARKDOWN_CELLS
}

/// The Markdown pagelab writes (headings, pipe tables, fenced blocks, lists,
/// paragraphs, `code` and **bold**) as HTML, by pulldown-cmark (CommonMark
/// with GitHub's tables). Headings are shifted down by `shift` levels, and
/// each table sits in a scrolling box. What a crafted file could carry into
/// the page is turned into text: raw HTML is escaped, links and images keep
/// only their text (no URL of a run directory's reaches the page), and a
/// code block's info string is dropped (it would become `<code>`'s class).
/// A file past the bounds above (its size, its tables' cells, its nesting,
/// or HTML over 8 times its size) is shown as escaped text, cut.
pub fn markdown_to_html(md: &str, shift: usize) -> String {
    let as_text = |why: &str| format!("<p class=\"muted\">{why}: shown as text</p>\n<pre>{}</pre>\n", esc(md));
    if md.len() as u64 > MAX_MARKDOWN_BYTES {
        return as_text(&format!("{} bytes of Markdown, over {MAX_MARKDOWN_BYTES}", md.len()));
    }
    if !markdown_is_tame(md) {
        return as_text(&format!(
            "tables over {MAX_MARKDOWN_CELLS} cells, or lines nested over {MAX_MARKDOWN_PREFIX} deep"
        ));
    }
    let o = markdown_events_to_html(md, shift);
    if o.len() > MAX_MARKDOWN_GROWTH * md.len() + 4096 {
        return as_text(&format!("its HTML grew to {} bytes", o.len()));
    }
    o
}

fn markdown_events_to_html(md: &str, shift: usize) -> String {
    use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
    let shifted = |l: HeadingLevel| HeadingLevel::try_from((l as usize + shift).min(6)).unwrap_or(HeadingLevel::H6);
    let events = Parser::new_ext(md, Options::ENABLE_TABLES).flat_map(|e| {
        let one = |e| vec![e];
        match e {
            Event::Start(Tag::Heading { level, .. }) => {
                one(Event::Start(Tag::Heading { level: shifted(level), id: None, classes: vec![], attrs: vec![] }))
            }
            Event::End(TagEnd::Heading(level)) => one(Event::End(TagEnd::Heading(shifted(level)))),
            Event::Start(Tag::Table(align)) => {
                vec![Event::Html("<div class=\"scroll\">".into()), Event::Start(Tag::Table(align))]
            }
            Event::End(TagEnd::Table) => vec![Event::End(TagEnd::Table), Event::Html("</div>\n".into())],
            Event::Html(h) | Event::InlineHtml(h) => one(Event::Text(h)),
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) | Event::End(TagEnd::Link | TagEnd::Image) => vec![],
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                one(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced("".into()))))
            }
            e => one(e),
        }
    });
    let mut o = String::with_capacity(md.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut o, events);
    o
}

/// The largest chart or Markdown file of a run directory report.html embeds
/// (pagelab's are under 1 MiB: a line chart draws at most 2000 points a line).
pub const MAX_EMBED_BYTES: u64 = 4 << 20;
/// The most charts one section embeds (an experiment draws a handful).
pub const MAX_CHARTS: usize = 24;
/// Past this size the page embeds no more charts or tables: what a run
/// directory holds cannot make the page (or pagelab) arbitrarily large.
pub const MAX_PAGE_BYTES: usize = 32 << 20;

/// The SVG charts of a run directory: the experiment's own first, the timeline
/// last. At most `MAX_CHARTS + 1` are listed, whatever the directory holds.
pub fn charts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "svg"))
                .take(MAX_CHARTS + 1)
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|p| (p.file_stem().is_some_and(|s| s == "timeline"), p.clone()));
    v
}

/// A run directory's SVG as report.html embeds it: an image whose source is
/// the file itself as a data URI (`<img src="data:image/svg+xml;base64,…">`),
/// which the page's policy allows (`img-src data:`). An SVG shown as an image
/// runs no script, fetches nothing and cannot change the page around it
/// (issue 46 item 3: a crafted `*.svg` inlined from `<svg` on added a meta
/// refresh and a form; a review then got markup past an element allowlist
/// with a quote in an attribute name, and hid the rest of the page with an
/// unclosed `<title>`). `None` for a file that is not an SVG.
pub fn chart_img(text: &str, alt: &str) -> Option<String> {
    let start = text.find("<svg")?;
    Some(format!("<img alt=\"{}\" src=\"data:image/svg+xml;base64,{}\">", esc(alt), base64(&text.as_bytes()[start..])))
}

/// Standard base64 with padding (RFC 4648), by the base64 crate.
fn base64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Seconds as `12.3 s` or `2 min 51 s`.
pub fn fmt_secs(s: f64) -> String {
    if s >= 90.0 {
        // Whole seconds first: 119.6 s is "2 min 00 s", not "1 min 60 s" (issue 46 item 15).
        let t = s.round() as u64;
        format!("{} min {:02} s", t / 60, t % 60)
    } else {
        format!("{s:.1} s")
    }
}

/// A few figures that say what a run found, for the summary table.
pub fn headline(s: &Section) -> String {
    let m = s.metrics();
    let parts = s.exp.map(|e| e.summary(&m)).unwrap_or_default();
    let mut out = parts.join("; ");
    let shaky = m.iter().filter(|x| !x.stable()).count();
    if shaky > 0 {
        out += &format!(" — {shaky} of {} figures vary by more than 5 % across repeats, or ran once", m.len());
    }
    out
}

fn verdict_counts(v: &[Verdict]) -> String {
    let n = |o: Outcome| v.iter().filter(|x| x.outcome == o).count();
    if v.is_empty() {
        return "-".into();
    }
    if n(Outcome::NotChecked) == v.len() {
        return "not checked: this run tested none of the study's findings".into();
    }
    let checks = n(Outcome::CheckPassed) + n(Outcome::CheckFailed);
    let checkable = v.len() - n(Outcome::NotChecked) - n(Outcome::OutsideProtocol) - checks;
    let mut s = format!(
        "{} of {checkable} decided ({} match, {} differ)",
        n(Outcome::Matches) + n(Outcome::Differs),
        n(Outcome::Matches),
        n(Outcome::Differs)
    );
    for o in [Outcome::Inconclusive, Outcome::OutsideProtocol, Outcome::NotChecked] {
        if n(o) > 0 {
            s += &format!(", {} {}", n(o), o.word());
        }
    }
    if checks > 0 {
        s += &format!("; checks: {} of {checks} passed", n(Outcome::CheckPassed));
    }
    s
}

/// The headline table as (columns, rows), shared by HTML, Markdown and text.
pub fn summary_rows(r: &Report) -> Vec<[String; 5]> {
    r.sections
        .iter()
        .map(|s| {
            let status = match (&s.reason, &s.note) {
                (Some(why), _) if s.state != "complete" => format!("{}: {why}", s.state),
                (_, Some(note)) => format!("{}, in part: {note}", s.state),
                _ => s.state.clone(),
            };
            [
                s.experiment.clone(),
                status,
                s.seconds.map(fmt_secs).unwrap_or_else(|| "-".into()),
                headline(s),
                verdict_counts(&s.verdicts()),
            ]
        })
        .collect()
}

pub const SUMMARY_HEAD: [&str; 5] = ["experiment", "status", "time", "headline figures (medians)", "published study"];

fn metrics_table(m: &[Metric]) -> String {
    let mut o =
        String::from("| configuration | metric | median | min .. max | n | CV | |\n|---|---|---|---|---|---|---|\n");
    for x in m {
        let lo = x.values.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = x.values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        // A group or a name from a run directory cannot start a row or a table.
        let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} .. {} | {} | {} | {} |",
            cell(&x.group),
            cell(x.name),
            x.median().map(fmt_num).unwrap_or("-".into()),
            fmt_num(lo),
            fmt_num(hi),
            x.values.len(),
            x.cv().map(|c| format!("{:.1} %", 100.0 * c)).unwrap_or("-".into()),
            if x.stable() { "" } else { "CV > 5 %" }
        );
    }
    o
}

fn verdict_markdown(v: &[Verdict]) -> String {
    let mut o = String::from(
        "| the study found | study | quantity | accepted | this run | | why |\n|---|---|---|---|---|---|---|\n",
    );
    for x in v {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            x.claim,
            x.study,
            x.quantity,
            x.acceptance,
            x.ours,
            x.outcome.word(),
            x.why
        );
    }
    o
}

/// The report's tables as Markdown (`pagelab report DIR --markdown`).
pub fn markdown(r: &Report) -> String {
    let mut o = String::from("# pagelab report\n\n");
    if let Some(lab) = &r.lab {
        let _ = writeln!(
            o,
            "`pagelab lab --{}`, {} CPUs, {:.1} GiB RAM, {}; {}\n",
            lab.mode,
            lab.cpus,
            lab.ram_bytes as f64 / (1u64 << 30) as f64,
            if lab.root { "as root" } else { "without root" },
            lab.wall_s.map(|w| format!("wall time {}", fmt_secs(w))).unwrap_or("not finished".into())
        );
    }
    let _ = writeln!(o, "| {} |\n|---|---|---|---|---|", SUMMARY_HEAD.join(" | "));
    for row in summary_rows(r) {
        let _ = writeln!(o, "| {} |", row.iter().map(|c| c.replace('|', "/")).collect::<Vec<_>>().join(" | "));
    }
    for s in &r.sections {
        let _ = writeln!(o, "\n## {}\n", s.experiment);
        if s.record.is_none() {
            let _ = writeln!(o, "{}: {}\n", s.state, s.reason.as_deref().unwrap_or("no run"));
            continue;
        }
        let v = s.verdicts();
        if !v.is_empty() {
            let _ = writeln!(o, "Against the published study ({}):\n", s.exp.map_or("", |e| e.study()));
            o += &verdict_markdown(&v);
            o += "\n";
        } else if let Some(why) = s.exp.and_then(|e| e.no_findings()) {
            let _ = writeln!(o, "No finding is judged: {why}.\n");
        }
        o += "Headline metrics:\n\n";
        o += &metrics_table(&s.metrics());
    }
    o
}

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
            esc(&step.args.join(" ")),
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
    if o.len() <= MAX_PAGE_BYTES
        && let Some(d) = &open
        && let Some(e) = s.exp
        && let Some(p) = d.at(&format!("{}.md", e.name()))
        && let Ok(Some(md)) = record::rundir::read_bounded(&p, MAX_EMBED_BYTES)
    {
        o.push_str("<h3>Tables</h3>\n");
        o.push_str(&markdown_to_html(&md, 2).replacen(&format!("<h3>pagelab {}</h3>\n", esc(&s.experiment)), "", 1));
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

/// Unix milliseconds as a UTC time to the minute ("2026-11-22 10:05 UTC"),
/// from humantime's RFC 3339 form.
pub fn utc(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    let s = humantime::format_rfc3339_seconds(t).to_string();
    format!("{} {} UTC", &s[..10], &s[11..16])
}

#[cfg(test)]
mod tests;
