//! `pagelab compare`: the headline metrics of two or more runs (or labs) side by
//! side, with the % change and whether it exceeds the run-to-run noise (Welch's
//! t-test on the repeats, Holm-corrected across the metrics of a comparison).

use crate::headline::Metric;
use crate::html::{Report, esc};
use record::stats;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The difference exceeds the noise (significant after Holm) and the minimum change.
    Differs,
    /// Significant, but smaller than the minimum change that matters.
    TooSmall,
    /// Within the run-to-run noise.
    Same,
    /// Fewer than two values on a side: no test possible.
    Untested,
    OnlyA,
    OnlyB,
}

impl Call {
    pub fn word(self) -> &'static str {
        match self {
            Call::Differs => "DIFFERS",
            Call::TooSmall => "below min change",
            Call::Same => "within noise",
            Call::Untested => "one run: untested",
            Call::OnlyA => "only in A",
            Call::OnlyB => "only in B",
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Row {
    pub experiment: String,
    pub group: String,
    pub metric: String,
    pub unit: String,
    pub lower_is_better: bool,
    pub a_median: Option<f64>,
    pub b_median: Option<f64>,
    pub a_n: usize,
    pub b_n: usize,
    /// CV across each side's repeats (None for one repeat).
    pub a_cv: Option<f64>,
    pub b_cv: Option<f64>,
    /// Both sides meet the stability contract (n ≥ 2, CV ≤ 5 %).
    pub stable: bool,
    /// Each side meets it.
    pub a_stable: bool,
    pub b_stable: bool,
    /// (B − A) ÷ A of the medians, in %.
    pub change_pct: Option<f64>,
    pub welch_t: Option<f64>,
    pub welch_df: Option<f64>,
    pub p: Option<f64>,
    pub call: Call,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub alpha: f64,
    pub min_change_pct: f64,
    /// Environment fields that differ between A and B, as (field, A, B).
    pub environment: Vec<(String, String, String)>,
    pub rows: Vec<Row>,
}

impl Comparison {
    pub fn differing(&self) -> usize {
        self.rows.iter().filter(|r| r.call == Call::Differs).count()
    }
}

/// What `pagelab compare --json` prints (schema/compare-output.schema.json
/// is generated from this type).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CompareReport {
    /// Each directory after the first against the first.
    pub comparisons: Vec<Comparison>,
    /// With three or more directories: one table, a column each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<Table>,
}

/// Every headline metric of a report (all its runs).
pub fn all_metrics(r: &Report) -> Vec<Metric> {
    r.sections.iter().flat_map(|s| s.metrics()).collect()
}

/// The environment's fields that tell two machines apart, each as JSON
/// writes it (`null` for a report with no run).
fn env_of(r: &Report) -> Vec<(&'static str, String)> {
    // Through a JSON value: an object's keys in sorted order, as before.
    fn j<T: serde::Serialize>(x: &T) -> String {
        serde_json::to_value(x).map(|v| v.to_string()).unwrap_or_else(|_| "null".into())
    }
    let Some(e) = r.environment() else {
        return ENV_KEYS.iter().map(|k| (*k, "null".to_string())).collect();
    };
    let v = [
        j(&e.hostname),
        j(&e.kernel),
        j(&e.cpu_model),
        j(&e.cpus),
        j(&e.ram_bytes),
        j(&e.thp),
        j(&e.swappiness),
        j(&e.memory_controller),
        j(&e.zswap),
    ];
    ENV_KEYS.iter().copied().zip(v).collect()
}

const ENV_KEYS: [&str; 9] =
    ["hostname", "kernel", "cpu_model", "cpus", "ram_bytes", "thp", "swappiness", "memory_controller", "zswap"];

/// The configuration that tells runs apart beyond the environment: the store
/// each run used (backing and compressor), per experiment.
fn stores(r: &Report) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for s in &r.sections {
        for st in s.stores() {
            if let Some(b) = &st.backing {
                let c = st.compressor.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
                let e = (format!("{} store", s.experiment), format!("{b}{c}"));
                if !v.contains(&e) {
                    v.push(e);
                }
            }
        }
    }
    v
}

fn env_diff(a: &Report, b: &Report) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for ((k, x), (_, y)) in env_of(a).into_iter().zip(env_of(b)) {
        if x != y {
            out.push((k.to_string(), x, y));
        }
    }
    let (sa, sb) = (stores(a), stores(b));
    let join = |v: &[(String, String)], k: &str| {
        v.iter().filter(|(n, _)| n == k).map(|(_, s)| s.clone()).collect::<Vec<_>>().join(", ")
    };
    let mut keys: Vec<String> = sa.iter().chain(&sb).map(|(k, _)| k.clone()).collect();
    keys.dedup();
    for k in keys {
        let (x, y) = (join(&sa, &k), join(&sb, &k));
        if x != y {
            out.push((k, x, y));
        }
    }
    out
}

/// Compares B against A. `alpha` is the family-wise level of the Holm
/// correction; `min_change_pct` the smallest change of the medians called a difference.
pub fn compare(a: &Report, b: &Report, alpha: f64, min_change_pct: f64) -> Comparison {
    let (ma, mb) = (all_metrics(a), all_metrics(b));
    let mut rows = Vec::new();
    let mut tests = Vec::new();
    for x in &ma {
        let y = mb.iter().find(|y| y.key() == x.key());
        let w = y.and_then(|y| stats::welch(&x.values, &y.values));
        tests.push(w.map(|w| w.p));
        rows.push(row(x, y, w));
    }
    for y in mb.iter().filter(|y| !ma.iter().any(|x| x.key() == y.key())) {
        let mut r = row(y, None, None);
        std::mem::swap(&mut r.a_median, &mut r.b_median);
        std::mem::swap(&mut r.a_n, &mut r.b_n);
        std::mem::swap(&mut r.a_cv, &mut r.b_cv);
        std::mem::swap(&mut r.a_stable, &mut r.b_stable);
        r.call = Call::OnlyB;
        tests.push(None);
        rows.push(r);
    }
    let significant = stats::claim::holm(&tests, alpha);
    for (r, sig) in rows.iter_mut().zip(significant) {
        if r.call == Call::Untested && r.p.is_some() {
            r.call = if !sig {
                Call::Same
            } else if r.change_pct.is_some_and(|c| c.abs() >= min_change_pct) {
                Call::Differs
            } else {
                Call::TooSmall
            };
        }
    }
    Comparison {
        a: a.dir.display().to_string(),
        b: b.dir.display().to_string(),
        alpha,
        min_change_pct,
        environment: env_diff(a, b),
        rows,
    }
}

fn row(x: &Metric, y: Option<&Metric>, w: Option<stats::Welch>) -> Row {
    let (am, bm) = (x.median(), y.and_then(Metric::median));
    Row {
        experiment: x.experiment.clone(),
        group: x.group.clone(),
        metric: x.name.to_string(),
        unit: x.unit.to_string(),
        lower_is_better: x.lower_is_better,
        a_median: am,
        b_median: bm,
        a_n: x.values.len(),
        b_n: y.map(|y| y.values.len()).unwrap_or(0),
        a_cv: x.cv(),
        b_cv: y.and_then(Metric::cv),
        stable: x.stable() && y.is_some_and(Metric::stable),
        a_stable: x.stable(),
        b_stable: y.is_some_and(Metric::stable),
        change_pct: match (am, bm) {
            (Some(a), Some(b)) if a != 0.0 => Some((b - a) / a.abs() * 100.0),
            (Some(a), Some(b)) if a == b => Some(0.0),
            _ => None,
        },
        welch_t: w.map(|w| w.t),
        welch_df: w.map(|w| w.df),
        p: w.map(|w| w.p),
        call: if y.is_none() { Call::OnlyA } else { Call::Untested },
    }
}

fn num(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.1 => format!("{v:.3}"),
        Some(v) => format!("{v:.4}"),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|c| format!("{c:+.1}%")).unwrap_or("-".into())
}

fn pval(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 0.0001 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

/// Whether the change is for the better, for a reader scanning the table.
fn direction(r: &Row) -> &'static str {
    match (r.change_pct, r.call) {
        (Some(c), Call::Differs) if (c < 0.0) == r.lower_is_better => " (better)",
        (Some(_), Call::Differs) => " (worse)",
        _ => "",
    }
}

const HEAD: [&str; 10] =
    ["experiment", "configuration", "metric", "A median", "B median", "change", "n A/B", "CV A/B", "p", "call"];

fn cvs(r: &Row) -> String {
    let c = |x: Option<f64>| x.map(|c| format!("{:.1}%", 100.0 * c)).unwrap_or("-".into());
    format!("{}/{}{}", c(r.a_cv), c(r.b_cv), if r.stable || r.b_n == 0 { "" } else { " unstable" })
}

fn cells(r: &Row) -> [String; 10] {
    [
        r.experiment.clone(),
        r.group.clone(),
        r.metric.clone(),
        num(r.a_median),
        num(r.b_median),
        pct(r.change_pct),
        format!("{}/{}", r.a_n, r.b_n),
        cvs(r),
        pval(r.p),
        format!("{}{}", r.call.word(), direction(r)),
    ]
}

fn legend(c: &Comparison) -> String {
    format!(
        "CV: across each side's repeats; 'unstable' where either is above 5 % (or has one repeat): such a \
change is shown but is no finding. p: Welch's t-test on the repeats (two-sided); DIFFERS: significant at α = {} after Holm's correction over \
the {} tested metrics, and the medians differ by at least {}%.",
        c.alpha,
        c.rows.iter().filter(|r| r.p.is_some()).count(),
        c.min_change_pct
    )
}

pub fn text(c: &Comparison) -> String {
    let mut o = format!("A: {}\nB: {}\n", c.a, c.b);
    for (k, x, y) in &c.environment {
        let _ = writeln!(o, "  {k}: {x} → {y}");
    }
    let rows: Vec<[String; 10]> = c.rows.iter().map(cells).collect();
    let mut w = HEAD.map(|h| h.chars().count());
    for r in &rows {
        for (i, x) in r.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, x) in cells.iter().enumerate() {
            let pad = w[i] - x.chars().count();
            if (3..8).contains(&i) {
                s += &format!("{}{x}  ", " ".repeat(pad));
            } else {
                s += &format!("{x}{}  ", " ".repeat(pad));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    o += &line(&HEAD.map(String::from));
    for r in &rows {
        o += &line(r);
    }
    let _ = writeln!(o, "{} of {} metrics differ. {}", c.differing(), c.rows.len(), legend(c));
    o
}

pub fn markdown(c: &Comparison) -> String {
    let mut o = format!("## `{}` → `{}`\n\n", c.a, c.b);
    if !c.environment.is_empty() {
        o += "| what differs | A | B |\n|---|---|---|\n";
        for (k, x, y) in &c.environment {
            let _ = writeln!(o, "| {k} | {} | {} |", x.replace('|', "/"), y.replace('|', "/"));
        }
        o.push('\n');
    }
    let _ = writeln!(o, "| {} |\n|{}", HEAD.join(" | "), "---|".repeat(HEAD.len()));
    for r in &c.rows {
        let mut cs = cells(r);
        if r.call == Call::Differs {
            cs[9] = format!("**{}**", cs[9]);
        }
        let _ = writeln!(o, "| {} |", cs.join(" | "));
    }
    let _ = writeln!(o, "\n{} of {} metrics differ. {}", c.differing(), c.rows.len(), legend(c));
    o
}

/// A self-contained HTML page of one or more comparisons.
pub fn html(cs: &[Comparison]) -> String {
    let mut o = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
<title>pagelab compare</title><style>body{font:14px/1.45 system-ui,sans-serif;margin:24px 40px;color:#1d1f23}\
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #d8dce3;padding:3px 8px;text-align:left}\
th{background:#f6f7f9}td.n{text-align:right;font-variant-numeric:tabular-nums}tr.differs td{background:#fdecea}\
.muted{color:#5b6270}</style></head><body>\n<h1>pagelab compare</h1>\n",
    );
    for c in cs {
        let _ = writeln!(o, "<section class=\"comparison\"><h2>A: {} → B: {}</h2>", esc(&c.a), esc(&c.b));
        if !c.environment.is_empty() {
            o += "<table><tr><th>what differs</th><th>A</th><th>B</th></tr>";
            for (k, x, y) in &c.environment {
                let _ = write!(o, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(k), esc(x), esc(y));
            }
            o += "</table>\n";
        }
        o += "<table><tr>";
        for h in HEAD {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o += "</tr>\n";
        for r in &c.rows {
            let class = if r.call == Call::Differs { " class=\"differs\"" } else { "" };
            let _ = write!(o, "<tr{class}>");
            for (i, x) in cells(r).iter().enumerate() {
                let _ = write!(o, "<td{}>{}</td>", if (3..8).contains(&i) { " class=\"n\"" } else { "" }, esc(x));
            }
            o += "</tr>\n";
        }
        let _ = writeln!(
            o,
            "</table><p class=\"muted\">{} of {} metrics differ. {}</p></section>",
            c.differing(),
            c.rows.len(),
            esc(&legend(c))
        );
    }
    o += "</body></html>\n";
    o
}

/// Many directories (one per node or kernel) in one table: a row per headline
/// metric, a column per directory, each cell its median, CV and n, and for every
/// column after the first its change and call against the first.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Table {
    /// The directories, in column order, each with its kernel and host.
    pub columns: Vec<Column>,
    pub rows: Vec<TableRow>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Column {
    pub dir: String,
    pub kernel: String,
    pub host: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TableRow {
    pub experiment: String,
    pub group: String,
    pub metric: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Cell {
    pub median: Option<f64>,
    pub n: usize,
    pub cv: Option<f64>,
    pub stable: bool,
    /// Against the first column (None in the first column).
    pub change_pct: Option<f64>,
    pub call: Option<Call>,
}

/// The table of `reports`, from their comparisons against the first
/// (`comparisons[i]` is `reports[i + 1]` against `reports[0]`).
pub fn table(reports: &[Report], comparisons: &[Comparison]) -> Table {
    let columns = reports
        .iter()
        .map(|r| {
            let e = r.environment();
            let s = |f: fn(&probe::environment::Environment) -> &String| e.map_or("?", |e| f(e).as_str()).to_string();
            Column { dir: r.dir.display().to_string(), kernel: s(|e| &e.kernel), host: s(|e| &e.hostname) }
        })
        .collect::<Vec<_>>();
    let mut rows: Vec<TableRow> = Vec::new();
    for (i, c) in comparisons.iter().enumerate() {
        for r in &c.rows {
            let at = match rows
                .iter()
                .position(|x| (&x.experiment, &x.group, &x.metric) == (&r.experiment, &r.group, &r.metric))
            {
                Some(p) => p,
                None => {
                    rows.push(TableRow {
                        experiment: r.experiment.clone(),
                        group: r.group.clone(),
                        metric: r.metric.clone(),
                        cells: vec![Cell::default(); columns.len()],
                    });
                    rows.len() - 1
                }
            };
            let row = &mut rows[at];
            if r.a_n > 0 {
                row.cells[0] =
                    Cell { median: r.a_median, n: r.a_n, cv: r.a_cv, stable: r.a_stable, change_pct: None, call: None };
            }
            row.cells[i + 1] = Cell {
                median: r.b_median,
                n: r.b_n,
                cv: r.b_cv,
                stable: r.b_stable,
                change_pct: r.change_pct,
                call: Some(r.call),
            };
        }
    }
    Table { columns, rows }
}

fn cell_text(c: &Cell, first: bool) -> String {
    if c.n == 0 {
        return "-".into();
    }
    let cv = c.cv.map(|v| format!(" ±{:.1}%", 100.0 * v)).unwrap_or_default();
    let unstable = if c.stable { "" } else { " unstable" };
    let mut s = format!("{}{cv} n={}{unstable}", num(c.median), c.n);
    if !first {
        match c.call {
            Some(Call::Differs) => s += &format!(" {} DIFFERS", pct(c.change_pct)),
            Some(Call::OnlyB) | None => {}
            Some(k) => s += &format!(" {} {}", pct(c.change_pct), k.word()),
        }
    }
    s
}

fn letter(i: usize) -> String {
    if i < 26 { ((b'A' + i as u8) as char).to_string() } else { format!("#{}", i + 1) }
}

/// The table as aligned text, with a legend naming each column.
pub fn table_text(t: &Table, alpha: f64, min_change_pct: f64) -> String {
    let mut o = String::new();
    for (i, c) in t.columns.iter().enumerate() {
        let _ = writeln!(o, "{}: {} (kernel {}, host {})", letter(i), c.dir, c.kernel, c.host);
    }
    let mut head = vec!["experiment".to_string(), "configuration".into(), "metric".into()];
    head.extend((0..t.columns.len()).map(letter));
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            let mut v = vec![r.experiment.clone(), r.group.clone(), r.metric.clone()];
            v.extend(r.cells.iter().enumerate().map(|(i, c)| cell_text(c, i == 0)));
            v
        })
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, x) in r.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        let mut s = String::new();
        for (i, x) in r.iter().enumerate() {
            s += &format!("{x}{}  ", " ".repeat(w[i] - x.chars().count()));
        }
        o += s.trim_end();
        o.push('\n');
    }
    let _ = writeln!(o, "{}", table_legend(alpha, min_change_pct));
    o
}

fn table_legend(alpha: f64, min_change_pct: f64) -> String {
    format!(
        "Each cell: median ±CV n=repeats ('unstable' above 5 % or with one repeat: no finding), then the change against A \
and the call: DIFFERS where Welch's t-test on the repeats is significant at α = {alpha} after Holm's correction over \
that column's metrics and the medians differ by at least {min_change_pct}%."
    )
}

/// The table as Markdown.
pub fn table_markdown(t: &Table, alpha: f64, min_change_pct: f64) -> String {
    let mut o = String::from("| column | directory | kernel | host |\n|---|---|---|---|\n");
    for (i, c) in t.columns.iter().enumerate() {
        let _ = writeln!(o, "| {} | `{}` | {} | {} |", letter(i), c.dir, c.kernel, c.host);
    }
    let letters: Vec<String> = (0..t.columns.len()).map(letter).collect();
    let _ = write!(
        o,
        "\n| experiment | configuration | metric | {} |\n|---|---|---|{}\n",
        letters.join(" | "),
        "---|".repeat(letters.len())
    );
    for r in &t.rows {
        let cells: Vec<String> = r
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let s = cell_text(c, i == 0).replace('|', "/");
                if c.call == Some(Call::Differs) { format!("**{s}**") } else { s }
            })
            .collect();
        let _ = writeln!(o, "| {} | {} | {} | {} |", r.experiment, r.group, r.metric, cells.join(" | "));
    }
    let _ = writeln!(o, "\n{}", table_legend(alpha, min_change_pct));
    o
}
