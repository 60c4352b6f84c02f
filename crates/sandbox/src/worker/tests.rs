use super::*;

/// A ping: answered with its number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ping(u32);
/// Asks the worker to fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Fail;
crate::commands! {
    enum Echo {
        Ping(Ping) -> u32,
        Fail(Fail) -> (),
    }
}
/// Another kind's set: its commands are not the echo worker's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Shout(String);
crate::commands! {
    enum Other {
        Shout(Shout) -> (),
    }
}

fn echo(io: &mut child::WorkerIo, args: &[String]) -> std::result::Result<(), String> {
    while let Some(c) = io.command::<Echo>() {
        match c? {
            Echo::Fail(Fail) => return Err(format!("asked to fail ({})", args.join(" "))),
            Echo::Ping(Ping(n)) => io.reply::<Ping>(&n),
        }
    }
    Ok(())
}

/// An event's kind is on the wire as before (snake case), and a kind
/// this build does not know reads as `Other`, not as an unreadable line.
#[test]
fn event_kinds_keep_their_wire_names() {
    let ev = WorkerEvent {
        t_ns: 1,
        kind: EventKind::PhaseStart,
        name: "fill".into(),
        seq: None,
        data: serde_json::Value::Null,
    };
    let line = serde_json::to_string(&ev).unwrap();
    assert_eq!(line, r#"{"t_ns":1,"kind":"phase_start","name":"fill"}"#);
    assert_eq!(serde_json::from_str::<WorkerEvent>(&line).unwrap(), ev);
    let new: WorkerEvent = serde_json::from_str(r#"{"t_ns":2,"kind":"from_a_newer_worker"}"#).unwrap();
    assert_eq!(new.kind, EventKind::Other);
    assert_eq!(EventKind::Done.to_string(), "done");
}

/// The in-process link behaves as a worker process does: commands are
/// answered, events reach the caller, a worker's error fails the wait
/// naming it, the end of commands ends it normally, and what cannot be
/// started (an unknown kind, a cgroup) is refused.
#[test]
fn a_worker_on_a_thread_is_driven_as_a_process_is() {
    let mut t = Threads(vec![("echo", echo)]);
    let spec = |kind: &str| WorkerSpec {
        exe: PathBuf::from("/nonexistent"),
        args: argv(kind, ["x"]),
        cgroup: None,
        env: vec![],
        label: "echo".into(),
    };
    let mut w = t.spawn(spec("echo")).unwrap();
    assert_eq!(w.pid(), std::process::id() as i32);
    // Each answer goes with its command's number: the second ping's wait
    // skips the first one's answer.
    let first = send(&mut *w, &Ping(7)).unwrap();
    let second = send(&mut *w, &Ping(8)).unwrap();
    assert_ne!(first.seq, second.seq);
    let mut seen = Vec::new();
    let ev = w.wait_for(second.want(), Duration::from_secs(5), &mut |e| seen.push(e.seq), &|| false).unwrap();
    assert_eq!(second.reply(ev).unwrap(), 8);
    assert_eq!(seen, [Some(first.seq), Some(second.seq)]);
    // An answer of the wrong type is an error naming the command's type.
    let e = reply::<Ping>(serde_json::json!("eight")).unwrap_err();
    assert!(e.contains("Ping"), "{e}");
    // A stop is a failure of the wait, saying so.
    let e = w.wait_for(Want::Kind(EventKind::Done), Duration::from_secs(5), &mut |_| {}, &|| true).unwrap_err();
    assert!(e.reason.contains("interrupted"), "{e}");
    w.finish(Duration::from_secs(5)).unwrap();
    let mut w = t.spawn(spec("echo")).unwrap();
    send(&mut *w, &Fail).unwrap();
    let e = w.wait_for(Want::Kind(EventKind::Done), Duration::from_secs(5), &mut |_| {}, &|| false).unwrap_err();
    assert!(e.reason.contains("asked to fail (x)"), "{e}");
    let e = w.finish(Duration::from_secs(5)).unwrap_err();
    assert!(e.reason.contains("asked to fail"), "{e}");
    // Another kind's command is refused as it is read, naming it.
    let mut w = t.spawn(spec("echo")).unwrap();
    send(&mut *w, &Shout("hi".into())).unwrap();
    let e = w.wait_for(Want::Kind(EventKind::Done), Duration::from_secs(5), &mut |_| {}, &|| false).unwrap_err();
    assert!(e.reason.contains("does not take") && e.reason.contains("shout"), "{e}");
    assert!(t.spawn(spec("nope")).is_err());
    // One that does not end when its commands close is reported still
    // running after finish's timeout, as a process would be.
    fn slow(_: &mut child::WorkerIo, _: &[String]) -> std::result::Result<(), String> {
        std::thread::sleep(Duration::from_millis(4000));
        Ok(())
    }
    let mut t = Threads(vec![("slow", slow)]);
    let e = t.spawn(spec("slow")).unwrap().finish(Duration::from_millis(50)).unwrap_err();
    assert!(e.reason.contains("still running"), "{e}");
    assert!(!t.containable() && Processes.containable());
}

#[test]
fn a_line_longer_than_the_bound_is_skipped_without_being_held() {
    // A worker that writes a long run without a newline, then an event.
    let mut input = vec![b'x'; 5000];
    input.extend_from_slice(b"\n{\"kind\":\"info\"}\nlast");
    let mut r = BufReader::with_capacity(64, &input[..]);
    let mut buf = Vec::new();
    assert_eq!(read_line_bounded(&mut r, &mut buf, 1000).unwrap(), Some(false));
    assert!(buf.is_empty() && buf.capacity() <= 1064, "held {} bytes", buf.capacity());
    assert_eq!(read_line_bounded(&mut r, &mut buf, 1000).unwrap(), Some(true));
    assert_eq!(buf, b"{\"kind\":\"info\"}");
    // A last line without a newline is still a line; then the end.
    assert_eq!(read_line_bounded(&mut r, &mut buf, 1000).unwrap(), Some(true));
    assert_eq!(buf, b"last");
    assert_eq!(read_line_bounded(&mut r, &mut buf, 1000).unwrap(), None);
    // Exactly the bound fits.
    let mut r = BufReader::new(&b"abcd\n"[..]);
    assert_eq!(read_line_bounded(&mut r, &mut buf, 4).unwrap(), Some(true));
}

#[test]
fn only_the_first_unreadable_lines_are_quoted_and_cut() {
    let mut u = Unreadable::default();
    let long = "y".repeat(1000);
    let first = u.note(long.as_bytes(), true).unwrap();
    assert!(first.len() < 300 && first.ends_with('…'), "{first}");
    assert!(u.note(b"", false).unwrap().contains("over 64 MiB"));
    let kept = (0..2_000_000).filter_map(|_| u.note(b"not json", true)).count();
    assert_eq!(kept, MAX_QUOTED - 2);
    assert_eq!(u.summary().unwrap(), format!("and {} more unreadable worker lines", 2_000_002 - MAX_QUOTED));
    assert!(Unreadable::default().summary().is_none());
}

/// A command already read from the descriptor into the buffer, behind
/// another, is input waiting: two sent at once are both seen, and the end
/// of the commands is seen too.
#[test]
fn a_buffered_command_is_input_waiting() {
    use std::io::Write;
    let (mut parent, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut io = child::WorkerIo::over_socket(theirs).unwrap();
    let line = |seq: u64, n: u32| format!("{}\n", serde_json::json!({"seq": seq, "command": Echo::Ping(Ping(n))}));
    parent.write_all(format!("{}{}", line(1, 7), line(2, 8)).as_bytes()).unwrap();
    assert!(io.wait_input(Duration::from_secs(5)));
    assert_eq!(io.command::<Echo>().unwrap().unwrap(), Echo::Ping(Ping(7)));
    // The second is in the buffer now, not on the socket.
    assert!(io.wait_input(Duration::from_millis(50)), "a buffered command was missed");
    assert_eq!(io.command::<Echo>().unwrap().unwrap(), Echo::Ping(Ping(8)));
    assert!(!io.wait_input(Duration::from_millis(50)), "nothing more was sent");
    parent.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(io.wait_input(Duration::from_secs(5)) && io.at_end(), "the end of commands is input too");
}
