//! The recovery watch's poller (thrash's run, [`super::run`]).

use super::*;

/// The recovery watch's poller: the machine's paging and memory PSI every
/// [`RECOVERY_POLL`], on a thread of its own from the start signal until
/// [`Watch::finish`] (times in s after the start signal). The recovery is
/// read from it afterwards ([`recovery_alive`]), from the moment the load
/// fell back enough to fit, which is known only once the consumers report.
pub(super) struct Watch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    points: std::sync::Arc<std::sync::Mutex<Vec<RecoveryPoint>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    pub(super) fn start(t0: u64, mut p: probe::Probe) -> Watch {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let points = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (s, pts) = (stop.clone(), points.clone());
        let thread = std::thread::spawn(move || {
            let read = |p: &mut probe::Probe| {
                let v = p.vmstat().ok().flatten();
                let paging = v.is_some().then(|| super::run::paging(&v));
                let psi = p.pressure("memory").ok().flatten().map(|m| m.some.total_us);
                (paging, psi, probe::sample::monotonic_ns())
            };
            let mut prev = read(&mut p);
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(RECOVERY_POLL);
                let cur = read(&mut p);
                let dt = (cur.2 - prev.2) as f64 / 1e9;
                let per_s = |a: Option<u64>, b: Option<u64>, scale: f64| match (a, b) {
                    (Some(a), Some(b)) => a.saturating_sub(b) as f64 / scale / dt,
                    _ => f64::NAN,
                };
                let point = RecoveryPoint {
                    t_s: (cur.2 as f64 - t0 as f64) / 1e9,
                    paging_per_s: per_s(cur.0, prev.0, 1.0),
                    psi_some_pct: per_s(cur.1, prev.1, 1e4),
                };
                prev = cur;
                pts.lock().unwrap_or_else(|e| e.into_inner()).push(point);
            }
        });
        Watch { stop, points, thread: Some(thread) }
    }

    /// The points after `from` (s after the start signal).
    pub(super) fn since(&self, from: f64) -> Vec<RecoveryPoint> {
        self.points.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|p| p.t_s > from).copied().collect()
    }

    pub(super) fn finish(mut self) -> Vec<RecoveryPoint> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.points.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Watch {
    /// A run that ends early (an error, an interrupt) stops its poller too.
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
