//! A small harness that runs `fugue` as a child and talks MCP to it over stdio.
//!
//! A reader thread parses every stdout line; responses are matched by id and notifications are
//! kept in order. Waits have deadlines, so a hung server fails a test instead of hanging it. Temp
//! directories follow ripgrep's `Dir`: a unique path under the system temp dir, removed on drop.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_fugue");
/// The longest any single answer may take in a test before it counts as hung.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub struct Fugue {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Messages read but not yet claimed: notifications and responses to other ids.
    pub backlog: Vec<Value>,
    next_id: i64,
}

impl Fugue {
    /// Starts fugue and completes the legacy handshake.
    pub fn start() -> Fugue {
        Fugue::start_with(&[])
    }

    pub fn start_with(env: &[(&str, &str)]) -> Fugue {
        let mut fugue = Fugue::spawn(env);
        fugue.handshake();
        fugue
    }

    /// The legacy handshake: initialize, then notifications/initialized.
    pub fn handshake(&mut self) {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "fugue-tests", "version": "0"}}),
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        self.notify("notifications/initialized", json!({}));
    }

    /// Starts fugue without any handshake.
    pub fn spawn(env: &[(&str, &str)]) -> Fugue {
        Fugue::spawn_command(Fugue::command(env))
    }

    /// The command `spawn` runs, for a test that needs to change it (stderr, working directory).
    pub fn command(env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        cmd.env("SHELL", "/bin/sh").env_remove("FUGUE_SHELL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts `cmd` (from `command`) without any handshake.
    pub fn spawn_command(mut cmd: Command) -> Fugue {
        let mut child = cmd.spawn().expect("start fugue");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Fugue { child, stdin, lines: rx, backlog: Vec::new(), next_id: 1 }
    }

    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes to fugue's stdin (no newline is added): for malformed input.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Hands fugue's stdin over, for a test that writes from another thread or closes it.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin open")
    }

    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn submit(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.submit(method, params);
        self.response(&id)
    }

    /// Waits for the response with `id`.
    pub fn response(&mut self, id: &Value) -> Value {
        self.response_within(id, PATIENCE).unwrap_or_else(|| panic!("no response to id {id}"))
    }

    pub fn response_within(&mut self, id: &Value, within: Duration) -> Option<Value> {
        if let Some(i) =
            self.backlog.iter().position(|m| m.get("id") == Some(id) && m.get("method").is_none())
        {
            return Some(self.backlog.remove(i));
        }
        let deadline = Instant::now() + within;
        loop {
            let message = self.next_message(deadline)?;
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return Some(message);
            }
            self.backlog.push(message);
        }
    }

    /// The next message of any kind, or `None` at the deadline or end of output.
    pub fn next_message(&mut self, deadline: Instant) -> Option<Value> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(line) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}")),
            ),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Calls a tool and returns the whole `result` (content, structuredContent, isError).
    pub fn call_result(&mut self, tool: &str, args: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(response.get("error").is_none(), "{tool} gave a JSON-RPC error: {response}");
        let result = response["result"].clone();
        // The text block is always the compact copy of the structured content.
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] != json!(true) {
            let copy: Value = serde_json::from_str(text).expect("text block holds JSON");
            assert_eq!(copy, result["structuredContent"]);
        }
        result
    }

    /// Calls a tool that must succeed and returns its structured content.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call_result(tool, args.clone());
        assert_ne!(result["isError"], json!(true), "{tool} {args} failed: {result}");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail and returns its error object (`code`, `message`).
    pub fn call_err(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call_result(tool, args.clone());
        assert_eq!(result["isError"], json!(true), "{tool} {args} should fail: {result}");
        result["structuredContent"]["error"].clone()
    }

    /// Starts a pane running `command` in a new session; returns its pane id.
    pub fn pane(&mut self, command: &str) -> String {
        let created = self.call("fugue_create_session", json!({"command": command}));
        created["pane_id"].as_str().unwrap().to_string()
    }

    /// Starts an interactive shell pane and waits for its first prompt, so that what a test types
    /// is read by the shell and not echoed by the terminal ahead of the prompt; returns its id.
    pub fn shell(&mut self) -> String {
        let created = self.call("fugue_create_session", json!({}));
        let pane = created["pane_id"].as_str().unwrap().to_string();
        self.expect(&pane, r"[$#%>]$");
        pane
    }

    /// Waits, by blocking on fugue_expect, until the pane has exited; returns its status.
    pub fn wait_exit(&mut self, pane: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = self.call("fugue_get_status", json!({"pane_id": pane}));
            if status["status"] == "exited" {
                return status;
            }
            assert!(Instant::now() < deadline, "pane {pane} did not exit: {status}");
            // An expect on an impossible pattern returns as soon as the pane exits.
            self.call_result(
                "fugue_expect",
                json!({"pane_id": pane, "pattern": r"[^\s\S]", "timeout_ms": 5000}),
            );
        }
    }

    /// Waits until `pattern` appears in the pane's text output, using fugue_expect.
    pub fn expect(&mut self, pane: &str, pattern: &str) -> Value {
        let found = self.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": pattern, "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "expected {pattern:?} in pane {pane}: {found}");
        found
    }

    /// Waits until `pattern` appears in output after offset `since`.
    pub fn expect_since(&mut self, pane: &str, pattern: &str, since: &Value) -> Value {
        let found = self.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": pattern, "since": since, "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "expected {pattern:?} in pane {pane}: {found}");
        found
    }

    /// Waits until the pane's screen view shows `needle`; returns that read. The screen has no
    /// event of its own (a full-screen program's drawing is not in the text view that fugue_expect
    /// searches), so this looks again every 20 ms, up to `PATIENCE`.
    #[track_caller]
    pub fn screen_until(&mut self, pane: &str, needle: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen =
                self.call("fugue_get_output", json!({"pane_id": pane, "format": "screen"}));
            if screen["output"].as_str().is_some_and(|s| s.contains(needle)) {
                return screen;
            }
            assert!(Instant::now() < deadline, "{needle:?} never appeared on the screen: {screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn text(&mut self, pane: &str) -> String {
        let out = self.call("fugue_get_output", json!({"pane_id": pane, "lines": 1000}));
        out["output"].as_str().unwrap().to_string()
    }

    /// Closes stdin and waits for fugue to exit; returns how long it took.
    pub fn close_stdin(&mut self) -> Duration {
        let started = Instant::now();
        self.stdin.take();
        let deadline = started + Duration::from_secs(10);
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return started.elapsed();
            }
            assert!(Instant::now() < deadline, "fugue did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Fugue {
    fn drop(&mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True while a process with this pid exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// Waits until `pid` is gone; false if it is still there at the deadline.
pub fn gone_within(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    !alive(pid)
}

static DIR_COUNT: AtomicUsize = AtomicUsize::new(0);

/// A unique temporary directory, removed on drop.
pub struct Dir {
    pub path: PathBuf,
}

impl Dir {
    pub fn new(name: &str) -> Dir {
        let n = DIR_COUNT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("fugue-test-{}-{name}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Dir { path }
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn path_str(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}
