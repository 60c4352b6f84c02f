//! `pagelab lab`: doctor, a plan fitted to this machine, every experiment in its
//! own child process (so one that fails cannot take the others with it), then
//! one directory with all run directories and a self-contained report.html.

use crate::cli::LabArgs;
use crate::usage;
use anyhow::Context;
use report::html::fmt_secs as fmt_s;
use report::lab::{Lab, Step, StepState};
use sandbox::privilege;
use std::io::IsTerminal;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// What the plan depends on.
#[derive(Debug, Clone)]
pub struct Machine {
    pub root: bool,
    pub cpus: u32,
    pub ram_bytes: u64,
    /// An active swap area that pagelab did not create (usable without root).
    pub swap_active: bool,
}

impl Machine {
    pub fn here() -> Machine {
        let mut p = probe::Probe::default();
        let env = p.environment();
        let caps = privilege::effective_caps();
        Machine {
            root: privilege::is_root() && caps & (1 << privilege::CAP_SYS_ADMIN) != 0,
            cpus: env.cpus.max(1) as u32,
            ram_bytes: env.ram_bytes,
            swap_active: !env.swaps.is_empty(),
        }
    }
}

fn size(b: u64) -> String {
    format!("{}MiB", b / MIB)
}

fn list<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// The steps for this machine. `full` comes closer to the studies; the quick plan
/// fits in about 5 minutes on a 2-core VM.
pub fn plan(m: &Machine, full: bool, only: &[String]) -> Vec<Step> {
    let mut steps = Vec::new();
    let ram_mib = m.ram_bytes / MIB;
    let step = |experiment: &str, args: Vec<String>, expect_s: f64| Step {
        experiment: experiment.into(),
        args,
        expect_s,
        state: StepState::Planned,
        reason: None,
        seconds: None,
        dir: None,
        exit_code: None,
        note: None,
    };
    let skip = |mut s: Step, why: &str| {
        s.state = StepState::Skipped;
        s.reason = Some(why.into());
        s.expect_s = 0.0;
        s
    };
    let s = |x: &str| x.to_string();

    // eat: the study used 5 GB per pattern on 16 GB; stay at 1/16 of RAM at most.
    let eat_size =
        if full { (1024 * MIB).min(m.ram_bytes / 16) } else { (128 * MIB).min(m.ram_bytes / 64) }.max(16 * MIB);
    let eat_repeat = 3u32;
    let compressors = if full && m.root { 3.0 } else { 1.0 };
    let mut eat_args = vec![s("--size"), size(eat_size), s("--repeat"), eat_repeat.to_string()];
    if full && m.root {
        eat_args.extend([s("--compressor"), s("all")]);
    }
    let mut eat_note = None;
    if !m.root && !m.swap_active {
        eat_args.extend([s("--backing"), s("none")]);
        eat_note = Some(
            "ran without swap: creating zram needs root and no swap is active, so nothing could be trimmed \
             and the store figures are missing; the fill and read-back are measured"
                .to_string(),
        );
    } else if !m.root {
        eat_args.extend([s("--backing"), s("existing")]);
        eat_note = Some("used the swap already active (creating zram needs root)".to_string());
    }
    let eat_expect = 2.0 + 4.0 * eat_repeat as f64 * compressors * (0.1 + (eat_size / MIB) as f64 * 0.0075);
    let mut e = step("eat", eat_args, eat_expect);
    e.note = eat_note;
    steps.push(e);

    // wscap: the study's 64 MiB scan under a 32 MiB cap.
    let (dur, rep) = if full { (5.0, 3u32) } else { (2.0, 3u32) };
    let mut w_args = vec![
        s("--size"),
        s("64MiB"),
        s("--cap"),
        s("32MiB"),
        s("--duration"),
        format!("{dur}s"),
        s("--repeat"),
        rep.to_string(),
    ];
    let mut modes = 6.0;
    let mut w_note = None;
    if full {
        w_args.extend([s("--sweep-cap"), s("56MiB,48MiB,40MiB,24MiB,16MiB")]);
        modes += 5.0 / rep as f64;
    }
    let wscap = if m.root {
        Some(step("wscap", w_args, 1.0 + modes * rep as f64 * (dur + 0.3)))
    } else if m.swap_active {
        w_args.extend([s("--backing"), s("existing"), s("--modes"), s("none,periodic-pageout,periodic-cold")]);
        w_note = Some("the cap modes need a memory cgroup, which needs root: only the periodic modes ran".into());
        Some(step("wscap", w_args, 1.0 + 3.0 * rep as f64 * (dur + 0.3)))
    } else {
        None
    };
    match wscap {
        Some(mut w) => {
            w.note = w_note;
            steps.push(w);
        }
        None => steps.push(skip(
            step("wscap", vec![], 0.0),
            "needs root: a capped working set needs swap to go to, and without root pagelab can neither \
             create zram nor a memory cgroup (and no swap is active)",
        )),
    }

    // heap: thread counts up to 128 (full) or 8 × cores (quick).
    let c = m.cpus;
    let mut threads: Vec<u32> =
        if full { vec![1, 2, 4, 8, 16, 32, 64, 128] } else { vec![1, c, 2 * c, (8 * c).min(64)] };
    threads.sort_unstable();
    threads.dedup();
    let (ops, hrep) = if full { (2_000_000u64, 3u32) } else { (1_000_000u64, 3u32) };
    let thread_ops: f64 = threads.iter().map(|&t| t as f64 * (1.0 + t as f64 / c as f64 * 0.1)).sum();
    // Each repeat runs PROCS processes, each with its own growth phase (about
    // 300 000 allocations per thread) before its share of the warm calls.
    let procs = workloads::heap::PROCS as f64;
    let calls = ops as f64 + procs * 300_000.0;
    let heap_expect =
        1.0 + 3.0 * hrep as f64 * (threads.len() as f64 * 0.08 * procs + calls * thread_ops * 40e-9 / c as f64);
    steps.push(step(
        "heap",
        vec![s("--threads"), list(&threads), s("--ops"), ops.to_string(), s("--repeat"), hrep.to_string()],
        heap_expect,
    ));

    // mapping: the study's 300 MiB (full) or 128 MiB (quick), as RAM allows.
    let map_size =
        if full { (300 * MIB).min(m.ram_bytes / 16) } else { (128 * MIB).min(m.ram_bytes / 32) }.max(16 * MIB);
    let (iters, warm) = if full { (20u32, 3u32) } else { (10, 2) };
    steps.push(step(
        "mapping",
        vec![s("--size"), size(map_size), s("--iterations"), iters.to_string(), s("--warmup"), warm.to_string()],
        1.0 + 7.0 * (iters + warm) as f64 * (map_size / MIB) as f64 * 0.0009,
    ));

    // thrash: the study's four presets. Quick: 6 consumers at a tenth of its
    // sizes and a twentieth of its times, on a swap file (the study's store:
    // a disk makes each fault expensive, so e2 thrashes deeply at this scale).
    // Full: all four at a quarter (or a tenth) on zram and on a swap file,
    // side by side. t_s scales with W, so the paging demand per second is the
    // study's (docs/thrash.md).
    let thrash = if !m.root {
        skip(
            step("thrash", vec![], 0.0),
            "needs root: the consumers must be contained in a memory cgroup, and pagelab never thrashes the host itself",
        )
    } else if full {
        let scale = if ram_mib >= 8 * 1024 { 0.25 } else { 0.1 };
        // Per run: the initial delay, N - 1 staggers and t_p = (N + 1) t_c, plus
        // the baseline, after window and setup.
        let per = |tc: f64| (50.0 * tc + 10.0) * scale + 12.0;
        step(
            "thrash",
            vec![
                s("--preset"),
                s("all"),
                s("--scale"),
                scale.to_string(),
                s("--backing"),
                s("zram,swapfile"),
                s("--repeat"),
                s("2"),
            ],
            2.0 * 2.0 * (3.0 * per(30.0) + per(1.0)),
        )
    } else {
        let (n, scale, time_scale, rep) = (6u32, 0.1, 0.05, 2u32);
        // Per run: the baseline and after windows (3 s each), the plan, setup.
        let per = |tc: f64| 7.5 + (2.0 * n as f64 * tc + 10.0) * time_scale;
        step(
            "thrash",
            vec![
                s("--preset"),
                s("all"),
                s("--scale"),
                scale.to_string(),
                s("--time-scale"),
                time_scale.to_string(),
                s("--consumers"),
                n.to_string(),
                s("--backing"),
                s("swapfile"),
                s("--repeat"),
                rep.to_string(),
            ],
            rep as f64 * (3.0 * per(30.0) + per(1.0)),
        )
    };
    steps.push(thrash);

    if !only.is_empty() {
        steps.retain(|s| only.contains(&s.experiment));
    }
    steps
}

/// Progress on the terminal (indicatif bars) or as plain lines.
struct Progress {
    bars: Option<(indicatif::MultiProgress, indicatif::ProgressBar)>,
    to_stderr: bool,
    total_ms: u64,
}

impl Progress {
    fn new(total_s: f64, json: bool) -> Progress {
        let total_ms = (total_s * 1e3) as u64;
        let tty = std::io::stdout().is_terminal() && std::io::stderr().is_terminal() && !json;
        let bars = tty.then(|| {
            let mp = indicatif::MultiProgress::new();
            let all = mp.add(indicatif::ProgressBar::new(total_ms.max(1)));
            all.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>8} [{bar:36.green/white}] {percent:>3}%  {elapsed:>4} elapsed, ETA {eta:>4}  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            all.set_prefix("lab");
            (mp, all)
        });
        Progress { bars, to_stderr: json, total_ms }
    }

    fn line(&self, s: &str) {
        match &self.bars {
            Some((mp, _)) => {
                let _ = mp.println(s);
            }
            None if self.to_stderr => eprintln!("{s}"),
            None => println!("{s}"),
        }
    }

    fn step_bar(&self, name: &str, expect_ms: u64) -> Option<indicatif::ProgressBar> {
        let (mp, _) = self.bars.as_ref()?;
        let b = mp.insert(0, indicatif::ProgressBar::new(expect_ms.max(1)));
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix:>8} [{bar:36.cyan/blue}] {percent:>3}%  {elapsed:>4} elapsed, ETA {eta:>4}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_prefix(name.to_string());
        Some(b)
    }

    fn overall(&self, done_ms: u64, msg: &str) {
        if let Some((_, all)) = &self.bars {
            all.set_position(done_ms.min(self.total_ms));
            all.set_message(msg.to_string());
        }
    }

    fn finish(&self) {
        if let Some((_, all)) = &self.bars {
            all.finish_and_clear();
        }
    }
}

fn now_ms() -> u64 {
    probe::sample::realtime_ns() / 1_000_000
}

/// The last non-empty line of a log (why a child failed).
fn last_line(p: &Path) -> Option<String> {
    let t = std::fs::read_to_string(p).ok()?;
    t.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().trim_start_matches("pagelab: ").to_string())
}

pub fn run(a: &LabArgs) -> anyhow::Result<()> {
    let full = a.full;
    let mode = if full { "full" } else { "quick" };
    if let Some(out) = &a.out
        && out.exists()
        && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true)
    {
        let what = if out.is_dir() { "exists and is not empty" } else { "exists and is not a directory" };
        return Err(usage(format!("--out {}: {what}; give a new directory", out.display())));
    }
    let m = Machine::here();
    let findings = crate::doctor::examine();
    let mut steps = plan(&m, full, &a.only);
    let expect: f64 = steps.iter().map(|s| s.expect_s).sum();
    let say = |s: &str| if a.json { eprintln!("{s}") } else { println!("{s}") };

    say(&format!(
        "pagelab lab --{mode}: {} CPUs, {:.1} GiB RAM, {}",
        m.cpus,
        m.ram_bytes as f64 / (1u64 << 30) as f64,
        if m.root { "root" } else { "not root" }
    ));
    for c in findings.checks.iter().filter(|c| !c.affects.is_empty()) {
        say(&format!("  doctor: {}: {} (affects {})", c.name, c.detail, c.affects.join(", ")));
    }
    for s in &steps {
        match s.state {
            StepState::Skipped => say(&format!("  skip {:<8} {}", s.experiment, s.reason.as_deref().unwrap_or(""))),
            _ => say(&format!(
                "  plan {:<8} ~{:>10}  pagelab {} {}",
                s.experiment,
                fmt_s(s.expect_s),
                s.experiment,
                s.args.join(" ")
            )),
        }
    }
    say(&format!("expected time: about {} ({} experiments)", fmt_s(expect), steps.len()));
    if a.dry_run {
        return Ok(());
    }

    // One lab at a time, and no other experiment beside it; its children run
    // under this lock (they inherit it), and nobody else's run slips in between steps.
    let lock = crate::experiment::take_run_lock("lab", a.lock.no_wait)?;
    let out = match &a.out {
        Some(o) => o.clone(),
        None => crate::record_cmd::default_out("lab")?,
    };
    std::fs::create_dir_all(out.join("logs")).map_err(|e| usage(format!("--out {}: {e}", out.display())))?;
    std::fs::write(out.join("doctor.json"), serde_json::to_vec_pretty(&findings.json)?)?;
    let mut lab = Lab {
        format: 1,
        kind: "lab".into(),
        mode: mode.into(),
        pagelab_version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        started_unix_ms: now_ms(),
        ended_unix_ms: None,
        wall_s: None,
        root: m.root,
        cpus: m.cpus,
        ram_bytes: m.ram_bytes,
        expect_s: expect,
        doctor: findings.json.clone(),
        steps: steps.clone(),
        notes: Vec::new(),
    };
    lab.save(&out)?;

    let exe = std::env::current_exe().context("finding the pagelab binary")?;
    let t0 = Instant::now();
    let progress = Progress::new(expect, a.json);
    let mut done_ms = 0u64;
    let n_run = steps.iter().filter(|s| s.state == StepState::Planned).count();
    let mut k = 0;
    for i in 0..steps.len() {
        if steps[i].state != StepState::Planned {
            continue;
        }
        k += 1;
        if record::stop::requested() {
            steps[i].state = StepState::Skipped;
            steps[i].reason = Some("the lab was interrupted before it started".into());
            continue;
        }
        let s = steps[i].clone();
        let rel = PathBuf::from(&s.experiment);
        let log = out.join("logs").join(format!("{}.log", s.experiment));
        progress.line(&format!(
            "[{k}/{n_run}] {}: running, expect ~{} (log: {})",
            s.experiment,
            fmt_s(s.expect_s),
            log.display()
        ));
        steps[i].state = StepState::Running;
        steps[i].dir = Some(rel.clone());
        lab.steps = steps.clone();
        lab.save(&out)?;
        let started = Instant::now();
        let r = run_child(&exe, &s, &out.join(&rel), &log, &progress, done_ms, lock.for_child());
        let secs = started.elapsed().as_secs_f64();
        let st = &mut steps[i];
        st.seconds = Some(secs);
        match r {
            Ok((code, Some(sig))) if !record::stop::requested() => {
                // Killed by someone other than the lab (the OOM killer, a user's
                // kill -9): a failure, not an interruption. Whatever it changed is
                // undone now, through its journal, before the next step.
                st.exit_code = Some(code);
                st.state = StepState::Failed;
                st.reason = Some(format!("killed by signal {sig} ({})", signal_name(sig)));
                crate::restore_stale_runs();
            }
            Ok((code, _)) => {
                st.exit_code = Some(code);
                // A child that died without restoring (a signal) left its journal.
                crate::restore_stale_runs();
                let status = record::RunRecord::load(&out.join(&rel)).ok().map(|r| r.run.status);
                match (code, status) {
                    (0, _) => st.state = StepState::Complete,
                    (_, Some(rs)) if rs.state == record::rundir::State::Interrupted => {
                        st.state = StepState::Interrupted;
                        st.reason = rs.reason.or(Some("interrupted".into()));
                    }
                    (130, _) => {
                        st.state = StepState::Interrupted;
                        st.reason = Some("interrupted".into());
                    }
                    (_, rs) => {
                        st.state = StepState::Failed;
                        st.reason =
                            rs.and_then(|r| r.reason).or_else(|| last_line(&log)).or(Some(format!("exit {code}")));
                    }
                }
            }
            Err(e) => {
                st.state = StepState::Failed;
                st.reason = Some(format!("{e:#}"));
            }
        }
        done_ms += (s.expect_s * 1e3) as u64;
        progress.overall(done_ms, "");
        progress.line(&format!(
            "[{k}/{n_run}] {}: {} in {}{}",
            st.experiment,
            st.state.word(),
            fmt_s(secs),
            st.reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
        ));
        lab.steps = steps.clone();
        lab.save(&out)?;
    }
    progress.finish();
    let wall = t0.elapsed().as_secs_f64();
    lab.steps = steps;
    lab.ended_unix_ms = Some(now_ms());
    lab.wall_s = Some(wall);
    lab.save(&out)?;

    let r = report::html::Report::load(&out, report::html::Render::IfMissing).map_err(anyhow::Error::msg)?;
    let html = crate::report_cmd::write_html(&r, &out)?;
    if a.json {
        let mut v = serde_json::to_value(&lab)?;
        v["dir"] = serde_json::json!(out);
        v["report_html"] = serde_json::json!(html);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!();
        print!("{}", crate::report_cmd::summary_text(&r));
        println!("\nwall time {} (planned ~{}); report: {}", fmt_s(wall), fmt_s(expect), html.display());
    }
    let states: Vec<StepState> = lab.steps.iter().map(|s| s.state).collect();
    if record::stop::requested() || states.contains(&StepState::Interrupted) {
        return Err(anyhow::Error::new(crate::Interrupted));
    }
    if let Some(f) = lab.steps.iter().find(|s| s.state == StepState::Failed) {
        anyhow::bail!("{} failed: {}", f.experiment, f.reason.as_deref().unwrap_or("see its log"));
    }
    Ok(())
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// Runs one experiment as a child process with its output in `log`, and shows its
/// progress against the plan's estimate. Forwards a stop to the child. Returns
/// its exit code (128 + the signal for a signal) and the signal that killed it.
fn run_child(
    exe: &Path,
    s: &Step,
    dir: &Path,
    log: &Path,
    p: &Progress,
    done_ms: u64,
    lock_env: (&str, String),
) -> anyhow::Result<(i32, Option<i32>)> {
    let f = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.arg(&s.experiment)
        .args(&s.args)
        .arg("--out")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(f.try_clone()?)
        .stderr(f)
        .env(lock_env.0, lock_env.1)
        // Its own process group: a Ctrl-C on the terminal reaches the lab only,
        // which passes exactly one SIGINT on (a second signal makes a pagelab
        // process leave at once, without its final status).
        .process_group(0);
    // SAFETY: prctl is async-signal-safe. If the lab dies, the child is told to stop.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            Ok(())
        });
    }
    let mut child = cmd.spawn().with_context(|| format!("starting {}", exe.display()))?;
    let expect_ms = (s.expect_s * 1e3) as u64;
    let bar = p.step_bar(&s.experiment, expect_ms);
    let started = Instant::now();
    let mut forwarded = false;
    let mut next_line = Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if record::stop::requested() && !forwarded {
            // SAFETY: sending a signal to our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            forwarded = true;
        }
        let el = started.elapsed();
        let el_ms = el.as_millis() as u64;
        if let Some(b) = &bar {
            // Hold at 99 % past the estimate: the ETA then says "any moment".
            b.set_position(el_ms.min(expect_ms * 99 / 100));
            if el_ms > expect_ms {
                b.set_message(format!("{} over the estimate", fmt_s((el_ms - expect_ms) as f64 / 1e3)));
            }
            p.overall(done_ms + el_ms.min(expect_ms), &s.experiment);
        } else if el >= next_line {
            p.line(&format!("    {}: {} elapsed of ~{}", s.experiment, fmt_s(el.as_secs_f64()), fmt_s(s.expect_s)));
            next_line += Duration::from_secs(30);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    use std::os::unix::process::ExitStatusExt;
    Ok((status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)), status.signal()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::lab::EXPERIMENTS;

    fn machine(root: bool, swap: bool) -> Machine {
        Machine { root, cpus: 2, ram_bytes: 24 << 30, swap_active: swap }
    }

    #[test]
    fn quick_plan_as_root_runs_everything_in_five_minutes() {
        let p = plan(&machine(true, false), false, &[]);
        assert_eq!(p.iter().map(|s| s.experiment.as_str()).collect::<Vec<_>>(), EXPERIMENTS);
        assert!(p.iter().all(|s| s.state == StepState::Planned));
        let total: f64 = p.iter().map(|s| s.expect_s).sum();
        assert!(total > 60.0 && total < 300.0, "{total}");
        let heap = p.iter().find(|s| s.experiment == "heap").unwrap();
        assert!(heap.args.join(" ").contains("--threads 1,2,4,16"), "{:?}", heap.args);
        // All four thrash presets (the findings compare e1, e3 and e4 with e2),
        // repeated, on the study's store.
        let t = p.iter().find(|s| s.experiment == "thrash").unwrap().args.join(" ");
        assert!(t.contains("--preset all") && t.contains("--backing swapfile") && t.contains("--repeat 2"), "{t}");
        let full = plan(&machine(true, false), true, &[]);
        let t = full.iter().find(|s| s.experiment == "thrash").unwrap().args.join(" ");
        assert!(t.contains("--backing zram,swapfile"), "{t}");
    }

    #[test]
    fn without_root_thrash_and_wscap_are_skipped_with_reasons() {
        let p = plan(&machine(false, false), false, &[]);
        let by = |n: &str| p.iter().find(|s| s.experiment == n).unwrap();
        assert_eq!(by("thrash").state, StepState::Skipped);
        assert!(by("thrash").reason.as_deref().unwrap().contains("root"));
        assert_eq!(by("wscap").state, StepState::Skipped);
        assert!(by("eat").args.contains(&"none".to_string()));
        assert!(by("eat").note.is_some());
        // With a swap area already active, wscap runs its periodic modes.
        let p = plan(&machine(false, true), false, &[]);
        let w = p.iter().find(|s| s.experiment == "wscap").unwrap();
        assert_eq!(w.state, StepState::Planned);
        assert!(w.args.join(" ").contains("--backing existing --modes none,periodic-pageout,periodic-cold"));
    }

    #[test]
    fn full_is_longer_and_only_filters() {
        let q: f64 = plan(&machine(true, false), false, &[]).iter().map(|s| s.expect_s).sum();
        let f: f64 = plan(&machine(true, false), true, &[]).iter().map(|s| s.expect_s).sum();
        assert!(f > 4.0 * q, "{f} vs {q}");
        let p = plan(&machine(true, false), false, &["heap".into(), "eat".into()]);
        assert_eq!(p.iter().map(|s| s.experiment.as_str()).collect::<Vec<_>>(), ["eat", "heap"]);
    }
}
