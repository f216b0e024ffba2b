//! Protocol tests: JSON-RPC framing, both MCP eras, the error split, cancellation, concurrency and
//! shutdown, all over the real binary's stdio.

use crate::util::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const MODERN: &str = "2026-07-28";

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fugue-tests", "version": "0"},
    })
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {response}"))
}

#[test]
fn initialize_echoes_a_supported_version_and_falls_back_to_the_newest() {
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("1999-01-01", "2025-11-25"),
        (MODERN, "2025-11-25"),
    ] {
        let mut f = Fugue::spawn(&[]);
        let r = f.request(
            "initialize",
            json!({"protocolVersion": asked, "capabilities": {},
                                                "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(r["result"]["protocolVersion"], answered, "{asked}: {r}");
        assert_eq!(r["result"]["serverInfo"]["name"], "fugue");
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], false);
        assert!(r["result"].get("resultType").is_none(), "legacy results carry no resultType");
    }
}

/// The instructions a model reads on every start name the tools to reach for first, and only
/// tools that exist; they stay short.
#[test]
fn initialize_instructions_name_fugue_exec_until_and_fugue_wait() {
    let mut f = Fugue::spawn(&[]);
    let init = f.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let text = init["result"]["instructions"].as_str().unwrap().to_string();
    for word in ["fugue_exec", "`until`", "fugue_wait", "`responses`", "{text}", "`keep`"] {
        assert!(text.contains(word), "the instructions do not name {word}: {text}");
    }
    f.notify("notifications/initialized", json!({}));
    let tools = f.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let named = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("fugue_"));
    for name in named {
        assert!(names.contains(&name), "the instructions name {name}, which is no tool");
    }
    let modern = f.request("server/discover", json!({"_meta": envelope()}));
    assert_eq!(modern["result"]["instructions"].as_str(), Some(text.as_str()), "{modern}");
    assert!(text.len() <= 512, "the instructions are {} bytes; the budget is 512", text.len());
}

#[test]
fn ping_answers_empty_in_the_legacy_era() {
    let mut f = Fugue::start();
    let r = f.request("ping", json!({}));
    assert_eq!(r["result"], json!({}));
}

#[test]
fn requests_before_any_era_are_refused_with_32602() {
    let mut f = Fugue::spawn(&[]);
    let r = f.request("tools/list", json!({}));
    assert_eq!(error_code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("initialize"));
}

#[test]
fn modern_discover_and_list_are_decorated_and_cacheable() {
    let mut f = Fugue::spawn(&[]);
    let d = f.request("server/discover", json!({"_meta": envelope()}));
    let result = &d["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!(MODERN)));
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fugue");

    let l = f.request("tools/list", json!({"_meta": envelope()}));
    assert_eq!(l["result"]["resultType"], "complete");
    assert!(l["result"]["ttlMs"].as_u64().is_some());
    assert_eq!(l["result"]["cacheScope"], "public");
    assert!(l["result"].get("nextCursor").is_none());

    let c = f.request("tools/call", json!({"_meta": envelope(), "name": "fugue_list_sessions"}));
    assert_eq!(c["result"]["resultType"], "complete");
    assert_eq!(c["result"]["structuredContent"], json!({"sessions": []}));
}

#[test]
fn modern_envelope_errors() {
    let mut f = Fugue::spawn(&[]);
    let mut bad_version = envelope();
    bad_version["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = f.request("tools/list", json!({"_meta": bad_version}));
    assert_eq!(error_code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert!(r["error"]["data"]["supported"].as_array().unwrap().contains(&json!(MODERN)));

    let mut no_caps = envelope();
    no_caps.as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(error_code(&f.request("tools/list", json!({"_meta": no_caps}))), -32602);
    assert_eq!(error_code(&f.request("tools/list", json!({}))), -32602);
    // ping and logging are gone in the modern era.
    assert_eq!(error_code(&f.request("ping", json!({"_meta": envelope()}))), -32601);
    assert_eq!(
        error_code(&f.request("logging/setLevel", json!({"_meta": envelope(), "level": "info"}))),
        -32601
    );
}

#[test]
fn both_eras_are_served_by_one_process() {
    let mut f = Fugue::start();
    let legacy = f.request("tools/list", json!({}));
    let modern = f.request("tools/list", json!({"_meta": envelope()}));
    assert_eq!(legacy["result"]["tools"], modern["result"]["tools"]);
    assert!(legacy["result"].get("resultType").is_none());
}

#[test]
fn tools_list_is_fixed_ordered_and_truthful() {
    let mut f = Fugue::start();
    let first = f.request("tools/list", json!({}));
    let second = f.request("tools/list", json!({}));
    assert_eq!(first, json!({"jsonrpc": "2.0", "id": first["id"], "result": first["result"]}));
    assert_eq!(first["result"], second["result"]);
    let tools = first["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in [
        "fugue_list_sessions",
        "fugue_create_session",
        "fugue_create_window",
        "fugue_create_pane",
        "fugue_send_input",
        "fugue_get_output",
        "fugue_get_status",
        "fugue_resize_pane",
        "fugue_close_pane",
        "fugue_close_session",
        "fugue_expect",
        "fugue_wait",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{}", tool["name"]);
        assert_eq!(tool["outputSchema"]["type"], "object", "{}", tool["name"]);
        let hints = &tool["annotations"];
        let name = tool["name"].as_str().unwrap();
        let reads = ["fugue_list_sessions", "fugue_get_output", "fugue_get_status"].contains(&name);
        assert_eq!(hints["readOnlyHint"], reads, "{name}");
        if name.starts_with("fugue_close") {
            assert_eq!(hints["destructiveHint"], true, "{name}");
        }
    }
    // Every agent pays for tools/list in its context; the schemas' `default`s took it past 16 KB.
    let size = first["result"].to_string().len();
    // Issues 11 and 13 let it grow to 20 KB for schema defaults and the activity arguments, and
    // issue 19 to 22 KB for fugue_wait and the jobs arguments, issue 25 to 24 KB for responses,
    // the ordered keys, `program` and the output budget's `keep`, and issue 26's `sandbox`
    // argument of the six tools that start work.
    assert!(size <= 24 * 1024, "tools/list is {size} bytes; the budget is 24 KB");
}

#[test]
fn a_bogus_cursor_is_invalid_params() {
    let mut f = Fugue::start();
    assert_eq!(error_code(&f.request("tools/list", json!({"cursor": "nope"}))), -32602);
}

#[test]
fn protocol_faults_are_json_rpc_errors_and_the_server_keeps_serving() {
    let mut f = Fugue::start();
    f.send_line("this is not json");
    f.send_line("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
    f.send_line("42");
    f.send_line("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
    f.send_line("{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}");
    let deadline = Instant::now() + PATIENCE;
    let mut codes = Vec::new();
    for _ in 0..5 {
        let m = f.next_message(deadline).expect("an answer per bad line");
        assert_eq!(m["id"], Value::Null, "{m}");
        codes.push(error_code(&m));
    }
    assert_eq!(codes, vec![-32700, -32600, -32600, -32600, -32600]);
    let r = f.request("no/such/method", json!({}));
    assert_eq!(error_code(&r), -32601);
    let r = f.request("tools/call", json!({"name": "no_such_tool", "arguments": {}}));
    assert_eq!(error_code(&r), -32602);
    let r = f.request("tools/call", json!({"arguments": {}}));
    assert_eq!(error_code(&r), -32602);
    let r = f.request("tools/call", json!({"name": "fugue_list_sessions", "arguments": [1]}));
    assert_eq!(error_code(&r), -32602);
    for method in ["prompts/list", "resources/list", "completion/complete"] {
        assert_eq!(error_code(&f.request(method, json!({}))), -32601, "{method}");
    }
    // Still serving.
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn ids_are_echoed_with_their_type() {
    let mut f = Fugue::start();
    for id in [json!(0), json!("abc"), json!(-5), json!("listen:0"), json!(1.5)] {
        f.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let r = f.response(&id);
        assert_eq!(r["id"], id);
    }
}

#[test]
fn notifications_and_responses_get_no_answer() {
    let mut f = Fugue::start();
    f.notify("notifications/initialized", json!({}));
    f.notify("notifications/whatever", json!({}));
    f.send(&json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    f.notify("notifications/cancelled", json!({"requestId": 12345}));
    let r = f.request("ping", json!({}));
    assert_eq!(r["result"], json!({}));
    assert!(f.backlog.is_empty(), "unexpected messages: {:?}", f.backlog);
}

#[test]
fn an_oversized_line_is_refused_and_the_next_one_served() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_LINE_BYTES", "2048")]);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(10_000)
    );
    f.send_line(&big);
    let m = f.next_message(Instant::now() + PATIENCE).unwrap();
    assert_eq!(error_code(&m), -32600);
    assert!(m["error"]["message"].as_str().unwrap().contains("limit"));
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
}

#[test]
fn tool_failures_are_results_with_stable_codes() {
    let mut f = Fugue::start();
    let r = f.call_result("fugue_get_status", json!({"pane_id": "nope"}));
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["error"]["code"], "pane_not_found");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("nope"));
    let e = f.call_err("fugue_get_status", json!({"pane_id": 5}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_get_status", json!({}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_list_sessions", json!({"verbose": true}));
    assert_eq!(e["code"], "invalid_argument");
    assert!(e["message"].as_str().unwrap().contains("'verbose'"));
    let e = f.call_err("fugue_expect", json!({"pane_id": "x", "pattern": "("}));
    assert!(["invalid_regex", "pane_not_found"].contains(&e["code"].as_str().unwrap()));
}

#[test]
fn a_slow_call_does_not_delay_a_fast_one() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let slow = f.submit(
        "tools/call",
        json!({"name": "fugue_expect",
        "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 20000}}),
    );
    let started = Instant::now();
    let fast = f.request("tools/call", json!({"name": "fugue_list_sessions", "arguments": {}}));
    assert!(fast["result"]["structuredContent"]["sessions"].is_array());
    assert!(
        f.response_within(&slow, Duration::from_millis(0)).is_none(),
        "the slow call is still waiting"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    let done = f.response(&slow);
    assert_eq!(done["result"]["isError"], true, "closing the pane ends the wait: {done}");
    assert_eq!(done["result"]["structuredContent"]["error"]["code"], "pane_closed");
}

#[test]
fn cancellation_stops_the_call_and_nothing_more_is_written_for_it() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let id = f.submit(
        "tools/call",
        json!({"name": "fugue_expect",
        "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 20000},
        "_meta": {"progressToken": "tok"}}),
    );
    // Progress proves the call is running before we cancel it.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let m = f.next_message(deadline).expect("a progress notification");
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], "tok");
            break;
        }
    }
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    // The id is free again at once: reuse it for a ping, which must be the only answer for it.
    f.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    let r = f.response(&id);
    assert_eq!(r["result"], json!({}), "{r}");
    let after = f.request("tools/call", json!({"name": "fugue_list_sessions", "arguments": {}}));
    assert!(after["result"].is_object());
    let stray: Vec<_> = f
        .backlog
        .iter()
        .filter(|m| m["id"] == id || m["method"] == "notifications/progress")
        .collect();
    assert!(stray.iter().all(|m| m["method"] == "notifications/progress"), "{stray:?}");
}

#[test]
fn progress_values_increase() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let id = f.submit(
        "tools/call",
        json!({"name": "fugue_expect",
        "arguments": {"pane_id": pane, "pattern": "never", "timeout_ms": 3500},
        "_meta": {"progressToken": 7}}),
    );
    let r = f.response(&id);
    assert_eq!(r["result"]["structuredContent"]["status"], "timeout");
    let values: Vec<f64> = f
        .backlog
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], 7);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert!(values.len() >= 2, "{values:?}");
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
}

#[test]
fn calls_run_concurrently() {
    let mut f = Fugue::start();
    let panes: Vec<String> = (0..4).map(|_| f.shell()).collect();
    let started = Instant::now();
    let ids: Vec<Value> = panes
        .iter()
        .map(|p| {
            f.submit(
                "tools/call",
                json!({"name": "fugue_expect",
        "arguments": {"pane_id": p, "pattern": "never", "timeout_ms": 1500}}),
            )
        })
        .collect();
    for id in &ids {
        assert_eq!(f.response(id)["result"]["structuredContent"]["status"], "timeout");
    }
    // Four 1.5 s waits one after another would take 6 s.
    assert!(started.elapsed() < Duration::from_millis(4500), "{:?}", started.elapsed());
}

#[test]
fn closing_stdin_ends_fugue_and_its_children_promptly() {
    let mut f = Fugue::start();
    let a = f.call("fugue_create_session", json!({"command": "sleep 1000"}))["pid"]
        .as_u64()
        .unwrap() as u32;
    let b = f.call("fugue_create_session", json!({}))["pid"].as_u64().unwrap() as u32;
    let took = f.close_stdin();
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert!(gone_within(a, Duration::from_secs(2)));
    assert!(gone_within(b, Duration::from_secs(2)));
}

#[test]
fn sigterm_and_sigint_end_fugue_and_its_children() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut f = Fugue::start();
        let pid = f.call("fugue_create_session", json!({"command": "sleep 1000"}))["pid"]
            .as_u64()
            .unwrap() as u32;
        let started = Instant::now();
        signal(f.pid(), sig);
        wait_exited(&mut f.child, Duration::from_secs(5));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "signal {sig}: {:?}",
            started.elapsed()
        );
        assert!(gone_within(pid, Duration::from_secs(2)), "signal {sig} left the pane's process");
    }
}
