//! Hostile protocol input: garbage, truncated and mutated JSON-RPC, deep nesting, oversized lines,
//! wrong types, and tool calls with a wrongly typed value for every argument of every tool.
//!
//! A small xorshift generator with a fixed seed drives the garbage (`FUGUE_HOSTILE_SEED` picks
//! another; the seed is printed so a failure can be replayed). After every batch the server must
//! answer a ping and `tools/list` exactly as before, every line it wrote must have been one JSON-RPC
//! message, its stderr must hold no panic, and its resident memory must stay bounded.

use crate::procfs;
use crate::util::*;
use serde_json::{Map, Value, json};
use std::io::Read;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What fugue wrote to stderr, captured so a test can look for panics.
pub struct Stderr(Arc<Mutex<Vec<u8>>>);

impl Stderr {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    pub fn assert_no_panic(&self, context: &str) {
        let log = self.text();
        assert!(!log.contains("panicked"), "fugue panicked ({context}):\n{log}");
    }
}

/// Starts fugue with its stderr captured and completes the handshake.
pub fn start_logged(env: &[(&str, &str)]) -> (Fugue, Stderr) {
    let mut cmd = Fugue::command(env);
    cmd.stderr(Stdio::piped());
    let mut fugue = Fugue::spawn_command(cmd);
    let mut pipe = fugue.child.stderr.take().unwrap();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    fugue.handshake();
    (fugue, Stderr(stderr))
}

/// Checks that a message fugue wrote is a well-formed JSON-RPC response or notification.
pub fn check_shape(m: &Value) {
    assert_eq!(m["jsonrpc"], "2.0", "not JSON-RPC 2.0: {m}");
    if m.get("method").is_some() {
        assert!(m["method"].is_string(), "{m}");
        assert!(m.get("id").is_none(), "fugue sends no requests: {m}");
        return;
    }
    let id = m.get("id").unwrap_or_else(|| panic!("a response without id: {m}"));
    assert!(id.is_null() || id.is_string() || id.is_number(), "bad id in {m}");
    match (m.get("result"), m.get("error")) {
        (Some(result), None) => assert!(result.is_object(), "{m}"),
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "{m}");
            assert!(error["message"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
        }
        _ => panic!("a response needs exactly one of result and error: {m}"),
    }
}

/// Sends a probe with a unique id and reads (and checks) everything up to its answer.
fn probe(f: &mut Fugue, method: &str, tag: &str) -> (Value, usize) {
    let id = json!(format!("{method}-{tag}"));
    f.send(&json!({"jsonrpc": "2.0", "id": id, "method": method}));
    let deadline = Instant::now() + PATIENCE;
    let mut seen = 0;
    loop {
        let m = f.next_message(deadline).unwrap_or_else(|| panic!("no answer to {method} {tag}"));
        check_shape(&m);
        seen += 1;
        if m["id"] == id {
            return (m, seen);
        }
    }
}

fn tool_names(list: &Value) -> Vec<String> {
    let tools = list["result"]["tools"].as_array().expect("tools/list gives tools");
    tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// Messages that are valid or nearly so, for mutation. None of them starts a process or waits.
fn templates() -> Vec<String> {
    let call = |name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": name, "arguments": args}})
        .to_string()
    };
    let modern = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}});
    vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":9,"result":{}}"#.to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {"_meta": modern}})
            .to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
               "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}})
        .to_string(),
        call("fugue_list_sessions", json!({})),
        call("fugue_get_status", json!({"pane_id": "nope"})),
        call("fugue_get_output", json!({"pane_id": "nope", "lines": 5, "format": "raw"})),
        call("fugue_expect", json!({"pane_id": "nope", "pattern": "(a+)+$", "timeout_ms": 10})),
        call("fugue_send_input", json!({"pane_id": "nope", "input": "x", "keys": ["C-c"]})),
        call("fugue_close_session", json!({"session_id": "nope"})),
    ]
}

/// Structurally wrong messages: every field of the envelope with the wrong type.
fn wrong_envelope(rng: &mut Rng) -> String {
    let ids = [
        json!(null),
        json!(true),
        json!(1.5),
        json!([1]),
        json!({"a": 1}),
        json!("s"),
        json!(-7),
        json!(1e300),
        json!(""),
        json!(u64::MAX),
    ];
    let methods = [
        json!(5),
        json!(null),
        json!(""),
        json!("ping"),
        json!("tools/call"),
        json!("no/such"),
        json!(["ping"]),
        json!({"m": 1}),
        json!("tools/list"),
    ];
    let params = [
        json!([]),
        json!("x"),
        json!(5),
        json!({}),
        json!(null),
        json!({"name": 5}),
        json!({"name": "fugue_list_sessions", "arguments": [1]}),
        json!({"name": "fugue_list_sessions", "arguments": "x"}),
        json!({"name": "no_such_tool"}),
        json!({"cursor": "abc"}),
        json!({"_meta": 5}),
        json!({"_meta": {"progressToken": {"a": []}}}),
    ];
    let versions = [json!("2.0"), json!("1.0"), json!(2), json!(null)];
    let mut m = Map::new();
    if rng.below(4) > 0 {
        m.insert("jsonrpc".into(), rng.pick(&versions).clone());
    }
    if rng.below(5) > 0 {
        m.insert("id".into(), rng.pick(&ids).clone());
    }
    if rng.below(6) > 0 {
        m.insert("method".into(), rng.pick(&methods).clone());
    }
    if rng.below(3) > 0 {
        m.insert("params".into(), rng.pick(&params).clone());
    }
    if rng.below(8) == 0 {
        m.insert("result".into(), json!({}));
    }
    Value::Object(m).to_string()
}

/// One byte-level mutation of `line`.
fn mutate(rng: &mut Rng, line: &str) -> Vec<u8> {
    let mut bytes = line.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 => bytes.truncate(at),
            1 if at < bytes.len() => bytes[at] = rng.next() as u8,
            2 => {
                let n = 1 + rng.below(8);
                let junk = rng.bytes(n);
                bytes.splice(at..at, junk);
            }
            3 if at < bytes.len() => {
                let end = (at + 1 + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            4 if at < bytes.len() => {
                let swaps = [b'{', b'}', b'[', b']', b'"', b':', b',', b'\\', b'0', b' '];
                bytes[at] = *rng.pick(&swaps);
            }
            5 => {
                let end = (at + rng.below(32)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => {
                let words: [&[u8]; 6] =
                    [b"null", b"true", b"1e999", b"-0", b"\"\\ud800\"", b"99999999999999999999"];
                bytes.splice(at..at, rng.pick(&words).iter().copied());
            }
        }
    }
    bytes
}

/// One hostile line (without its newline). `max_line` is the server's line limit.
fn hostile_line(rng: &mut Rng, templates: &[String], max_line: usize) -> Vec<u8> {
    let mut line = match rng.below(10) {
        0 => {
            let n = 1 + rng.below(200);
            rng.bytes(n)
        }
        1 => {
            let t = rng.pick(templates);
            t.as_bytes()[..rng.below(t.len())].to_vec()
        }
        2 => wrong_envelope(rng).into_bytes(),
        3 => {
            // Just past the limit, or far past it.
            let span = if rng.below(2) == 0 { 64 } else { 4 * max_line };
            let n = max_line + 1 + rng.below(span);
            let mut big = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":""#.to_vec();
            big.resize(n, b'a');
            big
        }
        4 => {
            let depth = 1 + rng.below(max_line - 2);
            let open = *rng.pick(b"[{");
            let mut nest = vec![open; depth];
            if open == b'{' {
                nest = br#"{"a":"#.repeat(depth / 5 + 1);
            }
            nest.truncate(max_line);
            nest
        }
        5 => {
            // Invalid UTF-8 inside a string, and lone surrogates escaped.
            let mut s = br#"{"jsonrpc":"2.0","id":"#.to_vec();
            s.extend_from_slice(&[b'"', 0xff, 0xfe, b'"']);
            s.extend_from_slice(br#","method":"ping"}"#);
            s
        }
        _ => {
            let t = rng.pick(templates).clone();
            mutate(rng, &t)
        }
    };
    for b in line.iter_mut() {
        if *b == b'\n' {
            *b = b' ';
        }
    }
    line
}

/// ≥ 10,000 hostile lines in batches; after each batch fugue must still serve exactly as before.
#[test]
fn garbage_never_breaks_the_server() {
    const MAX_LINE: usize = 4096;
    const BATCHES: usize = 25;
    const PER_BATCH: usize = 420;
    let seed = seed();
    eprintln!("hostile: seed {seed} (set FUGUE_HOSTILE_SEED to replay)");
    let mut rng = Rng::new(seed);
    let (mut fugue, log) = start_logged(&[("FUGUE_MAX_LINE_BYTES", "4096")]);
    let f = &mut fugue;
    let pid = f.pid();
    let (first_list, _) = probe(f, "tools/list", "start");
    let names = tool_names(&first_list);
    let baseline_kb = procfs::rss_kb(pid);
    let templates = templates();
    let (mut sent, mut answered, mut peak_kb) = (0usize, 0usize, baseline_kb);
    let started = Instant::now();
    for batch in 0..BATCHES {
        let mut chunk = Vec::new();
        for _ in 0..PER_BATCH {
            chunk.extend(hostile_line(&mut rng, &templates, MAX_LINE));
            chunk.push(b'\n');
            sent += 1;
        }
        f.send_bytes(&chunk);
        let (pong, seen) = probe(f, "ping", &batch.to_string());
        assert_eq!(pong["result"], json!({}), "seed {seed} batch {batch}: {pong}");
        let (list, more) = probe(f, "tools/list", &batch.to_string());
        assert_eq!(tool_names(&list), names, "seed {seed} batch {batch}");
        answered += seen + more - 2;
        peak_kb = peak_kb.max(procfs::rss_kb(pid));
        log.assert_no_panic(&format!("seed {seed} batch {batch}"));
        assert!(f.child.try_wait().unwrap().is_none(), "fugue died: seed {seed} batch {batch}");
    }
    eprintln!(
        "hostile: {sent} lines, {answered} answers in {:?}; RSS {baseline_kb} KiB -> peak {peak_kb} KiB",
        started.elapsed()
    );
    assert!(sent >= 10_000);
    assert!(peak_kb < baseline_kb + 16 * 1024, "RSS grew from {baseline_kb} to {peak_kb} KiB");
    f.close_stdin();
    let status = f.child.wait().unwrap();
    assert!(status.success(), "fugue exited with {status}");
    log.assert_no_panic("at exit");
}

/// serde_json refuses nesting past 128 levels, so 100,000 brackets cost a parse error, not the
/// stack; nesting under the limit is parsed and answered normally.
#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let (mut fugue, log) = start_logged(&[]);
    let f = &mut fugue;
    for line in [
        "[".repeat(100_000),
        r#"{"a":"#.repeat(100_000),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{}{}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    ] {
        f.send_line(&line);
        let m = f.next_message(Instant::now() + PATIENCE).expect("an answer");
        assert_eq!(m["error"]["code"], -32700, "{m}");
        assert_eq!(m["id"], Value::Null);
        assert!(m["error"]["message"].as_str().unwrap().contains("recursion limit"), "{m}");
    }
    // 100 levels deep in the arguments: parsed, then refused as a wrong type.
    let deep: Value = serde_json::from_str(&format!("{}{}", "[".repeat(100), "]".repeat(100)))
        .expect("100 levels parse");
    let err = f.call_err("fugue_get_status", json!({"pane_id": deep}));
    assert_eq!(err["code"], "invalid_argument");
    let pong = f.request("ping", json!({"deep": deep}));
    assert_eq!(pong["result"], json!({}));
    log.assert_no_panic("deep nesting");
}

/// A line over FUGUE_MAX_LINE_BYTES gets -32600 naming the limit, costs no memory, and the next
/// line in the same write is read normally.
#[test]
fn an_oversized_line_is_refused_and_framing_recovers() {
    let (mut fugue, log) = start_logged(&[("FUGUE_MAX_LINE_BYTES", "2048")]);
    let f = &mut fugue;
    let pid = f.pid();
    let before = procfs::rss_kb(pid);
    let mut big = vec![b'x'; 64 << 20];
    big.push(b'\n');
    big.extend_from_slice(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    big.push(b'\n');
    let mut stdin = f.take_stdin();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&big).unwrap();
        stdin
    });
    let refused = f.next_message(Instant::now() + PATIENCE).expect("an answer");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], Value::Null);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("FUGUE_MAX_LINE_BYTES") && message.contains("2048"), "{message}");
    let after = f.response(&json!("after"));
    assert_eq!(after["result"], json!({}));
    let grown = procfs::rss_kb(pid).saturating_sub(before);
    assert!(grown < 8 * 1024, "a 64 MiB line cost {grown} KiB");
    drop(writer.join().unwrap());
    log.assert_no_panic("oversized line");
}

/// A wrong value for each argument, derived from its schema.
fn wrong_values(schema: &Value) -> Vec<Value> {
    let kind = schema["type"].as_str().unwrap_or("");
    let mut values = match kind {
        "string" => vec![json!(5), json!(true), json!([]), json!({}), json!(["x"]), json!(-1.5)],
        "integer" => vec![
            json!("5"),
            json!(true),
            json!(1.5),
            json!(-1),
            json!([]),
            json!({}),
            json!(1e30),
            json!(-1e30),
        ],
        "boolean" => vec![json!("true"), json!(1), json!(0), json!([]), json!({})],
        "array" => vec![json!("x"), json!(5), json!({}), json!(true)],
        "object" => vec![json!("x"), json!(5), json!([]), json!(true)],
        "number" => vec![json!("5"), json!(true), json!([]), json!({})],
        _ => Vec::new(),
    };
    if schema["enum"].is_array() {
        values.push(json!("bogus-value"));
    }
    // Just past the range the schema declares.
    if let Some(max) = schema["maximum"].as_u64() {
        values.push(json!(max + 1));
    }
    if let Some(min) = schema["minimum"].as_u64().filter(|min| *min > 0) {
        values.push(json!(min - 1));
    }
    if kind == "array" {
        for item in wrong_values(&schema["items"]) {
            values.push(json!([item]));
        }
        if schema["items"]["type"] == "object" {
            values.push(json!([{}]));
            values.push(json!([{"no_such_field": 1}]));
        }
    }
    if kind == "object" {
        if let Some(props) = schema["properties"].as_object() {
            for (name, prop) in props {
                for wrong in wrong_values(prop) {
                    values.push(json!({ name: wrong }));
                }
            }
        }
        if schema["additionalProperties"]["type"] == "string" {
            for bad in [
                json!({"1BAD": "x"}),
                json!({"A=B": "x"}),
                json!({"": "x"}),
                json!({"OK": 5}),
                json!({"OK": ["x"]}),
                json!({"OK": "a\u{0}b"}),
            ] {
                values.push(bad);
            }
        }
    }
    values
}

/// An agent pipeline whose implementer waits, when the server offers agent pipelines.
fn start_pipeline(f: &mut Fugue, repo: &std::path::Path) -> Option<Value> {
    let list = f.request("tools/list", json!({}));
    let offered = list["result"]["tools"]
        .as_array()?
        .iter()
        .any(|t| t["name"] == "fugue_agent_pipeline_create");
    if !offered {
        return None;
    }
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "wait", "implementer": "exec sleep 1000"}),
    );
    let id = created["pipeline_id"].clone();
    // Wait until its implementer runs in a pane, so the server's state holds still.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let status =
            f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "wait_ms": 5000}));
        if status["pipelines"][0]["pane_id"].is_string() {
            return Some(id);
        }
        assert!(Instant::now() < deadline, "the implementer never started: {status}");
    }
}

/// A valid value for a required argument: real ids for `*_id`, something plausible otherwise.
fn valid_value(name: &str, schema: &Value, ids: &Value) -> Value {
    if let Some(id) = ids.get(name) {
        return id.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("integer") => json!(match name {
            "rows" => 24,
            "cols" => 80,
            _ => 1,
        }),
        Some("boolean") => json!(false),
        Some("array") if schema["items"]["type"] == "object" => {
            let item: Map<String, Value> = required(&schema["items"])
                .iter()
                .map(|r| (r.clone(), valid_value(r, &schema["items"]["properties"][r], ids)))
                .collect();
            json!([item])
        }
        // A list the schema says may not be empty (`pane_ids` of fugue_wait) holds the pane.
        Some("array") if schema["minItems"].as_u64() > Some(0) => json!([ids["pane_id"]]),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!(match name {
            "command" => "true",
            _ => "x",
        }),
    }
}

fn required(schema: &Value) -> Vec<String> {
    schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Every tool in tools/list, every argument, every wrong type: a tool error with code
/// `invalid_argument` that names the argument, never a success, a crash or a side effect.
#[test]
fn every_tool_refuses_every_wrongly_typed_argument() {
    let dir = Dir::new("typed");
    let repo = git_repo(&dir);
    let state = dir.join("state");
    let mut env = GIT_ENV.to_vec();
    env.push(("FUGUE_STATE_DIR", state.to_str().unwrap()));
    let (mut fugue, log) = start_logged(&env);
    let f = &mut fugue;
    let created = f.call("fugue_create_session", json!({"name": "typed", "command": "cat"}));
    let mut ids = json!({
        "pane_id": created["pane_id"],
        "session_id": created["session_id"],
        "window_id": created["window_id"],
        "repo": repo,
    });
    if let Some(pipeline) = start_pipeline(f, &repo) {
        ids["pipeline_id"] = pipeline;
    }
    let list = f.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let panes_before = f.call("fugue_list_sessions", json!({}));
    let mut tried = 0;
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        let needed = required(schema);
        let base: Map<String, Value> = needed
            .iter()
            .map(|r| (r.clone(), valid_value(r, &schema["properties"][r], &ids)))
            .collect();
        let props = schema["properties"].as_object().cloned().unwrap_or_default();
        for (prop, prop_schema) in &props {
            for wrong in wrong_values(prop_schema) {
                let mut args = base.clone();
                args.insert(prop.clone(), wrong.clone());
                let result = f.call_result(name, Value::Object(args.clone()));
                let err = &result["structuredContent"]["error"];
                assert_eq!(
                    result["isError"],
                    json!(true),
                    "{name} accepted {prop}={wrong}: {result}"
                );
                assert_eq!(err["code"], "invalid_argument", "{name} {prop}={wrong}: {result}");
                let message = err["message"].as_str().unwrap();
                assert!(message.contains(prop.as_str()), "{name} {prop}={wrong}: {message}");
                tried += 1;
            }
        }
        let mut args = base.clone();
        args.insert("no_such_argument".into(), json!(1));
        let err = f.call_err(name, Value::Object(args));
        assert!(err["message"].as_str().unwrap().contains("no_such_argument"), "{name}: {err}");
        tried += 1;
    }
    eprintln!("hostile: {tried} wrongly typed calls over {} tools", tools.len());
    assert!(tried > 100);
    // Nothing was started, closed or resized by any of them. (A pane's activity and its program
    // change by themselves: `cat` is busy starting, then waits for input, and the program it
    // runs is named once a scan has seen it exec.)
    let panes_after = without_what_moves(f.call("fugue_list_sessions", json!({})));
    assert_eq!(panes_after, without_what_moves(panes_before));
    log.assert_no_panic("typed arguments");
}

/// The envelope errors each get their exact JSON-RPC code.
#[test]
fn envelope_errors_have_exact_codes() {
    let mut f = Fugue::start();
    let cases: [(&str, i64); 9] = [
        ("{", -32700),
        ("\u{1}", -32700),
        ("[]", -32600),
        ("[1,2]", -32600),
        ("5", -32600),
        (r#""ping""#, -32600),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#, -32602),
        (r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#, -32601),
    ];
    for (line, code) in cases {
        f.send_line(line);
        let m = f.next_message(Instant::now() + PATIENCE).expect("an answer");
        assert_eq!(m["error"]["code"], code, "{line}: {m}");
    }
    let m = f.request("tools/call", json!({"name": "fugue_list_sessions", "arguments": [1]}));
    assert_eq!(m["error"]["code"], -32602, "{m}");
    let m = f.request("tools/call", json!({"name": "no_such_tool"}));
    assert_eq!(m["error"]["code"], -32602, "{m}");
    // Invalid UTF-8 is a parse error, not a crash.
    f.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n");
    let m = f.next_message(Instant::now() + PATIENCE).expect("an answer");
    assert_eq!(m["error"]["code"], -32700, "{m}");
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
}

/// The `fugue attach` control socket is a second way in: the same generated garbage, sent to it
/// line by line, gets one well-formed answer per line, and the MCP side keeps serving.
#[test]
fn the_control_socket_survives_garbage() {
    use std::io::{BufRead, BufReader, Write};
    let runtime = Dir::new("control-garbage");
    std::fs::set_permissions(&runtime.path, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .unwrap();
    let (mut fugue, log) = start_logged(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    let f = &mut fugue;
    let socket = runtime.join("fugue").join(format!("{}.sock", f.pid()));
    if !socket.exists() {
        return; // this fugue has no control socket
    }
    f.call("fugue_create_session", json!({"name": "s", "command": "cat"}));
    let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let templates: Vec<String> = [
        json!({"id": 1, "op": "hello"}),
        json!({"id": 2, "op": "tree"}),
        json!({"id": 3, "op": "window", "session": "s", "rows": 5, "cols": 20}),
        json!({"id": 4, "op": "scrollback", "pane": "s", "lines": 5}),
        json!({"id": 5, "op": "input", "pane": "nope", "data": "x"}),
        json!({"id": 6, "op": "resize", "session": "s", "window": "0", "rows": 30, "cols": 90}),
        json!({"id": 7, "op": "info"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let seed = seed();
    let mut rng = Rng::new(seed ^ 0xC0_47_50_1E);
    let lines = 2000;
    for n in 0..lines {
        let mut line = hostile_line(&mut rng, &templates, 4096);
        line.push(b'\n');
        writer.write_all(&line).unwrap();
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap_or_else(|e| panic!("seed {seed} line {n}: {e}"));
        let m: Value = serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("seed {seed} line {n}: not JSON ({e}): {answer:?}"));
        assert!(m.get("ok").is_some() != m.get("error").is_some(), "seed {seed} line {n}: {m}");
    }
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
    f.call("fugue_list_sessions", json!({}));
    // A request over the socket's line limit is refused and ends that connection only.
    writer.write_all(&vec![b'x'; 70_000]).unwrap();
    writer.write_all(b"\n").unwrap();
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    assert!(answer.contains("bad_request"), "{answer}");
    assert_eq!(f.request("ping", json!({}))["result"], json!({}));
    log.assert_no_panic("control socket garbage");
    eprintln!("hostile: {lines} garbage lines to the control socket answered");
}

/// `value` with every `activity` field removed.
fn without_what_moves(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.remove("activity");
            map.remove("program");
            for v in map.values_mut() {
                *v = without_what_moves(v.take());
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                *v = without_what_moves(v.take());
            }
        }
        _ => {}
    }
    value
}
