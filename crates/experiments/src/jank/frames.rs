//! A frame probe's frames, read as a user feels them: how many are late,
//! how long the worst ones take, and when frames are on time again after
//! the hog's load falls back. Pure functions of the frames (tested here).

use serde::{Deserialize, Serialize};

/// One frame: when it was due (s after the start signal), how late it woke,
/// how long its touch and work took (ms), and the probe's major faults so
/// far. Its frame time is the two together: from when it was due until it
/// was done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub t_s: f64,
    pub late_ms: f64,
    pub work_ms: f64,
    pub faults: u64,
}

impl Frame {
    /// Due to done, ms.
    pub fn ms(&self) -> f64 {
        self.late_ms + self.work_ms
    }

    /// The frames this one's length made the probe skip (it draws the next
    /// frame at the first due time after it is done), each of which was
    /// due `j` periods after it and done with it: their frame times, longest
    /// first.
    pub fn skipped(&self, period_ms: f64) -> impl Iterator<Item = f64> + '_ {
        let l = self.ms();
        let k = if period_ms > 0.0 && l > period_ms { (l / period_ms).ceil() as usize - 1 } else { 0 };
        (1..=k).map(move |j| l - j as f64 * period_ms)
    }
}

/// The frame-time buckets' upper edges (ms) of [`FrameFigures::hist`]: two
/// per octave from 1 ms to about 16 s; the last bucket holds the rest.
pub fn bucket_edges() -> Vec<f64> {
    (0..29).map(|i| 2f64.powf(i as f64 / 2.0)).collect()
}

/// A window's frames, as the issue asks for them (figures that are never
/// zero, p99 first, so that no floor decides a finding).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct FrameFigures {
    /// Frames drawn in the window (a stall is one frame, however long).
    pub frames: usize,
    /// Frames due in the window that a longer one before them made the
    /// probe skip. The percentiles count them (each at its own due-to-done
    /// time: a stall of L ms holds frames of L − P, L − 2P, … ms), so that
    /// an arm that stalls more does not lose its worst frames from them.
    pub skipped: usize,
    /// The probe's major faults in the window (None: not recorded).
    pub major_faults: Option<u64>,
    /// The window's length, s.
    pub window_s: f64,
    /// Frames drawn of over 50 ms (three frames at 60 Hz) and over 100 ms
    /// (the lag a person notices), per minute of the window: a stall counts
    /// once.
    pub over_50ms_per_min: Option<f64>,
    pub over_100ms_per_min: Option<f64>,
    /// Frame time (due to done) percentiles over every frame due (drawn and
    /// skipped) and the longest, ms. With about 1 800 frames a 30 s window,
    /// the p99.9 is about the second-longest.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub longest_ms: Option<f64>,
    /// Frames per bucket of [`bucket_edges`] (for the CDF).
    pub hist: Vec<u32>,
}

/// The figures of the frames drawn in `[from_s, to_s)`, with the frames
/// they skipped (`period_ms` apart); empty figures (None) for a window
/// without frames.
pub fn figures(frames: &[Frame], from_s: f64, to_s: f64, period_ms: f64) -> FrameFigures {
    let inside: Vec<&Frame> = frames.iter().filter(|f| f.t_s >= from_s && f.t_s < to_s).collect();
    let drawn: Vec<f64> = inside.iter().map(|f| f.ms()).collect();
    let skipped: Vec<f64> = inside.iter().flat_map(|f| f.skipped(period_ms)).collect();
    let window_s = (to_s - from_s).max(0.0);
    let mut f = FrameFigures { frames: drawn.len(), skipped: skipped.len(), window_s, ..Default::default() };
    if drawn.is_empty() || window_s <= 0.0 {
        return f;
    }
    // The faults since the last frame before the window (or the first in it).
    let start = frames.iter().rev().find(|x| x.t_s < from_s).or(inside.first().copied()).map(|x| x.faults);
    f.major_faults = start.zip(inside.last().map(|x| x.faults)).map(|(a, b)| b.saturating_sub(a));
    let per_min = |limit: f64| drawn.iter().filter(|&&x| x > limit).count() as f64 / (window_s / 60.0);
    let ms: Vec<f64> = drawn.iter().chain(&skipped).copied().collect();
    f.over_50ms_per_min = Some(per_min(50.0));
    f.over_100ms_per_min = Some(per_min(100.0));
    f.p50_ms = record::stats::percentile(&ms, 0.5);
    f.p99_ms = record::stats::percentile(&ms, 0.99);
    f.p999_ms = record::stats::percentile(&ms, 0.999);
    f.longest_ms = record::stats::percentile(&ms, 1.0);
    let edges = bucket_edges();
    f.hist = vec![0; edges.len() + 1];
    for x in &ms {
        let i = edges.iter().position(|e| x <= e).unwrap_or(edges.len());
        f.hist[i] += 1;
    }
    f
}

/// How long after `from_s` frames were on time again: the end of the last
/// frame over `on_time_ms` before the first [`CALM_S`] in which every frame
/// due was on time, less `from_s` (0 when none was late). None when no such
/// stretch came before the frames end (censored at the frames' end).
pub fn back_on_time(frames: &[Frame], from_s: f64, on_time_ms: f64) -> Option<f64> {
    let mut late_end = from_s;
    // A frame due before `from_s` that is still not done then counts too.
    for f in frames.iter().filter(|f| f.t_s + f.ms() / 1e3 > from_s) {
        if f.ms() > on_time_ms {
            late_end = late_end.max(f.t_s + f.ms() / 1e3);
        } else if f.t_s >= from_s && f.t_s - late_end >= CALM_S {
            return Some(late_end - from_s);
        }
    }
    None
}

/// How long every frame must be on time for frames to count as on time again.
pub const CALM_S: f64 = 1.0;

/// On time: within twice the probe's p99 before the hog, and at least two
/// frame periods (`period_ms`), so that a probe fast before the hog is not
/// held to a tighter bound than a frame's own slack.
pub fn on_time_ms(before_p99: Option<f64>, period_ms: f64) -> f64 {
    before_p99.map_or(2.0 * period_ms, |p| (2.0 * p).max(2.0 * period_ms))
}

/// Frame time against time for a chart: the longest frame due in each
/// `bin_s`, from the first frame to the last (s after the start signal, ms).
pub fn series(frames: &[Frame], bin_s: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for f in frames {
        let b = (f.t_s / bin_s).floor() * bin_s;
        match out.last_mut() {
            Some(last) if (last.0 - b).abs() < 1e-9 => last.1 = last.1.max(f.ms()),
            _ => out.push((b, f.ms())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, ms: f64) -> Frame {
        Frame { t_s, late_ms: ms - 1.0, work_ms: 1.0, faults: (t_s * 10.0) as u64 }
    }

    /// 60 frames a second for 10 s, two of them late: one by 80 ms, one
    /// stalled 2 s.
    fn run() -> Vec<Frame> {
        (0..600)
            .map(|i| {
                let t = i as f64 / 60.0;
                at(t, if i == 120 { 81.0 } else if i == 300 { 2000.0 } else { 2.0 })
            })
            .collect()
    }

    #[test]
    fn a_window_counts_its_late_frames_per_minute_and_its_tail() {
        // A period of 1 s (the synthetic frames are drawn at 60 Hz): the
        // 2 s stall skipped one frame (due 1 s after it, done with it:
        // 1000 ms), and the 81 ms frame none.
        let f = figures(&run(), 0.0, 10.0, 1000.0);
        assert_eq!((f.frames, f.skipped), (600, 1));
        // Two drawn over 50 ms and one over 100 ms in 10 s: 12 and 6 a minute.
        assert_eq!((f.over_50ms_per_min, f.over_100ms_per_min), (Some(12.0), Some(6.0)));
        assert_eq!((f.p50_ms, f.longest_ms), (Some(2.0), Some(2000.0)));
        assert!(f.p999_ms.unwrap() > 1000.0 && f.p99_ms == Some(2.0), "{f:?}");
        assert_eq!(f.hist.iter().sum::<u32>(), 601);
        // The faults: 10 a second in the synthetic run, from the frame before
        // the window to its last.
        assert_eq!(f.major_faults, Some(99));
        assert_eq!(figures(&run(), 5.0, 8.0, 1000.0).major_faults, Some(30));
        // At 16.7 ms the stall skipped 119 frames, of 1983 ms down to 16 ms:
        // 120 due frames of the 719 over 16.7 ms, and the p99 is the stall's.
        let g = figures(&run(), 0.0, 10.0, 16.7);
        assert_eq!((g.frames, g.skipped), (600, 4 + 119));
        assert!(g.p99_ms.unwrap() > 1000.0, "{g:?}");
        // The 2 s frame is in the bucket past 1448 ms (2^10.5), at most 2048.
        let edges = bucket_edges();
        let i = edges.iter().position(|&e| e >= 2000.0).unwrap();
        assert_eq!(f.hist[i], 1);
        // A window of the first 2 s holds neither late frame.
        let g = figures(&run(), 0.0, 2.0, 16.7);
        assert_eq!((g.frames, g.over_50ms_per_min, g.longest_ms), (120, Some(0.0), Some(2.0)));
        // No frames: no figures, not zeros.
        let e = figures(&run(), 20.0, 30.0, 16.7);
        assert_eq!((e.frames, e.p99_ms, e.over_100ms_per_min), (0, None, None));
    }

    #[test]
    fn frames_are_on_time_again_after_a_calm_second() {
        let fr = run();
        // From 4 s: the 2 s stall due at 5 s ends at 7 s; calm from then.
        let r = back_on_time(&fr, 4.0, 33.4).unwrap();
        assert!((r - 3.0).abs() < 1e-6, "{r}");
        // From 6 s: the stall due at 5 s is still on until 7 s, and counts.
        assert!((back_on_time(&fr, 6.0, 33.4).unwrap() - 1.0).abs() < 1e-9);
        // From 8 s nothing is late.
        assert_eq!(back_on_time(&fr, 8.0, 33.4), Some(0.0));
        // A late frame just before the end leaves no calm second: censored.
        let mut tail = fr.clone();
        tail.push(at(10.0, 200.0));
        tail.push(at(10.5, 2.0));
        assert_eq!(back_on_time(&tail, 9.5, 33.4), None);
        // The on-time bound: twice the p99 before, at least two frames.
        assert_eq!(on_time_ms(Some(3.0), 16.7), 33.4);
        assert_eq!(on_time_ms(Some(40.0), 16.7), 80.0);
        assert_eq!(on_time_ms(None, 16.7), 33.4);
    }

    #[test]
    fn the_series_keeps_each_bins_longest_frame() {
        let s = series(&run(), 1.0);
        assert_eq!(s.len(), 10);
        assert_eq!(s[5], (5.0, 2000.0));
        assert_eq!(s[2], (2.0, 81.0));
        assert_eq!(s[0], (0.0, 2.0));
    }
}
