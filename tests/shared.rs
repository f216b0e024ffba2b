//! Shared servers: fronts come and go, the server keeps the panes.
//!
//! Every test gets its own runtime and state directories (`Server`), so it never sees the user's
//! real servers, and its guard runs `fugue kill-server` so no server outlives the test. Fronts are
//! real `fugue serve --shared NAME` processes driven over stdio by the usual harness.

use crate::procfs;
use crate::util::{BIN, BusyLoops, Dir, Fugue, gone_within};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static COUNT: AtomicUsize = AtomicUsize::new(0);

/// One test's private world, and the server NAME in it; ends the server on drop.
pub struct Server {
    pub dir: Dir,
    pub name: String,
}

impl Server {
    pub fn new(tag: &str) -> Server {
        let dir = Dir::new(&format!("shared-{tag}"));
        std::fs::create_dir_all(dir.join("run")).unwrap();
        std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let n = COUNT.fetch_add(1, Ordering::SeqCst);
        Server { dir, name: format!("t{}-{tag}-{n}", std::process::id()) }
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("XDG_RUNTIME_DIR", self.dir.join("run").to_str().unwrap().to_string()),
            ("FUGUE_STATE_DIR", self.dir.join("state").to_str().unwrap().to_string()),
        ]
    }

    pub fn command(&self, extra: &[(&str, &str)]) -> Command {
        let env = self.env();
        let mut pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        pairs.extend_from_slice(extra);
        Fugue::command(&pairs)
    }

    /// A front (`serve --shared NAME`) after the legacy handshake.
    pub fn front(&self) -> Fugue {
        self.front_with(&[])
    }

    pub fn front_with(&self, extra: &[(&str, &str)]) -> Fugue {
        let mut front = self.bare_front_with(extra);
        front.handshake();
        front
    }

    /// A front before any handshake, for tests of its first answers and of the modern era.
    pub fn bare_front_with(&self, extra: &[(&str, &str)]) -> Fugue {
        let mut cmd = self.command(extra);
        cmd.args(["serve", "--shared", &self.name]);
        Fugue::spawn_command(cmd)
    }

    pub fn bare_front(&self) -> Fugue {
        self.bare_front_with(&[])
    }

    /// A new front's answer to a legacy `initialize`: a result, or the error that refused it.
    pub fn first_answer(&self) -> Value {
        self.bare_front().request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        )
    }

    /// Runs `fugue ARGS...` to completion in this world.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd.output().expect("run fugue")
    }

    pub fn shared_dir(&self) -> std::path::PathBuf {
        self.dir.join("run").join("fugue").join("shared")
    }

    /// The server's pid, from its pid file.
    pub fn pid(&self) -> u32 {
        let text = std::fs::read_to_string(self.shared_dir().join(format!("{}.pid", self.name)));
        text.unwrap().trim().parse().expect("a pid in the pid file")
    }

    /// Every `fugue __server NAME` process of this test, live.
    pub fn server_processes(&self) -> Vec<u32> {
        procfs::all()
            .into_iter()
            .filter(|s| s.state != 'Z')
            .filter(|s| {
                std::fs::read(format!("/proc/{}/cmdline", s.pid)).is_ok_and(|cmd| {
                    let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
                    args.len() >= 3 && args[1] == b"__server" && args[2] == self.name.as_bytes()
                })
            })
            .map(|s| s.pid)
            .collect()
    }

    pub fn kill_server(&self) -> Output {
        self.run(&["kill-server", &self.name])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pids = self.server_processes();
        let _ = self.kill_server();
        for pid in procfs::all_gone_within(&pids, Duration::from_secs(10)) {
            // SAFETY-free fallback for a test that failed half-way: never leave a server behind.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

pub fn pane_id(created: &Value) -> String {
    created["pane_id"].as_str().unwrap().to_string()
}

/// A front that ends at EOF leaves the pane to the server; a new front reads what it printed
/// meanwhile.
#[test]
fn a_pane_survives_its_fronts_eof() {
    let server = Server::new("eof");
    let mut first = server.front();
    let pane = pane_id(&first.call(
        "fugue_create_session",
        json!({"name": "keep", "command": "echo before; read x; echo after-$x; sleep 600"}),
    ));
    first.expect(&pane, "before");
    first.close_stdin();
    let pid = server.pid();
    let mut second = server.front();
    second.call("fugue_send_input", json!({"pane_id": pane, "input": "meanwhile", "submit": true}));
    second.close_stdin();
    let mut third = server.front();
    third.expect(&pane, "after-meanwhile");
    assert_eq!(third.call("fugue_get_status", json!({"pane_id": pane}))["status"], "running");
    assert_eq!(server.pid(), pid, "the same server throughout");
}

#[test]
fn a_pane_survives_its_fronts_sigkill() {
    let server = Server::new("kill9");
    let mut first = server.front();
    let pane = pane_id(&first.call(
        "fugue_create_session",
        json!({"command": "i=0; while [ $i -lt 40 ]; do echo tick-$i; i=$((i+1)); sleep 0.05; done; sleep 600"}),
    ));
    first.expect(&pane, "tick-3");
    // Killed mid-call: an expect that would wait 20 s.
    let _ = first.submit(
        "tools/call",
        json!({"name": "fugue_expect", "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 20000}}),
    );
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let mut second = server.front();
    second.expect(&pane, "tick-39");
    let text = second.text(&pane);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let want: Vec<String> = (0..40).map(|i| format!("tick-{i}")).collect();
    assert_eq!(lines, want, "every line, once, in order");
}

#[test]
fn two_fronts_type_into_and_read_one_pane() {
    let server = Server::new("two");
    let mut a = server.front();
    let mut b = server.front();
    let pane = a.shell();
    let sent = b.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo from-$((40+2))-b", "submit": true}),
    );
    a.expect_since(&pane, "from-42-b", &sent["offset"]);
    let sent = a.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo from-$((50+5))-a", "submit": true}),
    );
    b.expect_since(&pane, "from-55-a", &sent["offset"]);
    let listed = b.call("fugue_list_sessions", json!({}));
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
}

/// What `/proc` shows of the server: descriptors, threads, RSS in KiB.
fn measure(pid: u32) -> (usize, u64, u64) {
    (procfs::fds(pid), procfs::threads(pid), procfs::rss_kb(pid))
}

/// Waits until the server's descriptors and threads are back to `base` (workers retire, killed
/// calls finish); returns the last measure.
fn settle(pid: u32, base: (usize, u64, u64)) -> (usize, u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = measure(pid);
        if (now.0 <= base.0 && now.1 <= base.1) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One wave of fronts: each connects and makes a call; every third is killed mid-call.
fn wave(server: &Server, pane: &str, n: usize) {
    let fronts: Vec<std::thread::JoinHandle<()>> = (0..n)
        .map(|i| {
            let mut front = server.front();
            let pane = pane.to_string();
            std::thread::spawn(move || {
                if i % 3 == 0 {
                    let id = front.submit(
                        "tools/call",
                        json!({"name": "fugue_expect", "arguments":
                            {"pane_id": pane, "pattern": "never-printed", "timeout_ms": 30000}}),
                    );
                    // The call is running when its answer has not come within a moment.
                    assert!(front.response_within(&id, Duration::from_millis(100)).is_none());
                    front.child.kill().unwrap();
                    front.child.wait().unwrap();
                } else {
                    let out = front.call("fugue_get_output", json!({"pane_id": pane, "lines": 5}));
                    assert!(out["output"].is_string());
                    front.close_stdin();
                }
            })
        })
        .collect();
    for front in fronts {
        front.join().unwrap();
    }
}

/// 100 fronts come and go (a third killed mid-call) while a pane prints: afterwards the server
/// holds what it held after the first round, and not a line is missing.
#[test]
fn a_hundred_fronts_come_and_go_and_nothing_is_lost_or_kept() {
    let server = Server::new("churn");
    let lines = 3000;
    let mut owner = server.front();
    let pane = pane_id(&owner.call(
        "fugue_create_session",
        // Ten lines, then a pause: output keeps arriving while the fronts come and go, without
        // the 3000 forks of a sleep a line, which on a busy machine outlasted the wait for it.
        json!({"command": format!("i=0; while [ $i -lt {lines} ]; do echo line-$i; i=$((i+1)); \
                                   [ $((i % 10)) -eq 0 ] && sleep 0.02; done; sleep 600")}),
    ));
    owner.close_stdin();
    let pid = server.pid();
    wave(&server, &pane, 10);
    let base = settle(pid, (usize::MAX, u64::MAX, 0));
    let base = settle(pid, base);
    for _ in 0..9 {
        wave(&server, &pane, 10);
    }
    let after = settle(pid, base);
    eprintln!(
        "server after round 1 (fds, threads, RSS KiB): {base:?}; after 100 fronts: {after:?}"
    );
    assert!(after.0 <= base.0, "descriptors grew: {base:?} -> {after:?}");
    assert!(after.1 <= base.1, "threads grew: {base:?} -> {after:?}");
    assert!(after.2 <= base.2 + 2048, "RSS grew by more than 2 MiB: {base:?} -> {after:?}");
    let mut reader = server.front();
    reader.expect(&pane, &format!("line-{}", lines - 1));
    let out = reader.call(
        "fugue_get_output",
        json!({"pane_id": pane, "lines": lines + 10, "max_bytes": 1 << 20}),
    );
    let text = out["output"].as_str().unwrap();
    let seen: std::collections::HashSet<&str> = text.lines().map(str::trim_end).collect();
    let missing: Vec<usize> =
        (0..lines).filter(|i| !seen.contains(format!("line-{i}").as_str())).collect();
    assert!(missing.is_empty(), "lines missing: {missing:?}");
}

/// The server and every process of its panes, for the hygiene tests.
fn server_with_panes(server: &Server) -> (u32, Vec<u32>) {
    let mut front = server.front();
    front.call("fugue_create_session", json!({"command": "sleep 600"}));
    front.call("fugue_create_session", json!({"command": "sh -c 'sleep 600 & sleep 600'"}));
    let stubborn = pane_id(&front.call(
        "fugue_create_session",
        json!({"command": "trap '' TERM HUP; echo stub-born; sleep 600"}),
    ));
    front.expect(&stubborn, "stub-born");
    front.close_stdin();
    let pid = server.pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut all = procfs::descendants(pid);
    while all.len() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        all = procfs::descendants(pid);
    }
    assert!(all.len() >= 5, "the panes' processes: {all:?}");
    all.push(pid);
    (pid, all)
}

#[test]
fn kill_server_leaves_no_process() {
    let server = Server::new("killsrv");
    let (_, all) = server_with_panes(&server);
    let out = server.kill_server();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(procfs::all_gone_within(&all, Duration::from_secs(10)), Vec::<u32>::new());
    assert!(!server.shared_dir().join(format!("{}.sock", server.name)).exists());
    let again = server.kill_server();
    assert!(!again.status.success(), "a second kill-server finds no server");
    assert!(String::from_utf8_lossy(&again.stderr).contains("no server named"));
}

#[test]
fn sigterm_to_the_server_leaves_no_process() {
    let server = Server::new("term");
    let (pid, all) = server_with_panes(&server);
    Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    assert_eq!(procfs::all_gone_within(&all, Duration::from_secs(10)), Vec::<u32>::new());
    assert!(!server.shared_dir().join(format!("{}.sock", server.name)).exists());
}

/// The server lives while it holds a session or a front, and ends once it holds neither.
#[test]
fn exit_empty() {
    let server = Server::new("empty");
    let mut first = server.front();
    let created =
        first.call("fugue_create_session", json!({"name": "work", "command": "sleep 600"}));
    first.close_stdin();
    let pid = server.pid();
    // Past the grace period, with a session: still there.
    assert!(!gone_within(pid, Duration::from_secs(3)), "the server ended with a session alive");
    let mut second = server.front();
    second.call("fugue_close_session", json!({"session_id": created["session_id"]}));
    // No session, but a front: still there.
    assert!(!gone_within(pid, Duration::from_secs(3)), "the server ended with a front connected");
    second.call("fugue_list_sessions", json!({}));
    second.close_stdin();
    assert!(gone_within(pid, Duration::from_secs(10)), "the empty server did not end");
    assert!(!server.shared_dir().join(format!("{}.sock", server.name)).exists());
}

/// Runs leave the orchestration session behind without windows; that holds nothing, so a server
/// whose fronts only ran commands still ends.
#[test]
fn exit_empty_after_runs() {
    let server = Server::new("runs");
    let mut front = server.front();
    let par = front.call("fugue_run_parallel", json!({"commands": [{"command": "true"}]}));
    assert_eq!(par["status"], "completed", "{par}");
    let pipe = front
        .call("fugue_run_pipeline", json!({"commands": [{"command": "true"}], "cleanup": true}));
    assert_eq!(pipe["status"], "completed", "{pipe}");
    let pid = server.pid();
    front.close_stdin();
    assert!(gone_within(pid, Duration::from_secs(10)), "the server outlived its runs' fronts");
}

/// Several fronts started at once, on a loaded machine, end up on one server.
#[test]
fn fronts_racing_to_start_share_one_server() {
    let server = Server::new("race");
    let _load = BusyLoops::new(2);
    for round in 0..3 {
        let fronts: Vec<Fugue> = (0..6).map(|_| server.bare_front()).collect();
        let mut fronts: Vec<Fugue> = fronts
            .into_iter()
            .map(|mut f| {
                f.handshake();
                f
            })
            .collect();
        let created = fronts[0].call(
            "fugue_create_session",
            json!({"name": format!("r{round}"), "command": "sleep 600"}),
        );
        for front in &mut fronts {
            let listed = front.call("fugue_list_sessions", json!({}));
            assert!(listed.to_string().contains(created["session_id"].as_str().unwrap()));
        }
        assert_eq!(server.server_processes().len(), 1, "round {round}");
        let out = server.kill_server();
        assert!(out.status.success());
        drop(fronts);
    }
}

/// A socket and pid file left by a server killed with SIGKILL do not stop the next start.
#[test]
fn a_stale_socket_is_cleaned_up() {
    let server = Server::new("stale");
    let mut first = server.front();
    first.call("fugue_create_session", json!({"command": "sleep 600"}));
    first.close_stdin();
    let pid = server.pid();
    let panes = procfs::descendants(pid);
    Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(gone_within(pid, Duration::from_secs(10)));
    // The pane lost its terminal with the server, and ends with it.
    assert_eq!(procfs::all_gone_within(&panes, Duration::from_secs(10)), Vec::<u32>::new());
    assert!(server.shared_dir().join(format!("{}.sock", server.name)).exists(), "left behind");
    let mut second = server.front();
    assert_eq!(second.call("fugue_list_sessions", json!({}))["sessions"], json!([]));
    assert_ne!(server.pid(), pid);
}

#[test]
fn fugue_server_in_the_environment_makes_a_front() {
    let server = Server::new("env");
    let mut via_env = Fugue::spawn_command(server.command(&[("FUGUE_SERVER", &server.name)]));
    via_env.handshake();
    let created =
        via_env.call("fugue_create_session", json!({"name": "from-env", "command": "sleep 600"}));
    via_env.close_stdin();
    let mut via_flag = server.front();
    let listed = via_flag.call("fugue_list_sessions", json!({}));
    assert_eq!(listed["sessions"][0]["id"], created["session_id"], "{listed}");
    let out = server.run(&["call", "--shared", &server.name, "fugue_list_sessions"]);
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["sessions"][0]["name"], "from-env");
}

/// A server started by a front is on its own: another session, no terminal, not the front's
/// child, stdio on /dev/null but its log, working directory `/`.
#[test]
fn the_server_is_fully_detached() {
    let server = Server::new("detach");
    let mut front = server.front();
    front.call("fugue_list_sessions", json!({}));
    let pid = server.pid();
    let (srv, me) = (procfs::stat(pid).unwrap(), procfs::stat(front.pid()).unwrap());
    assert_ne!(srv.session, me.session, "its own session");
    assert_ne!(srv.session, pid, "not a session leader, so it can never gain a terminal");
    assert_ne!(srv.ppid, front.pid());
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let tty_nr = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(4).unwrap();
    assert_eq!(tty_nr, "0", "no controlling terminal");
    let link = |what: &str| std::fs::read_link(format!("/proc/{pid}/{what}")).unwrap();
    assert_eq!(link("cwd"), std::path::PathBuf::from("/"));
    assert_eq!(link("fd/0"), std::path::PathBuf::from("/dev/null"));
    assert_eq!(link("fd/1"), std::path::PathBuf::from("/dev/null"));
    let log = server.dir.join("state").join("server").join(format!("{}.log", server.name));
    assert_eq!(link("fd/2"), log);
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(&format!("starting, pid {pid}")), "{text}");
}
