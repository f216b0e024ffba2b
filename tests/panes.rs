//! Pane tests: the ten pane tools against real shells in real PTYs.

use crate::util::*;
use serde_json::{Value, json};
use std::time::Duration;

fn pid_of(f: &mut Fugue, pane: &str) -> u32 {
    f.call("fugue_get_status", json!({"pane_id": pane}))["pid"].as_u64().unwrap() as u32
}

#[test]
fn a_command_pane_keeps_its_output_and_exit_code() {
    let mut f = Fugue::start();
    let pane = f.pane("printf 'héllo\\nworld'; exit 3");
    let status = f.wait_exit(&pane);
    assert_eq!(status["exit_code"], 3);
    assert_eq!(status["signal"], Value::Null);
    assert_eq!(f.text(&pane), "héllo\nworld");
    let out = f.call("fugue_get_output", json!({"pane_id": pane}));
    assert_eq!((out["status"].as_str(), out["exit_code"].as_i64()), (Some("exited"), Some(3)));
    // Input to an exited pane is refused clearly.
    let e = f.call_err("fugue_send_input", json!({"pane_id": pane, "input": "x"}));
    assert_eq!(e["code"], "pane_exited");
}

#[test]
fn a_signal_death_is_reported_as_the_signal() {
    let mut f = Fugue::start();
    let pane = f.pane("kill -9 $$");
    let status = f.wait_exit(&pane);
    assert_eq!(status["exit_code"], Value::Null);
    assert_eq!(status["signal"], "SIGKILL");
}

#[test]
fn an_interactive_shell_takes_input_and_submit() {
    let mut f = Fugue::start();
    let pane = f.shell();
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo $((6*7))", "submit": true}),
    );
    assert_eq!(sent["bytes"], 14);
    let found = f.call(
        "fugue_expect",
        json!({"pane_id": pane, "pattern": "^42$", "since": sent["offset"], "timeout_ms": 20000}),
    );
    assert_eq!(found["status"], "matched");
    assert_eq!(found["line"], "42");
    // Output since the input holds the echo and the answer, nothing before.
    let out = f.call("fugue_get_output", json!({"pane_id": pane, "since": sent["offset"]}));
    let text = out["output"].as_str().unwrap();
    assert!(text.contains("echo $((6*7))") && text.contains("\n42"), "{text:?}");
}

#[test]
fn named_keys_reach_the_program() {
    let mut f = Fugue::start();
    let pane = f.shell();
    // Ctrl-C interrupts a running command; the shell survives and answers again.
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "sleep 1000", "keys": ["Enter"]}));
    let sleep_pid = wait_for_child(&mut f, &pane, "sleep");
    let interrupt = f.call("fugue_send_input", json!({"pane_id": pane, "keys": ["C-c"]}));
    assert!(gone_within(sleep_pid, PATIENCE), "C-c did not interrupt sleep");
    // The shell is back when it prompts again.
    f.expect_since(&pane, r"^[$#%>]$", &interrupt["offset"]);
    let sent = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo still-$((1+1))", "keys": ["Enter"]}),
    );
    let still = f.expect_since(&pane, "^still-2$", &sent["offset"]);
    // And its prompt after it: what is typed before the prompt shows would land on its line.
    f.expect_since(&pane, r"^[$#%>]$", &still["offset"]);
    // Tab and Backspace are real keys too: "ecx<BS>ho" runs echo.
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "ecx", "keys": ["Backspace"]}));
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "ho typed-ok", "submit": true}));
    f.expect_since(&pane, "^typed-ok$", &sent["offset"]);
    let e = f.call_err("fugue_send_input", json!({"pane_id": pane, "keys": ["Hyper"]}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_send_input", json!({"pane_id": pane}));
    assert_eq!(e["code"], "invalid_argument");
}

/// `keys` mixes key names and text in the order given: one call takes vim from insert mode through
/// `:wq` to the saved file (issue 25 §2). vim's screen is waited on first, so nothing typed
/// reaches it before it reads the terminal.
#[test]
fn keys_and_text_go_in_the_order_given() {
    if !have("vim") {
        return;
    }
    let dir = Dir::new("keys-vim");
    let file = dir.join("notes.txt");
    let mut f = Fugue::start();
    let pane = f.pane(&format!("vim -u NONE -N {}", file.display()));
    let shown = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!(shown["status"], "input", "{shown}");
    f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "ihello from fugue",
               "keys": ["Escape", {"text": ":wq"}, "Enter"]}),
    );
    let ended = f.wait_exit(&pane);
    assert_eq!(ended["exit_code"], 0, "{ended}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello from fugue\n");
}

/// A `keys` item that is neither a key name nor `{"text": ...}` is refused, named, and nothing of
/// the call is typed.
#[test]
fn a_bad_keys_item_is_refused_by_name_and_nothing_is_typed() {
    let mut f = Fugue::start();
    let pane = f.pane("cat");
    let bad = [
        (json!({"txt": "x"}), "keys[1] is {\"txt\":\"x\"}"),
        (json!(5), "keys[1] is 5"),
        (json!({"text": 7}), "keys[1] is {\"text\":7}"),
        (json!("Hyper"), "\"Hyper\""),
    ];
    for (item, named) in bad {
        let e = f.call_err(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "typed", "keys": [{"text": "more"}, item, "Enter"]}),
        );
        assert_eq!(e["code"], "invalid_argument", "{e}");
        assert!(e["message"].as_str().unwrap().contains(named), "{named}: {e}");
    }
    // cat echoes what reaches it; a marker typed now arrives alone.
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "marker", "submit": true}));
    f.expect_since(&pane, "^marker$", &json!(0));
    assert!(!f.text(&pane).contains("typed"), "{}", f.text(&pane));
    assert!(sent["bytes"].as_u64() == Some(7), "{sent}");
}

/// Finds the pid of a child named `name` under the pane's shell, waiting on /proc (the child is
/// started by the shell asynchronously, after our input).
fn wait_for_child(f: &mut Fugue, pane: &str, name: &str) -> u32 {
    let shell = pid_of(f, pane);
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let comm = stat.split('(').nth(1).and_then(|s| s.split(')').next()).unwrap_or("");
            let ppid: u32 = stat
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            if ppid == shell && comm == name {
                return pid;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no {name} child appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn text_view_resolves_redraws_and_raw_keeps_bytes() {
    let mut f = Fugue::start();
    let pane = f.pane("printf 'progress 10%%\\rprogress 100%%\\n\\033[1;32mgreen\\033[0m\\n'");
    f.wait_exit(&pane);
    assert_eq!(f.text(&pane), "progress 100%\ngreen");
    let raw = f.call("fugue_get_output", json!({"pane_id": pane, "format": "raw"}));
    let raw = raw["output"].as_str().unwrap();
    assert!(raw.contains("\r") && raw.contains("\u{1b}[1;32m"), "{raw:?}");
}

#[test]
fn screen_view_shows_the_grid_and_cursor() {
    let mut f = Fugue::start();
    let pane = f.pane("printf 'top\\nsecond\\033[1;1HT'; sleep 30");
    f.expect(&pane, "econd");
    let screen = f.call("fugue_get_output", json!({"pane_id": pane, "format": "screen"}));
    assert_eq!(screen["output"], "Top\nsecond");
    assert_eq!(screen["cursor"], json!({"row": 0, "col": 1}));
}

/// `lines` bounds the screen view too: the last rows of the grid, down to its last non-blank one;
/// the default shows a whole screen.
#[test]
fn screen_view_gives_the_last_lines_rows() {
    let mut f = Fugue::start();
    let pane = f.pane("seq 1 30; sleep 30");
    f.expect(&pane, "^30$");
    let rows = |f: &mut Fugue, mut args: Value| {
        args["pane_id"] = json!(pane);
        args["format"] = json!("screen");
        f.call("fugue_get_output", args)
    };
    let last = rows(&mut f, json!({"lines": 3}));
    assert_eq!(
        (&last["output"], &last["truncated"]),
        (&json!("28\n29\n30"), &json!(true)),
        "{last}"
    );
    assert_eq!(last["cursor"], json!({"row": 23, "col": 0}), "{last}");
    let whole = rows(&mut f, json!({}));
    let want: Vec<String> = (8..=30).map(|n| n.to_string()).collect();
    assert_eq!(whole["output"], want.join("\n"), "{whole}");
    assert_eq!(whole["truncated"], false, "{whole}");
}

#[test]
fn lines_max_bytes_and_since_bound_the_output() {
    let mut f = Fugue::start();
    let pane = f.pane("seq 1 1000");
    f.wait_exit(&pane);
    let tail = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 3}));
    assert_eq!(tail["output"], "998\n999\n1000");
    assert_eq!(tail["truncated"], true);
    let small =
        f.call("fugue_get_output", json!({"pane_id": pane, "lines": 1000, "max_bytes": 10}));
    assert_eq!(small["output"], "1000");
    assert_eq!((&small["truncated"], &small["omitted"]["lines"]), (&json!(true), &json!(999)));
    // Paging forward with since loses nothing.
    let mut since = 0;
    let mut seen = Vec::new();
    loop {
        let page =
            f.call("fugue_get_output", json!({"pane_id": pane, "since": since, "lines": 300}));
        seen.extend(page["output"].as_str().unwrap().lines().map(str::to_string));
        since = page["offset"].as_u64().unwrap();
        if page["truncated"] == false {
            break;
        }
    }
    let expected: Vec<String> = (1..=1000).map(|n| n.to_string()).collect();
    assert_eq!(seen, expected);
    let e = f.call_err("fugue_get_output", json!({"pane_id": pane, "since": 99_999_999}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_get_output", json!({"pane_id": pane, "format": "html"}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_get_output", json!({"pane_id": pane, "lines": 0}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_get_output", json!({"pane_id": pane, "max_bytes": 100_000_000}));
    assert_eq!(e["code"], "invalid_argument");
}

#[test]
fn get_output_answers_within_the_answers_budget_and_says_what_it_left_out() {
    // A long log read back: by default no more than any other answer (3,584 bytes of output),
    // its end and its error line kept, the gaps marked and counted, in text and in raw.
    let mut f = Fugue::start();
    let log = "for i in $(seq 1 2000); do \
               if [ $i = 900 ]; then echo 'error: the line that matters'; \
               else echo \"step $i of the packaging log, copying files and more files\"; fi; done";
    let pane = f.pane(log);
    f.wait_exit(&pane);
    for format in ["text", "raw"] {
        let read =
            f.call("fugue_get_output", json!({"pane_id": pane, "lines": 2000, "format": format}));
        let output = read["output"].as_str().unwrap();
        assert!(output.len() <= 3584, "{format}: {} bytes", output.len());
        assert!(output.contains("error: the line that matters"), "{format}: {output}");
        assert!(output.contains("step 2000 of"), "{format}: {output}");
        assert!(output.contains("[… "), "{format}: a gap is marked: {output}");
        let omitted = read["omitted"]["lines"].as_u64().unwrap();
        assert!(omitted > 1900, "{format}: {read}");
        // Where the first line left out is, to read on from.
        let since = read["omitted"]["since"].clone();
        let first =
            f.call("fugue_get_output", json!({"pane_id": pane, "since": since, "lines": 1}));
        assert!(first["output"].as_str().unwrap().starts_with("step "), "{format}: {first}");
        assert!(first["omitted"]["lines"].as_u64().unwrap() > 1000, "{format}: {first}");
    }
    // max_bytes asks for more.
    let more =
        f.call("fugue_get_output", json!({"pane_id": pane, "lines": 300, "max_bytes": 65536}));
    assert_eq!(more["output"].as_str().unwrap().lines().count(), 300, "{more}");
    assert!(more.get("omitted").is_none(), "{more}");
}

#[test]
fn utf8_split_across_reads_comes_out_whole() {
    let mut f = Fugue::start();
    // Each byte of the multi-byte characters is printed by a separate write.
    let pane = f.pane(r"for b in '\303' '\251' '\342' '\234' '\223' '\360' '\237' '\216' '\211'; do printf $b; sleep 0.01; done; echo");
    f.wait_exit(&pane);
    assert_eq!(f.text(&pane), "é✓🎉");
}

#[test]
fn scrollback_is_bounded_and_offsets_stay_valid() {
    let mut f = Fugue::start_with(&[("FUGUE_SCROLLBACK_BYTES", "65536")]);
    let pane = f.pane("seq 1 100000");
    f.wait_exit(&pane);
    let tail = f.call("fugue_get_output", json!({"pane_id": pane, "lines": 2}));
    assert_eq!(tail["output"], "99999\n100000");
    let end = tail["offset"].as_u64().unwrap();
    assert_eq!(end, (1..=100000u64).map(|n| n.to_string().len() as u64 + 2).sum::<u64>());
    let old = f.call("fugue_get_output", json!({"pane_id": pane, "since": 0, "lines": 1}));
    assert_eq!(old["dropped"], true);
}

#[test]
fn pane_environment_defaults_and_overrides() {
    let mut f = Fugue::start();
    let created = f.call("fugue_create_session", json!({
        "command": "echo \"$TERM|$PAGER|$GIT_PAGER|$GIT_TERMINAL_PROMPT|$FUGUE_PANE_ID|$FUGUE_SESSION_ID|$MINE\"",
        "env": {"MINE": "x y", "PAGER": "less"},
    }));
    let pane = created["pane_id"].as_str().unwrap();
    f.wait_exit(pane);
    let expected =
        format!("xterm-256color|less|cat|0|{pane}|{}|x y", created["session_id"].as_str().unwrap());
    assert_eq!(f.text(pane), expected);
    let e =
        f.call_err("fugue_create_session", json!({"command": "true", "env": {"BAD-NAME": "x"}}));
    assert_eq!(e["code"], "invalid_argument");
    let e = f.call_err("fugue_create_session", json!({"command": "true", "env": {"A": 1}}));
    assert_eq!(e["code"], "invalid_argument");
}

/// A relative `cwd` is taken from fugue's working directory and reported as the absolute path the
/// pane runs in, in fugue_get_status and fugue_list_sessions alike.
#[test]
fn a_relative_cwd_is_reported_as_an_absolute_path() {
    let dir = Dir::new("relcwd");
    std::fs::create_dir_all(dir.join("proj")).unwrap();
    let mut cmd = Fugue::command(&[]);
    cmd.current_dir(&dir.path);
    let mut f = Fugue::spawn_command(cmd);
    f.handshake();
    let created = f.call("fugue_create_session", json!({"command": "pwd", "cwd": "proj"}));
    let pane = created["pane_id"].as_str().unwrap();
    f.wait_exit(pane);
    let proj = dir.join("proj");
    let proj = proj.to_str().unwrap();
    assert_eq!(f.text(pane), proj, "the pane ran in fugue's proj");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["cwd"], proj, "{status}");
    let list = f.call("fugue_list_sessions", json!({}));
    assert_eq!(list["sessions"][0]["windows"][0]["panes"][0]["cwd"], proj, "{list}");
}

#[test]
fn cwd_is_used_and_a_bad_one_is_refused() {
    let mut f = Fugue::start();
    let dir = Dir::new("cwd");
    let created = f.call("fugue_create_session", json!({"command": "pwd", "cwd": dir.path_str()}));
    let pane = created["pane_id"].as_str().unwrap();
    f.wait_exit(pane);
    assert_eq!(f.text(pane), dir.path_str());
    let e = f.call_err("fugue_create_session", json!({"command": "pwd", "cwd": "/no/such/dir"}));
    assert_eq!(e["code"], "bad_cwd");
    let file = dir.write("file", "x");
    let e = f.call_err("fugue_create_session", json!({"command": "pwd", "cwd": path_str(&file)}));
    assert_eq!(e["code"], "bad_cwd");
    // Nothing was left behind by the failures.
    let list = f.call("fugue_list_sessions", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn a_missing_program_exits_127_with_the_shells_message() {
    let mut f = Fugue::start();
    let pane = f.pane("no-such-program-xyz");
    let status = f.wait_exit(&pane);
    assert_eq!(status["exit_code"], 127);
    assert!(f.text(&pane).contains("no-such-program-xyz"));
}

#[test]
fn sessions_windows_and_panes_nest_and_names_work_as_ids() {
    let mut f = Fugue::start();
    let s = f.call("fugue_create_session", json!({"name": "work"}));
    let w = f.call("fugue_create_window", json!({"session_id": "work", "name": "build"}));
    let p = f.call("fugue_create_pane", json!({"session_id": "work", "window_id": "build", "name": "tests", "command": "sleep 100"}));
    let e = f.call_err("fugue_create_session", json!({"name": "work"}));
    assert_eq!(e["code"], "name_taken");
    let e = f.call_err(
        "fugue_create_pane",
        json!({"session_id": "work", "window_id": "build", "name": "tests"}),
    );
    assert_eq!(e["code"], "name_taken");
    let e = f.call_err("fugue_create_window", json!({"session_id": "nope"}));
    assert_eq!(e["code"], "session_not_found");
    let e = f.call_err("fugue_create_pane", json!({"session_id": "work", "window_id": "nope"}));
    assert_eq!(e["code"], "window_not_found");

    let list = f.call("fugue_list_sessions", json!({}));
    let session = &list["sessions"][0];
    assert_eq!(session["id"], s["session_id"]);
    assert_eq!(session["name"], "work");
    let windows = session["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 2);
    assert_eq!(windows[1]["id"], w["window_id"]);
    let panes = windows[1]["panes"].as_array().unwrap();
    assert_eq!(panes.len(), 2);
    assert_eq!(panes[1]["id"], p["pane_id"]);
    assert_eq!(panes[1]["name"], "tests");
    assert_eq!(panes[1]["status"], "running");
    // Two panes share the window side by side.
    let (c0, c1) = (panes[0]["cols"].as_u64().unwrap(), panes[1]["cols"].as_u64().unwrap());
    assert!(c0 + c1 < 80 && panes[0]["rows"] == 24, "{panes:?}");
    // The pane name works wherever a pane id does.
    let status = f.call("fugue_get_status", json!({"pane_id": "tests"}));
    assert_eq!(status["pane_id"], p["pane_id"]);
    assert_eq!(status["window_id"], w["window_id"]);
    assert_eq!(status["command"], "sleep 100");
}

#[test]
fn resize_reaches_the_program() {
    let mut f = Fugue::start();
    let pane = f.shell();
    let r = f.call("fugue_resize_pane", json!({"pane_id": pane, "rows": 33, "cols": 111}));
    assert_eq!((r["rows"].as_u64(), r["cols"].as_u64()), (Some(33), Some(111)));
    let sent =
        f.call("fugue_send_input", json!({"pane_id": pane, "input": "stty size", "submit": true}));
    f.expect_since(&pane, "^33 111$", &sent["offset"]);
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!((status["rows"].as_u64(), status["cols"].as_u64()), (Some(33), Some(111)));
    for bad in
        [json!({"rows": 1, "cols": 80}), json!({"rows": 24, "cols": 5000}), json!({"rows": 24})]
    {
        let mut args = bad.clone();
        args["pane_id"] = json!(pane);
        assert_eq!(f.call_err("fugue_resize_pane", args)["code"], "invalid_argument", "{bad}");
    }
}

#[test]
fn closing_a_pane_ends_its_whole_session_of_processes() {
    let mut f = Fugue::start();
    let dir = Dir::new("close");
    let pidfile = dir.join("bg.pid");
    // A background job in its own process group that ignores hang-up and terminate.
    let pane = f.shell();
    let cmd = format!(
        "set -m; (trap '' HUP TERM; exec sleep 1000) & echo $! > {}; echo started",
        path_str(&pidfile)
    );
    let sent = f.call("fugue_send_input", json!({"pane_id": pane, "input": cmd, "submit": true}));
    f.expect_since(&pane, "^started$", &sent["offset"]);
    let bg: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let shell = pid_of(&mut f, &pane);
    assert!(alive(bg));
    let closed = f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert_eq!(closed["closed"], true);
    assert!(gone_within(shell, Duration::from_secs(3)));
    assert!(gone_within(bg, Duration::from_secs(3)), "the background job survived the close");
    let e = f.call_err("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(e["code"], "pane_not_found");
    // The emptied session is gone too.
    assert_eq!(f.call("fugue_list_sessions", json!({}))["sessions"], json!([]));
}

#[test]
fn close_session_closes_every_pane() {
    let mut f = Fugue::start();
    f.call("fugue_create_session", json!({"name": "s", "command": "sleep 1000"}));
    f.call("fugue_create_window", json!({"session_id": "s", "command": "sleep 1000"}));
    f.call("fugue_create_window", json!({"session_id": "s"}));
    let list = f.call("fugue_list_sessions", json!({}));
    let pids: Vec<u32> = list["sessions"][0]["windows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| {
            w["panes"].as_array().unwrap().iter().map(|p| p["pid"].as_u64().unwrap() as u32)
        })
        .collect();
    assert_eq!(pids.len(), 3);
    let closed = f.call("fugue_close_session", json!({"session_id": "s"}));
    assert_eq!(closed["closed"], 3);
    for pid in pids {
        assert!(gone_within(pid, Duration::from_secs(3)), "pid {pid} survived");
    }
    assert_eq!(
        f.call_err("fugue_close_session", json!({"session_id": "s"}))["code"],
        "session_not_found"
    );
}

#[test]
fn exited_panes_leave_no_zombies() {
    let mut f = Fugue::start();
    let panes: Vec<String> = (0..5).map(|i| f.pane(&format!("exit {i}"))).collect();
    for (i, pane) in panes.iter().enumerate() {
        assert_eq!(f.wait_exit(pane)["exit_code"], i as u64);
    }
    let fugue = f.pid();
    let zombies: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
            rest[0] == "Z" && rest[1] == fugue.to_string()
        })
        .collect();
    assert!(zombies.is_empty(), "{zombies:?}");
}

#[test]
fn a_program_asking_for_the_cursor_position_gets_an_answer() {
    let mut f = Fugue::start();
    // Ask the terminal where the cursor is, and print what came back.
    let pane = f.pane(r#"stty raw -echo; printf 'ab\033[6n'; reply=$(dd bs=1 count=6 2>/dev/null | od -c | head -1); stty sane; echo; echo "got:$reply""#);
    let found = f.expect(&pane, "got:");
    assert!(found["line"].as_str().unwrap().contains("[   1   ;   3   R"), "{found}");
}

#[test]
fn screen_view_says_when_a_program_is_on_the_alternate_screen() {
    let mut f = Fugue::start();
    let pane = f.pane("echo before; printf '\\033[?1049h'; echo on-alt; sleep 30");
    let screen = f.screen_until(&pane, "on-alt");
    assert_eq!(screen["alternate_screen"], true);
    assert_eq!(screen["output"], "on-alt");
    let plain = f.pane("echo plain; sleep 30");
    f.expect(&plain, "plain");
    let screen = f.call("fugue_get_output", json!({"pane_id": plain, "format": "screen"}));
    assert_eq!(screen.get("alternate_screen"), None);
}

#[test]
fn a_listing_of_many_panes_scans_the_processes_once() {
    // Finding what each pane's program waits for needs the members of its process group, which
    // only a scan of every process gives; when one scan took longer than its reuse window, each
    // pane made its own and 200 panes took a second to list. Counted, not timed: fugue logs each
    // look and each scan at debug level.
    const PANES: usize = 30;
    let mut cmd = Fugue::command(&[("FUGUE_LOG", "debug")]);
    cmd.stderr(std::process::Stdio::piped());
    let mut f = Fugue::spawn_command(cmd);
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let (stderr, log) = (f.child.stderr.take().unwrap(), log.clone());
        let lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
        std::thread::spawn(move || {
            lines.map_while(Result::ok).for_each(|l| log.lock().unwrap().push(l))
        })
    };
    f.handshake();
    f.call("fugue_create_session", json!({"name": "many", "command": "sleep 600"}));
    for _ in 1..PANES {
        f.call("fugue_create_window", json!({"session_id": "many", "command": "sleep 600"}));
    }
    let looks =
        |log: &[String]| log.iter().filter(|l| l.contains("activity probe of pane")).count();
    // A pane is looked at once it has printed nothing for a moment; list until every one was.
    let mut listings = 0;
    wait_until("a look at every pane", || {
        listings += 1;
        let listed = f.call("fugue_list_sessions", json!({}));
        assert_eq!(all_panes_of(&listed), PANES, "{listed}");
        looks(&log.lock().unwrap()) >= PANES
    });
    f.close_stdin();
    reader.join().unwrap();
    let log = log.lock().unwrap();
    let scans = log.iter().filter(|l| l.contains("one scan of every process")).count();
    assert!(looks(&log) >= PANES, "{} looks", looks(&log));
    assert!(scans <= listings, "{scans} scans of every process in {listings} listings");
}

fn all_panes_of(listed: &Value) -> usize {
    let windows = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["windows"].as_array().unwrap());
    windows.map(|w| w["panes"].as_array().unwrap().len()).sum()
}
