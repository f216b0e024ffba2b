//! fugue_expect against real shells: waiting for a pattern, `since`, timeouts, cancellation.
//!
//! Every wait here is on an event (an expect, a response, a process ending) or a condition checked
//! with a deadline; none is a sleep standing in for one.

use crate::util::*;
use serde_json::json;
use std::time::{Duration, Instant};

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
    let out =
        f.call("fugue_expect", json!({"pane_id": pane, "pattern": "never", "timeout_ms": 300}));
    assert_eq!(out["status"], "timeout", "{out}");
    assert!(out["duration_ms"].as_u64().unwrap() >= 300);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(out.get("match").is_none());
}

/// `poll_interval_ms` is gone (the wait wakes on each read): a call that still gives one is told
/// so by name, not quietly ignored.
#[test]
fn a_poll_interval_is_refused_by_name() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let args = json!({"pane_id": pane, "pattern": "x", "poll_interval_ms": 50});
    let err = f.call_err("fugue_expect", args);
    assert_eq!(err["code"], "invalid_argument", "{err}");
    assert!(err["message"].as_str().unwrap().contains("'poll_interval_ms'"), "{err}");
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

/// A pattern over two lines whose second line comes in a later read: the waiting expect has
/// already searched the first (its progress notification says it is waiting), and must still see
/// it. This once missed under load, when `echo; pwd` output came in two reads.
#[test]
fn a_pattern_over_lines_matches_when_they_arrive_apart() {
    let mut f = Fugue::start();
    let pane = f.pane("stty -echo; printf 'first\\n'; read go; printf 'second\\n'; read end");
    f.expect(&pane, "^first$");
    let args = json!({"pane_id": pane, "pattern": r"^first\nsecond$", "timeout_ms": 20000});
    let id = f.submit("tools/call", tool_params("fugue_expect", args, Some("apart")));
    wait_for_progress(&mut f, "apart");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "go", "submit": true}));
    let found = structured(&f.response(&id));
    assert_eq!(found["status"], "matched", "{found}");
    assert_eq!(found["match"], "first\nsecond", "{found}");
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

/// The cancelled call is one that would answer soon by itself (a short timeout), and a twin
/// started after it with the same timeout answers first: had the cancel not happened, the
/// cancelled call's answer would have come before the twin's.
#[test]
fn cancelling_an_expect_answers_nothing() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let args = json!({"pane_id": pane, "pattern": "never", "timeout_ms": 1000});
    let id = submit(&mut f, "fugue_expect", args.clone());
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    let twin = submit(&mut f, "fugue_expect", args);
    assert_eq!(structured(&f.response(&twin))["status"], "timeout");
    assert!(f.response_within(&id, Duration::ZERO).is_none(), "the cancelled expect answered");
}
