//! Activity tests: does fugue tell a program that waits for someone to type from one that works
//! or waits on something else? Each program of the issue's two lists runs in its own pane, and
//! `fugue_expect` with `on_input: "return"` and a pattern that never appears answers `input`
//! (the program asks) or `timeout` (it does not). The quiet period is 300 ms here, so a `timeout`
//! after 2.5 s means about eight looks at /proc all said "busy".

use crate::util::have;
use crate::util::{BusyLoops, Dir, Fugue};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The quiet period the tests run with, in milliseconds.
const QUIET_MS: &str = "300";
/// How long a program that does not ask is watched.
const NOT_ASKING_MS: u64 = 2500;

fn fugue() -> Fugue {
    Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", QUIET_MS)])
}

// Tests that need several programs join `have` checks with `|`, not `||`, so every missing one
// is named.

/// Waits on the pane for a pattern that never appears, returning at input.
fn watch(f: &mut Fugue, pane: &str, timeout_ms: u64) -> Value {
    f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^NEVER-PRINTED$", "on_input": "return",
               "timeout_ms": timeout_ms}),
    )
}

/// Runs `command` in a pane (through `sh -c`) and checks that fugue says it waits for input,
/// long before the timeout; returns the answer.
fn asks(f: &mut Fugue, command: &str) -> Value {
    let (pane, answer) = asking_pane(f, json!({"command": command}));
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    answer
}

/// Creates a session with `args` and checks that fugue says its pane waits for input, long
/// before the timeout; returns the pane and the answer.
fn asking_pane(f: &mut Fugue, args: Value) -> (String, Value) {
    let pane =
        f.call("fugue_create_session", args.clone())["pane_id"].as_str().unwrap().to_string();
    let answer = watch(f, &pane, 20_000);
    assert_eq!(answer["status"], "input", "{args}: {answer}\n{}", f.text(&pane));
    (pane, answer)
}

/// Asks fugue_get_status about a quiet pane `count` times, one look at /proc each, and returns
/// the activities seen that were not `input`.
fn not_input(f: &mut Fugue, pane: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|_| f.call("fugue_get_status", json!({"pane_id": pane}))["activity"].clone())
        .filter(|activity| activity != "input")
        .collect()
}

/// Runs `command` in a pane and checks that fugue never says it waits for input.
fn does_not_ask(f: &mut Fugue, command: &str) {
    let pane = f.pane(command);
    let answer = watch(f, &pane, NOT_ASKING_MS);
    assert_eq!(answer["status"], "timeout", "{command}: {answer}\n{}", f.text(&pane));
    f.call("fugue_close_pane", json!({"pane_id": pane}));
}

// Programs that ask.

#[test]
fn bash_read_asks() {
    let mut f = fugue();
    let answer = asks(&mut f, "bash -c 'read -p \"ok? \" x; echo got $x'");
    assert_eq!(answer["line"], "ok?");
}

#[test]
fn bash_read_silent_asks() {
    let mut f = fugue();
    let answer = asks(&mut f, "bash -c 'read -s -p \"Password: \" x'");
    assert_eq!(answer["line"], "Password:");
}

/// fish's `read` polls the terminal beside its universal-variable notifier, a FIFO it holds open
/// for reading and writing (fish 3), and an eventfd.
#[test]
fn fish_read_asks() {
    if !have("fish") {
        return;
    }
    let mut f = fugue();
    let answer = asks(&mut f, "fish -c \"read -P 'ok? ' x; echo got \\$x\"");
    assert_eq!(answer["line"], "ok?");
}

/// How many looks the load test takes in each round.
const LOOKS: usize = 60;

/// fish's `read` while other fish shells change universal variables, on a busy machine: while
/// its notifier FIFO is readable fish polls every 10 ms, and a look at /proc that catches it awake
/// between two polls once said busy (under load, when a woken thread waits its turn for a CPU,
/// often enough that `make check` once waited 20 s for `input`). The notifier is this test's own
/// (fish keeps it in `XDG_RUNTIME_DIR`), so the test's posts reach no other fish.
#[test]
fn fish_read_asks_under_load_while_universal_variables_change() {
    if !have("fish") {
        return;
    }
    let runtime = Dir::new("fish-runtime");
    std::fs::set_permissions(&runtime.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let notifier = runtime.join("fish_universal_variables.notifier");
    assert!(Command::new("mkfifo").arg(&notifier).status().unwrap().success());
    let _posts = NotifierPosts::start(&notifier);
    let _load = BusyLoops::in_sessions(4);
    let mut f = fugue();
    for round in 0..3 {
        let (pane, _) = asking_pane(
            &mut f,
            json!({"command": "fish -c \"read -P 'ok? ' x; echo got \\$x\"",
                   "env": {"XDG_RUNTIME_DIR": runtime.path_str()}}),
        );
        let seen = not_input(&mut f, &pane, LOOKS);
        assert!(seen.is_empty(), "round {round}: {} of {LOOKS} looks: {seen:?}", seen.len());
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
}

/// Writes a byte into a fish universal-variable notifier every few milliseconds until dropped, as
/// fish shells that change universal variables do (fish reads them back): load, not a wait.
struct NotifierPosts {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NotifierPosts {
    fn start(fifo: &Path) -> NotifierPosts {
        let fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                // A full FIFO (fish not reading) refuses the byte; that is as readable as it gets.
                let _ = (&fifo).write(&[0]);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        NotifierPosts { stop, thread: Some(thread) }
    }
}

impl Drop for NotifierPosts {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn python_input_asks() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    let answer = asks(&mut f, "python3 -c 'input(\"name? \")'");
    assert_eq!(answer["line"], "name?");
}

#[test]
fn python_getpass_asks() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    asks(&mut f, "python3 -c 'import getpass; getpass.getpass(\"Secret: \")'");
}

#[test]
fn a_yes_no_question_on_stdin_asks() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    let answer = asks(
        &mut f,
        "python3 -c 'import sys; print(\"Continue? [Y/n] \", end=\"\", flush=True); \
         sys.stdin.readline()'",
    );
    assert_eq!(answer["line"], "Continue? [Y/n]");
}

#[test]
fn rm_interactive_asks() {
    let dir = Dir::new("rm-i");
    let file = dir.write("victim", "x");
    let mut f = fugue();
    let answer = asks(&mut f, &format!("rm -i {}", file.display()));
    assert!(answer["line"].as_str().unwrap().contains("remove"), "{answer}");
    assert!(file.exists(), "nobody answered, so the file stays");
}

#[test]
fn the_python_repl_asks() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    let answer = asks(&mut f, "python3 -q");
    assert_eq!(answer["line"], ">>>");
}

#[test]
fn less_asks() {
    if !have("less") {
        return;
    }
    let dir = Dir::new("less");
    let file = dir.write("long.txt", &"a line of text\n".repeat(200));
    let mut f = fugue();
    asks(&mut f, &format!("less {}", file.display()));
}

#[test]
fn vim_asks() {
    if !have("vim") {
        return;
    }
    let dir = Dir::new("vim");
    let file = dir.write("notes.txt", "hello\n");
    let mut f = fugue();
    asks(&mut f, &format!("vim -u NONE -N {}", file.display()));
}

#[test]
fn git_commit_opening_an_editor_asks() {
    if !have("git") | !have("vim") {
        return;
    }
    let dir = Dir::new("git-commit");
    let repo = dir.path_str();
    let setup = format!(
        "cd {repo} && git init -q && git config user.email t@example.com && \
         git config user.name t && echo x > f && git add f"
    );
    assert!(Command::new("sh").args(["-c", &setup]).status().unwrap().success());
    let mut f = fugue();
    asks(&mut f, &format!("cd {repo} && git -c core.editor='vim -u NONE -N' commit"));
}

#[test]
fn cat_without_arguments_asks() {
    let mut f = fugue();
    asks(&mut f, "cat");
}

#[test]
fn the_node_repl_asks() {
    if !have("node") {
        return;
    }
    let mut f = fugue();
    let answer = asks(&mut f, "node");
    assert_eq!(answer["line"], ">");
}

#[test]
fn a_question_before_any_output_is_found_and_output_restarts_the_quiet_period() {
    // `cat` prints nothing at all; a program that prints every 100 ms never counts as asking,
    // though it reads the terminal between prints.
    let mut f = fugue();
    asks(&mut f, "sleep 1; cat");
    does_not_ask(&mut f, "bash -c 'while :; do read -t 0.1 x; printf .; done'");
}

#[test]
fn input_is_told_apart_under_load() {
    // Four busy loops on two cores: the probes see threads scheduled late, woken and preempted.
    let _load = BusyLoops::new(4);
    let mut f = fugue();
    for _ in 0..3 {
        asks(&mut f, "bash -c 'read -p \"ok? \" x'");
        does_not_ask(&mut f, "sleep 30 | cat");
    }
}

// Programs that do not ask.

#[test]
fn sleep_does_not_ask() {
    let mut f = fugue();
    does_not_ask(&mut f, "sleep 30");
}

#[test]
fn a_busy_loop_does_not_ask() {
    let mut f = fugue();
    does_not_ask(&mut f, "while :; do :; done");
}

#[test]
fn tail_follow_does_not_ask() {
    let dir = Dir::new("tail");
    let file = dir.write("log", "");
    let mut f = fugue();
    does_not_ask(&mut f, &format!("tail -f {}", file.display()));
}

#[test]
fn a_reader_of_a_pipe_does_not_ask() {
    let mut f = fugue();
    does_not_ask(&mut f, "sleep 30 | cat");
}

#[test]
fn a_reader_of_a_fifo_does_not_ask() {
    let dir = Dir::new("fifo");
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut f = fugue();
    does_not_ask(&mut f, &format!("cat {}", fifo.display()));
    // Held for reading and writing, a FIFO is the program's own wake-up, but not the terminal.
    does_not_ask(&mut f, &format!("cat <>{}", fifo.display()));
    // Beside the terminal, a FIFO only read is the world's: whoever writes it wakes the program.
    if have("python3") {
        does_not_ask(
            &mut f,
            &format!(
                "python3 -c 'import os, select, sys; r = os.open(\"{}\", os.O_RDONLY | \
                 os.O_NONBLOCK); select.select([sys.stdin, r], [], [])'",
                fifo.display()
            ),
        );
    }
}

#[test]
fn a_listening_socket_does_not_ask() {
    let mut f = fugue();
    if have("nc") {
        does_not_ask(&mut f, "nc -l 127.0.0.1 0");
    }
    if have("python3") {
        does_not_ask(
            &mut f,
            "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); \
             s.listen(); s.accept()'",
        );
    }
}

#[test]
fn make_waiting_for_its_child_does_not_ask() {
    let mut f = fugue();
    does_not_ask(&mut f, "sh -c 'sleep 30; true'");
    if have("make") {
        let dir = Dir::new("make");
        dir.write("Makefile", "all:\n\tsleep 30\n");
        does_not_ask(&mut f, &format!("make -C {}", dir.path_str()));
    }
}

#[test]
fn a_select_over_the_terminal_and_a_socket_does_not_ask() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    does_not_ask(
        &mut f,
        "python3 -c 'import select, socket, sys; a, b = socket.socketpair(); \
         select.select([sys.stdin, a], [], [])'",
    );
}

#[test]
fn a_thread_reading_the_terminal_while_another_waits_on_a_socket_does_not_ask() {
    // The shape of `docker attach`: one thread copies the keyboard to the daemon, another waits
    // for the daemon's output. It reads the terminal, but it is not asking.
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    does_not_ask(
        &mut f,
        "python3 -c 'import socket, sys, threading; a, b = socket.socketpair(); \
         threading.Thread(target=sys.stdin.readline, daemon=True).start(); a.recv(1)'",
    );
}

#[test]
fn node_without_its_repl_does_not_ask() {
    // The REPL's tell is the terminal in its event loop's set; a timer or a server has none.
    if !have("node") {
        return;
    }
    let mut f = fugue();
    does_not_ask(&mut f, "node -e 'setTimeout(() => {}, 30000)'");
    does_not_ask(&mut f, "node -e 'require(\"net\").createServer().listen(0, \"127.0.0.1\")'");
}

#[test]
fn docker_attach_does_not_ask() {
    // `docker run -it` and `docker attach`: one thread copies the keyboard to the daemon, the Go
    // runtime's poller waits on the daemon's sockets. Without a daemon, a fake one on a unix socket
    // answers just enough of the API for the real CLI to attach.
    if !have("docker") | !have("python3") {
        return;
    }
    let dir = Dir::new("docker");
    let socket = dir.join("docker.sock");
    let mut daemon = Command::new("python3")
        .arg(dir.write("fake_daemon.py", FAKE_DOCKER_DAEMON))
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(daemon.stdout.take().unwrap()).read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let mut f = fugue();
    does_not_ask(&mut f, &format!("docker -H unix://{} attach c1", socket.display()));
    daemon.kill().unwrap();
    daemon.wait().unwrap();
}

/// A docker daemon that knows one running container with a terminal, `c1`, and attaches to it.
const FAKE_DOCKER_DAEMON: &str = r#"import socketserver, sys, os, json, threading
class H(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            method, path, _ = line.decode().split(' ', 2)
            headers = {}
            while True:
                h = self.rfile.readline().decode()
                if h in ('\r\n', '\n', ''):
                    break
                k, v = h.split(':', 1)
                headers[k.strip().lower()] = v.strip()
            n = int(headers.get('content-length', 0) or 0)
            if n:
                self.rfile.read(n)
            sys.stderr.write(f"{method} {path}\n"); sys.stderr.flush()
            if '/attach' in path:
                self.wfile.write(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
                self.wfile.flush()
                while self.rfile.read(1):
                    pass
                return
            if '/wait' in path:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nApi-Version: 1.47\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                self.wfile.flush()
                threading.Event().wait()
            if path.endswith('/json'):
                body = json.dumps({"Id": "c1", "Name": "/c1", "State": {"Running": True, "Paused": False, "Restarting": False, "Status": "running"},
                                   "Config": {"Tty": True, "OpenStdin": True, "AttachStdin": True}}).encode()
            else:
                body = b"OK" if '_ping' in path else b"{}"
            self.wfile.write(b"HTTP/1.1 200 OK\r\nApi-Version: 1.47\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + (body if method != 'HEAD' else b''))
            self.wfile.flush()
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
path = sys.argv[1]
if os.path.exists(path): os.unlink(path)
s = S(path, H)
print("ready", flush=True)
s.serve_forever()
"#;

#[test]
fn on_input_wait_keeps_waiting_and_bad_values_are_refused() {
    let mut f = fugue();
    let pane = f.pane("bash -c 'read -p \"ok? \" x'");
    f.expect(&pane, "ok\\?");
    let answer =
        f.call("fugue_expect", json!({"pane_id": pane, "pattern": "^NEVER$", "timeout_ms": 1500}));
    assert_eq!(answer["status"], "timeout", "the default is wait: {answer}");
    let err =
        f.call_err("fugue_expect", json!({"pane_id": pane, "pattern": "x", "on_input": "stop"}));
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().contains("wait, return"), "{err}");
}

#[test]
fn a_match_wins_over_input() {
    let mut f = fugue();
    let pane = f.pane("bash -c 'read -p \"ok? \" x'");
    let answer = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "ok\\?", "on_input": "return", "timeout_ms": 20000}),
    );
    assert_eq!(answer["status"], "matched", "{answer}");
}

/// A private sshd on a free port of 127.0.0.1 that lets in one key; killed on drop.
struct Sshd {
    _server: crate::sshd::Sshd,
    dir: Dir,
    port: u16,
}

impl Sshd {
    /// None (after saying why) when sshd is absent or will not start.
    fn start() -> Option<Sshd> {
        let dir = Dir::new("sshd");
        let keys = crate::sshd::Keys::new(&dir)?;
        let server = crate::sshd::Sshd::start(&dir.path, "sshd_config", &keys, "")?;
        let port = server.port;
        Some(Sshd { _server: server, dir, port })
    }

    /// An ssh command line to this server; `known` skips the host key question.
    fn ssh(&self, known: bool, options: &str, command: &str) -> String {
        let key_check = if known {
            "-i {key} -o StrictHostKeyChecking=no"
        } else {
            "-o StrictHostKeyChecking=ask"
        };
        format!(
            "ssh -F /dev/null {} -o UserKnownHostsFile=/dev/null -o BatchMode={} -p {} {options} 127.0.0.1 {command}",
            key_check.replace("{key}", &self.dir.join("user").display().to_string()),
            if known { "yes" } else { "no" },
            self.port
        )
    }
}

#[test]
fn ssh_asking_about_a_host_key_asks() {
    let Some(sshd) = Sshd::start() else { return };
    let mut f = fugue();
    let answer = asks(&mut f, &sshd.ssh(false, "", ""));
    assert!(answer["line"].as_str().unwrap().contains("continue connecting"), "{answer}");
}

#[test]
fn ssh_running_a_remote_command_does_not_ask() {
    // `ssh host make`: it forwards the terminal to the remote command while it waits on the
    // socket, so it reads the terminal without asking anything.
    let Some(sshd) = Sshd::start() else { return };
    let mut f = fugue();
    does_not_ask(&mut f, &sshd.ssh(true, "", "sleep 30"));
    does_not_ask(&mut f, &sshd.ssh(true, "-t", "sleep 30"));
}

/// fish's first `read` in a home without generated completions starts fish's man-page completion
/// generator (python3, minutes of work on a loaded machine) in the background; `fish -c` has no job
/// control, so it stays in the terminal's foreground group. Several such fish at once, on a machine
/// with busy loops in sessions of their own (what `make check` on a fresh machine had), once
/// answered `timeout` after 20 s: the generator worked, so the whole group counted as working.
#[test]
fn fish_read_asks_while_many_fish_start_at_once_under_load() {
    if !have("fish") {
        return;
    }
    let runtime = Dir::new("fish-runtime-many");
    std::fs::set_permissions(&runtime.path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let _load = BusyLoops::in_sessions(2);
    let readers: Vec<_> = (0..3)
        .map(|i| {
            let runtime = runtime.path_str().to_string();
            std::thread::spawn(move || {
                let home = Dir::new(&format!("fish-home-{i}"));
                let mut f = fugue();
                let (pane, _) = asking_pane(
                    &mut f,
                    json!({"command": "fish -c \"read -P 'ok? ' x; echo got \\$x\"",
                           "env": {"XDG_RUNTIME_DIR": runtime, "HOME": home.path_str()}}),
                );
                // Closing the pane ends the generator with it.
                f.call("fugue_close_pane", json!({"pane_id": pane}));
            })
        })
        .collect();
    for reader in readers {
        reader.join().expect("every fish asks");
    }
}

/// A question beside a helper that works but cannot print to the terminal asks; a helper that can
/// print keeps the pane busy.
#[test]
fn a_question_beside_a_silent_helper_asks() {
    let mut f = fugue();
    asks(&mut f, "bash -c '(while :; do :; done) <&0 >/dev/null 2>&1 & read -p \"ok? \" x'");
    does_not_ask(&mut f, "bash -c '(while :; do :; done) <&0 & read -p \"ok? \" x'");
}
