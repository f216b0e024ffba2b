//! The soak: thousands of mixed tool calls over a few minutes against one fugue, with its file
//! descriptors, threads, memory and child processes measured after a warm-up round and at the
//! end. Everything must come back to where it was: flat.
//!
//! Not part of `make check`: it is `#[ignore]`d and run by `make soak`
//! (`cargo test --release --test integration -- --ignored soak --nocapture`). FUGUE_SOAK_SECS sets
//! the length (default 150 s). The mix: pane churn, input and echoes, command panes with exact exit
//! codes, signal deaths, expects that time out, cancelled calls, concurrent reads, resizes, and —
//! when the server offers them — parallel runs, pipelines and agent pipelines.

use crate::procfs;
use crate::util::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// What one measurement of fugue shows.
#[derive(Debug, Clone, Copy)]
struct Figures {
    fds: usize,
    /// Threads other than idle pool workers, which retire after 30 s and are bounded by
    /// FUGUE_MAX_CALLS.
    threads: u64,
    workers: u64,
    rss_kb: u64,
    children: usize,
    zombies: usize,
}

fn measure(pid: u32) -> Figures {
    Figures {
        fds: procfs::fds(pid),
        threads: procfs::thread_names(pid).iter().filter(|n| *n != "fugue-worker").count() as u64,
        workers: procfs::thread_names(pid).iter().filter(|n| *n == "fugue-worker").count() as u64,
        rss_kb: procfs::rss_kb(pid),
        children: procfs::descendants(pid).len(),
        zombies: procfs::zombies(pid).len(),
    }
}

/// Waits for the pane threads of closed panes to end, so that a measurement sees a quiet server
/// (`children` of them may stay: panes the test keeps open on purpose).
fn settle(pid: u32, threads: u64, children: usize) -> Figures {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = measure(pid);
        if (now.threads <= threads && now.children <= children) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Soak {
    f: Fugue,
    /// The process measured: fugue itself, or the shared server behind the front `f`.
    pid: u32,
    repo: std::path::PathBuf,
    peak: Figures,
    calls: BTreeMap<&'static str, u64>,
    cancelled: HashSet<String>,
    has: HashSet<String>,
}

impl Soak {
    /// A soak over `f`, whose server is `pid`, measured from now; it calls only the tools `f` lists.
    fn new(mut f: Fugue, pid: u32, repo: std::path::PathBuf) -> Soak {
        let list = f.request("tools/list", json!({}));
        let has = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        let peak = measure(pid);
        Soak { f, pid, repo, peak, calls: BTreeMap::new(), cancelled: HashSet::new(), has }
    }

    fn call(&mut self, tool: &'static str, args: Value) -> Value {
        *self.calls.entry(tool).or_default() += 1;
        self.f.call(tool, args)
    }

    fn call_result(&mut self, tool: &'static str, args: Value) -> Value {
        *self.calls.entry(tool).or_default() += 1;
        self.f.call_result(tool, args)
    }

    /// Records the peak of each figure, taken while panes are open.
    fn sample(&mut self) {
        let now = measure(self.pid);
        let peak = &mut self.peak;
        peak.rss_kb = peak.rss_kb.max(now.rss_kb);
        peak.threads = peak.threads.max(now.threads);
        peak.workers = peak.workers.max(now.workers);
        peak.fds = peak.fds.max(now.fds);
        peak.children = peak.children.max(now.children);
    }

    fn total(&self) -> u64 {
        self.calls.values().sum()
    }

    /// One round of the mix.
    fn round(&mut self, n: u64) {
        self.churn(n);
        self.exit_codes(n);
        self.timeouts_and_cancels(n);
        self.concurrent_reads(n);
        if self.has.contains("fugue_run_parallel") {
            self.parallel(n);
        }
        if self.has.contains("fugue_run_pipeline") {
            self.pipeline(n);
        }
        if self.has.contains("fugue_agent_pipeline_create") && n.is_multiple_of(10) {
            self.agent_pipeline(n);
        }
        if self.has.contains("fugue_run_parallel") {
            self.tasks(n);
        }
    }

    /// Durable calls (2025-11-25 Tasks): one task read to its result, one cancelled. The store
    /// keeps ended tasks up to its bound, so their count must not show in the memory figures.
    fn tasks(&mut self, n: u64) {
        let mut start = |command: String| {
            *self.calls.entry("task").or_default() += 1;
            let args = json!({"commands": [{"command": command}]});
            let params = json!({"name": "fugue_run_parallel", "arguments": args, "task": {}});
            let created = self.f.request("tools/call", params);
            created["result"]["task"]["taskId"].as_str().expect("a task").to_string()
        };
        let done = start(format!("echo task-{n}"));
        let cancelled = start("sleep 30".to_string());
        let result = self.f.request("tasks/result", json!({"taskId": done}));
        assert_eq!(result["result"]["structuredContent"]["status"], "completed", "{result}");
        let cancel = self.f.request("tasks/cancel", json!({"taskId": cancelled}));
        assert_eq!(cancel["result"]["status"], "cancelled", "{cancel}");
        self.sample();
    }

    /// A whole agent pipeline with fake agents: implement, analyze (complete), QA, merge.
    fn agent_pipeline(&mut self, n: u64) {
        let implementer =
            format!("echo {n} >> soak.txt && git add -A && git commit -qm 'soak {n}'");
        let analyzer = format!("exec {BIN} verdict complete --reason ok");
        let created = self.call(
            "fugue_agent_pipeline_create",
            json!({"repo": self.repo, "task": format!("soak round {n}"), "implementer": implementer,
                   "analyzer": analyzer, "qa": "test -s soak.txt"}),
        );
        let id = created["pipeline_id"].clone();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let s = self.call(
                "fugue_agent_pipeline_status",
                json!({"pipeline_id": id, "wait_ms": 20000, "until": "settled"}),
            );
            let p = &s["pipelines"][0];
            if p["status"] != "running" {
                assert_eq!(p["status"], "complete", "{p}");
                return;
            }
            assert!(Instant::now() < deadline, "agent pipeline did not settle: {p}");
        }
    }

    /// A session with a `cat` pane: type, wait for the echo, read, resize, close.
    fn churn(&mut self, n: u64) {
        let created = self.call("fugue_create_session", json!({"command": "exec cat"}));
        let pane = created["pane_id"].as_str().unwrap().to_string();
        for i in 0..3 {
            let word = format!("soak-{n}-{i}");
            let sent = self
                .call("fugue_send_input", json!({"pane_id": pane, "input": word, "submit": true}));
            let found = self.call(
                "fugue_expect",
                json!({"pane_id": pane, "pattern": format!("^{word}$"), "since": sent["offset"],
                       "timeout_ms": 20000}),
            );
            assert_eq!(found["status"], "matched", "{found}");
        }
        self.call(
            "fugue_resize_pane",
            json!({"pane_id": pane, "rows": 20 + n % 30, "cols": 60 + n % 100}),
        );
        for format in ["text", "raw", "screen"] {
            self.call("fugue_get_output", json!({"pane_id": pane, "format": format}));
        }
        let window = self.call(
            "fugue_create_window",
            json!({"session_id": created["session_id"], "command": "exec cat"}),
        );
        self.call(
            "fugue_create_pane",
            json!({"session_id": created["session_id"], "window_id": window["window_id"], "command": "exec cat"}),
        );
        self.sample();
        let closed = self.call("fugue_close_session", json!({"session_id": created["session_id"]}));
        assert_eq!(closed["closed"], 3, "{closed}");
    }

    /// Command panes: an exact exit code after output, and a death by signal.
    fn exit_codes(&mut self, n: u64) {
        let code = n % 256;
        let created = self.call(
            "fugue_create_session",
            json!({"command": format!("seq 1 {}; exit {code}", 50 + n % 200)}),
        );
        let pane = created["pane_id"].as_str().unwrap().to_string();
        let status = self.wait_exit(&pane);
        assert_eq!(status["exit_code"], code, "{status}");
        let killed = self.call("fugue_create_session", json!({"command": "kill -9 $$"}));
        let killed = killed["pane_id"].as_str().unwrap().to_string();
        let status = self.wait_exit(&killed);
        assert_eq!(status["signal"], "SIGKILL", "{status}");
        for pane in [pane, killed] {
            self.call("fugue_close_pane", json!({"pane_id": pane}));
        }
    }

    fn wait_exit(&mut self, pane: &str) -> Value {
        loop {
            let status = self.call("fugue_get_status", json!({"pane_id": pane}));
            if status["status"] == "exited" {
                return status;
            }
            self.call_result(
                "fugue_expect",
                json!({"pane_id": pane, "pattern": "x\\A", "since": status["offset"], "timeout_ms": 5000}),
            );
        }
    }

    /// Expects that time out, and expects cancelled while they wait: no answer may ever come
    /// for a cancelled id.
    fn timeouts_and_cancels(&mut self, n: u64) {
        let created = self.call("fugue_create_session", json!({"command": "exec cat"}));
        let pane = created["pane_id"].as_str().unwrap().to_string();
        let timed = self.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "never-printed", "timeout_ms": 20 + n % 30}),
        );
        assert_eq!(timed["status"], "timeout", "{timed}");
        for _ in 0..2 {
            let id = self.f.submit(
                "tools/call",
                json!({"name": "fugue_expect",
                       "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 60000}}),
            );
            *self.calls.entry("fugue_expect (cancelled)").or_default() += 1;
            self.f.notify("notifications/cancelled", json!({"requestId": id, "reason": "soak"}));
            self.cancelled.insert(id.to_string());
        }
        self.call("fugue_close_pane", json!({"pane_id": pane}));
    }

    /// Eight requests in flight at once; every one answered.
    fn concurrent_reads(&mut self, _n: u64) {
        let ids: Vec<Value> = (0..8)
            .map(|i| match i % 3 {
                0 => self.f.submit("ping", json!({})),
                1 => self
                    .f
                    .submit("tools/call", json!({"name": "fugue_list_sessions", "arguments": {}})),
                _ => self.f.submit("tools/list", json!({})),
            })
            .collect();
        for id in ids {
            let answer = self.f.response(&id);
            assert!(answer.get("result").is_some(), "{answer}");
        }
        *self.calls.entry("concurrent (mixed)").or_default() += 8;
    }

    fn parallel(&mut self, n: u64) {
        let result = self.call(
            "fugue_run_parallel",
            json!({"commands": [
                {"name": "ok", "command": "echo fine"},
                {"name": "fails", "command": format!("exit {}", 1 + n % 100)},
                {"name": "slow", "command": "seq 1 2000 | tail -1"},
            ], "timeout_ms": 60000}),
        );
        let results = result["results"].as_array().unwrap_or_else(|| panic!("{result}"));
        assert_eq!(results[1]["exit_code"], 1 + n % 100, "{result}");
        assert_eq!(results[0]["exit_code"], 0, "{result}");
    }

    fn pipeline(&mut self, n: u64) {
        let result = self.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"name": "set", "command": format!("export SOAK={n}")},
                {"name": "check", "command": format!("test \"$SOAK\" = {n}")},
                {"name": "fail", "command": "false"},
                {"name": "never", "command": "echo not reached"},
            ], "cleanup": true, "timeout_ms": 60000}),
        );
        assert_eq!(result["status"], "failed", "{result}");
        assert_eq!(result["failed_at"], "fail", "{result}");
    }
}

#[test]
#[ignore = "a few minutes long: run by `make soak`"]
fn soak() {
    let secs: u64 =
        std::env::var("FUGUE_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    let state = Dir::new("soak-state");
    let repo = git_repo(&state);
    let mut env = GIT_ENV.to_vec();
    let state_dir = state.join("state");
    env.push(("FUGUE_STATE_DIR", state_dir.to_str().unwrap()));
    let f = Fugue::start_with(&env);
    let pid = f.pid();
    let mut soak = Soak::new(f, pid, repo);
    // Warm up: one round grows the worker pool and the allocator to their working size.
    soak.round(0);
    let start = settle(pid, u64::MAX, 0);
    let started = Instant::now();
    let mut rounds = 1;
    let mut trend = Vec::new();
    while started.elapsed() < Duration::from_secs(secs) {
        soak.round(rounds);
        rounds += 1;
        if rounds % 100 == 0 {
            trend.push(procfs::rss_kb(pid));
        }
    }
    let peak = soak.peak;
    let end = settle(pid, start.threads, 0);
    // No answer ever came for a cancelled call.
    let deadline = Instant::now() + Duration::from_millis(500);
    while let Some(m) = soak.f.next_message(deadline) {
        soak.f.backlog.push(m);
    }
    let leaked: Vec<_> = soak
        .f
        .backlog
        .iter()
        .filter(|m| m.get("id").is_some_and(|id| soak.cancelled.contains(&id.to_string())))
        .collect();
    let elapsed = started.elapsed();
    eprintln!("\nsoak: {rounds} rounds, {} calls in {elapsed:.1?}", soak.total());
    for (tool, n) in &soak.calls {
        eprintln!("  {tool:<28} {n:>7}");
    }
    eprintln!("  RSS KiB every 100 rounds: {trend:?}");
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "", "start", "peak", "end");
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "fds", start.fds, peak.fds, end.fds);
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "threads", start.threads, peak.threads, end.threads);
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "workers", start.workers, peak.workers, end.workers);
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "RSS KiB", start.rss_kb, peak.rss_kb, end.rss_kb);
    eprintln!(
        "  {:<10} {:>8} {:>8} {:>8}",
        "children", start.children, peak.children, end.children
    );
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "zombies", start.zombies, "-", end.zombies);
    assert!(leaked.is_empty(), "answers to cancelled calls: {leaked:?}");
    assert!(soak.total() >= 1000, "only {} calls", soak.total());
    assert_eq!(end.fds, start.fds, "file descriptors leaked");
    assert!(end.threads <= start.threads, "threads leaked: {} -> {}", start.threads, end.threads);
    assert!(peak.workers <= 128, "{} workers", peak.workers);
    assert_eq!(end.children, 0, "processes left");
    assert_eq!(end.zombies, 0, "zombies left");
    assert!(
        end.rss_kb < start.rss_kb + 16 * 1024,
        "RSS grew {} -> {} KiB",
        start.rss_kb,
        end.rss_kb
    );
    soak.f.close_stdin();
}

/// The same mix against a shared server, each round through a new front; every third front is
/// killed with a call in flight. A pane prints all along. The server must end where it settled
/// after the first round: nothing per front, per call or per pane stays behind.
#[test]
#[ignore = "a few minutes long: run by `make soak`"]
fn soak_shared() {
    let secs: u64 =
        std::env::var("FUGUE_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    let server = crate::shared::Server::new("soak");
    let repo = git_repo(&server.dir);
    let env = GIT_ENV.to_vec();
    let mut f = server.front_with(&env);
    f.call(
        "fugue_create_session",
        json!({"name": "printer", "command": "while :; do date; sleep 0.2; done"}),
    );
    let pid = server.pid();
    let mut soak = Soak::new(f, pid, repo);
    soak.round(0);
    let start = settle(pid, u64::MAX, 1);
    let started = Instant::now();
    let mut rounds = 1;
    let mut trend = Vec::new();
    while started.elapsed() < Duration::from_secs(secs) {
        // The next front connects before the last one goes, as a restarting host's would.
        let mut old = std::mem::replace(&mut soak.f, server.front_with(&env));
        soak.cancelled.clear();
        if rounds % 3 == 0 {
            old.submit(
                "tools/call",
                json!({"name": "fugue_expect",
                       "arguments": {"pane_id": "printer", "pattern": "never", "timeout_ms": 60000}}),
            );
            old.child.kill().unwrap();
            old.child.wait().unwrap();
        }
        drop(old);
        soak.round(rounds);
        rounds += 1;
        if rounds % 20 == 0 {
            trend.push(procfs::rss_kb(pid));
        }
    }
    let end = settle(pid, start.threads, 1);
    eprintln!(
        "\nshared soak: {rounds} fronts, {} calls in {:.1?}",
        soak.total(),
        started.elapsed()
    );
    eprintln!("  RSS KiB every 20 fronts: {trend:?}");
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "", "start", "peak", "end");
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "fds", start.fds, soak.peak.fds, end.fds);
    eprintln!(
        "  {:<10} {:>8} {:>8} {:>8}",
        "threads", start.threads, soak.peak.threads, end.threads
    );
    eprintln!("  {:<10} {:>8} {:>8} {:>8}", "RSS KiB", start.rss_kb, soak.peak.rss_kb, end.rss_kb);
    assert_eq!(end.fds, start.fds, "file descriptors leaked");
    assert!(end.threads <= start.threads, "threads leaked: {} -> {}", start.threads, end.threads);
    assert_eq!(end.children, 1, "processes left besides the printer");
    assert_eq!(end.zombies, 0, "zombies left");
    assert!(
        end.rss_kb < start.rss_kb + 16 * 1024,
        "RSS grew {} -> {} KiB",
        start.rss_kb,
        end.rss_kb
    );
}
