//! orchestrate tests: fugue_expect, fugue_run_parallel and fugue_run_pipeline against real shells.
//!
//! Every wait here is on an event (an expect, a response, a process ending) or a condition checked
//! with a deadline; none is a sleep standing in for one. The only timing assertions are lower
//! bounds and the concurrency bound the issue asks for (five one-second sleeps in well under five).

use crate::util::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Waits until `cond` holds, checking every 10 ms, for at most `PATIENCE`.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a pid a command wrote to `path`, waiting for the file to be complete.
fn pid_in(path: &std::path::Path) -> u32 {
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
fn all_panes(f: &mut Fugue) -> Vec<Value> {
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
fn find_pane(f: &mut Fugue, needle: &str) -> Value {
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
fn ready_shell(f: &mut Fugue) -> String {
    let pane = f.shell();
    f.expect(&pane, r"^[#$%>]$");
    pane
}

fn tool_params(tool: &str, args: Value, token: Option<&str>) -> Value {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    params
}

/// Submits a tool call without waiting; returns the request id.
fn submit(f: &mut Fugue, tool: &str, args: Value) -> Value {
    f.submit("tools/call", tool_params(tool, args, None))
}

fn structured(response: &Value) -> Value {
    assert!(response.get("error").is_none(), "{response}");
    response["result"]["structuredContent"].clone()
}

/// Reads messages until a progress notification for `token` has arrived.
fn wait_for_progress(f: &mut Fugue, token: &str) {
    let deadline = Instant::now() + PATIENCE;
    while progress_for(f, token).is_empty() {
        let message = f.next_message(deadline).expect("a progress notification");
        f.backlog.push(message);
    }
}

/// The progress notifications received so far for `token`.
fn progress_for(f: &Fugue, token: &str) -> Vec<Value> {
    f.backlog
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter(|m| m["params"]["progressToken"] == token)
        .map(|m| m["params"].clone())
        .collect()
}

fn run_parallel(f: &mut Fugue, args: Value) -> Value {
    f.call("fugue_run_parallel", args)
}

fn run_pipeline(f: &mut Fugue, args: Value) -> Value {
    f.call("fugue_run_pipeline", args)
}

/// The size of a result as a client receives it: the compact JSON text block.
fn json_size(value: &Value) -> usize {
    serde_json::to_string(value).unwrap().len()
}

/// Pipeline temp directories of this fugue that still exist.
fn pipeline_dirs(f: &Fugue) -> Vec<String> {
    let prefix = format!("fugue-pipeline-{}-", f.pid());
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn the_orchestration_tools_are_listed() {
    let mut f = Fugue::start();
    let list = f.request("tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in ["fugue_expect", "fugue_run_parallel", "fugue_run_pipeline"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// fugue_expect

#[test]
fn expect_waits_for_output_and_ignores_the_echoed_command() {
    let mut f = Fugue::start();
    let pane = ready_shell(&mut f);
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "sleep 0.2; echo READY", "submit": true}),
    );
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^READY$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    assert_eq!((found["match"].as_str(), found["line"].as_str()), (Some("READY"), Some("READY")));
    // The echoed line holds READY too, but not as a whole line: the anchored pattern skipped it.
    assert!(f.text(&pane).contains("echo READY"));
    assert!(found["offset"].as_u64().unwrap() > sent["offset"].as_u64().unwrap());
}

#[test]
fn expect_times_out_with_a_status_not_an_error() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let started = Instant::now();
    let out = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "never", "timeout_ms": 300, "poll_interval_ms": 50}),
    );
    assert_eq!(out["status"], "timeout", "{out}");
    assert!(out["duration_ms"].as_u64().unwrap() >= 300);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(out.get("match").is_none());
}

#[test]
fn expect_reports_a_process_that_exits_without_matching() {
    let mut f = Fugue::start();
    let pane = f.pane("echo bye; exit 3");
    let out =
        f.call("fugue_expect", json!({"pane_id": pane, "pattern": "never", "timeout_ms": 20000}));
    assert_eq!((out["status"].as_str(), out["exit_code"].as_i64()), (Some("exited"), Some(3)));
}

#[test]
fn expect_close_pane_removes_the_pane() {
    let mut f = Fugue::start();
    let pane = f.pane("echo Done.; sleep 30");
    let out = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": r"Done\.", "action": "close_pane", "timeout_ms": 20000}),
    );
    assert_eq!(out["status"], "matched");
    assert_eq!(out["closed"], true);
    let err = f.call_err("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(err["code"], "pane_not_found");
    assert!(all_panes(&mut f).is_empty());
}

#[test]
fn expect_return_output_includes_the_output() {
    let mut f = Fugue::start();
    let pane = f.pane("echo first; echo 'Build completed'; sleep 30");
    let out = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "Build completed", "action": "return_output"}),
    );
    assert_eq!(out["status"], "matched");
    assert_eq!(out["output"], "first\nBuild completed");
}

#[test]
fn expect_returns_capture_groups() {
    let mut f = Fugue::start();
    let pane = f.pane("echo 'Server listening on port 8080'; sleep 30");
    let out = f.expect(&pane, r"listening on port (\d+)( tls)?");
    assert_eq!(out["groups"], json!(["8080", null]));
    assert_eq!(out["line"], "Server listening on port 8080");
}

#[test]
fn expect_rejects_bad_patterns_and_unknown_panes() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let err = f.call_err("fugue_expect", json!({"pane_id": pane, "pattern": "(unclosed"}));
    assert_eq!(err["code"], "invalid_regex");
    assert!(err["message"].as_str().unwrap().contains("(unclosed"), "{err}");
    let err = f.call_err("fugue_expect", json!({"pane_id": "no-such-pane", "pattern": "x"}));
    assert_eq!(err["code"], "pane_not_found");
    let err =
        f.call_err("fugue_expect", json!({"pane_id": pane, "pattern": "x", "action": "bogus"}));
    assert_eq!(err["code"], "invalid_argument");
    // The server keeps serving.
    assert_eq!(f.call("fugue_get_status", json!({"pane_id": pane}))["status"], "running");
}

#[test]
fn expect_fails_clearly_when_the_pane_is_closed_while_waiting() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let args = json!({"pane_id": pane, "pattern": "never"});
    let id = f.submit("tools/call", tool_params("fugue_expect", args, Some("closing")));
    // Its first heartbeat says the expect is waiting: only then close the pane under it.
    wait_for_progress(&mut f, "closing");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    let response = f.response(&id);
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(response["result"]["structuredContent"]["error"]["code"], "pane_closed");
}

#[test]
fn expect_since_sees_only_later_output() {
    let mut f = Fugue::start();
    let pane = ready_shell(&mut f);
    // The typed line is `echo AB""C`: only the output reads ABC.
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "echo AB\"\"C", "submit": true}));
    let first = f.expect(&pane, "ABC");
    let stale = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "ABC", "since": first["offset"], "timeout_ms": 300}),
    );
    assert_eq!(stale["status"], "timeout", "old output must not match: {stale}");
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo AB\"\"C", "submit": true}),
    );
    let again = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "ABC", "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(again["status"], "matched");
    assert!(again["offset"].as_u64() > first["offset"].as_u64());
    let err =
        f.call_err("fugue_expect", json!({"pane_id": pane, "pattern": "x", "since": 1u64 << 40}));
    assert_eq!(err["code"], "invalid_argument");
}

#[test]
fn expect_matches_text_split_across_reads() {
    let mut f = Fugue::start();
    let pane = f.pane("printf RE; sleep 0.2; printf ADY; sleep 30");
    let out = f.expect(&pane, "^READY$");
    assert_eq!(out["line"], "READY");
}

#[test]
fn expect_matches_utf8_split_across_reads() {
    let mut f = Fugue::start();
    // é is \303\251: the first read ends in the middle of it.
    let pane = f.pane(r"printf 'h\303'; sleep 0.2; printf '\251llo ✓\n'; sleep 30");
    let out = f.expect(&pane, "héllo ✓");
    assert_eq!(out["line"], "héllo ✓");
}

#[test]
fn a_slow_expect_does_not_block_other_calls() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let args = json!({"pane_id": pane, "pattern": "never", "timeout_ms": 20000});
    let slow = f.submit("tools/call", tool_params("fugue_expect", args, Some("slow")));
    wait_for_progress(&mut f, "slow");
    // While the expect waits, other calls are answered.
    let sessions = f.call("fugue_list_sessions", json!({}));
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
    let sent = f.call("fugue_send_input", json!({"pane_id": pane, "input": "x"}));
    assert_eq!(sent["bytes"], 1);
    assert!(!f.backlog.iter().any(|m| m["id"] == slow), "the expect answered too early");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert_eq!(f.response(&slow)["result"]["structuredContent"]["error"]["code"], "pane_closed");
}

#[test]
fn cancelling_an_expect_answers_nothing() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let id = submit(&mut f, "fugue_expect", json!({"pane_id": pane, "pattern": "never"}));
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    // A later call is answered; the cancelled one never is.
    f.call("fugue_list_sessions", json!({}));
    assert!(f.response_within(&id, Duration::from_millis(500)).is_none());
}

// ---------------------------------------------------------------------------------------------
// fugue_run_parallel

#[test]
fn parallel_reports_exact_exit_codes_and_tails_only_failures() {
    let mut f = Fugue::start();
    let out = run_parallel(
        &mut f,
        json!({"commands": [
            {"command": "echo fine", "name": "good"},
            {"command": "echo broken; exit 3", "name": "bad"},
            {"command": "true"},
        ]}),
    );
    assert_eq!(out["status"], "completed", "{out}");
    let r = out["results"].as_array().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!((r[0]["name"].as_str(), r[0]["status"].as_str()), (Some("good"), Some("ok")));
    assert_eq!(r[0]["exit_code"], 0);
    assert!(r[0].get("output_tail").is_none(), "a green command costs no output: {out}");
    assert_eq!((r[1]["status"].as_str(), r[1]["exit_code"].as_i64()), (Some("failed"), Some(3)));
    assert_eq!(r[1]["output_tail"], "broken");
    assert_eq!((r[2]["name"].as_str(), r[2]["command"].as_str()), (Some("task-3"), Some("true")));
    assert!(r.iter().all(|r| r["pane_id"].is_string() && r["duration_ms"].is_u64()));
    assert!(r.iter().all(|r| r.get("signal").is_none() && r.get("error").is_none()));
}

#[test]
fn parallel_starts_everything_at_once() {
    let mut f = Fugue::start();
    let commands: Vec<Value> = (0..5).map(|_| json!({"command": "sleep 1"})).collect();
    let started = Instant::now();
    let out = run_parallel(&mut f, json!({"commands": commands}));
    let took = started.elapsed();
    assert_eq!(out["status"], "completed");
    assert!(out["results"].as_array().unwrap().iter().all(|r| r["status"] == "ok"));
    assert!(took < Duration::from_millis(3500), "five 1 s sleeps took {took:?}: not concurrent");
    assert!(took >= Duration::from_secs(1));
}

#[test]
fn parallel_takes_ten_commands() {
    let mut f = Fugue::start();
    let commands: Vec<Value> = (0..10).map(|i| json!({"command": format!("exit {i}")})).collect();
    let out = run_parallel(&mut f, json!({"commands": commands}));
    let codes: Vec<i64> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["exit_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, (0..10).collect::<Vec<i64>>());
}

#[test]
fn parallel_handles_awkward_commands() {
    let mut f = Fugue::start();
    let out = run_parallel(
        &mut f,
        json!({"commands": [
            {"command": "true", "name": "silent"},
            {"command": "printf 'no newline'; exit 5", "name": "nonl"},
            {"command": "echo ___FUGUE_EXIT_0___; exit 7", "name": "marker"},
            {"command": "test -t 0 && test -t 1", "name": "tty"},
            {"command": "kill -9 $$", "name": "signal"},
            {"command": "seq 1 300000; exit 1", "name": "big"},
        ]}),
    );
    let r = out["results"].as_array().unwrap();
    let by = |name: &str| r.iter().find(|x| x["name"] == name).unwrap().clone();
    assert_eq!(by("silent")["status"], "ok");
    assert_eq!(by("nonl")["exit_code"], 5);
    assert_eq!(by("nonl")["output_tail"], "no newline");
    assert_eq!(by("marker")["exit_code"], 7, "a printed marker must not fake the exit code");
    assert_eq!(by("tty")["status"], "ok", "stdin is the terminal: {}", by("tty"));
    let signal = by("signal");
    assert_eq!(
        (signal["status"].as_str(), signal["signal"].as_str()),
        (Some("failed"), Some("SIGKILL"))
    );
    assert_eq!(signal["exit_code"], Value::Null);
    let big = by("big");
    assert_eq!(big["exit_code"], 1);
    let tail: Vec<String> = (299_991..=300_000).map(|n| n.to_string()).collect();
    assert_eq!(big["output_tail"], tail.join("\n"));
}

#[test]
fn parallel_tail_lines_sets_the_tail_length() {
    let mut f = Fugue::start();
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": "seq 1 50; exit 1"}], "tail_lines": 3}),
    );
    assert_eq!(out["results"][0]["output_tail"], "48\n49\n50");
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": "seq 1 50; exit 1"}], "tail_lines": 0}),
    );
    assert!(out["results"][0].get("output_tail").is_none());
}

#[test]
fn parallel_command_reading_stdin_gets_typed_input() {
    let mut f = Fugue::start();
    let id = submit(
        &mut f,
        "fugue_run_parallel",
        json!({"commands": [{"command": "read line; test \"$line\" = hello"}]}),
    );
    let pane = find_pane(&mut f, "read line");
    f.call("fugue_send_input", json!({"pane_id": pane["id"], "input": "hello", "submit": true}));
    let out = structured(&f.response(&id));
    assert_eq!(out["results"][0]["status"], "ok", "{out}");
}

#[test]
fn parallel_timeout_kills_what_still_runs_and_keeps_the_rest() {
    let mut f = Fugue::start();
    let dir = Dir::new("parallel-timeout");
    let pidfile = dir.join("sleeper");
    let command = format!("echo started; sleep 60 & echo $! > {}; wait", path_str(&pidfile));
    let started = Instant::now();
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": command, "name": "slow"}, {"command": "exit 2", "name": "quick"}],
               "timeout_ms": 1000, "cleanup": false}),
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(out["status"], "partial", "{out}");
    let slow = &out["results"][0];
    assert_eq!(
        (slow["status"].as_str(), slow["exit_code"].clone()),
        (Some("timeout"), Value::Null)
    );
    assert_eq!(slow["output_tail"], "started");
    assert_eq!(
        (out["results"][1]["status"].as_str(), out["results"][1]["exit_code"].as_i64()),
        (Some("failed"), Some(2))
    );
    // The background sleep belonged to the command's session: it is gone too.
    assert!(gone_within(pid_in(&pidfile), Duration::from_secs(5)));
    // cleanup=false: the killed pane stays, its output readable.
    assert_eq!(f.text(slow["pane_id"].as_str().unwrap()), "started");
}

#[test]
fn parallel_timeout_of_everything_says_timeout() {
    let mut f = Fugue::start();
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": "sleep 60"}, {"command": "sleep 60"}], "timeout_ms": 200}),
    );
    assert_eq!(out["status"], "timeout");
    assert!(out["results"].as_array().unwrap().iter().all(|r| r["status"] == "timeout"));
    assert!(all_panes(&mut f).is_empty(), "cleanup closes timed-out panes too");
}

#[test]
fn parallel_hidden_layout_uses_the_orchestration_session() {
    let mut f = Fugue::start();
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": "echo a"}, {"command": "echo b"}], "cleanup": false}),
    );
    let panes = all_panes(&mut f);
    assert_eq!(panes.len(), 2);
    for pane in &panes {
        assert_eq!(pane["session"], "__orchestration__");
        // Each in a window of its own, at the window's full size.
        assert_eq!(
            (pane["rows"].clone(), pane["cols"].clone()),
            (pane["window_rows"].clone(), pane["window_cols"].clone())
        );
    }
    assert_ne!(panes[0]["window"], panes[1]["window"]);
    // The results' pane ids are live panes with their output.
    let first = out["results"][0]["pane_id"].as_str().unwrap().to_string();
    assert_eq!(f.text(&first), "a");
}

#[test]
fn parallel_tiled_layout_puts_panes_side_by_side_in_a_new_session() {
    let mut f = Fugue::start();
    run_parallel(
        &mut f,
        // Running long enough to be in the window together: live panes share its size.
        json!({"commands": [{"command": "sleep 1"}, {"command": "sleep 1"}, {"command": "sleep 1"}],
               "layout": "tiled", "cleanup": false}),
    );
    let panes = all_panes(&mut f);
    assert_eq!(panes.len(), 3);
    let session = panes[0]["session"].as_str().unwrap();
    assert!(session.starts_with("parallel-"), "{session}");
    assert!(panes.iter().all(|p| p["session"] == session && p["window"] == panes[0]["window"]));
    let window_cols = panes[0]["window_cols"].as_u64().unwrap();
    let cols: u64 = panes.iter().map(|p| p["cols"].as_u64().unwrap()).sum();
    assert!(cols < window_cols, "side by side they fit the window: {cols} of {window_cols}");
    assert!(panes.iter().all(|p| p["rows"] == p["window_rows"]));

    // With cleanup the session made for the call goes too.
    run_parallel(&mut f, json!({"commands": [{"command": "true"}], "layout": "tiled"}));
    assert_eq!(all_panes(&mut f).len(), 3);
    let sessions = f.call("fugue_list_sessions", json!({}));
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn parallel_cleanup_closes_the_panes() {
    let mut f = Fugue::start();
    let out =
        run_parallel(&mut f, json!({"commands": [{"command": "echo a"}, {"command": "exit 1"}]}));
    for r in out["results"].as_array().unwrap() {
        let err = f.call_err("fugue_get_status", json!({"pane_id": r["pane_id"]}));
        assert_eq!(err["code"], "pane_not_found");
    }
    assert!(all_panes(&mut f).is_empty());
}

#[test]
fn parallel_gives_each_command_its_cwd_and_env() {
    let mut f = Fugue::start();
    let a = Dir::new("parallel-cwd-a");
    let b = Dir::new("parallel-cwd-b");
    let check = |dir: &Dir, value: &str| {
        json!({"command": format!("test \"$(pwd -P)\" = \"$(cd {} && pwd -P)\" && test \"$FOO\" = {value}", dir.path_str()),
               "cwd": dir.path_str(), "env": {"FOO": value}})
    };
    let out = run_parallel(&mut f, json!({"commands": [check(&a, "one"), check(&b, "two")]}));
    assert!(out["results"].as_array().unwrap().iter().all(|r| r["status"] == "ok"), "{out}");
}

#[test]
fn parallel_validates_every_command_before_starting_any() {
    let mut f = Fugue::start();
    let dir = Dir::new("parallel-validate");
    let marker = dir.join("ran");
    let first = json!({"command": format!("touch {}", path_str(&marker))});
    let eleven: Vec<Value> = (0..11).map(|_| first.clone()).collect();
    for (args, code) in [
        (json!({"commands": eleven}), "invalid_argument"),
        (json!({"commands": []}), "invalid_argument"),
        (json!({}), "invalid_argument"),
        (json!({"commands": [first.clone(), {"cwd": "/"}]}), "invalid_argument"),
        (json!({"commands": [first.clone(), {"command": ""}]}), "invalid_argument"),
        (
            json!({"commands": [first.clone(), {"command": "true", "cwd": "/no/such/dir"}]}),
            "bad_cwd",
        ),
        (json!({"commands": [first.clone()], "layout": "grid"}), "invalid_argument"),
        (json!({"commands": [first.clone()], "timeout_ms": 0}), "invalid_argument"),
    ] {
        let err = f.call_err("fugue_run_parallel", args.clone());
        assert_eq!(err["code"], code, "{args}: {err}");
    }
    assert!(!marker.exists(), "nothing may start when any command is invalid");
    assert!(all_panes(&mut f).is_empty());
}

#[test]
fn parallel_reports_a_command_that_cannot_start() {
    // Room for two panes: one of the three commands cannot get one.
    let mut f = Fugue::start_with(&[("FUGUE_MAX_PANES", "2")]);
    let out = run_parallel(
        &mut f,
        json!({"commands": [{"command": "true"}, {"command": "true"}, {"command": "true"}]}),
    );
    assert_eq!(out["status"], "completed");
    let r = out["results"].as_array().unwrap();
    let errors: Vec<&Value> = r.iter().filter(|r| r["status"] == "error").collect();
    assert_eq!(errors.len(), 1, "{out}");
    assert!(errors[0]["error"].as_str().unwrap().contains("FUGUE_MAX_PANES"));
    assert!(errors[0].get("pane_id").is_none());
    assert_eq!(r.iter().filter(|r| r["status"] == "ok").count(), 2);
}

#[test]
fn parallel_reports_progress() {
    let mut f = Fugue::start();
    let args = json!({"commands": [{"command": "sleep 2.5"}, {"command": "true"}]});
    let id = f.submit("tools/call", tool_params("fugue_run_parallel", args, Some("par")));
    let out = structured(&f.response(&id));
    assert_eq!(out["status"], "completed");
    let progress = progress_for(&f, "par");
    assert!(progress.len() >= 3, "a heartbeat each second: {progress:?}");
    assert!(
        progress.iter().all(|p| p["total"].as_f64() == Some(2.0) && p["message"].is_string()),
        "{progress:?}"
    );
    let values: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
}

#[test]
fn cancelling_run_parallel_kills_its_processes() {
    let mut f = Fugue::start();
    let dir = Dir::new("parallel-cancel");
    let pidfile = |i: usize| dir.join(&i.to_string());
    let commands: Vec<Value> = (0..3)
        .map(|i| json!({"command": format!("echo $$ > {}; exec sleep 60", path_str(&pidfile(i)))}))
        .collect();
    let id = submit(&mut f, "fugue_run_parallel", json!({"commands": commands, "cleanup": false}));
    let pids: Vec<u32> = (0..3).map(|i| pid_in(&pidfile(i))).collect();
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    for pid in pids {
        assert!(gone_within(pid, Duration::from_secs(5)), "pid {pid} survived the cancel");
    }
    // A cancelled call closes its panes even with cleanup=false.
    wait_until("the panes to go", || all_panes(&mut f).is_empty());
    assert!(f.response_within(&id, Duration::from_millis(300)).is_none());
}

#[test]
fn a_green_parallel_run_of_five_is_small() {
    let mut f = Fugue::start();
    let commands: Vec<Value> = (1..=5).map(|i| json!({"command": format!("echo {i}")})).collect();
    let out = run_parallel(&mut f, json!({"commands": commands}));
    let size = json_size(&out);
    eprintln!("green run_parallel of 5: {size} bytes");
    assert!(size < 800, "{size} bytes: {out}");
}

// ---------------------------------------------------------------------------------------------
// fugue_run_pipeline

#[test]
fn pipeline_runs_steps_in_one_shell() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-shell");
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "cd sub", "name": "cd"},
            {"command": "export FOO=bar; greet() { echo hi; }", "name": "export"},
            {"command": "test \"$FOO\" = bar && test \"$(basename \"$PWD\")\" = sub && greet", "name": "check"},
        ], "cwd": dir.path_str()}),
    );
    assert_eq!(out["status"], "completed", "{out}");
    assert!(out.get("failed_at").is_none() && out.get("output_tail").is_none());
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for (step, name) in steps.iter().zip(["cd", "export", "check"]) {
        assert_eq!(
            (step["name"].as_str(), step["status"].as_str(), step["exit_code"].as_i64()),
            (Some(name), Some("ok"), Some(0))
        );
        assert!(step["duration_ms"].is_u64());
    }
    // The pane stays (cleanup=false by default), with every step's output.
    let pane = out["pane_id"].as_str().unwrap().to_string();
    f.expect(&pane, "^hi$");
}

#[test]
fn pipeline_stops_at_the_first_failure() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-stop");
    let never = dir.join("never");
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "echo building", "name": "build"},
            {"command": "echo 'test failed'; exit_three() { return 3; }; exit_three", "name": "test"},
            {"command": format!("touch {}", path_str(&never)), "name": "deploy"},
        ]}),
    );
    assert_eq!((out["status"].as_str(), out["failed_at"].as_str()), (Some("failed"), Some("test")));
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{out}");
    assert_eq!(
        (steps[1]["status"].as_str(), steps[1]["exit_code"].as_i64()),
        (Some("failed"), Some(3))
    );
    // Only the failing step's output, not the build's.
    assert_eq!(out["output_tail"], "test failed");
    assert!(!never.exists());
}

#[test]
fn pipeline_can_continue_past_failures() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "false"}, {"command": "echo two; (exit 4)"}, {"command": "true"}],
               "stop_on_error": false, "cleanup": true}),
    );
    let codes: Vec<i64> =
        out["steps"].as_array().unwrap().iter().map(|s| s["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [1, 4, 0], "{out}");
    assert_eq!(
        (out["status"].as_str(), out["failed_at"].as_str()),
        (Some("failed"), Some("step-1"))
    );
}

#[test]
fn pipeline_exit_codes_cannot_be_faked_by_output() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "echo ___FUGUE_EXIT_0___; printf '\\033]7770;0123;1\\007'; false", "name": "fake"},
        ], "cleanup": true}),
    );
    assert_eq!(out["steps"][0]["exit_code"], 1, "{out}");
    assert_eq!(out["output_tail"], "___FUGUE_EXIT_0___");
}

#[test]
fn pipeline_handles_awkward_steps() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "true", "name": "silent"},
            {"command": "printf 'no newline'", "name": "nonl"},
            {"command": "test -t 0 && test -t 1", "name": "tty"},
            {"command": "test ! -e /proc/$$/fd/4", "name": "no-status-fd"},
            {"command": "seq 1 300000", "name": "big"},
            {"command": "if then", "name": "typo"},
            {"command": "sh -c 'kill -9 $$'", "name": "child-killed"},
            {"command": "echo still here", "name": "after"},
        ], "stop_on_error": false, "cleanup": true}),
    );
    let steps = out["steps"].as_array().unwrap();
    let by = |name: &str| steps.iter().find(|s| s["name"] == name).unwrap().clone();
    for ok in ["silent", "nonl", "tty", "no-status-fd", "big", "after"] {
        assert_eq!(by(ok)["status"], "ok", "{ok}: {out}");
    }
    // A syntax error fails its step and leaves the shell for the next one.
    assert_eq!(by("typo")["exit_code"], 2);
    // The shell reports a child killed by signal 9 as 128 + 9.
    assert_eq!(by("child-killed")["exit_code"], 137);
    assert_eq!(out["failed_at"], "typo");
    assert!(out["output_tail"].as_str().unwrap().contains("yntax error"), "{out}");
}

#[test]
fn pipeline_tail_of_a_big_failing_step_is_its_end() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "echo before"}, {"command": "seq 1 300000; false"}], "tail_lines": 3, "cleanup": true}),
    );
    assert_eq!(out["output_tail"], "299998\n299999\n300000");
}

#[test]
fn pipeline_reports_a_step_that_ends_the_shell() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "echo bye; exit 4"}, {"command": "true"}], "stop_on_error": false}),
    );
    assert_eq!(out["status"], "failed");
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(
        (steps[0]["status"].as_str(), steps[0]["exit_code"].as_i64()),
        (Some("exited"), Some(4))
    );
    assert_eq!(out["output_tail"], "bye");

    let out = run_pipeline(&mut f, json!({"commands": [{"command": "kill -9 $$"}]}));
    let step = &out["steps"][0];
    assert_eq!(
        (step["status"].as_str(), step["signal"].as_str()),
        (Some("exited"), Some("SIGKILL"))
    );
    assert_eq!(step["exit_code"], Value::Null);
}

#[test]
fn pipeline_steps_read_the_terminal() {
    let mut f = Fugue::start();
    let id = submit(
        &mut f,
        "fugue_run_pipeline",
        json!({"commands": [{"command": "read line; test \"$line\" = hello"}, {"command": "echo \"got it\""}], "cleanup": true}),
    );
    // Typed before the step reads: the terminal holds the line until `read` takes it.
    let pane = find_pane(&mut f, "fugue");
    f.call("fugue_send_input", json!({"pane_id": pane["id"], "input": "hello", "submit": true}));
    let out = structured(&f.response(&id));
    assert_eq!(out["status"], "completed", "{out}");
}

#[test]
fn pipeline_exit_status_is_what_the_shell_reports_for_pipes() {
    // POSIX sh: a pipe's status is its last command's.
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "false | true"}, {"command": "true | false"}], "stop_on_error": false, "cleanup": true}),
    );
    let codes: Vec<i64> =
        out["steps"].as_array().unwrap().iter().map(|s| s["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [0, 1]);
}

#[test]
fn pipeline_pipefail_holds_for_later_steps_in_bash() {
    if !std::path::Path::new("/bin/bash").exists() {
        eprintln!("no /bin/bash: skipped");
        return;
    }
    let mut f = Fugue::start_with(&[("FUGUE_SHELL", "/bin/bash")]);
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "false | true", "name": "plain"},
            {"command": "set -o pipefail", "name": "pipefail"},
            {"command": "false | true", "name": "failing"},
            {"command": "[[ -n $BASH_VERSION ]]", "name": "bash"},
        ], "stop_on_error": false, "cleanup": true}),
    );
    let codes: Vec<i64> =
        out["steps"].as_array().unwrap().iter().map(|s| s["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [0, 0, 1, 0], "{out}");
}

#[test]
fn pipeline_timeout_interrupts_the_running_step_and_keeps_the_results() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-timeout");
    let pidfile = dir.join("pid");
    let never = dir.join("never");
    let out = run_pipeline(
        &mut f,
        json!({"commands": [
            {"command": "echo one", "name": "one"},
            {"command": format!("echo waiting; sleep 60 & echo $! > {}; wait", path_str(&pidfile)), "name": "slow"},
            {"command": format!("touch {}", path_str(&never)), "name": "never"},
        ], "timeout_ms": 1000}),
    );
    assert_eq!(out["status"], "timeout", "{out}");
    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["status"], "ok");
    assert_eq!(
        (steps[1]["status"].as_str(), steps[1]["exit_code"].clone()),
        (Some("timeout"), Value::Null)
    );
    assert_eq!(out["failed_at"], "slow");
    assert_eq!(out["output_tail"], "waiting");
    assert!(!never.exists());
    // The pane stays (cleanup=false) with a live shell that still knows the pipeline's state.
    let pane = out["pane_id"].as_str().unwrap().to_string();
    assert_eq!(f.call("fugue_get_status", json!({"pane_id": pane}))["status"], "running");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    // The interrupted step's background job belonged to the pane's session.
    assert!(gone_within(pid_in(&pidfile), Duration::from_secs(5)));
}

#[test]
fn pipeline_timeout_kills_a_step_that_ignores_the_interrupt() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "trap '' INT; while :; do :; done"}], "timeout_ms": 300}),
    );
    assert_eq!(out["status"], "timeout");
    let pane = out["pane_id"].as_str().unwrap();
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["status"], "exited", "{status}");
}

#[test]
fn pipeline_kept_pane_takes_follow_up_commands() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-keep");
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "export LEFT=behind"}, {"command": format!("cd {}", dir.path_str())}]}),
    );
    let pane = out["pane_id"].as_str().unwrap().to_string();
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo \"[$LEFT:$(basename $PWD)]\"", "submit": true}),
    );
    let name = dir.path.file_name().unwrap().to_str().unwrap().to_string();
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": format!(r"\[behind:{name}\]$"), "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    assert!(pipeline_dirs(&f).is_empty(), "the private directory is removed");
}

#[test]
fn pipeline_cleanup_closes_the_pane() {
    let mut f = Fugue::start();
    let out = run_pipeline(&mut f, json!({"commands": [{"command": "true"}], "cleanup": true}));
    let err = f.call_err("fugue_get_status", json!({"pane_id": out["pane_id"]}));
    assert_eq!(err["code"], "pane_not_found");
    assert!(pipeline_dirs(&f).is_empty());
}

#[test]
fn pipeline_env_reaches_the_steps() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "test \"$STAGE\" = qa"}], "env": {"STAGE": "qa"}, "cleanup": true}),
    );
    assert_eq!(out["status"], "completed", "{out}");
}

#[test]
fn pipeline_validates_before_starting() {
    let mut f = Fugue::start();
    let too_many: Vec<Value> = (0..101).map(|_| json!({"command": "true"})).collect();
    for (args, code) in [
        (json!({"commands": []}), "invalid_argument"),
        (json!({"commands": too_many}), "invalid_argument"),
        (json!({}), "invalid_argument"),
        (json!({"commands": [{"name": "x"}]}), "invalid_argument"),
        (json!({"commands": [{"command": " "}]}), "invalid_argument"),
        (json!({"commands": [{"command": "true", "cwd": "/"}]}), "invalid_argument"),
        (
            json!({"commands": [{"command": "a", "name": "x"}, {"command": "b", "name": "x"}]}),
            "invalid_argument",
        ),
        (json!({"commands": [{"command": "true"}], "cwd": "/no/such/dir"}), "bad_cwd"),
        (json!({"commands": [{"command": "true"}], "tail_lines": 5000}), "invalid_argument"),
    ] {
        let err = f.call_err("fugue_run_pipeline", args.clone());
        assert_eq!(err["code"], code, "{args}: {err}");
    }
    assert!(all_panes(&mut f).is_empty());
    assert!(pipeline_dirs(&f).is_empty());
}

#[test]
fn pipeline_reports_progress() {
    let mut f = Fugue::start();
    let args =
        json!({"commands": [{"command": "sleep 1.2"}, {"command": "sleep 1.2"}], "cleanup": true});
    let id = f.submit("tools/call", tool_params("fugue_run_pipeline", args, Some("pipe")));
    assert_eq!(structured(&f.response(&id))["status"], "completed");
    let progress = progress_for(&f, "pipe");
    assert!(progress.len() >= 4, "{progress:?}");
    assert!(progress.iter().all(|p| p["total"].as_f64() == Some(2.0)));
    assert!(
        progress.iter().any(|p| p["message"].as_str().unwrap().contains("step 2/2")),
        "{progress:?}"
    );
}

#[test]
fn cancelling_run_pipeline_kills_its_processes_and_removes_its_files() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-cancel");
    let pidfile = dir.join("pid");
    let id = submit(
        &mut f,
        "fugue_run_pipeline",
        json!({"commands": [{"command": format!("sleep 60 & echo $! > {}; wait", path_str(&pidfile))}]}),
    );
    let pid = pid_in(&pidfile);
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    assert!(gone_within(pid, Duration::from_secs(5)), "the step survived the cancel");
    wait_until("the pipeline's pane to go", || all_panes(&mut f).is_empty());
    wait_until("the private directory to go", || pipeline_dirs(&f).is_empty());
    assert!(f.response_within(&id, Duration::from_millis(300)).is_none());
}

#[test]
fn fugue_exiting_mid_pipeline_leaves_nothing_behind() {
    let mut f = Fugue::start();
    let dir = Dir::new("pipeline-exit");
    let pidfile = dir.join("pid");
    submit(
        &mut f,
        "fugue_run_pipeline",
        json!({"commands": [{"command": format!("echo $$ > {}; sleep 60", path_str(&pidfile))}]}),
    );
    let shell = pid_in(&pidfile);
    assert_eq!(pipeline_dirs(&f).len(), 1);
    f.close_stdin();
    assert!(gone_within(shell, Duration::from_secs(5)), "the pipeline's shell outlived fugue");
    assert!(pipeline_dirs(&f).is_empty(), "the private directory outlived fugue");
}

#[test]
fn a_green_five_step_pipeline_is_small() {
    let mut f = Fugue::start();
    let commands: Vec<Value> = (1..=5).map(|i| json!({"command": format!("echo {i}")})).collect();
    let out = run_pipeline(&mut f, json!({"commands": commands, "cleanup": true}));
    let size = json_size(&out);
    eprintln!("green 5-step run_pipeline: {size} bytes");
    assert!(size < 700, "{size} bytes: {out}");
}
