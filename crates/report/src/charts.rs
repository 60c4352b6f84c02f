//! Charts, as SVG and PNG, with plotters and a bundled font.
//!
//! The font (DejaVu Sans, from the `dejavu` crate) is registered once at start:
//! plotters' default font lookup needs fontconfig, which a server may not have.

use plotters::prelude::*;
use record::derive::Interval;
use record::rundir::Phase;
use std::path::Path;
use std::sync::Once;

static FONT: Once = Once::new();

/// Registers the bundled font as "sans-serif".
pub fn init_font() {
    FONT.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

type DynErr = Box<dyn std::error::Error + Send + Sync>;

/// A log axis over `lo..hi` labelled at 1, 2 and 5 times the powers of ten
/// inside it ([`log_ticks`]), with a light line at each whole multiple:
/// plotters' own labels a log axis only at powers of ten, so a range inside
/// one decade (p99s of 300 – 900 ns) had one label or none.
fn log_axis(
    lo: f64,
    hi: f64,
) -> plotters::coord::combinators::WithKeyPoints<plotters::coord::combinators::LogCoord<f64>> {
    let light = decades(lo, hi).flat_map(|d| (1..10).map(move |k| k as f64 * d)).filter(|v| (lo..=hi).contains(v));
    (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)).with_light_points(light.collect::<Vec<_>>())
}

/// The powers of ten from the one at or below `lo` to the one at or below `hi`.
fn decades(lo: f64, hi: f64) -> impl Iterator<Item = f64> {
    let (a, b) = (lo.max(f64::MIN_POSITIVE).log10().floor() as i32, hi.max(f64::MIN_POSITIVE).log10().floor() as i32);
    (a..=b.max(a)).map(|e| 10f64.powi(e))
}

/// The labels of a log axis over `lo..hi`: 1, 2 and 5 times each power of
/// ten inside it; only the powers where that makes more than a dozen; and
/// where fewer than two fall inside (a range narrower than 1 to 2), evenly
/// spaced round values.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let inside = |v: &f64| (lo..=hi).contains(v);
    let mut t: Vec<f64> = decades(lo, hi).flat_map(|d| [d, 2.0 * d, 5.0 * d]).filter(inside).collect();
    if t.len() > 12 {
        t.retain(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
    }
    if t.len() < 2 {
        let step = 10f64.powf(((hi - lo) / 4.0).log10().floor());
        t = ((lo / step).ceil() as i64..=(hi / step).floor() as i64).map(|k| k as f64 * step).filter(inside).collect();
    }
    t
}

/// A log axis's label: whole numbers from 1 to 99 999 as they are, smaller
/// ones to three significant digits, the rest as powers (`2e6`, `5e-5`).
pub fn tick_label(v: &f64) -> String {
    let v = *v;
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        let digits = (2 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.digits$}");
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
    } else {
        let e = format!("{v:.2e}");
        let (m, x) = e.split_once('e').unwrap_or((&e, "0"));
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        format!("{m}e{x}")
    }
}

/// The series legend every chart uses, at `pos`.
macro_rules! legend {
    ($chart:expr, $pos:expr) => {
        $chart
            .configure_series_labels()
            .position($pos)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?
    };
}

/// A named, coloured line of (x, y) points.
type Line<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

fn err<E: std::fmt::Display>(e: E) -> DynErr {
    e.to_string().into()
}

/// The colour of RAM category `k` (record::derive::RAM_CATEGORIES).
pub fn category_color(k: usize) -> RGBColor {
    let (r, g, b) = record::derive::RAM_CATEGORIES[k].1;
    RGBColor(r, g, b)
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// Phase markers: (start time in seconds, number, name).
pub fn markers(phases: &[Phase], t0_ns: u64) -> Vec<(f64, u32, String)> {
    phases.iter().map(|p| (p.start_ns.saturating_sub(t0_ns) as f64 / 1e9, p.index, p.name.clone())).collect()
}

fn draw_timeline<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    iv: &[Interval],
    marks: &[(f64, u32, String)],
    include_free: bool,
) -> Result<(), DynErr>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let (top, bottom) = root.split_vertically(root.dim_in_pixel().1 * 68 / 100);
    let tmax = iv.last().map(|i| i.t_s).unwrap_or(1.0).max(0.001);
    let stacks: Vec<[(&str, u64); 8]> = iv.iter().map(|i| i.mem.ram_stack()).collect();
    let n_cat = if include_free { 8 } else { 7 };
    let total = |s: &[(&str, u64); 8]| s[..n_cat].iter().map(|(_, v)| v).sum::<u64>();
    let ymax = stacks.iter().map(total).max().unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..tmax, 0f64..gib(ymax) * 1.08)
        .map_err(err)?;
    chart
        .configure_mesh()
        .y_desc(if include_free { "RAM (GiB)" } else { "RAM in use (GiB; free not drawn)" })
        .x_desc("time (s)")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    // Stacked areas: draw the cumulative sums, the tallest first.
    for k in (0..n_cat).rev() {
        let pts: Vec<(f64, f64)> =
            iv.iter().zip(&stacks).map(|(i, s)| (i.t_s, gib(s[..=k].iter().map(|(_, v)| v).sum()))).collect();
        let color = category_color(k);
        let label = stacks.first().map(|s| s[k].0).unwrap_or("");
        chart
            .draw_series(AreaSeries::new(pts, 0.0, color.mix(0.85)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    let ytop = gib(ymax) * 1.05;
    // Every marker gets its line; labels go on three staggered rows, and a label
    // that would collide with the previous one on its row is left out.
    let mut last_on_row = [f64::NEG_INFINITY; 3];
    let min_gap = tmax * 0.06;
    for (i, (t, n, name)) in marks.iter().enumerate() {
        chart.draw_series(LineSeries::new(vec![(*t, 0.0), (*t, ytop)], BLACK.mix(0.5))).map_err(err)?;
        let row = i % 3;
        if *t - last_on_row[row] >= min_gap {
            last_on_row[row] = *t;
            let y = gib(ymax) * (1.05 - 0.035 * row as f64);
            chart
                .draw_series(std::iter::once(Text::new(format!("{n} {name}"), (*t, y), ("sans-serif", 12).into_font())))
                .map_err(err)?;
        }
    }
    legend!(chart, SeriesLabelPosition::MiddleRight);

    // Below: swap used, the target's swapped pages and the compressed store.
    let lines: [Line; 3] = [
        ("swap used", RGBColor(23, 190, 207), iv.iter().map(|i| (i.t_s, gib(i.mem.swap_used))).collect()),
        ("target swapped", RGBColor(214, 39, 40), iv.iter().map(|i| (i.t_s, gib(i.mem.target_swapped))).collect()),
        (
            "compressed store",
            RGBColor(148, 103, 189),
            iv.iter().map(|i| (i.t_s, gib(i.mem.compressed_store))).collect(),
        ),
    ];
    let lmax = lines.iter().flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y)).fold(0.0, f64::max).max(1.0 / 1024.0);
    let mut c2 = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..tmax, 0f64..lmax * 1.1)
        .map_err(err)?;
    c2.configure_mesh().y_desc("swap (GiB)").x_desc("time (s)").draw().map_err(err)?;
    for (name, color, pts) in lines {
        c2.draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], color.stroke_width(2)));
    }
    for (t, _, _) in marks {
        c2.draw_series(LineSeries::new(vec![(*t, 0.0), (*t, lmax * 1.05)], BLACK.mix(0.4))).map_err(err)?;
    }
    legend!(c2, SeriesLabelPosition::UpperLeft);
    root.present().map_err(err)?;
    Ok(())
}

/// Writes a timeline chart to `stem.svg` and `stem.png`: stacked RAM categories
/// with numbered phase markers, and swap below on the same time axis.
pub fn timeline(stem: &Path, title: &str, iv: &[Interval], marks: &[(f64, u32, String)]) -> Result<(), DynErr> {
    init_font();
    if iv.is_empty() {
        return Err("no intervals to draw (fewer than two samples)".into());
    }
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    svg_file(&svg, (1100, 700), |a| draw_timeline(a, title, iv, marks, false))?;
    png_file(&png, (1100, 700), |a| draw_timeline(a, title, iv, marks, false))?;
    Ok(())
}

/// One group of bars.
pub struct BarGroup {
    pub label: String,
    /// (series name, value)
    pub bars: Vec<(String, f64)>,
}

fn draw_bars<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    groups: &[BarGroup],
    log: bool,
) -> Result<(), DynErr>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let series: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for g in groups {
            for (s, _) in &g.bars {
                if !v.contains(s) {
                    v.push(s.clone());
                }
            }
        }
        v
    };
    let ng = groups.len().max(1);
    let ns = series.len().max(1);
    let vals = groups.iter().flat_map(|g| g.bars.iter().map(|(_, v)| *v)).filter(|v| v.is_finite());
    let vmax = vals.clone().fold(0.0, f64::max).max(1e-9);
    let vmin_pos = vals.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    let x_range = 0f64..ng as f64;
    let labels: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    let fmt_x = move |x: &f64| {
        let i = x.floor() as usize;
        if (x - i as f64 - 0.5).abs() < 0.01 { labels.get(i).cloned().unwrap_or_default() } else { String::new() }
    };
    macro_rules! body {
        ($chart:expr, $y0:expr) => {{
            let mut chart = $chart;
            let mut mesh = chart.configure_mesh();
            mesh.disable_x_mesh().x_labels(ng * 2 + 1).x_label_formatter(&fmt_x).y_desc(y_desc);
            if log {
                mesh.y_label_formatter(&tick_label);
            }
            mesh.draw().map_err(err)?;
            for (si, s) in series.iter().enumerate() {
                let color = palette[si % palette.len()];
                let w = 0.8 / ns as f64;
                let rects: Vec<Rectangle<(f64, f64)>> = groups
                    .iter()
                    .enumerate()
                    .filter_map(|(gi, g)| {
                        let v = g.bars.iter().find(|(n, _)| n == s)?.1;
                        if !v.is_finite() || (log && v <= 0.0) {
                            return None;
                        }
                        let x0 = gi as f64 + 0.1 + si as f64 * w;
                        Some(Rectangle::new([(x0, $y0), (x0 + w * 0.95, v)], color.filled()))
                    })
                    .collect();
                chart
                    .draw_series(rects)
                    .map_err(err)?
                    .label(s.as_str())
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
            }
            legend!(chart, SeriesLabelPosition::UpperRight);
        }};
    }
    let mut b = ChartBuilder::on(&root);
    b.caption(title, ("sans-serif", 20)).margin(10).x_label_area_size(35).y_label_area_size(70);
    if log {
        let lo = if vmin_pos.is_finite() { vmin_pos / 2.0 } else { vmax / 1e3 };
        let chart = b.build_cartesian_2d(x_range, log_axis(lo, vmax * 2.0)).map_err(err)?;
        body!(chart, lo);
    } else {
        let chart = b.build_cartesian_2d(x_range, 0f64..vmax * 1.15).map_err(err)?;
        body!(chart, 0.0);
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Writes a grouped bar chart to `stem.svg` and `stem.png`.
pub fn bars(stem: &Path, title: &str, y_desc: &str, groups: &[BarGroup], log: bool) -> Result<(), DynErr> {
    init_font();
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    svg_file(&svg, (900, 520), |a| draw_bars(a, title, y_desc, groups, log))?;
    png_file(&png, (900, 520), |a| draw_bars(a, title, y_desc, groups, log))?;
    Ok(())
}

/// The axes of a line chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    LogY,
    LogLog,
}

/// The most points a line of a chart draws: a chart 900 pixels wide shows no
/// more, and a run's timeline can hold hundreds of thousands.
pub const CHART_POINTS: usize = 2000;

/// At most about `max` points of a line: in buckets of consecutive points,
/// each bucket's lowest and highest (in their order), so a spike survives.
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points.to_vec();
    }
    let k = points.len().div_ceil(max / 2).max(2);
    let mut out = Vec::with_capacity(max + 2);
    for b in points.chunks(k) {
        let lo = (0..b.len()).min_by(|&i, &j| b[i].1.total_cmp(&b[j].1)).unwrap_or(0);
        let hi = (0..b.len()).max_by(|&i, &j| b[i].1.total_cmp(&b[j].1)).unwrap_or(0);
        let (a, z) = (lo.min(hi), lo.max(hi));
        out.push(b[a]);
        if z != a {
            out.push(b[z]);
        }
    }
    out
}

/// Writes a line chart (points joined, one line per series) to `stem.svg`/`.png`.
pub fn lines(
    stem: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    scale: Scale,
) -> Result<(), DynErr> {
    init_font();
    fn draw<DB: DrawingBackend>(
        root: DrawingArea<DB, plotters::coord::Shift>,
        title: &str,
        x_desc: &str,
        y_desc: &str,
        series: &[(String, Vec<(f64, f64)>)],
        scale: Scale,
    ) -> Result<(), DynErr>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let log_y = scale != Scale::Linear;
        let pts = series.iter().flat_map(|(_, p)| p.iter().copied());
        let xmax = pts.clone().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
        let xmin = pts.clone().map(|p| p.0).fold(f64::INFINITY, f64::min).min(xmax);
        let ymax = pts.clone().map(|p| p.1).fold(0.0, f64::max).max(1e-9);
        let ymin = pts.map(|p| p.1).filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min);
        // The series' colours: PALETTE without its grey, nine before one
        // repeats (heap's chart has six lines; four colours drew two pairs
        // of them alike).
        let palette: Vec<RGBColor> = PALETTE.iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, c)| *c).collect();
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 20)).margin(15).x_label_area_size(40).y_label_area_size(70);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                let mut mesh = chart.configure_mesh();
                mesh.x_desc(x_desc).y_desc(y_desc);
                if log_y {
                    mesh.y_label_formatter(&tick_label);
                }
                if scale == Scale::LogLog {
                    mesh.x_label_formatter(&tick_label);
                }
                mesh.draw().map_err(err)?;
                for (i, (name, p)) in series.iter().enumerate() {
                    let c = palette[i % palette.len()];
                    let p: Vec<(f64, f64)> = p.iter().copied().filter(|(_, y)| !log_y || *y > 0.0).collect();
                    chart
                        .draw_series(LineSeries::new(p.clone(), c.stroke_width(2)))
                        .map_err(err)?
                        .label(name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], c.stroke_width(2)));
                    if p.len() <= 200 {
                        chart.draw_series(p.iter().map(|q| Circle::new(*q, 4, c.filled()))).map_err(err)?;
                    }
                }
                legend!(chart, SeriesLabelPosition::UpperRight);
            }};
        }
        let xr = (xmin - (xmax - xmin) * 0.05).max(0.0)..xmax * 1.05;
        let lo = if ymin.is_finite() { ymin / 2.0 } else { ymax / 1e3 };
        if scale == Scale::LogLog {
            let xr = (xmin.max(1e-9) / 1.3)..(xmax * 1.3);
            body!(b.build_cartesian_2d(log_axis(xr.start, xr.end), log_axis(lo, ymax * 2.0)).map_err(err)?);
        } else if log_y {
            body!(b.build_cartesian_2d(xr, log_axis(lo, ymax * 2.0)).map_err(err)?);
        } else {
            body!(b.build_cartesian_2d(xr, 0f64..ymax * 1.1).map_err(err)?);
        }
        root.present().map_err(err)?;
        Ok(())
    }
    let series: Vec<(String, Vec<(f64, f64)>)> =
        series.iter().map(|(n, p)| (n.clone(), thin(p, CHART_POINTS))).collect();
    let series = &series[..];
    svg_file(&stem.with_extension("svg"), (900, 520), |a| draw(a, title, x_desc, y_desc, series, scale))?;
    png_file(&stem.with_extension("png"), (900, 520), |a| draw(a, title, x_desc, y_desc, series, scale))?;
    Ok(())
}

/// One series of a [`traces`] chart: a line, optionally faint (raw data behind a
/// smoothed line), with an optional min..max band (x, lo, hi) behind it.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Shown in the legend unless empty.
    pub name: String,
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    pub faint: bool,
    pub band: Vec<(f64, f64, f64)>,
}

impl Trace {
    /// At most about [`CHART_POINTS`] points ([`thin`]) and band steps (every k-th).
    fn thinned(&self) -> Trace {
        let band = if self.band.len() > CHART_POINTS {
            let k = self.band.len().div_ceil(CHART_POINTS);
            self.band.iter().step_by(k).copied().collect()
        } else {
            self.band.clone()
        };
        Trace { points: thin(&self.points, CHART_POINTS), band, ..self.clone() }
    }
}

/// Index 5 is grey (markers, references); the rest are for series.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(127, 127, 127),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Writes a chart of traces (bands, then faint lines, then lines) to `stem.svg`/`.png`.
pub fn traces(stem: &Path, title: &str, x_desc: &str, y_desc: &str, tr: &[Trace], log_y: bool) -> Result<(), DynErr> {
    traces_with(stem, title, x_desc, y_desc, tr, log_y, None)
}

/// A second y axis on the right, linear from 0: its description and its
/// traces (drawn as lines with points, dashed in the legend's colour).
pub type Secondary<'a> = Option<(&'a str, &'a [Trace])>;

/// The largest finite value of the second axis's traces (a tiny positive
/// number when there are none).
fn secondary_max(secondary: Secondary) -> f64 {
    let ys = secondary.into_iter().flat_map(|(_, st)| st.iter().flat_map(|t| t.points.iter().map(|p| p.1)));
    ys.filter(|y| y.is_finite()).fold(0.0, f64::max).max(1e-9)
}

/// [`traces`], with a second y axis.
pub fn traces_with(
    stem: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    tr: &[Trace],
    log_y: bool,
    secondary: Secondary,
) -> Result<(), DynErr> {
    init_font();
    fn draw<DB: DrawingBackend>(
        root: DrawingArea<DB, plotters::coord::Shift>,
        title: &str,
        x_desc: &str,
        y_desc: &str,
        tr: &[Trace],
        log_y: bool,
        secondary: Secondary,
    ) -> Result<(), DynErr>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(err)?;
        let xs = tr.iter().flat_map(|t| t.points.iter().map(|p| p.0).chain(t.band.iter().map(|b| b.0)));
        let xmax = xs.clone().fold(f64::NEG_INFINITY, f64::max);
        let xmin = xs.fold(f64::INFINITY, f64::min);
        let (xmin, xmax) = if xmin.is_finite() && xmax > xmin { (xmin, xmax) } else { (0.0, 1.0) };
        let ys = tr.iter().flat_map(|t| t.points.iter().map(|p| p.1).chain(t.band.iter().map(|b| b.2)));
        let ymax = ys.clone().filter(|y| y.is_finite()).fold(0.0, f64::max).max(1e-9);
        let ymin = ys.filter(|y| y.is_finite() && *y > 0.0).fold(f64::INFINITY, f64::min);
        let smax = secondary_max(secondary);
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 20)).margin(15).x_label_area_size(40).y_label_area_size(70);
        if secondary.is_some() {
            b.right_y_label_area_size(70);
        }
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart.set_secondary_coord(xmin..xmax, 0f64..smax * 1.15);
                let mut mesh = chart.configure_mesh();
                mesh.x_desc(x_desc).y_desc(y_desc);
                if log_y {
                    mesh.y_label_formatter(&tick_label);
                }
                mesh.draw().map_err(err)?;
                if let Some((desc, st)) = secondary {
                    chart.configure_secondary_axes().y_desc(desc).draw().map_err(err)?;
                    for t in st {
                        let c = PALETTE[t.color % PALETTE.len()];
                        let p: Vec<(f64, f64)> = t.points.iter().copied().filter(|p| p.1.is_finite()).collect();
                        chart
                            .draw_secondary_series(p.iter().map(|&q| Cross::new(q, 4, c.stroke_width(2))))
                            .map_err(err)?;
                        let s =
                            chart.draw_secondary_series(LineSeries::new(p, c.mix(0.6).stroke_width(1))).map_err(err)?;
                        if !t.name.is_empty() {
                            s.label(t.name.as_str()).legend(move |(x, y)| Cross::new((x + 6, y), 4, c.stroke_width(2)));
                        }
                    }
                }
                let ok = |y: f64| y.is_finite() && (!log_y || y > 0.0);
                for t in tr.iter().filter(|t| !t.band.is_empty()) {
                    let c = PALETTE[t.color % PALETTE.len()];
                    let mut poly: Vec<(f64, f64)> = t.band.iter().filter(|b| ok(b.2)).map(|b| (b.0, b.2)).collect();
                    poly.extend(t.band.iter().rev().filter(|b| ok(b.1)).map(|b| (b.0, b.1)));
                    chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.18).filled()))).map_err(err)?;
                }
                for t in tr.iter().filter(|t| t.faint) {
                    let c = PALETTE[t.color % PALETTE.len()];
                    let p: Vec<(f64, f64)> = t.points.iter().copied().filter(|p| ok(p.1)).collect();
                    let s = chart.draw_series(LineSeries::new(p, c.mix(0.35).stroke_width(1))).map_err(err)?;
                    if !t.name.is_empty() {
                        s.label(t.name.as_str()).legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 12, y)], c.mix(0.35).stroke_width(1))
                        });
                    }
                }
                for t in tr.iter().filter(|t| !t.faint) {
                    let c = PALETTE[t.color % PALETTE.len()];
                    let p: Vec<(f64, f64)> = t.points.iter().copied().filter(|p| ok(p.1)).collect();
                    // A trace of a few points shows each (one point draws no line).
                    if p.len() <= 32 {
                        chart.draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled()))).map_err(err)?;
                    }
                    let s = chart.draw_series(LineSeries::new(p, c.stroke_width(2))).map_err(err)?;
                    if !t.name.is_empty() {
                        s.label(t.name.as_str())
                            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], c.stroke_width(2)));
                    }
                }
                // A second axis's traces run along the top: the legend goes below.
                let pos =
                    if secondary.is_some() { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperRight };
                legend!(chart, pos);
            }};
        }
        if log_y {
            let lo = if ymin.is_finite() { ymin / 2.0 } else { ymax / 1e3 };
            body!(b.build_cartesian_2d(xmin..xmax, log_axis(lo, ymax * 2.0)).map_err(err)?);
        } else {
            body!(b.build_cartesian_2d(xmin..xmax, 0f64..ymax * 1.1).map_err(err)?);
        }
        root.present().map_err(err)?;
        Ok(())
    }
    let tr: Vec<Trace> = tr.iter().map(Trace::thinned).collect();
    let tr = &tr[..];
    svg_file(&stem.with_extension("svg"), (900, 480), |a| draw(a, title, x_desc, y_desc, tr, log_y, secondary))?;
    png_file(&stem.with_extension("png"), (900, 480), |a| draw(a, title, x_desc, y_desc, tr, log_y, secondary))?;
    Ok(())
}

/// Draws an SVG in memory and writes it the safe way ([`crate::write_file`]):
/// plotters' own file output would follow a link planted at `path`.
fn svg_file(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), DynErr>,
) -> Result<(), DynErr> {
    let mut s = String::new();
    draw(SVGBackend::with_string(&mut s, size).into_drawing_area())?;
    crate::write_file(path, s.as_bytes())?;
    Ok(())
}

/// Draws a bitmap in memory, encodes it as PNG and writes it the safe way.
fn png_file(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<(), DynErr>,
) -> Result<(), DynErr> {
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    draw(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area())?;
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, size.0, size.1);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(&rgb)?;
    }
    crate::write_file(path, &out)?;
    Ok(())
}

/// Renders terminal cells (symbol, fg, bg), row by row, to a PNG.
pub fn terminal_png(path: &Path, w: usize, h: usize, cells: &[(String, [u8; 3], [u8; 3])]) -> Result<(), DynErr> {
    init_font();
    let (cw, ch) = (9i32, 18i32);
    png_file(path, ((w as i32 * cw) as u32, (h as i32 * ch) as u32), |root| {
        root.fill(&RGBColor(24, 24, 28)).map_err(err)?;
        for (i, (sym, fg, bg)) in cells.iter().enumerate().take(w * h) {
            let (x, y) = ((i % w) as i32 * cw, (i / w) as i32 * ch);
            let bgc = RGBColor(bg[0], bg[1], bg[2]);
            let fgc = RGBColor(fg[0], fg[1], fg[2]);
            if sym == "█" {
                root.draw(&Rectangle::new([(x, y), (x + cw, y + ch)], fgc.filled())).map_err(err)?;
                continue;
            }
            root.draw(&Rectangle::new([(x, y), (x + cw, y + ch)], bgc.filled())).map_err(err)?;
            if sym != " " {
                let style = TextStyle::from(("sans-serif", 15).into_font()).color(&fgc);
                root.draw(&Text::new(sym.clone(), (x, y + 1), style)).map_err(err)?;
            }
        }
        root.present().map_err(err)?;
        Ok(())
    })
}

#[cfg(test)]
mod thin_tests {
    use super::*;

    #[test]
    fn a_long_line_is_thinned_and_keeps_its_spike() {
        let mut p: Vec<(f64, f64)> = (0..480_000).map(|i| (i as f64, 1.0)).collect();
        p[123_456].1 = 50.0;
        p[400_000].1 = -3.0;
        let t = thin(&p, CHART_POINTS);
        assert!(t.len() <= CHART_POINTS + 2, "{}", t.len());
        assert!(t.iter().any(|q| q.1 == 50.0) && t.iter().any(|q| q.1 == -3.0));
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
        let short: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, i as f64)).collect();
        assert_eq!(thin(&short, CHART_POINTS), short);
    }
}

#[cfg(test)]
mod tick_tests {
    use super::*;

    #[test]
    fn a_log_axis_inside_one_decade_has_labels() {
        // heap's p99 chart: 150 – 1800 ns had one label (1000) under plotters' own.
        assert_eq!(log_ticks(150.0, 1800.0), vec![200.0, 500.0, 1000.0]);
        assert_eq!(log_ticks(9.0, 110.0), vec![10.0, 20.0, 50.0, 100.0]);
        // Many decades: the powers only.
        assert_eq!(log_ticks(1e-3, 1e6), (-3..=6).map(|e| 10f64.powi(e)).collect::<Vec<_>>());
        // Narrower than 1 to 2: round values between.
        let t = log_ticks(1.1, 1.9);
        assert!(t.len() >= 2 && t.iter().all(|v| (1.1..=1.9).contains(v)), "{t:?}");
        assert!(log_ticks(0.0, 10.0).is_empty() && log_ticks(5.0, 5.0).is_empty());
    }

    #[test]
    fn tick_labels_are_short() {
        let l = |v: f64| tick_label(&v);
        assert_eq!([l(1.0), l(2.0), l(500.0), l(20000.0)], ["1", "2", "500", "20000"]);
        assert_eq!([l(0.5), l(0.02), l(0.001), l(1.5), l(12.5)], ["0.5", "0.02", "0.001", "1.5", "12.5"]);
        assert_eq!([l(2e6), l(1e5), l(5e-5), l(0.0)], ["2e6", "1e5", "5e-5", "0"]);
    }
}
