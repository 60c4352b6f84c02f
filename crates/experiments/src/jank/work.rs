//! jank's frame probe (a worker process) and its run: thrash's hog, one arm
//! after another in a balanced order, each run with a frame probe inside
//! the hog's group and one outside it.

use crate::jank::frames::{self, Frame};
use crate::jank::results::{JankResult, ProbeFigures, Setting};
use crate::thrash::work::{Command, Companion, Exit, Extras, PlanExt, ThrashConfig, wait_input_until};
use sandbox::worker::EventKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use workloads::backing::BackingKind;
use workloads::observe::ExperimentError;

/// The frame probe's worker kind.
pub const FRAME: &str = "jank-frame";
/// The default frame: 60 Hz.
pub const FRAME_PERIOD: Duration = Duration::from_micros(16_667);
/// The frame probe's working set, as a share of the room under the hog's limit.
pub const SHARE: f64 = 0.25;
/// The share of its working set a frame touches: all of it every 16 frames.
pub const TOUCH_SHARE: f64 = 1.0 / 16.0;
/// A frame's fixed work: xorshift steps (about 0.1 to 0.5 ms on the 2-vCPU VM).
pub const FRAME_WORK: u64 = 200_000;
/// The chart's bin, s.
pub const SERIES_BIN_S: f64 = 0.25;

/// The frame probe's start (`--spec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameSpec {
    pub ws: u64,
    pub period_us: u64,
    pub touch_pages: u64,
    pub work: u64,
    pub inside: bool,
}

/// The frame probe's answer to `exit`: each frame as (due, monotonic ns;
/// late, µs; its touch and work, µs; the probe's major faults so far), and
/// the frames it skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameReply {
    pub frames: Vec<(u64, u32, u32, u32)>,
    pub missed: u64,
}

/// This process's major faults so far (0 where getrusage fails).
fn major_faults() -> u32 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage for RUSAGE_SELF.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } == 0 { u.ru_majflt as u32 } else { 0 }
}

/// A spec the frame probe can keep: a period from 1 ms to 1 s, at most
/// 1 TiB of working set and 10^9 steps of work a frame.
fn check_spec(s: &FrameSpec) -> Result<(), String> {
    if !(1_000..=1_000_000).contains(&s.period_us) {
        return Err(format!("{FRAME}: period_us {}: expected 1000 to 1000000", s.period_us));
    }
    if s.ws > 1 << 40 || s.work > 1_000_000_000 {
        return Err(format!("{FRAME}: ws {} or work {} out of range (at most 1 TiB, 10^9 steps)", s.ws, s.work));
    }
    Ok(())
}

/// The frame probe: `__worker jank-frame --spec JSON` ([`FrameSpec`]). It
/// touches its whole working set once, says it is ready, and then every
/// period wakes at the frame's due time, writes a byte in each of its next
/// `touch_pages` pages (round robin) and does `work` steps; a frame that
/// ends past the next due times skips them (as a compositor drops frames).
/// On `exit` it reports every frame.
pub fn frame_main(io: &mut sandbox::worker::child::WorkerIo, args: &[String]) -> Result<(), String> {
    let s: FrameSpec = sandbox::worker::spec_of(FRAME, args)?;
    check_spec(&s)?;
    let page = workloads::mm::page_size();
    let ws = (s.ws as usize).max(page);
    let mut m = workloads::mm::Mapping::anon(ws, 0).map_err(|e| format!("allocating {ws} bytes: {e}"))?;
    let buf = m.as_mut_slice();
    for i in (0..ws).step_by(page) {
        buf[i] = 1;
    }
    let pages = ws / page;
    let touch = (s.touch_pages as usize).clamp(1, pages);
    let period = s.period_us.max(1) * 1000;
    let mut out = FrameReply { frames: Vec::with_capacity(1 << 16), missed: 0 };
    io.emit(EventKind::Ready, "", Value::Null);
    let (mut due, mut cursor, mut x) = (probe::sample::monotonic_ns() + period, 0usize, 0x9e37_79b9_7f4a_7c15u64);
    loop {
        if wait_input_until(io, due) {
            match io.command::<Command>() {
                Some(Ok(Command::Start(_))) => continue,
                Some(Ok(Command::Exit(_))) | None => break,
                Some(Err(e)) => return Err(e),
            }
        }
        let woke = probe::sample::monotonic_ns();
        for _ in 0..touch {
            // SAFETY: cursor < pages, so the byte is inside the mapping.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(cursor * page + (x as usize % page)), x as u8) };
            cursor = (cursor + 1) % pages;
        }
        x = std::hint::black_box(workloads::kernels::xorshift_steps(x, s.work));
        let done = probe::sample::monotonic_ns();
        let us = |a: u64, b: u64| (a.saturating_sub(b) / 1000).min(u32::MAX as u64) as u32;
        out.frames.push((due, us(woke, due), us(done, woke), major_faults()));
        due += period;
        while due < done {
            due += period;
            out.missed += 1;
        }
    }
    io.reply::<Exit>(&serde_json::to_value(&out).map_err(|e| e.to_string())?);
    Ok(())
}

/// Where an arm's paged-out memory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// zram, with its compressor (None: the kernel's default).
    Zram(Option<String>),
    /// zswap in front of a swap file, with its compressor.
    Zswap(Option<String>),
    Swapfile,
    /// No swap: the hog under the study's limit cannot page its anonymous
    /// memory out, so the guard raises the limit and then lets the kernel's
    /// OOM killer decide; the report says what happened.
    NoSwap,
    /// The CPU-only control: the hog's group holds it twice over, no swap.
    CpuOnly,
}

impl serde::Serialize for Store {
    /// As `--arms` takes it: `zram:lz4`, `swapfile`, `cpu-only`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&Arm::of(self.clone()).name())
    }
}

/// One arm: a store and the global settings it runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    pub store: Store,
    pub swappiness: Option<u32>,
    pub page_cluster: Option<u32>,
    /// MGLRU's min_ttl_ms (MGLRU enabled for the run).
    pub min_ttl_ms: Option<u32>,
    /// zswap's shrinker on or off (zswap arms only).
    pub zswap_shrinker: Option<bool>,
}

impl Arm {
    pub fn of(store: Store) -> Arm {
        Arm { store, swappiness: None, page_cluster: None, min_ttl_ms: None, zswap_shrinker: None }
    }

    /// Its name: the store (`zram:lz4`, `zswap`, `swapfile`, `cpu-only`),
    /// then its settings (` swappiness=100`, ` page-cluster=0`,
    /// ` shrinker=on`).
    pub fn name(&self) -> String {
        let mut n = match &self.store {
            Store::Zram(c) => c.as_ref().map_or("zram".into(), |c| format!("zram:{c}")),
            Store::Zswap(c) => c.as_ref().map_or("zswap".into(), |c| format!("zswap:{c}")),
            Store::Swapfile => "swapfile".into(),
            Store::NoSwap => "none".into(),
            Store::CpuOnly => "cpu-only".into(),
        };
        if let Some(v) = self.swappiness {
            n += &format!(" swappiness={v}");
        }
        if let Some(v) = self.page_cluster {
            n += &format!(" page-cluster={v}");
        }
        if let Some(v) = self.min_ttl_ms {
            n += &format!(" min_ttl_ms={v}");
        }
        if let Some(v) = self.zswap_shrinker {
            n += if v { " shrinker=on" } else { " shrinker=off" };
        }
        n
    }

    /// The store's kind and compressor.
    pub fn backing(&self) -> (BackingKind, Option<&str>) {
        match &self.store {
            Store::Zram(c) => (BackingKind::Zram, c.as_deref()),
            Store::Zswap(c) => (BackingKind::Zswap, c.as_deref()),
            Store::Swapfile => (BackingKind::Swapfile, None),
            Store::NoSwap | Store::CpuOnly => (BackingKind::None, None),
        }
    }

    /// The sysctls it sets.
    pub fn sysctls(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(s) = self.swappiness {
            v.push(("vm.swappiness", s.to_string()));
        }
        if let Some(p) = self.page_cluster {
            v.push(("vm.page-cluster", p.to_string()));
        }
        v
    }

    /// Parses one store: zram[:COMP], zswap[:COMP], swapfile, none or cpu-only.
    pub fn parse_store(s: &str) -> Result<Store, String> {
        let (kind, comp) = match s.split_once(':') {
            Some((k, c)) => (k, Some(c)),
            None => (s, None),
        };
        let comp = match comp {
            Some(c) if c.is_empty() || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-') => {
                return Err(format!("'{s}': a compressor is a name such as lz4, lzo-rle or zstd"));
            }
            c => c.map(str::to_string),
        };
        match (kind, comp) {
            ("zram", c) => Ok(Store::Zram(c)),
            ("zswap", c) => Ok(Store::Zswap(c)),
            ("swapfile", None) => Ok(Store::Swapfile),
            ("none", None) => Ok(Store::NoSwap),
            ("cpu-only", None) => Ok(Store::CpuOnly),
            ("swapfile" | "none" | "cpu-only", Some(_)) => Err(format!("'{s}': only zram and zswap take a compressor")),
            _ => Err(format!(
                "unknown arm '{s}': expected zram[:COMPRESSOR], zswap[:COMPRESSOR], swapfile, none or cpu-only, e.g. \
                 zram:lz4,zswap,swapfile,cpu-only"
            )),
        }
    }
}

/// A jank run: the hog (thrash's configuration, one preset), the arms, and
/// the frame probe.
pub struct JankConfig {
    pub hog: ThrashConfig,
    pub arms: Vec<Arm>,
    pub repeat: u32,
    pub period: Duration,
    pub share: f64,
    /// Every arm under the CPU-only limit (`--cpu-only`: the findings' control).
    pub cpu_only: bool,
    /// The compressors this machine's zram offers.
    pub zram_offers: Vec<String>,
    /// A user's command as the hog, in place of thrash's consumers.
    pub command: Option<crate::jank::command::CommandHog>,
    /// The swap file's disk limited to this many reads and writes a second
    /// for the hog's group, in the swapfile arms (`--swap-iops`).
    pub swap_iops: Option<u64>,
}

impl JankConfig {
    /// The hog's plan for an arm (the CPU-only control's limit holds it twice over).
    pub fn plan(&self, arm: &Arm) -> crate::thrash::results::Plan {
        let cfg = ThrashConfig { cpu_only: self.cpu_only || arm.store == Store::CpuOnly, ..self.hog.clone() };
        cfg.plans().remove(0)
    }

    /// The frame probe's working set: `share` of the room, where the room
    /// holds N × S and the probe's own working set 2.5 times over:
    /// room = N × S ÷ (2.5 − share).
    /// For a user's command, `share` of its group's limit.
    pub fn ws(&self) -> u64 {
        let room = match &self.command {
            Some(h) => h.limit as f64,
            None => self.plan(&Arm::of(Store::Swapfile)).total_bytes() as f64 / (crate::thrash::work::OVERCOMMIT - self.share),
        };
        let page = workloads::mm::page_size() as f64;
        ((self.share * room / page).round() * page).max(page) as u64
    }

    /// The store's room beyond N × S: the frame probe's pages and the idle
    /// workers' too.
    pub fn store_extra(&self, plan: &crate::thrash::results::Plan) -> u64 {
        self.ws() + (plan.consumers as u64 + 8) * crate::thrash::work::WORKER_OVERHEAD
    }

    /// The pages a frame touches.
    pub fn touch_pages(&self) -> u64 {
        ((self.ws() / workloads::mm::page_size() as u64) as f64 * TOUCH_SHARE).ceil().max(1.0) as u64
    }

    /// The frame probes of a run: inside the group (counted in the
    /// overcommit) and outside it, alike.
    pub fn companions(&self) -> Vec<Companion> {
        [true, false]
            .into_iter()
            .map(|inside| Companion {
                kind: FRAME,
                spec: serde_json::to_value(FrameSpec {
                    ws: self.ws(),
                    period_us: self.period.as_micros() as u64,
                    touch_pages: self.touch_pages(),
                    work: FRAME_WORK,
                    inside,
                })
                .unwrap_or(Value::Null),
                inside,
                label: format!("frame probe {}", if inside { "inside the group" } else { "outside the group" }),
                counted_bytes: if inside { self.ws() } else { 0 },
            })
            .collect()
    }

    /// (repeat, arm) in run order: each repeat's arms in a balanced order
    /// (a Williams square where the repeats fill one, else ABBA).
    pub fn schedule(&self) -> Vec<(u32, Arm)> {
        (0..self.repeat)
            .flat_map(|r| {
                workloads::order::balanced(&self.arms, r as usize, self.repeat as usize).into_iter().map(move |a| (r, a))
            })
            .collect()
    }
}

/// One probe's frames, by window, from its reply.
pub fn probe_figures(reply: Option<&Value>, t0_ns: u64, hog: &crate::thrash::results::ThrashResult, inside: bool, cfg: &JankConfig) -> ProbeFigures {
    let r: FrameReply = reply.and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let fr: Vec<Frame> = r
        .frames
        .iter()
        .map(|&(due, late, work, faults)| Frame {
            t_s: (due as f64 - t0_ns as f64) / 1e9,
            late_ms: late as f64 / 1e3,
            work_ms: work as f64 / 1e3,
            faults: faults as u64,
        })
        .collect();
    let baseline = hog.plan.as_ref().map_or(crate::jank::command::BEFORE.as_secs_f64(), |p| p.baseline().as_secs_f64());
    let period_ms = cfg.period.as_secs_f64() * 1e3;
    let before = frames::figures(&fr, -baseline, 0.0, period_ms);
    let on_time = frames::on_time_ms(before.p99_ms, period_ms);
    let fits = hog.recovery_from_s.unwrap_or(hog.thrash_end_s);
    ProbeFigures {
        inside,
        ws_bytes: cfg.ws(),
        during: frames::figures(&fr, hog.thrash_start_s, hog.thrash_end_s, period_ms),
        after: frames::figures(&fr, fits, hog.end_s, period_ms),
        back_on_time_s: frames::back_on_time(&fr, fits, on_time),
        watch_s: hog.end_s - fits,
        on_time_ms: on_time,
        before,
        missed: r.missed,
        series: frames::series(&fr, SERIES_BIN_S),
    }
}

/// Runs every arm `repeat` times, in [`JankConfig::schedule`]'s order.
pub fn run<O: workloads::observe::Observer<Entry = crate::jank::results::Entry>>(
    cfg: &JankConfig,
    obs: &mut O,
    stop: fn() -> bool,
) -> Result<Vec<JankResult>, ExperimentError> {
    let mut out = Vec::new();
    let companions = cfg.companions();
    for (rep, arm) in cfg.schedule() {
        if stop() {
            return Err(ExperimentError::Interrupted);
        }
        let (kind, compressor) = arm.backing();
        let cpu_only = cfg.cpu_only || arm.store == Store::CpuOnly;
        let (o, command) = match &cfg.command {
            Some(h) => {
                let (o, c) = crate::jank::command::run_one(cfg, h, (&arm, rep), obs, stop)?;
                (o, Some(c))
            }
            None => {
                let plan = cfg.plan(&arm);
                let sysctls = arm.sysctls();
                obs.note(&format!("jank {} repeat {}", arm.name(), rep + 1));
                let store_extra = cfg.store_extra(&plan);
                let swap_iops = cfg.swap_iops.filter(|_| arm.store == Store::Swapfile);
                let x = Extras {
                    compressor,
                    store_extra,
                    sysctls: &sysctls,
                    min_ttl_ms: arm.min_ttl_ms,
                    zswap_shrinker: arm.zswap_shrinker,
                    companions: &companions,
                    swap_iops,
                };
                (crate::thrash::work::run_one(&cfg.hog, (&plan, kind, rep), obs, stop, &x)?, None)
            }
        };
        let hog = crate::thrash::results::ThrashResult { series: Default::default(), ..o.result };
        let r = JankResult {
            arm: arm.name(),
            repeat_index: rep,
            cpu_only,
            command,
            compressor: hog.compressor.clone(),
            zram_offers: cfg.zram_offers.clone(),
            settings: o.settings.iter().map(|(k, v)| Setting { name: k.clone(), value: v.clone() }).collect(),
            inside: probe_figures(o.companions.first().and_then(Option::as_ref), o.t0_ns, &hog, true, cfg),
            outside: probe_figures(o.companions.get(1).and_then(Option::as_ref), o.t0_ns, &hog, false, cfg),
            hog,
        };
        obs.note(&crate::jank::report::run_line(&r));
        obs.result(&crate::jank::results::Entry { result: r.clone() })?;
        out.push(r);
    }
    Ok(out)
}
