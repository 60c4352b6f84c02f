//! What report.html embeds from a run directory: its charts, as images of
//! data URIs, within bounds on their number and size.

use super::*;

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
pub(super) fn base64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}
