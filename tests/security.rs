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
    cmd.env("HOME", root.join("home"))
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

/// Whatever fugue creates — state, sockets, logs — is 0600/0700 even when started with umask
/// 000. (Files a pane's command creates are that command's business.)
#[test]
fn everything_fugue_creates_is_private_under_a_permissive_umask() {
    let root = Dir::new("umask");
    let mut f = fugue_under_umask_000(&root);
    let pane = f.pane("exec cat");
    f.call("fugue_send_input", json!({"pane_id": pane, "input": "x", "submit": true}));
    f.call("fugue_get_output", json!({"pane_id": pane}));
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    let public = public_entries(&root.path);
    assert!(public.is_empty(), "created with public modes: {public:?}");
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
