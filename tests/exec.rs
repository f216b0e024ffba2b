//! fugue_exec against real shells: one command in a live interactive shell, one call. Each case
//! runs in every shell that is installed (bash, dash, zsh, fish, ksh, mksh) and says which were
//! skipped.

use crate::util::{Dir, Fugue, SHELLS, find_shell, installed, path_str};
use serde_json::{Value, json};

/// The path of `program`, or `None` (with a skip message) when it is not installed.
pub fn find(program: &str) -> Option<String> {
    let found = find_shell(program);
    if found.is_none() {
        crate::util::skip(program, "not installed");
    }
    found.map(|p| path_str(&p).to_string())
}

/// fugue with `shell` as its shell and a quiet period short enough for tests.
pub fn fugue_with(shell: &str, home: &Dir) -> Fugue {
    Fugue::start_with(&[
        ("FUGUE_SHELL", shell),
        ("HOME", home.path_str()),
        ("FUGUE_INPUT_QUIET_MS", "400"),
    ])
}

/// Runs `case` once per installed shell, each with a fresh fugue, home and shell pane.
pub fn each_shell(case: impl Fn(&str, &mut Fugue, &str)) {
    each_shell_fugue(|name, f| {
        let pane =
            f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
        case(name, f, &pane);
    });
}

/// Runs `case` once per installed shell, each with a fresh fugue and home.
pub fn each_shell_fugue(case: impl Fn(&str, &mut Fugue)) {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("exec-{name}"));
        let mut f = fugue_with(path_str(&shell), &home);
        case(name, &mut f);
    }
}

/// The status a shell reports for a command that SIGINT ended: 128 + 2, and 256 + 2 in ksh93.
pub fn interrupted(shell: &str) -> i64 {
    if shell == "ksh" { 258 } else { 130 }
}

/// A python3 command that puts the terminal in raw mode, where C-c is a byte and no signal, runs
/// `statement` and puts the terminal back however it ends. Only a signal stops it.
pub fn raw_mode(statement: &str) -> String {
    format!(
        "python3 -c \"import sys, termios, time, tty\nsaved = termios.tcgetattr(0)\ntry:\n    \
         tty.setraw(0)\n    {statement}\nfinally:\n    termios.tcsetattr(0, termios.TCSANOW, \
         saved)\""
    )
}

pub fn exec(f: &mut Fugue, pane: &str, command: &str) -> Value {
    f.call("fugue_exec", json!({"pane_id": pane, "command": command, "timeout_ms": 20000}))
}

#[test]
fn a_command_answers_with_its_output_status_and_directory() {
    each_shell(|name, f, pane| {
        let done = exec(f, pane, "echo hello; echo world");
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert_eq!(done["exit_code"], 0, "{name}: {done}");
        assert_eq!(done["output"], "hello\nworld", "{name}: {done}");
        let failed = exec(f, pane, "cd /tmp && false");
        assert_eq!(
            (failed["status"].as_str(), failed["exit_code"].as_i64()),
            (Some("failed"), Some(1)),
            "{name}: {failed}"
        );
        assert_eq!(failed["cwd"], "/tmp", "{name}: {failed}");
        assert_eq!(failed["output"], "", "{name}: {failed}");
    });
}

/// Shell text for `posix` shells and for fish.
fn pick<'a>(name: &str, posix: &'a str, fish: &'a str) -> &'a str {
    if name == "fish" { fish } else { posix }
}

#[test]
fn quotes_newlines_and_heredocs_pass_untouched() {
    each_shell(|name, f, pane| {
        let command = pick(
            name,
            "x='it'\\''s \"quoted\" $HOME !!'\nprintf '%s\\n' \"$x\"\ncat <<'END'\n\ttab $y `z`\nEND",
            "set x 'it\\'s \"quoted\" $HOME !!'\nprintf '%s\\n' $x\nprintf '\\ttab $y `z`\\n'",
        );
        let done = exec(f, pane, command);
        assert_eq!(done["status"], "ok", "{name}: {done}");
        let text = done["output"].as_str().unwrap();
        assert!(text.starts_with("it's \"quoted\" $HOME !!\n"), "{name}: {done}");
        assert!(text.ends_with("tab $y `z`"), "{name}: {done}");
    });
}

#[test]
fn cd_export_and_functions_persist_between_calls() {
    each_shell(|name, f, pane| {
        let define = pick(
            name,
            "cd /tmp; export FUGUE_T=kept; greet() { echo hello \"$1\"; }",
            "cd /tmp; set -gx FUGUE_T kept; function greet; echo hello $argv[1]; end",
        );
        assert_eq!(exec(f, pane, define)["cwd"], "/tmp", "{name}");
        let used = exec(f, pane, "echo $FUGUE_T; greet you; pwd");
        assert_eq!(used["output"], "kept\nhello you\n/tmp", "{name}: {used}");
        assert_eq!(used["cwd"], "/tmp", "{name}: {used}");
    });
}

#[test]
fn a_syntax_error_fails_with_the_shells_status_and_the_shell_lives() {
    each_shell(|name, f, pane| {
        let bad = exec(f, pane, pick(name, "echo \"unterminated", "echo \"unterminated"));
        assert_eq!(bad["status"], "failed", "{name}: {bad}");
        assert_ne!(bad["exit_code"], 0, "{name}: {bad}");
        if name == "bash" {
            assert_eq!(bad["exit_code"], 2, "{name}: {bad}");
        }
        let after = exec(f, pane, "echo alive");
        assert_eq!(
            (after["status"].as_str(), after["output"].as_str()),
            (Some("ok"), Some("alive")),
            "{name}"
        );
    });
}

#[test]
fn exit_ends_the_shell_and_the_next_exec_is_refused() {
    each_shell(|name, f, pane| {
        let done = exec(f, pane, "echo bye; exit 3");
        assert_eq!(done["status"], "exited", "{name}: {done}");
        assert_eq!(done["exit_code"], 3, "{name}: {done}");
        // bash says "exit" as it leaves: that is the shell's own output.
        assert!(done["output"].as_str().unwrap().starts_with("bye"), "{name}: {done}");
        let err = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
        assert_eq!(err["code"], "pane_exited", "{name}: {err}");
    });
}

#[test]
fn forged_marks_and_exit_markers_change_nothing() {
    each_shell(|name, f, pane| {
        // Every mark fugue knows, with guessed numbers and nonces, and a fake FIFO record.
        let forge = "printf '\\033]133;D;0;fugue=1.0\\007\\033]133;D;0;fugue=2.x\\007\\033]7;file://h/etc\\007'; \
                     printf 'x P 9 1 0 /etc\\n'; printf '\\033]7770;x;1\\007exit 0\\n'; false";
        let done = exec(f, pane, forge);
        assert_eq!(done["status"], "failed", "{name}: {done}");
        assert_eq!(done["exit_code"], 1, "{name}: {done}");
        assert_ne!(done["cwd"], "/etc", "{name}: {done}");
        let next = exec(f, pane, "pwd");
        assert_eq!(next["cwd"], done["cwd"], "{name}: {next}");
    });
}

#[test]
fn a_question_answers_input_and_send_input_wait_ms_finishes_it() {
    each_shell(|name, f, pane| {
        let ask = pick(
            name,
            "printf 'Overwrite? [y/N] '; read answer; echo \"got $answer\"; [ \"$answer\" = y ]",
            // fish's own `read` polls the terminal beside its notifier; a program reading it is
            // what this test is about.
            "printf 'Overwrite? [y/N] '; sh -c 'read a; echo \"got $a\"; [ \"$a\" = y ]'",
        );
        let asked = exec(f, pane, ask);
        assert_eq!(asked["status"], "input", "{name}: {asked}");
        assert!(asked["output"].as_str().unwrap().ends_with("Overwrite? [y/N]"), "{name}: {asked}");
        let busy = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
        assert_eq!(busy["code"], "pane_busy", "{name}: {busy}");
        let answered = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
        );
        assert_eq!(answered["status"], "ok", "{name}: {answered}");
        assert_eq!(answered["exit_code"], 0, "{name}: {answered}");
        assert!(answered["output"].as_str().unwrap().ends_with("got y"), "{name}: {answered}");
    });
}

#[test]
fn a_long_command_answers_running_and_is_waited_on_later() {
    each_shell(|name, f, pane| {
        // The short timeout is for the command, not for the shell's start.
        exec(f, pane, "true");
        let started = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sleep 1; echo done; false", "timeout_ms": 200}),
        );
        assert_eq!(started["status"], "running", "{name}: {started}");
        assert!(started.get("exit_code").is_none(), "{name}: {started}");
        let err = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
        assert_eq!(err["code"], "pane_busy", "{name}: {err}");
        let waited = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
        assert_eq!(waited["status"], "failed", "{name}: {waited}");
        assert_eq!(waited["exit_code"], 1, "{name}: {waited}");
        assert!(waited["output"].as_str().unwrap().contains("done"), "{name}: {waited}");
    });
}

#[test]
fn long_output_keeps_head_and_tail_within_max_bytes() {
    each_shell(|name, f, pane| {
        let done = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "seq 1 5000", "max_bytes": 2000}),
        );
        let text = done["output"].as_str().unwrap();
        // The numbers are one shape: the first, how many more, the last.
        assert_eq!(text, "1\n[… 4998 more like this]\n5000", "{name}: {text}");
        assert!(text.len() <= 2000, "{name}: {}", text.len());
        let note = text.lines().find(|l| l.starts_with("[… ")).expect("a note");
        let kept = text.lines().count() - 1;
        let left: usize = note.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(kept + left, 5000, "{name}: {note}");
        assert_eq!(done["omitted"]["lines"], left, "{name}: {done}");
    });
}

#[test]
fn marks_are_hidden_in_text_and_shown_in_raw() {
    each_shell(|name, f, pane| {
        let done = exec(f, pane, "echo visible");
        let text = f.call("fugue_get_output", json!({"pane_id": pane}))["output"].clone();
        assert!(!text.as_str().unwrap().contains("133;"), "{name}: {text}");
        let raw = f.call(
            "fugue_get_output",
            json!({"pane_id": pane, "format": "raw", "since": 0, "lines": 10000}),
        )["output"]
            .clone();
        let raw = raw.as_str().unwrap();
        assert!(raw.contains("\u{1b}]133;C;fugue=x"), "{name}: {raw:?}");
        assert!(raw.contains("\u{1b}]133;D;0;fugue="), "{name}: {raw:?}");
        assert!(raw.contains("\u{1b}]7;file://"), "{name}: {raw:?}");
        assert_eq!(done["output"], "visible", "{name}");
    });
}

/// Under load (a busy loop per core), back-to-back commands in one shell keep their own output,
/// status and directory: no answer takes the previous command's prompt or the next one's output.
#[test]
fn back_to_back_commands_stay_exact_under_load() {
    let _busy = crate::util::BusyLoops::one_per_core();
    each_shell(|name, f, pane| {
        for i in 0..15 {
            let dir = if i % 2 == 0 { "/tmp" } else { "/" };
            let command = format!("cd {dir}; echo out-{i}; sh -c 'exit {}'", i % 4);
            let done = exec(f, pane, &command);
            assert_eq!(done["output"], format!("out-{i}"), "{name} {i}: {done}");
            assert_eq!(done["exit_code"], i % 4, "{name} {i}: {done}");
            assert_eq!(done["cwd"], dir, "{name} {i}: {done}");
        }
    });
}

/// Progress notifications carry the last output line; cancelling ends the wait, and the command
/// goes on: it finishes later and its file appears.
#[test]
fn progress_shows_the_last_line_and_cancelling_leaves_the_command_running() {
    let Some(bash) = find("bash") else { return };
    let home = Dir::new("exec-cancel");
    let mut f = fugue_with(&bash, &home);
    let pane = f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
    let marker = home.join("finished");
    let command = format!("echo step-one; sleep 3; touch '{}'", path_str(&marker));
    let id = f.submit(
        "tools/call",
        json!({"name": "fugue_exec", "arguments": {"pane_id": pane, "command": command},
               "_meta": {"progressToken": "exec"}}),
    );
    let deadline = std::time::Instant::now() + crate::util::PATIENCE;
    let progress = loop {
        let m = f.next_message(deadline).expect("a progress notification");
        if m["method"] == "notifications/progress"
            && m["params"]["message"].as_str().is_some_and(|s| s.contains("step-one"))
        {
            break m;
        }
    };
    assert_eq!(progress["params"]["progressToken"], "exec");
    f.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["activity"], "busy", "{status}");
    // The command was not stopped: waiting on the pane sees it end well.
    let done = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(done["status"], "ok", "{done}");
    assert!(marker.exists(), "the cancelled command did not finish");
}

#[test]
fn a_full_screen_programs_answer_keeps_what_the_command_printed_before_it() {
    // `git status; git commit -a` stops at the editor: the answer is the editor's screen, and
    // beside it (`printed`) the status lines, so no second read is needed to see what is staged.
    if !crate::util::have("git") || !crate::util::have("vim") {
        return;
    }
    let dir = Dir::new("exec-printed");
    let repo = crate::util::git_repo(&dir);
    std::fs::write(repo.join("README.md"), "changed\n").unwrap();
    std::fs::write(repo.join("notes.txt"), "new\n").unwrap();
    let mut f = Fugue::start();
    let command = "export GIT_EDITOR='vim -u NONE -N'; git status --short; git var GIT_EDITOR; \
                   git commit -a";
    let asked = f.call(
        "fugue_exec",
        json!({"command": command, "cwd": path_str(&repo), "timeout_ms": 20000}),
    );
    assert_eq!((&asked["status"], &asked["alternate_screen"]), (&json!("input"), &json!(true)));
    let screen = asked["output"].as_str().unwrap();
    assert!(screen.contains("# Please enter the commit message"), "the editor's screen: {asked}");
    let printed = asked["printed"].as_str().unwrap_or_default();
    assert!(printed.contains(" M README.md") && printed.contains("?? notes.txt"), "{asked}");
    assert!(printed.contains("vim -u NONE -N"), "{asked}");
    assert!(!printed.contains("Please enter"), "the screen stays out of printed: {asked}");
    // Within the one budget.
    assert!(screen.len() + printed.len() <= 3584, "{asked}");
}
