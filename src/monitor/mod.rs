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

mod actions;
mod demo;
mod draw;
mod state;

pub use actions::*;
pub use demo::*;
pub use draw::*;
pub use state::*;

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
    // SAFETY: a C struct of integers (and pointers), for which all-zero bytes are a valid value.
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
    let headless = a.headless || (a.serve.is_some() && !std::io::stdout().is_terminal());
    if a.headless && a.serve.is_none() && a.record.is_none() {
        return Err(usage(
            "--headless needs --serve ADDR or --record DIR: without a terminal there is nothing else to show",
        ));
    }
    if !headless && !std::io::stdout().is_terminal() {
        return Err(usage(
            "pagelab monitor needs a terminal on stdout; to serve metrics without one, give --serve ADDR (e.g. --serve 127.0.0.1:9464); to record, use pagelab record (e.g. pagelab record --duration 60s --pid PID)",
        ));
    }
    // Bound before anything is created, so a busy port changes nothing.
    let server = a.serve.map(crate::serve::Server::start).transpose()?;
    let publisher = server.as_ref().map(|s| s.publisher());
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
            if let Some(p) = &publisher {
                p.publish(s);
            }
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
    if let Some(s) = &server {
        say::errln!("pagelab: serving OpenMetrics on http://{}/metrics", s.addr());
    }
    if headless {
        let what = if target == TargetKind::System { "the system".to_string() } else { target_line(&target) };
        say::errln!("pagelab: monitoring {what} headless; stop with SIGINT or SIGTERM");
        while !record::stop::sleep(Duration::from_secs(3600)) {}
    } else {
        interactive(&mut app, &ring, &sampler, &dir, target, &zram)?;
    }
    let st = sampler.stop();
    drop(server);
    if let Some(d) = dir {
        let _ = d.update(|r| r.sampler = Some(st));
        let status = if record::stop::requested() {
            record::rundir::RunStatus::new(record::rundir::State::Interrupted, Some("stopped by a signal".into()))
        } else {
            record::rundir::RunStatus::new(record::rundir::State::Complete, None)
        };
        d.finish(status)?;
        say::errln!(
            "recorded {:.0} s to {} (render it with pagelab report)",
            (probe::sample::monotonic_ns() - t0_ns) as f64 / 1e9,
            d.path().display()
        );
    }
    Ok(())
}

/// The terminal interface, until q, a signal or a hang-up.
fn interactive(
    app: &mut App,
    ring: &Mutex<Vec<Point>>,
    sampler: &record::sampler::Sampler,
    dir: &Option<Arc<record::rundir::RunDir>>,
    target: TargetKind,
    zram: &[u32],
) -> anyhow::Result<()> {
    use std::io::IsTerminal;
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
    // Never dropped: ratatui's drop shows the cursor again and, if that
    // fails (a terminal that hung up), reports it with std's eprintln!,
    // which panics on the same dead terminal and skips finishing the
    // record. TermGuard shows the cursor, ignoring errors.
    let mut term = std::mem::ManuallyDrop::new(ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(
        std::io::stdout(),
    ))?);
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
            sampler.set_targets(targets_for(&cur_target, zram));
        }
        if redraw {
            term.draw(|f| draw(f, app))?;
            redraw = false;
        }
        if wait_input(stdin_tty)? {
            if let crossterm::event::Event::Key(k) = crossterm::event::read()? {
                if k.kind != crossterm::event::KeyEventKind::Press {
                    continue;
                }
                let ctrl = k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL);
                let d = dir.clone();
                let go = on_key(app, k.code, ctrl, |kind, text| {
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
    drop(_guard);
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
                say::outln!("SKIP part: {e}");
            }
        }
    }
}
