//! fugue_run_pipeline in the tests' shell (dash as /bin/sh): one shell for every step, exact exit
//! codes, tails, timeouts, the kept pane, cancellation and the private directory. The same
//! behaviour in every shell of the matrix is in `shells.rs`.

use crate::util::*;
use serde_json::{Value, json};
use std::time::Duration;

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
    // Typed once the step's line is in (its command shows) but before it reads, or while it
    // does: the terminal holds the line until `read` takes it. Typed before the step's line, it
    // would be a command of its own. The pane is listed before its first step is typed.
    let pane = find_pane(&mut f, "read line");
    let shown = f.call("fugue_expect", json!({"pane_id": pane["id"], "pattern": "read line"}));
    assert_eq!(shown["status"], "matched", "{shown}");
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

/// At its deadline, or found asking, a step is interrupted as by C-c, and the shell that ran it
/// takes the prompt back, in every shell: the kept pane's shell reports the interrupted step's
/// status, then takes the next command. fish runs the steps in /bin/sh and becomes the pane's shell
/// after them.
#[test]
fn a_stopped_step_gives_the_prompt_back_in_every_shell() {
    crate::exec::each_shell_fugue(|name, f| {
        let stops = [
            (json!({"commands": [{"command": "sleep 60"}], "timeout_ms": 500}), "timeout"),
            (json!({"commands": [{"command": "printf 'Sure? '; head -n 1"}]}), "input"),
        ];
        for (args, stopped) in stops {
            let out = run_pipeline(f, args);
            let statuses = (out["status"].as_str(), out["steps"][0]["status"].as_str());
            assert_eq!(statuses, (Some(stopped), Some(stopped)), "{name}: {out}");
            let pane = out["pane_id"].as_str().unwrap().to_string();
            if name != "fish" {
                let status = f.call("fugue_get_status", json!({"pane_id": pane}));
                let back = (status["activity"].as_str(), status["last_exit_code"].as_i64());
                let code = crate::exec::interrupted(name);
                assert_eq!(back, (Some("prompt"), Some(code)), "{name} {stopped}: {status}");
            }
            let next = f.call(
                "fugue_exec",
                json!({"command": "echo free", "pane_id": pane, "timeout_ms": 20000}),
            );
            assert_eq!(next["output"], "free", "{name} {stopped}: {next}");
        }
    });
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

/// A `completed` answer means the last step's output is readable: the status reaches fugue
/// through the FIFO, the output through the terminal, and with the machine busy the status could
/// win, so an immediate read of the kept pane missed the last step's output.
#[test]
fn a_completed_pipeline_answer_comes_after_its_output_under_load() {
    let _busy = BusyLoops::one_per_core();
    let mut f = Fugue::start();
    for i in 0..100 {
        let out = run_pipeline(
            &mut f,
            json!({"commands": [{"command": format!("echo first-{i}")},
                                {"command": format!("seq 1 300; echo last-{i}")}], "cleanup": false}),
        );
        assert_eq!(out["status"], "completed", "{out}");
        let pane = out["pane_id"].as_str().unwrap().to_string();
        let read = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 5}));
        let text = read["output"].as_str().unwrap();
        assert!(
            text.contains(&format!("last-{i}")),
            "round {i}: answered before its output: {text:?}"
        );
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
}

#[test]
fn pipeline_tails_all_gives_every_step_its_output() {
    let mut f = Fugue::start();
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "printf 'x\\nmatch\\n' | grep match"}, {"command": "true"},
                            {"command": "echo one; echo two"}],
               "tails": "all", "cleanup": true}),
    );
    assert_eq!(out["status"], "completed", "{out}");
    let tails: Vec<Value> =
        out["steps"].as_array().unwrap().iter().map(|s| s["output_tail"].clone()).collect();
    // Printed nothing: an empty tail, told apart from a tail not shown.
    assert_eq!(tails, [json!("match"), json!(""), json!("one\ntwo")], "{out}");
    let lean =
        run_pipeline(&mut f, json!({"commands": [{"command": "echo one"}], "cleanup": true}));
    assert!(lean["steps"][0].get("output_tail").is_none(), "green stays lean: {lean}");
    let err =
        f.call_err("fugue_run_pipeline", json!({"commands": [{"command": "true"}], "tails": 1}));
    assert_eq!(err["code"], "invalid_argument");
}

/// A pipeline's pane shows the steps it was given, not fugue's driver line, wherever panes are
/// listed.
#[test]
fn a_pipeline_pane_shows_its_steps_as_its_command() {
    let runtime = Dir::new("pipeline-shown");
    let mut f = Fugue::start_with(&[("XDG_RUNTIME_DIR", runtime.path_str())]);
    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "cd /tmp"}, {"command": "echo shown-step"}]}),
    );
    let pane = out["pane_id"].as_str().unwrap().to_string();
    let shown = "cd /tmp && echo shown-step";
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["command"], shown, "{status}");
    let listed = all_panes(&mut f).into_iter().find(|p| p["id"] == pane.as_str()).unwrap();
    assert_eq!(listed["command"], shown);
    let ls = std::process::Command::new(BIN)
        .arg("ls")
        .env("XDG_RUNTIME_DIR", runtime.path_str())
        .output()
        .unwrap();
    let ls = String::from_utf8_lossy(&ls.stdout);
    assert!(ls.contains(shown) && !ls.contains("fugue-pipeline"), "{ls}");

    let out = run_pipeline(
        &mut f,
        json!({"commands": [{"command": "false"}, {"command": "true"}], "stop_on_error": false}),
    );
    let status = f.call("fugue_get_status", json!({"pane_id": out["pane_id"]}));
    assert_eq!(status["command"], "false ; true", "{status}");
}

/// A directory whose fugue was SIGKILLed is removed by the next fugue to start; a live fugue's
/// directory stays, and so does one of a pid that only looks like its owner's.
#[test]
fn stale_pipeline_directories_are_swept_at_start() {
    let tmp = Dir::new("sweep");
    let env = [("TMPDIR", tmp.path_str())];
    let dirs = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&tmp.path)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("fugue-pipeline-"))
            .collect();
        names.sort();
        names
    };
    let start_pipeline = |f: &mut Fugue, pidfile: &std::path::Path| {
        submit(
            f,
            "fugue_run_pipeline",
            json!({"commands": [{"command": format!("echo $$ > {}; sleep 60", path_str(pidfile))}]}),
        );
        pid_in(pidfile)
    };
    let mut killed = Fugue::start_with(&env);
    let killed_shell = start_pipeline(&mut killed, &tmp.join("killed.pid"));
    let killed_dir = format!("fugue-pipeline-{}-", killed.pid());
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    assert!(
        gone_within(killed_shell, Duration::from_secs(10)),
        "the killed fugue's shell lived on"
    );
    assert!(dirs().iter().any(|d| d.starts_with(&killed_dir)), "SIGKILL leaves the directory");

    let mut live = Fugue::start_with(&env);
    start_pipeline(&mut live, &tmp.join("live.pid"));
    let live_dir = format!("fugue-pipeline-{}-", live.pid());
    // The live fugue's pid with another start time: a stranger who got its pid.
    let reused = tmp.join(&format!("fugue-pipeline-{}-1-0000", live.pid()));
    std::fs::create_dir(&reused).unwrap();

    let swept = std::process::Command::new(BIN)
        .args(["call", "fugue_list_sessions"])
        .env("TMPDIR", tmp.path_str())
        .output()
        .unwrap();
    assert!(swept.status.success());
    let left = dirs();
    assert!(
        !left.iter().any(|d| d.starts_with(&killed_dir)),
        "the stale directory stayed: {left:?}"
    );
    assert!(!reused.exists(), "a directory of a reused pid stayed: {left:?}");
    assert_eq!(left.iter().filter(|d| d.starts_with(&live_dir)).count(), 1, "{left:?}");
}
