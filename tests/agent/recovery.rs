//! An agent pipeline across fugue's end and beside other fugues: resuming after a kill, a corrupt
//! state file, a second fugue that only reads, the pipeline limit, and bad arguments.

use super::*;
use crate::util::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_killed_fugue_resumes_the_pipeline_on_restart() {
    let dir = Dir::new("agent-restart");
    let repo = git_repo(&dir);
    let state = dir.join("state");
    let env = [("FUGUE_STATE_DIR", state.to_str().unwrap())];
    // Attempt 1 hangs, deaf to the hang-up its fugue's death sends; any later attempt works.
    let pid_file = dir.join("agent.pid");
    let implementer = script(
        &dir,
        "implementer",
        "set -e\nif [ \"$FUGUE_ATTEMPT\" = 1 ]; then\n  trap '' HUP\n  echo $$ > \"$PID_FILE\"\n  echo hanging\n  exec sleep 600\nfi\necho done > work.txt\n",
    );
    let mut f = start(&env);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer, "env": {"PID_FILE": pid_file}}),
    );
    let p = wait_for_stage(&mut f, &id, "implementer");
    f.expect(p["pane_id"].as_str().unwrap(), "^hanging$");
    let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    f.child.kill().unwrap();
    f.child.wait().unwrap();
    assert!(alive(pid), "the agent outlived its fugue");
    let file = state.join(format!("pipelines/{id}.json"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["status"], "running");
    assert_eq!(saved["stages"][0]["status"], "running");
    drop(f);

    let mut f = start(&env);
    assert!(gone_within(pid, Duration::from_secs(5)), "the restarted fugue ended the stray agent");
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "implementer")["attempt"], 2);
    assert!(event_types(&p).contains(&"interrupted".to_string()), "{p}");
    assert_eq!(git(&repo, &["show", "main:work.txt"]), "done");
}

#[test]
fn a_restart_with_spent_attempts_blocks() {
    let dir = Dir::new("agent-restart-block");
    let repo = git_repo(&dir);
    let state = dir.join("state");
    let env = [("FUGUE_STATE_DIR", state.to_str().unwrap())];
    let hang = script(&dir, "hang", "echo hanging\nexec sleep 600\n");
    let mut f = start(&env);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": hang, "limits": {"max_attempts": 1}}),
    );
    let p = wait_for_stage(&mut f, &id, "implementer");
    f.expect(p["pane_id"].as_str().unwrap(), "^hanging$");
    f.child.kill().unwrap();
    f.child.wait().unwrap();
    drop(f);
    let mut f = start(&env);
    let p = status(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert!(p["blocked_reason"].as_str().unwrap().contains("interrupted"), "{p}");
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
}

#[test]
fn too_many_pipelines_is_an_error() {
    let dir = Dir::new("agent-max");
    let repo = git_repo(&dir);
    let hang = script(&dir, "hang", "exec sleep 600\n");
    let mut f = start(&[("FUGUE_MAX_PIPELINES", "1")]);
    let first = create(&mut f, json!({"repo": repo, "task": "t", "implementer": hang}));
    let err = f.call_err(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": hang}),
    );
    assert_eq!(err["code"], "limit_reached");
    assert!(err["message"].as_str().unwrap().contains("FUGUE_MAX_PIPELINES"), "{err}");
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": first, "action": "cancel"}));
    let second = create(&mut f, json!({"repo": repo, "task": "t", "implementer": hang}));
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": second, "action": "cancel"}));
}

#[test]
fn a_corrupt_state_file_is_set_aside_and_reported() {
    let dir = Dir::new("agent-corrupt");
    let state = dir.join("state");
    let bad = dir.write("state/pipelines/0badc0de-0000.json", "{\"schema_version\": 1, \"id\": ");
    let mut f = start(&[("FUGUE_STATE_DIR", state.to_str().unwrap())]);
    let s = f.call("fugue_agent_pipeline_status", json!({}));
    assert_eq!(s["pipelines"], json!([]));
    let problem = &s["problems"][0];
    assert!(problem["error"].as_str().unwrap().contains("not valid JSON"), "{s}");
    let moved = PathBuf::from(problem["moved_to"].as_str().unwrap());
    assert!(moved.exists() && !bad.exists());
    assert!(
        moved.file_name().unwrap().to_str().unwrap().starts_with("0badc0de-0000.json.corrupt-")
    );
    // And the server goes on serving.
    f.call("fugue_list_sessions", json!({}));
}

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = Dir::new("agent-bad");
    let repo = git_repo(&dir);
    let not_repo = dir.join("plain");
    std::fs::create_dir_all(&not_repo).unwrap();
    let mut f = start(&[]);
    let cases = [
        (
            json!({"repo": not_repo, "task": "t", "implementer": "true"}),
            "invalid_argument",
            "not in a git repository",
        ),
        (
            json!({"repo": repo, "task": "t", "implementer": "true", "base_branch": "nope"}),
            "invalid_argument",
            "does not exist",
        ),
        (
            json!({"repo": repo, "task": "t", "implementer": "true", "base_branch": "-x"}),
            "invalid_argument",
            "not a valid branch",
        ),
        (json!({"repo": repo, "task": " ", "implementer": "true"}), "invalid_argument", "task"),
        (
            json!({"repo": repo, "task": "t", "implementer": "true", "qa": ""}),
            "invalid_argument",
            "qa",
        ),
        (
            json!({"repo": repo, "task": "t", "implementer": "true", "limits": {"max_attempts": 0}}),
            "invalid_argument",
            "max_attempts",
        ),
        (
            json!({"repo": repo, "task": "t", "implementer": "true", "limits": {"max_cost_usd": -1}}),
            "invalid_argument",
            "max_cost_usd",
        ),
        (json!({"repo": repo, "task": "t"}), "invalid_argument", "implementer"),
    ];
    for (args, code, words) in cases {
        let err = f.call_err("fugue_agent_pipeline_create", args.clone());
        assert_eq!(err["code"], code, "{args}: {err}");
        assert!(err["message"].as_str().unwrap().contains(words), "{args}: {err}");
    }
    assert!(
        !repo.join(".state/worktrees").exists()
            || std::fs::read_dir(repo.join(".state/worktrees")).unwrap().count() == 0
    );
    let err = f.call_err("fugue_agent_pipeline_status", json!({"pipeline_id": "nope"}));
    assert_eq!(err["code"], "pipeline_not_found");
    let err = f.call_err(
        "fugue_agent_pipeline_control",
        json!({"pipeline_id": "nope", "action": "retry"}),
    );
    assert_eq!(err["code"], "pipeline_not_found");
    let err = f.call_err("fugue_agent_pipeline_status", json!({"until": "later"}));
    assert_eq!(err["code"], "invalid_argument");
    // Looking at a repository with no pipelines leaves no trace in it.
    let other = Dir::new("agent-bad-other");
    let other_repo = git_repo(&other);
    let s = f.call("fugue_agent_pipeline_status", json!({"repo": other_repo}));
    assert_eq!(s["pipelines"], json!([]));
    assert!(!other_repo.join(".state").exists());
}

#[test]
fn another_fugue_only_reads_a_driven_pipeline() {
    let dir = Dir::new("agent-other");
    let repo = git_repo(&dir);
    let state = dir.join("state");
    let hang = script(&dir, "hang", "exec sleep 600\n");
    let mut f = start(&[("FUGUE_STATE_DIR", state.to_str().unwrap())]);
    let id = create(&mut f, json!({"repo": repo, "task": "t", "implementer": hang}));
    wait_for_stage(&mut f, &id, "implementer");
    let call = |tool: &str, args: Value| {
        let out = Command::new(BIN)
            .args(["call", tool, &args.to_string()])
            .env("FUGUE_STATE_DIR", &state)
            .envs(GIT_ENV)
            .output()
            .unwrap();
        (out.status.success(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    let (ok, seen) = call("fugue_agent_pipeline_status", json!({"pipeline_id": id}));
    assert!(ok, "{seen}");
    let p = &seen["pipelines"][0];
    assert_eq!(p["status"], "running");
    assert!(p["driven_by"].as_str().unwrap().contains("another fugue process"), "{seen}");
    let (ok, err) =
        call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
    assert!(!ok);
    assert_eq!(err["error"]["code"], "invalid_state");
    let (ok, err) = call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": "true"}),
    );
    assert!(!ok);
    assert_eq!(err["error"]["code"], "invalid_state");
    // The server still drives it: its attempt was not taken over.
    let p = status(&mut f, &id);
    assert_eq!(
        (p["status"].as_str(), stage(&p, "implementer")["attempt"].as_u64()),
        (Some("running"), Some(1))
    );
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
    let (_, seen) = call("fugue_agent_pipeline_status", json!({"pipeline_id": id}));
    assert_eq!(seen["pipelines"][0]["status"], "cancelled");
}
