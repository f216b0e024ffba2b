//! Questions in orchestration: `fugue_run_parallel` and `fugue_run_pipeline` stop a command or
//! step whose program waits for someone to type and answer `input` with the question, long before
//! their timeout; `on_input: "wait"` keeps the old wait. And a pipeline's answer says where its
//! shell was left (`cwd`). The quiet period is 300 ms here; each call's timeout is two minutes,
//! past the harness's 30 s patience, so an answer at all proves the call did not wait it out.

use crate::util::{Dir, Fugue};
use serde_json::json;

const LONG_MS: u64 = 120_000;

fn fugue_with(shell: &str) -> Fugue {
    Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "300"), ("SHELL", shell)])
}

fn shell_present(shell: &str) -> bool {
    let present = std::path::Path::new(shell).exists();
    if !present {
        crate::util::skip(shell, "not installed");
    }
    present
}

#[test]
fn parallel_stops_a_command_that_asks_and_lets_the_others_finish() {
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_parallel",
        json!({"commands": [
            {"name": "ask", "command": "printf 'working\\n'; bash -c 'read -p \"Overwrite? [y/N] \" a'"},
            {"name": "quiet", "command": "sleep 2; echo done"},
        ], "timeout_ms": LONG_MS}),
    );
    assert_eq!(answer["status"], "input", "{answer}");
    let ask = &answer["results"][0];
    assert_eq!(ask["status"], "input", "{answer}");
    assert_eq!(ask["exit_code"], json!(null), "{answer}");
    let tail = ask["output_tail"].as_str().unwrap();
    assert!(tail.ends_with("Overwrite? [y/N]"), "the question ends the tail: {tail:?}");
    assert!(tail.contains("working"), "{tail:?}");
    // Two quiet seconds of sleep, looked at several times, are not a question.
    assert_eq!(answer["results"][1]["status"], "ok", "{answer}");
}

#[test]
fn parallel_on_input_wait_waits_and_bad_values_are_refused() {
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": "cat"}], "timeout_ms": 2000, "on_input": "wait"}),
    );
    assert_eq!(answer["results"][0]["status"], "timeout", "{answer}");
    let err = f.call_err(
        "fugue_run_parallel",
        json!({"commands": [{"command": "true"}], "on_input": "return"}),
    );
    assert_eq!(err["code"], "invalid_argument");
    assert!(err["message"].as_str().unwrap().contains("stop, wait"), "{err}");
}

#[test]
fn parallel_keeps_the_asking_pane_without_cleanup() {
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": "rm -i /nonexistent-dir-x/f || read -p 'ok? ' x"}],
               "timeout_ms": LONG_MS, "cleanup": false}),
    );
    let result = &answer["results"][0];
    assert_eq!(result["status"], "input", "{answer}");
    let pane = result["pane_id"].as_str().unwrap();
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["status"], "exited", "stopped as at a timeout: {status}");
    assert!(f.text(pane).contains("ok?"));
}

#[test]
fn a_pipeline_stops_at_a_program_that_asks_and_names_the_step() {
    if !shell_present("/usr/bin/python3") {
        return;
    }
    let dir = Dir::new("asking-pipeline");
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_pipeline",
        json!({"commands": [
            {"name": "go", "command": format!("cd {}", dir.path_str())},
            {"name": "setup", "command": "echo preparing; python3 -c 'input(\"Continue? [Y/n] \")'"},
            {"name": "after", "command": "echo never"},
        ], "timeout_ms": LONG_MS, "cleanup": true}),
    );
    assert_eq!(answer["status"], "input", "{answer}");
    assert_eq!(answer["failed_at"], "setup", "{answer}");
    let steps = answer["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "the step after the question never ran: {answer}");
    assert_eq!(steps[1]["status"], "input");
    assert_eq!(steps[1]["exit_code"], json!(null));
    let tail = answer["output_tail"].as_str().unwrap();
    assert!(tail.starts_with("preparing"), "{tail:?}");
    assert!(tail.ends_with("Continue? [Y/n]"), "{tail:?}");
    assert_eq!(answer["cwd"], dir.path_str(), "{answer}");
}

/// A step that is the shell's own `read`: the driver shell itself waits for the terminal.
fn builtin_read_step_asks(shell: &str) {
    if !shell_present(shell) {
        return;
    }
    let mut f = fugue_with(shell);
    let answer = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "true"}, {"command": "printf 'Name? '; read -r answer"}],
               "timeout_ms": LONG_MS, "cleanup": true}),
    );
    assert_eq!(answer["status"], "input", "{shell}: {answer}");
    assert_eq!(answer["failed_at"], "step-2", "{shell}: {answer}");
    assert_eq!(answer["steps"][0]["status"], "ok", "{shell}: {answer}");
    assert_eq!(answer["output_tail"], "Name?", "{shell}: {answer}");
}

#[test]
fn a_pipeline_step_in_the_shells_own_read_asks_under_dash() {
    builtin_read_step_asks("/bin/dash");
}

#[test]
fn a_pipeline_step_in_the_shells_own_read_asks_under_bash() {
    builtin_read_step_asks("/bin/bash");
}

#[test]
fn a_pipeline_step_in_the_shells_own_read_asks_under_zsh() {
    builtin_read_step_asks("/usr/bin/zsh");
}

#[test]
fn a_pipeline_with_on_input_wait_waits_for_its_timeout() {
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "cat"}], "timeout_ms": 2000, "on_input": "wait",
               "cleanup": true}),
    );
    assert_eq!(answer["status"], "timeout", "{answer}");
}

#[test]
fn a_pipeline_answers_the_directory_its_steps_left_the_shell_in() {
    let dir = Dir::new("pipeline cwd");
    let inner = dir.join("a  b");
    std::fs::create_dir(&inner).unwrap();
    let mut f = fugue_with("/bin/sh");
    let answer = f.call(
        "fugue_run_pipeline",
        json!({"commands": [
            {"command": "cd /"},
            // A step that prints a fake directory line and an OSC 7 mark changes nothing.
            {"command": format!("cd '{}' && printf 'c /etc\\n\\033]7;file:///etc\\007'", inner.display())},
        ], "cleanup": true}),
    );
    assert_eq!(answer["status"], "completed", "{answer}");
    assert_eq!(answer["cwd"], inner.to_str().unwrap(), "{answer}");

    // A failing step stops the pipeline; cwd is where that step left the shell.
    let answer = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "cd /tmp && false"}, {"command": "cd /"}],
               "cleanup": true}),
    );
    assert_eq!((answer["status"].as_str(), answer["cwd"].as_str()), (Some("failed"), Some("/tmp")));
}

#[test]
fn a_kept_pipeline_pane_stopped_at_a_question_becomes_an_interactive_shell() {
    for shell in ["/bin/bash", "/bin/dash", "/usr/bin/zsh"] {
        if !shell_present(shell) {
            continue;
        }
        let mut f = fugue_with(shell);
        let answer = f.call(
            "fugue_run_pipeline",
            json!({"commands": [{"command": "cd /tmp"}, {"command": "read -r answer"}],
                   "timeout_ms": LONG_MS}),
        );
        assert_eq!(answer["status"], "input", "{shell}: {answer}");
        assert_eq!(answer["cwd"], "/tmp", "{shell}: {answer}");
        let pane = answer["pane_id"].as_str().unwrap();
        // Typed perhaps before the shell's first prompt: the echo can come first and the output
        // then follows the prompt on its line, so the pattern is not anchored at the line start
        // (the echoed command line, `alive-$((40+2))`, cannot match it).
        let sent = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "echo alive-$((40+2)) in $PWD", "submit": true}),
        );
        let found = f.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": r"alive-42 in /tmp$", "since": sent["offset"],
                   "timeout_ms": 20000}),
        );
        assert_eq!(found["status"], "matched", "{shell}: {found}\n{}", f.text(pane));
    }
}
