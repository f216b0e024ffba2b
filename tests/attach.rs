//! attach tests: the control socket, `fugue ls`, and `fugue attach` driven through a real PTY.
//!
//! Each watched server gets its own `XDG_RUNTIME_DIR`, so tests never see each other's servers (or
//! the user's). `fugue attach` runs inside a pane of a second fugue, the driver: its pane is a real
//! terminal, keys go in with `fugue_send_input`, and what attach draws is read back with the
//! `screen` view. Every wait blocks on an event (an answer, an `expect`, a socket line) with a
//! deadline; none sleeps.

use crate::util::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// A fugue to watch, with a runtime directory of its own.
pub struct Watched {
    pub fugue: Fugue,
    pub runtime: Dir,
}

impl Watched {
    fn start() -> Watched {
        let runtime = Dir::new("runtime");
        let fugue = Fugue::start_with(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
        Watched { fugue, runtime }
    }

    fn socket(&self) -> PathBuf {
        socket_dir(&self.runtime).join(format!("{}.sock", self.fugue.pid()))
    }

    fn ls(&self, args: &[&str]) -> Output {
        ls(&self.runtime, args)
    }

    fn control(&self) -> Control {
        Control::connect(&self.socket())
    }

    /// The size of the only window of the first session, as (rows, cols).
    fn window_size(&mut self) -> (u64, u64) {
        let list = self.fugue.call("fugue_list_sessions", json!({}));
        let window = &list["sessions"][0]["windows"][0];
        (window["rows"].as_u64().unwrap(), window["cols"].as_u64().unwrap())
    }
}

fn socket_dir(runtime: &Dir) -> PathBuf {
    runtime.join("fugue")
}

fn ls(runtime: &Dir, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("ls")
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime.path_str())
        .output()
        .expect("run fugue ls")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A raw connection to a control socket.
struct Control {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
}

impl Control {
    fn connect(path: &Path) -> Control {
        let stream = UnixStream::connect(path).expect("connect to the control socket");
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Control { reader, writer: stream, next_id: 1 }
    }

    fn send_line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    /// The next line from the server, or `None` at end of file.
    fn line(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&line).expect("a JSON line")),
            Err(e) => panic!("no line from the control socket: {e}"),
        }
    }

    /// Sends a JSON-RPC request and returns its answer, skipping notifications.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&request.to_string());
        loop {
            let line = self.line().expect("an answer before the end");
            if line["id"] == json!(id) {
                return line;
            }
        }
    }

    fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params.clone());
        assert!(answer.get("result").is_some(), "{method} {params} failed: {answer}");
        answer["result"].clone()
    }

    fn error(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params.clone());
        assert!(answer.get("error").is_some(), "{method} {params} should fail: {answer}");
        answer["error"].clone()
    }

    /// The stable word of a failed request: its error's `data.code`, as a tool's error has it.
    fn fails(&mut self, method: &str, params: Value) -> Value {
        self.error(method, params)["data"]["code"].clone()
    }
}

/// The driver: a second fugue whose pane runs `fugue attach` on a 30 x 100 terminal.
pub struct Driver {
    pub fugue: Fugue,
    pub pane: String,
}

impl Driver {
    /// Runs `fugue attach ARGS` against `watched`, then reports its exit status and whether the
    /// terminal settings came back unchanged.
    pub fn attach(watched: &Watched, args: &str) -> Driver {
        let mut fugue = Fugue::start_with(&[("FUGUE_ROWS", "30"), ("FUGUE_COLS", "100")]);
        let command = format!(
            "s=$(stty -g); '{BIN}' attach {args}; echo \"attach-exit=$?\"; \
             t=$(stty -g); [ \"$s\" = \"$t\" ] && echo TERMINAL-RESTORED || echo \"before $s after $t\""
        );
        let created = fugue.call(
            "fugue_create_session",
            json!({"command": command, "env": {"XDG_RUNTIME_DIR": watched.runtime.path_str()}}),
        );
        let pane = created["pane_id"].as_str().unwrap().to_string();
        Driver { fugue, pane }
    }

    fn screen(&mut self) -> (String, u64) {
        let out =
            self.fugue.call("fugue_get_output", json!({"pane_id": self.pane, "format": "screen"}));
        (out["output"].as_str().unwrap().to_string(), out["offset"].as_u64().unwrap())
    }

    /// Waits until `check` holds for what attach shows; each failed look waits for attach to draw
    /// again. `check` may look at other state too, as long as attach redraws when it changes.
    pub fn until(&mut self, what: &str, mut check: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (screen, offset) = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "{what}: never happened; the screen:\n{screen}");
            self.fugue.call_result(
                "fugue_expect",
                json!({"pane_id": self.pane, "pattern": "[\\s\\S]", "since": offset,
                       "timeout_ms": 2000}),
            );
        }
    }

    /// The status line: the last row attach draws.
    pub fn status(screen: &str) -> &str {
        screen.lines().last().unwrap_or("")
    }

    pub fn type_text(&mut self, text: &str) {
        self.fugue.call("fugue_send_input", json!({"pane_id": self.pane, "input": text}));
    }

    /// Presses C-b, then a letter or a named key.
    pub fn prefix(&mut self, then: &str) {
        let input = if then.chars().count() == 1 {
            json!({"pane_id": self.pane, "input": format!("\u{2}{then}")})
        } else {
            json!({"pane_id": self.pane, "input": "\u{2}", "keys": [then]})
        };
        self.fugue.call("fugue_send_input", input);
    }

    /// Waits for attach to end and the terminal check after it; returns what the pane printed.
    /// It waits for the check's output rather than for the pane's exit, which can be announced
    /// before the last output is read.
    pub fn finished(&mut self) -> String {
        let found = self.fugue.call(
            "fugue_expect",
            json!({"pane_id": self.pane, "pattern": "TERMINAL-RESTORED|before .* after",
                   "timeout_ms": 20000}),
        );
        if found["status"] != "matched" {
            let (screen, _) = self.screen();
            let raw = self.fugue.call(
                "fugue_get_output",
                json!({"pane_id": self.pane, "format": "raw", "max_bytes": 2000}),
            );
            panic!("attach did not end: {found}\nscreen:\n{screen}\nraw tail: {:?}", raw["output"]);
        }
        let status = self.fugue.wait_exit(&self.pane);
        assert_eq!(status["exit_code"], 0, "{status}");
        self.fugue.text(&self.pane)
    }

    /// The pid of the attach process: the child of the pane's shell.
    fn attach_pid(&mut self) -> u32 {
        let status = self.fugue.call("fugue_get_status", json!({"pane_id": self.pane}));
        let shell = status["pid"].as_u64().unwrap();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children.split_whitespace().next().expect("attach is running").parse().unwrap()
    }
}

fn two_pane_session(w: &mut Watched) -> (String, String) {
    let created = w.fugue.call(
        "fugue_create_session",
        json!({"name": "work", "command": "printf 'hello from one\\n'; exit 3"}),
    );
    let one = created["pane_id"].as_str().unwrap().to_string();
    w.fugue.wait_exit(&one);
    let two = w.fugue.call(
        "fugue_create_pane",
        json!({"session_id": "work", "window_id": created["window_id"],
               "command": "printf 'second pane\\n'; exec cat"}),
    );
    let two = two["pane_id"].as_str().unwrap().to_string();
    w.fugue.expect(&two, "second pane");
    (one, two)
}

#[test]
fn the_socket_is_private_and_goes_away_with_the_server() {
    let mut w = Watched::start();
    let dir = std::fs::symlink_metadata(socket_dir(&w.runtime)).unwrap();
    assert!(dir.is_dir());
    assert_eq!(dir.mode() & 0o777, 0o700);
    // SAFETY: geteuid has no preconditions.
    assert_eq!(dir.uid(), unsafe { libc::geteuid() });
    let socket = std::fs::symlink_metadata(w.socket()).unwrap();
    assert!(socket.file_type().is_socket());
    assert_eq!(socket.mode() & 0o777, 0o600);
    assert_eq!(socket.uid(), dir.uid());
    w.fugue.close_stdin();
    assert!(!w.socket().exists(), "the socket outlived its server");
}

#[test]
fn an_unsafe_socket_directory_is_refused() {
    let runtime = Dir::new("open");
    std::fs::create_dir(socket_dir(&runtime)).unwrap();
    std::fs::set_permissions(socket_dir(&runtime), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut fugue = Fugue::start_with(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    // The agent is served all the same; only the side door stays shut.
    fugue.call("fugue_list_sessions", json!({}));
    assert_eq!(std::fs::read_dir(socket_dir(&runtime)).unwrap().count(), 0);
    let out = ls(&runtime, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has mode 755"), "{}", stderr(&out));

    let linked = Dir::new("linked");
    let elsewhere = Dir::new("elsewhere");
    std::fs::set_permissions(&elsewhere.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&elsewhere.path, socket_dir(&linked)).unwrap();
    let mut fugue = Fugue::start_with(&[("XDG_RUNTIME_DIR", linked.path_str())]);
    fugue.call("fugue_list_sessions", json!({}));
    assert_eq!(std::fs::read_dir(&elsewhere.path).unwrap().count(), 0);
    let out = ls(&linked, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
}

#[test]
fn stale_sockets_are_skipped_and_cleaned_up() {
    let runtime = Dir::new("stale");
    let dir = socket_dir(&runtime);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    // A dead server's socket, and one named after a live process that nobody listens on.
    drop(UnixListener::bind(dir.join(format!("{dead}.sock"))).unwrap());
    let unanswered = dir.join(format!("{}.sock", std::process::id()));
    drop(UnixListener::bind(&unanswered).unwrap());
    let out = ls(&runtime, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("no fugue server is running"), "{}", stderr(&out));

    let fugue = Fugue::start_with(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    assert!(!dir.join(format!("{dead}.sock")).exists(), "the dead server's socket is still there");
    let out = ls(&runtime, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let servers = stdout(&out).lines().filter(|l| l.starts_with("fugue ")).count();
    assert_eq!(servers, 1, "{}", stdout(&out));
    assert!(stdout(&out).starts_with(&format!("fugue {}  ", fugue.pid())));
}

#[test]
fn ls_lists_servers_with_their_sessions_windows_and_panes() {
    let mut w = Watched::start();
    let created = w
        .fugue
        .call("fugue_create_session", json!({"name": "build", "command": "printf ready; exit 3"}));
    let first = created["pane_id"].as_str().unwrap().to_string();
    w.fugue.wait_exit(&first);
    w.fugue.call(
        "fugue_create_window",
        json!({"session_id": "build", "name": "logs", "command": "exec cat"}),
    );
    let out = w.ls(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("fugue {}  client fugue-tests 0  up ", w.fugue.pid())),
        "{text}"
    );
    assert_eq!(lines[1], "  session build");
    assert_eq!(lines[2], "    window build:0  80x24  1 pane");
    assert!(lines[3].starts_with(&format!("      pane {}  exited 3  pid ", &first[..8])), "{text}");
    assert!(lines[3].ends_with("printf ready; exit 3"), "{text}");
    assert_eq!(lines[4], "    window build:logs  80x24  1 pane");
    // A running pane shows its activity: cat is busy starting, then waits for input.
    let active = lines[5].contains("  busy  ") || lines[5].contains("  input (cat)  ");
    assert!(active && lines[5].ends_with("exec cat"), "{text}");

    let out = w.ls(&["--json"]);
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["pid"], w.fugue.pid());
    assert_eq!(json[0]["client"]["name"], "fugue-tests");
    assert_eq!(json[0]["sessions"][0]["name"], "build");
    assert_eq!(json[0]["sessions"][0]["windows"][0]["panes"][0]["exit_code"], 3);
    assert_eq!(w.ls(&["--bogus"]).status.code(), Some(2));
}

#[test]
fn ls_names_a_modern_client_and_survives_an_unknown_one() {
    let runtime = Dir::new("modern");
    let mut modern = Fugue::spawn(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "modern\nagent", "version": "9"}});
    let answer = modern.request("tools/list", json!({"_meta": meta}));
    assert!(answer.get("result").is_some(), "{answer}");
    let mut silent = Fugue::spawn(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    let answer =
        silent.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}}));
    assert!(answer.get("result").is_some(), "{answer}");
    let text = stdout(&ls(&runtime, &[]));
    assert!(text.contains(&format!("fugue {}  client modern agent 9  ", modern.pid())), "{text}");
    assert!(text.contains(&format!("fugue {}  client unknown  ", silent.pid())), "{text}");
    assert_eq!(text.matches("  no sessions").count(), 2, "{text}");
}

#[test]
fn the_control_protocol_answers_and_refuses_clearly() {
    let mut w = Watched::start();
    let shell = w.fugue.shell();
    let mut c = w.control();
    let info = c.ok("hello", json!({}));
    assert_eq!(info["pid"], w.fugue.pid());
    assert_eq!(info["input"], false);
    assert_eq!(c.error("launch", json!({}))["code"], -32601, "method not found");
    c.send_line("{not json");
    assert_eq!(c.line().unwrap()["error"]["code"], -32700, "parse error");
    c.send_line(r#"{"jsonrpc": "2.0", "id": 99, "op": "info"}"#);
    assert_eq!(c.line().unwrap()["error"]["code"], -32600, "the old protocol is no request");
    let typed = c.error("input", json!({"pane": shell, "data": "x"}));
    assert_eq!(typed["data"]["code"], "invalid_state");
    assert!(typed["message"].as_str().unwrap().contains("read-only"), "{typed}");
    assert_eq!(c.fails("scrollback", json!({"pane": "nope"})), "pane_not_found");
    let rows = c.error("window", json!({"rows": 0}));
    assert_eq!(
        (&rows["code"], &rows["data"]["code"]),
        (&json!(-32602), &json!("invalid_argument"))
    );
    let small = json!({"session": "0", "window": "0", "rows": 1, "cols": 80});
    assert_eq!(c.fails("resize", small), "invalid_argument");
    let gone = json!({"session": "nope", "window": "0", "rows": 20, "cols": 80});
    assert_eq!(c.fails("resize", gone), "session_not_found");
    // Still serving after all that.
    assert_eq!(c.ok("info", json!({}))["pid"], w.fugue.pid());

    assert_eq!(c.ok("hello", json!({"input": true}))["input"], true);
    c.ok("input", json!({"pane": shell, "data": "echo typed-$((6*7))\r"}));
    w.fugue.expect(&shell, "typed-42");
    let back = c.ok("scrollback", json!({"pane": shell, "lines": 50}));
    // The prompt may come after the typed line's echo, so the answer can share its line.
    let lines = back["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l.as_str().unwrap().ends_with("typed-42")), "{back}");

    let view = c.ok("window", json!({"rows": 10, "cols": 30}));
    assert_eq!(view["current"], 0);
    let pane = &view["panes"][0];
    assert_eq!(pane["id"], shell.as_str());
    assert_eq!(pane["rect"], json!({"row": 0, "col": 0, "rows": 24, "cols": 80}));
    let lines = pane["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 10, "cut to the view's rows");
    assert!(lines.iter().any(|l| l.as_str().unwrap().contains("typed-42")), "{view}");
    assert!(lines.iter().all(|l| l.as_str().unwrap().chars().count() >= 30));

    // A target that is gone falls back to the newest window and says so.
    let gone = c.ok("window", json!({"session": "nope", "window": "0", "rows": 10, "cols": 30}));
    assert_eq!((gone["missing"].clone(), gone["current"].clone()), (json!(true), json!(0)));
    let named = c.ok("window", json!({"session": "0", "rows": 10, "cols": 30}));
    assert_eq!((named["missing"].clone(), named["current"].clone()), (json!(false), json!(0)));

    c.send_line(&"x".repeat(70 << 10));
    assert_eq!(c.line().unwrap()["error"]["code"], -32600, "an over-long line is no request");
    assert!(c.line().is_none(), "an over-long line ends the connection");
    // Other connections are unaffected.
    assert_eq!(w.control().ok("info", json!({}))["pid"], w.fugue.pid());
}

#[test]
fn a_resized_window_retiles_its_panes() {
    let mut w = Watched::start();
    two_pane_session(&mut w);
    let mut c = w.control();
    c.ok("resize", json!({"session": "work", "window": "0", "rows": 20, "cols": 61}));
    assert_eq!(w.window_size(), (20, 61));
    let list = w.fugue.call("fugue_list_sessions", json!({}));
    let panes = list["sessions"][0]["windows"][0]["panes"].as_array().unwrap().clone();
    // The exited pane keeps its size; the running one takes its share of the new window.
    assert_eq!((panes[0]["rows"].clone(), panes[0]["cols"].clone()), (json!(24), json!(80)));
    assert_eq!((panes[1]["rows"].clone(), panes[1]["cols"].clone()), (json!(20), json!(30)));
    let view = c.ok("window", json!({"session": "work", "rows": 20, "cols": 61}));
    assert_eq!(view["panes"][1]["rect"], json!({"row": 0, "col": 31, "rows": 20, "cols": 30}));
    assert_eq!(view["panes"][0]["rect"], json!({"row": 0, "col": 0, "rows": 20, "cols": 30}));
    assert_eq!(view["panes"][0]["lines"].as_array().unwrap().len(), 20);
}

#[test]
fn a_watched_view_is_told_when_it_goes_out_of_date() {
    let mut w = Watched::start();
    let cat = w.fugue.pane("printf 'ready\\n'; exec cat");
    w.fugue.expect(&cat, "ready");
    let mut c = w.control();
    let before = c.ok("window", json!({"rows": 20, "cols": 80, "watch": true}));
    w.fugue.call("fugue_send_input", json!({"pane_id": cat, "input": "one", "submit": true}));
    assert_eq!(c.line().unwrap(), json!({"jsonrpc": "2.0", "method": "changed"}));
    // Disarmed until the client looks again: the next line is the answer, then one more event.
    let after = c.ok("window", json!({"rows": 20, "cols": 80, "watch": true}));
    assert_ne!(before["panes"][0]["lines"], after["panes"][0]["lines"]);
    w.fugue.call("fugue_create_window", json!({"session_id": "0", "command": "exec cat"}));
    assert_eq!(c.line().unwrap(), json!({"jsonrpc": "2.0", "method": "changed"}));
    let view = c.ok("window", json!({"rows": 20, "cols": 80}));
    assert_eq!(view["current"], 1, "a view without a target follows the newest window");
}

#[test]
fn control_connections_are_bounded_and_a_stuck_one_does_not_slow_the_agent() {
    let mut w = Watched::start();
    let big = w.fugue.pane("seq 1 5000; exec cat");
    w.fugue.expect(&big, "5000");
    let mut open: Vec<Control> = (0..16).map(|_| w.control()).collect();
    for c in &mut open {
        c.ok("info", json!({}));
    }
    let mut extra = w.control();
    assert_eq!(extra.line().unwrap()["error"]["data"]["code"], "limit_reached");
    assert!(extra.line().is_none());
    // One that asks and asks without reading: the agent is served all the same, and the server
    // drops that client once a write to it has been stuck for its timeout.
    let mut stuck = open.remove(0);
    let flood = std::thread::spawn(move || {
        let params = json!({"rows": 200, "cols": 200});
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "window", "params": params});
        let request = format!("{request}\n");
        (0..1_000_000).any(|_| stuck.writer.write_all(request.as_bytes()).is_err())
    });
    let pane = w.fugue.pane("printf served");
    w.fugue.expect(&pane, "served");
    assert!(flood.join().unwrap(), "a client that never reads was never dropped");
    // Closed connections give their slots back (once their threads have seen the end).
    open.clear();
    let deadline = Instant::now() + PATIENCE;
    while !answers_info(&w.socket()) {
        assert!(Instant::now() < deadline, "closed connections never gave their slots back");
    }
}

/// Whether a new connection is served (rather than turned away as busy).
fn answers_info(socket: &Path) -> bool {
    let mut c = Control::connect(socket);
    let request = format!("{}\n", json!({"jsonrpc": "2.0", "id": 1, "method": "info"}));
    if c.writer.write_all(request.as_bytes()).is_err() {
        return false;
    }
    c.line().is_some_and(|answer| answer.get("result").is_some())
}

#[test]
fn attach_shows_tiled_panes_with_exit_codes_switches_panes_and_detaches() {
    let mut w = Watched::start();
    let (_, two) = two_pane_session(&mut w);
    let mut d = Driver::attach(&w, "work");
    // A look can catch attach halfway through a frame, so everything checked is waited for.
    let want = "pane 1/2 │ exited 3 │ printf 'hello from one\\n'; exit 3";
    let screen = d.until("both panes drawn with the status", |s| {
        let status = Driver::status(s);
        s.contains("hello from one")
            && s.contains("second pane")
            && status.contains("work:0 (1/1)")
            && status.contains(want)
            && status.contains("read-only")
    });
    // The panes sit side by side: both texts on the first row, a border between.
    let first = screen.lines().next().unwrap();
    assert!(first.starts_with("hello from one") && first.contains("│second pane"), "{first}");

    // The window takes the terminal's size less the status line, and its panes share it.
    d.until("the window sized to the terminal", |_| w.window_size() == (29, 100));

    d.prefix("o");
    d.until("the second pane focused", |s| {
        let status = Driver::status(s);
        // A running pane shows its activity.
        let active = ["busy", "input", "prompt"].iter().any(|a| status.contains(a));
        status.contains("pane 2/2") && active
    });
    d.prefix("Left");
    d.until("back to the first pane", |s| Driver::status(s).contains("pane 1/2"));
    d.type_text("o"); // read-only: the prefix is optional
    d.until("the second pane again", |s| Driver::status(s).contains("pane 2/2"));

    d.prefix("d");
    let after = d.finished();
    assert!(after.contains("[detached from fugue"), "{after}");
    assert!(after.contains("attach-exit=0") && after.contains("TERMINAL-RESTORED"), "{after}");
    // Its last lines as printed, past the answers' budget: the drawing is long.
    let raw = d
        .fugue
        .call("fugue_get_output", json!({"pane_id": d.pane, "format": "raw", "max_bytes": 65536}));
    assert!(raw["output"].as_str().unwrap().contains("\u{1b}[?1049l"), "left the alternate screen");
    // The watched server and its panes carry on.
    let status = w.fugue.call("fugue_get_status", json!({"pane_id": two}));
    assert_eq!(status["status"], "running");
    assert!(alive(w.fugue.pid()));
    w.fugue
        .call("fugue_send_input", json!({"pane_id": two, "input": "still here", "submit": true}));
    w.fugue.expect(&two, "still here");
}

#[test]
fn attach_follows_new_windows_switches_windows_and_scrolls_back() {
    let mut w = Watched::start();
    w.fugue.call("fugue_create_session", json!({"name": "logs", "command": "seq 1 300; exec cat"}));
    let mut d = Driver::attach(&w, "logs");
    d.until("the end of the output", |s| s.contains("\n300\n") || s.contains("\n300 "));

    d.prefix("[");
    // 300 lines in a pane of 29 rows (once attach has sized the window): 271 lines above.
    d.until("scroll mode at the bottom", |s| {
        Driver::status(s).contains("scroll") && s.contains("[0/271]")
    });
    d.fugue.call("fugue_send_input", json!({"pane_id": d.pane, "keys": ["Home"]}));
    let top = d.until("the first lines", |s| s.lines().next().unwrap_or("").starts_with("1 "));
    assert!(top.lines().nth(1).unwrap().starts_with('2'), "{top}");
    d.type_text("q");
    d.until("scroll mode left", |s| !Driver::status(s).contains("scroll"));
    d.fugue.call("fugue_send_input", json!({"pane_id": d.pane, "keys": ["PageUp"]}));
    d.until("one page up", |s| s.lines().next().unwrap_or("").contains("[28/"));
    d.type_text("q");
    // Left before the next window comes: a view of another window ends scroll mode by itself,
    // and a `q` that arrived after it would detach.
    d.until("scroll mode left again", |s| !Driver::status(s).contains("scroll"));

    // Attached to the session without a window, the view follows the agent to its newest window.
    w.fugue.call(
        "fugue_create_window",
        json!({"session_id": "logs", "name": "second", "command": "printf 'window two\\n'; exec cat"}),
    );
    d.until("the new window", |s| {
        s.contains("window two") && Driver::status(s).contains("logs:second (2/2)")
    });
    d.prefix("p");
    d.until("the previous window", |s| Driver::status(s).contains("logs:0 (1/2)"));
    d.prefix("n");
    d.until("the next window", |s| Driver::status(s).contains("logs:second (2/2)"));
    d.prefix("q");
    assert!(d.finished().contains("attach-exit=0"));
}

#[test]
fn attach_with_input_types_into_the_focused_pane() {
    let mut w = Watched::start();
    let shell = w.fugue.call("fugue_create_session", json!({"name": "sh"}))["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut d = Driver::attach(&w, "--input sh");
    d.until("the input mode", |s| {
        let status = Driver::status(s);
        status.contains("│ input │") && status.contains("pane 1/1")
    });
    d.type_text("echo from-the-person-$((6*7))\r");
    w.fugue.expect(&shell, "from-the-person-42");
    d.until("the echo drawn", |s| s.contains("from-the-person-42"));
    // The agent keeps typing too.
    w.fugue.call(
        "fugue_send_input",
        json!({"pane_id": shell, "input": "echo agent-$((3*5))", "submit": true}),
    );
    d.until("the agent's echo drawn", |s| s.contains("agent-15"));
    // Without the prefix, keys are the pane's: q is typed, not a quit.
    d.type_text("quit-not-$((2+2))\r");
    w.fugue.expect(&shell, "quit-not-4.*not found");
    d.prefix("d");
    assert!(d.finished().contains("TERMINAL-RESTORED"));
}

#[test]
fn attach_waits_for_a_window_then_ends_cleanly_when_the_server_dies() {
    let mut w = Watched::start();
    let mut d = Driver::attach(&w, "");
    d.until("the waiting notice", |s| s.contains("has no window yet"));
    w.fugue.pane("printf 'late arrival\\n'; exec cat");
    d.until("the first window", |s| s.contains("late arrival"));
    w.fugue.close_stdin();
    let after = d.finished();
    assert!(after.contains("has exited; nothing left to watch"), "{after}");
    assert!(after.contains("attach-exit=1") && after.contains("TERMINAL-RESTORED"), "{after}");
}

#[test]
fn attach_resizes_with_its_terminal_and_restores_it_on_sigterm() {
    let mut w = Watched::start();
    w.fugue.pane("exec cat");
    let mut d = Driver::attach(&w, "");
    d.until("sized to 30 x 100", |_| w.window_size() == (29, 100));
    d.fugue.call("fugue_resize_pane", json!({"pane_id": d.pane, "rows": 20, "cols": 60}));
    d.until("sized to 20 x 60", |_| w.window_size() == (19, 60));
    let pid = d.attach_pid();
    signal(pid, libc::SIGTERM);
    let after = d.finished();
    assert!(after.contains("ended by SIGTERM"), "{after}");
    assert!(after.contains("attach-exit=143") && after.contains("TERMINAL-RESTORED"), "{after}");
}

#[test]
fn attach_explains_what_it_cannot_do() {
    let mut w = Watched::start();
    w.fugue.pane("exec cat");
    let attach = |args: &[&str]| {
        Command::new(BIN)
            .arg("attach")
            .args(args)
            .env("XDG_RUNTIME_DIR", w.runtime.path_str())
            .output()
            .unwrap()
    };
    let out = attach(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("needs a terminal"), "{}", stderr(&out));
    let out = attach(&["nosuch"]);
    assert!(stderr(&out).contains("no session or window \"nosuch\""), "{}", stderr(&out));
    let out = attach(&["--server", "999999999"]);
    assert!(stderr(&out).contains("no fugue server with pid 999999999"), "{}", stderr(&out));
    assert_eq!(attach(&["--server"]).status.code(), Some(2));
    let empty = Dir::new("empty");
    let out =
        Command::new(BIN).arg("attach").env("XDG_RUNTIME_DIR", empty.path_str()).output().unwrap();
    assert!(stderr(&out).contains("no fugue server is running"), "{}", stderr(&out));
}

#[test]
fn attach_watches_a_tiled_run_parallel_live() {
    let mut w = Watched::start();
    let fifos = Dir::new("fifos");
    let gate = |name: &str| {
        let path = fifos.join(name);
        assert!(Command::new("mkfifo").arg(&path).status().unwrap().success());
        path
    };
    let (alpha, beta) = (gate("alpha"), gate("beta"));
    let call = w.fugue.submit(
        "tools/call",
        json!({"name": "fugue_run_parallel", "arguments": {"layout": "tiled", "commands": [
            {"name": "alpha", "command": format!(
                "printf 'alpha running\\n'; read x < '{}'; echo alpha done; exit 3", path_str(&alpha))},
            {"name": "beta", "command": format!(
                "printf 'beta running\\n'; read x < '{}'; exit 0", path_str(&beta))},
        ]}}),
    );
    let mut d = Driver::attach(&w, "");
    let screen = d.until("both commands side by side", |s| {
        s.contains("alpha running") && s.contains("beta running") && s.contains('│')
    });
    let first = screen.lines().next().unwrap();
    assert!(first.contains("running") && first.contains('│'), "one row holds both: {first}");
    d.until("the parallel window named", |s| {
        let status = Driver::status(s);
        status.contains("parallel-") && status.contains(":parallel (") && status.contains("/2")
    });
    // The window takes the terminal's size, and its panes share it.
    d.until("the panes re-tiled to the terminal", |_| {
        let list = w.fugue.call("fugue_list_sessions", json!({}));
        let panes = list["sessions"][0]["windows"][0]["panes"].clone();
        panes[0]["rows"] == 29 && panes[1]["rows"] == 29 && panes[0]["cols"] == 50
    });

    // Release alpha: it prints, exits 3, and attach shows both, live.
    std::fs::write(&alpha, "go\n").unwrap();
    d.until("alpha's end drawn", |s| s.contains("alpha done"));
    let status = Driver::status(&d.screen().0).to_string();
    if !status.contains("alpha") {
        d.prefix("o");
    }
    d.until("alpha focused, exited 3", |s| {
        let status = Driver::status(s);
        status.contains("alpha") && status.contains("exited 3")
    });

    // Release beta: the call ends, cleans up its session, and attach waits for the next window.
    std::fs::write(&beta, "go\n").unwrap();
    let result = w.fugue.response(&call);
    let results = &result["result"]["structuredContent"]["results"];
    let codes: Vec<&Value> = results.as_array().unwrap().iter().map(|r| &r["exit_code"]).collect();
    assert!(codes.contains(&&json!(3)) && codes.contains(&&json!(0)), "{result}");
    d.until("the window gone", |s| s.contains("has no window yet"));
    d.prefix("d");
    assert!(d.finished().contains("TERMINAL-RESTORED"));
}

/// A sandboxed pane's mode shows in the status line (issue 26).
#[test]
fn attach_shows_a_sandboxed_panes_mode() {
    let runtime = Dir::new("runtime");
    let env = [("XDG_RUNTIME_DIR", runtime.path_str()), ("FUGUE_SANDBOX", "read-only")];
    let mut w = Watched { fugue: Fugue::start_with(&env), runtime };
    w.fugue.call("fugue_create_session", json!({"name": "boxed", "command": "exec sleep 30"}));
    let mut d = Driver::attach(&w, "boxed");
    d.until("the sandbox in the status line", |s| Driver::status(s).contains("sandbox read-only"));
}

/// Every place that says a program asks names it (issue 31 §6): `fugue_get_status`, the listing,
/// `fugue ls` and `fugue attach`'s status line.
#[test]
fn every_view_of_a_pane_that_asks_names_the_program() {
    let mut w = Watched::start();
    let created =
        w.fugue.call("fugue_create_session", json!({"name": "asks", "command": "exec cat"}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    let asked = w.fugue.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!((asked["status"].as_str(), asked["program"].as_str()), (Some("input"), Some("cat")));
    let status = w.fugue.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["activity"], "input", "{status}");
    assert_eq!(status["program"], "cat", "{status}");
    let listed = w.fugue.call("fugue_list_sessions", json!({}));
    let listed = &listed["sessions"][0]["windows"][0]["panes"][0];
    assert_eq!(
        (listed["activity"].as_str(), listed["program"].as_str()),
        (Some("input"), Some("cat"))
    );
    let out = w.ls(&[]);
    let text = stdout(&out);
    assert!(text.lines().any(|l| l.contains("  input (cat)  ")), "{text}");
    let mut d = Driver::attach(&w, "asks");
    d.until("the status line naming cat", |s| Driver::status(s).contains("input (cat)"));
    d.prefix("d");
    d.finished();
    // A pane that does not ask names no program.
    let busy = w.fugue.pane("sleep 30");
    let status = w.fugue.call("fugue_get_status", json!({"pane_id": busy}));
    assert!(status.get("program").is_none(), "{status}");
}
