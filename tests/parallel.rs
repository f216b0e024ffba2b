//! fugue_run_parallel against real shells: exit codes, tails, timeouts, layouts, cancellation.
//!
//! Every wait here is on an event or a condition checked with a deadline; none is a sleep standing
//! in for one. The only timing assertions are lower bounds and the concurrency bound the design
//! asks for (five one-second sleeps in well under five).

use crate::util::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

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
        (json!({"commands": [first.clone()], "timeout_ms": 86_400_001}), "invalid_argument"),
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

/// One tiled run of `n` commands that print their terminal size as they start: each must see its
/// own tile (the size its pane has in the window), and the tiles must fit the window.
fn check_tiled_sizes(f: &mut Fugue, n: usize) {
    let commands: Vec<Value> = (0..n).map(|_| json!({"command": "stty size"})).collect();
    let out = run_parallel(
        f,
        json!({"commands": commands, "layout": "tiled", "cleanup": false, "tails": "all"}),
    );
    let panes = all_panes(f);
    assert_eq!(panes.len(), n, "{out}");
    let (rows, cols) =
        (panes[0]["window_rows"].as_u64().unwrap(), panes[0]["window_cols"].as_u64().unwrap());
    for result in out["results"].as_array().unwrap() {
        let pane = panes.iter().find(|p| p["id"] == result["pane_id"]).unwrap();
        let tile = format!("{} {}", pane["rows"], pane["cols"]);
        assert_eq!(result["output_tail"], tile.as_str(), "{n} panes: the program saw another size");
        assert!(pane["rows"].as_u64().unwrap() <= rows && pane["cols"].as_u64().unwrap() <= cols);
    }
    let area: u64 =
        panes.iter().map(|p| p["rows"].as_u64().unwrap() * p["cols"].as_u64().unwrap()).sum();
    assert!(area <= rows * cols, "{n} tiles cover {area} cells of a {rows}x{cols} window");
    if n <= 3 {
        // Side by side, with a column between neighbours.
        let widths: u64 = panes.iter().map(|p| p["cols"].as_u64().unwrap()).sum();
        assert!(widths + n as u64 - 1 <= cols, "{n} tiles are {widths} columns wide in {cols}");
    }
    if n == 3 && cols == 80 {
        assert!(panes.iter().all(|p| p["cols"] == 26), "three in 80 columns are 26 wide");
    }
    f.call("fugue_close_session", json!({"session_id": panes[0]["session"]}));
}

#[test]
fn tiled_panes_start_at_the_size_of_their_tile() {
    let mut f = Fugue::start();
    for _round in 0..2 {
        for n in 2..=10 {
            check_tiled_sizes(&mut f, n);
        }
    }
}

#[test]
fn tiled_panes_start_at_the_size_of_their_tile_under_load() {
    let _busy = BusyLoops::one_per_core();
    let mut f = Fugue::start();
    for n in 2..=10 {
        check_tiled_sizes(&mut f, n);
    }
}

#[test]
fn parallel_tails_all_gives_green_commands_their_output() {
    let mut f = Fugue::start();
    let commands = json!([{"name": "grep", "command": "printf 'a\\nmatch 1\\nb\\nmatch 2\\n' | grep match"},
                          {"name": "quiet", "command": "true"},
                          {"name": "red", "command": "echo bad; exit 3"}]);
    let lean = run_parallel(&mut f, json!({"commands": commands}));
    assert!(lean["results"][0].get("output_tail").is_none(), "green stays lean: {lean}");
    assert_eq!(lean["results"][2]["output_tail"], "bad");
    let all = run_parallel(&mut f, json!({"commands": commands, "tails": "all", "tail_lines": 1}));
    assert_eq!(all["results"][0]["output_tail"], "match 2", "{all}");
    // Printed nothing: an empty tail, told apart from a tail not shown.
    assert_eq!(all["results"][1]["output_tail"], "", "{all}");
    assert_eq!(all["results"][2]["output_tail"], "bad");
    let silent =
        json!([{"name": "quiet", "command": "true"}, {"name": "red", "command": "exit 3"}]);
    let failed = run_parallel(&mut f, json!({"commands": silent}));
    assert_eq!(failed["results"][1]["output_tail"], "", "a silent failure: {failed}");
    let none = run_parallel(&mut f, json!({"commands": silent, "tails": "all", "tail_lines": 0}));
    let tails =
        none["results"].as_array().unwrap().iter().filter(|r| r.get("output_tail").is_some());
    assert_eq!(tails.count(), 0, "tail_lines 0 shows none: {none}");
    let err = f.call_err("fugue_run_parallel", json!({"commands": commands, "tails": "green"}));
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().contains("failed, all"), "{err}");
}

/// The defaults the run tools apply are in their schemas, where clients and models read them.
#[test]
fn the_run_tools_declare_their_defaults() {
    let mut f = Fugue::start();
    let list = f.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let schema = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"]["properties"].clone()
    };
    let parallel = schema("fugue_run_parallel");
    for (key, default) in [
        ("timeout_ms", json!(300_000)),
        ("layout", json!("hidden")),
        ("cleanup", json!(true)),
        ("tail_lines", json!(10)),
        ("tails", json!("failed")),
    ] {
        assert_eq!(parallel[key]["default"], default, "fugue_run_parallel {key}");
    }
    let pipeline = schema("fugue_run_pipeline");
    for (key, default) in [
        ("timeout_ms", json!(600_000)),
        ("cleanup", json!(false)),
        ("stop_on_error", json!(true)),
        ("tail_lines", json!(10)),
        ("tails", json!("failed")),
    ] {
        assert_eq!(pipeline[key]["default"], default, "fugue_run_pipeline {key}");
    }
}
