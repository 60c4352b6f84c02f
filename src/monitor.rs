//! `pagelab monitor`: a live memory timeline (ratatui + crossterm) of the system
//! and a target (a process or a cgroup), with trim, cold, reclaim and numbered
//! marks, optionally recorded as a run directory.
//!
//! Sampling is `record`'s: the same sampler thread and `record::derive`. Each
//! interval becomes a fixed-size [`Point`] in a ring buffer; drawing walks the
//! ring once per frame into buffers sized by the terminal width, so a frame costs
//! the same after ten minutes as after ten seconds and allocates nothing new once
//! the buffers have grown to the screen.

use crate::cli::MonitorArgs;
use crate::usage;
use probe::{CgroupTarget, Probe, Targets};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Clear, Dataset, GraphType, List, ListItem, Paragraph, Widget};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The terminal colour of RAM category `i` (record::derive::RAM_CATEGORIES).
pub fn color(i: usize) -> Color {
    let (r, g, b) = record::derive::RAM_CATEGORIES[i].1;
    Color::Rgb(r, g, b)
}

/// One sampled interval, fixed-size.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Point {
    pub t_s: f64,
    pub cats: [u64; 8],
    pub swap_used: u64,
    pub store: u64,
    pub target_swapped: u64,
    pub psi_some_avg10: f64,
    pub psi_full_avg10: f64,
    pub fault_per_s: f64,
    pub majfault_per_s: f64,
    pub swpin_per_s: f64,
    pub swpout_per_s: f64,
}

impl Point {
    pub fn from(iv: &record::derive::Interval, s: &probe::Sample) -> Point {
        let st = iv.mem.ram_stack();
        let mut cats = [0u64; 8];
        for (i, (_, v)) in st.iter().enumerate() {
            cats[i] = *v;
        }
        let mem = s.psi.memory.as_ref();
        Point {
            t_s: iv.t_s,
            cats,
            swap_used: iv.mem.swap_used,
            store: iv.mem.compressed_store,
            target_swapped: iv.mem.target_swapped,
            psi_some_avg10: mem.map(|m| m.some.avg10).unwrap_or(0.0),
            psi_full_avg10: mem.and_then(|m| m.full.as_ref()).map(|f| f.avg10).unwrap_or(0.0),
            fault_per_s: iv.pgfault_per_s.unwrap_or(0.0),
            majfault_per_s: iv.pgmajfault_per_s.unwrap_or(0.0),
            swpin_per_s: iv.pswpin_per_s.unwrap_or(0.0),
            swpout_per_s: iv.pswpout_per_s.unwrap_or(0.0),
        }
    }
    pub fn total(&self) -> u64 {
        self.cats.iter().sum()
    }
}

/// A fixed-capacity ring: pushing past capacity drops the oldest.
pub struct Ring<T> {
    buf: Vec<T>,
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Ring<T> {
    pub fn new(cap: usize) -> Ring<T> {
        Ring { buf: vec![T::default(); cap.max(1)], head: 0, len: 0 }
    }
    pub fn push(&mut self, v: T) {
        let cap = self.buf.len();
        self.buf[(self.head + self.len) % cap] = v;
        if self.len < cap {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % cap;
        }
    }
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let cap = self.buf.len();
        (0..self.len).map(move |i| &self.buf[(self.head + i) % cap])
    }
    pub fn last(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.buf[(self.head + self.len - 1) % self.buf.len()])
    }
}

/// A numbered event drawn on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub n: u32,
    pub t_s: f64,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TargetKind {
    System,
    Pid { pid: i32, name: String },
    Cgroup(CgroupTarget),
}

pub enum Mode {
    Normal,
    Help,
    Pick { list: Vec<(i32, String, u64)>, sel: usize },
}

/// Everything the screen shows.
pub struct App {
    pub ring: Ring<Point>,
    pub target: TargetKind,
    pub window_s: f64,
    pub interval: Duration,
    pub marks: Vec<Mark>,
    pub status: String,
    pub mode: Mode,
    pub recording: Option<std::path::PathBuf>,
    pub cgroup_version: Option<probe::cgroup::CgroupVersion>,
    // Per-frame buffers, reused.
    cols: Vec<Option<Point>>,
    swap_pts: Vec<(f64, f64)>,
    store_pts: Vec<(f64, f64)>,
}

impl App {
    pub fn new(target: TargetKind, interval: Duration, window: Duration) -> App {
        // Room for the widest zoom (8 × the initial window, at most 1 h) at this interval.
        let max_window = (window.as_secs_f64() * 8.0).min(3600.0).max(window.as_secs_f64());
        let cap = (max_window / interval.as_secs_f64()).ceil() as usize + 2;
        App {
            ring: Ring::new(cap.min(200_000)),
            target,
            window_s: window.as_secs_f64(),
            interval,
            marks: Vec::new(),
            status: String::new(),
            mode: Mode::Normal,
            recording: None,
            cgroup_version: None,
            cols: Vec::new(),
            swap_pts: Vec::new(),
            store_pts: Vec::new(),
        }
    }

    pub fn now_s(&self) -> f64 {
        self.ring.last().map(|p| p.t_s).unwrap_or(0.0)
    }

    /// Fills `cols` with the latest point at or before each column's time.
    fn columns(&mut self, width: usize) {
        self.cols.clear();
        self.cols.resize(width, None);
        let now = self.now_s();
        let t_start = now - self.window_s;
        let mut it = self.ring.iter().peekable();
        let mut cur: Option<Point> = None;
        for x in 0..width {
            let t_x = t_start + (x + 1) as f64 * self.window_s / width as f64;
            while let Some(p) = it.peek() {
                if p.t_s <= t_x + 1e-9 {
                    cur = Some(**p);
                    it.next();
                } else {
                    break;
                }
            }
            self.cols[x] = cur.filter(|p| p.t_s > t_start);
        }
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

pub fn human(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
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

fn target_line(t: &TargetKind) -> String {
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
    // Side panel.
    let mut lines: Vec<Line> =
        vec![Line::from(Span::styled(target_line(&app.target), Style::default().add_modifier(Modifier::BOLD)))];
    if let Some(p) = app.ring.last() {
        for (i, (name, _)) in record::derive::RAM_CATEGORIES.iter().enumerate().rev() {
            lines.push(Line::from(vec![
                Span::styled("██ ", Style::default().fg(color(i))),
                Span::raw(format!("{name:<17}{:>12}", human(p.cats[i]))),
            ]));
        }
        lines.push(Line::from(format!("   {:<17}{:>12}", "target swapped", human(p.target_swapped))));
        lines.push(Line::from(format!("   {:<17}{:>12}", "swap used", human(p.swap_used))));
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
    f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" now ")), main[1]);
    let keys = "t trim  c cold  r reclaim  m mark  p pick  +/- zoom  ? help  q quit";
    let status = if app.status.is_empty() { keys.to_string() } else { format!("{}  |  {keys}", app.status) };
    f.render_widget(Paragraph::new(status).style(Style::default().add_modifier(Modifier::REVERSED)), outer[1]);
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
                    let s = format!("{pid:>8}  {name:<24} {:>12}", human(*rss));
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

fn rss_of(pid: i32) -> Option<u64> {
    Probe::default().pid_status(pid).ok().flatten().and_then(|s| s.vm_rss)
}

/// Processes by RSS, largest first: (pid, comm, RSS bytes).
pub fn processes() -> Vec<(i32, String, u64)> {
    Probe::default().processes().into_iter().map(|p| (p.pid, p.comm, p.rss)).collect()
}

/// The private mappings of a process that can be advised, as (start, length)
/// (the vsyscall page cannot).
fn private_ranges(pid: i32) -> Result<Vec<(usize, usize)>, String> {
    let maps = Probe::default().pid_maps(pid).map_err(|e| e.to_string())?.ok_or("the process is gone")?;
    Ok(maps
        .iter()
        .filter(|m| m.is_private() && !m.is_empty() && m.name != "[vsyscall]")
        .map(|m| (m.start, m.len()))
        .collect())
}

/// Trims (MADV_PAGEOUT) or deactivates (MADV_COLD) a process; returns the mark text.
pub fn advise(pid: i32, cold: bool) -> Result<String, String> {
    let what = if cold { "cold" } else { "trim" };
    let before = rss_of(pid).ok_or_else(|| format!("{what}: pid {pid} is gone"))?;
    let t = Instant::now();
    let fd = workloads::mm::PidFd::open(pid).map_err(|e| format!("{what}: pidfd_open({pid}): {e}"))?;
    let ranges = private_ranges(pid).map_err(|e| format!("{what}: reading /proc/{pid}/maps: {e}"))?;
    let advice = if cold { workloads::mm::MADV_COLD } else { workloads::mm::MADV_PAGEOUT };
    match workloads::mm::process_madvise(&fd, &ranges, advice) {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            return Err(format!(
                "{what}: not permitted on pid {pid}: process_madvise needs CAP_SYS_NICE (and ptrace access); run as root"
            ));
        }
        Err(e) => return Err(format!("{what}: process_madvise on pid {pid}: {e}")),
    }
    let after = rss_of(pid).unwrap_or(0);
    Ok(format!("{what}: RSS {} → {} in {:.1} s", human(before), human(after), t.elapsed().as_secs_f64()))
}

/// Reclaims from the target's cgroup (v2 memory.reclaim); returns the mark text.
pub fn reclaim(t: &TargetKind) -> Result<String, String> {
    let cg = match t {
        TargetKind::Cgroup(c) => c.clone(),
        TargetKind::Pid { pid, .. } => Probe::default()
            .memory_cgroup_of(Some(*pid))
            .ok()
            .flatten()
            .ok_or("reclaim: the target's memory cgroup was not found")?,
        TargetKind::System => return Err("reclaim needs a target (press p, or start with --pid or --cgroup)".into()),
    };
    if cg.version == probe::cgroup::CgroupVersion::V1 {
        return Err(
            "reclaim: memory.reclaim is cgroup v2 only; this machine's memory controller is v1 (use t to trim)".into(),
        );
    }
    let read = || Probe::default().cgroup_sample(&cg).ok().and_then(|s| s.usage_bytes);
    let before = read().unwrap_or(0);
    let t0 = Instant::now();
    // Ask for everything; the kernel returns EAGAIN when it reclaimed less.
    let r = sandbox::cgroup::reclaim_once(&cg.dir, before);
    let after = read().unwrap_or(0);
    match r {
        Ok(()) | Err(_) if after < before => Ok(format!(
            "reclaim {}: {} → {} in {:.1} s",
            cg.name,
            human(before),
            human(after),
            t0.elapsed().as_secs_f64()
        )),
        Ok(()) => Ok(format!("reclaim {}: {} → {}", cg.name, human(before), human(after))),
        Err(e) => Err(format!("reclaim: writing {}/memory.reclaim: {e}", cg.dir.display())),
    }
}

/// Applies one key; false to quit.
pub fn on_key(app: &mut App, code: crossterm::event::KeyCode, ctrl: bool, mut emit: impl FnMut(&str, &str)) -> bool {
    use crossterm::event::KeyCode::*;
    if ctrl && code == Char('c') {
        return false;
    }
    if let Mode::Pick { list, sel } = &mut app.mode {
        match code {
            Up => *sel = sel.saturating_sub(1),
            Down => *sel = (*sel + 1).min(list.len().saturating_sub(1)),
            Enter => {
                if let Some((pid, name, _)) = list.get(*sel).cloned() {
                    app.target = TargetKind::Pid { pid, name: name.clone() };
                    app.status = format!("target: pid {pid} ({name})");
                    emit("target", &format!("target pid {pid} ({name})"));
                }
                app.mode = Mode::Normal;
            }
            Esc | Char('q') => app.mode = Mode::Normal,
            _ => {}
        }
        return true;
    }
    if matches!(app.mode, Mode::Help) {
        app.mode = Mode::Normal;
        return !matches!(code, Char('q'));
    }
    let mut mark = |app: &mut App, text: String| {
        let n = app.marks.len() as u32 + 1;
        app.marks.push(Mark { n, t_s: app.now_s(), text: text.clone() });
        app.status = format!("{n}: {text}");
        emit("action", &text);
    };
    match code {
        Char('q') | Esc => return false,
        Char('?') => app.mode = Mode::Help,
        Char('+') => app.window_s = (app.window_s / 2.0).max(app.interval.as_secs_f64() * 10.0),
        Char('-') => {
            let most = app.ring.capacity() as f64 * app.interval.as_secs_f64();
            app.window_s = (app.window_s * 2.0).min(most);
        }
        Char('m') => {
            let n = app.marks.len() + 1;
            mark(app, format!("mark {n}"));
        }
        Char('p') => app.mode = Mode::Pick { list: processes(), sel: 0 },
        Char(c @ ('t' | 'c')) => match &app.target {
            TargetKind::Pid { pid, .. } => match advise(*pid, c == 'c') {
                Ok(text) => mark(app, text),
                Err(e) => app.status = e,
            },
            _ => app.status = "trim and cold need a process target: press p to pick one".into(),
        },
        Char('r') => match reclaim(&app.target) {
            Ok(text) => mark(app, text),
            Err(e) => app.status = e,
        },
        _ => {}
    }
    true
}

/// Waits up to 100 ms for terminal input. With the terminal on stdin, polls it
/// directly, so that a hang-up (the window or tmux session closed) ends the
/// monitor: crossterm's reader would spin on the dead terminal's end-of-file.
fn wait_input(stdin_tty: bool) -> std::io::Result<bool> {
    if !stdin_tty {
        return crossterm::event::poll(Duration::from_millis(100));
    }
    let mut fds = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut fds, 1, 100) };
    if r > 0 && fds.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        record::stop::request("the terminal hung up");
        return Ok(false);
    }
    if r > 0 { crossterm::event::poll(Duration::ZERO) } else { Ok(false) }
}

/// True once the terminal has hung up (its window or tmux session closed without a
/// SIGHUP reaching us): terminal calls then fail with EIO, and polling it would spin.
fn terminal_gone() -> bool {
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr on our stdout with a valid out-pointer.
    unsafe { libc::tcgetattr(1, &mut t) != 0 }
}

/// Restores the terminal: on drop, and from the panic hook.
fn restore_terminal() {
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = crossterm::execute!(std::io::stdout(), crossterm::terminal::LeaveAlternateScreen, crossterm::cursor::Show);
}

struct TermGuard;
impl Drop for TermGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn resolve_target(a: &MonitorArgs, p: &mut Probe) -> anyhow::Result<TargetKind> {
    if let Some(pid) = a.pid {
        let st = p.pid_status(pid).ok().flatten();
        if st.is_none() {
            return Err(usage(format!("--pid {pid}: no such process (expected the pid of a running process)")));
        }
        let name = p.pid_comm(pid).unwrap_or_default();
        return Ok(TargetKind::Pid { pid, name });
    }
    if let Some(n) = &a.name {
        let found = processes().into_iter().find(|(pid, comm, _)| comm == n && *pid != std::process::id() as i32);
        return match found {
            Some((pid, name, _)) => Ok(TargetKind::Pid { pid, name }),
            None => Err(usage(format!("--name {n}: no running process has that name (as in /proc/PID/comm)"))),
        };
    }
    if let Some(c) = &a.cgroup {
        return Ok(TargetKind::Cgroup(crate::record_cmd::resolve_cgroup(p, c)?));
    }
    Ok(TargetKind::System)
}

fn targets_for(t: &TargetKind, zram: &[u32]) -> Targets {
    match t {
        TargetKind::System => Targets { zram: zram.to_vec(), ..Default::default() },
        TargetKind::Pid { pid, .. } => Targets { pids: vec![*pid], zram: zram.to_vec(), ..Default::default() },
        TargetKind::Cgroup(c) => Targets { cgroup: Some(c.clone()), zram: zram.to_vec(), ..Default::default() },
    }
}

pub fn run(a: &MonitorArgs) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let mut p = Probe::default();
    let target = resolve_target(a, &mut p)?;
    if !std::io::stdout().is_terminal() {
        return Err(usage(
            "pagelab monitor needs a terminal on stdout; to record without one, use pagelab record (e.g. pagelab record --duration 60s --pid PID)",
        ));
    }
    let zram = p.zram_devices();
    let mut app = App::new(target.clone(), a.interval, a.window);
    app.cgroup_version = p.memory_controller().ok().flatten().map(|(v, _)| v);
    let dir = match &a.record {
        Some(out) => {
            let env = p.environment();
            let cfg = serde_json::json!({"target": target_line(&target), "interval_ms": a.interval.as_millis() as u64});
            let d = crate::record_cmd::create_run_dir(
                Some(out),
                "--record",
                record::rundir::RunJson::new("monitor", env!("CARGO_PKG_VERSION"), env, cfg),
            )?;
            app.recording = Some(out.clone());
            Some(Arc::new(d))
        }
        None => None,
    };
    let ring: Arc<Mutex<Vec<Point>>> = Arc::new(Mutex::new(Vec::with_capacity(16)));
    let (ring2, dir2) = (ring.clone(), dir.clone());
    let mut writer = match &dir {
        Some(d) => Some(d.sample_writer()?),
        None => None,
    };
    let mut prev: Option<probe::Sample> = None;
    let mut t0 = None;
    let sampler = record::sampler::Sampler::start(
        record::sampler::SamplerConfig { interval: a.interval, lock_memory: false, ..Default::default() },
        targets_for(&target, &zram),
        move |s| {
            if let Some(w) = writer.as_mut() {
                let _ = w.write(s);
            }
            let first = *t0.get_or_insert(s.t_ns);
            if let Some(pr) = &prev {
                let iv = record::derive::interval(pr, s, first);
                if let Ok(mut r) = ring2.lock() {
                    r.push(Point::from(&iv, s));
                }
            }
            prev = Some(s.clone());
            let _ = &dir2;
            record::sampler::Verdict::Continue
        },
    )?;
    let t0_ns = probe::sample::monotonic_ns();
    // The terminal: restored on drop, on panic (hook), and on signals (they set the
    // stop flag the loop checks).
    let prev_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        prev_hook(info);
    }));
    crossterm::terminal::enable_raw_mode()?;
    let _guard = TermGuard;
    crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen, crossterm::cursor::Hide)?;
    let mut term = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    let stdin_tty = std::io::stdin().is_terminal();
    let mut cur_target = target;
    let mut redraw = true;
    loop {
        if record::stop::requested() || terminal_gone() {
            break;
        }
        if let Ok(mut r) = ring.lock() {
            for pt in r.drain(..) {
                app.ring.push(pt);
                redraw = true;
            }
        }
        if app.target != cur_target {
            cur_target = app.target.clone();
            sampler.set_targets(targets_for(&cur_target, &zram));
        }
        if redraw {
            term.draw(|f| draw(f, &mut app))?;
            redraw = false;
        }
        if wait_input(stdin_tty)? {
            if let crossterm::event::Event::Key(k) = crossterm::event::read()? {
                if k.kind != crossterm::event::KeyEventKind::Press {
                    continue;
                }
                let ctrl = k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL);
                let d = dir.clone();
                let go = on_key(&mut app, k.code, ctrl, |kind, text| {
                    if let Some(d) = &d {
                        let _ = d.event(&record::rundir::Event {
                            t_ns: probe::sample::monotonic_ns(),
                            kind: kind.into(),
                            name: text.into(),
                            detail: serde_json::Value::Null,
                        });
                    }
                });
                redraw = true;
                if !go {
                    break;
                }
            } else {
                redraw = true;
            }
        }
    }
    let st = sampler.stop();
    drop(term);
    drop(_guard);
    if let Some(d) = dir {
        let _ = d.update(|r| r.sampler = Some(st));
        let status = if record::stop::requested() {
            record::rundir::RunStatus::new(record::rundir::State::Interrupted, Some("stopped by a signal".into()))
        } else {
            record::rundir::RunStatus::new(record::rundir::State::Complete, None)
        };
        d.finish(status)?;
        eprintln!(
            "recorded {:.0} s to {} (render it with pagelab report)",
            (probe::sample::monotonic_ns() - t0_ns) as f64 / 1e9,
            d.path().display()
        );
    }
    Ok(())
}

/// A deterministic demo state, for the rendering tests and the docs screenshot.
pub fn demo(target: TargetKind) -> App {
    let mut app = App::new(target.clone(), Duration::from_millis(500), Duration::from_secs(120));
    let gib = 1u64 << 30;
    for i in 0..240u64 {
        let t = i as f64 * 0.5;
        let trimmed = t >= 70.0;
        let anon = if matches!(target, TargetKind::System) {
            0
        } else if trimmed {
            96 << 20
        } else {
            (812u64 << 20).min((i + 1) * (12 << 20))
        };
        let store = if trimmed { 210 << 20 } else { 0 };
        let cache = 5 * gib + i * (4 << 20);
        let other = 3 * gib;
        let used = anon + store + cache + other + (64 << 20);
        let free = 24 * gib - used;
        app.ring.push(Point {
            t_s: t,
            cats: [anon, 20 << 20, 0, store, 64 << 20, cache, other, free],
            swap_used: if trimmed { 716 << 20 } else { 0 },
            store,
            target_swapped: if trimmed { 716 << 20 } else { 0 },
            psi_some_avg10: if trimmed { 0.8 } else { 0.0 },
            psi_full_avg10: if trimmed { 0.3 } else { 0.0 },
            fault_per_s: 2500.0,
            majfault_per_s: 3.0,
            swpin_per_s: 0.0,
            swpout_per_s: if (70.0..72.0).contains(&t) { 92000.0 } else { 0.0 },
        });
    }
    if !matches!(target, TargetKind::System) {
        app.marks.push(Mark { n: 1, t_s: 40.0, text: "mark 1".into() });
        app.marks.push(Mark { n: 2, t_s: 70.0, text: "trim: RSS 812.0 MiB → 96.0 MiB in 1.4 s".into() });
    }
    app
}

/// Renders the demo state (TestBackend) to a PNG: the docs' screenshot.
pub fn demo_png(path: &std::path::Path, process: bool) -> anyhow::Result<()> {
    let target = if process { TargetKind::Pid { pid: 4242, name: "eater".into() } } else { TargetKind::System };
    let mut app = demo(target);
    let (w, h) = (110u16, 32u16);
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h))?;
    t.draw(|f| draw(f, &mut app))?;
    let buf = t.backend().buffer().clone();
    let rgb = |c: Color, default: [u8; 3]| match c {
        Color::Rgb(r, g, b) => [r, g, b],
        Color::White => [240, 240, 240],
        Color::Black => [0, 0, 0],
        Color::Yellow => [230, 200, 40],
        Color::Red => [220, 60, 60],
        _ => default,
    };
    let mut cells = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let c = &buf[(x, y)];
            let reversed = c.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (rgb(c.fg, [220, 220, 220]), rgb(c.bg, [24, 24, 28]));
            if reversed {
                std::mem::swap(&mut fg, &mut bg);
            }
            cells.push((c.symbol().to_string(), fg, bg));
        }
    }
    report::charts::terminal_png(path, w as usize, h as usize, &cells).map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;

    fn render(app: &mut App, w: u16, h: u16) -> String {
        let mut t = ratatui::Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, app)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut s = String::new();
        for y in 0..h {
            for x in 0..w {
                s.push_str(buf[(x, y)].symbol());
            }
            s.push('\n');
        }
        s
    }

    #[test]
    fn ring_keeps_the_newest_in_order() {
        let mut r = Ring::new(3);
        for i in 0..5u32 {
            r.push(i);
        }
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(r.last(), Some(&4));
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn system_view_snapshot() {
        let mut app = demo(TargetKind::System);
        insta::assert_snapshot!("system_view", render(&mut app, 110, 32));
    }

    #[test]
    fn process_view_snapshot() {
        let mut app = demo(TargetKind::Pid { pid: 4242, name: "eater".into() });
        let s = render(&mut app, 110, 32);
        // The trim mark is numbered on the chart and listed in the panel.
        assert!(s.contains("trim: RSS 812.0 MiB → 96.0 MiB"), "{s}");
        insta::assert_snapshot!("process_view", s);
    }

    #[test]
    fn keys_zoom_mark_and_refuse_without_a_target() {
        let mut app = demo(TargetKind::System);
        let mut events = Vec::new();
        use crossterm::event::KeyCode::Char;
        assert!(on_key(&mut app, Char('+'), false, |_, _| {}));
        assert_eq!(app.window_s, 60.0);
        assert!(on_key(&mut app, Char('-'), false, |_, _| {}));
        assert_eq!(app.window_s, 120.0);
        assert!(on_key(&mut app, Char('m'), false, |k, t| events.push((k.to_string(), t.to_string()))));
        assert_eq!(app.marks.len(), 1);
        assert_eq!(events, vec![("action".to_string(), "mark 1".to_string())]);
        assert!(on_key(&mut app, Char('t'), false, |_, _| {}));
        assert!(app.status.contains("press p"), "{}", app.status);
        assert_eq!(app.marks.len(), 1);
        assert!(!on_key(&mut app, Char('q'), false, |_, _| {}));
    }

    #[test]
    fn trimming_a_child_drops_its_rss() {
        // Our own child: permitted without CAP_SYS_NICE only since 5.12 where
        // the caller may trim processes it can ptrace... skip if refused.
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let r = advise(child.id() as i32, false);
        let _ = child.kill();
        let _ = child.wait();
        match r {
            Ok(text) => assert!(text.starts_with("trim: RSS "), "{text}"),
            Err(e) => {
                assert!(e.contains("CAP_SYS_NICE"), "{e}");
                println!("SKIP part: {e}");
            }
        }
    }
}
