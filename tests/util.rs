//! A small harness that runs `fugue` as a child and talks MCP to it over stdio.
//!
//! A reader thread parses every stdout line; responses are matched by id and notifications are
//! kept in order. Waits have deadlines, so a hung server fails a test instead of hanging it. Temp
//! directories follow ripgrep's `Dir`: a unique path under the system temp dir, removed on drop.
//! Git fixtures (a repository on `main` with one commit, git kept away from the user's
//! configuration), signals (by libc constant), waits for processes, and the seeded generator of
//! hostile input live here too, so every test file uses one set. Helpers that assert carry
//! `#[track_caller]`, so a failure names the test's line.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
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
    #[track_caller]
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

    #[track_caller]
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes to fugue's stdin (no newline is added): for malformed input.
    #[track_caller]
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Hands fugue's stdin over, for a test that writes from another thread or closes it.
    #[track_caller]
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
    #[track_caller]
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
    #[track_caller]
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
    #[track_caller]
    pub fn call_result(&mut self, tool: &str, args: Value) -> Value {
        // A call may take as long as it was told to wait: a venv made on a busy machine took
        // longer than PATIENCE under a timeout_ms of three minutes.
        let told = ["timeout_ms", "wait_ms"].iter().filter_map(|k| args[*k].as_u64()).max();
        let within = PATIENCE + Duration::from_millis(told.unwrap_or(0));
        let id = self.submit("tools/call", json!({"name": tool, "arguments": args}));
        let response = self
            .response_within(&id, within)
            .unwrap_or_else(|| panic!("no response to {tool} (id {id}) within {within:?}"));
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
    #[track_caller]
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call_result(tool, args.clone());
        assert_ne!(result["isError"], json!(true), "{tool} {args} failed: {result}");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail and returns its error object (`code`, `message`).
    #[track_caller]
    pub fn call_err(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call_result(tool, args.clone());
        assert_eq!(result["isError"], json!(true), "{tool} {args} should fail: {result}");
        result["structuredContent"]["error"].clone()
    }

    /// Starts a pane running `command` in a new session; returns its pane id.
    #[track_caller]
    pub fn pane(&mut self, command: &str) -> String {
        let created = self.call("fugue_create_session", json!({"command": command}));
        created["pane_id"].as_str().unwrap().to_string()
    }

    /// Starts an interactive shell pane and waits for its first prompt, so that what a test types
    /// is read by the shell and not echoed by the terminal ahead of the prompt; returns its id.
    #[track_caller]
    pub fn shell(&mut self) -> String {
        let created = self.call("fugue_create_session", json!({}));
        let pane = created["pane_id"].as_str().unwrap().to_string();
        self.expect(&pane, r"[$#%>]$");
        pane
    }

    /// Waits, by blocking on fugue_expect, until the pane has exited; returns its status.
    #[track_caller]
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
    #[track_caller]
    pub fn expect(&mut self, pane: &str, pattern: &str) -> Value {
        let found = self.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": pattern, "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "expected {pattern:?} in pane {pane}: {found}");
        found
    }

    /// Waits until `pattern` appears in output after offset `since`.
    #[track_caller]
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

    #[track_caller]
    pub fn text(&mut self, pane: &str) -> String {
        let out = self.call("fugue_get_output", json!({"pane_id": pane, "lines": 1000}));
        out["output"].as_str().unwrap().to_string()
    }

    /// Closes stdin and waits for fugue to exit; returns how long it took.
    #[track_caller]
    pub fn close_stdin(&mut self) -> Duration {
        let started = Instant::now();
        self.stdin.take();
        wait_exited(&mut self.child, Duration::from_secs(10));
        started.elapsed()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Fugue {
    fn drop(&mut self) {
        self.stdin.take();
        if exited_within(&mut self.child, Duration::from_secs(5)).is_some() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child` to exit; its status, or `None` if it still runs at the deadline. A child has
/// no event to block on but its exit, which `wait` would take without a deadline, so this looks
/// every 10 ms.
pub fn exited_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` to exit, which it must within `within`; returns its status.
#[track_caller]
pub fn wait_exited(child: &mut Child, within: Duration) -> ExitStatus {
    match exited_within(child, within) {
        Some(status) => status,
        None => panic!("process {} did not exit within {within:?}", child.id()),
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

/// Sends `sig` (a `libc::SIG*` constant) to `pid`; the process must exist.
#[track_caller]
pub fn signal(pid: u32, sig: i32) {
    let pid = libc::pid_t::try_from(pid).expect("a pid fits pid_t");
    // SAFETY: kill(2) takes any pid and signal number and touches no memory of ours.
    let sent = unsafe { libc::kill(pid, sig) };
    assert_eq!(sent, 0, "kill({pid}, {sig}): {}", std::io::Error::last_os_error());
}

/// Keeps git away from the machine's and the user's configuration.
pub const GIT_ENV: [(&str, &str); 2] =
    [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];

/// Runs git in `dir`, which must succeed; returns its trimmed stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).envs(GIT_ENV).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether git in `dir` succeeds.
pub fn git_ok(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(GIT_ENV)
        .output()
        .unwrap()
        .status
        .success()
}

/// A git repository on `main` with one commit, in `dir/repo`; user name and email in its own
/// config.
#[track_caller]
pub fn git_repo(dir: &Dir) -> PathBuf {
    let path = dir.join("repo");
    std::fs::create_dir_all(&path).unwrap();
    git(&path, &["init", "-q", "-b", "main"]);
    git(&path, &["config", "user.name", "Test"]);
    git(&path, &["config", "user.email", "test@example.com"]);
    std::fs::write(path.join("README.md"), "hello\n").unwrap();
    git(&path, &["add", "README.md"]);
    git(&path, &["commit", "-qm", "initial"]);
    path
}

/// xorshift64*: tiny, fast, and good enough to pick mutations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The seed of the hostile-input generators: `FUGUE_HOSTILE_SEED`, or a fixed one.
pub fn seed() -> u64 {
    std::env::var("FUGUE_HOSTILE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_F00D_CAFE_1234)
}

// ---------------------------------------------------------------------------------------------
// Helpers of the orchestration tests (expect.rs, parallel.rs, pipeline.rs, shells.rs)

/// Waits until `cond` holds, checking every 10 ms, for at most `PATIENCE`.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a pid a command wrote to `path`, waiting for the file to be complete.
pub fn pid_in(path: &std::path::Path) -> u32 {
    let mut pid = 0;
    wait_until(&format!("a pid in {}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .filter(|s| s.ends_with('\n'))
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    pid
}

/// Every pane in every session, with its session and window names added.
pub fn all_panes(f: &mut Fugue) -> Vec<Value> {
    let list = f.call("fugue_list_sessions", json!({}));
    let mut panes = Vec::new();
    for session in list["sessions"].as_array().unwrap() {
        for window in session["windows"].as_array().unwrap() {
            for pane in window["panes"].as_array().unwrap() {
                let mut pane = pane.clone();
                pane["session"] = session["name"].clone();
                pane["window"] = window["name"].clone();
                pane["window_rows"] = window["rows"].clone();
                pane["window_cols"] = window["cols"].clone();
                panes.push(pane);
            }
        }
    }
    panes
}

/// Waits until a pane whose command contains `needle` exists; returns it.
pub fn find_pane(f: &mut Fugue, needle: &str) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let found = all_panes(f)
            .into_iter()
            .find(|p| p["command"].as_str().is_some_and(|c| c.contains(needle)));
        if let Some(pane) = found {
            return pane;
        }
        assert!(Instant::now() < deadline, "no pane running {needle:?}");
    }
}

/// An interactive shell pane that has printed its first prompt. Input typed earlier is echoed by
/// the terminal before the prompt, which would put the prompt in front of the command's output.
pub fn ready_shell(f: &mut Fugue) -> String {
    let pane = f.shell();
    f.expect(&pane, r"^[#$%>]$");
    pane
}

pub fn tool_params(tool: &str, args: Value, token: Option<&str>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    params
}

/// Submits a tool call without waiting; returns the request id.
pub fn submit(f: &mut Fugue, tool: &str, args: Value) -> Value {
    f.submit("tools/call", tool_params(tool, args, None))
}

pub fn structured(response: &Value) -> Value {
    assert!(response.get("error").is_none(), "{response}");
    response["result"]["structuredContent"].clone()
}

/// Reads messages until a progress notification for `token` has arrived.
pub fn wait_for_progress(f: &mut Fugue, token: &str) {
    let deadline = Instant::now() + PATIENCE;
    while progress_for(f, token).is_empty() {
        let message = f.next_message(deadline).expect("a progress notification");
        f.backlog.push(message);
    }
}

/// The progress notifications received so far for `token`.
pub fn progress_for(f: &Fugue, token: &str) -> Vec<Value> {
    f.backlog
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter(|m| m["params"]["progressToken"] == token)
        .map(|m| m["params"].clone())
        .collect()
}

pub fn run_parallel(f: &mut Fugue, args: Value) -> Value {
    f.call("fugue_run_parallel", args)
}

pub fn run_pipeline(f: &mut Fugue, args: Value) -> Value {
    f.call("fugue_run_pipeline", args)
}

/// The size of a result as a client receives it: the compact JSON text block.
pub fn json_size(value: &Value) -> usize {
    serde_json::to_string(value).unwrap().len()
}

/// Pipeline temp directories of this fugue that still exist.
pub fn pipeline_dirs(f: &Fugue) -> Vec<String> {
    let prefix = format!("fugue-pipeline-{}-", f.pid());
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Load and the shell matrix (parallel.rs, pipeline.rs, shells.rs)

/// Busy loops, one per core, that keep the machine busy while they live; each is killed by its
/// pid when this is dropped, also when the test panics.
pub struct BusyLoops {
    loops: Vec<Child>,
}

impl BusyLoops {
    pub fn one_per_core() -> BusyLoops {
        BusyLoops::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// `n` busy loops, more than the cores when a test wants threads preempted too.
    pub fn new(n: usize) -> BusyLoops {
        BusyLoops::start(n, false)
    }

    /// `n` busy loops, each in a session of its own. With the kernel's autogroups (on by default)
    /// the CPU is shared between sessions first: loops in the test's session share one session's
    /// share, however many there are, while a pane's program has a session of its own. Loops in
    /// sessions of their own compete with it as other panes, terminals and builds do.
    pub fn in_sessions(n: usize) -> BusyLoops {
        BusyLoops::start(n, true)
    }

    fn start(n: usize, own_session: bool) -> BusyLoops {
        let loops = (0..n)
            .map(|_| {
                let mut cmd = Command::new("sh");
                cmd.args(["-c", "while :; do :; done"]).stdin(Stdio::null());
                if own_session {
                    // SAFETY: setsid(2) is async-signal-safe and touches no memory of ours.
                    unsafe {
                        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                            if libc::setsid() < 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            Ok(())
                        });
                    }
                }
                cmd.spawn().expect("start a busy loop")
            })
            .collect();
        BusyLoops { loops }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.loops {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The shells of the matrix: the POSIX family and fish.
pub const SHELLS: [&str; 6] = ["bash", "dash", "zsh", "fish", "ksh", "mksh"];

/// Where `name` is installed, from `PATH`.
pub fn find_shell(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0 && m.is_file()
        })
    })
}

/// The installed shells of `names`, with their paths; says which ones were skipped.
pub fn installed(names: &[&'static str]) -> Vec<(&'static str, PathBuf)> {
    names
        .iter()
        .filter_map(|name| {
            let found = find_shell(name);
            if found.is_none() {
                skip(name, "not installed");
            }
            found.map(|path| (*name, path))
        })
        .collect()
}

/// Whether `program` is on `PATH` (as the shell finds it); records a skip when it is not.
pub fn have(program: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(program, "not installed");
    }
    found
}

/// Says that the running test skips what needs `program` (`why`: "not installed", "would not
/// start"): on stderr, which cargo hides, and, when `make check` asks (`FUGUE_SKIP_LOG`), as a
/// line of that file — the test, the program's name, why — which it sums up as its last words
/// (`.ci/skipped`), so a skip is never taken for a pass.
pub fn skip(program: &str, why: &str) {
    eprintln!("skipped: {program} {why}");
    let Some(log) = std::env::var_os("FUGUE_SKIP_LOG") else { return };
    let name = Path::new(program).file_name().map_or(program.into(), |n| n.to_string_lossy());
    let thread = std::thread::current();
    let line = format!("{}\t{name}\t{why}\n", thread.name().unwrap_or("unnamed test"));
    // One append per line, so tests running at once do not interleave theirs.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    written.unwrap_or_else(|e| panic!("cannot record a skip in {}: {e}", log.display()));
}
