//! `--serve ADDR` (monitor, record): the latest sample as OpenMetrics over HTTP,
//! for Prometheus to scrape.
//!
//! One accepting thread, and a short-lived thread per connection (64 KiB of
//! stack), at most [`MAX_CONNECTIONS`] at once: a scraper asks once per scrape
//! interval, and each answer is a few kilobytes rendered from the latest sample,
//! so idle or slow clients cannot stall it. A connection has [`DEADLINE`] in all
//! to send its request (not per read: a client sending a byte a second is
//! dropped at the deadline too); past the cap a new connection is closed at
//! once. Only `GET /metrics` (and `HEAD`) is answered; every other path gets 404
//! and every other method 405. The accepting thread looks for a stop every
//! 100 ms, so `record` and `monitor` leave at once whatever clients do. Only
//! unicast addresses are accepted; one beyond loopback gets a warning. Nothing
//! listens unless `--serve` is given.

use report::openmetrics::{self, Format};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections served at once; past it a new one is closed at once.
pub const MAX_CONNECTIONS: usize = 256;

/// The time a client has to send its request, all of it.
pub const DEADLINE: Duration = Duration::from_secs(2);

/// `--serve` given without an address: loopback, port 9464.
pub const DEFAULT: &str = "127.0.0.1:9464";

/// The forms `--serve` accepts, for its error messages.
pub const FORMS: &str =
    "HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464) or a port alone (9464, on 127.0.0.1)";

/// Parses `--serve`'s value: `HOST:PORT` with an IP address, or a port alone
/// (loopback).
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let a = s.parse::<SocketAddr>().map_err(|_| format!("'{s}': not an address; expected {FORMS}"))?;
    let not_unicast = match a.ip() {
        IpAddr::V4(v) => v.is_multicast() || v.is_broadcast(),
        IpAddr::V6(v) => v.is_multicast(),
    };
    if not_unicast {
        return Err(format!("'{s}': a multicast or broadcast address; a listener needs a unicast one: {FORMS}"));
    }
    Ok(a)
}

struct Shared {
    sample: Mutex<Option<probe::Sample>>,
    stop: AtomicBool,
    /// Connections being served now.
    open: AtomicUsize,
}

/// A listener serving the latest published sample.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A handle to publish samples from the sampler's thread.
#[derive(Clone)]
pub struct Publisher(Arc<Shared>);

impl Publisher {
    pub fn publish(&self, s: &probe::Sample) {
        if let Ok(mut g) = self.0.sample.lock() {
            *g = Some(s.clone());
        }
    }
}

impl Server {
    /// Binds `addr` (a usage error, exit 2, naming `--serve`, when it cannot: in
    /// use, not an address of this machine, a privileged port).
    pub fn start(addr: SocketAddr) -> anyhow::Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::AddrInUse => "the port is in use; give another".to_string(),
                std::io::ErrorKind::AddrNotAvailable => "not an address of this machine".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied (a port below 1024 needs root)".to_string(),
                _ => e.to_string(),
            };
            crate::usage(format!("--serve {addr}: {why} (accepted: {FORMS})"))
        })?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            say::errln!(
                "pagelab: warning: --serve {addr} listens beyond this machine: whoever can reach it reads this machine's memory figures"
            );
        }
        listener.set_nonblocking(true)?;
        let shared =
            Arc::new(Shared { sample: Mutex::new(None), stop: AtomicBool::new(false), open: AtomicUsize::new(0) });
        let sh = shared.clone();
        let thread =
            std::thread::Builder::new().name("pagelab-serve".into()).spawn(move || accept_loop(&listener, &sh))?;
        Ok(Server { addr, shared, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn publisher(&self) -> Publisher {
        Publisher(self.shared.clone())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The accepting thread sees this within 100 ms; connection threads end
        // at their deadline, or with the process.
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts until told to stop, each connection on its own small thread.
fn accept_loop(listener: &TcpListener, sh: &Arc<Shared>) {
    let mut pfd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    while !sh.stop.load(Ordering::Relaxed) {
        // SAFETY: one valid pollfd for the listener we own.
        if unsafe { libc::poll(&mut pfd, 1, 100) } <= 0 {
            continue;
        }
        while let Ok((c, _)) = listener.accept() {
            if sh.open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                drop(c);
                continue;
            }
            sh.open.fetch_add(1, Ordering::Relaxed);
            let sh2 = sh.clone();
            let spawned =
                std::thread::Builder::new().name("pagelab-conn".into()).stack_size(64 << 10).spawn(move || {
                    let _ = answer(c, &sh2);
                    sh2.open.fetch_sub(1, Ordering::Relaxed);
                });
            if spawned.is_err() {
                sh.open.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// A reader that gives up at a deadline for all its reads together.
struct Deadline {
    s: TcpStream,
    until: Instant,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request not sent in time"));
        }
        self.s.set_read_timeout(Some(left))?;
        self.s.read(buf)
    }
}

/// Reads one request and answers it.
fn answer(c: TcpStream, sh: &Shared) -> std::io::Result<()> {
    c.set_nonblocking(false)?;
    c.set_write_timeout(Some(DEADLINE))?;
    let until = Instant::now() + DEADLINE;
    let mut r = BufReader::new(Read::take(Deadline { s: c.try_clone()?, until }, 16 * 1024));
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut accept = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.trim().eq_ignore_ascii_case("accept")
        {
            accept = Some(v.trim().to_string());
        }
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = if method != "GET" && method != "HEAD" {
        ("405 Method Not Allowed", "text/plain", "only GET /metrics is served\n".to_string())
    } else if path != "/metrics" {
        ("404 Not Found", "text/plain", "only GET /metrics is served\n".to_string())
    } else {
        let format = openmetrics::negotiate(accept.as_deref());
        let fams = sh.sample.lock().ok().and_then(|g| g.as_ref().map(openmetrics::live)).unwrap_or_default();
        let ctype = if format == Format::OpenMetrics { openmetrics::OPENMETRICS } else { openmetrics::TEXT };
        ("200 OK", ctype, openmetrics::render(&fams, format))
    };
    let mut w = c;
    let allow = if status.starts_with("405") { "Allow: GET, HEAD\r\n" } else { "" };
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        w.write_all(body.as_bytes())?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn addresses_parse_or_name_the_forms() {
        assert_eq!(parse_addr("9464").unwrap(), "127.0.0.1:9464".parse().unwrap());
        assert!(parse_addr(DEFAULT).unwrap().ip().is_loopback());
        assert_eq!(parse_addr("[::1]:9464").unwrap(), "[::1]:9464".parse().unwrap());
        assert_eq!(parse_addr("0.0.0.0:1").unwrap(), "0.0.0.0:1".parse().unwrap());
        for bad in ["localhost:9464", "127.0.0.1", "127.0.0.1:99999", "", ":9464"] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains("HOST:PORT"), "{bad}: {e}");
        }
    }

    #[test]
    fn only_unicast_addresses_are_accepted() {
        for bad in ["224.0.0.1:9464", "255.255.255.255:9464", "[ff02::1]:9464"] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains("multicast or broadcast"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_scrape_answers_within_a_second_beside_idle_and_slow_clients() {
        let s = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        s.publisher().publish(&probe::Sample::default());
        // 200 connections that send nothing, and one that sends a byte a second.
        let idle: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(s.addr()).unwrap()).collect();
        let mut slow = TcpStream::connect(s.addr()).unwrap();
        let dribble = std::thread::spawn(move || {
            for b in b"GET /metrics HTTP/1.1\r\n" {
                if slow.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..3 {
            let t = Instant::now();
            let ok = get(s.addr(), "GET /metrics HTTP/1.1\r\n\r\n");
            let took = t.elapsed();
            assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
            // A scrape queued behind the idle clients would wait out their 2 s
            // deadline: 1.5 s leaves the test run's load its room below that.
            assert!(took < Duration::from_millis(1500), "a scrape took {took:?} beside 200 idle clients");
        }
        // Stopping does not wait for the clients.
        let t = Instant::now();
        drop(s);
        assert!(
            t.elapsed() < Duration::from_millis(1500),
            "stopping took {:?} (a client's deadline is 2 s)",
            t.elapsed()
        );
        drop(idle);
        let _ = dribble.join();
    }

    #[test]
    fn only_get_metrics_is_answered_and_a_busy_port_is_refused() {
        let s = Server::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let sample = probe::Sample {
            meminfo: Some(probe::meminfo::parse("MemTotal: 1000 kB\nMemFree: 10 kB\n").unwrap()),
            ..Default::default()
        };
        s.publisher().publish(&sample);
        let ok = get(
            s.addr(),
            "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
        );
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Type: application/openmetrics-text"), "{ok}");
        assert!(ok.contains("\r\n\r\n# HELP pagelab_memory_bytes") && ok.ends_with("# EOF\n"), "{ok}");
        let text = get(s.addr(), "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(text.contains("Content-Type: text/plain; version=0.0.4") && !text.contains("# EOF"), "{text}");
        assert!(get(s.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        let post = get(s.addr(), "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(post.starts_with("HTTP/1.1 405") && post.contains("Allow: GET, HEAD"), "{post}");
        let head = get(s.addr(), "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"), "{head}");
        // A second listener on the same port: a usage error naming the flag.
        let e = Server::start(s.addr()).err().unwrap();
        assert!(crate::experiment_error(&e).is_some_and(|x| x.is_usage()), "{e}");
        assert!(e.to_string().contains("--serve") && e.to_string().contains("in use"), "{e}");
    }
}
