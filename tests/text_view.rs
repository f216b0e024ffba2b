//! What the text view holds and what fugue_expect returns from it: output after `since` only, and
//! the main screen only (a full-screen program's alternate screen is for the screen view).

use crate::util::*;
use serde_json::json;

/// `return_output` with `since` returns what came after `since`, not the pane's last lines.
#[test]
fn return_output_with_since_holds_only_what_came_after_it() {
    let mut f = Fugue::start();
    let pane = f.shell();
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo early-$((6*7))", "submit": true}),
    );
    f.expect(&pane, "^early-42$");
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo late-$((6*7))", "submit": true}),
    );
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^late-42$", "since": sent["offset"],
               "action": "return_output", "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    let output = found["output"].as_str().unwrap();
    assert!(output.contains("late-42"), "{found}");
    assert!(!output.contains("early"), "output from before `since` came back: {output:?}");

    // Bounded by `lines` all the same: the last of what came after `since`.
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "seq 1 50; echo done-$((6*7))", "submit": true}),
    );
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^done-42$", "since": sent["offset"], "lines": 3,
               "action": "return_output", "timeout_ms": 20000}),
    );
    let output = found["output"].as_str().unwrap();
    assert!(output.lines().count() <= 3, "{output:?}");
    assert!(output.contains("done-42") && !output.contains("late"), "{output:?}");
}

/// A program that draws on the alternate screen, in separate reads (so a wait that already
/// scanned the switch sees the drawing in a later step), then returns to the shell.
const ALT_PROGRAM: &str = "printf 'main-%s\\n' one; printf '\\033[?1049h\\n'; sleep 0.2; \
                           printf 'SEC%sRET drawn\\n' X; sleep 0.2; printf '\\033[?1049l'; \
                           echo after-$((6*7))";

#[test]
fn the_text_view_leaves_out_the_alternate_screen() {
    let mut f = Fugue::start();
    let pane = f.shell();
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": ALT_PROGRAM, "submit": true}));
    // Waiting while the program draws: only the main screen's line can match.
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "SECXRET|^after-42$", "since": sent["offset"],
               "action": "return_output", "timeout_ms": 20000}),
    );
    assert_eq!(found["match"], "after-42", "the alternate screen matched: {found}");
    assert!(!found["output"].as_str().unwrap().contains("SECXRET"), "{found}");
    let text = f.text(&pane);
    assert!(text.contains("main-one") && text.contains("after-42"), "{text}");
    assert!(!text.contains("SECXRET"), "the alternate screen is in the text view: {text}");
    // Read forward from before the switch, too.
    let read = f
        .call("fugue_get_output", json!({"pane_id": pane, "since": sent["offset"], "lines": 1000}));
    assert!(!read["output"].as_str().unwrap().contains("SECXRET"), "{read}");
    // And a later wait over the whole backlog does not find it either.
    let missed = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "SECXRET", "since": 0, "timeout_ms": 300}),
    );
    assert_eq!(missed["status"], "timeout", "{missed}");
    // The raw view keeps every byte.
    let raw = f.call("fugue_get_output", json!({"pane_id": pane, "format": "raw", "lines": 1000}));
    assert!(raw["output"].as_str().unwrap().contains("SECXRET"), "{raw}");
}

/// vim without the user's configuration or history.
const VIM: &str = "vim -u NONE -N -i NONE notes.txt";

/// Real vim: while it runs the screen view shows its buffer; once it exits, nothing it drew is in
/// the text view or can be matched there.
#[test]
fn vim_leaves_nothing_in_the_text_view() {
    if std::process::Command::new("vim").arg("--version").output().is_err() {
        eprintln!("skipped: vim not installed");
        return;
    }
    let dir = Dir::new("vim");
    dir.write("notes.txt", "inside-the-buffer\n");
    let mut f = Fugue::start();
    let created = f.call("fugue_create_session", json!({"cwd": dir.path_str()}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    f.expect(&pane, r"[$#%>]$");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": VIM, "submit": true}));
    let screen = f.screen_until(&pane, "inside-the-buffer");
    assert_eq!(screen["alternate_screen"], true, "{screen}");
    let quit = f.call("fugue_send_input", json!({"pane_id": pane, "input": ":wq", "submit": true}));
    // The shell's prompt again; what vim drew, its own prompt line included, cannot match.
    f.expect_since(&pane, r"[$#%>]$", &quit["offset"]);
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo back-$((6*7))", "submit": true}),
    );
    f.expect(&pane, "^back-42$");
    let text = f.text(&pane);
    assert!(text.contains("vim -u NONE"), "{text}");
    for drawn in ["inside-the-buffer", "written"] {
        assert!(!text.contains(drawn), "vim's {drawn:?} is in the text view: {text}");
    }
    let missed = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "inside-the-buffer", "since": 0, "timeout_ms": 300}),
    );
    assert_eq!(missed["status"], "timeout", "{missed}");
}

/// A failed command's `output_tail` is the text view too: when its last lines begin on the
/// alternate screen, what was drawn there is left out.
#[test]
fn an_output_tail_leaves_out_the_alternate_screen() {
    let mut f = Fugue::start();
    let command = "printf '\\033[?1049h'; seq 1 20 | sed 's/^/drawn-/'; printf '\\033[?1049l'; \
                   echo failed-here; exit 3";
    let run = f.call("fugue_run_parallel", json!({"commands": [{"command": command}]}));
    let result = &run["results"][0];
    assert_eq!(result["exit_code"], 3, "{run}");
    let tail = result["output_tail"].as_str().unwrap();
    assert!(tail.contains("failed-here"), "{run}");
    assert!(!tail.contains("drawn-"), "the alternate screen is in output_tail: {tail:?}");
}
