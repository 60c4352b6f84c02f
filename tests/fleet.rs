//! pagelab in a fleet, tested with the real parts: Debian's `promtool` on both
//! kinds of OpenMetrics output, a real Prometheus server scraping
//! `monitor --serve`, node_exporter's textfile collector serving a lab's
//! figures, and `kubectl` (Debian's kubernetes-client, client side) decoding the
//! manifests in deploy/. The programs are fetched with `apt-get download` and
//! cached under target/fleet-cache; nothing is installed and no service is
//! started. Where they cannot be had, the tests that need them skip and say why.
//!
//! Also here: every `--json` output and run.json / lab.json checked against
//! the JSON Schemas in schema/, and the format version that report refuses.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod common;
#[path = "common/debian.rs"]
mod debian;
use common::{assert_schema as valid, bin, schema};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------- the tools

struct Tools {
    promtool: PathBuf,
    prometheus: PathBuf,
    node_exporter: PathBuf,
    kubectl: PathBuf,
}

/// Debian's prometheus, prometheus-node-exporter and kubernetes-client,
/// unpacked once per test binary.
fn tools() -> Result<&'static Tools, String> {
    static T: OnceLock<Result<Tools, String>> = OnceLock::new();
    T.get_or_init(|| {
        for t in ["apt-get", "apt-cache", "dpkg-deb"] {
            if Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .map_or(true, |o| !o.status.success())
            {
                return Err(format!("{t} is not installed"));
            }
        }
        let cache = debian::cache_dir("fleet-cache");
        let mut dirs = Vec::new();
        for (pattern, prefix) in [
            ("^prometheus$", "prometheus_"),
            ("^prometheus-node-exporter$", "prometheus-node-exporter_"),
            ("^kubernetes-client$", "kubernetes-client_"),
        ] {
            let deb = debian::package(&cache, pattern, prefix)?;
            let dir = cache.join(prefix.trim_end_matches('_'));
            debian::unpack(&deb, &dir)?;
            dirs.push(dir.join("usr/bin"));
        }
        let t = Tools {
            promtool: dirs[0].join("promtool"),
            prometheus: dirs[0].join("prometheus"),
            node_exporter: dirs[1].join("prometheus-node-exporter"),
            kubectl: dirs[2].join("kubectl"),
        };
        for p in [&t.promtool, &t.prometheus, &t.node_exporter, &t.kubectl] {
            if !p.is_file() {
                return Err(format!("{} is not in its package", p.display()));
            }
        }
        Ok(t)
    })
    .as_ref()
    .map_err(Clone::clone)
}

macro_rules! tools_or_skip {
    () => {
        match tools() {
            Ok(t) => t,
            Err(e) => {
                common::skip(&format!("Debian's prometheus, node_exporter or kubectl cannot be had: {e}"));
                return;
            }
        }
    };
}

/// A port free on loopback just now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A plain HTTP/1.0 GET; (status line, body).
fn http_get(port: u16, path: &str, accept: &str) -> Option<(String, String)> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\n\r\n").ok()?;
    let mut s = String::new();
    c.read_to_string(&mut s).ok()?;
    let (head, body) = s.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// Polls `f` every 200 ms until it gives something, or panics after `limit`.
fn eventually<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(x) = f() {
            return x;
        }
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A child killed (and reaped) when dropped, even when an assertion fails.
struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn promtool_check(t: &Tools, text: &str) -> Result<(), String> {
    let mut c = Command::new(&t.promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() && said.trim().is_empty() { Ok(()) } else { Err(said) }
}

// ---------------------------------------------------------------- a real lab

fn lab_dir() -> PathBuf {
    std::env::temp_dir().join(format!("pagelab-fleet-lab-{}", std::process::id()))
}

/// Removes the shared lab when the test process exits (a static is never
/// dropped, and every CI run left one in /tmp).
extern "C" fn remove_lab() {
    let _ = std::fs::remove_dir_all(lab_dir());
}

/// One quick lab (mapping only: about 15 s), shared by the tests that need a
/// lab directory; its `lab --json` output beside it, removed at exit.
fn lab() -> &'static (PathBuf, Value) {
    static L: OnceLock<(PathBuf, Value)> = OnceLock::new();
    L.get_or_init(|| {
        let dir = lab_dir();
        let _ = std::fs::remove_dir_all(&dir);
        // SAFETY: registers a plain function with no arguments to run at exit.
        unsafe { libc::atexit(remove_lab) };
        let out = Command::new(bin())
            .args(["lab", "--quick", "--only", "mapping", "--json", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "lab: {}", String::from_utf8_lossy(&out.stderr));
        (dir, serde_json::from_slice(&out.stdout).expect("lab --json is JSON"))
    })
}

// ---------------------------------------------------------------- schemas

fn json_of(args: &[&str]) -> Value {
    let out = Command::new(bin())
        .args(args)
        .env("PAGELAB_JOURNAL_DIR", std::env::temp_dir().join("pagelab-fleet-j"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert_eq!(v["format"], 1, "{args:?}: every --json output carries its format");
    v
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    root().join("crates/experiments/tests/fixtures/run-dirs").join(name)
}

/// A copy of a fixture run, for commands that write into the directory.
fn copy_fixture(name: &str, to: &Path) -> PathBuf {
    let dst = to.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(fixture(name)).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
    dst
}

#[test]
fn every_json_output_matches_its_schema() {
    for e in ["eat", "wscap", "heap", "mapping", "thrash", "jank", "assess"] {
        valid("run", &read_json(&fixture(e).join("run.json")));
    }
    // A schema that accepts anything proves nothing: a wrong type and a missing
    // field are refused.
    let mut bad = read_json(&fixture("eat").join("run.json"));
    bad["results"][0]["stored_fraction"] = Value::from("a lot");
    assert!(!schema("run").is_valid(&bad));
    let mut bad = read_json(&fixture("thrash").join("run.json"));
    // A field the reader requires (the schema is generated from its type).
    bad["results"][0]["result"].as_object_mut().unwrap().remove("preset");
    assert!(!schema("run").is_valid(&bad));

    let tmp = tempfile::tempdir().unwrap();
    valid("doctor-output", &json_of(&["doctor", "--json"]));
    valid("restore-output", &json_of(&["restore", "--dry-run", "--json"]));

    let rec = tmp.path().join("rec");
    let v = json_of(&["record", "--duration", "1s", "--interval", "200ms", "--json", "--out", rec.to_str().unwrap()]);
    valid("record-output", &v);
    valid("run", &read_json(&rec.join("run.json")));

    let map = tmp.path().join("map");
    let v = json_of(&[
        "mapping",
        "--size",
        "8MiB",
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--json",
        "--out",
        map.to_str().unwrap(),
    ]);
    valid("experiment-output", &v);
    valid("run", &read_json(&map.join("run.json")));

    let eat = copy_fixture("eat", tmp.path());
    valid("report-output", &json_of(&["report", eat.to_str().unwrap(), "--json"]));
    let (om, bmf) = (tmp.path().join("eat.prom"), tmp.path().join("eat.bmf.json"));
    let v = json_of(&[
        "report",
        eat.to_str().unwrap(),
        "--openmetrics",
        om.to_str().unwrap(),
        "--bmf",
        bmf.to_str().unwrap(),
        "--json",
    ]);
    valid("report-output", &v);
    let b = read_json(&bmf);
    valid("bmf", &b);
    let semi = &b["eat/semi"]["stored_ratio"];
    assert!(
        semi["lower_value"].as_f64() <= semi["value"].as_f64()
            && semi["value"].as_f64() <= semi["upper_value"].as_f64(),
        "{b}"
    );

    let f = |e: &str| fixture(e).to_str().unwrap().to_string();
    let v = json_of(&["compare", &f("eat"), &f("eat"), &f("wscap"), "--json"]);
    valid("compare-output", &v);
    assert_eq!(v["table"]["columns"].as_array().unwrap().len(), 3, "{}", v["table"]);

    let (dir, out) = lab();
    valid("lab", &read_json(&dir.join("lab.json")));
    valid("lab", out);
    assert!(out["dir"].is_string() && out["report_html"].is_string(), "{out}");
    valid("report-output", &json_of(&["report", dir.to_str().unwrap(), "--json"]));
}

#[test]
fn a_newer_record_format_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_fixture("wscap", tmp.path());
    let mut rj = read_json(&run.join("run.json"));
    rj["format"] = Value::from(99);
    std::fs::write(run.join("run.json"), serde_json::to_vec(&rj).unwrap()).unwrap();
    for args in [
        vec!["report", run.to_str().unwrap()],
        vec!["compare", run.to_str().unwrap(), fixture("wscap").to_str().unwrap()],
    ] {
        let out = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("format 99") && err.contains("newer"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

// ---------------------------------------------------------------- OpenMetrics

#[test]
fn openmetrics_files_pass_promtool_and_node_exporter_serves_a_labs_figures() {
    let t = tools_or_skip!();
    // Every fixture run, and the lab.
    for e in ["eat", "wscap", "heap", "mapping", "thrash", "jank", "assess"] {
        let out =
            Command::new(bin()).args(["report", fixture(e).to_str().unwrap(), "--openmetrics", "-"]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&format!("pagelab_{e}_")) && text.ends_with("# EOF\n"), "{text}");
        promtool_check(t, &text).unwrap_or_else(|e| panic!("promtool on {e}'s file: {e}\n{text}"));
    }
    // promtool has teeth: a non-base unit and a missing HELP are refused.
    assert!(promtool_check(t, "# TYPE pagelab_x_milliseconds gauge\npagelab_x_milliseconds 1\n").is_err());

    let (dir, _) = lab();
    let textdir = tempfile::tempdir().unwrap();
    let file = textdir.path().join("pagelab.prom");
    let out = Command::new(bin()).arg("report").arg(dir).arg("--openmetrics").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).unwrap();
    promtool_check(t, &text).unwrap();

    let port = free_port();
    let _ne = Reaped(
        Command::new(&t.node_exporter)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!("--collector.textfile.directory={}", textdir.path().display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let body = eventually("node_exporter answering", Duration::from_secs(20), || {
        http_get(port, "/metrics", "text/plain").filter(|(s, _)| s.contains("200")).map(|(_, b)| b)
    });
    assert!(body.contains("node_textfile_scrape_error 0"), "node_exporter could not read the file:\n{body}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let lines: Vec<&str> = body.lines().filter(|l| l.starts_with("pagelab_mapping_total_seconds{")).collect();
    assert!(!lines.is_empty(), "no lab figure in node_exporter's answer:\n{body}");
    let want = format!("kernel=\"{}\"", kernel.trim());
    assert!(lines.iter().all(|l| l.contains("experiment=\"mapping\"") && l.contains(&want)), "{lines:#?}");
    assert!(body.contains("pagelab_mapping_total_seconds_repeats{"), "n is its own series");
    for l in &lines {
        let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(v > 0.0 && v < 10.0, "a mapping cycle in seconds: {l}");
    }
    println!("node_exporter served, among {} lines:\n{}", body.lines().count(), lines.join("\n"));
}

/// Starts `pagelab <args>` and waits for its listener on `port`.
fn serving(args: &[&str], port: u16) -> Reaped {
    let child = Reaped(Command::new(bin()).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap());
    eventually(&format!("{args:?} serving"), Duration::from_secs(20), || {
        http_get(port, "/metrics", "*/*").filter(|(_, b)| b.contains("pagelab_memory_total_bytes"))
    });
    child
}

#[test]
fn prometheus_scrapes_monitor_serve() {
    let t = tools_or_skip!();
    let mut sleeper = Reaped(Command::new("sleep").arg("120").spawn().unwrap());
    let pid = sleeper.0.id().to_string();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut mon = serving(&["monitor", "--headless", "--serve", &addr, "--interval", "200ms", "--pid", &pid], port);

    // Both formats pass promtool; the OpenMetrics one ends in # EOF.
    let (_, text) = http_get(port, "/metrics", "text/plain").unwrap();
    promtool_check(t, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let (_, om) = http_get(port, "/metrics", "application/openmetrics-text; version=1.0.0").unwrap();
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains(&format!("pagelab_target_resident_bytes{{pid=\"{pid}\",kind=\"anon\"}}")), "{om}");

    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pagelab\n    static_configs:\n      - targets: ['{addr}']\n"),
    )
    .unwrap();
    let pport = free_port();
    let _prom = Reaped(
        Command::new(&t.prometheus)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", tmp.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let query = |q: &str| -> Option<Value> {
        let enc: String = q
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() || b == b'_' { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let (status, body) = http_get(pport, &format!("/api/v1/query?query={enc}"), "application/json")?;
        let v: Value = serde_json::from_str(&body).ok()?;
        (status.contains("200") && v["status"] == "success" && !v["data"]["result"].as_array()?.is_empty()).then_some(v)
    };
    let total = eventually("Prometheus holding pagelab_memory_total_bytes", Duration::from_secs(60), || {
        query("pagelab_memory_total_bytes")
    });
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: f64 = meminfo.lines().next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let got: f64 = total["data"]["result"][0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(got, kib * 1024.0, "{total}");
    // The target's series carries its pid; a counter gets a rate.
    let q = format!("pagelab_target_resident_bytes{{pid=\"{pid}\",kind=\"anon\"}}");
    let rss = eventually("the target's series", Duration::from_secs(30), || query(&q));
    let rate = eventually("a rate over the page-fault counter", Duration::from_secs(30), || {
        query("rate(pagelab_page_faults_total[5s])")
    });
    let targets = http_get(pport, "/api/v1/targets", "application/json").unwrap().1;
    assert!(targets.contains("\"health\":\"up\"") && targets.contains("\"lastError\":\"\""), "{targets}");
    println!("Prometheus query pagelab_memory_total_bytes: {}", total["data"]["result"]);
    println!("Prometheus query {q}: {}", rss["data"]["result"]);
    println!("Prometheus query rate(pagelab_page_faults_total[5s]): {}", rate["data"]["result"]);

    // SIGTERM ends the headless monitor promptly.
    unsafe { libc::kill(mon.0.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while mon.0.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(5), "monitor --headless did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = sleeper.0.kill();
}

#[test]
fn record_serves_while_it_records_and_monitor_serves_without_root() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rec");
    let mut rec = serving(
        &["record", "--serve", &addr, "--interval", "200ms", "--out", out.to_str().unwrap(), "--", "sleep", "3"],
        port,
    );
    // The command's pid becomes the target once it is running.
    eventually("the command's series", Duration::from_secs(3), || {
        http_get(port, "/metrics", "*/*").filter(|(_, b)| b.contains("pagelab_target_major_faults_total{pid=\""))
    });
    assert!(rec.0.wait().unwrap().success(), "record --serve");
    assert!(out.join("run.json").exists());
    assert!(http_get(port, "/metrics", "*/*").is_none(), "the listener outlived record");

    // The DaemonSet runs monitor as nobody, with no capability: it must serve.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("the unprivileged part needs root to drop to nobody");
        return;
    }
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child = Reaped(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"])
            .arg(common::bin_for_anyone(tmp.path()))
            .args(["monitor", "--headless", "--serve", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let body = eventually("monitor as nobody", Duration::from_secs(20), || {
        http_get(port, "/metrics", "*/*").filter(|(_, b)| b.contains("pagelab_memory_bytes{category=\"free\"}"))
    });
    assert!(body.1.contains("pagelab_pressure_stalled_seconds_total{resource=\"memory\""), "{}", body.1);
    drop(child);
}

#[test]
fn bad_serve_addresses_and_busy_ports_exit_2_and_create_nothing() {
    for (args, says) in [
        (vec!["monitor", "--headless", "--serve", "localhost"], "HOST:PORT"),
        (vec!["record", "--serve", "127.0.0.1:99999", "--duration", "1s"], "HOST:PORT"),
        (vec!["monitor", "--headless"], "--serve"),
    ] {
        let out = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("never");
    for args in [
        vec!["record", "--serve", &addr, "--duration", "1s", "--out", out_dir.to_str().unwrap()],
        vec!["monitor", "--headless", "--serve", &addr, "--record", out_dir.to_str().unwrap()],
    ] {
        let out = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--serve") && err.contains("in use"), "{err}");
        assert!(!out_dir.exists(), "{args:?} created its directory before failing");
    }
}

// ---------------------------------------------------------------- Kubernetes

/// kubectl decodes the manifest into its typed objects, client side (`set
/// resources --local` needs no cluster), and prints it back as JSON.
fn kubectl_decode(t: &Tools, file: &Path) -> Result<Value, String> {
    let out = Command::new(&t.kubectl)
        .args(["set", "resources", "--local", "--limits=cpu=2", "-o", "json", "-f"])
        .arg(file)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

#[test]
fn kubectl_decodes_the_manifests_and_they_ask_for_what_they_say() {
    let t = tools_or_skip!();
    let job = kubectl_decode(t, &root().join("deploy/job-lab.yaml")).unwrap();
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"]["template"]["spec"];
    let lab = &spec["containers"][0];
    assert_eq!(lab["securityContext"]["privileged"], true);
    assert!(lab["args"][0].as_str().unwrap().contains("pagelab lab --quick"), "{lab}");
    assert!(lab["args"][0].as_str().unwrap().contains("--openmetrics"), "{lab}");
    assert_eq!(spec["initContainers"][0]["args"][0], "restore");
    let host_paths: Vec<&str> =
        spec["volumes"].as_array().unwrap().iter().filter_map(|v| v["hostPath"]["path"].as_str()).collect();
    for p in ["/sys/fs/cgroup", "/run/pagelab", "/var/lib/pagelab/labs"] {
        assert!(host_paths.contains(&p), "{p}: {host_paths:?}");
    }

    let ds = kubectl_decode(t, &root().join("deploy/daemonset-monitor.yaml")).unwrap();
    assert_eq!(ds["kind"], "DaemonSet");
    let spec = &ds["spec"]["template"]["spec"];
    let mon = &spec["containers"][0];
    assert_eq!(spec["hostPID"], true);
    assert_eq!(mon["securityContext"]["privileged"], false);
    assert_eq!(mon["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert_eq!(mon["securityContext"]["readOnlyRootFilesystem"], true);
    let args: Vec<&str> = mon["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(args.windows(2).any(|w| w == ["--serve", "0.0.0.0:9464"]) && args.contains(&"--headless"), "{args:?}");
    assert_eq!(mon["ports"][0]["containerPort"], 9464);
    // The args parse as pagelab's own: a typo in the manifest would fail here.
    let out = Command::new(bin()).args(&args).arg("--help").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));

    // kubectl has teeth: a field of the wrong type is refused.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.yaml");
    let text = std::fs::read_to_string(root().join("deploy/daemonset-monitor.yaml")).unwrap();
    std::fs::write(&bad, text.replace("hostPID: true", "hostPID: \"yes\"")).unwrap();
    assert!(kubectl_decode(t, &bad).is_err());
    // And the Dockerfile builds the binary the manifests run.
    let docker = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    assert!(
        docker.contains("cargo build --release --locked --bin pagelab")
            && docker.contains("ENTRYPOINT [\"/usr/local/bin/pagelab\"]")
    );
}

/// rightsize's answer in Kubernetes' terms (issue 58): the `resources:`
/// block it prints, pasted into a pod, is decoded by kubectl client side
/// with the request and limit it says; with swap held at the limit on a
/// 16 GiB node with 4 GiB of swap, the request is below the limit (a
/// container whose request equals its limit gets no swap under LimitedSwap).
/// kubectl has teeth here too: a quantity Kubernetes refuses fails.
#[test]
fn kubectl_accepts_rightsizes_resources_block() {
    use experiments::rightsize::kube::{Node, kubernetes};
    let t = tools_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    let node = Node { memory_bytes: 16 << 30, swap_bytes: 4 << 30, given: true };
    let pod = |resources: &str| {
        let indented: String = resources.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sized\nspec:\n  containers:\n  - name: app\n    image: app\n{indented}"
        )
    };
    for (swap, backing, request, limit) in [
        (100u64 << 20, "swapfile", "400Mi", "500Mi"),
        (0, "swapfile", "500Mi", "500Mi"),
        (60 << 20, "zswap", "240Mi", "500Mi"),
    ] {
        let k = kubernetes(500 << 20, swap, workloads::backing::BackingKind::parse(backing), true, node, 900 << 20);
        let f = tmp.path().join("pod.yaml");
        std::fs::write(&f, pod(&k.resources)).unwrap();
        let v = kubectl_decode(t, &f).unwrap_or_else(|e| panic!("{}: {e}", k.resources));
        let r = &v["spec"]["containers"][0]["resources"];
        assert_eq!(
            (r["requests"]["memory"].as_str(), r["limits"]["memory"].as_str()),
            (Some(request), Some(limit)),
            "{r}"
        );
    }
    let f = tmp.path().join("bad.yaml");
    std::fs::write(&f, pod("resources:\n  limits:\n    memory: 512Mx\n")).unwrap();
    assert!(kubectl_decode(t, &f).is_err(), "kubectl accepted 512Mx");
}
