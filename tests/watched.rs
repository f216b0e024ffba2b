//! What a person watching a pane sees when fugue runs a command in it (`fugue attach`, the text
//! and screen views of `fugue_get_output`): the prompt, the command as given, once, and its output
//! on lines of its own — never the line fugue types to run it. In every installed shell, for
//! `fugue_exec` and for a pipeline's steps, and under load, where typing ahead of the prompt would
//! show.

use crate::shells::fugue_with;
use crate::util::*;
use serde_json::{Value, json};

fn view(f: &mut Fugue, pane: &str, format: &str) -> String {
    let out = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 200, "format": format}));
    out["output"].as_str().unwrap().to_string()
}

/// What a watcher must see of `commands` (each printed `ran <n>` and, first, `ENV=from-env`):
/// each command once, at the end of a prompt line, and each output line whole.
fn assert_watched(name: &str, text: &str, commands: &[&str]) {
    assert!(!text.contains("__fugue"), "{name}: the plumbing shows:\n{text}");
    let lines: Vec<&str> = text.lines().collect();
    for command in commands {
        let shown = lines.iter().filter(|l| l.contains(command)).count();
        assert_eq!(shown, 1, "{name}: {command:?} shows {shown} times:\n{text}");
        let line = lines.iter().find(|l| l.contains(command)).unwrap();
        assert!(line.ends_with(command), "{name}: {command:?} is not where it was typed:\n{text}");
        assert!(line.len() > command.len(), "{name}: no prompt before {command:?}:\n{text}");
    }
    assert!(
        lines.contains(&"ENV=from-env"),
        "{name}: the output is not a line of its own:\n{text}"
    );
}

const COMMANDS: [&str; 3] = ["echo ENV=from-env", "echo ran 1", "echo ran 2"];

fn run_all(f: &mut Fugue, pane: &str) {
    for command in COMMANDS {
        let out = f.call("fugue_exec", json!({"pane_id": pane, "command": command}));
        assert_eq!(out["status"], "ok", "{out}");
    }
}

/// The last line of a text view is the prompt once the shell has drawn it after the last command.
fn settled(f: &mut Fugue, pane: &str) {
    f.call("fugue_exec", json!({"pane_id": pane, "command": ":"}));
}

#[test]
fn a_watched_pane_shows_each_command_once_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("watched-{name}"));
        let mut f = fugue_with(&shell, &home);
        let pane =
            f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
        run_all(&mut f, &pane);
        settled(&mut f, &pane);
        assert_watched(name, &view(&mut f, &pane, "text"), &COMMANDS);
        assert_watched(name, &view(&mut f, &pane, "screen"), &COMMANDS);
    }
}

#[test]
fn a_command_sent_to_a_directory_shows_as_given() {
    let work = Dir::new("watched-cwd");
    let mut f = Fugue::start();
    let pane = ready_shell(&mut f);
    let out = f.call(
        "fugue_exec",
        json!({"pane_id": pane, "command": "echo ENV=from-env", "cwd": work.path_str()}),
    );
    assert_eq!(out["status"], "ok", "{out}");
    let text = view(&mut f, &pane, "text");
    assert_watched("bash", &text, &["echo ENV=from-env"]);
    assert!(!text.contains("cd '"), "the cd fugue adds shows:\n{text}");
}

#[test]
fn a_long_or_multi_line_command_shows_its_first_line() {
    let mut f = Fugue::start();
    let pane = ready_shell(&mut f);
    let out =
        f.call("fugue_exec", json!({"pane_id": pane, "command": "echo ENV=from-env\necho second"}));
    assert_eq!(out["output"], "ENV=from-env\nsecond", "{out}");
    let text = view(&mut f, &pane, "text");
    assert_watched("bash", &text, &["echo ENV=from-env …"]);
    assert!(text.lines().any(|l| l == "second"), "{text}");
}

/// Pipeline steps run in the steps' shell (fish users' in /bin/sh); the kept pane shows them.
#[test]
fn a_watched_pipeline_shows_its_steps_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let home = Dir::new(&format!("watched-steps-{name}"));
        let mut f = fugue_with(&shell, &home);
        let steps: Vec<Value> = COMMANDS.iter().map(|c| json!({"command": c})).collect();
        let out = run_pipeline(&mut f, json!({"commands": steps, "cleanup": false}));
        assert_eq!(out["status"], "completed", "{name}: {out}");
        let pane = out["pane_id"].as_str().unwrap().to_string();
        f.expect(&pane, "ran 2");
        assert_watched(name, &view(&mut f, &pane, "text"), &COMMANDS);
    }
}

/// Typed before the shell has drawn its prompt, the line is echoed by the terminal, then again by
/// the line editor, and dash glues the first output line to the prompt. Under load the prompt takes
/// longest to draw: every round must still show each command once.
#[test]
fn a_watched_pane_shows_each_command_once_under_load() {
    let _load = BusyLoops::in_sessions(3);
    for (name, shell) in installed(&["bash", "dash", "zsh", "mksh"]) {
        let home = Dir::new(&format!("watched-load-{name}"));
        let mut f = fugue_with(&shell, &home);
        for round in 0..4 {
            let pane =
                f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
            run_all(&mut f, &pane);
            settled(&mut f, &pane);
            assert_watched(
                &format!("{name} round {round}"),
                &view(&mut f, &pane, "text"),
                &COMMANDS,
            );
        }
    }
}
