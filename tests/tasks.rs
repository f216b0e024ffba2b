//! Durable calls: MCP Tasks in both eras over stdio. A 2026-07-28 client that declares the
//! extension gets a task for a long call, polls it, answers the program's question through
//! `tasks/update`, declines it, cancels it; a 2025-11-25 client asks with `task`, waits in
//! `tasks/result` and answers the question as an `elicitation/create` request. A task outlives its
//! front on a shared server, and the store is bounded.

use crate::exec::{interrupted, raw_mode};
use crate::shared::Server;
use crate::util::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TASKS: &str = "io.modelcontextprotocol/tasks";
/// How long a durable call may take and still be answered inline (`mcp::tasks::GRACE`).
const GRACE: Duration = Duration::from_millis(300);

/// The 2026-07-28 envelope with the client's capabilities.
fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "0"},
    })
}

/// A client that declares the extension and answers forms.
pub(crate) fn declaring() -> Value {
    envelope(json!({"extensions": {TASKS: {}}, "elicitation": {"form": {}}}))
}

pub(crate) fn call(f: &mut Fugue, meta: Value, tool: &str, arguments: Value) -> Value {
    let response =
        f.request("tools/call", json!({"_meta": meta, "name": tool, "arguments": arguments}));
    assert!(response.get("error").is_none(), "{tool}: {response}");
    response["result"].clone()
}

pub(crate) fn tasks_request(f: &mut Fugue, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = declaring();
    f.request(method, params)
}

pub(crate) fn get(f: &mut Fugue, task: &str) -> Value {
    let response = tasks_request(f, "tasks/get", json!({"taskId": task}));
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

/// Polls `tasks/get` until `done` holds of the task, as a client would at its poll interval.
pub(crate) fn poll_until(f: &mut Fugue, task: &str, mut done: impl FnMut(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let state = get(f, task);
        if done(&state) {
            return state;
        }
        assert!(Instant::now() < deadline, "the task never got there: {state}");
        let interval = state["pollIntervalMs"].as_u64().unwrap_or(500);
        std::thread::sleep(Duration::from_millis(interval.min(100)));
    }
}

pub(crate) fn task_id(handle: &Value) -> String {
    assert_eq!(handle["resultType"], "task", "{handle}");
    handle["taskId"].as_str().unwrap().to_string()
}

#[test]
fn a_long_call_becomes_a_task_that_completes_and_a_short_one_answers_inline() {
    let mut f = Fugue::spawn(&[]);
    let discover = f.request("server/discover", json!({"_meta": envelope(json!({}))}));
    assert_eq!(discover["result"]["capabilities"]["extensions"][TASKS], json!({}), "{discover}");
    // A call that ends within the grace is answered inline, and a task only once the grace has
    // passed: a rule that holds however slow the machine. Fugue's shell is started first (a client
    // without the extension is always answered inline), so `echo quick` ends at once but on a
    // machine too busy to give it a moment in 300 ms.
    let plain = envelope(json!({}));
    let warm = call(&mut f, plain, "fugue_exec", json!({"command": "true"}));
    assert_eq!(warm["structuredContent"]["status"], "ok", "{warm}");
    let asked = Instant::now();
    let quick = call(&mut f, declaring(), "fugue_exec", json!({"command": "echo quick"}));
    let took = asked.elapsed();
    let quick = if quick["resultType"] == "task" {
        assert!(took >= GRACE, "a task before the grace passed ({took:?}): {quick}");
        let id = task_id(&quick);
        poll_until(&mut f, &id, |t| t["status"] == "completed")["result"].clone()
    } else {
        quick
    };
    assert_eq!(quick["structuredContent"]["output"], "quick", "{quick}");
    let handle =
        call(&mut f, declaring(), "fugue_exec", json!({"command": "sleep 1; echo done-$((6*7))"}));
    let id = task_id(&handle);
    assert_eq!(uuid_version(&id), Some('4'), "{id}");
    assert_eq!(handle["status"], "working", "{handle}");
    assert!(handle["ttlMs"].is_null() && handle["pollIntervalMs"].is_u64(), "{handle}");
    assert!(handle["createdAt"].as_str().unwrap().ends_with('Z'), "{handle}");
    // It resolves at once.
    let first = get(&mut f, &id);
    assert_eq!(first["resultType"], "complete", "{first}");
    let done = poll_until(&mut f, &id, |t| t["status"] == "completed");
    let result = &done["result"];
    assert_eq!(result["resultType"], "complete", "{done}");
    assert_eq!(result["structuredContent"]["status"], "ok", "{done}");
    assert_eq!(result["structuredContent"]["output"], "done-42", "{done}");
    assert!(done["ttlMs"].as_u64().unwrap() >= 3_600_000, "retained once it ended: {done}");
    // A tool error is still `completed`.
    let err = call(
        &mut f,
        declaring(),
        "fugue_exec",
        json!({"command": "true", "pane_id": "no-such-pane"}),
    );
    assert_eq!(err["isError"], true, "an error within the grace is inline: {err}");
}

fn uuid_version(id: &str) -> Option<char> {
    (id.len() == 36).then(|| id.chars().nth(14)).flatten()
}

#[test]
fn a_question_is_input_required_and_the_answer_is_typed() {
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let asking =
        "printf 'Name? '; read name; echo hello-$name; printf 'Again? '; read x; echo bye-$x";
    let handle = call(&mut f, declaring(), "fugue_exec", json!({"command": asking}));
    let id = task_id(&handle);
    let asked = poll_until(&mut f, &id, |t| t["status"] == "input_required");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{asked}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(request["params"]["message"], "Name?", "{asked}");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["input"]["type"], "string");
    assert_eq!(schema["required"], json!(["input"]));
    let ack = tasks_request(
        &mut f,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"input": "bob"}}}}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // The same question is not asked twice; the next one has a key of its own.
    let again = poll_until(&mut f, &id, |t| {
        t["status"] == "input_required" && t["inputRequests"].get(key.as_str()).is_none()
    });
    let (second, request) = again["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(request["params"]["message"], "Again?", "{again}");
    // An answer to the old key is ignored.
    tasks_request(
        &mut f,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"input": "no"}}}}),
    );
    tasks_request(
        &mut f,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {second: {"action": "accept", "content": {"input": "now"}}}}),
    );
    let done = poll_until(&mut f, &id, |t| t["status"] == "completed");
    let output = done["result"]["structuredContent"]["output"].as_str().unwrap();
    assert!(output.contains("bye-now") && !output.contains("bye-no\n"), "{done}");
    let log = f.text(done["result"]["structuredContent"]["pane_id"].as_str().unwrap());
    assert!(log.contains("hello-bob"), "{log}");
}

#[test]
fn a_declined_question_or_a_client_without_forms_ends_the_task_with_the_question() {
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let handle =
        call(&mut f, declaring(), "fugue_exec", json!({"command": "printf 'Sure? '; read x"}));
    let id = task_id(&handle);
    let asked = poll_until(&mut f, &id, |t| t["status"] == "input_required");
    let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    tasks_request(
        &mut f,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "decline"}}}),
    );
    let done = poll_until(&mut f, &id, |t| t["status"] == "completed");
    let answer = &done["result"]["structuredContent"];
    assert_eq!(answer["status"], "input", "{done}");
    let pane = answer["pane_id"].as_str().unwrap().to_string();
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["activity"], "input", "the program keeps waiting: {status}");
    // Without elicitation: no input_required, the question is the result.
    let no_forms = envelope(json!({"extensions": {TASKS: {}}}));
    let handle = call(
        &mut f,
        no_forms,
        "fugue_exec",
        json!({"command": "sleep 0.5; printf 'Go? '; read x"}),
    );
    let id = task_id(&handle);
    let done = poll_until(&mut f, &id, |t| t["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["status"], "input", "{done}");
}

#[test]
fn a_cancelled_task_stops_its_command_and_leaves_the_shell_free() {
    // A program with the terminal in raw mode is stopped too: a typed C-c would be only a byte.
    // It says `ready` once it runs: a Python interrupted while it starts ends with 1, not as by
    // C-c.
    let raw = have("python3").then(|| raw_mode("print('ready', flush=True); time.sleep(60)"));
    crate::exec::each_shell(|name, f, shell| {
        f.call("fugue_exec", json!({"command": "true", "pane_id": shell, "timeout_ms": 20000}));
        for command in std::iter::once("sleep 60").chain(raw.as_deref()) {
            let running = json!({"command": command, "pane_id": shell});
            let id = task_id(&call(f, declaring(), "fugue_exec", running));
            if command != "sleep 60" {
                let ready = json!({"pane_id": shell, "pattern": "^ready", "timeout_ms": 20000});
                let ready = f.call("fugue_expect", ready);
                assert_eq!(ready["status"], "matched", "{name}: {ready}");
            }
            let started = Instant::now();
            let ack = tasks_request(f, "tasks/cancel", json!({"taskId": id}));
            assert_eq!(ack["result"]["resultType"], "complete", "{name}: {ack}");
            let cancelled = poll_until(f, &id, |t| t["status"] == "cancelled");
            assert!(started.elapsed() < Duration::from_secs(3), "{name}: {cancelled}");
            // Interrupted as by C-c: the shell is back at its prompt and says so.
            let status = f.call("fugue_get_status", json!({"pane_id": shell}));
            let back = (status["activity"].as_str(), status["last_exit_code"].as_i64());
            assert_eq!(
                back,
                (Some("prompt"), Some(interrupted(name))),
                "{name} {command}: {status}"
            );
            let next = f.call("fugue_exec", json!({"command": "echo free", "pane_id": shell}));
            assert_eq!(next["output"], "free", "{name}: the shell is not busy: {next}");
        }
    });
    // `notifications/cancelled` is not a way to cancel a task: nothing happens to it.
    let mut f = Fugue::start();
    let handle = call(&mut f, declaring(), "fugue_exec", json!({"command": "sleep 1"}));
    let id = task_id(&handle);
    f.notify("notifications/cancelled", json!({"requestId": 1, "reason": "test"}));
    let done = poll_until(&mut f, &id, |t| t["status"] != "working");
    assert_eq!(done["status"], "completed", "{done}");
}

/// A task cancelled while its program asks interrupts the program, and the task ends once the
/// shell is back at its prompt, in every shell: the next command runs at once. A program that asks
/// with the terminal in raw mode is interrupted too.
#[test]
fn a_cancelled_question_gives_the_prompt_back_in_every_shell() {
    let raw = have("python3")
        .then(|| raw_mode("print('Key? ', end='', flush=True)\n    sys.stdin.read(2)"));
    crate::exec::each_shell(|name, f, shell| {
        f.call("fugue_exec", json!({"command": "true", "pane_id": shell, "timeout_ms": 20000}));
        for command in std::iter::once("printf 'Sure? '; head -n 1").chain(raw.as_deref()) {
            let asking = json!({"command": command, "pane_id": shell});
            let id = task_id(&call(f, declaring(), "fugue_exec", asking));
            poll_until(f, &id, |t| t["status"] == "input_required");
            tasks_request(f, "tasks/cancel", json!({"taskId": id}));
            let cancelled = poll_until(f, &id, |t| t["status"] == "cancelled");
            let status = f.call("fugue_get_status", json!({"pane_id": shell}));
            let back = (status["activity"].as_str(), status["last_exit_code"].as_i64());
            let code = interrupted(name);
            assert_eq!(
                back,
                (Some("prompt"), Some(code)),
                "{name} {command}: {status} {cancelled}"
            );
            let next =
                f.call_result("fugue_exec", json!({"command": "echo free", "pane_id": shell}));
            assert_eq!(next["structuredContent"]["output"], "free", "{name}: {next}");
        }
    });
}

#[test]
fn unknown_ids_undeclared_clients_and_other_eras_methods_are_errors() {
    let mut f = Fugue::spawn(&[]);
    let unknown = tasks_request(&mut f, "tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let undeclared = f.request(method, json!({"taskId": "x", "_meta": envelope(json!({}))}));
        assert_eq!(undeclared["error"]["code"], -32021, "{method}: {undeclared}");
        let required = &undeclared["error"]["data"]["requiredCapabilities"]["extensions"][TASKS];
        assert_eq!(*required, json!({}), "{undeclared}");
    }
    for method in ["tasks/result", "tasks/list"] {
        let missing = tasks_request(&mut f, method, json!({"taskId": "x"}));
        assert_eq!(missing["error"]["code"], -32601, "{method}: {missing}");
    }
    // A client without the extension gets the call inline, however long it takes.
    let inline =
        call(&mut f, envelope(json!({})), "fugue_exec", json!({"command": "sleep 1; echo in"}));
    assert_eq!(inline["structuredContent"]["output"], "in", "{inline}");
}

/// The 2025-11-25 handshake, with form elicitation declared.
fn legacy(env: &[(&str, &str)]) -> Fugue {
    let mut f = Fugue::spawn(env);
    let init = f.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
               "clientInfo": {"name": "legacy-tasks", "version": "0"}}),
    );
    let tasks = &init["result"]["capabilities"]["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}), "{init}");
    assert!(tasks["list"].is_object() && tasks["cancel"].is_object(), "{init}");
    f.notify("notifications/initialized", json!({}));
    f
}

fn legacy_task(f: &mut Fugue, tool: &str, arguments: Value) -> String {
    let response = f.request(
        "tools/call",
        json!({"name": tool, "arguments": arguments, "task": {"ttl": 60000}}),
    );
    let task = &response["result"]["task"];
    assert_eq!(task["status"], "working", "{response}");
    assert!(task["ttl"].is_null() && task["pollInterval"].is_u64(), "{response}");
    task["taskId"].as_str().unwrap().to_string()
}

#[test]
fn a_legacy_task_completes_and_answers_its_question_through_elicitation() {
    let mut f = legacy(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let listed = f.request("tools/list", json!({}));
    let exec =
        listed["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "fugue_exec");
    assert_eq!(exec.unwrap()["execution"]["taskSupport"], "optional");
    let id = legacy_task(&mut f, "fugue_exec", json!({"command": "sleep 0.3; echo legacy-ok"}));
    let got = f.request("tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    let result = f.request("tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["structuredContent"]["output"], "legacy-ok", "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    // The status notification may come before or after the answer.
    let completed = |m: &Value| {
        m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
    };
    let deadline = Instant::now() + PATIENCE;
    while !f.backlog.iter().any(completed) {
        let message = f.next_message(deadline).expect("a status notification");
        f.backlog.push(message);
    }
    let listed = f.request("tasks/list", json!({}));
    assert!(
        listed["result"]["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == id.as_str())
    );
    // A question: the client waits in tasks/result and is asked.
    let id = legacy_task(
        &mut f,
        "fugue_exec",
        json!({"command": "printf 'Colour? '; read c; echo got-$c"}),
    );
    let waiting = f.submit("tasks/result", json!({"taskId": id}));
    let deadline = Instant::now() + PATIENCE;
    let ask = loop {
        let message = f.next_message(deadline).expect("an elicitation request");
        if message["method"] == "elicitation/create" {
            break message;
        }
        f.backlog.push(message);
    };
    assert_eq!(ask["params"]["message"], "Colour?", "{ask}");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    f.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"input": "red"}}}));
    let result = f.response(&waiting);
    assert!(
        result["result"]["structuredContent"]["output"].as_str().unwrap().contains("got-red"),
        "{result}"
    );
    // Cancel: the answer is the task, cancelled — even at once, before the shell has read the
    // line typed for it — and the shell is free for the next command.
    let shell = ready_shell(&mut f);
    let id = legacy_task(&mut f, "fugue_exec", json!({"command": "sleep 60", "pane_id": shell}));
    let cancelled = f.request("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let next = f.call("fugue_exec", json!({"command": "echo free", "pane_id": shell}));
    assert_eq!(next["output"], "free", "{next}");
    let again = f.request("tasks/cancel", json!({"taskId": id}));
    assert_eq!(again["error"]["code"], -32602, "already ended: {again}");
    let read = f.request("tasks/get", json!({"taskId": "unknown"}));
    assert_eq!(read["error"]["code"], -32602, "{read}");
}

#[test]
fn the_257th_live_task_is_refused_clearly() {
    let mut f = legacy(&[("FUGUE_MAX_CALLS", "1024")]);
    let pane = f.pane("sleep 600");
    let waiting = json!({"pane_id": pane, "pattern": "never", "timeout_ms": 600000});
    let ids: Vec<String> =
        (0..256).map(|_| legacy_task(&mut f, "fugue_expect", waiting.clone())).collect();
    let refused =
        f.request("tools/call", json!({"name": "fugue_expect", "arguments": waiting, "task": {}}));
    let message = refused["error"]["message"].as_str().unwrap_or_else(|| panic!("{refused}"));
    assert!(message.contains("256 tasks"), "{refused}");
    // One ends, and there is room again.
    let cancelled = f.request("tasks/cancel", json!({"taskId": ids[0]}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    legacy_task(&mut f, "fugue_expect", waiting);
}

#[test]
fn a_task_outlives_its_front_and_another_front_polls_it() {
    let server = Server::new("tasks");
    let mut first = server.bare_front();
    let handle =
        call(&mut first, declaring(), "fugue_exec", json!({"command": "sleep 1.5; echo survived"}));
    let id = task_id(&handle);
    drop(first);
    let mut second = server.bare_front();
    let done = poll_until(&mut second, &id, |t| t["status"] == "completed");
    assert_eq!(done["result"]["structuredContent"]["output"], "survived", "{done}");
}

/// A task cancelled at once, perhaps before the shell has read the line typed for it, leaves the
/// shell free in every shell.
#[test]
fn an_immediate_cancel_leaves_the_shell_free_in_every_shell() {
    crate::exec::each_shell(|name, f, shell| {
        f.call("fugue_exec", json!({"command": "true", "pane_id": shell, "timeout_ms": 20000}));
        for round in 0..3 {
            let id = legacy_task(f, "fugue_exec", json!({"command": "sleep 60", "pane_id": shell}));
            let cancelled = f.request("tasks/cancel", json!({"taskId": id}));
            assert_eq!(cancelled["result"]["status"], "cancelled", "{name} {round}: {cancelled}");
            let next =
                f.call_result("fugue_exec", json!({"command": "echo free", "pane_id": shell}));
            let output = &next["structuredContent"]["output"];
            if output != "free" {
                let raw = f.call(
                    "fugue_get_output",
                    json!({"pane_id": shell, "format": "raw", "lines": 30}),
                );
                let status = f.call("fugue_get_status", json!({"pane_id": shell}));
                panic!(
                    "{name} {round}: {next} {cancelled}\nRAW {:?}\nSTATUS {status}",
                    raw["output"]
                );
            }
        }
    });
}

#[test]
fn a_task_with_responses_answers_its_questions_and_never_shows_the_answers() {
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let secret = "task-Secret-9";
    let asking = "printf 'Name? '; read name; stty -echo; printf 'Token: '; read t; stty echo; \
                  echo; echo \"hello-$name-${#t}\"";
    let arguments = json!({"command": asking, "responses": {"Name": "bob", "Token": secret}});
    let handle = call(&mut f, declaring(), "fugue_exec", arguments);
    let id = task_id(&handle);
    let mut seen = Vec::new();
    let done = poll_until(&mut f, &id, |t| {
        seen.push(t.to_string());
        t["status"] != "working"
    });
    assert_eq!(done["status"], "completed", "answered without asking the client: {done}");
    let result = &done["result"]["structuredContent"];
    assert!(result["output"].as_str().unwrap().ends_with("hello-bob-13"), "{done}");
    assert_eq!(result["answered"][1], json!({"question": "Token:", "key": "Token"}), "{done}");
    for state in &seen {
        assert!(!state.contains(secret), "the answer shows in the task: {state}");
    }
}
