//! The shell matrix: fugue_run_pipeline and its kept pane under every shell the README promises
//! (bash, dash, zsh, ksh, mksh run the steps themselves; fish users' steps run in /bin/sh and their
//! kept pane is fish). Each test runs under every installed shell of the matrix and says which
//! ones it skipped; `.ci/run` installs them all.

use crate::util::*;
use serde_json::{Value, json};
use std::path::Path;

/// A fugue whose shell is `shell`, with a zsh start-up directory holding an empty `.zshrc` (an
/// interactive zsh without one runs its new-user menu, which would eat what a test types).
pub fn fugue_with(shell: &Path, home: &Dir) -> Fugue {
    home.write(".zshrc", "");
    Fugue::start_with(&[
        ("FUGUE_SHELL", path_str(shell)),
        ("ZDOTDIR", home.path_str()),
        ("XDG_CONFIG_HOME", home.path_str()),
    ])
}

fn exit_codes(out: &Value) -> Vec<i64> {
    out["steps"].as_array().unwrap().iter().map(|s| s["exit_code"].as_i64().unwrap_or(-1)).collect()
}

/// Waits until the pane's process is `shell ... -i` (the arguments between start fugue's shell
/// integration: the driver has handed the pane over) and the
/// shell has printed its first prompt, so that what a test types next is read after the prompt.
/// Typed any earlier, the terminal echoes it at once and the prompt lands in front of the
/// command's first line of output (dash under load). The steps of the tests that use this print no
/// line ending in a prompt character, so the prompt is the interactive shell's.
fn wait_for_interactive(f: &mut Fugue, pane: &str, shell: &Path) {
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["status"], "running", "the kept pane's shell died: {status}");
    let pid = status["pid"].as_u64().unwrap();
    let (first, last) = (path_str(shell).to_string(), "-i".to_string());
    let mut seen: Vec<String> = Vec::new();
    wait_until(&format!("{} -i in the kept pane", shell.display()), || {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        seen = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        seen.first() == Some(&first) && seen.last() == Some(&last)
    });
    f.expect(pane, r"[$#%>]$");
}

/// Types `command` into the pane and waits for `pattern` in what follows.
fn type_and_expect(f: &mut Fugue, pane: &str, command: &str, pattern: &str) {
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": command, "submit": true}));
    f.expect_since(pane, pattern, &sent["offset"]);
}

#[test]
fn pipeline_state_carries_over_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-state-{name}"));
        let work = Dir::new(&format!("shell-state-cwd-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"command": format!("cd {}", work.path_str())},
                {"command": "export FUGUE_CARRIED=yes; greet() { echo \"hello $1\"; }"},
                {"command": format!("test \"$(pwd)\" = {} && test \"$FUGUE_CARRIED\" = yes", work.path_str())},
                {"command": "test \"$(greet you)\" = 'hello you'"},
            ], "cleanup": true}),
        );
        assert_eq!(out["status"], "completed", "{name}: {out}");
        assert_eq!(exit_codes(&out), [0, 0, 0, 0], "{name}: {out}");
    }
}

#[test]
fn a_failing_step_is_named_with_its_own_output_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-fail-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"name": "first", "command": "echo first-output"},
                {"name": "broken", "command": "echo broken-output; (exit 7)"},
                {"name": "never", "command": "echo never-output"},
            ], "cleanup": true}),
        );
        assert_eq!(out["status"], "failed", "{name}: {out}");
        assert_eq!(out["failed_at"], "broken", "{name}: {out}");
        assert_eq!(exit_codes(&out), [0, 7], "{name}: {out}");
        assert_eq!(out["output_tail"], "broken-output", "{name}: {out}");
    }
}

#[test]
fn a_syntax_error_fails_one_step_and_the_shell_goes_on_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-syntax-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"command": "export BEFORE=kept"},
                {"command": "if then fi ("},
                {"command": "test \"$BEFORE\" = kept"},
            ], "stop_on_error": false, "cleanup": true}),
        );
        assert_eq!(out["status"], "failed", "{name}: {out}");
        let statuses: Vec<&str> = out["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["ok", "failed", "ok"], "{name}: {out}");
        assert_eq!(exit_codes(&out)[1], 2, "{name}: {out}");
    }
}

/// A pipeline's shell is interactive, so, as at a terminal, it ignores SIGTERM: a step's
/// `kill $$` does not end it. bash, dash, zsh and ksh go on with the step (status 0); mksh stops
/// the step's command line (status 143, 128 + SIGTERM) and lives. Either way the next step runs,
/// and `exit 3` still ends the shell (`exited`, 3) and the run.
#[test]
fn kill_of_the_shell_does_not_end_a_pipeline_but_exit_does_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-kill-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"name": "kill", "command": "kill $$; echo after-kill"},
                {"name": "next", "command": "echo next-ran"},
                {"name": "exit", "command": "exit 3"},
                {"name": "never", "command": "echo never-ran"},
            ], "stop_on_error": false, "tails": "all"}),
        );
        let steps = out["steps"].as_array().unwrap();
        let seen: Vec<(&str, i64)> = steps
            .iter()
            .map(|s| (s["status"].as_str().unwrap(), s["exit_code"].as_i64().unwrap_or(-1)))
            .collect();
        // mksh stops the step's command line; the others (and /bin/sh, fish users') go on.
        let stopped = name == "mksh";
        let killed = if stopped { ("failed", 143) } else { ("ok", 0) };
        assert_eq!(seen, [killed, ("ok", 0), ("exited", 3)], "{name}: {out}");
        // mksh's stopped step printed nothing: its tail is there, empty.
        let rest = if stopped { "" } else { "after-kill" };
        assert_eq!(steps[0]["output_tail"], rest, "{name}: {out}");
        assert_eq!(steps[1]["output_tail"], "next-ran", "{name}: {out}");
        assert_eq!(out["failed_at"], if stopped { "kill" } else { "exit" }, "{name}: {out}");
    }
}

/// A step waiting in the shell's own `read` is interrupted at the timeout (`on_input: wait`: else
/// the read is stopped as asking after a quiet second); the shell survives, the rest of the step
/// does not run, and the kept pane becomes the interactive shell with the state the steps left.
/// bash and zsh restart `read` after a trap that returns normally, so this once waited for the
/// kill grace and then killed the pane.
#[test]
fn a_timed_out_read_leaves_an_interactive_shell_in_every_shell() {
    /// Time for the shell to start and run the first step on a busy machine (zsh took 1.2 s
    /// under load), so that the timeout finds the second step in its `read`.
    const TIMEOUT_MS: u64 = 3000;
    /// The grace after which fugue kills a step that ignored the interrupt.
    const KILL_GRACE_MS: u64 = 2000;
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-read-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"command": "export KEPT=yes"},
                {"name": "ask", "command": "read -r answer; echo \"continued-$answer\""},
                {"command": "echo never-run"},
            ], "timeout_ms": TIMEOUT_MS, "on_input": "wait", "cleanup": false}),
        );
        assert_eq!(out["status"], "timeout", "{name}: {out}");
        assert_eq!(out["failed_at"], "ask", "{name}: {out}");
        assert_eq!(out["steps"][1]["status"], "timeout", "{name}: {out}");
        let took = out["total_duration_ms"].as_u64().unwrap();
        assert!(took < TIMEOUT_MS + KILL_GRACE_MS, "{name}: answered after the kill grace: {out}");
        let pane = out["pane_id"].as_str().unwrap().to_string();
        wait_for_interactive(&mut f, &pane, &shell);
        // Not anchored at the start: typed before the shell's first prompt, the output follows the
        // prompt on its line.
        type_and_expect(&mut f, &pane, "echo \"[$KEPT]\"", r"\[yes\]$");
        let text = f.text(&pane);
        // The pane shows the step's command; its output would be a line of its own.
        let printed = |word: &str| text.lines().any(|l| l.starts_with(word));
        assert!(!printed("continued-"), "{name}: the step went on after the interrupt:\n{text}");
        assert!(!text.contains("never-run"), "{name}: a step ran after the timeout");
    }
}

#[test]
fn the_kept_pane_becomes_the_interactive_shell_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-keep-{name}"));
        let work = Dir::new(&format!("shell-keep-cwd-{name}"));
        let mut f = fugue_with(&shell, &home);
        let out = f.call(
            "fugue_run_pipeline",
            json!({"commands": [{"command": format!("cd {} && export LEFT=behind", work.path_str())}]}),
        );
        assert_eq!(out["status"], "completed", "{name}: {out}");
        let pane = out["pane_id"].as_str().unwrap().to_string();
        wait_for_interactive(&mut f, &pane, &shell);
        let dir = work.path.file_name().unwrap().to_str().unwrap();
        type_and_expect(
            &mut f,
            &pane,
            "echo \"[$LEFT]\"; pwd",
            // Typed before the shell's first prompt, the line is echoed first and the output
            // follows the prompt on its line.
            &format!(r"\[behind\]\n.*/{dir}$"),
        );
    }
}

/// The README: a shell outside the POSIX family (fish) gets its steps run by /bin/sh, and its
/// kept pane is still the user's shell.
#[test]
fn fish_steps_run_in_sh_and_the_kept_pane_is_fish() {
    let Some((_, fish)) = installed(&["fish"]).pop() else { return };
    let home = Dir::new("shell-fish");
    let mut f = fugue_with(&fish, &home);
    let out = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "x=posix; test \"$x\" = posix && test -z \"$FISH_VERSION\""}]}),
    );
    assert_eq!(out["status"], "completed", "{out}");
    let pane = out["pane_id"].as_str().unwrap().to_string();
    wait_for_interactive(&mut f, &pane, &fish);
    type_and_expect(&mut f, &pane, "echo \"fish=$FISH_VERSION\"", r"^fish=\d");
}

#[test]
fn pipeline_pipefail_holds_for_later_steps_in_bash() {
    let Some((_, bash)) = installed(&["bash"]).pop() else { return };
    let home = Dir::new("shell-pipefail");
    let mut f = fugue_with(&bash, &home);
    let out = f.call(
        "fugue_run_pipeline",
        json!({"commands": [
            {"command": "false | true", "name": "plain"},
            {"command": "set -o pipefail", "name": "pipefail"},
            {"command": "false | true", "name": "failing"},
            {"command": "[[ -n $BASH_VERSION ]]", "name": "bash"},
        ], "stop_on_error": false, "cleanup": true}),
    );
    assert_eq!(exit_codes(&out), [0, 0, 1, 0], "{out}");
}

/// Types `line` at the shell's prompt and waits for the next prompt; returns fugue's answer.
fn typed(f: &mut Fugue, pane: &str, line: &str) -> Value {
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": line, "submit": true, "wait_ms": 20000}),
    )
}

/// Runs `command` with fugue_exec and returns fugue's answer.
fn exec(f: &mut Fugue, pane: &str, command: &str) -> Value {
    f.call("fugue_exec", json!({"pane_id": pane, "command": command, "timeout_ms": 20000}))
}

/// Whether the last line of an answer's output ends in `[want]`: a typed command's output follows
/// its echoed line, and in dash (whose prompt hook reports before the prompt is printed) the
/// prompt.
fn printed(answer: &Value, want: &str) -> bool {
    let text = answer["output"].as_str().unwrap_or_default();
    text.lines().last().is_some_and(|line| line.ends_with(&format!("[{want}]")))
}

/// Failing commands (POSIX shells, fish) and the status they leave. A death by signal N is 128+N,
/// in ksh93 256+N (SIGINT's once made ksh93 draw its prompt without end).
const FAILING: [(&str, &str, i64); 4] = [
    ("false", "false", 1),
    ("true | false", "true | false", 1),
    ("(exit 3)", "sh -c 'exit 3'", 3),
    ("sh -c 'kill -INT $$'", "sh -c 'kill -INT $$'", 128 + 2),
];

/// The status the next command sees is the last command's, as without fugue, whether the two are
/// typed on separate prompts or sent with fugue_exec in separate calls: the prompt hooks and
/// fugue_exec's own line between the commands leave it alone. mksh's prompt hook once set it to 0.
#[test]
fn the_last_status_survives_the_prompt_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("shell-status-{name}"));
        let mut f = fugue_with(&shell, &home);
        let pane = f.shell();
        let status = if name == "fish" { r#"echo "[$status]""# } else { r#"echo "[$?]""# };
        for (posix, fish, want) in FAILING {
            let failing = if name == "fish" { fish } else { posix };
            let want = if name == "ksh" && want > 128 { want + 128 } else { want };
            let ran = typed(&mut f, &pane, failing);
            assert_eq!(ran["exit_code"], want, "{name}: typed {failing}: {ran}");
            let seen = typed(&mut f, &pane, status);
            assert!(printed(&seen, &want.to_string()), "{name}: typed {failing}: {seen}");
            let ran = exec(&mut f, &pane, failing);
            assert_eq!(ran["exit_code"], want, "{name}: exec {failing}: {ran}");
            let seen = exec(&mut f, &pane, status);
            assert!(printed(&seen, &want.to_string()), "{name}: exec {failing}: {seen}");
        }
    }
}

/// The statuses of a failing pipeline's commands survive the prompt as without fugue, in the
/// shells that keep them: bash's PIPESTATUS, zsh's and fish's pipestatus.
#[test]
fn pipeline_statuses_survive_the_prompt() {
    let arrays = [
        ("bash", r#"echo "[${PIPESTATUS[@]}]""#),
        ("zsh", r#"echo "[$pipestatus]""#),
        ("fish", r#"echo "[$pipestatus]""#),
    ];
    for (name, shell) in installed(&["bash", "zsh", "fish"]) {
        let echo = arrays.iter().find(|(n, _)| *n == name).unwrap().1;
        let home = Dir::new(&format!("shell-pipestatus-{name}"));
        let mut f = fugue_with(&shell, &home);
        let pane = f.shell();
        let ran = typed(&mut f, &pane, "true | false | true");
        assert_eq!(ran["exit_code"], 0, "{name}: {ran}");
        let seen = typed(&mut f, &pane, echo);
        assert!(printed(&seen, "0 1 0"), "{name}: {seen}");
    }
}
