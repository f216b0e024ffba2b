//! Live shells: fugue's shell integration leaves the user's rc files and hooks working, can be
//! turned off, cleans up after itself, and `fugue_send_input` with `wait_ms` answers in panes whose
//! program is not a shell.

use crate::exec::{find, fugue_with};
use crate::util::{Dir, Fugue};
use serde_json::{Value, json};

fn exec(f: &mut Fugue, pane: &str, command: &str) -> Value {
    f.call("fugue_exec", json!({"pane_id": pane, "command": command, "timeout_ms": 20000}))
}

fn shell_pane(f: &mut Fugue) -> String {
    f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string()
}

/// Each shell's rc file sets a variable and adds a prompt hook that counts prompts in a file; the
/// rc file is read and the hook still runs beside fugue's.
#[test]
fn the_users_rc_files_are_read_and_their_prompt_hooks_still_run() {
    let cases: [(&str, &str, &str); 6] = [
        ("bash", ".bashrc", "FROM_RC=bash\nPROMPT_COMMAND='echo x >> \"$HOME/hook\"'\n"),
        (
            "zsh",
            ".zshrc",
            "FROM_RC=zsh\nmine() { echo x >> \"$HOME/hook\"; }\nprecmd_functions+=(mine)\n",
        ),
        (
            "fish",
            ".config/fish/config.fish",
            "set -g FROM_RC fish\nfunction mine --on-event fish_prompt\n echo x >> $HOME/hook\nend\n",
        ),
        ("dash", ".shrc", "FROM_RC=dash\nPS1='$(echo x >> \"$HOME/hook\")'\"$PS1\"\n"),
        ("ksh", ".kshrc", "FROM_RC=ksh\nPS1='$(echo x >> \"$HOME/hook\")'\"$PS1\"\n"),
        ("mksh", ".mkshrc", "FROM_RC=mksh\nPS1='$(echo x >> \"$HOME/hook\")'\"$PS1\"\n"),
    ];
    for (name, rc, text) in cases {
        let Some(shell) = find(name) else { continue };
        let home = Dir::new(&format!("rc-{name}"));
        home.write(rc, text);
        let mut f = if name == "dash" {
            // dash reads no rc file of its own: only $ENV, which fugue chains to.
            let env = home.join(".shrc");
            Fugue::start_with(&[
                ("FUGUE_SHELL", shell.as_str()),
                ("HOME", home.path_str()),
                ("ENV", env.to_str().unwrap()),
            ])
        } else {
            fugue_with(&shell, &home)
        };
        let pane = shell_pane(&mut f);
        let first = exec(&mut f, &pane, "echo $FROM_RC");
        assert_eq!(first["output"], name, "{name}: the rc file was not read: {first}");
        let before = std::fs::read_to_string(home.join("hook")).unwrap_or_default().lines().count();
        exec(&mut f, &pane, "true");
        let after = std::fs::read_to_string(home.join("hook")).unwrap_or_default().lines().count();
        assert!(after > before && before > 0, "{name}: the user's hook ran {before} then {after}");
    }
}

/// A `PROMPT_COMMAND` string that ends in `;` (as pyenv-virtualenv's init leaves it) or in a
/// comment still runs, and so does fugue's report after it: `fugue_exec` answers.
#[test]
fn a_bash_prompt_command_ending_in_a_semicolon_or_a_comment_keeps_fugue_exec_working() {
    let Some(bash) = find("bash") else { return };
    let hooks = [
        "PROMPT_COMMAND='echo x >> \"$HOME/hook\";'\n",
        "PROMPT_COMMAND='echo x >> \"$HOME/hook\" # count prompts'\n",
    ];
    for (i, rc) in hooks.into_iter().enumerate() {
        let home = Dir::new(&format!("prompt-command-{i}"));
        home.write(".bashrc", rc);
        let mut f = fugue_with(&bash, &home);
        let pane = shell_pane(&mut f);
        let answer = exec(&mut f, &pane, "echo fine");
        assert_eq!(
            (answer["status"].as_str(), answer["output"].as_str()),
            (Some("ok"), Some("fine")),
            "{rc}: {answer}"
        );
        let hook = std::fs::read_to_string(home.join("hook")).unwrap_or_default();
        assert!(
            hook.lines().count() >= 2,
            "{rc}: the user's hook ran {} times",
            hook.lines().count()
        );
    }
}

#[test]
fn integration_off_makes_fugue_exec_a_clear_error() {
    let Some(bash) = find("bash") else { return };
    let home = Dir::new("integration-off");
    let mut f = fugue_with(&bash, &home);
    let pane = f.call("fugue_create_session", json!({"integration": false}))["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let err = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
    assert_eq!(err["code"], "invalid_state", "{err}");
    assert!(err["message"].as_str().unwrap().contains("integration"), "{err}");
    // The shell itself works as before, without marks.
    f.expect(&pane, r"[$#]\s*$");
    let raw = f.call("fugue_get_output", json!({"pane_id": pane, "format": "raw"}));
    assert!(!raw["output"].as_str().unwrap().contains("133;"), "{raw}");

    let mut off = Fugue::start_with(&[
        ("FUGUE_SHELL", bash.as_str()),
        ("HOME", home.path_str()),
        ("FUGUE_SHELL_INTEGRATION", "0"),
    ]);
    let pane = shell_pane(&mut off);
    let err = off.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
    assert_eq!(err["code"], "invalid_state", "{err}");
    let err = off.call_err("fugue_exec", json!({"command": "true"}));
    assert_eq!(err["code"], "invalid_state", "{err}");
}

#[test]
fn a_command_pane_is_not_a_shell_for_fugue_exec() {
    let mut f = Fugue::start();
    let pane = f.pane("sleep 30");
    let err = f.call_err("fugue_exec", json!({"pane_id": pane, "command": "true"}));
    assert_eq!(err["code"], "invalid_state", "{err}");
}

#[test]
fn the_default_shell_pane_is_made_once_and_kept() {
    let Some(bash) = find("bash") else { return };
    let home = Dir::new("default-pane");
    let mut f = fugue_with(&bash, &home);
    let first = f.call("fugue_exec", json!({"command": "cd /tmp && echo one"}));
    assert_eq!((first["status"].as_str(), first["output"].as_str()), (Some("ok"), Some("one")));
    let second = f.call("fugue_exec", json!({"command": "pwd"}));
    assert_eq!(second["pane_id"], first["pane_id"]);
    assert_eq!(second["output"], "/tmp");
    let sessions = f.call("fugue_list_sessions", json!({}));
    let names: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shell"], "{sessions}");
    // Closed, it is made again on the next call.
    f.call("fugue_close_pane", json!({"pane_id": first["pane_id"]}));
    let third = f.call("fugue_exec", json!({"command": "echo three"}));
    assert_ne!(third["pane_id"], first["pane_id"]);
    assert_eq!(third["status"], "ok");
}

/// The private directory of a live shell goes with its pane, and with fugue.
#[test]
fn temporary_files_go_with_the_pane_and_with_fugue() {
    let Some(bash) = find("bash") else { return };
    let home = Dir::new("cleanup");
    let mut f = fugue_with(&bash, &home);
    let pid = f.pid();
    let dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("fugue-shell-{pid}-")))
            })
            .collect()
    };
    let pane = shell_pane(&mut f);
    exec(&mut f, &pane, "true");
    assert_eq!(dirs().len(), 1);
    let dir = dirs().pop().unwrap();
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&dir).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    assert!(!dir.join("nonce").exists(), "the init script deletes the nonce file");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert!(dirs().is_empty(), "{:?}", dirs());
    let pane = shell_pane(&mut f);
    exec(&mut f, &pane, "true");
    assert_eq!(dirs().len(), 1);
    f.close_stdin();
    assert!(dirs().is_empty(), "{:?}", dirs());
}

#[test]
fn a_python_repl_answers_in_the_same_call() {
    if find("python3").is_none() {
        return;
    }
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let pane = f.pane("python3 -q");
    let ready = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(ready["status"], "input", "{ready}");
    let answer = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "sum(i*i for i in range(1, 101))", "submit": true,
               "wait_ms": 20000}),
    );
    assert_eq!(answer["status"], "input", "{answer}");
    assert!(answer["output"].as_str().unwrap().contains("338350"), "{answer}");
    let quit = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "raise SystemExit(4)", "submit": true, "wait_ms": 20000}),
    );
    assert_eq!(
        (quit["status"].as_str(), quit["exit_code"].as_i64()),
        (Some("failed"), Some(4)),
        "{quit}"
    );
}

#[test]
fn a_setup_script_answered_gives_its_exit_code() {
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "400")]);
    let pane = f.pane("printf 'Continue? [y/N] '; read a; echo \"answer $a\"; [ \"$a\" = y ]");
    let asked = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(asked["status"], "input", "{asked}");
    let done = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "y", "submit": true, "wait_ms": 20000}),
    );
    assert_eq!(
        (done["status"].as_str(), done["exit_code"].as_i64()),
        (Some("ok"), Some(0)),
        "{done}"
    );
    assert!(done["output"].as_str().unwrap().contains("answer y"), "{done}");
    let slow = f.pane("sleep 30");
    let running = f.call("fugue_send_input", json!({"pane_id": slow, "wait_ms": 300}));
    assert_eq!(running["status"], "running", "{running}");
}

#[test]
fn status_shows_activity_last_exit_code_cwd_and_the_running_command() {
    crate::exec::each_shell(|name, f, pane| {
        let done = exec(f, pane, "cd /tmp; false");
        assert_eq!(done["exit_code"], 1, "{name}: {done}");
        let status = f.call("fugue_get_status", json!({"pane_id": pane}));
        assert_eq!(status["activity"], "prompt", "{name}: {status}");
        assert_eq!(status["last_exit_code"], 1, "{name}: {status}");
        assert_eq!(status["cwd"], "/tmp", "{name}: {status}");
        assert!(status.get("current_command").is_none(), "{name}: {status}");
        let running = f
            .call("fugue_exec", json!({"pane_id": pane, "command": "sleep 30", "timeout_ms": 100}));
        assert_eq!(running["status"], "running", "{name}: {running}");
        let status = f.call("fugue_get_status", json!({"pane_id": pane}));
        assert_eq!(status["activity"], "busy", "{name}: {status}");
        assert_eq!(status["current_command"], "sleep 30", "{name}: {status}");
        let listed = f.call("fugue_list_sessions", json!({}));
        let listed = &listed["sessions"][0]["windows"][0]["panes"][0];
        assert_eq!(listed["activity"], "busy", "{name}: {listed}");
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "exit", "keys": ["C-c"]}));
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "exit", "submit": true}));
        let ended = f.wait_exit(pane);
        assert!(ended.get("activity").is_none(), "{name}: {ended}");
    });
}

#[test]
fn a_command_pane_shows_input_while_it_asks() {
    let mut f = Fugue::start_with(&[("FUGUE_INPUT_QUIET_MS", "300")]);
    let pane = f.pane("printf 'Name? '; read name");
    f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["activity"], "input", "{status}");
    assert!(status.get("last_exit_code").is_none(), "{status}");
    assert!(status["cwd"].as_str().is_some_and(|c| c.starts_with('/')), "{status}");
}

/// The shell a pipeline keeps is a live shell too: `fugue_exec` runs in it, where the steps left.
#[test]
fn a_kept_pipeline_pane_takes_fugue_exec() {
    crate::exec::each_shell_fugue(|name, f| {
        let done = f.call(
            "fugue_run_pipeline",
            json!({"commands": [{"command": "cd /tmp"}, {"command": "export KEPT=yes"}]}),
        );
        assert_eq!(done["status"], "completed", "{name}: {done}");
        let pane = done["pane_id"].as_str().unwrap().to_string();
        let ran = exec(f, &pane, "echo $PWD");
        assert_eq!(
            (ran["status"].as_str(), ran["output"].as_str()),
            (Some("ok"), Some("/tmp")),
            "{name}: {ran}"
        );
        let status = f.call("fugue_get_status", json!({"pane_id": pane}));
        assert_eq!(status["activity"], "prompt", "{name}: {status}");
        // What the steps exported is there in the POSIX shells that ran them.
        if name != "fish" {
            assert_eq!(exec(f, &pane, "echo $KEPT")["output"], "yes", "{name}");
        }
    });
}
