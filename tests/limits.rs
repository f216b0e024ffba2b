//! Every hard limit, tested one step past it: the error is clear and names its knob, the server
//! keeps serving, and freeing a slot makes room again.
//!
//! Limits are set small through their environment variables so the tests stay fast; the defaults
//! are documented in the README's "Limits" section and the man page's LIMITS section.

use crate::util::*;
use serde_json::{Value, json};

fn limit_error(err: &Value, knob: &str) {
    assert_eq!(err["code"], "limit_reached", "{err}");
    assert!(err["message"].as_str().unwrap().contains(knob), "{err} should name {knob}");
}

#[test]
fn a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_LINE_BYTES", "1024")]);
    let line = |id: &str| {
        let mut text = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
        text.insert_str(text.len() - 1, &" ".repeat(1024 - text.len()));
        text
    };
    let exact = line("exact");
    assert_eq!(exact.len(), 1024);
    f.send_line(&exact);
    assert_eq!(f.response(&json!("exact"))["result"], json!({}));
    f.send_line(&format!("{exact} "));
    let refused = f.response(&Value::Null);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("1024"), "{refused}");
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
}

/// Calls past FUGUE_MAX_CALLS get a tool error (`limit_reached`) the model can read and retry,
/// not a JSON-RPC failure; a cancelled call frees its slot at once.
#[test]
fn calls_past_the_concurrency_limit_are_refused_as_tool_errors() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_CALLS", "2")]);
    let pane = f.pane("cat");
    let wait = json!({"name": "fugue_expect",
                      "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 30000}});
    let first = f.submit("tools/call", wait.clone());
    let second = f.submit("tools/call", wait.clone());
    // Requests are registered in order by the reader, so once this ping is answered both waits
    // hold their slots.
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
    let refused = f.call_result("fugue_list_sessions", json!({}));
    assert_eq!(refused["isError"], true, "{refused}");
    limit_error(&refused["structuredContent"]["error"], "FUGUE_MAX_CALLS");
    // Cheap methods are answered on the reader and never count.
    assert!(f.request("tools/list", json!({}))["result"]["tools"].is_array());
    f.notify("notifications/cancelled", json!({"requestId": first, "reason": "test"}));
    f.call("fugue_list_sessions", json!({}));
    f.notify("notifications/cancelled", json!({"requestId": second, "reason": "test"}));
    assert!(f.response_within(&first, std::time::Duration::from_millis(300)).is_none());
}

#[test]
fn panes_past_the_limit_are_refused_until_one_closes() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_PANES", "3")]);
    let s = f.call("fugue_create_session", json!({"name": "s", "command": "cat"}));
    f.call("fugue_create_window", json!({"session_id": "s", "command": "cat"}));
    f.call(
        "fugue_create_pane",
        json!({"session_id": "s", "window_id": s["window_id"], "command": "cat"}),
    );
    let err = f.call_err(
        "fugue_create_pane",
        json!({"session_id": "s", "window_id": s["window_id"], "command": "cat"}),
    );
    limit_error(&err, "FUGUE_MAX_PANES");
    limit_error(&f.call_err("fugue_create_session", json!({"command": "cat"})), "FUGUE_MAX_PANES");
    limit_error(&f.call_err("fugue_create_window", json!({"session_id": "s"})), "FUGUE_MAX_PANES");
    // A refused session leaves nothing behind.
    let list = f.call("fugue_list_sessions", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    f.call("fugue_close_pane", json!({"pane_id": s["pane_id"]}));
    f.call(
        "fugue_create_pane",
        json!({"session_id": "s", "window_id": s["window_id"], "command": "cat"}),
    );
}

#[test]
fn sessions_past_the_limit_are_refused_until_one_closes() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_SESSIONS", "2")]);
    f.call("fugue_create_session", json!({"name": "a", "command": "cat"}));
    f.call("fugue_create_session", json!({"name": "b", "command": "cat"}));
    limit_error(&f.call_err("fugue_create_session", json!({"name": "c"})), "FUGUE_MAX_SESSIONS");
    f.call("fugue_close_session", json!({"session_id": "a"}));
    f.call("fugue_create_session", json!({"name": "c", "command": "cat"}));
}

/// FUGUE_SCROLLBACK_BYTES: old output is dropped, offsets keep counting every byte ever printed,
/// a read from a dropped offset says `dropped` and resumes at the oldest byte kept.
#[test]
fn scrollback_drops_old_output_and_keeps_offsets_exact() {
    let mut f = Fugue::start_with(&[("FUGUE_SCROLLBACK_BYTES", "4096")]);
    let pane = f.pane("seq 1 20000");
    let status = f.wait_exit(&pane);
    // "N\r\n" for every N: the terminal turns each newline into CR LF.
    let total: u64 = (1..=20000u64).map(|n| n.to_string().len() as u64 + 2).sum();
    assert_eq!(status["offset"], total, "every byte is counted, dropped or not");
    let tail = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 3}));
    assert_eq!(tail["output"], "19998\n19999\n20000");
    let mut offset = 0;
    let mut text = String::new();
    let mut first = true;
    loop {
        let page = f.call(
            "fugue_get_output",
            json!({"pane_id": pane, "since": offset, "format": "raw", "max_bytes": 1000}),
        );
        assert_eq!(page["dropped"] == true, first, "only the first page skips: {page}");
        first = false;
        text.push_str(page["output"].as_str().unwrap());
        offset = page["offset"].as_u64().unwrap();
        if page["truncated"] == false {
            break;
        }
    }
    assert_eq!(offset, total);
    assert_eq!(text.len(), 4096, "exactly the scrollback is left");
    assert!(text.ends_with("19999\r\n20000\r\n"));
    // An offset still held reads exactly from there.
    let near =
        f.call("fugue_get_output", json!({"pane_id": pane, "since": total - 7, "format": "raw"}));
    assert_eq!(near["output"], "20000\r\n");
    assert!(near.get("dropped").is_none(), "{near}");
}

#[test]
fn output_per_call_is_capped_by_max_bytes_and_its_ceiling() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_OUTPUT_BYTES", "2048")]);
    let pane = f.pane("seq 1 5000; exec cat");
    f.expect(&pane, "^5000$");
    let err = f.call_err("fugue_get_output", json!({"pane_id": pane, "max_bytes": 2049}));
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().contains("2048"), "{err}");
    for format in ["text", "raw", "screen"] {
        let out =
            f.call("fugue_get_output", json!({"pane_id": pane, "format": format, "lines": 5000}));
        assert!(out["output"].as_str().unwrap().len() <= 2048, "{format}");
    }
    let out = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 5000}));
    assert_eq!(out["truncated"], true);
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^4999$", "action": "return_output", "lines": 5000}),
    );
    assert!(found["output"].as_str().unwrap().len() <= 2048);
    let err = f.call_err("fugue_get_output", json!({"pane_id": pane, "max_bytes": 0}));
    assert_eq!(err["code"], "invalid_argument");
}

#[test]
fn regexes_over_the_size_limit_are_refused() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_REGEX_BYTES", "1024")]);
    let pane = f.pane("echo aaaa; exec cat");
    let err = f.call_err("fugue_expect", json!({"pane_id": pane, "pattern": "a{1000}b{1000}"}));
    assert_eq!(err["code"], "invalid_regex");
    assert!(err["message"].as_str().unwrap().contains("size limit"), "{err}");
    // The default limit (1 MiB) still refuses a pattern built to explode.
    let mut g = Fugue::start();
    let pane2 = g.pane("exec cat");
    let err = g.call_err("fugue_expect", json!({"pane_id": pane2, "pattern": "(\\w{100}){100}"}));
    assert_eq!(err["code"], "invalid_regex");
    let found = f.call("fugue_expect", json!({"pane_id": pane, "pattern": "^a{4}$"}));
    assert_eq!(found["status"], "matched");
}

#[test]
fn input_per_call_is_capped() {
    let mut f = Fugue::start();
    let pane = f.pane("exec cat > /dev/null");
    let err = f
        .call_err("fugue_send_input", json!({"pane_id": pane, "input": "x".repeat((1 << 20) + 1)}));
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().contains("limit"), "{err}");
}
