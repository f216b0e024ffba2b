//! The watchdog for silent work: `quiet_ms` on fugue_exec, fugue_send_input's wait and fugue_wait
//! answers `quiet` once the command has printed nothing for that long and does not ask. A command
//! that hangs is told in one call; one that prints slowly, or asks, is not quiet.

use crate::util::{BusyLoops, Fugue};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Runs `command` in `pane` with the watchdog at `quiet_ms`; the answer and how long it took.
fn exec_quiet(f: &mut Fugue, pane: &str, command: &str, quiet_ms: u64) -> (Value, Duration) {
    let started = Instant::now();
    let args = json!({"pane_id": pane, "command": command, "quiet_ms": quiet_ms,
                      "timeout_ms": 60_000});
    let answer = f.call("fugue_exec", args);
    (answer, started.elapsed())
}

/// A command that printed and then hangs answers `quiet` after about `quiet_ms`, with what it
/// printed; its pane still runs it, and once interrupted takes the next command.
fn hangs_then_goes_on(f: &mut Fugue, quiet_ms: u64, within: Duration) {
    let pane = f.shell();
    let (hung, took) = exec_quiet(f, &pane, "echo started; sleep 600", quiet_ms);
    assert_eq!(hung["status"], "quiet", "{hung}");
    assert_eq!(hung["output"], "started", "{hung}");
    assert!(hung.get("exit_code").is_none(), "a quiet command has not ended: {hung}");
    assert!(took >= Duration::from_millis(quiet_ms), "quiet after {took:?}: {hung}");
    assert!(took < Duration::from_millis(quiet_ms) + within, "quiet only after {took:?}");
    let busy = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
    assert_eq!(busy["code"], "pane_busy", "the command still runs: {busy}");
    let stopped =
        f.call("fugue_send_input", json!({"pane_id": pane, "keys": ["C-c"], "wait_ms": 10_000}));
    assert_eq!(stopped["status"], "failed", "{stopped}");
    let next = f.call("fugue_exec", json!({"pane_id": pane, "command": "echo again"}));
    assert_eq!((next["status"].as_str(), next["output"].as_str()), (Some("ok"), Some("again")));
}

/// A command that prints every `gap` for longer than `quiet_ms` in all ends `ok`, never `quiet`.
fn prints_slowly_and_ends(f: &mut Fugue, gap: &str, quiet_ms: u64) {
    let pane = f.shell();
    let command = format!("for i in 1 2 3 4 5 6 7 8; do echo $i; sleep {gap}; done");
    let (done, took) = exec_quiet(f, &pane, &command, quiet_ms);
    assert_eq!(done["status"], "ok", "{done}");
    assert!(took > Duration::from_millis(quiet_ms), "it ran {took:?}, longer than quiet_ms");
}

#[test]
fn a_command_that_prints_then_hangs_answers_quiet_and_its_pane_stays_usable() {
    let mut f = Fugue::start();
    hangs_then_goes_on(&mut f, 1000, Duration::from_secs(3));
}

#[test]
fn a_command_that_keeps_printing_under_quiet_ms_is_never_quiet() {
    let mut f = Fugue::start();
    prints_slowly_and_ends(&mut f, "0.3", 1000);
}

#[test]
fn a_command_that_asks_answers_input_not_quiet() {
    let mut f = Fugue::start();
    let pane = f.shell();
    // A watchdog shorter than the time a question takes to be sure of: the program waits for the
    // terminal, and that is the input watch's to tell, not silence.
    let (asked, _) = exec_quiet(&mut f, &pane, "read -r -p 'name? ' x; echo \"hi $x\"", 200);
    assert_eq!(asked["status"], "input", "{asked}");
    let answered = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "ann", "submit": true, "wait_ms": 10_000,
               "quiet_ms": 200}),
    );
    assert_eq!(answered["status"], "ok", "{answered}");
    assert!(answered["output"].as_str().unwrap().ends_with("hi ann"), "{answered}");
    // A read with a timeout waits for the terminal too; the kernel cannot vouch for it, so the
    // input watch takes its quiet period (1 s) to call it a question, well past quiet_ms.
    let (timed, _) = exec_quiet(&mut f, &pane, "bash -c 'read -t 60 -r -p \"age? \" x'", 200);
    assert_eq!(timed["status"], "input", "{timed}");
}

#[test]
fn send_input_and_fugue_wait_answer_quiet_for_a_job_that_hangs() {
    let mut f = Fugue::start();
    let pane = f.shell();
    let job = json!({"pane_id": pane, "command": "echo begun; sleep 600", "until": "^begun$"});
    assert_eq!(f.call("fugue_exec", job)["status"], "ready");
    let started = Instant::now();
    let waited = f.call("fugue_wait", json!({"pane_ids": [pane], "quiet_ms": 800}));
    assert_eq!(waited["status"], "done", "{waited}");
    assert_eq!(waited["results"][0]["status"], "quiet", "{waited}");
    assert_eq!(waited["fired"], json!([pane]), "{waited}");
    assert!(started.elapsed() >= Duration::from_millis(800), "{:?}", started.elapsed());
    // Without quiet_ms the same wait goes on to its timeout: the watchdog is what ended it.
    let plain = f.call("fugue_wait", json!({"pane_ids": [pane], "timeout_ms": 1500}));
    assert_eq!(plain["status"], "timeout", "{plain}");
    let only_wait = json!({"pane_id": pane, "wait_ms": 30_000, "quiet_ms": 500});
    let quiet = f.call("fugue_send_input", only_wait);
    assert_eq!(quiet["status"], "quiet", "{quiet}");
    assert_eq!(quiet["pane_id"], pane, "{quiet}");
    let no_wait = f.call_err("fugue_send_input", json!({"pane_id": pane, "quiet_ms": 500}));
    assert_eq!(no_wait["code"], "invalid_argument", "{no_wait}");
    let too_short = f.call_err("fugue_wait", json!({"pane_ids": [pane], "quiet_ms": 99}));
    assert_eq!(too_short["code"], "invalid_argument", "{too_short}");
}

#[test]
fn the_watchdog_holds_under_load() {
    // Busy loops in sessions of their own compete with the panes' programs as other work does.
    let _load = BusyLoops::in_sessions(4);
    let mut f = Fugue::start();
    hangs_then_goes_on(&mut f, 1500, Duration::from_secs(6));
    prints_slowly_and_ends(&mut f, "0.2", 1500);
}
