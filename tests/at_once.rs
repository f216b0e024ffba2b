//! Questions seen at once: a program blocked reading the terminal with no timeout is answered
//! `input` without waiting out the quiet period, and the answer names it (`program`). The quiet
//! period is a minute here, past every wait of these tests, so an `input` at all comes from the
//! kernel's word, and a program that does not read the terminal must never get one.

use crate::util::have;
use crate::util::{BusyLoops, Dir, Fugue};
use serde_json::{Value, json};
use std::process::Command;

/// A quiet period no wait here reaches.
const QUIET_MS: &str = "60000";

fn fugue() -> Fugue {
    Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", QUIET_MS)])
}

/// Starts `command` in a pane and waits for its first question with `fugue_send_input`'s wait.
fn first_question(f: &mut Fugue, command: &str) -> (String, Value) {
    let pane = f.pane(command);
    let answer = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(answer["status"], "input", "{command}: {answer}\n{}", f.text(&pane));
    (pane, answer)
}

#[test]
fn a_dialogue_of_many_questions_is_answered_at_once_each_time() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    let script = "for i in range(12): input('q%d? ' % i)\nprint('done')";
    let (pane, first) = first_question(&mut f, &format!("python3 -c \"{script}\""));
    assert_eq!(first["output"].as_str().unwrap().trim_end(), "q0?", "{first}");
    assert_eq!(first["program"], "python3", "{first}");
    for i in 1..12 {
        let answer = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
        );
        assert_eq!(answer["status"], "input", "question {i}: {answer}");
        assert!(answer["output"].as_str().unwrap().ends_with(&format!("q{i}?")), "{answer}");
        assert_eq!(answer["program"], "python3", "{answer}");
    }
    let last = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
    );
    assert_eq!(last["status"], "ok", "the program ended: {last}");
}

#[test]
fn every_input_answer_names_the_program_that_asks() {
    let mut f = fugue();
    let cases = [
        ("bash", "bash -c 'read -p \"ok? \" x'"),
        ("cat", "cat"),
        ("gdb", "gdb -q -nx"),
        ("python3", "python3 -q"),
        // vim waits on a 4 s timer (for its CursorHold) before it blocks for good.
        ("vim", "vim -u NONE -N"),
    ];
    for (program, command) in cases {
        if !have(program) {
            continue;
        }
        let (pane, answer) = first_question(&mut f, command);
        assert_eq!(answer["program"], program, "{command}: {answer}");
        let expected = f.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "^NEVER$", "on_input": "return", "timeout_ms": 20000}),
        );
        assert_eq!(expected["status"], "input", "{expected}");
        assert_eq!(expected["program"], program, "{expected}");
        let waited = f.call("fugue_wait", json!({"pane_ids": [pane], "timeout_ms": 20000}));
        assert_eq!(waited["results"][0]["status"], "input", "{waited}");
        assert_eq!(waited["results"][0]["program"], program, "{waited}");
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
}

#[test]
fn fugue_exec_names_the_program_in_a_live_shell() {
    if !have("python3") {
        return;
    }
    let mut f = fugue();
    let pane = f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
    let answer = f.call(
        "fugue_exec",
        json!({"pane_id": pane, "command": "python3 -c 'input(\"name? \")'", "timeout_ms": 20000}),
    );
    assert_eq!(answer["status"], "input", "{answer}");
    assert_eq!(answer["program"], "python3", "{answer}");
}

#[test]
fn the_run_tools_name_the_program_that_asks() {
    let mut f = fugue();
    let answer = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"name": "ask", "command": "bash -c 'read -p \"ok? \" a'"}],
               "timeout_ms": 20000}),
    );
    let result = &answer["results"][0];
    assert_eq!(result["status"], "input", "{answer}");
    assert_eq!(result["program"], "bash", "{answer}");
    let answer = f
        .call("fugue_run_pipeline", json!({"commands": [{"command": "cat"}], "timeout_ms": 20000}));
    assert_eq!(answer["status"], "input", "{answer}");
    assert_eq!(answer["program"], "cat", "{answer}");
}

/// Programs that do not read the terminal, or read it only beside something else that wakes them,
/// or only on a timer: not one look may say `input`.
fn quiet_programs(dir: &Dir) -> Vec<String> {
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut programs = vec![
        "sleep 30".to_string(),
        "while :; do :; done".to_string(),
        // A progress bar, and one that polls the keyboard between its updates.
        "i=0; while :; do i=$((i+1)); printf '\\r%d%%' $i; sleep 0.05; done".to_string(),
        "bash -c 'i=0; while :; do i=$((i+1)); printf \"\\r%d%%\" $i; read -t 0.05 x; done'"
            .to_string(),
        "sleep 30 | cat".to_string(),
        format!("cat {}", fifo.display()),
    ];
    if have("python3") {
        // A progress bar whose ticker thread sleeps between dots while the main thread reads the
        // keyboard: blocked reading the terminal with no timeout, but a timer wakes the program.
        programs.push(
            "python3 -c 'import sys, threading, time\n\
             def tick():\n    while True: time.sleep(0.3); print(\".\", end=\"\", flush=True)\n\
             threading.Thread(target=tick, daemon=True).start()\n\
             sys.stdin.readline()'"
                .to_string(),
        );
        // select over the terminal and a socket that another thread writes every 20 ms.
        programs.push(
            "python3 -c 'import select, socket, sys, threading, time\n\
             a, b = socket.socketpair()\n\
             def feed():\n    while True: b.send(b\"x\"); time.sleep(0.02)\n\
             threading.Thread(target=feed, daemon=True).start()\n\
             while True:\n    select.select([sys.stdin, a], [], [])\n    a.recv(1)'"
                .to_string(),
        );
    }
    programs
}

#[test]
fn programs_that_do_not_ask_never_get_input_under_load() {
    let dir = Dir::new("at-once-quiet");
    let programs = quiet_programs(&dir);
    let _load = BusyLoops::in_sessions(2);
    let mut f = fugue();
    let panes: Vec<String> = programs.iter().map(|p| f.pane(p)).collect();
    // Each pane watched for two seconds by a wait, then looked at twenty times by status.
    for (pane, program) in panes.iter().zip(&programs) {
        let answer = f.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "^NEVER$", "on_input": "return", "timeout_ms": 2000}),
        );
        assert_eq!(answer["status"], "timeout", "{program}: {answer}");
    }
    let mut false_inputs = Vec::new();
    for _ in 0..20 {
        for (pane, program) in panes.iter().zip(&programs) {
            let status = f.call("fugue_get_status", json!({"pane_id": pane}));
            if status["activity"] == "input" {
                false_inputs.push(program.clone());
            }
        }
    }
    assert!(false_inputs.is_empty(), "said input: {false_inputs:?}");
    f.call("fugue_close_pane", json!({"pane_ids": panes}));
}
