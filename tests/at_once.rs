//! Questions seen at once: a program blocked reading the terminal with no timeout is answered
//! `input` without waiting out the quiet period, and the answer names it (`program`). The quiet
//! period is a minute here, past every wait of these tests, so an `input` at all comes from the
//! kernel's word, and a program that does not read the terminal must never get one.

use crate::util::have;
use crate::util::{BusyLoops, Dir, Fugue, SHELLS, installed, path_str};
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

/// The line that makes each shell's own builtin `read` ask `ok? `.
fn builtin_read(shell: &str) -> &'static str {
    match shell {
        "bash" => "read -p 'ok? ' x; echo got-$x",
        "zsh" | "ksh" | "mksh" => "read 'x?ok? '; echo got-$x",
        "fish" => "read -P 'ok? ' x; echo got-$x",
        _ => "printf 'ok? '; read x; echo got-$x",
    }
}

/// The median of `values`.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// Runs `command` in `pane`, which asks `ok? `, answers `y`, and returns how long the question
/// took to be seen (`duration_ms`).
fn ask_and_answer(f: &mut Fugue, pane: &str, command: &str, what: &str) -> u64 {
    let asked =
        f.call("fugue_exec", json!({"pane_id": pane, "command": command, "timeout_ms": 20000}));
    assert_eq!(asked["status"], "input", "{what}: {asked}");
    assert!(asked["output"].as_str().unwrap().ends_with("ok?"), "{what}: {asked}");
    assert!(asked["program"].as_str().is_some_and(|p| !p.is_empty()), "{what}: {asked}");
    let done = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
    );
    assert_eq!(done["status"], "ok", "{what}: {done}");
    assert!(done["output"].as_str().unwrap().contains("got-y"), "{what}: {done}");
    asked["duration_ms"].as_u64().unwrap()
}

/// The live shell's own `read` (issue 31 §1): the shell itself is the terminal's foreground, as
/// at its prompt, but a command fugue typed runs in it, so its wait is the command's question and
/// is seen at once, as a child's is. The quiet period is a minute: an `input` at all is the fast
/// path. Its median is 300 ms at most, or, on a machine so busy that a child's `read` (measured
/// in turn with it) takes over 150 ms, at most twice the child's. Quick commands in between
/// and looks at the prompt never say `input`.
#[test]
fn the_live_shells_own_read_is_seen_at_once_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("at-once-read-{name}"));
        // A fish used before: its first start in a new home generates completions from every
        // man page in the background, minutes of a CPU, which is no part of what is measured.
        std::fs::create_dir_all(home.join(".local/share/fish/generated_completions")).unwrap();
        let mut f = Fugue::start_with(&[
            ("FUGUE_SHELL", path_str(&shell)),
            ("HOME", home.path_str()),
            ("FUGUE_INPUT_QUIET_MS", QUIET_MS),
        ]);
        let pane =
            f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
        let (mut own, mut child) = (Vec::new(), Vec::new());
        for round in 0..5 {
            let what = format!("{name} round {round}");
            own.push(ask_and_answer(&mut f, &pane, builtin_read(name), &what));
            let read = "sh -c 'printf \"ok? \"; read x; echo got-$x'";
            child.push(ask_and_answer(&mut f, &pane, read, &format!("{what}, a child")));
            for _ in 0..3 {
                let quick = f.call(
                    "fugue_exec",
                    json!({"pane_id": pane, "command": "echo quick", "timeout_ms": 20000}),
                );
                assert_eq!(quick["status"], "ok", "{name}: a false input: {quick}");
            }
            let looks: Vec<Value> = (0..10)
                .map(|_| f.call("fugue_get_status", json!({"pane_id": pane}))["activity"].clone())
                .filter(|activity| activity != "prompt")
                .collect();
            assert!(looks.is_empty(), "{name}: at its prompt: {looks:?}");
        }
        let (median, child_median) = (median(own.clone()), median(child.clone()));
        eprintln!("{name}: own read seen in {own:?} ms (median {median}), a child's {child:?}");
        assert!(
            median <= 300.max(2 * child_median),
            "{name}: median {median} ms of {own:?}; a child's {child_median} of {child:?}"
        );
    }
}

/// Builds `source` (Go) into `dir` as `name` with the installed `go`, offline, without cgo.
fn go_build(dir: &Dir, name: &str, source: &str) -> String {
    let file = dir.write(&format!("{name}.go"), source);
    let out = dir.join(name);
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(&file)
        .current_dir(&dir.path)
        .env("HOME", dir.path_str())
        .env("GOCACHE", dir.join("cache"))
        .env("GOPATH", dir.join("gopath"))
        .env("GOFLAGS", "")
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap();
    assert!(built.status.success(), "go build: {}", String::from_utf8_lossy(&built.stderr));
    path_str(&out).to_string()
}

/// Seven questions, as `terraform apply` asks its "Enter a value:".
const GO_ASKS: &str = r#"package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	for i := 0; i < 7; i++ {
		fmt.Print("Enter a value: ")
		s, _ := in.ReadString('\n')
		fmt.Print("got ", s)
	}
}
"#;

/// The same question while a goroutine waits on a timer: the program may wake by itself.
const GO_TICKS: &str = r#"package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

func main() {
	go func() {
		for {
			time.Sleep(time.Hour)
			fmt.Print(".")
		}
	}()
	fmt.Print("Enter a value: ")
	s, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Print("got ", s)
}
"#;

/// How long a plain program's question takes to be seen here, as `answer_all` measures it: twice
/// it bounds a Go program's on a machine too busy for 300 ms.
fn plain_baseline(f: &mut Fugue) -> u64 {
    let plain = "sh -c 'for i in 1 2 3 4 5 6 7; do printf \"Enter a value: \"; read x; done'";
    let (pane, _) = first_question(f, plain);
    median(answer_all(f, &pane, "sh"))
}

/// How many questions the programs here ask.
const QUESTIONS: usize = 7;

/// Answers the `QUESTIONS` questions of a program in `pane` whose first one was seen, and returns
/// how long each later one took to be seen; the program ends after the last answer.
fn answer_all(f: &mut Fugue, pane: &str, program: &str) -> Vec<u64> {
    let mut took = Vec::new();
    for i in 1..=QUESTIONS {
        let answer = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
        );
        if i == QUESTIONS {
            assert_eq!(answer["status"], "ok", "{program}: {answer}");
            break;
        }
        assert_eq!(answer["status"], "input", "{program} question {i}: {answer}");
        assert_eq!(answer["program"], program, "{answer}");
        took.push(answer["duration_ms"].as_u64().unwrap());
    }
    took
}

/// A Go program blocked reading the terminal (issue 31 §2): the Go runtime's own threads sleep on
/// timers (sysmon on its note, idle threads on futexes), which alone never made a question wait;
/// a goroutine on a timer does (the runtime's poller then waits with a timeout).
#[test]
fn a_go_program_reading_the_terminal_is_seen_at_once() {
    if !have("go") {
        return;
    }
    let dir = Dir::new("go-asks");
    let asks = go_build(&dir, "asks", GO_ASKS);
    let ticks = go_build(&dir, "ticks", GO_TICKS);
    let mut f = fugue();
    let (pane, first) = first_question(&mut f, &asks);
    assert_eq!(first["program"], "asks", "{first}");
    let took = answer_all(&mut f, &pane, "asks");
    let baseline = plain_baseline(&mut f);
    let bound = 300.max(2 * baseline);
    eprintln!("{}: seen in {took:?} ms; a plain program's median {baseline}", first["program"]);
    assert!(median(took.clone()) <= bound, "seen in {took:?} ms; a plain program in {baseline}");
    let pane = f.pane(&ticks);
    f.expect(&pane, "Enter a value");
    let waited = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^NEVER$", "on_input": "return", "timeout_ms": 2000}),
    );
    assert_eq!(waited["status"], "timeout", "a goroutine on a timer: {waited}");
}

/// A C program laid out as a Go program blocked on the terminal: a sysmon thread that sleeps in
/// short naps and then on a futex with a minute's timeout, two idle threads on futexes, the main
/// thread reading the terminal; with the Go linker's build-info header, it is a Go program.
const GO_LAYOUT: &str = r#"#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifdef GO_HEADER
__attribute__((section(".go.buildinfo"), used))
static const char buildinfo[32] = "\xff Go buildinf:\x08\x02";
#endif
static int note;
static void *sysmon(void *unused) {
    for (long us = 20; us <= 10000; us *= 2) {
        struct timespec nap = {0, us * 1000};
        syscall(SYS_nanosleep, &nap, NULL);
    }
    for (;;) {
        struct timespec sleep = {60, 0};
        syscall(SYS_futex, &note, FUTEX_WAIT_PRIVATE, 0, &sleep, NULL, 0);
    }
    return unused;
}
static void *idle(void *unused) {
    for (;;) syscall(SYS_futex, &note, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return unused;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, sysmon, NULL);
    pthread_create(&t, NULL, idle, NULL);
    pthread_create(&t, NULL, idle, NULL);
    char line[256];
    for (int i = 0; i < 7; i++) {
        printf("Enter a value: ");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) return 1;
        printf("got %s", line);
    }
    return 0;
}
"#;

/// Compiles `GO_LAYOUT` as `name`, with `flags`.
fn cc(dir: &Dir, name: &str, flags: &[&str]) -> String {
    let source = dir.write("layout.c", GO_LAYOUT);
    let out = dir.join(name);
    let built = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .arg("-lpthread")
        .output()
        .unwrap();
    assert!(built.status.success(), "cc: {}", String::from_utf8_lossy(&built.stderr));
    path_str(&out).to_string()
}

/// The Go runtime's thread layout, always tested (no `go` needed): with the Go header it is seen
/// at once; the same threads in a program that is not Go are a program that waits on a timer,
/// never seen at once.
#[test]
fn the_go_runtimes_sleeping_threads_do_not_hold_a_question_back() {
    if !have("cc") {
        return;
    }
    let dir = Dir::new("go-layout");
    let go = cc(&dir, "golike", &["-DGO_HEADER"]);
    let not_go = cc(&dir, "timerwait", &[]);
    let mut f = fugue();
    let (pane, first) = first_question(&mut f, &go);
    assert_eq!(first["program"], "golike", "{first}");
    let took = answer_all(&mut f, &pane, "golike");
    let baseline = plain_baseline(&mut f);
    let bound = 300.max(2 * baseline);
    eprintln!("{}: seen in {took:?} ms; a plain program's median {baseline}", first["program"]);
    assert!(median(took.clone()) <= bound, "seen in {took:?} ms; a plain program in {baseline}");
    let pane = f.pane(&not_go);
    f.expect(&pane, "Enter a value");
    let waited = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^NEVER$", "on_input": "return", "timeout_ms": 2000}),
    );
    assert_eq!(waited["status"], "timeout", "a thread on a timer, not Go's: {waited}");
}
