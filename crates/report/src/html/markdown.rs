//! The report's Markdown: its tables as Markdown (`report --markdown`), and
//! Markdown rendered to HTML within bounds a crafted file cannot pass.

use super::*;

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
    if let Some(m) = &r.control {
        let _ = writeln!(o, "**This is {}**\n", m.sentence().replace('|', "/"));
    }
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
