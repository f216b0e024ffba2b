//! Shared servers and directories: each front's calls work in the directory that front was
//! started in, as each in-process fugue works in its own — panes without `cwd`, relative `cwd`s,
//! `fugue_exec`'s own shell, an agent pipeline's relative `repo`, and what `fugue ls` shows.

use crate::shared::{Server, pane_id};
use crate::util::{BIN, Fugue};
use serde_json::{Value, json};
use std::process::Command;

/// A front started in `dir` (its MCP session works there), after the legacy handshake.
fn front_in(server: &Server, dir: &std::path::Path, extra: &[(&str, &str)]) -> Fugue {
    let mut cmd = server.command(extra);
    cmd.args(["serve", "--shared", &server.name]).current_dir(dir);
    let mut front = Fugue::spawn_command(cmd);
    front.handshake();
    front
}

/// Two project directories, `a` and `b`, each with a `sub`.
fn two_projects(server: &Server) -> [std::path::PathBuf; 2] {
    ["a", "b"].map(|name| {
        let dir = server.dir.join(name);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        dir
    })
}

/// The server sits in `/`, but each front's panes start in that front's own directory, and a
/// relative `cwd` is taken from there, as in-process: a second agent in another repository never
/// gets the first one's directory. `fugue ls` shows where each front works.
#[test]
fn panes_start_in_each_fronts_own_directory() {
    let server = Server::new("cwd");
    let dirs = two_projects(&server);
    let mut fronts: Vec<Fugue> = dirs.iter().map(|dir| front_in(&server, dir, &[])).collect();
    for _round in 0..2 {
        for (front, dir) in fronts.iter_mut().zip(&dirs) {
            let plain = pane_id(&front.call("fugue_create_session", json!({"command": "pwd"})));
            let relative = pane_id(
                &front.call("fugue_create_session", json!({"command": "pwd", "cwd": "sub"})),
            );
            front.wait_exit(&plain);
            front.wait_exit(&relative);
            assert_eq!(front.text(&plain).trim(), dir.to_str().unwrap());
            assert_eq!(front.text(&relative).trim(), dir.join("sub").to_str().unwrap());
            let status = front.call("fugue_get_status", json!({"pane_id": relative}));
            assert_eq!(status["cwd"], dir.join("sub").to_str().unwrap());
        }
    }
    let missing = fronts[1].call_err("fugue_create_session", json!({"cwd": "nowhere"}));
    let message = missing["message"].as_str().unwrap_or_else(|| panic!("{missing}"));
    assert!(message.contains(dirs[1].join("nowhere").to_str().unwrap()), "{message}");
    let out = server.run(&["ls", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown: Vec<(Value, Value)> = listed[0]["shared"]["fronts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["pid"].clone(), f["cwd"].clone()))
        .collect();
    for (front, dir) in fronts.iter().zip(&dirs) {
        assert!(shown.contains(&(json!(front.pid()), json!(dir))), "{listed}");
    }
    // `fugue call --shared` is a front too.
    let mut call = server.command(&[]);
    call.args(["call", "--shared", &server.name, "fugue_run_parallel"])
        .arg(r#"{"commands": [{"command": "pwd", "cwd": "sub"}], "tails": "all"}"#)
        .current_dir(&dirs[0]);
    let out = call.output().unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
    let tail = result["results"][0]["output_tail"].as_str().unwrap_or_else(|| panic!("{result}"));
    assert_eq!(tail.trim(), dirs[0].join("sub").to_str().unwrap());
}

/// `fugue_run_parallel`, `fugue_run_pipeline` and `fugue_exec` through a shared server work in
/// the calling front's directory. `fugue_exec`'s own shell is one per directory: fronts in the
/// same directory share it, a front elsewhere gets its own.
#[test]
fn orchestration_and_exec_work_in_each_fronts_directory() {
    let server = Server::new("cwd-run");
    let dirs = two_projects(&server);
    let mut fronts: Vec<Fugue> = dirs.iter().map(|dir| front_in(&server, dir, &[])).collect();
    let mut shells = Vec::new();
    for (front, dir) in fronts.iter_mut().zip(&dirs) {
        let run = front.call(
            "fugue_run_parallel",
            json!({"commands": [{"command": "pwd"}, {"command": "pwd", "cwd": "sub"}],
                   "tails": "all"}),
        );
        let tails: Vec<&str> = run["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["output_tail"].as_str().unwrap().trim())
            .collect();
        assert_eq!(tails, [dir.to_str().unwrap(), dir.join("sub").to_str().unwrap()], "{run}");
        let piped = front.call(
            "fugue_run_pipeline",
            json!({"commands": [{"command": "pwd"}], "cwd": "sub", "tails": "all"}),
        );
        assert_eq!(piped["cwd"], dir.join("sub").to_str().unwrap(), "{piped}");
        let plain = front.call("fugue_run_pipeline", json!({"commands": [{"command": "true"}]}));
        assert_eq!(plain["cwd"], dir.to_str().unwrap(), "{plain}");
        let exec = front.call("fugue_exec", json!({"command": "pwd"}));
        assert_eq!(exec["output"].as_str().unwrap().trim(), dir.to_str().unwrap(), "{exec}");
        assert_eq!(exec["cwd"], dir.to_str().unwrap(), "{exec}");
        shells.push(exec["pane_id"].clone());
    }
    assert_ne!(shells[0], shells[1], "each directory has its own shell");
    let mut again = front_in(&server, &dirs[0], &[]);
    let exec = again.call("fugue_exec", json!({"command": "cd sub && pwd"}));
    assert_eq!(exec["pane_id"], shells[0], "a front in the same directory finds its shell");
    let exec = fronts[0].call("fugue_exec", json!({"command": "pwd"}));
    assert_eq!(exec["output"].as_str().unwrap().trim(), dirs[0].join("sub").to_str().unwrap());
}

/// An agent pipeline's relative `repo` is taken from the calling front's directory.
#[test]
fn an_agent_pipelines_relative_repo_is_the_fronts() {
    use crate::util::{GIT_ENV, git_repo};
    let server = Server::new("cwd-repo");
    git_repo(&server.dir);
    let elsewhere = server.dir.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("repo")).unwrap();
    let mut front = front_in(&server, &server.dir.path, &GIT_ENV);
    let created = front.call(
        "fugue_agent_pipeline_create",
        json!({"repo": "repo", "task": "t", "implementer": "sleep 600"}),
    );
    let id = created["pipeline_id"].clone();
    let listed = front.call("fugue_agent_pipeline_status", json!({"repo": "repo", "wait_ms": 0}));
    assert_eq!(listed["pipelines"][0]["pipeline_id"], id, "{listed}");
    // From another directory, "repo" is that directory's, which is no git repository.
    let mut other = front_in(&server, &elsewhere, &GIT_ENV);
    let err = other.call_err("fugue_agent_pipeline_status", json!({"repo": "repo", "wait_ms": 0}));
    let message = err["message"].as_str().unwrap_or_else(|| panic!("{err}"));
    assert!(message.contains("not a git repository"), "{err}");
}

/// A front whose directory is gone cannot name it: it says so on stderr, and its calls work in
/// `/` (the server's own), never in another front's directory.
#[test]
fn a_front_whose_directory_is_gone_works_in_root() {
    let server = Server::new("cwd-gone");
    let gone = server.dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let template = server.command(&[]);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(r#"cd "$1" && rmdir "$1" && exec "$2" serve --shared "$3""#).args([
        "sh",
        gone.to_str().unwrap(),
        BIN,
        &server.name,
    ]);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let log = server.dir.join("front.err");
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut front = Fugue::spawn_command(cmd);
    front.handshake();
    let pane = pane_id(&front.call("fugue_create_session", json!({"command": "pwd"})));
    front.wait_exit(&pane);
    assert_eq!(front.text(&pane).trim(), "/");
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(err.contains("cannot read the current directory"), "{err}");
    assert!(err.contains("panes made without a cwd start in /"), "{err}");
}
