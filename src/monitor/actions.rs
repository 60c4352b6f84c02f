//! What the keys do: trim or cool a process (process_madvise), reclaim from a
//! cgroup, pick a process, set marks.

use super::*;

pub(crate) fn rss_of(pid: i32) -> Option<u64> {
    Probe::default().pid_status(pid).ok().flatten().and_then(|s| s.vm_rss)
}

/// Processes by RSS, largest first: (pid, comm, RSS bytes).
pub fn processes() -> Vec<(i32, String, u64)> {
    Probe::default().processes().into_iter().map(|p| (p.pid, p.comm, p.rss)).collect()
}

/// The private mappings of a process that can be advised, as (start, length)
/// (the vsyscall page cannot).
/// Trims (MADV_PAGEOUT) or deactivates (MADV_COLD) a process; returns the mark text.
pub fn advise(pid: i32, cold: bool) -> Result<String, String> {
    let what = if cold { "cold" } else { "trim" };
    let before = rss_of(pid).ok_or_else(|| format!("{what}: pid {pid} is gone"))?;
    let t = Instant::now();
    let advice = if cold { workloads::mm::MADV_COLD } else { workloads::mm::MADV_PAGEOUT };
    experiments::assess::work::advise(&mut probe::Probe::default(), pid, advice).map_err(|e| format!("{what}: {e}"))?;
    let after = rss_of(pid).unwrap_or(0);
    Ok(format!("{what}: RSS {} → {} in {:.1} s", units::bytes(before), units::bytes(after), t.elapsed().as_secs_f64()))
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
            units::bytes(before),
            units::bytes(after),
            t0.elapsed().as_secs_f64()
        )),
        Ok(()) => Ok(format!("reclaim {}: {} → {}", cg.name, units::bytes(before), units::bytes(after))),
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
