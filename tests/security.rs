//! Security: what fugue exposes and what it creates.
//!
//! fugue runs the commands it is asked to run, with the user's rights; it must not add a way in.
//! These tests check that it opens no network socket, that everything it creates on disk is
//! private to the user even under a permissive umask, that names and paths given as arguments
//! are data (never shell text, never a way out of a directory), and that environment variable
//! names are validated over the protocol.

use crate::procfs;
use crate::util::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// fugue started by a shell with `umask 000`, so anything it creates without an explicit mode
/// would be world-writable; HOME, TMPDIR, XDG_RUNTIME_DIR and FUGUE_STATE_DIR point into `root`.
fn fugue_under_umask_000(root: &Dir) -> Fugue {
    for sub in ["home", "tmp", "run", "state"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
        std::fs::set_permissions(root.join(sub), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let base = Fugue::command(&[]);
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", "umask 000; exec \"$0\"", BIN]);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    for (key, value) in base.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd.envs(GIT_ENV)
        .env("HOME", root.join("home"))
        .env("TMPDIR", root.join("tmp"))
        .env("XDG_RUNTIME_DIR", root.join("run"))
        .env("FUGUE_STATE_DIR", root.join("state"))
        .current_dir(root.join("home"));
    let mut f = Fugue::spawn_command(cmd);
    f.handshake();
    f
}

/// Every file and directory under `dir` whose mode gives anything to group or others.
fn public_entries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.permissions().mode() & 0o077 != 0 {
            found.push(format!("{} {:o}", path.display(), meta.permissions().mode() & 0o7777));
        }
        if meta.is_dir() {
            found.extend(public_entries(&path));
        }
    }
    found
}

fn count_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| 1 + count_entries(&e.path())).sum())
        .unwrap_or(0)
}

#[test]
fn nothing_listens_on_a_network_port() {
    let mut f = Fugue::start();
    let pane = f.pane("exec cat");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "hello", "submit": true}));
    f.expect(&pane, "hello");
    f.call("fugue_list_sessions", json!({}));
    let ours = procfs::socket_inodes(f.pid());
    let inet = procfs::inet_socket_inodes();
    let exposed: Vec<_> = ours.intersection(&inet).collect();
    assert!(exposed.is_empty(), "fugue holds network sockets {exposed:?}");
}

/// Whatever fugue creates — pipeline state, prompts, verdicts, run logs, sockets — is 0600/0700
/// even when started with umask 000. (Files a pane's command creates are that command's
/// business, and so is the git worktree's content, which git creates under the user's umask.)
#[test]
fn everything_fugue_creates_is_private_under_a_permissive_umask() {
    let root = Dir::new("umask");
    let repo = git_repo(&root);
    let mut f = fugue_under_umask_000(&root);
    let pane = f.pane("exec cat");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "x", "submit": true}));
    f.call("fugue_get_output", json!({"pane_id": pane}));
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    let tools = f.request("tools/list", json!({}));
    let offered =
        |name: &str| tools["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == name);
    if offered("fugue_run_pipeline") {
        f.call("fugue_run_pipeline", json!({"commands": [{"command": "true"}], "cleanup": true}));
    }
    if offered("fugue_agent_pipeline_create") {
        let implementer = "echo change >> feature.txt && git add -A && git commit -qm change";
        // A failed verdict blocks the pipeline, which keeps its prompt, verdict and run files.
        let analyzer = format!("exec {BIN} verdict failed --reason no");
        let created = f.call(
            "fugue_agent_pipeline_create",
            json!({"repo": repo, "task": "add a line", "implementer": implementer,
                   "analyzer": analyzer, "qa": "true"}),
        );
        let id = &created["pipeline_id"];
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let s = f.call(
                "fugue_agent_pipeline_status",
                json!({"pipeline_id": id, "wait_ms": 20000, "until": "settled"}),
            );
            let p = &s["pipelines"][0];
            if p["status"] != "running" {
                assert_eq!(p["status"], "blocked", "{p}");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{p}");
        }
    }
    // The control socket of `fugue attach`, when this fugue has one, is there and private.
    let sockets: Vec<_> = std::fs::read_dir(root.join("run").join("fugue"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    for socket in &sockets {
        let mode = std::fs::metadata(socket).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", socket.display());
    }
    eprintln!("umask 000: {} control socket(s) checked", sockets.len());
    let mut public = public_entries(&root.join("state"));
    public.extend(public_entries(&root.join("run")));
    public.extend(public_entries(&root.join("tmp")));
    public.extend(public_entries(&root.join("home")));
    public.retain(|p| !p.contains("/worktrees/"));
    let checked = count_entries(&root.join("state"));
    eprintln!("umask 000: {checked} entries under the state directory checked");
    assert!(public.is_empty(), "created with public modes: {public:#?}");
    f.close_stdin();
}

/// Names, working directories, environment values and patterns are passed as data: shell
/// syntax in them is never run. Only `command` is shell text, because the caller asked for that.
#[test]
fn arguments_other_than_command_are_never_shell_text() {
    let dir = Dir::new("inject");
    let canary = dir.join("PWNED");
    let evil = format!("$(touch {0}) `touch {0}`; touch {0} #", canary.display());
    // Names are at most 128 characters.
    let name = format!("$(touch {0}); touch {0}", canary.display());
    // A directory name cannot hold '/': its shell text touches PWNED relative to wherever it
    // would run, which is fugue's working directory (`dir`) or the pane's (`cwd`).
    let cwd = dir.join("d$(touch PWNED);touch PWNED;`touch PWNED`");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut cmd = Fugue::command(&[]);
    cmd.current_dir(&dir.path);
    let mut f = Fugue::spawn_command(cmd);
    f.handshake();
    let created = f.call(
        "fugue_create_session",
        json!({"name": name, "command": "printf '%s|%s\\n' \"$EVIL\" \"$PWD\"; exec cat",
               "cwd": cwd, "env": {"EVIL": evil}}),
    );
    let pane = created["pane_id"].as_str().unwrap().to_string();
    let line = f.expect(&pane, "\\|")["line"].as_str().unwrap().to_string();
    assert_eq!(line, format!("{evil}|{}", cwd.display()), "values arrive verbatim");
    f.call("fugue_create_window", json!({"session_id": name, "name": name, "command": "true"}));
    f.call("fugue_send_input", json!({"pane_id": pane, "input": evil}));
    f.call_result("fugue_expect", json!({"pane_id": pane, "pattern": evil, "timeout_ms": 10}));
    f.call("fugue_close_session", json!({"session_id": name}));
    for canary in [canary, cwd.join("PWNED")] {
        assert!(!canary.exists(), "an argument was run as shell text: {}", canary.display());
    }
}

#[test]
fn environment_variable_names_are_validated() {
    let mut f = Fugue::start();
    for bad in ["A=B", "1X", "", "A B", "A-B", "A\u{0}", "É", "$(id)"] {
        let err = f.call_err("fugue_create_session", json!({"command": "true", "env": {bad: "x"}}));
        assert_eq!(err["code"], "invalid_argument", "{bad:?}: {err}");
        assert!(err["message"].as_str().unwrap().contains("variable name"), "{bad:?}: {err}");
    }
    let err =
        f.call_err("fugue_create_session", json!({"command": "true", "env": {"OK": "a\u{0}b"}}));
    assert_eq!(err["code"], "invalid_argument");
    // Nothing was started by the refused calls.
    assert_eq!(f.call("fugue_list_sessions", json!({}))["sessions"], json!([]));
    // A good name with any value is passed as is.
    let pane = f.pane("printf '[%s]\\n' \"$_GOOD_1\"");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    let created = f.call(
        "fugue_create_session",
        json!({"command": "printf '[%s]\\n' \"$_GOOD_1\"; exec cat", "env": {"_GOOD_1": "a b=c;$x"}}),
    );
    f.expect(created["pane_id"].as_str().unwrap(), "^\\[a b=c;\\$x\\]$");
}

fn offers(f: &mut Fugue, tool: &str) -> bool {
    let tools = f.request("tools/list", json!({}));
    tools["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == tool)
}

/// Pipeline ids become file names under the state directory only after a check: an id that tries
/// to climb out is refused, and files outside are neither read, moved nor changed.
#[test]
fn pipeline_ids_cannot_escape_the_state_directory() {
    let dir = Dir::new("escape");
    let repo = git_repo(&dir);
    let state = dir.join("state");
    let mut env = GIT_ENV.to_vec();
    env.push(("FUGUE_STATE_DIR", state.to_str().unwrap()));
    let mut f = Fugue::start_with(&env);
    if !offers(&mut f, "fugue_agent_pipeline_status") {
        return;
    }
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": "exec sleep 1000"}),
    );
    let real = created["pipeline_id"].as_str().unwrap().to_string();
    // Bait outside the pipelines directory: a copy of a real state file and garbage.
    let state_file = state.join("pipelines").join(format!("{real}.json"));
    let copy = std::fs::read(&state_file).unwrap();
    let bait =
        [(dir.join("bait.json"), copy.clone()), (state.join("bait.json"), b"{not json".to_vec())];
    for (path, bytes) in &bait {
        std::fs::write(path, bytes).unwrap();
    }
    let escapes = [
        "../bait",
        "../../bait",
        "..",
        ".",
        "/etc/passwd",
        "pipelines/../../bait",
        &format!("{real}/../../bait"),
        &format!("../pipelines/{real}"),
        "bait\u{0}",
        "%2e%2e%2fbait",
        "-rf",
        "",
    ];
    for id in escapes {
        for (tool, args) in [
            ("fugue_agent_pipeline_status", json!({"pipeline_id": id})),
            ("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"})),
        ] {
            let result = f.call_result(tool, args);
            assert_eq!(result["isError"], true, "{tool} {id:?} was accepted: {result}");
            let code = &result["structuredContent"]["error"]["code"];
            assert!(
                code == "invalid_argument" || code == "pipeline_not_found",
                "{tool} {id:?}: {result}"
            );
        }
    }
    for (path, bytes) in &bait {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{} was touched", path.display());
    }
    let status = f.call("fugue_agent_pipeline_status", json!({"pipeline_id": real}));
    assert_eq!(status["pipelines"].as_array().unwrap().len(), 1, "{status}");
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": real, "action": "cancel"}));
}

/// The agent pipeline's task, name and base branch are data too: shell syntax in them is never
/// run, and a branch that looks like a git option is not taken as one.
#[test]
fn agent_pipeline_arguments_are_data() {
    let dir = Dir::new("agent-inject");
    let repo = git_repo(&dir);
    let canary = dir.join("PWNED");
    let evil = format!("$(touch {0}) `touch {0}`; touch {0}", canary.display());
    let mut env = GIT_ENV.to_vec();
    let state = dir.join("state");
    env.push(("FUGUE_STATE_DIR", state.to_str().unwrap()));
    let mut f = Fugue::start_with(&env);
    if !offers(&mut f, "fugue_agent_pipeline_create") {
        return;
    }
    for base in [format!("--upload-pack=touch {}", canary.display()), format!("-b{evil}")] {
        let result = f.call_result(
            "fugue_agent_pipeline_create",
            json!({"repo": repo, "task": "t", "implementer": "true", "base_branch": base}),
        );
        assert_eq!(result["isError"], true, "{base}: {result}");
    }
    // The prompt reaches the agent verbatim through its file; the implementer copies it out.
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": evil, "name": "n; touch PWNED",
               "implementer": format!("cp \"$FUGUE_PROMPT_FILE\" {0}.tmp && mv {0}.tmp {0}; exec sleep 1000",
                                      dir.join("prompt.txt").display())}),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + PATIENCE;
    while !dir.join("prompt.txt").exists() {
        f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "wait_ms": 1000}));
        assert!(std::time::Instant::now() < deadline, "the implementer never ran");
    }
    let prompt = std::fs::read_to_string(dir.join("prompt.txt")).unwrap();
    assert!(prompt.contains(&evil), "the task did not arrive verbatim: {prompt:?}");
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
    assert!(!canary.exists(), "an argument was run as shell text");
    assert!(!repo.join("PWNED").exists() && !dir.join("PWNED").exists());
}
