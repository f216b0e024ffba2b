//! Durable calls and cancels on remote panes, as on local ones: a remote program that asks puts
//! a task in `input_required` and the answer is typed there; `tasks/cancel` stops the work there
//! and gives the shell its prompt back before the task ends; `notifications/cancelled` ends the
//! wait at once and leaves the command running there; a `fugue_wait` over two hosts with
//! `mode: any` answers when the first is done. The hosts are `remote::Hosts`' private sshds.

use crate::remote::Hosts;
use crate::tasks::{call, declaring, poll_until, task_id, tasks_request};
use crate::util::Fugue;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Host `h0`'s fugue says a program asks after 400 ms of quiet, as the local tests' does.
fn asking_host() -> Option<Hosts> {
    Hosts::start_with(1, "FUGUE_INPUT_QUIET_MS=400")
}

/// A shell on `h0`, by its id.
fn remote_shell(f: &mut Fugue) -> String {
    let ready = f.call("fugue_exec", json!({"host": "h0", "command": "true", "timeout_ms": 20000}));
    assert_eq!(ready["status"], "ok", "{ready}");
    ready["pane_id"].as_str().unwrap().to_string()
}

/// The answer to the task's one question.
fn answer(f: &mut Fugue, id: &str, asked: &Value, text: &str) {
    let key = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let reply = json!({key: {"action": "accept", "content": {"input": text}}});
    tasks_request(f, "tasks/update", json!({"taskId": id, "inputResponses": reply}));
}

/// The shell on `pane` is back at its prompt after an interrupt, and runs the next command.
fn back_at_prompt(f: &mut Fugue, pane: &str) {
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    let back = (status["activity"].as_str(), status["last_exit_code"].as_i64());
    assert_eq!(back, (Some("prompt"), Some(130)), "{status}");
    let next = f.call("fugue_exec", json!({"command": "echo free", "pane_id": pane}));
    assert_eq!(next["output"], "free", "the shell there is not busy: {next}");
}

#[test]
fn a_remote_programs_question_is_input_required_and_the_answer_is_typed_there() {
    let Some(hosts) = asking_host() else { return };
    let mut f = hosts.fugue();
    let asking = "printf 'Name? '; read name; echo hello-$name";
    let handle = call(&mut f, declaring(), "fugue_exec", json!({"host": "h0", "command": asking}));
    let id = task_id(&handle);
    let asked = poll_until(&mut f, &id, |t| t["status"] != "working");
    assert_eq!(asked["status"], "input_required", "{asked}");
    let request = asked["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert_eq!(request["params"]["message"], "Name?", "{asked}");
    answer(&mut f, &id, &asked, "bob");
    let done = poll_until(&mut f, &id, |t| t["status"] == "completed");
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["status"], "ok", "{done}");
    assert!(result["output"].as_str().unwrap().ends_with("hello-bob"), "{done}");
    assert!(result["pane_id"].as_str().unwrap().starts_with("h0:"), "{done}");
}

#[test]
fn a_cancelled_remote_question_gives_the_prompt_back_there() {
    let Some(hosts) = asking_host() else { return };
    let mut f = hosts.fugue();
    let pane = remote_shell(&mut f);
    let asking = json!({"pane_id": pane, "command": "printf 'Sure? '; head -n 1"});
    let id = task_id(&call(&mut f, declaring(), "fugue_exec", asking));
    poll_until(&mut f, &id, |t| t["status"] == "input_required");
    tasks_request(&mut f, "tasks/cancel", json!({"taskId": id}));
    poll_until(&mut f, &id, |t| t["status"] == "cancelled");
    back_at_prompt(&mut f, &pane);
}

#[test]
fn a_cancelled_remote_task_stops_its_command_there_before_it_ends() {
    let Some(hosts) = Hosts::start(1) else { return };
    let mut f = hosts.fugue();
    let pane = remote_shell(&mut f);
    let running = json!({"pane_id": pane, "command": "sleep 60"});
    let id = task_id(&call(&mut f, declaring(), "fugue_exec", running));
    let started = Instant::now();
    tasks_request(&mut f, "tasks/cancel", json!({"taskId": id}));
    let cancelled = poll_until(&mut f, &id, |t| t["status"] != "working");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    back_at_prompt(&mut f, &pane);
}

#[test]
fn a_cancelled_remote_call_ends_here_at_once_and_its_command_goes_on_there() {
    let Some(hosts) = Hosts::start(2) else { return };
    let mut f = hosts.fugue();
    let pane = remote_shell(&mut f);
    let args = json!({"pane_id": pane, "command": "echo begun; sleep 4; echo went-on"});
    let id = f.submit("tools/call", crate::util::tool_params("fugue_exec", args, Some("far")));
    crate::util::wait_for_progress(&mut f, "far");
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    // As a local call's: the wait ended, not the command, which ends well there.
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["activity"], "busy", "{status}");
    let done = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(done["status"], "ok", "{done}");
    assert!(done["output"].as_str().unwrap().contains("went-on"), "{done}");
    // A wait for either of two hosts' panes answers when the first is done: the other host's
    // part is cancelled there and read as it stands.
    let start = |f: &mut Fugue, host: &str, command: &str| {
        let args = json!({"host": host, "command": command, "timeout_ms": 1});
        f.call("fugue_exec", args)["pane_id"].as_str().unwrap().to_string()
    };
    let quick = start(&mut f, "h0", "sleep 0.5; echo quick");
    let slow = start(&mut f, "h1", "sleep 60");
    let asked = Instant::now();
    let waited = f
        .call("fugue_wait", json!({"pane_ids": [quick, slow], "mode": "any", "timeout_ms": 60000}));
    assert!(asked.elapsed() < Duration::from_secs(15), "{:?}", asked.elapsed());
    assert_eq!(waited["status"], "done", "{waited}");
    assert_eq!(waited["fired"], json!([quick]), "{waited}");
}
