//! The monitor's state: the ring of fixed-size points, marks, the target and
//! the key-driven mode.

use super::*;

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
    pub(crate) cols: Vec<Option<Point>>,
    pub(crate) swap_pts: Vec<(f64, f64)>,
    pub(crate) store_pts: Vec<(f64, f64)>,
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
    pub(crate) fn columns(&mut self, width: usize) {
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

pub(crate) fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}
