//! What the text view holds and what fugue_expect returns from it: output after `since` only, and
//! the main screen's history only; while a full-screen program shows the alternate screen, that
//! screen is matchable too, and once it leaves, its drawing is gone for both.

use crate::util::*;
use serde_json::{Value, json};

/// `return_output` with `since` returns what came after `since`, not the pane's last lines.
#[test]
fn return_output_with_since_holds_only_what_came_after_it() {
    let mut f = Fugue::start();
    let pane = f.shell();
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo early-$((6*7))", "submit": true}),
    );
    let early = f.expect(&pane, "^early-42$");
    // The next prompt first: a line typed before it shows would be echoed ahead of it.
    f.expect_since(&pane, r"^[$#%>]$", &early["offset"]);
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
    // Waiting while the program draws: what its screen shows matches, as on that screen.
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^SECXRET drawn$", "since": sent["offset"],
               "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{found}");
    assert_eq!(found["alternate_screen"], true, "{found}");
    // Once it has left, the main screen's history goes on without the drawing.
    f.expect_since(&pane, "^after-42$", &sent["offset"]);
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

/// Whether `program` runs here; a skip message when it does not.
fn present(program: &str) -> bool {
    let found = find_shell(program).is_some();
    if !found {
        crate::util::skip(program, "not installed");
    }
    found
}

/// Starts `command` in a fresh shell pane in `dir` and waits with `pattern` for what it shows on
/// the alternate screen: the match must be there, marked as that screen.
fn expect_on_screen(f: &mut Fugue, dir: &Dir, command: &str, pattern: &str) -> (String, Value) {
    let created = f.call("fugue_create_session", json!({"cwd": dir.path_str()}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": command, "submit": true}));
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": pattern, "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched", "{command}: {found}");
    assert_eq!(found["alternate_screen"], true, "{command}: {found}");
    (pane, found)
}

/// While a full-screen program runs, `fugue_expect` sees what its screen shows: a printf program,
/// vim, less, and a command run in a tmux started inside the pane.
#[test]
fn expect_matches_what_a_full_screen_program_shows_while_it_shows_it() {
    let dir = Dir::new("alt-expect");
    dir.write("notes.txt", "inside-the-buffer\n");
    dir.write("long.txt", &(1..=200).map(|i| format!("row-{i}\n")).collect::<String>());
    let mut f = Fugue::start();
    let printf = "printf '\\033[?1049h\\033[H'; echo ALT-CONTENT; sleep 30";
    let (pane, found) = expect_on_screen(&mut f, &dir, printf, "^ALT-CONTENT$");
    assert_eq!(found["line"], "ALT-CONTENT", "{found}");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    if present("vim") {
        let (pane, found) = expect_on_screen(&mut f, &dir, VIM, "^inside-the-buffer$");
        assert_eq!(found["match"], "inside-the-buffer", "{found}");
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
    if present("less") {
        let (pane, _) = expect_on_screen(&mut f, &dir, "less long.txt", "^row-3$");
        // Paging on redraws the screen; the new rows match as they show.
        let sent = f.call("fugue_send_input", json!({"pane_id": pane, "input": "G"}));
        let end = f.call(
            "fugue_expect",
            json!({"pane_id": pane, "pattern": "^row-200$", "since": sent["offset"],
                   "timeout_ms": 20000}),
        );
        assert_eq!(end["alternate_screen"], true, "{end}");
        f.call("fugue_close_pane", json!({"pane_id": pane}));
    }
    if present("tmux") {
        let socket = dir.join("tmux.sock");
        let tmux = format!(
            "tmux -S {} -f /dev/null new-session 'echo INNER-$((6*7)); sleep 30'",
            socket.display()
        );
        let (pane, found) = expect_on_screen(&mut f, &dir, &tmux, "^INNER-42$");
        assert_eq!(found["line"], "INNER-42", "{found}");
        f.call("fugue_close_pane", json!({"pane_id": pane}));
        let _ = std::process::Command::new("tmux")
            .args(["-S", path_str(&socket), "kill-server"])
            .output();
    }
}

/// vim without the user's configuration or history.
const VIM: &str = "vim -u NONE -N -i NONE notes.txt";

/// Real vim: while it runs the screen view shows its buffer; once it exits, nothing it drew is in
/// the text view or can be matched there.
#[test]
fn vim_leaves_nothing_in_the_text_view() {
    if std::process::Command::new("vim").arg("--version").output().is_err() {
        crate::util::skip("vim", "not installed");
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

/// Rows the way an answer shows a screen, markers expanded: `[N blank rows]` is N empty rows and
/// `ROW [×N]` is ROW N times.
fn expand_rows(shown: &str) -> Vec<String> {
    let mut rows = Vec::new();
    for line in shown.split('\n') {
        let blank = line.strip_prefix('[').and_then(|l| l.strip_suffix(" blank rows]"));
        if let Some(n) = blank.and_then(|n| n.parse::<usize>().ok()) {
            rows.extend(std::iter::repeat_n(String::new(), n));
        } else if let Some((row, n)) = line
            .rsplit_once(" [×")
            .and_then(|(row, rest)| Some((row, rest.strip_suffix(']')?.parse::<usize>().ok()?)))
        {
            rows.extend(std::iter::repeat_n(row.to_string(), n));
        } else {
            rows.push(line.to_string());
        }
    }
    rows
}

/// Issue 23 item 6: `git commit -a` opens vim on a message whose first line, where the message
/// goes, is empty. The `input` answer is vim's screen with every row in its place: the empty first
/// row first, the `~` filler collapsed into one marker, and as many rows as the pane has. The
/// screen view of `fugue_get_output` shows it the same way.
#[test]
fn an_editor_screen_keeps_its_blank_rows_in_place() {
    // `&`, not `&&`: each missing program is named.
    if !(crate::util::have("vim") & crate::util::have("git")) {
        return;
    }
    let dir = Dir::new("vim-commit");
    let repo = git_repo(&dir);
    std::fs::write(repo.join("README.md"), "changed\n").unwrap();
    let mut f = Fugue::start_with(&GIT_ENV);
    let command = "GIT_EDITOR='vim -u NONE -N -i NONE' git commit -a";
    let asked = f.call(
        "fugue_exec",
        json!({"command": command, "cwd": path_str(&repo), "timeout_ms": 20000}),
    );
    assert_eq!(asked["status"], "input", "{asked}");
    assert_eq!(asked["alternate_screen"], true, "{asked}");
    let output = asked["output"].as_str().unwrap();
    eprintln!(
        "input answer: {} bytes of output, {} bytes in all",
        output.len(),
        asked.to_string().len()
    );
    let rows = expand_rows(output);
    assert_eq!(rows[0], "", "the message's empty first line is row 0: {output:?}");
    assert!(rows[1].starts_with("# Please enter the commit message"), "{output:?}");
    assert_eq!(rows.len(), 24, "every row of the 24-row pane, in place: {output:?}");
    assert!(rows[23].contains("COMMIT_EDITMSG"), "vim's status line is the last row: {output:?}");
    assert!(
        output.lines().any(|l| l.starts_with("~ [×")),
        "the ~ filler rows are one marker: {output:?}"
    );
    let screen =
        f.call("fugue_get_output", json!({"pane_id": asked["pane_id"], "format": "screen"}));
    assert_eq!(screen["output"], output, "{screen}");
    f.call(
        "fugue_send_input",
        json!({"pane_id": asked["pane_id"], "input": ":cq", "submit": true}),
    );
}
