//! `responses`: a dialogue in one call. A program's questions, found by fugue's own input detection,
//! are answered from regex keys given up front — in fugue_exec in every installed shell, in
//! fugue_send_input with wait_ms, in a pipeline step and a parallel command, with real programs
//! (`rm -i`, `git add -p`, `ssh-keygen`'s passphrase, a curses wizard's screens), under load — and
//! the answer lists what was answered, never the text typed. A question no key matches, or a
//! used-up list, is `input` with nothing typed; an invalid key runs nothing. The quiet period is
//! 400 ms here (`exec::fugue_with`).

use crate::exec::{each_shell, each_shell_fugue, find, fugue_with};
use crate::util::{BusyLoops, Dir, git, git_repo};
use serde_json::{Value, json};

/// Five askings: two questions, one asked twice (a list answers it), and a secret read with the
/// terminal's echo off. The script writes what it got to `result`.
const INSTALLER: &str = r#"printf 'Project name: '; read name
printf 'Install to [/opt/app]: '; read dir
printf 'Add a user? [y/n] '; read u1
printf 'Add a user? [y/n] '; read u2
stty -echo; printf 'Admin password: '; read pw; stty echo; printf '\n'
printf '%s|%s|%s%s|%s\n' "$name" "$dir" "$u1" "$u2" "$pw" > result
echo installed
"#;

const SECRET: &str = "s3cret-Pw-7";

fn installer_responses() -> Value {
    json!({
        "Project name": "demo",
        "Install to": "/srv/demo",
        "Add a user\\?": ["y", "n"],
        "(?i)password": SECRET,
    })
}

/// The questions and keys of `answered`, as pairs.
fn answered(answer: &Value) -> Vec<(String, String)> {
    answer["answered"]
        .as_array()
        .unwrap_or_else(|| panic!("no answered: {answer}"))
        .iter()
        .map(|a| (a["question"].as_str().unwrap().into(), a["key"].as_str().unwrap().into()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(q, k)| ((*q).to_string(), (*k).to_string())).collect()
}

fn installer_answered() -> Vec<(String, String)> {
    pairs(&[
        ("Project name:", "Project name"),
        ("Install to [/opt/app]:", "Install to"),
        ("Add a user? [y/n]", "Add a user\\?"),
        ("Add a user? [y/n]", "Add a user\\?"),
        ("Admin password:", "(?i)password"),
    ])
}

/// The secret appears nowhere in what fugue said, and no `answered` entry holds an answer.
fn assert_no_answers_echoed(what: &str, answer: &Value) {
    let text = answer.to_string();
    assert!(!text.contains(SECRET), "{what}: the secret is in the answer: {text}");
    for entry in answer["answered"].as_array().into_iter().flatten() {
        let entry = entry.to_string();
        for typed in ["demo", "/srv/demo", SECRET] {
            assert!(!entry.contains(typed), "{what}: an answer in answered: {entry}");
        }
    }
}

#[test]
fn a_five_question_installer_is_answered_in_one_call_in_every_shell() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-installer-{name}"));
        dir.write("install.sh", INSTALLER);
        let done = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sh install.sh", "cwd": dir.path_str(),
                   "responses": installer_responses(), "timeout_ms": 30000}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert_eq!(answered(&done), installer_answered(), "{name}: {done}");
        let result = std::fs::read_to_string(dir.join("result")).unwrap();
        assert_eq!(result, format!("demo|/srv/demo|yn|{SECRET}\n"), "{name}");
        assert!(done["output"].as_str().unwrap().ends_with("installed"), "{name}: {done}");
        assert_no_answers_echoed(name, &done);
    });
}

#[test]
fn a_python_installer_with_input_and_getpass_is_answered_in_one_call() {
    if find("python3").is_none() {
        return;
    }
    let home = Dir::new("responses-python");
    home.write(
        "install.py",
        "import getpass\n\
         name = input('Name: ')\n\
         port = input('Port [8080]: ')\n\
         tls = [input('Enable TLS? '), input('Enable TLS? ')]\n\
         key = getpass.getpass('Key passphrase: ')\n\
         open('result', 'w').write('|'.join([name, port, ''.join(tls), key]) + '\\n')\n\
         print('done')\n",
    );
    let mut f = fugue_with("/bin/bash", &home);
    let done = f.call(
        "fugue_exec",
        json!({"command": "python3 install.py", "cwd": home.path_str(), "timeout_ms": 30000,
               "responses": {"^Name": "svc", "Port": "9090", "TLS": ["y", "n"],
                             "passphrase": SECRET}}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    let keys: Vec<String> = answered(&done).into_iter().map(|(_, k)| k).collect();
    assert_eq!(keys, ["^Name", "Port", "TLS", "TLS", "passphrase"], "{done}");
    let result = std::fs::read_to_string(home.join("result")).unwrap();
    assert_eq!(result, format!("svc|9090|yn|{SECRET}\n"));
    assert_no_answers_echoed("python", &done);
}

#[test]
fn a_question_no_key_matches_is_input_and_nothing_is_typed() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-nomatch-{name}"));
        dir.write("color.sh", "printf 'Color? '; read c; echo \"got[$c]\"\n");
        let asked = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sh color.sh", "cwd": dir.path_str(),
                   "responses": {"^Name": "typed-by-mistake"}, "timeout_ms": 20000}),
        );
        assert_eq!(asked["status"], "input", "{name}: {asked}");
        assert_eq!(asked["answered"], json!([]), "{name}: {asked}");
        // What the agent types now is the whole line the program reads: nothing came before it.
        let done = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "blue", "submit": true, "wait_ms": 20000}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert!(done["output"].as_str().unwrap().contains("got[blue]"), "{name}: {done}");
    });
}

#[test]
fn a_used_up_list_is_input_the_next_time() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-used-up-{name}"));
        dir.write(
            "again.sh",
            "for i in 1 2 3; do printf 'Again? '; read a; printf %s \"$a\" >> picked; done\n\
             echo; cat picked; echo\n",
        );
        let asked = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sh again.sh", "cwd": dir.path_str(),
                   "responses": {"Again": ["y", "x"]}, "timeout_ms": 20000}),
        );
        assert_eq!(asked["status"], "input", "{name}: {asked}");
        assert_eq!(answered(&asked), pairs(&[("Again?", "Again"), ("Again?", "Again")]), "{name}");
        let done = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "z", "submit": true, "wait_ms": 20000}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert!(done["output"].as_str().unwrap().contains("yxz"), "{name}: {done}");
    });
}

#[test]
fn an_invalid_key_is_invalid_regex_and_nothing_runs() {
    let home = Dir::new("responses-invalid");
    let mut f = fugue_with("/bin/sh", &home);
    let marker = home.join("marker");
    let touch = format!("touch {}", marker.display());
    let bad = json!({"ok": "y", "(unclosed": "n"});
    let err = f.call_err("fugue_exec", json!({"command": touch, "responses": bad}));
    assert_eq!(err["code"], "invalid_regex", "{err}");
    assert!(err["message"].as_str().unwrap().contains("(unclosed"), "{err}");
    let err = f.call_err(
        "fugue_run_parallel",
        json!({"commands": [{"command": touch}, {"command": "true", "responses": bad}]}),
    );
    assert_eq!(err["code"], "invalid_regex", "{err}");
    let err = f.call_err(
        "fugue_run_pipeline",
        json!({"commands": [{"command": touch}, {"command": "true", "responses": bad}]}),
    );
    assert_eq!(err["code"], "invalid_regex", "{err}");
    let pane = f.shell();
    let err = f.call_err(
        "fugue_send_input",
        json!({"pane_id": pane, "input": touch, "submit": true, "wait_ms": 1000, "responses": bad}),
    );
    assert_eq!(err["code"], "invalid_regex", "{err}");
    let err = f.call_err(
        "fugue_send_input",
        json!({"pane_id": pane, "input": touch, "submit": true, "responses": {"ok": "y"}}),
    );
    assert_eq!(err["code"], "invalid_argument", "responses need wait_ms: {err}");
    for (bad, needle) in [
        (json!({"Name": 5}), "\"Name\""),
        (json!({"Name": []}), "\"Name\""),
        // A list answers by order (issue 33): its answers are strings, one at least.
        (json!(["Name", 5]), "must be a string"),
        (json!([]), "empty list"),
        (json!(5), "must be an object"),
    ] {
        let err = f.call_err("fugue_exec", json!({"command": touch, "responses": bad}));
        assert_eq!(err["code"], "invalid_argument", "{err}");
        assert!(err["message"].as_str().unwrap().contains(needle), "{err}");
    }
    assert!(!marker.exists(), "a call with a bad responses ran its command");
}

#[test]
fn limits_hold_one_past_each() {
    let home = Dir::new("responses-limits");
    let mut f = fugue_with("/bin/sh", &home);
    let keys = |n: usize| -> Value {
        Value::Object((0..n).map(|i| (format!("q{i}"), json!("y"))).collect())
    };
    let ok = f.call("fugue_exec", json!({"command": "echo fine", "responses": keys(64)}));
    assert_eq!(ok["status"], "ok", "{ok}");
    let err = f.call_err("fugue_exec", json!({"command": "echo x", "responses": keys(65)}));
    assert!(err["message"].as_str().unwrap().contains("limit is 64"), "{err}");
    let long = "y".repeat(4097);
    let err = f.call_err("fugue_exec", json!({"command": "echo x", "responses": {"q": long}}));
    assert!(err["message"].as_str().unwrap().contains("limit is 4096"), "{err}");
    let fits = "y".repeat(4096);
    let ok = f.call("fugue_exec", json!({"command": "echo fine", "responses": {"q": fits}}));
    assert_eq!(ok["status"], "ok", "{ok}");
    let err =
        f.call_err("fugue_exec", json!({"command": "echo x", "responses": {"q": vec!["y"; 257]}}));
    assert!(err["message"].as_str().unwrap().contains("limit is 256"), "{err}");
}

#[test]
fn keys_are_tried_in_the_order_written() {
    let home = Dir::new("responses-order");
    let mut f = fugue_with("/bin/sh", &home);
    // Written "Proceed" first; sorted, "P" would come first and answer.
    let line = r#"{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"fugue_exec","arguments":{"command":"printf 'Proceed? '; read a; echo \"got[$a]\"","timeout_ms":20000,"responses":{"Proceed":"long","P":"short"}}}}"#;
    f.send_line(line);
    let response = f.response(&json!(900));
    let done = &response["result"]["structuredContent"];
    assert_eq!(done["status"], "ok", "{response}");
    assert!(done["output"].as_str().unwrap().contains("got[long]"), "{done}");
    assert_eq!(answered(done), pairs(&[("Proceed?", "Proceed")]));
}

#[test]
fn send_input_wait_ms_answers_with_responses() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-send-{name}"));
        dir.write("install.sh", INSTALLER);
        let command = format!("cd {} && sh install.sh", dir.path_str());
        let command = if name == "fish" { command.replace("&&", "; and") } else { command };
        // Typed once the shell is at its prompt (fugue_exec waits for the first one).
        assert_eq!(
            f.call("fugue_exec", json!({"pane_id": pane, "command": "true"}))["status"],
            "ok"
        );
        let done = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": command, "submit": true, "wait_ms": 30000,
                   "responses": installer_responses()}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        // Typed at once, the line can beat the shell's prompt to the screen (dash draws `# `
        // after its record): the first question may then begin with the prompt.
        let got = answered(&done);
        assert_eq!(got.len(), 5, "{name}: {done}");
        for ((question, key), (want_question, want_key)) in got.iter().zip(installer_answered()) {
            assert!(question.ends_with(&want_question), "{name}: {done}");
            assert_eq!(*key, want_key, "{name}: {done}");
        }
        let result = std::fs::read_to_string(dir.join("result")).unwrap();
        assert_eq!(result, format!("demo|/srv/demo|yn|{SECRET}\n"), "{name}");
        assert_no_answers_echoed(name, &done);
    });
}

#[test]
fn responses_answer_a_pipeline_step_and_a_parallel_command_in_every_shell() {
    each_shell_fugue(|name, f| {
        let dir = Dir::new(&format!("responses-runs-{name}"));
        dir.write("install.sh", INSTALLER);
        let run = f.call(
            "fugue_run_pipeline",
            json!({"commands": [
                {"command": format!("cd {}", dir.path_str())},
                {"name": "install", "command": "sh install.sh", "responses": installer_responses()},
                {"command": "cat result"},
            ], "cleanup": true, "timeout_ms": 60000}),
        );
        assert_eq!(run["status"], "completed", "{name}: {run}");
        assert_eq!(answered(&run["steps"][1]), installer_answered(), "{name}: {run}");
        assert!(
            run["steps"][0].get("answered").is_none(),
            "only where responses were given: {name}: {run}"
        );
        assert_no_answers_echoed(name, &run);
        std::fs::remove_file(dir.join("result")).unwrap();

        let run = f.call(
            "fugue_run_parallel",
            json!({"commands": [
                {"name": "install", "command": "sh install.sh", "cwd": dir.path_str(),
                 "responses": installer_responses()},
                {"name": "asks", "command": "sh -c 'printf \"Other? \"; read x'",
                 "responses": {"Nope": "n"}},
            ], "timeout_ms": 60000, "tails": "all"}),
        );
        let results = run["results"].as_array().unwrap();
        assert_eq!(results[0]["status"], "ok", "{name}: {run}");
        assert_eq!(answered(&results[0]), installer_answered(), "{name}: {run}");
        assert_eq!(results[1]["status"], "input", "no key matched: {name}: {run}");
        assert_eq!(results[1]["answered"], json!([]), "{name}: {run}");
        assert_eq!(run["status"], "input", "{name}: {run}");
        let result = std::fs::read_to_string(dir.join("result")).unwrap();
        assert_eq!(result, format!("demo|/srv/demo|yn|{SECRET}\n"), "{name}");
        assert_no_answers_echoed(name, &run);
    });
}

#[test]
fn rm_i_on_three_files_is_answered_with_a_list() {
    let dir = Dir::new("responses-rm");
    for file in ["a", "b", "c"] {
        dir.write(file, "x");
    }
    let mut f = fugue_with("/bin/sh", &dir);
    let done = f.call(
        "fugue_exec",
        json!({"command": "rm -i a b c", "cwd": dir.path_str(), "timeout_ms": 20000,
               "responses": {"remove": ["y", "n", "y"]}}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    let questions: Vec<String> = answered(&done).into_iter().map(|(q, _)| q).collect();
    assert_eq!(questions.len(), 3, "{done}");
    assert!(questions[1].contains("'b'"), "{done}");
    assert!(!dir.join("a").exists() && dir.join("b").exists() && !dir.join("c").exists());
}

#[test]
fn git_add_p_takes_its_answers_in_one_call() {
    if find("git").is_none() {
        return;
    }
    let dir = Dir::new("responses-git");
    let repo = git_repo(&dir);
    let lines: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
    std::fs::write(repo.join("f.txt"), lines.join("\n") + "\n").unwrap();
    git(&repo, &["add", "f.txt"]);
    git(&repo, &["commit", "-qm", "base"]);
    let mut changed = lines.clone();
    for i in [1, 14, 28] {
        changed[i] = format!("changed {i}");
    }
    std::fs::write(repo.join("f.txt"), changed.join("\n") + "\n").unwrap();
    let mut f = fugue_with("/bin/sh", &dir);
    let done = f.call(
        "fugue_exec",
        json!({"command": "git -c core.pager=cat -c interactive.singleKey=false add -p",
               "cwd": repo.to_str().unwrap(), "timeout_ms": 30000,
               "responses": {"Stage this hunk": ["y", "y", "n"]}}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(answered(&done).len(), 3, "{done}");
    let staged = git(&repo, &["diff", "--cached"]);
    assert!(staged.contains("+changed 1") && staged.contains("+changed 14"), "{staged}");
    assert!(!staged.contains("+changed 28"), "{staged}");
}

#[test]
fn a_password_retry_with_the_same_question_is_the_next_time() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-retry-{name}"));
        dir.write(
            "login.sh",
            "stty -echo; printf 'Password: '; read a; printf '\\nSorry, try again.\\n'\n\
             printf 'Password: '; read b; stty echo; printf '\\n%s/%s\\n' \"$a\" \"$b\"\n",
        );
        let done = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sh login.sh", "cwd": dir.path_str(),
                   "responses": {"Password": ["wrong-pw", "right-pw"]}, "timeout_ms": 20000}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert!(done["output"].as_str().unwrap().ends_with("wrong-pw/right-pw"), "{name}: {done}");
        let expected = pairs(&[("Password:", "Password"), ("Password:", "Password")]);
        assert_eq!(answered(&done), expected, "{name}: {done}");
    });
}

#[test]
fn a_question_answered_once_is_not_answered_again_while_nothing_new_is_asked() {
    each_shell(|name, f, pane| {
        let dir = Dir::new(&format!("responses-once-{name}"));
        // After the answer the program reads again without a word: no question to match.
        dir.write("twice.sh", "printf 'Name? '; read a; read b; echo \"[$a][$b]\"\n");
        let asked = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": "sh twice.sh", "cwd": dir.path_str(),
                   "responses": {"Name|bob|": "bob"}, "timeout_ms": 20000}),
        );
        assert_eq!(asked["status"], "input", "{name}: {asked}");
        assert_eq!(answered(&asked), pairs(&[("Name?", "Name|bob|")]), "{name}: {asked}");
        let done = f.call(
            "fugue_send_input",
            json!({"pane_id": pane, "input": "own", "submit": true, "wait_ms": 20000}),
        );
        assert!(done["output"].as_str().unwrap().contains("[bob][own]"), "{name}: {done}");
    });
}

/// Every shell, fish too: a fish just started in a new HOME starts its man-page completion
/// generator in the terminal's foreground group, which no longer hides its `read` (issue 23 §10).
#[test]
fn the_shells_own_read_is_answered_in_every_shell() {
    each_shell(|name, f, pane| {
        let command = match name {
            "bash" => "read -p 'Name: ' a; read -p 'Name: ' b; echo \"[$a][$b]\"",
            "zsh" | "ksh" | "mksh" => "read 'a?Name: '; read 'b?Name: '; echo \"[$a][$b]\"",
            "fish" => "read -P 'Name: ' a; read -P 'Name: ' b; echo \"[$a][$b]\"",
            _ => "printf 'Name: '; read a; printf 'Name: '; read b; echo \"[$a][$b]\"",
        };
        let done = f.call(
            "fugue_exec",
            json!({"pane_id": pane, "command": command, "timeout_ms": 20000,
                   "responses": {"^Name": ["ada", "bob"]}}),
        );
        assert_eq!(done["status"], "ok", "{name}: {done}");
        assert!(done["output"].as_str().unwrap().ends_with("[ada][bob]"), "{name}: {done}");
        assert_eq!(answered(&done), pairs(&[("Name:", "^Name"), ("Name:", "^Name")]), "{name}");
    });
}

#[test]
fn under_load_each_question_is_answered_once_and_in_order() {
    let _load = BusyLoops::in_sessions(4);
    let dir = Dir::new("responses-load");
    dir.write("install.sh", INSTALLER);
    let mut f = fugue_with("/bin/bash", &dir);
    for round in 0..2 {
        let done = f.call(
            "fugue_exec",
            json!({"command": "sh install.sh", "cwd": dir.path_str(),
                   "responses": installer_responses(), "timeout_ms": 60000}),
        );
        assert_eq!(done["status"], "ok", "round {round}: {done}");
        assert_eq!(answered(&done), installer_answered(), "round {round}: {done}");
        let result = std::fs::read_to_string(dir.join("result")).unwrap();
        assert_eq!(result, format!("demo|/srv/demo|yn|{SECRET}\n"), "round {round}");
        std::fs::remove_file(dir.join("result")).unwrap();
    }
}

#[test]
fn an_ssh_key_passphrase_is_answered_and_never_shown() {
    if find("ssh-keygen").is_none() {
        return;
    }
    let dir = Dir::new("responses-ssh");
    let key = dir.join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", SECRET, "-f", key.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(made.success());
    let mut f = fugue_with("/bin/sh", &dir);
    let done = f.call(
        "fugue_exec",
        json!({"command": "ssh-keygen -y -f key > key.out", "cwd": dir.path_str(),
               "timeout_ms": 20000, "responses": {"(?i)passphrase": SECRET}}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(answered(&done).len(), 1, "{done}");
    let public = std::fs::read_to_string(dir.join("key.out")).unwrap();
    assert!(public.starts_with("ssh-ed25519 "), "{public}");
    assert_no_answers_echoed("ssh-keygen", &done);
}

#[test]
fn a_full_screen_program_is_answered_from_what_its_screen_shows() {
    if find("python3").is_none() {
        return;
    }
    let dir = Dir::new("responses-screen");
    dir.write(
        "setup.py",
        "import curses\n\
         def main(screen):\n\
         \x20   curses.echo()\n\
         \x20   got = []\n\
         \x20   for question in ['Accept the license? (yes/no)', 'Install path:']:\n\
         \x20       screen.clear()\n\
         \x20       screen.addstr(2, 2, 'Setup wizard')\n\
         \x20       screen.addstr(4, 2, question + ' ')\n\
         \x20       screen.refresh()\n\
         \x20       got.append(screen.getstr().decode())\n\
         \x20   return got\n\
         open('result', 'w').write('|'.join(curses.wrapper(main)) + '\\n')\n",
    );
    let mut f = fugue_with("/bin/bash", &dir);
    let done = f.call(
        "fugue_exec",
        json!({"command": "python3 setup.py", "cwd": dir.path_str(), "timeout_ms": 20000,
               "responses": {"license": "yes", "path:": "/opt/wizard"}}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    let expected =
        pairs(&[("Accept the license? (yes/no)", "license"), ("Install path:", "path:")]);
    assert_eq!(answered(&done), expected, "the matched line of the screen: {done}");
    let result = std::fs::read_to_string(dir.join("result")).unwrap();
    assert_eq!(result, "yes|/opt/wizard\n");
}

#[test]
fn with_on_input_wait_a_question_no_key_matches_waits_for_the_timeout() {
    let dir = Dir::new("responses-wait");
    let mut f = fugue_with("/bin/sh", &dir);
    let asks = "printf 'Name? '; read n; printf 'Other? '; read x; echo never";
    let run = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": asks, "responses": {"Name": "ada"}}],
               "on_input": "wait", "timeout_ms": 3000}),
    );
    assert_eq!(run["results"][0]["status"], "timeout", "{run}");
    assert_eq!(answered(&run["results"][0]), pairs(&[("Name?", "Name")]), "{run}");
    let run = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": asks, "responses": {"Name": "ada"}}],
               "on_input": "wait", "timeout_ms": 3000, "cleanup": true}),
    );
    assert_eq!(run["steps"][0]["status"], "timeout", "{run}");
    assert_eq!(answered(&run["steps"][0]), pairs(&[("Name?", "Name")]), "{run}");
}

/// A key is tried against the lines printed with the question too (issue 31 §5): a bash `select`
/// menu's title is above its `#?` prompt, and `answered` names the line that matched. Lines more
/// than three above the question's are not tried.
#[test]
fn a_key_matches_a_line_printed_with_the_question() {
    let home = Dir::new("responses-select");
    let mut f = fugue_with("/bin/bash", &home);
    let menu = "echo 'Choose a port:'; select p in 80 443; do echo \"port=$p\"; break; done";
    let done = f.call(
        "fugue_exec",
        json!({"command": menu, "responses": {"(?i)port": "2"}, "timeout_ms": 20000}),
    );
    assert_eq!(done["status"], "ok", "{done}");
    assert!(done["output"].as_str().unwrap().ends_with("port=443"), "{done}");
    assert_eq!(answered(&done), pairs(&[("Choose a port:", "(?i)port")]), "{done}");
    let far = "echo 'Choose a port:'; echo one; echo two; echo three; echo four; \
               printf 'Which? '; read p; echo \"got=$p\"";
    let asked = f.call(
        "fugue_exec",
        json!({"command": far, "responses": {"(?i)port": "2"}, "timeout_ms": 20000}),
    );
    assert_eq!(asked["status"], "input", "four lines up is not the question's: {asked}");
    assert_eq!(asked["answered"], json!([]), "{asked}");
}

/// A catch-all key never answers the interactive shell at its own prompt (issue 31 §10): on a
/// pane without integration, the shell back at its prompt after the command is `input`, named,
/// with nothing typed; a program that reads in the same pane is answered by the same key.
#[test]
fn a_key_never_answers_the_shell_at_its_own_prompt() {
    let home = Dir::new("responses-prompt");
    let mut f = fugue_with("/bin/bash", &home);
    let created = f.call("fugue_create_session", json!({"integration": false}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    f.expect(&pane, "[$#]\\s*$");
    let ran = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": "echo typed-$((6*7))", "submit": true,
               "wait_ms": 20000, "responses": {".*": "oops"}}),
    );
    assert_eq!(ran["status"], "input", "{ran}");
    assert_eq!(ran["program"], "bash", "{ran}");
    assert_eq!(ran["answered"], json!([]), "{ran}");
    let output = ran["output"].as_str().unwrap();
    assert!(output.contains("typed-42") && !output.contains("oops"), "{ran}");
    let read = "bash -c 'read -p \"Name? \" n; echo got-$n'";
    let asked = f.call(
        "fugue_send_input",
        json!({"pane_id": pane, "input": read, "submit": true, "wait_ms": 20000,
               "responses": {".*": "ada"}}),
    );
    assert_eq!(asked["status"], "input", "back at the prompt: {asked}");
    assert_eq!(answered(&asked), pairs(&[("Name?", ".*")]), "{asked}");
    assert!(asked["output"].as_str().unwrap().contains("got-ada"), "{asked}");
    assert!(!f.text(&pane).contains("oops"), "{}", f.text(&pane));
}
