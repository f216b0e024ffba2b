//! Shared servers on the wire: the MCP protocol through a front (both eras, progress,
//! cancellation, same ids on two fronts), a server that dies under its fronts, version skew, and
//! what `fugue ls` and `fugue attach --server NAME` make of shared servers.

use crate::procfs;
use crate::shared::Server;
use crate::util::{Fugue, PATIENCE, gone_within};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-front", "version": "1"},
    })
}

/// Waits for the first progress notification of `token`: the call is running.
fn first_progress(front: &mut Fugue, token: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let m = front.next_message(deadline).expect("a progress notification");
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], token);
            return;
        }
        front.backlog.push(m);
    }
}

/// A modern front and a legacy front on one server: each era as in-process, and the same request
/// ids on both never cross.
#[test]
fn both_eras_and_the_same_ids_on_two_fronts() {
    let server = Server::new("eras");
    let mut legacy = server.front();
    let mut modern = server.bare_front();
    let listed = modern.request("tools/list", json!({"_meta": envelope()}));
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    let before = modern.request("tools/list", json!({}));
    assert_eq!(before["error"]["code"], -32602, "no era yet on this connection: {before}");
    let pane = legacy.pane("sleep 600");
    // Both fronts use id 100 at once: a slow call on one, a fast one on the other.
    legacy.send(&json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {
        "name": "fugue_expect", "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 1500}}}));
    modern.send(&json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {
        "_meta": envelope(), "name": "fugue_get_status", "arguments": {"pane_id": pane}}}));
    let fast = modern.response(&json!(100));
    assert_eq!(fast["result"]["structuredContent"]["status"], "running", "{fast}");
    let slow = legacy.response(&json!(100));
    assert_eq!(slow["result"]["structuredContent"]["status"], "timeout", "{slow}");
    assert!(slow["result"].get("resultType").is_none(), "legacy answers stay legacy");
}

/// Progress reaches the front that asked, and a cancel from it stops the call: the parallel run's
/// processes die and nothing more is written for the id.
#[test]
fn progress_and_cancellation_through_a_front() {
    let server = Server::new("cancel");
    let mut front = server.front();
    let mut other = server.front();
    let id = front.submit(
        "tools/call",
        json!({"name": "fugue_run_parallel", "arguments": {"commands": [{"command": "sleep 300"}]},
               "_meta": {"progressToken": "tok"}}),
    );
    first_progress(&mut front, "tok");
    let pid = server.pid();
    let sleepers = procfs::descendants(pid);
    assert!(!sleepers.is_empty());
    front.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    assert_eq!(procfs::all_gone_within(&sleepers, Duration::from_secs(10)), Vec::<u32>::new());
    front.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    assert_eq!(front.response(&id)["result"], json!({}));
    let stray = front.backlog.iter().filter(|m| m["id"] == id).count();
    assert_eq!(stray, 0, "{:?}", front.backlog);
    assert!(other.backlog.iter().all(|m| m["method"] != "notifications/progress"));
    other.call("fugue_list_sessions", json!({}));
}

/// A front that dies mid-call: the call is cancelled as if the client had cancelled it, so a
/// parallel run ends what it started; panes made by other calls stay.
#[test]
fn a_dead_fronts_parallel_run_cleans_up_and_other_panes_stay() {
    let server = Server::new("deadpar");
    let mut front = server.front();
    let kept = front.pane("sleep 600");
    front.submit(
        "tools/call",
        json!({"name": "fugue_run_parallel", "arguments": {"commands": [{"command": "sleep 300"}, {"command": "sleep 301"}]},
               "_meta": {"progressToken": "tok"}}),
    );
    first_progress(&mut front, "tok");
    let pid = server.pid();
    let before = procfs::descendants(pid);
    front.child.kill().unwrap();
    front.child.wait().unwrap();
    let mut next = server.front();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = next.call("fugue_list_sessions", json!({}));
        let panes = listed.to_string().matches("\"pid\"").count();
        if panes == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the run's panes stayed: {listed}");
        next.call_result(
            "fugue_expect",
            json!({"pane_id": kept, "pattern": "never", "timeout_ms": 200}),
        );
    }
    let status = next.call("fugue_get_status", json!({"pane_id": kept}));
    assert_eq!(status["status"], "running");
    let kept_pid = status["pid"].as_u64().unwrap() as u32;
    let kept_session = procfs::session_members(kept_pid);
    let runs: Vec<u32> = before.into_iter().filter(|p| !kept_session.contains(p)).collect();
    assert!(!runs.is_empty(), "the run's processes were seen");
    assert_eq!(procfs::all_gone_within(&runs, Duration::from_secs(10)), Vec::<u32>::new());
    assert!(procfs::descendants(pid).contains(&kept_pid));
}

/// The server dies under a front with a call in flight: the front answers it with -32001 and ends.
#[test]
fn a_front_answers_its_open_calls_when_the_server_dies() {
    let server = Server::new("died");
    let mut front = server.front();
    let pane = front.pane("sleep 600");
    let id = front.submit(
        "tools/call",
        json!({"name": "fugue_expect", "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 20000},
               "_meta": {"progressToken": "tok"}}),
    );
    first_progress(&mut front, "tok");
    let pid = server.pid();
    std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    let answer = front.response(&id);
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("fugue server exited"));
    assert!(gone_within(front.pid(), Duration::from_secs(10)), "the front ended");
}

/// A server of another wire protocol that holds nothing is replaced; one with panes is left alone
/// and the front says why, naming both versions and what to do.
#[test]
fn version_skew_replaces_an_empty_server_and_never_one_with_panes() {
    let server = Server::new("skew");
    let old = [("FUGUE_CLAIM_PROTO", "999"), ("FUGUE_CLAIM_VERSION", "9.9.9")];
    let mut old_front = server.front_with(&old);
    old_front.call("fugue_list_sessions", json!({}));
    let old_pid = server.pid();
    let mut new_front = server.front();
    assert!(gone_within(old_pid, Duration::from_secs(10)), "the empty old server was replaced");
    assert_ne!(server.pid(), old_pid);
    new_front.call("fugue_list_sessions", json!({}));
    drop(new_front);
    server.kill_server();

    let mut old_front = server.front_with(&old);
    let pane = old_front.pane("sleep 600");
    let old_pid = server.pid();
    let answer = server.first_answer();
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
    for part in [
        "9.9.9",
        "wire protocol 999",
        env!("CARGO_PKG_VERSION"),
        &format!("fugue kill-server {}", server.name),
    ] {
        assert!(message.contains(part), "{part:?} missing from {message:?}");
    }
    assert!(!gone_within(old_pid, Duration::from_millis(500)));
    assert_eq!(old_front.call("fugue_get_status", json!({"pane_id": pane}))["status"], "running");
}

#[test]
fn ls_names_shared_servers_with_their_fronts_and_state() {
    let server = Server::new("ls");
    let mut front = server.front();
    front.call("fugue_create_session", json!({"name": "work", "command": "sleep 600"}));
    let out = server.run(&["ls"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let pid = server.pid();
    assert!(text.contains(&format!("shared {}  live  pid {pid}", server.name)), "{text}");
    assert!(
        text.contains(&format!("fugue {}  proto 2  1 front", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let here = std::env::current_dir().unwrap();
    let shown = format!("fronts: fugue-tests 0 (pid {}, in {})", front.pid(), here.display());
    assert!(text.contains(&shown), "{text}");
    assert!(text.contains("session work"), "{text}");
    let out = server.run(&["ls", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = &listed.as_array().unwrap()[0];
    assert_eq!(entry["shared"]["name"], server.name.as_str());
    assert_eq!(entry["shared"]["status"]["state"], "live");
    // A stale one: the server is killed outright; ls reports it once and wipes its socket.
    std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(gone_within(pid, Duration::from_secs(10)));
    drop(front);
    let out = server.run(&["ls"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("shared {}  stale", server.name)), "{text}");
    let attach = server.run(&["attach", "--server", &server.name]);
    let err = String::from_utf8_lossy(&attach.stderr);
    assert!(err.contains(&format!("no fugue server named {:?}", server.name)), "{err}");
}

/// An agent pipeline outlives the front that created it: it runs on and merges, and a later front
/// follows it with `until: settled` to the end.
#[test]
fn an_agent_pipeline_outlives_its_front() {
    use crate::agent::{approving_analyzer, implementer, script};
    use crate::util::{GIT_ENV, git, git_repo as repo};
    let server = Server::new("agents");
    let repo = repo(&server.dir);
    let before = git(&repo, &["rev-parse", "main"]);
    let gate = server.dir.join("gate");
    let slow = script(
        &server.dir,
        "slow-implementer",
        &format!(
            "echo waiting; while [ ! -e {} ]; do sleep 0.05; done; exec {}\n",
            gate.display(),
            implementer(&server.dir)
        ),
    );
    let mut first = server.front_with(&GIT_ENV);
    let created = first.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": slow,
               "analyzer": approving_analyzer(&server.dir), "qa": "test -s feature.txt"}),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + PATIENCE;
    let pane = loop {
        let s =
            first.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "wait_ms": 5000}));
        if let Some(pane) = s["pipelines"][0]["pane_id"].as_str() {
            break pane.to_string();
        }
        assert!(Instant::now() < deadline, "the implementer never started: {s}");
    };
    first.expect(&pane, "waiting");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    std::fs::write(&gate, "").unwrap();
    let mut later = server.front();
    let settled = loop {
        let s = later.call(
            "fugue_agent_pipeline_status",
            json!({"pipeline_id": id, "wait_ms": 20000, "until": "settled"}),
        );
        if s["pipelines"][0]["status"] != "running" {
            break s["pipelines"][0].clone();
        }
        assert!(Instant::now() < deadline + PATIENCE, "did not settle: {s}");
    };
    assert_eq!(settled["status"], "complete", "{settled}");
    assert_ne!(git(&repo, &["rev-parse", "main"]), before, "merged into main");
    assert!(
        repo.join("feature.txt").exists()
            || git(&repo, &["show", "main:feature.txt"]).contains("line 1")
    );
}

/// A server that accepts but never says hello (here: a socket nobody serves, and a process holding
/// the pid lock) is reported as unresponsive and never wiped; a front says what to do, and
/// `kill-server` ends it by its pid file.
#[test]
fn an_unresponsive_server_is_left_alone_until_kill_server() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::new("silent");
    let shared = server.shared_dir();
    std::fs::create_dir_all(&shared).unwrap();
    for dir in [shared.parent().unwrap(), shared.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let sock = shared.join(format!("{}.sock", server.name));
    let _silent = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let pid_file = shared.join(format!("{}.pid", server.name));
    let script =
        format!("exec 9>>'{p}'; flock 9; echo $$ >'{p}'; exec sleep 600", p = pid_file.display());
    let mut holder = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let deadline = Instant::now() + PATIENCE;
    while std::fs::read_to_string(&pid_file).unwrap_or_default().trim() != holder.id().to_string() {
        assert!(Instant::now() < deadline, "the pid lock was never taken");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = server.run(&["ls"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("shared {}  unresponsive  pid {}", server.name, holder.id())),
        "{text}"
    );
    assert!(sock.exists(), "an unresponsive server's socket is never removed");
    let answer = server.first_answer();
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
    assert!(message.contains("does not answer"), "{message}");
    assert!(message.contains(&format!("fugue kill-server {}", server.name)), "{message}");
    let out = server.kill_server();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = holder.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM));
}

/// 128 connections at once is the limit: one more front is told so, and once one leaves there is
/// room again.
#[test]
fn connections_past_the_limit_are_refused_with_a_clear_error() {
    use std::io::{BufRead, BufReader, Write};
    let server = Server::new("full");
    let mut first = server.front();
    first.call("fugue_list_sessions", json!({}));
    let sock = server.shared_dir().join(format!("{}.sock", server.name));
    let hello =
        "{\"fugue\":\"hello\",\"proto\":2,\"version\":\"test\",\"pid\":1,\"role\":\"front\"}\n";
    let mut held: Vec<std::os::unix::net::UnixStream> = (0..127)
        .map(|_| {
            let mut stream = std::os::unix::net::UnixStream::connect(&sock).unwrap();
            stream.write_all(hello.as_bytes()).unwrap();
            let mut line = String::new();
            BufReader::new(stream.try_clone().unwrap()).read_line(&mut line).unwrap();
            assert!(line.contains("\"fugue\":\"hello\""), "{line}");
            stream
        })
        .collect();
    let answer = server.first_answer();
    let message = answer["error"]["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
    assert!(message.contains("128 connections at most"), "{message}");
    let ls = String::from_utf8_lossy(&server.run(&["ls"]).stdout).into_owned();
    assert!(ls.contains(&format!("shared {}  busy", server.name)), "{ls}");
    held.pop();
    // The server notices the closed connection on its own thread: the next front may come first.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let answer = server.first_answer();
        if answer.get("result").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "no room after a connection left: {answer}");
    }
    first.call("fugue_list_sessions", json!({}));
}

/// Fronts that arrive just as an empty server decides to end (its 1 s grace), on a loaded machine,
/// always get a server: the ending one or the next.
#[test]
fn a_front_arriving_as_an_empty_server_ends_gets_a_server() {
    let server = Server::new("edge");
    let _load = crate::util::BusyLoops::new(2);
    for i in 0..12u64 {
        let mut leaving = server.front();
        leaving.call("fugue_list_sessions", json!({}));
        leaving.close_stdin();
        // Across the grace period's end, in 15 ms steps.
        std::thread::sleep(Duration::from_millis(920 + i * 15));
        let mut arriving = server.front();
        assert_eq!(arriving.call("fugue_list_sessions", json!({}))["sessions"], json!([]));
        arriving.close_stdin();
    }
}

/// A front caps what its client sends as the server caps it (`FUGUE_MAX_LINE_BYTES`): 64 MiB with
/// no newline costs it no memory, and a line one byte past its cap is answered -32600 by the
/// front itself — this server takes lines of 4 MiB, so the answer cannot be the server's — and
/// the front serves on.
#[test]
fn a_front_caps_the_lines_its_client_sends() {
    use std::io::Write;
    let server = Server::new("client-cap");
    let mut first = server.front();
    first.call("fugue_list_sessions", json!({}));
    let mut front = server.front_with(&[("FUGUE_MAX_LINE_BYTES", "2048")]);
    let frame = |pad: &str| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{{\"x\":\"{pad}\"}}}}"
        )
    };
    let ping = |size: usize| frame(&"a".repeat(size - frame("").len()));
    // At the cap the line goes through.
    front.send_line(&ping(2048));
    assert_eq!(front.response(&json!(7))["result"], json!({}));
    front.send_line(&ping(2049));
    let refused = front.next_message(Instant::now() + PATIENCE).expect("an answer");
    assert_eq!(
        (refused["id"].clone(), refused["error"]["code"].clone()),
        (json!(null), json!(-32600)),
        "{refused}"
    );
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("FUGUE_MAX_LINE_BYTES"),
        "{refused}"
    );
    let before = procfs::rss_kb(front.pid());
    let mut stdin = front.take_stdin();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..64 {
        stdin.write_all(&chunk).unwrap();
    }
    let grown = procfs::rss_kb(front.pid()).saturating_sub(before);
    assert!(grown < 16 * 1024, "the front grew by {grown} KiB reading a line without a newline");
    stdin.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n").unwrap();
    let refused = front.next_message(Instant::now() + PATIENCE).expect("an answer");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(front.response(&json!(8))["result"], json!({}));
}

/// A peer on the server's socket that never ends its line: the front reads no more than its cap
/// (64 MiB here), answers its open request saying why, and ends; `fugue call --shared` says the
/// same and fails.
#[test]
fn a_front_caps_the_lines_the_server_sends() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::PermissionsExt;
    const CAP: usize = 64 << 20;
    let server = Server::new("server-cap");
    let shared = server.shared_dir();
    std::fs::create_dir_all(&shared).unwrap();
    for dir in [shared.parent().unwrap(), shared.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let listener =
        std::os::unix::net::UnixListener::bind(shared.join(format!("{}.sock", server.name)))
            .unwrap();
    // A peer that says hello, reads one line (the front's first request) and then sends one byte
    // past the cap with no newline, and holds the connection open.
    let peer = std::thread::spawn(move || {
        let mut held = Vec::new();
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().unwrap();
            let mut input = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            input.read_line(&mut line).unwrap();
            stream
                .write_all(b"{\"fugue\":\"hello\",\"proto\":2,\"version\":\"test\",\"pid\":1}\n")
                .unwrap();
            line.clear();
            input.read_line(&mut line).unwrap();
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..CAP >> 20 {
                stream.write_all(&chunk).unwrap();
            }
            // The front stops reading here; the last byte may find its buffer full.
            let _ = stream.write_all(b"x");
            held.push(stream);
        }
        held
    });
    let mut front = server.bare_front();
    let id = front.submit(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let answer = front.response(&id);
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("over {CAP} bytes")), "{message}");
    let status = crate::util::wait_exited(&mut front.child, PATIENCE);
    assert_eq!(status.code(), Some(1));
    let out = server.run(&["call", "--shared", &server.name, "fugue_list_sessions", "{}"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&format!("over {CAP} bytes")), "{err}");
    drop(peer.join().unwrap());
}
