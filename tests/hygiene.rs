//! Process hygiene: no zombies, no survivors, no unbounded growth under a client that stops
//! reading, and a clean end however fugue is stopped.
//!
//! fugue is stopped every way a client or a system can stop it — end of input, SIGINT, SIGTERM,
//! SIGHUP, SIGKILL, a broken stdout — and each time every process it started must be gone within
//! two seconds (for SIGKILL: the ones that do not ignore the terminal's hang-up).
//!
//! And source hygiene: no `allow(dead_code)` outside tests, one name per type, and no state in
//! statics but the listed (`statics`).

mod statics;

use crate::procfs;
use crate::util::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const TWO_SECONDS: Duration = Duration::from_secs(2);

/// Starts panes running `sleep 1000` and returns fugue with the pids of every process under it.
fn fugue_with_sleepers(count: usize) -> (Fugue, Vec<u32>) {
    let mut f = Fugue::start();
    for _ in 0..count {
        let pane = f.pane("sleep 1000");
        f.call("fugue_get_status", json!({"pane_id": pane}));
    }
    let shell = f.shell();
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": shell, "input": "sleep 1000 & echo STARTED", "submit": true}),
    );
    f.call(
        "fugue_expect",
        json!({"pane_id": shell, "pattern": "^STARTED$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    let pids = sleepers_under(f.pid(), count + 1);
    (f, pids)
}

/// Waits until `pid` has at least `count` `sleep` processes below it; returns every descendant.
fn sleepers_under(pid: u32, count: usize) -> Vec<u32> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let all = procfs::descendants(pid);
        let sleeping = all
            .iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .count();
        if sleeping >= count {
            return all;
        }
        assert!(Instant::now() < deadline, "only {sleeping} of {count} sleepers started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn closing_stdin_ends_every_child_within_two_seconds() {
    let (mut f, pids) = fugue_with_sleepers(3);
    let took = f.close_stdin();
    assert!(took < TWO_SECONDS, "fugue took {took:?} to exit");
    let left = procfs::all_gone_within(&pids, TWO_SECONDS);
    assert!(left.is_empty(), "{left:?} outlived fugue");
}

#[test]
fn sigint_sigterm_and_sighup_each_end_every_child_within_two_seconds() {
    for (sig, name) in
        [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")]
    {
        let (mut f, pids) = fugue_with_sleepers(3);
        let started = Instant::now();
        signal(f.pid(), sig);
        let status = wait_exited(&mut f.child, TWO_SECONDS);
        let took = started.elapsed();
        let left = procfs::all_gone_within(&pids, TWO_SECONDS.saturating_sub(took));
        assert!(left.is_empty(), "{name}: {left:?} outlived fugue");
        assert!(status.success(), "{name}: fugue exited with {status}");
        eprintln!("{name}: fugue and {} children gone in {took:?}", pids.len());
    }
}

/// SIGKILL gives fugue no chance to clean up; the kernel hangs up each pane's terminal when its
/// master closes: the session leader gets SIGHUP, and when it dies the terminal's foreground
/// group gets SIGHUP too. That ends every command pane. Two kinds of process survive, and this
/// test pins them down as documented: one that ignores SIGHUP, and a background job of an
/// interactive shell (its own process group, not the foreground one).
#[test]
fn after_sigkill_the_terminal_hang_up_ends_the_panes() {
    let mut f = Fugue::start();
    for _ in 0..3 {
        f.pane("sleep 1000");
    }
    let pids = sleepers_under(f.pid(), 3);
    f.pane("trap '' HUP; exec sleep 1001");
    let shell = f.shell();
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": shell, "input": "sleep 1002 & echo STARTED", "submit": true}),
    );
    f.call(
        "fugue_expect",
        json!({"pane_id": shell, "pattern": "^STARTED$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    let find = |f: &Fugue, arg: &str| loop {
        let found = procfs::descendants(f.pid()).into_iter().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains(arg))
        });
        if let Some(pid) = found {
            break pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stubborn, background) = (find(&f, "1001"), find(&f, "1002"));
    f.child.kill().unwrap();
    f.child.wait().unwrap();
    let left = procfs::all_gone_within(&pids, TWO_SECONDS);
    assert!(left.is_empty(), "{left:?} survived fugue's SIGKILL");
    assert_eq!(procfs::survivors(&[stubborn, background]), vec![stubborn, background]);
    signal(stubborn, libc::SIGKILL);
    signal(background, libc::SIGKILL);
}

/// A pane's exit is reported only after its process is reaped, so no poll of the status can find
/// a zombie behind an exited pane.
#[test]
fn no_zombie_outlives_a_poll_of_the_status() {
    let mut f = Fugue::start();
    let mut panes = Vec::new();
    for i in 0..20 {
        let created = f.call("fugue_create_session", json!({"command": format!("exit {i}")}));
        panes.push((
            created["pane_id"].as_str().unwrap().to_string(),
            created["pid"].as_u64().unwrap() as u32,
        ));
    }
    for (i, (pane, pid)) in panes.iter().enumerate() {
        let status = f.wait_exit(pane);
        assert_eq!(status["exit_code"], i, "{status}");
        let zombies = procfs::zombies(f.pid());
        assert!(!zombies.contains(pid), "pane {i} reported exited while its pid {pid} is a zombie");
    }
    assert!(procfs::zombies(f.pid()).is_empty());
    // Closing exited panes leaves nothing either.
    for (pane, _) in &panes {
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
    assert!(procfs::children(f.pid()).is_empty(), "children left after every pane closed");
}

/// Children start clean: default SIGPIPE, nothing blocked or ignored that fugue set, and no
/// descriptor of fugue's (its pipes, other panes' terminals) leaked into them.
///
/// Each process is looked at once it sleeps, not as soon as it is `sleep`: between its exec and
/// its first sleep a program opens descriptors of its own (the loader's libc.so.6, the locale's
/// files, each as descriptor 3 for a moment), which under load a look just after the exec caught.
/// The panes are created by several calls at once, so panes start while others are being set up.
#[test]
fn pane_processes_inherit_no_descriptors_or_signal_dispositions() {
    const PANES: usize = 12;
    let mut f = Fugue::start();
    let ids: Vec<Value> = (0..PANES)
        .map(|i| {
            let command = format!("exec sleep {}", 1000 + i);
            let call = json!({"name": "fugue_create_session", "arguments": {"command": command}});
            f.submit("tools/call", call)
        })
        .collect();
    for id in ids {
        let created = f.response(&id);
        let pid = created["result"]["structuredContent"]["pid"].as_u64().unwrap() as u32;
        procfs::wait_asleep(pid);
        let fds = procfs::fd_targets(pid);
        assert_eq!(fds.len(), 3, "the pane's process holds {fds:?}");
        assert!(fds.iter().all(|(_, target)| target.starts_with("/dev/pts/")), "{fds:?}");
        let field = |name: &str| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
            let line = status.lines().find(|l| l.starts_with(name)).unwrap().to_string();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(field("SigBlk:"), 0, "signals blocked in the pane");
        assert_eq!(field("SigIgn:") & (1 << (13 - 1)), 0, "SIGPIPE ignored in the pane");
    }
}

/// A raw client that owns both ends of fugue's stdio, for tests that must not read.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
}

impl Raw {
    fn start(env: &[(&str, &str)]) -> Raw {
        let mut child = Fugue::command(env).spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        let mut raw = Raw { child, stdin, stdout };
        raw.write(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "raw", "version": "0"}}}));
        assert_eq!(raw.read()["id"], 0);
        raw.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn write(&mut self, m: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{m}").unwrap();
        stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client that writes thousands of requests and reads nothing: fugue stops reading once its
/// stdout is full, holds a bounded number of threads and bytes, and when the client reads again
/// every request is answered exactly once, inline answers in order.
#[test]
fn a_client_that_stops_reading_gets_backpressure_and_every_answer() {
    const REQUESTS: usize = 3000;
    let mut raw = Raw::start(&[]);
    let pid = raw.child.id();
    let (threads_before, rss_before) = (procfs::threads(pid), procfs::rss_kb(pid));
    let mut stdin = raw.stdin.take().unwrap();
    let written = Arc::new(AtomicUsize::new(0));
    let progress = written.clone();
    let writer = std::thread::spawn(move || {
        for id in 1..=REQUESTS {
            // Mostly tool calls, which run on workers; a ping now and then, answered in order.
            let m = match id % 500 {
                0 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
                n if n % 2 == 1 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                            "params": {"name": "fugue_list_sessions", "arguments": {}}}),
                _ => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                            "params": {"name": "fugue_get_status", "arguments": {"pane_id": "x"}}}),
            };
            if writeln!(stdin, "{m}").is_err() {
                break;
            }
            progress.fetch_add(1, Ordering::SeqCst);
        }
        stdin
    });
    // Wait until the writer stalls (fugue stopped reading) or finishes.
    let mut last = (usize::MAX, Instant::now());
    let stalled_at = loop {
        let now = written.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(1500) || now == REQUESTS {
            break now;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (threads, rss) = (procfs::threads(pid), procfs::rss_kb(pid));
    eprintln!(
        "unread client: {stalled_at} of {REQUESTS} requests taken; threads {threads_before} -> {threads}, \
         RSS {rss_before} -> {rss} KiB"
    );
    assert!(threads <= threads_before + 128 + 8, "threads grew to {threads}");
    assert!(rss < rss_before + 64 * 1024, "RSS grew to {rss} KiB");
    // Now read everything.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut last_ping = 0;
    while seen.len() < REQUESTS {
        let m = raw.read();
        let id = m["id"].as_u64().unwrap_or_else(|| panic!("unexpected message {m}"));
        *seen.entry(id).or_default() += 1;
        if id.is_multiple_of(500) {
            assert!(id > last_ping, "ping {id} answered after ping {last_ping}");
            last_ping = id;
            assert_eq!(m["result"], json!({}), "{m}");
        } else {
            assert!(m["result"].is_object(), "{m}");
        }
    }
    assert!(seen.values().all(|n| *n == 1), "an id was answered twice");
    assert_eq!(seen.len(), REQUESTS);
    let stdin = writer.join().unwrap();
    drop(stdin);
    let status = wait_exited(&mut raw.child, Duration::from_secs(5));
    assert!(status.success());
}

/// When nobody reads stdout any more, fugue notices at its next write, ends every pane and exits.
#[test]
fn a_broken_stdout_ends_fugue_and_its_children() {
    let mut raw = Raw::start(&[]);
    raw.write(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "fugue_create_session", "arguments": {"command": "sleep 1000"}}}));
    assert_eq!(raw.read()["id"], 1);
    let pids = sleepers_under(raw.child.id(), 1);
    drop(raw.stdout.take());
    let started = Instant::now();
    raw.write(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let status = wait_exited(&mut raw.child, TWO_SECONDS);
    assert!(status.success(), "fugue exited with {status}");
    let left = procfs::all_gone_within(&pids, TWO_SECONDS.saturating_sub(started.elapsed()));
    assert!(left.is_empty(), "{left:?} outlived fugue");
}

/// A program that never reads its input cannot make fugue_send_input hang: the terminal takes
/// what fits, the call answers with what is still pending, a further call past the queue's bound is
/// refused, and the pane still closes at once, its input thread with it.
#[test]
fn input_to_a_program_that_never_reads_does_not_block() {
    let mut f = Fugue::start();
    // Raw mode: the terminal buffers what nobody reads (canonical mode would discard it) until
    // its buffer is full, and then a write blocks.
    let pane = f.pane("stty raw -echo; echo RAW; exec sleep 1000");
    f.expect(&pane, "RAW");
    let big = "y".repeat(1 << 20);
    let started = Instant::now();
    let sent = f.call("fugue_send_input", json!({"pane_id": pane, "input": big}));
    assert!(started.elapsed() < Duration::from_secs(10), "send_input took {:?}", started.elapsed());
    let pending = sent["pending"].as_u64().expect("some input is pending");
    assert!(pending > 0 && pending <= 1 << 20, "{sent}");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": big}));
    let err = f.call_err("fugue_send_input", json!({"pane_id": pane, "input": big}));
    assert_eq!(err["code"], "limit_reached", "{err}");
    assert!(err["message"].as_str().unwrap().contains("not reading"), "{err}");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["status"], "running");
    let started = Instant::now();
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert!(started.elapsed() < TWO_SECONDS, "close took {:?}", started.elapsed());
    // The pane's reader, waiter and input threads all end (workers may idle on for a while).
    let deadline = Instant::now() + PATIENCE;
    loop {
        let names = procfs::thread_names(f.pid());
        if !names.iter().any(|n| n.starts_with("pane-")) {
            break;
        }
        assert!(Instant::now() < deadline, "pane threads left: {names:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A signal still ends fugue and its children when stdout is full and nobody reads it: no lock
/// held across a blocked write may stand in the way of the shutdown.
#[test]
fn a_signal_ends_fugue_even_while_its_stdout_is_full() {
    let mut raw = Raw::start(&[]);
    raw.write(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "fugue_create_session", "arguments": {"command": "sleep 1000"}}}));
    assert_eq!(raw.read()["id"], 1);
    let pane_pids = sleepers_under(raw.child.id(), 1);
    // A wait that reports progress every second, and calls whose answers nobody reads.
    raw.write(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "fugue_expect", "_meta": {"progressToken": "p"},
                                 "arguments": {"pane_id": "0", "pattern": "never", "timeout_ms": 60000}}}));
    let mut stdin = raw.stdin.take().unwrap();
    let written = Arc::new(AtomicUsize::new(0));
    let progress = written.clone();
    std::thread::spawn(move || {
        for id in 3..100_000 {
            let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": "fugue_list_sessions", "arguments": {}}});
            if writeln!(stdin, "{m}").is_err() {
                break;
            }
            progress.fetch_add(1, Ordering::SeqCst);
        }
    });
    let mut last = (usize::MAX, Instant::now());
    loop {
        let now = written.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > Duration::from_millis(1500) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let started = Instant::now();
    signal(raw.child.id(), libc::SIGTERM);
    let status = wait_exited(&mut raw.child, TWO_SECONDS);
    let left = procfs::all_gone_within(&pane_pids, TWO_SECONDS.saturating_sub(started.elapsed()));
    assert!(left.is_empty(), "{left:?} outlived fugue");
    assert!(status.success() || status.code().is_none(), "{status}");
}

/// A running agent pipeline does not slow the stop: its agent is gone within 2 s of SIGTERM too
/// (and the pipeline stays resumable, which the agent tests cover).
#[test]
fn sigterm_ends_a_running_agent_pipeline_within_two_seconds() {
    let dir = Dir::new("stop-agent");
    let repo = git_repo(&dir);
    let mut env = GIT_ENV.to_vec();
    let state = dir.join("state");
    env.push(("FUGUE_STATE_DIR", state.to_str().unwrap()));
    let mut f = Fugue::start_with(&env);
    let list = f.request("tools/list", json!({}));
    if !list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "fugue_agent_pipeline_create")
    {
        return;
    }
    f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "wait", "implementer": "exec sleep 1000"}),
    );
    let pids = sleepers_under(f.pid(), 1);
    let started = Instant::now();
    signal(f.pid(), libc::SIGTERM);
    let status = wait_exited(&mut f.child, TWO_SECONDS);
    let left = procfs::all_gone_within(&pids, TWO_SECONDS.saturating_sub(started.elapsed()));
    assert!(left.is_empty(), "{left:?} outlived fugue");
    assert!(status.success(), "{status}");
    eprintln!("SIGTERM with an agent pipeline: gone in {:?}", started.elapsed());
}

/// Every `.rs` file under `dir` with its text, in a stable order.
fn rust_files(dir: &Path, files: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            files.push((path, text));
        }
    }
}

/// The lines of `text` outside its `#[cfg(test)]` modules (which run from such an attribute at
/// the start of a line to the next `}` there) and items, each with its number from 1.
fn outside_tests(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let (mut after_cfg_test, mut in_tests) = (false, false);
    for (n, line) in text.lines().enumerate() {
        if in_tests {
            in_tests = line != "}";
            continue;
        }
        if after_cfg_test && line.starts_with("mod ") {
            (in_tests, after_cfg_test) = (!line.ends_with(';'), false);
            continue;
        }
        let test_item = after_cfg_test && !line.trim_start().starts_with("#[");
        after_cfg_test = line.trim_start() == "#[cfg(test)]" || (after_cfg_test && !test_item);
        if !test_item {
            kept.push((n + 1, line));
        }
    }
    kept
}

/// The line numbers of `text` that allow dead code outside its tests. An allowance outlives the
/// code it was for, and hides code that nothing uses any more.
fn dead_code_allowed(text: &str) -> Vec<usize> {
    outside_tests(text)
        .into_iter()
        .filter(|(_, line)| line.contains("dead_code") && line.contains("allow("))
        .map(|(n, _)| n)
        .collect()
}

/// The types `text` declares outside its tests, each with its line number: every `struct`,
/// `enum`, `union`, `trait` and `type` alias, at any depth (in a function, in a macro's call), but
/// not a trait's associated type (`type Target = str;` in an `impl Deref`), which is the trait's
/// name and not a new one.
fn declared_types(text: &str) -> Vec<(String, usize)> {
    let lines = outside_tests(text);
    let mut found = Vec::new();
    for (i, (n, line)) in lines.iter().enumerate() {
        let Some((keyword, name)) = declaration(line) else { continue };
        if keyword == "type" && in_impl_or_trait(&lines[..i], indent(line)) {
            continue;
        }
        found.push((name.to_string(), *n));
    }
    found
}

/// The keyword and name a line declares a type with: `pub(crate) struct Pane {` gives
/// `("struct", "Pane")`.
fn declaration(line: &str) -> Option<(&str, &str)> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        }
        .strip_prefix(' ')?;
    }
    let rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
    let (keyword, rest) = rest.split_once(' ')?;
    if !["struct", "enum", "union", "trait", "type"].contains(&keyword) {
        return None;
    }
    let end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(rest.len());
    let name = &rest[..end];
    name.starts_with(|c: char| c.is_ascii_uppercase()).then_some((keyword, name))
}

/// The files of the test modules `text` (the file at `path`) declares without a body:
/// `#[cfg(test)] mod tests;` in `src/a/b.rs` is `src/a/b/tests.rs` (in a `mod.rs` or `main.rs`,
/// beside it).
fn test_files(path: &Path, text: &str) -> Vec<PathBuf> {
    let beside = path.file_name().is_some_and(|f| f == "mod.rs" || f == "main.rs");
    let dir = if beside { path.parent().unwrap().to_path_buf() } else { path.with_extension("") };
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == "#[cfg(test)]")
        .filter_map(|pair| pair[1].strip_prefix("mod ")?.strip_suffix(';'))
        .map(|name| dir.join(format!("{name}.rs")))
        .collect()
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Whether the block a line indented by `depth` stands in, the nearest line above it indented
/// less, opens an `impl` or a `trait`.
fn in_impl_or_trait(above: &[(usize, &str)], depth: usize) -> bool {
    let opener =
        above.iter().rev().map(|(_, l)| *l).find(|l| !l.trim().is_empty() && indent(l) < depth);
    opener.is_some_and(|l| {
        let l = l.trim_start();
        let l = l.strip_prefix("unsafe ").unwrap_or(l);
        l.starts_with("impl") || declaration(l).is_some_and(|(keyword, _)| keyword == "trait")
    })
}

#[test]
fn the_dead_code_check_skips_only_test_modules() {
    let text = "#[allow(dead_code)]\nfn a() {}\n#[cfg(test)]\nmod tests {\n\
                \x20   #[allow(dead_code)]\n}\n#![allow(unused, dead_code)]\n";
    assert_eq!(dead_code_allowed(text), [1, 7]);
}

#[test]
fn the_type_names_are_read_as_declared() {
    let text = "pub(crate) struct Pane {\n    id: u32,\n}\nenum Kind { A }\n\
                impl Deref for Pane {\n    type Target = str;\n}\nfn f() {\n    \
                struct Said<'a>(&'a str);\n}\npub trait Stand: Send {\n    type Out;\n}\n\
                pub(super) type Key = (u32, u32);\n#[cfg(test)]\nstruct Fake;\n\
                #[cfg(test)]\nmod tests {\n    struct Fruit;\n}\n";
    let names: Vec<(String, usize)> = declared_types(text);
    let names: Vec<(&str, usize)> = names.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    assert_eq!(names, [("Pane", 1), ("Kind", 4), ("Said", 9), ("Stand", 11), ("Key", 14)]);
}

/// One name per type: no two types declared in the source outside tests share a name, so a name
/// says which type it is wherever it is read (`Mode` was the sandbox's and a task's).
#[test]
fn no_type_name_is_declared_twice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let tests: Vec<PathBuf> =
        files.iter().flat_map(|(path, text)| test_files(path, text)).collect();
    let mut places: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (path, text) in files.iter().filter(|(path, _)| !tests.contains(path)) {
        let path = path.strip_prefix(root).unwrap_or(path).display();
        for (name, n) in declared_types(text) {
            places.entry(name).or_default().push(format!("{path}:{n}"));
        }
    }
    assert!(places.len() > 100, "only {} type names found", places.len());
    let twice: Vec<String> = places
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name} ({})", at.join(", ")))
        .collect();
    assert!(twice.is_empty(), "{} type names declared twice: {}", twice.len(), twice.join("; "));
}

/// No `allow(dead_code)` in the source outside tests: the compiler names code that nothing uses.
#[test]
fn no_dead_code_is_allowed_outside_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let found: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| {
            let path = path.strip_prefix(root).unwrap_or(path).display();
            dead_code_allowed(text).into_iter().map(move |n| format!("{path}:{n}"))
        })
        .collect();
    assert!(!files.is_empty());
    assert!(found.is_empty(), "allow(dead_code) outside tests: {}", found.join(", "));
}
