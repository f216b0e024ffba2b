//! Escapes through a call's own sandbox and through fugue's own work on a sandboxed tree (issue
//! 30, items 1, 3, 4 and 5), each tried for real as root and as nobody: a call's `sandbox` on a
//! server without one must be the whole sandbox (`.git` read-only, the network off); a worktree
//! root's `.git` file must stay what it is; fugue's own git must not run what a stage planted,
//! nor commit a repository a stage made (the person's git would run its config); fugue's state must not follow a `.state` link out of the repository. The tests look at the
//! file system and the host's listeners, not only at answers.

use crate::sandbox::{failed, nobodys, outside, run, sandboxed, sandboxed_as_nobody};
use crate::util::{Dir, Fugue, GIT_ENV, git, git_repo, path_str};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `chown -R nobody:nogroup path`.
fn give_to_nobody(path: &Path) {
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", path_str(path)]).status();
    assert!(ok.is_ok_and(|s| s.success()), "chown nobody {}", path.display());
}

/// A listener on the host's loopback that a sandboxed pane must not reach, and the command that
/// tries.
fn host_listener() -> (std::net::TcpListener, String) {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let dial = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" \
         2>/dev/null"
    );
    (tcp, dial)
}

/// Item 1: on a server started without `--sandbox`, a call's `sandbox` gives the whole sandbox in
/// every tool that takes one: `fugue_exec` works in its shell (it timed out waiting for the first
/// prompt), `.git` stays read-only and the host's loopback is out of reach (only Landlock applied
/// before), and the answer and `fugue_get_status` say the whole policy. As root and as nobody.
#[test]
fn a_calls_sandbox_is_whole_on_a_server_without_one() {
    let dir = outside("call-whole");
    let repo = git_repo(&dir);
    let mut f = sandboxed(&repo, &[], &GIT_ENV);
    whole_case(&mut f, &repo, "root");
}

#[test]
fn a_calls_sandbox_is_whole_on_a_server_without_one_as_nobody() {
    let dir = nobodys("call-whole-nobody");
    let repo = git_repo(&dir);
    give_to_nobody(&repo);
    if let Some(mut f) = sandboxed_as_nobody(&repo, &[]) {
        whole_case(&mut f, &repo, "nobody");
    }
}

fn whole_case(f: &mut Fugue, repo: &Path, who: &str) {
    let (tcp, dial) = host_listener();
    let attack = |name: &str| format!("touch .git/hooks/{name}; {dial}; echo tried-{name}");
    let policy = json!({"mode": "workspace-write", "writable": [repo.canonicalize().unwrap()],
                        "network": "off", "git": "read-only"});
    let sandbox = json!("workspace-write");
    let done = f.call(
        "fugue_exec",
        json!({"command": attack("exec"), "sandbox": sandbox, "timeout_ms": 20000}),
    );
    assert_eq!(done["status"], "ok", "{who}: {done}");
    assert!(done["output"].as_str().unwrap().ends_with("tried-exec"), "{who}: {done}");
    assert_eq!(done["sandbox"], policy, "{who}: the answer says the whole policy: {done}");
    let par = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": attack("parallel")}], "sandbox": sandbox}),
    );
    assert_eq!(par["results"][0]["exit_code"], 0, "{who}: {par}");
    assert_eq!(par["sandbox"], policy, "{who}: {par}");
    let pipe = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": attack("pipeline")}], "sandbox": sandbox}),
    );
    assert_eq!(pipe["steps"][0]["exit_code"], 0, "{who}: {pipe}");
    let command = format!("{}; exec sleep 60", attack("session"));
    let pane = f.call("fugue_create_session", json!({"command": command, "sandbox": sandbox}));
    assert_eq!(pane["sandbox"], policy, "{who}: {pane}");
    let pane = pane["pane_id"].as_str().unwrap().to_string();
    f.expect(&pane, "tried-session");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["sandbox"], policy, "{who}: {status}");
    for name in ["exec", "parallel", "pipeline", "session"] {
        assert!(!repo.join(".git/hooks").join(name).exists(), "{who}: {name} wrote .git/hooks");
    }
    assert!(tcp.accept().is_err(), "{who}: a sandboxed call reached the host's loopback");
    // Without `sandbox`, the same server's shell is not sandboxed: the call's policy is its own.
    let plain = run(f, "touch .git/hooks/plain && echo wrote");
    assert_eq!(plain["output"], "wrote", "{who}: {plain}");
}

/// A call's object `sandbox` tightens the server's policy and never loosens it: the network off
/// on a server whose network is on, one root within the server's, refused past that.
#[test]
fn a_calls_sandbox_object_tightens_only() {
    // Outside the temporary directory, which workspace-write may write.
    let root = outside("call-tighten");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write", "--network", "on"], &[]);
    let (tcp, dial) = host_listener();
    let sandbox = json!({"mode": "workspace-write", "network": "off", "writable": ["sub"]});
    let command = format!("touch sub/in; touch out; {dial} && echo REACHED; echo tried");
    let done = f.call("fugue_exec", json!({"command": command, "sandbox": sandbox}));
    assert_eq!(done["output"], "touch: cannot touch 'out': Read-only file system\ntried", "{done}");
    assert!(root.join("sub/in").exists() && !root.join("out").exists(), "{done}");
    assert!(tcp.accept().is_err(), "network off on a network-on server reached the host");
    let sub = root.join("sub").canonicalize().unwrap();
    assert_eq!(done["sandbox"]["writable"], json!([sub]), "{done}");
    assert_eq!(done["sandbox"]["network"], "off", "{done}");
    let outside_root = outside("call-tighten-out");
    for (sandbox, says) in [
        (json!({"mode": "workspace-write", "writable": [outside_root.path_str()]}), "looser"),
        (json!({"mode": "read-only", "writable": ["sub"]}), "writable needs"),
        (json!({"mode": "workspace-write", "network": "maybe"}), "on or off"),
        (json!({"mode": "workspace-write", "paths": []}), "sandbox.paths"),
        (json!({"network": "off"}), "mode"),
        (json!(["read-only"]), "or an object"),
    ] {
        let err = f.call_err("fugue_exec", json!({"command": "true", "sandbox": sandbox}));
        assert_eq!(err["code"], "invalid_argument", "{sandbox}: {err}");
        assert!(err["message"].as_str().unwrap().contains(says), "{sandbox}: {err}");
    }
    drop(f);
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let on = json!({"mode": "workspace-write", "network": "on"});
    let err = f.call_err("fugue_create_session", json!({"command": "true", "sandbox": on}));
    assert_eq!(err["code"], "invalid_argument", "{err}");
    assert!(err["message"].as_str().unwrap().contains("network off"), "names the server's: {err}");
}

/// A repository in `dir` with a worktree `wt` beside it; returns the worktree.
fn repo_and_worktree(dir: &Dir) -> PathBuf {
    let repo = git_repo(dir);
    let wt = dir.join("wt");
    git(&repo, &["worktree", "add", "-q", path_str(&wt), "-b", "wt"]);
    wt
}

/// What a pane does to take over the user's next git command in a worktree root: a git directory
/// of its own whose config runs a command, and the root's `.git` file pointed at it.
fn forge_git_file(marker: &Path) -> String {
    format!(
        "git init -q forged && git -C forged config core.fsmonitor 'touch {}; true' && \
         printf 'gitdir: %s\\n' \"$PWD/forged/.git\" > .git && echo FORGED",
        path_str(marker)
    )
}

/// Item 3: a worktree root's `.git` file is read-only, so the user's next `git status` there runs
/// nothing the pane planted. As root and as nobody.
#[test]
fn a_worktree_roots_git_file_stays_as_it_was() {
    let dir = outside("wt-file");
    let wt = repo_and_worktree(&dir);
    let marker_dir = outside("wt-file-marker");
    let mut f = sandboxed(&wt, &["--sandbox", "workspace-write"], &GIT_ENV);
    git_file_case(&mut f, &wt, &marker_dir.join("ran"), None);
}

#[test]
fn a_worktree_roots_git_file_stays_as_it_was_as_nobody() {
    let dir = nobodys("wt-file-nobody");
    let wt = repo_and_worktree(&dir);
    give_to_nobody(&dir.path);
    let marker_dir = outside("wt-file-marker-nobody");
    give_to_nobody(&marker_dir.path);
    if let Some(mut f) = sandboxed_as_nobody(&wt, &["--sandbox", "workspace-write"]) {
        git_file_case(&mut f, &wt, &marker_dir.join("ran"), Some("nobody"));
    }
}

fn git_file_case(f: &mut Fugue, wt: &Path, marker: &Path, user: Option<&str>) {
    let who = user.unwrap_or("root");
    let before = std::fs::read_to_string(wt.join(".git")).unwrap();
    let forged = run(f, &forge_git_file(marker));
    assert!(failed(&forged), "{who}: {forged}");
    assert_eq!(std::fs::read_to_string(wt.join(".git")).unwrap(), before, "{who}");
    // The user's next git status in the worktree, as the user who owns it.
    let mut status = match user {
        Some(user) => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid", user, "--regid=nogroup", "--clear-groups", "git"]);
            cmd
        }
        None => Command::new("git"),
    };
    let _ = status.arg("-C").arg(wt).arg("status").envs(GIT_ENV).output().unwrap();
    assert!(!marker.exists(), "{who}: git status ran what the pane planted");
}

/// Item 4: an implementer that points its worktree's `.git` at a git directory of its own does
/// not get fugue's own git to run the command in that directory's config: the `.git` file is
/// read-only in the sandbox, and fugue's git checks it and turns such configuration off. With
/// `--writable-git` (no read-only `.git`) the forged file is refused, naming it. As root and as
/// nobody.
#[test]
fn fugues_own_git_runs_nothing_a_stage_planted() {
    for writable_git in [false, true] {
        let dir = outside("stage-git");
        let marker_dir = outside("stage-git-marker");
        let mut f = stage_server(&dir, writable_git, None).unwrap();
        stage_case(&mut f, &dir, &marker_dir.join("ran"), writable_git, "root");
    }
}

#[test]
fn fugues_own_git_runs_nothing_a_stage_planted_as_nobody() {
    for writable_git in [false, true] {
        // Outside the temporary directory: a sandboxed pane sees a private /tmp, so the stage's
        // program must lie elsewhere.
        let dir = outside("stage-git-nobody");
        let marker_dir = outside("stage-git-marker-nobody");
        give_to_nobody(&marker_dir.path);
        if let Some(mut f) = stage_server(&dir, writable_git, Some(())) {
            stage_case(&mut f, &dir, &marker_dir.join("ran"), writable_git, "nobody");
        }
    }
}

/// A sandboxed server in `dir`'s repository (made now), as root or as nobody.
fn stage_server(dir: &Dir, writable_git: bool, nobody: Option<()>) -> Option<Fugue> {
    let repo = git_repo(dir);
    let mut args = vec!["--sandbox", "workspace-write"];
    if writable_git {
        args.push("--writable-git");
    }
    match nobody {
        None => Some(sandboxed(&repo, &args, &GIT_ENV)),
        Some(()) => {
            give_to_nobody(&dir.path);
            sandboxed_as_nobody(&repo, &args)
        }
    }
}

fn stage_case(f: &mut Fugue, dir: &Dir, marker: &Path, writable_git: bool, who: &str) {
    let repo = dir.join("repo");
    // Where the forgery fails, its git directory goes too: an empty nested repository is no work.
    let body = format!(
        "{} || rm -rf forged\necho done >> feature.txt\necho implemented\n",
        forge_git_file(marker)
    );
    let implementer = crate::agent::script(dir, "implementer", &body);
    let analyzer = crate::agent::approving_analyzer(dir);
    give_to_nobody_if(who, &dir.path);
    let id = crate::agent::create(
        f,
        json!({"repo": path_str(&repo), "task": "t", "implementer": implementer,
               "analyzer": analyzer}),
    );
    let p = crate::agent::settle(f, &id);
    assert!(!marker.exists(), "{who}: fugue's git ran what the stage planted: {p}");
    if writable_git {
        assert_eq!(p["status"], "blocked", "{who}: {p}");
        let said = p.to_string();
        assert!(said.contains("is not the .git fugue made"), "{who}: names the .git: {p}");
    } else {
        assert_eq!(p["status"], "complete", "{who}: {p}");
    }
}

fn give_to_nobody_if(who: &str, path: &Path) {
    if who == "nobody" {
        give_to_nobody(path);
    }
}

/// Item 5: a `.state` that a pane made a link to a directory outside is refused, named, by the
/// next `fugue_agent_pipeline_create`, and nothing in that directory changes (fugue chmodded it
/// 0700 and filled it); so is a link put in place of a `.state` fugue had opened. As root and as
/// nobody.
#[test]
fn a_state_link_is_refused_and_nothing_outside_changes() {
    let dir = outside("state-link");
    let repo = git_repo(&dir);
    let victim = outside("state-link-victim");
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write"], &GIT_ENV);
    state_case(&mut f, &dir, &victim, "root");
}

#[test]
fn a_state_link_is_refused_and_nothing_outside_changes_as_nobody() {
    let dir = nobodys("state-link-nobody");
    let repo = git_repo(&dir);
    let victim = outside("state-link-victim-nobody");
    give_to_nobody(&dir.path);
    give_to_nobody(&victim.path);
    if let Some(mut f) = sandboxed_as_nobody(&repo, &["--sandbox", "workspace-write"]) {
        state_case(&mut f, &dir, &victim, "nobody");
    }
}

fn state_case(f: &mut Fugue, dir: &Dir, victim: &Dir, who: &str) {
    use std::os::unix::fs::PermissionsExt;
    let _ = Command::new("chmod").args(["755", victim.path_str()]).status();
    let linked = run(f, &format!("ln -s {} .state && echo linked", victim.path_str()));
    assert_eq!(linked["output"], "linked", "{who}: {linked}");
    let implementer = crate::agent::script(dir, "implementer", "echo x >> f\n");
    give_to_nobody_if(who, &dir.path);
    let err = f.call_err(
        "fugue_agent_pipeline_create",
        json!({"repo": path_str(&dir.join("repo")), "task": "t", "implementer": implementer}),
    );
    let message = err["message"].as_str().unwrap_or_default();
    assert!(message.contains(".state is a symbolic link"), "{who}: names the link: {err}");
    // After fugue opened a real `.state`, a link the pane puts in its place is caught too.
    assert_eq!(run(f, "rm .state")["exit_code"], 0, "{who}");
    let repo = path_str(&dir.join("repo")).to_string();
    let args = json!({"repo": repo, "task": "t", "implementer": implementer});
    let id = crate::agent::create(f, args.clone());
    crate::agent::settle(f, &id);
    let swap =
        format!("mv .state .state-old && ln -s {} .state && echo swapped", victim.path_str());
    assert_eq!(run(f, &swap)["output"], "swapped", "{who}");
    let err = f.call_err("fugue_agent_pipeline_create", args);
    let message = err["message"].as_str().unwrap_or_default();
    assert!(message.contains("no longer the directory fugue opened"), "{who}: {err}");
    let mode = std::fs::metadata(&victim.path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "{who}: fugue changed the mode of a directory outside");
    let entries: Vec<Value> = std::fs::read_dir(&victim.path)
        .unwrap()
        .map(|e| json!(e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert!(entries.is_empty(), "{who}: fugue made {entries:?} outside");
}

/// A stage that makes a repository inside its worktree, whose config runs a command, gets no
/// gitlink committed: fugue's `git add --all` would stage it (mode 160000) and from then on the
/// person's plain `git status` in the worktree recurses into it and runs the command, outside any
/// sandbox. The stage fails, naming the path, and the person's git runs nothing. As root and as
/// nobody.
#[test]
fn fugue_commits_no_repository_a_stage_made() {
    let dir = outside("stage-sub");
    let marker_dir = outside("stage-sub-marker");
    let mut f = stage_server(&dir, false, None).unwrap();
    nested_case(&mut f, &dir, &marker_dir.join("ran"), None);
}

#[test]
fn fugue_commits_no_repository_a_stage_made_as_nobody() {
    let dir = outside("stage-sub-nobody");
    let marker_dir = outside("stage-sub-marker-nobody");
    give_to_nobody(&marker_dir.path);
    if let Some(mut f) = stage_server(&dir, false, Some(())) {
        nested_case(&mut f, &dir, &marker_dir.join("ran"), Some("nobody"));
    }
}

fn nested_case(f: &mut Fugue, dir: &Dir, marker: &Path, user: Option<&str>) {
    let who = user.unwrap_or("root");
    let repo = dir.join("repo");
    let body = format!(
        "git init -q sub && git -C sub config core.fsmonitor 'touch {}; true' && \
         git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x\n\
         echo done >> feature.txt\necho implemented\n",
        path_str(marker)
    );
    let implementer = crate::agent::script(dir, "implementer", &body);
    let analyzer = crate::agent::approving_analyzer(dir);
    give_to_nobody_if(who, &dir.path);
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": path_str(&repo), "task": "t", "implementer": implementer,
               "analyzer": analyzer, "limits": {"max_attempts": 1}}),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let worktree = PathBuf::from(created["worktree"].as_str().unwrap());
    let p = crate::agent::settle(f, &id);
    // The person's plain git, outside any sandbox, in the worktree and in the repository.
    for at in [&worktree, &repo] {
        if at.exists() {
            let _ = person_git(user).arg("-C").arg(at).arg("status").envs(GIT_ENV).output();
        }
    }
    assert!(!marker.exists(), "{who}: the person's git status ran what the stage planted: {p}");
    assert_eq!(person_says(user, &repo, &["ls-tree", "main", "sub"]), "", "{who}: merged: {p}");
    assert_eq!(p["status"], "blocked", "{who}: {p}");
    let said = p.to_string();
    assert!(said.contains("made a nested repository at sub"), "{who}: names the path: {p}");
    let index = person_says(user, &worktree, &["ls-files", "-s"]);
    assert!(!index.contains("160000"), "{who}: the index keeps the gitlink: {index}");
}

/// The person's `git`, as `user` when given.
fn person_git(user: Option<&str>) -> Command {
    match user {
        Some(user) => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid", user, "--regid=nogroup", "--clear-groups", "git"]);
            cmd
        }
        None => Command::new("git"),
    }
}

/// What the person's `git ARGS` in `dir` prints.
fn person_says(user: Option<&str>, dir: &Path, args: &[&str]) -> String {
    let out = person_git(user).arg("-C").arg(dir).args(args).envs(GIT_ENV).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
