//! The demo state the docs' screenshot is rendered from.

use super::*;

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
    say::errln!("wrote {}", path.display());
    Ok(())
}
