//! A headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: commands on fd 3, replies on fd 4, each message
//! ended by a NUL byte). Enough to load a page, watch its console and network,
//! evaluate an expression and take a screenshot.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

pub fn chromium() -> Option<std::path::PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

pub struct Browser {
    child: Child,
    to: std::fs::File,
    rx: Receiver<Value>,
    next: u64,
    /// Every event received so far (method, params, sessionId).
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    (fds[0], fds[1])
}

impl Browser {
    /// Starts Chromium with the flags the project's CI uses.
    pub fn start(exe: &std::path::Path) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe(); // we write commands, the browser reads fd 3
        let (out_r, out_w) = pipe(); // the browser writes fd 4, we read
        let mut c = Command::new(exe);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--remote-debugging-pipe",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec.
        unsafe {
            c.pre_exec(move || {
                // Move both ends above 4 first, so that dup2 onto 3 and 4 cannot
                // clobber one with the other; dup2 clears close-on-exec.
                let a = libc::fcntl(cmd_r, libc::F_DUPFD, 10);
                let b = libc::fcntl(out_w, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("starting chromium");
        // SAFETY: closing our copies of the child's ends; owning ours.
        unsafe {
            libc::close(cmd_r);
            libc::close(out_w);
        }
        let to = unsafe { std::fs::File::from_raw_fd(cmd_w) };
        let from = unsafe { std::fs::File::from_raw_fd(out_r) };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(from);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                            if tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Browser { child, to, rx, next: 1, events: Vec::new(), _profile: profile }
    }

    /// Sends a command (to a page session when given) and waits for its reply.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("writing to chromium");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.rx.recv_timeout(left).unwrap_or_else(|_| panic!("no reply to {method} from chromium"));
            if v["id"].as_u64() == Some(id) {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Waits for an event of `method` (already received or arriving within `t`).
    pub fn wait_event(&mut self, method: &str, t: Duration) -> bool {
        if self.events.iter().any(|e| e["method"] == method) {
            return true;
        }
        let deadline = Instant::now() + t;
        while let Ok(v) = self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            let hit = v["method"] == method;
            self.events.push(v);
            if hit {
                return true;
            }
        }
        false
    }

    /// Collects whatever events arrive in the next `t`.
    pub fn drain(&mut self, t: Duration) {
        let deadline = Instant::now() + t;
        while let Ok(v) = self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.events.push(v);
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (the screenshot comes as base64).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter_map(val) {
        acc = (acc << 6) | c;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// What a report page did when loaded: console errors, exceptions, log errors,
/// every request URL, and the result of `expr`.
pub struct PageCheck {
    pub console_errors: Vec<String>,
    pub requests: Vec<String>,
    pub value: Value,
    pub png: Vec<u8>,
}

/// Loads `file` in a fresh tab, evaluates `expr` (which must return a JSON
/// string), and takes a `width`×`height` screenshot of the top of the page.
pub fn check_page(exe: &std::path::Path, file: &std::path::Path, expr: &str, width: u32, height: u32) -> PageCheck {
    let mut b = Browser::start(exe);
    let target = b.call(None, "Target.createTarget", json!({"url": "about:blank"}));
    let tid = target["targetId"].as_str().expect("targetId").to_string();
    let att = b.call(None, "Target.attachToTarget", json!({"targetId": tid, "flatten": true}));
    let sid = att["sessionId"].as_str().expect("sessionId").to_string();
    let s = Some(sid.as_str());
    for m in ["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"] {
        b.call(s, m, json!({}));
    }
    b.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
    );
    let url = format!("file://{}", file.canonicalize().unwrap().display());
    b.call(s, "Page.navigate", json!({"url": url}));
    assert!(b.wait_event("Page.loadEventFired", Duration::from_secs(60)), "the page did not load");
    b.drain(Duration::from_millis(500));
    let v = b.call(s, "Runtime.evaluate", json!({"expression": expr, "returnByValue": true}));
    let value: Value = serde_json::from_str(v["result"]["value"].as_str().unwrap_or("null")).unwrap_or(Value::Null);
    let shot = b.call(s, "Page.captureScreenshot", json!({"format": "png"}));
    let png = base64_decode(shot["data"].as_str().unwrap_or(""));
    b.drain(Duration::from_millis(300));
    let mut console_errors = Vec::new();
    let mut requests = Vec::new();
    for e in &b.events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or("") {
            "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => {
                console_errors.push(format!("console.{}: {}", p["type"], p["args"]))
            }
            "Runtime.exceptionThrown" => console_errors.push(format!("exception: {}", p["exceptionDetails"])),
            "Log.entryAdded" if p["entry"]["level"] == "error" => {
                console_errors.push(format!("log: {}", p["entry"]["text"]))
            }
            "Network.requestWillBeSent" => requests.push(p["request"]["url"].as_str().unwrap_or("").to_string()),
            _ => {}
        }
    }
    let _ = b.call(None, "Browser.close", json!({}));
    PageCheck { console_errors, requests, value, png }
}
