//! Jobs, one call per intent: fugue_exec never waits its turn (another of fugue's shells takes the
//! command), `cwd` and `until` on fugue_exec, fugue_wait on one or several panes, answers that
//! carry what comes next, and the handles an agent can say. The shell cases run in bash, dash,
//! zsh and fish (and ksh and mksh when installed), each reporting a skip when absent.

use crate::exec::{each_shell_fugue, find, fugue_with};
use crate::util::*;
use serde_json::{Value, json};
use std::time::Duration;

/// fugue_exec without a pane: fugue's own shells.
fn run(f: &mut Fugue, command: &str, timeout_ms: u64) -> Value {
    f.call("fugue_exec", json!({"command": command, "timeout_ms": timeout_ms}))
}

fn id(value: &Value) -> String {
    value["pane_id"].as_str().unwrap_or_else(|| panic!("no pane_id in {value}")).to_string()
}

fn wait(f: &mut Fugue, args: Value) -> Value {
    f.call("fugue_wait", args)
}

#[test]
fn a_second_exec_runs_in_another_shell_while_the_first_is_busy() {
    each_shell_fugue(|name, f| {
        let first = run(f, "sleep 30", 300);
        assert_eq!(first["status"], "running", "{name}: {first}");
        let busy = id(&first);
        let second = run(f, "cd /tmp; echo second-42", 20000);
        assert_eq!(
            (second["status"].as_str(), second["output"].as_str()),
            (Some("ok"), Some("second-42")),
            "{name}: {second}"
        );
        let other = id(&second);
        assert_ne!(busy, other, "{name}: the busy shell got the command");
        // The free shell is reused, and its directory carried over.
        let third = run(f, "pwd", 20000);
        assert_eq!(
            (id(&third), third["output"].as_str()),
            (other.clone(), Some("/tmp")),
            "{name}: {third}"
        );
        // Once the first shell is free again, it is the first one taken.
        f.call("fugue_send_input", json!({"pane_id": busy, "keys": ["C-c"], "wait_ms": 20000}));
        let fourth = run(f, "echo back", 20000);
        assert_eq!(id(&fourth), busy, "{name}: {fourth}");
        // A named busy pane is still refused, with nothing typed.
        let job = f
            .call("fugue_exec", json!({"command": "sleep 30", "pane_id": busy, "timeout_ms": 200}));
        assert_eq!(job["status"], "running", "{name}: {job}");
        let refused = f.call_err("fugue_exec", json!({"command": "echo no", "pane_id": busy}));
        assert_eq!(refused["code"], "pane_busy", "{name}: {refused}");
    });
}

#[test]
fn a_new_shell_starts_in_the_busy_shells_directory() {
    each_shell_fugue(|name, f| {
        let dir = Dir::new(&format!("jobs-dir-{name}"));
        run(f, &format!("cd {}", dir.path_str()), 20000);
        let first = run(f, "sleep 30", 300);
        let second = run(f, "pwd", 20000);
        assert_ne!(id(&first), id(&second), "{name}");
        assert_eq!(second["output"], dir.path_str(), "{name}: {second}");
    });
}

#[test]
fn exec_cwd_runs_the_command_there_and_the_shell_stays() {
    each_shell_fugue(|name, f| {
        let dir = Dir::new(&format!("jobs-cwd-{name}"));
        dir.write("marker.txt", "here\n");
        let done = f.call(
            "fugue_exec",
            json!({"command": "cat marker.txt", "cwd": dir.path_str(), "timeout_ms": 20000}),
        );
        assert_eq!(
            (done["status"].as_str(), done["output"].as_str()),
            (Some("ok"), Some("here")),
            "{name}: {done}"
        );
        assert_eq!(done["cwd"], dir.path_str(), "{name}: {done}");
        let failed = f.call(
            "fugue_exec",
            json!({"command": "sh -c 'exit 3'", "cwd": dir.path_str(), "timeout_ms": 20000}),
        );
        assert_eq!(failed["exit_code"], 3, "{name}: {failed}");
        let then = run(f, "pwd", 20000);
        assert_eq!(then["output"], dir.path_str(), "{name}: the shell stays: {then}");
        // A missing directory: bad_cwd, and nothing is typed.
        let missing = f.call_err(
            "fugue_exec",
            json!({"command": "echo typed-$USER", "cwd": dir.join("nope").to_str().unwrap()}),
        );
        assert_eq!(missing["code"], "bad_cwd", "{name}: {missing}");
        let after = run(f, "echo after", 20000);
        assert_eq!(after["output"], "after", "{name}: {after}");
        let raw = f.call(
            "fugue_get_output",
            json!({"pane_id": id(&then), "format": "raw", "lines": 1000}),
        );
        let raw = raw["output"].as_str().unwrap();
        assert!(!raw.contains("typed-"), "{name}: something was typed: {raw}");
        // A command still running there says so.
        let elsewhere = Dir::new(&format!("jobs-cwd-run-{name}"));
        let running = f.call(
            "fugue_exec",
            json!({"command": "sleep 30", "cwd": elsewhere.path_str(), "timeout_ms": 200}),
        );
        assert_eq!(running["cwd"], elsewhere.path_str(), "{name}: {running}");
        // So do a wait on it and its status, while it runs.
        let waited = f.call("fugue_send_input", json!({"pane_id": id(&running), "wait_ms": 100}));
        assert_eq!(waited["cwd"], elsewhere.path_str(), "{name}: {waited}");
        let status = f.call("fugue_get_status", json!({"pane_id": id(&running)}));
        assert_eq!(status["cwd"], elsewhere.path_str(), "{name}: {status}");
        f.call(
            "fugue_send_input",
            json!({"pane_id": id(&running), "keys": ["C-c"], "wait_ms": 20000}),
        );
    });
}

#[test]
fn exec_until_answers_ready_and_leaves_the_command_running() {
    each_shell_fugue(|name, f| {
        let server = "echo starting; sleep 0.3; echo 'listening on port 4242'; sleep 30";
        let ready = f.call(
            "fugue_exec",
            json!({"command": server, "until": r"port (\d+)", "timeout_ms": 20000}),
        );
        assert_eq!(ready["status"], "ready", "{name}: {ready}");
        assert_eq!(ready["groups"], json!(["4242"]), "{name}: {ready}");
        assert_eq!(ready["line"], "listening on port 4242", "{name}: {ready}");
        assert!(ready["output"].as_str().unwrap().starts_with("starting"), "{name}: {ready}");
        let server_pane = id(&ready);
        let status = f.call("fugue_get_status", json!({"pane_id": server_pane}));
        assert_eq!(status["activity"], "busy", "{name}: it keeps running: {status}");
        // The next command goes to another shell.
        let next = run(f, "echo next", 20000);
        assert_ne!(id(&next), server_pane, "{name}");
        // The typed line never matches: `until` sees the command's own output only.
        let own =
            f.call("fugue_exec", json!({"command": "true", "until": "true", "timeout_ms": 20000}));
        assert_eq!(own["status"], "ok", "{name}: {own}");
        // A command that ends first answers its end; one that outlasts the timeout, running.
        let ended = f.call("fugue_exec", json!({"command": "echo nope; sh -c 'exit 4'", "until": "never-printed", "timeout_ms": 20000}));
        assert_eq!(
            (ended["status"].as_str(), ended["exit_code"].as_i64()),
            (Some("failed"), Some(4)),
            "{name}: {ended}"
        );
        let slow = f.call(
            "fugue_exec",
            json!({"command": "sleep 30", "until": "never", "timeout_ms": 300}),
        );
        assert_eq!(slow["status"], "running", "{name}: {slow}");
        let bad = f.call_err("fugue_exec", json!({"command": "true", "until": "("}));
        assert_eq!(bad["code"], "invalid_regex", "{name}: {bad}");
    });
}

#[test]
fn wait_any_names_the_job_that_ends_first_and_all_waits_for_every_one() {
    each_shell_fugue(|name, f| {
        let slow = id(&run(f, "sleep 2; sh -c 'exit 3'", 100));
        let quick = id(&run(f, "sleep 0.3; sh -c 'exit 4'", 100));
        let any = wait(f, json!({"pane_ids": [slow, quick], "timeout_ms": 20000}));
        assert_eq!(any["status"], "done", "{name}: {any}");
        assert_eq!(any["fired"], json!([quick]), "{name}: {any}");
        assert_eq!(any["results"][0]["status"], "running", "{name}: {any}");
        assert_eq!(
            (any["results"][1]["status"].as_str(), any["results"][1]["exit_code"].as_i64()),
            (Some("failed"), Some(4)),
            "{name}: {any}"
        );
        let all = wait(f, json!({"pane_ids": [slow, quick], "mode": "all", "timeout_ms": 20000}));
        assert_eq!(all["status"], "done", "{name}: {all}");
        assert_eq!(
            all["fired"],
            json!([quick, slow]),
            "{name}: the one that ended before the call first: {all}"
        );
        assert_eq!(all["results"][0]["exit_code"], 3, "{name}: {all}");
        assert!(!all.to_string().contains("__fugue_b"), "{name}: the typed line is shown: {all}");
        assert!(all["results"][0]["cwd"].is_string(), "{name}: {all}");
        // A job that ended before the wait began answers at once, with its exit code.
        let again = wait(f, json!({"pane_ids": [slow]}));
        assert_eq!(
            (again["results"][0]["status"].as_str(), again["results"][0]["exit_code"].as_i64()),
            (Some("failed"), Some(3)),
            "{name}: {again}"
        );
        assert!(again["duration_ms"].as_u64().unwrap() < 5000, "{name}: {again}");
    });
}

#[test]
fn a_wait_shows_the_output_of_the_job_not_the_panes_history() {
    each_shell_fugue(|name, f| {
        let earlier = run(f, "echo EARLIER-OUTPUT", 20000);
        let pane = id(&earlier);
        let job = f.call(
            "fugue_exec",
            json!({"command": "echo JOB-LINE; sleep 30", "pane_id": pane, "timeout_ms": 300}),
        );
        assert_eq!(job["status"], "running", "{name}: {job}");
        let timeout = wait(f, json!({"pane_ids": [pane], "timeout_ms": 200}));
        let output = timeout["results"][0]["output"].as_str().unwrap();
        assert!(output.contains("JOB-LINE"), "{name}: {timeout}");
        assert!(!output.contains("EARLIER-OUTPUT"), "{name}: {timeout}");
        f.call("fugue_send_input", json!({"pane_id": pane, "keys": ["C-c"], "wait_ms": 20000}));
    });
}

#[test]
fn wait_reports_a_job_that_asks_with_its_question() {
    each_shell_fugue(|name, f| {
        // The shell is up before the job's short timeout starts.
        run(f, "true", 20000);
        let job = run(f, "sleep 0.2; sh -c 'printf \"Continue? \"; read a; echo got-$a'", 50);
        assert_eq!(job["status"], "running", "{name}: {job}");
        let asked = wait(f, json!({"pane_ids": [id(&job)], "timeout_ms": 20000}));
        let result = &asked["results"][0];
        assert_eq!(result["status"], "input", "{name}: {asked}");
        // (A shell's first prompt may be drawn after the typed line, before the question.)
        assert!(result["line"].as_str().unwrap().ends_with("Continue?"), "{name}: {asked}");
        let answered = f.call(
            "fugue_send_input",
            json!({"pane_id": id(&job), "input": "yes", "submit": true, "wait_ms": 20000}),
        );
        assert_eq!(answered["status"], "ok", "{name}: {answered}");
        assert!(answered["output"].as_str().unwrap().contains("got-yes"), "{name}: {answered}");
        assert_eq!(answered["pane_id"], id(&job), "{name}: {answered}");
        assert!(answered["duration_ms"].is_u64(), "{name}: {answered}");
    });
}

#[test]
fn wait_all_with_one_that_never_ends_times_out_listing_it_running() {
    let mut f = Fugue::start();
    let never = f.pane("sleep 60");
    let ends = f.pane("exit 6");
    let answer =
        wait(&mut f, json!({"pane_ids": [never, ends], "mode": "all", "timeout_ms": 1500}));
    assert_eq!(answer["status"], "timeout", "{answer}");
    assert_eq!(answer["fired"], json!([ends]), "{answer}");
    assert_eq!(answer["results"][0]["status"], "running", "{answer}");
    assert_eq!(
        (answer["results"][1]["status"].as_str(), answer["results"][1]["exit_code"].as_i64()),
        (Some("exited"), Some(6)),
        "{answer}"
    );
    let d = answer["duration_ms"].as_u64().unwrap();
    assert!((1500..10_000).contains(&d), "{answer}");
}

#[test]
fn wait_until_matches_only_what_is_printed_after_the_call() {
    let mut f = Fugue::start();
    let log = f.pane("echo 'ERROR old'; sleep 0.5; echo 'INFO x'; echo 'ERROR new one'; sleep 30");
    f.expect(&log, "^ERROR old$");
    let found =
        wait(&mut f, json!({"pane_ids": [log], "until": r"^ERROR (new.*)$", "timeout_ms": 20000}));
    let result = &found["results"][0];
    assert_eq!(
        (result["status"].as_str(), result["line"].as_str()),
        (Some("matched"), Some("ERROR new one")),
        "{found}"
    );
    assert_eq!(result["groups"], json!(["new one"]), "{found}");
    // An until that never matches: timeout, with what the pane shows.
    let missed =
        wait(&mut f, json!({"pane_ids": [log], "until": "never-printed", "timeout_ms": 500}));
    assert_eq!(missed["status"], "timeout", "{missed}");
    assert!(missed["results"][0]["output"].as_str().unwrap().contains("ERROR new one"), "{missed}");
}

#[test]
fn wait_on_32_panes_answers_the_one_that_exits() {
    let mut f = Fugue::start_with(&[("FUGUE_MAX_PANES", "64")]);
    let mut panes: Vec<String> = (0..31).map(|_| f.pane("sleep 60")).collect();
    let exits = f.pane("sleep 0.5; exit 7");
    panes.insert(17, exits.clone());
    let answer = wait(&mut f, json!({"pane_ids": panes, "timeout_ms": 20000}));
    assert_eq!(answer["fired"], json!([exits]), "{answer}");
    assert_eq!(answer["results"][17]["exit_code"], 7, "{answer}");
    assert_eq!(answer["results"].as_array().unwrap().len(), 32);
    panes.push(exits);
    let too_many = f.call_err("fugue_wait", json!({"pane_ids": panes}));
    assert_eq!(too_many["code"], "invalid_argument", "{too_many}");
}

#[test]
fn a_cancelled_wait_answers_nothing_and_its_panes_run_on() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 60");
    let args = json!({"pane_ids": [pane], "timeout_ms": 1000});
    let waiting = submit(&mut f, "fugue_wait", args.clone());
    f.notify("notifications/cancelled", json!({"requestId": waiting, "reason": "test"}));
    let twin = submit(&mut f, "fugue_wait", args);
    assert_eq!(structured(&f.response(&twin))["status"], "timeout");
    assert!(f.response_within(&waiting, Duration::ZERO).is_none(), "the cancelled wait answered");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["status"], "running", "{status}");
}

#[test]
fn wait_refuses_unknown_and_ambiguous_ids_before_waiting() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 60");
    let unknown =
        f.call_err("fugue_wait", json!({"pane_ids": [pane, "no-such-pane"], "timeout_ms": 60000}));
    assert_eq!(unknown["code"], "pane_not_found", "{unknown}");
    let empty = f.call_err("fugue_wait", json!({"pane_ids": []}));
    assert_eq!(empty["code"], "invalid_argument", "{empty}");
    let twice = f.call_err("fugue_wait", json!({"pane_ids": [pane, pane]}));
    assert_eq!(twice["code"], "invalid_argument", "{twice}");
    let short = f.call_err("fugue_get_status", json!({"pane_id": &pane[..3]}));
    assert_eq!(short["code"], "pane_not_found", "a prefix under four characters: {short}");
    let prefix = &pane[..5];
    let by_prefix = f.call("fugue_get_status", json!({"pane_id": prefix}));
    assert_eq!(by_prefix["pane_id"], pane, "{by_prefix}");
}

#[test]
fn a_one_pane_session_or_window_name_works_as_a_pane_id() {
    let mut f = Fugue::start();
    let created = f.call("fugue_create_session", json!({"name": "build", "command": "sleep 60"}));
    let by_session = f.call("fugue_get_status", json!({"pane_id": "build"}));
    assert_eq!(by_session["pane_id"], created["pane_id"], "{by_session}");
    let by_window = f.call("fugue_get_status", json!({"pane_id": created["window_id"]}));
    assert_eq!(by_window["pane_id"], created["pane_id"], "{by_window}");
    // With a second pane the session no longer names one pane.
    f.call(
        "fugue_create_pane",
        json!({"session_id": "build", "window_id": created["window_id"], "command": "sleep 60"}),
    );
    let err = f.call_err("fugue_get_status", json!({"pane_id": "build"}));
    assert_eq!(err["code"], "pane_not_found", "{err}");
}

#[test]
fn close_pane_takes_several_ids_and_answers_each_end() {
    let mut f = Fugue::start();
    let a = f.pane("sleep 60");
    let b = f.pane("exit 5");
    f.wait_exit(&b);
    let closed = f.call("fugue_close_pane", json!({"pane_ids": [a, b]}));
    assert_eq!(closed["results"][0]["pane_id"], a, "{closed}");
    assert!(closed["results"][0]["signal"].is_string(), "{closed}");
    assert_eq!(closed["results"][1]["exit_code"], 5, "{closed}");
    let gone = f.call_err("fugue_get_status", json!({"pane_id": a}));
    assert_eq!(gone["code"], "pane_not_found");
    // An unknown id closes nothing.
    let c = f.pane("sleep 60");
    let err = f.call_err("fugue_close_pane", json!({"pane_ids": [c, "nope-nope"]}));
    assert_eq!(err["code"], "pane_not_found", "{err}");
    f.call("fugue_get_status", json!({"pane_id": c}));
}

#[test]
fn seventeen_busy_shells_reach_the_limit_naming_the_busy_ones() {
    let mut f = Fugue::start();
    let mut busy = Vec::new();
    for n in 0..16 {
        let job = run(&mut f, &format!("sleep 60 # job-{n}"), 100);
        assert_eq!(job["status"], "running", "{job}");
        busy.push(id(&job));
    }
    busy.sort();
    busy.dedup();
    assert_eq!(busy.len(), 16, "each job its own shell");
    let err = f.call_err("fugue_exec", json!({"command": "echo seventeen"}));
    assert_eq!(err["code"], "limit_reached", "{err}");
    let message = err["message"].as_str().unwrap();
    assert!(busy.iter().all(|id| message.contains(id)), "{message}");
    assert!(message.contains("sleep 60 # job-3"), "{message}");
}

#[test]
fn an_editor_opened_by_git_commit_answers_input_with_its_screen() {
    if find("vim").is_none() | find("git").is_none() {
        return;
    }
    let dir = Dir::new("jobs-git-vim");
    let repo = git_repo(&dir);
    std::fs::write(repo.join("new.txt"), "x\n").unwrap();
    git(&repo, &["add", "new.txt"]);
    let mut f = Fugue::start();
    let command = "GIT_EDITOR='vim -u NONE -N -i NONE' git commit";
    let asked = f.call(
        "fugue_exec",
        json!({"command": command, "cwd": repo.to_str().unwrap(), "timeout_ms": 20000}),
    );
    assert_eq!(asked["status"], "input", "{asked}");
    assert_eq!(asked["alternate_screen"], true, "{asked}");
    let output = asked["output"].as_str().unwrap();
    assert!(output.contains("Please enter the commit message"), "{output}");
    // The agent writes the message and saves, in one call each.
    f.call(
        "fugue_send_input",
        json!({"pane_id": id(&asked), "input": "iadd new.txt", "keys": ["Escape"]}),
    );
    let saved = f.call(
        "fugue_send_input",
        json!({"pane_id": id(&asked), "input": ":wq", "submit": true, "wait_ms": 20000}),
    );
    assert_eq!(saved["status"], "ok", "{saved}");
    assert!(git(&repo, &["log", "--oneline"]).contains("add new.txt"));
}

#[test]
fn the_python_prompt_is_matched_by_a_pattern_ending_in_a_space() {
    let Some(python) = find("python3") else { return };
    let mut f = Fugue::start();
    let pane = f.pane(&format!("{python} -q"));
    let found =
        f.call("fugue_expect", json!({"pane_id": pane, "pattern": "^>>> ", "timeout_ms": 20000}));
    assert_eq!(found["status"], "matched", "{found}");
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "print(6*7)", "submit": true}));
    let again = f.call("fugue_expect", json!({"pane_id": pane, "pattern": r"^42\n>>> $", "since": sent["offset"], "timeout_ms": 20000}));
    assert_eq!(again["status"], "matched", "{again}");
    // A pattern without the space still matches the same line.
    let plain = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^>>>$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(plain["status"], "matched", "{plain}");
}

#[test]
fn exec_under_load_never_gives_one_shell_two_commands() {
    let _load = BusyLoops::one_per_core();
    let mut f = fugue_with("/bin/bash", &Dir::new("jobs-load"));
    for round in 0..5 {
        let ids: Vec<Value> = (0..3).map(|n| submit(&mut f, "fugue_exec", json!({"command": format!("sleep 0.3; echo r{round}-{n}"), "timeout_ms": 20000}))).collect();
        let answers: Vec<Value> = ids.iter().map(|id| structured(&f.response(id))).collect();
        for (n, answer) in answers.iter().enumerate() {
            assert_eq!(answer["output"], format!("r{round}-{n}"), "{answer}");
        }
        let mut panes: Vec<String> = answers.iter().map(id).collect();
        panes.sort();
        panes.dedup();
        assert_eq!(panes.len(), 3, "three commands at once, three shells: {answers:?}");
    }
}

#[test]
fn a_run_tool_stopped_at_a_full_screen_question_shows_its_screen() {
    if find("less").is_none() {
        return;
    }
    let dir = Dir::new("jobs-run-less");
    let file = dir.write("paged.txt", "first-paged-line\nsecond-paged-line\n");
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let command = format!("echo before-less; less {}", file.display());
    let run = f.call("fugue_run_parallel", json!({"commands": [{"command": command}]}));
    let result = &run["results"][0];
    assert_eq!(result["status"], "input", "{run}");
    assert_eq!(result["alternate_screen"], true, "{run}");
    let tail = result["output_tail"].as_str().unwrap();
    assert!(tail.contains("second-paged-line") && !tail.contains("before-less"), "{tail}");
    let pipeline = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "true"}, {"command": format!("less {}", file.display())}]}),
    );
    assert_eq!(pipeline["steps"][1]["status"], "input", "{pipeline}");
    assert_eq!(pipeline["alternate_screen"], true, "{pipeline}");
    assert!(pipeline["output_tail"].as_str().unwrap().contains("first-paged-line"), "{pipeline}");
}

/// A command that has not even begun when fugue_exec answers `running` (timeout_ms 100 on a busy
/// machine) is waited for whole: fugue_wait answers once it ended and its output is in, never the
/// previous prompt's status with no output. Under load, in every shell, several rounds.
#[test]
fn a_wait_waits_for_the_command_fugue_typed_under_load() {
    let _load = BusyLoops::in_sessions(3);
    each_shell_fugue(|name, f| {
        for round in 0..4 {
            let job = run(f, "sleep 0.3; echo QUICK", 100);
            if job["status"] == "ok" {
                continue; // it outran the timeout: nothing to wait for
            }
            assert_eq!(job["status"], "running", "{name} round {round}: {job}");
            let out = wait(f, json!({"pane_ids": [id(&job)], "timeout_ms": 20000}));
            let result = &out["results"][0];
            assert_eq!(result["status"], "ok", "{name} round {round}: {out}");
            assert_eq!(result["output"], "QUICK", "{name} round {round}: {out}");
        }
    });
}

/// The busy shell's directory is where its command went (`cd` inside the command), not where its
/// last prompt was: the next fugue_exec, sent to another shell, starts there.
#[test]
fn a_second_exec_starts_where_the_busy_shell_went() {
    let dir = Dir::new("jobs-busy-cd");
    each_shell_fugue(|name, f| {
        let first = run(f, &format!("cd {} && sleep 30", dir.path_str()), 300);
        assert_eq!(first["status"], "running", "{name}: {first}");
        let second = run(f, "pwd", 20000);
        assert_ne!(id(&second), id(&first), "{name}: {second}");
        assert_eq!(second["output"], dir.path_str(), "{name}: {second}");
        let status = f.call("fugue_get_status", json!({"pane_id": id(&first)}));
        assert_eq!(status["cwd"], dir.path_str(), "{name}: the busy shell's cwd: {status}");
        f.call("fugue_send_input", json!({"pane_id": id(&first), "keys": ["C-c"]}));
    });
}
