//! Drawing a frame: the stacked RAM categories, the swap and store lines, the
//! legend, the status line and the process picker.

use super::*;

/// The terminal colour of RAM category `i` (record::derive::RAM_CATEGORIES).
pub fn color(i: usize) -> Color {
    let (r, g, b) = record::derive::RAM_CATEGORIES[i].1;
    Color::Rgb(r, g, b)
}

/// The stacked area of RAM categories, bottom first, over the time window.
struct Stack<'a> {
    cols: &'a [Option<Point>],
    marks: &'a [Mark],
    now: f64,
    window_s: f64,
}

impl Widget for Stack<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let h = area.height as f64;
        for (x, col) in self.cols.iter().enumerate().take(area.width as usize) {
            let Some(p) = col else { continue };
            let total = p.total().max(1) as f64;
            for row in 0..area.height {
                // Cell midpoint, as a share of total RAM from the bottom.
                let mid = (row as f64 + 0.5) / h * total;
                let mut acc = 0.0;
                let mut cat = 7;
                for (i, v) in p.cats.iter().enumerate() {
                    acc += *v as f64;
                    if mid < acc {
                        cat = i;
                        break;
                    }
                }
                let y = area.y + area.height - 1 - row;
                buf[(area.x + x as u16, y)].set_symbol("█").set_fg(color(cat));
            }
        }
        let t0 = self.now - self.window_s;
        for m in self.marks.iter().filter(|m| m.t_s > t0 && m.t_s <= self.now) {
            let x = ((m.t_s - t0) / self.window_s * area.width as f64).floor().min(area.width as f64 - 1.0) as u16;
            for row in 1..area.height {
                buf[(area.x + x, area.y + row)].set_symbol("│").set_fg(Color::White);
            }
            let label = m.n.to_string();
            for (i, ch) in label.chars().enumerate() {
                let xx = area.x + x + i as u16;
                if xx < area.x + area.width {
                    buf[(xx, area.y)]
                        .set_symbol(&ch.to_string())
                        .set_style(Style::default().fg(Color::Black).bg(Color::White).add_modifier(Modifier::BOLD));
                }
            }
        }
    }
}

pub(crate) fn target_line(t: &TargetKind) -> String {
    match t {
        TargetKind::System => "system (no target: press p to pick a process)".into(),
        TargetKind::Pid { pid, name } => format!("pid {pid} ({name})"),
        TargetKind::Cgroup(c) => format!("cgroup {}", c.name),
    }
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &mut App) {
    let outer = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(8), Constraint::Length(1)])
        .split(f.area());
    let main = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Min(30), Constraint::Length(46)])
        .split(outer[0]);
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(70), Constraint::Percentage(30)])
        .split(main[0]);
    let total = app.ring.last().map(|p| p.total()).unwrap_or(0);
    let stack_block = Block::default().borders(Borders::ALL).title(format!(
        " RAM by category, 0..{:.1} GiB, last {} ",
        gib(total),
        fmt_window(app.window_s)
    ));
    let inner = stack_block.inner(left[0]);
    f.render_widget(stack_block, left[0]);
    app.columns(inner.width as usize);
    let now = app.now_s();
    f.render_widget(Stack { cols: &app.cols, marks: &app.marks, now, window_s: app.window_s }, inner);
    // Swap used and the compressed store, in GiB, on the same time axis.
    app.swap_pts.clear();
    app.store_pts.clear();
    let mut ymax: f64 = 0.01;
    for p in app.cols.iter().flatten() {
        let x = p.t_s - now;
        app.swap_pts.push((x, gib(p.swap_used)));
        app.store_pts.push((x, gib(p.store)));
        ymax = ymax.max(gib(p.swap_used)).max(gib(p.store));
    }
    let ds = vec![
        Dataset::default()
            .name("swap used")
            .graph_type(GraphType::Line)
            .marker(ratatui::symbols::Marker::Braille)
            .style(Style::default().fg(Color::Yellow))
            .data(&app.swap_pts),
        Dataset::default()
            .name("compressed store")
            .graph_type(GraphType::Line)
            .marker(ratatui::symbols::Marker::Braille)
            .style(Style::default().fg(color(3)))
            .data(&app.store_pts),
    ];
    let chart = Chart::new(ds)
        .block(Block::default().borders(Borders::ALL).title(" swap used and compressed store (GiB) "))
        .x_axis(
            Axis::default()
                .bounds([-app.window_s, 0.0])
                .labels(vec![Span::raw(format!("-{}", fmt_window(app.window_s))), Span::raw("now")]),
        )
        .y_axis(
            Axis::default().bounds([0.0, ymax * 1.1]).labels(vec![Span::raw("0"), Span::raw(format!("{:.2}", ymax))]),
        );
    f.render_widget(chart, left[1]);
    let lines = side_panel(app);
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" now ")), main[1]);
    let keys = "t trim  c cold  r reclaim  m mark  p pick  +/- zoom  ? help  q quit";
    let status = if app.status.is_empty() { keys.to_string() } else { format!("{}  |  {keys}", app.status) };
    f.render_widget(Paragraph::new(status).style(Style::default().add_modifier(Modifier::REVERSED)), outer[1]);
    overlay(f, app);
}

/// The side panel: the target, the categories now, pressure, faults, swap
/// traffic and the latest marks.
fn side_panel(app: &App) -> Vec<Line<'static>> {
    let mut lines: Vec<Line> =
        vec![Line::from(Span::styled(target_line(&app.target), Style::default().add_modifier(Modifier::BOLD)))];
    if let Some(p) = app.ring.last() {
        for (i, (name, _)) in record::derive::RAM_CATEGORIES.iter().enumerate().rev() {
            lines.push(Line::from(vec![
                Span::styled("██ ", Style::default().fg(color(i))),
                Span::raw(format!("{name:<17}{:>12}", units::bytes(p.cats[i]))),
            ]));
        }
        lines.push(Line::from(format!("   {:<17}{:>12}", "target swapped", units::bytes(p.target_swapped))));
        lines.push(Line::from(format!("   {:<17}{:>12}", "swap used", units::bytes(p.swap_used))));
        lines.push(Line::from(""));
        lines.push(Line::from(format!("PSI mem some/full {:>5.1} / {:>5.1} %", p.psi_some_avg10, p.psi_full_avg10)));
        lines.push(Line::from(format!("faults/s {:>10.0}  major {:>7.0}", p.fault_per_s, p.majfault_per_s)));
        lines.push(Line::from(format!("swap in/s {:>9.0}  out {:>9.0}", p.swpin_per_s, p.swpout_per_s)));
    } else {
        lines.push(Line::from("waiting for the first interval..."));
    }
    lines.push(Line::from(""));
    for m in app.marks.iter().rev().take(6) {
        lines.push(Line::from(format!("{:>2} {:>6.1}s {}", m.n, m.t_s, m.text)));
    }
    if let Some(r) = &app.recording {
        lines.push(Line::from(Span::styled(format!("recording to {}", r.display()), Style::default().fg(Color::Red))));
    }
    lines
}

/// The help or the process picker over the screen, when open.
fn overlay(f: &mut Frame, app: &App) {
    match &app.mode {
        Mode::Normal => {}
        Mode::Help => {
            let r = centered(f.area(), 64, 16);
            f.render_widget(Clear, r);
            let text = vec![
                Line::from("t  trim the target: process_madvise(MADV_PAGEOUT) on its private mappings"),
                Line::from("c  the same with MADV_COLD (deactivate, do not reclaim yet)"),
                Line::from("r  reclaim from the target's cgroup (memory.reclaim, cgroup v2)"),
                Line::from("m  add a numbered mark"),
                Line::from("p  pick a target from the processes, largest RSS first"),
                Line::from("+  zoom in (halve the window)   -  zoom out (double it)"),
                Line::from("?  this help            q or Ctrl-C  quit"),
                Line::from(""),
                Line::from("Each action is a numbered mark on the chart and in the panel."),
                Line::from("Trimming another user's process needs CAP_SYS_NICE."),
            ];
            f.render_widget(Paragraph::new(text).block(Block::default().borders(Borders::ALL).title(" help ")), r);
        }
        Mode::Pick { list, sel } => {
            let r = centered(f.area(), 60, 20);
            f.render_widget(Clear, r);
            let items: Vec<ListItem> = list
                .iter()
                .enumerate()
                .skip(sel.saturating_sub(15))
                .take(18)
                .map(|(i, (pid, name, rss))| {
                    let s = format!("{pid:>8}  {name:<24} {:>12}", units::bytes(*rss));
                    let st =
                        if i == *sel { Style::default().add_modifier(Modifier::REVERSED) } else { Style::default() };
                    ListItem::new(s).style(st)
                })
                .collect();
            f.render_widget(
                List::new(items).block(Block::default().borders(Borders::ALL).title(" pick: ↑/↓ Enter, Esc cancels ")),
                r,
            );
        }
    }
}

fn centered(a: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(a.width);
    let h = h.min(a.height);
    Rect { x: a.x + (a.width - w) / 2, y: a.y + (a.height - h) / 2, width: w, height: h }
}

fn fmt_window(s: f64) -> String {
    if s >= 120.0 { format!("{:.0} min", s / 60.0) } else { format!("{s:.0} s") }
}
