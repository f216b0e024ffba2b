//! The agent pipeline through the real binary: fake agents (small shell scripts) in real git
//! repositories in temp directories. Every wait is a `fugue_agent_pipeline_status` call with
//! `wait_ms`, so the tests follow the pipeline's own events and never sleep.

use crate::util::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Keeps git away from the machine's and the user's configuration.
pub const GIT_ENV: [(&str, &str); 2] =
    [("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_CONFIG_NOSYSTEM", "1")];

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).envs(GIT_ENV).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn git_ok(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .envs(GIT_ENV)
        .output()
        .unwrap()
        .status
        .success()
}

/// A repository on `main` with one commit; user name and email in the repository's own config.
pub fn repo(dir: &Dir) -> PathBuf {
    let path = dir.join("repo");
    std::fs::create_dir_all(&path).unwrap();
    git(&path, &["init", "-q", "-b", "main"]);
    git(&path, &["config", "user.name", "Test"]);
    git(&path, &["config", "user.email", "test@example.com"]);
    std::fs::write(path.join("README.md"), "hello\n").unwrap();
    git(&path, &["add", "README.md"]);
    git(&path, &["commit", "-qm", "initial"]);
    path
}

/// Writes an executable script and returns its path, ready to be an agent's command.
pub fn script(dir: &Dir, name: &str, body: &str) -> String {
    let path = dir.write(&format!("bin/{name}"), &format!("#!/bin/sh\n{body}"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// An implementer that records its prompt and environment, adds a line and commits.
pub fn implementer(dir: &Dir) -> String {
    script(
        dir,
        "implementer",
        r#"set -e
n=$FUGUE_ATTEMPT
cp "$FUGUE_PROMPT_FILE" "prompt-$n.txt"
env | grep '^FUGUE_' | sort > "env-$n.txt"
echo "line $n" >> feature.txt
git add -A
git commit -qm "implementer attempt $n"
echo "implemented attempt $n"
"#,
    )
}

/// An analyzer that says `complete` through `fugue verdict`.
pub fn approving_analyzer(dir: &Dir) -> String {
    script(dir, "analyzer", &format!("exec {BIN} verdict complete --reason 'looks right'\n"))
}

fn start(extra: &[(&str, &str)]) -> Fugue {
    let mut env: Vec<(&str, &str)> = GIT_ENV.to_vec();
    env.extend_from_slice(extra);
    Fugue::start_with(&env)
}

fn create(f: &mut Fugue, args: Value) -> String {
    let created = f.call("fugue_agent_pipeline_create", args);
    created["pipeline_id"].as_str().unwrap().to_string()
}

fn status(f: &mut Fugue, id: &str) -> Value {
    let s = f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "events": 50}));
    s["pipelines"][0].clone()
}

/// Waits (with `until: settled`) until the pipeline is blocked, complete or cancelled.
fn settle(f: &mut Fugue, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = f.call(
            "fugue_agent_pipeline_status",
            json!({"pipeline_id": id, "wait_ms": 20000, "until": "settled", "events": 50}),
        );
        let p = s["pipelines"][0].clone();
        if p["status"] != "running" {
            return p;
        }
        assert!(Instant::now() < deadline, "pipeline did not settle: {p}");
    }
}

/// Waits (with `until: change`) until `stage` is running with a pane.
fn wait_for_stage(f: &mut Fugue, id: &str, stage: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = status(f, id);
        if p["stage"] == stage && p["status"] == "running" && p["pane_id"].is_string() {
            return p;
        }
        assert!(p["status"] == "running" && Instant::now() < deadline, "{stage} never ran: {p}");
        f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "wait_ms": 20000}));
    }
}

fn event_types(p: &Value) -> Vec<String> {
    p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

fn descriptions(p: &Value) -> String {
    p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["description"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

fn stage<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name).unwrap()
}

#[test]
fn the_happy_path_merges_into_the_base_branch() {
    let dir = Dir::new("agent-happy");
    let repo = repo(&dir);
    let before = git(&repo, &["rev-parse", "main"]);
    let mut f = start(&[]);
    let started = Instant::now();
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({
            "repo": repo, "task": "Add a feature file.\nWith 'quotes' and $(no expansion).",
            "implementer": implementer(&dir), "analyzer": approving_analyzer(&dir),
            "qa": "test -s feature.txt && echo tests passed", "name": "happy", "idea_id": "IDEA-1",
        }),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let worktree = PathBuf::from(created["worktree"].as_str().unwrap());
    let branch = created["branch"].as_str().unwrap().to_string();
    assert!(worktree.starts_with(repo.join(".state/worktrees")), "{created}");
    let mut calls = 1;
    let p = loop {
        calls += 1;
        let s = f.call(
            "fugue_agent_pipeline_status",
            json!({"pipeline_id": "happy", "wait_ms": 20000, "until": "settled", "events": 50}),
        );
        if s["pipelines"][0]["status"] != "running" {
            break s["pipelines"][0].clone();
        }
    };
    eprintln!("happy path: {calls} tool calls, {} ms", started.elapsed().as_millis());
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(p["allowed_actions"], json!([]));
    assert_eq!(p["idea_id"], "IDEA-1");
    for name in ["implementer", "analyzer", "qa", "merger"] {
        assert_eq!(stage(&p, name)["status"], "success", "{p}");
        assert_eq!(stage(&p, name)["attempt"], 1);
    }
    assert_eq!(stage(&p, "analyzer")["verdict"], "complete");
    assert_eq!(stage(&p, "analyzer")["reason"], "looks right");
    assert_eq!(stage(&p, "merger")["agent"], "git");
    let types = event_types(&p);
    for expected in
        ["created", "stage_started", "stage_succeeded", "verdict", "completed", "cleanup"]
    {
        assert!(types.contains(&expected.to_string()), "{types:?}");
    }

    // The work is on main, fast-forwarded in the clean checkout.
    let merged = p["merged_commit"].as_str().unwrap();
    assert_eq!(git(&repo, &["rev-parse", "main"]), merged);
    assert!(git_ok(&repo, &["merge-base", "--is-ancestor", &before, "main"]));
    assert_eq!(git(&repo, &["show", "main:feature.txt"]), "line 1");
    assert_eq!(std::fs::read_to_string(repo.join("feature.txt")).unwrap(), "line 1\n");
    // The prompt travelled as a file, byte for byte; the environment was there.
    assert_eq!(
        git(&repo, &["show", "main:prompt-1.txt"]),
        "Add a feature file.\nWith 'quotes' and $(no expansion)."
    );
    let env = git(&repo, &["show", "main:env-1.txt"]);
    for line in [
        format!("FUGUE_PIPELINE_ID={id}"),
        "FUGUE_STAGE=implementer".into(),
        "FUGUE_ATTEMPT=1".into(),
        format!("FUGUE_WORKTREE={}", worktree.display()),
    ] {
        assert!(env.lines().any(|l| l == line), "{line} missing in {env}");
    }
    assert!(env.contains("FUGUE_VERDICT_FILE=") && env.contains("FUGUE_TASK_FILE="));

    // Cleaned up: worktree and merged branch gone, the user's checkout untouched and clean.
    assert!(!worktree.exists());
    assert!(!git_ok(&repo, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]));
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the .state directory is ignored");
    assert!(git(&repo, &["worktree", "list"]).lines().count() == 1);

    // The state file is private, whole JSON, with no temp file beside it.
    let state_dir = repo.join(".state/pipelines");
    let file = state_dir.join(format!("{id}.json"));
    let state: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(state["status"], "complete");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(&state_dir).unwrap().permissions().mode() & 0o777, 0o700);
    let names: Vec<String> = std::fs::read_dir(&state_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");

    // Listing without an id shows it briefly.
    let all = f.call("fugue_agent_pipeline_status", json!({}));
    assert_eq!(all["pipelines"].as_array().unwrap().len(), 1);
    assert_eq!(all["pipelines"][0]["events"], json!([]));
}

#[test]
fn followup_then_complete() {
    let dir = Dir::new("agent-followup");
    let repo = repo(&dir);
    // The base is a branch checked out nowhere: the merge moves the ref by compare-and-swap.
    git(&repo, &["branch", "dev"]);
    let main_before = git(&repo, &["rev-parse", "main"]);
    let analyzer = script(
        &dir,
        "analyzer",
        &format!(
            r#"if [ "$FUGUE_ATTEMPT" = 1 ]; then
  exec {BIN} verdict followup --reason 'no tests' --prompt "Add tests for it; don't forget \"edge\" cases" --cost 0.25
fi
grep -q 'line 2' feature.txt && exec {BIN} verdict complete --reason 'good now' --cost 0.5
exit 3
"#
        ),
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "Write the feature", "base_branch": "dev",
               "implementer": implementer(&dir), "analyzer": analyzer}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "implementer")["attempt"], 2);
    assert_eq!(stage(&p, "analyzer")["attempt"], 2);
    assert_eq!(stage(&p, "qa")["status"], "skipped");
    assert_eq!(p["followups"], 1);
    assert_eq!(p["cost_usd"], 0.75);
    assert!(event_types(&p).contains(&"followup".to_string()));
    // The implementer's second prompt was the analyzer's follow-up prompt, exactly.
    assert_eq!(
        git(&repo, &["show", "dev:prompt-2.txt"]),
        "Add tests for it; don't forget \"edge\" cases"
    );
    assert_eq!(git(&repo, &["show", "dev:feature.txt"]), "line 1\nline 2");
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);
    assert!(!repo.join("feature.txt").exists(), "main's checkout is untouched");
}

#[test]
fn a_failed_verdict_blocks_then_retry_completes() {
    let dir = Dir::new("agent-failed");
    let repo = repo(&dir);
    let analyzer = script(
        &dir,
        "analyzer",
        r#"if [ "$FUGUE_ATTEMPT" = 1 ]; then
  printf '{"verdict": "FAILED", "reason": "the approach is wrong", "findings": ["x"]}' > "$FUGUE_VERDICT_FILE"
else
  printf '{"verdict": "complete", "reason": "fine after all"}' > "$FUGUE_VERDICT_FILE"
fi
"#,
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer(&dir), "analyzer": analyzer}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert_eq!(p["stage"], "analyzer");
    assert!(p["blocked_reason"].as_str().unwrap().contains("the approach is wrong"), "{p}");
    assert_eq!(p["allowed_actions"], json!(["retry", "followup", "cancel"]));
    assert_eq!(stage(&p, "analyzer")["status"], "blocked");
    assert_eq!(stage(&p, "analyzer")["verdict"], "failed");
    assert_eq!(git(&repo, &["log", "--oneline", "main"]).lines().count(), 1, "nothing merged");

    let err = f
        .call_err("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "followup"}));
    assert_eq!(err["code"], "invalid_argument");
    let after =
        f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    let q = &after["pipelines"][0];
    assert_eq!(q["status"], "running", "{after}");
    assert_eq!(q["stage"], "analyzer");
    assert!(q["pane_id"].is_string(), "the answer names the new attempt's pane: {after}");
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "analyzer")["attempt"], 2);
    assert_eq!(stage(&p, "implementer")["attempt"], 1);
    assert_eq!(git(&repo, &["show", "main:feature.txt"]), "line 1");
}

#[test]
fn a_malformed_or_stale_verdict_is_a_failed_attempt() {
    let dir = Dir::new("agent-malformed");
    let repo = repo(&dir);
    // 1: a valid verdict but a failing exit; 2: malformed; 3: nothing (attempt 1's file must not
    // be read); 4: valid.
    let analyzer = script(
        &dir,
        "analyzer",
        r#"case "$FUGUE_ATTEMPT" in
  1) printf '{"verdict": "complete", "reason": "r"}' > "$FUGUE_VERDICT_FILE"; exit 1 ;;
  2) printf '{"verdict": "complete", "reason": ' > "$FUGUE_VERDICT_FILE" ;;
  3) ls "$(dirname "$FUGUE_VERDICT_FILE")" ;;
  *) printf '{"verdict": "complete", "reason": "r"}' > "$FUGUE_VERDICT_FILE" ;;
esac
"#,
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer(&dir), "analyzer": analyzer,
               "limits": {"max_attempts": 2}}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    let reason = p["blocked_reason"].as_str().unwrap();
    assert!(
        reason.contains("analyzer failed 2 attempt(s)") && reason.contains("malformed verdict"),
        "{reason}"
    );
    assert!(
        descriptions(&p).contains("analyzer attempt 1: the analyzer exited with code 1"),
        "{p}"
    );
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "analyzer")["attempt"], 4);
    assert!(descriptions(&p).contains("analyzer attempt 3: no verdict"), "{p}");
}

#[test]
fn qa_failing_once_sends_its_output_back_then_passes() {
    let dir = Dir::new("agent-qa");
    let repo = repo(&dir);
    let marks = dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let qa = script(
        &dir,
        "qa",
        r#"if [ ! -e "$MARKS/qa-failed" ]; then
  touch "$MARKS/qa-failed"
  echo "running 3 tests"
  echo "FAIL test_feature: expected two lines"
  exit 1
fi
echo "3 tests passed"
"#,
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer(&dir),
               "analyzer": approving_analyzer(&dir), "qa": qa, "env": {"MARKS": marks}}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(p["qa_loops"], 1);
    assert_eq!(stage(&p, "qa")["attempt"], 2);
    assert_eq!(stage(&p, "implementer")["attempt"], 2);
    assert_eq!(stage(&p, "analyzer")["attempt"], 2, "the fix is analyzed again");
    assert!(event_types(&p).contains(&"qa_failed".to_string()));
    let prompt = git(&repo, &["show", "main:prompt-2.txt"]);
    assert!(prompt.contains("QA failed") && prompt.contains("exited with code 1"), "{prompt}");
    assert!(prompt.contains("FAIL test_feature: expected two lines"), "{prompt}");
}

#[test]
fn a_merge_conflict_blocks_and_keeps_the_branch() {
    let dir = Dir::new("agent-conflict");
    let repo = repo(&dir);
    let changer = script(
        &dir,
        "changer",
        "set -e\necho 'from the pipeline' > README.md\ngit commit -qam 'pipeline edits README'\n",
    );
    // QA moves the base under the pipeline: a conflicting commit lands on main first.
    let qa = script(
        &dir,
        "qa",
        "set -e\ncd \"$REPO\"\necho 'from someone else' > README.md\ngit commit -qam 'main edits README'\n",
    );
    let mut f = start(&[]);
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": changer, "qa": qa, "env": {"REPO": repo}}),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let worktree = PathBuf::from(created["worktree"].as_str().unwrap());
    let branch = created["branch"].as_str().unwrap().to_string();
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert_eq!(p["stage"], "merger");
    let reason = p["blocked_reason"].as_str().unwrap();
    assert!(reason.contains("merge conflict") && reason.contains("README.md"), "{reason}");
    // Nothing was lost or half-done: main has only its own commit, the branch and worktree stay.
    assert_eq!(std::fs::read_to_string(repo.join("README.md")).unwrap(), "from someone else\n");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(git_ok(&repo, &["rev-parse", "--verify", "--quiet", &branch]));
    assert!(worktree.join("README.md").exists());
    assert_eq!(git(&worktree, &["status", "--porcelain"]), "");

    // Resolve in the worktree, then retry: the merge lands.
    let out = Command::new("git")
        .arg("-C")
        .arg(&worktree)
        .args(["merge", "-q", "main"])
        .envs(GIT_ENV)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the merge there conflicts too");
    std::fs::write(worktree.join("README.md"), "from both\n").unwrap();
    git(&worktree, &["commit", "-qam", "resolve"]);
    let after =
        f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    assert_eq!(after["pipelines"][0]["stage"], "merger");
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "merger")["attempt"], 2);
    assert_eq!(std::fs::read_to_string(repo.join("README.md")).unwrap(), "from both\n");
}

#[test]
fn a_dirty_base_checkout_blocks_the_merge_until_clean() {
    let dir = Dir::new("agent-dirty");
    let repo = repo(&dir);
    // The implementer dirties the user's checkout of main (a tracked file) as it works.
    let implementer = script(
        &dir,
        "implementer",
        "set -e\necho work > work.txt\ngit add work.txt\ngit commit -qm work\necho 'local edit' >> \"$REPO/README.md\"\n",
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer, "env": {"REPO": repo}}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert!(p["blocked_reason"].as_str().unwrap().contains("uncommitted changes"), "{p}");
    assert_eq!(std::fs::read_to_string(repo.join("README.md")).unwrap(), "hello\nlocal edit\n");
    assert_eq!(git(&repo, &["log", "--oneline"]).lines().count(), 1);
    git(&repo, &["checkout", "--", "README.md"]);
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(std::fs::read_to_string(repo.join("work.txt")).unwrap(), "work\n");
}

#[test]
fn a_limit_reached_blocks_with_its_reason() {
    let dir = Dir::new("agent-limit");
    let repo = repo(&dir);
    let analyzer = script(
        &dir,
        "analyzer",
        &format!(
            "exec {BIN} verdict followup --reason 'still not done' --prompt \"round $FUGUE_ATTEMPT\" --cost 0.5\n"
        ),
    );
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer(&dir), "analyzer": analyzer,
               "limits": {"max_followups": 1}}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert!(p["blocked_reason"].as_str().unwrap().contains("max_followups (1)"), "{p}");
    assert_eq!(stage(&p, "implementer")["attempt"], 2, "no run past the limit: {p}");
    assert_eq!(p["cost_usd"], 1.0);

    // The cost limit: retry with a budget the agents already spent blocks before any spawn.
    let after = f.call(
        "fugue_agent_pipeline_control",
        json!({"pipeline_id": id, "action": "retry", "limits": {"max_cost_usd": 1.0}}),
    );
    let q = &after["pipelines"][0];
    assert_eq!(q["status"], "blocked", "{after}");
    assert!(q["blocked_reason"].as_str().unwrap().contains("max_cost_usd"), "{after}");
    assert_eq!(q["limits"]["max_cost_usd"], 1.0);
    assert_eq!(q["limits"]["max_followups"], 1, "limits given are laid over the old ones");
    let p = status(&mut f, &id);
    assert_eq!(stage(&p, "implementer")["attempt"], 2);
    let bad = f.call_err(
        "fugue_agent_pipeline_control",
        json!({"pipeline_id": id, "action": "retry", "limits": {"max_bogus": 1}}),
    );
    assert_eq!(bad["code"], "invalid_argument");
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
}

#[test]
fn cancel_kills_the_running_stage_and_keeps_the_work() {
    let dir = Dir::new("agent-cancel");
    let repo = repo(&dir);
    let slow = script(&dir, "slow", "echo work > work.txt\necho waiting\nexec sleep 600\n");
    let mut f = start(&[]);
    let created = f.call(
        "fugue_agent_pipeline_create",
        json!({"repo": repo, "task": "t", "implementer": slow}),
    );
    let id = created["pipeline_id"].as_str().unwrap().to_string();
    let worktree = PathBuf::from(created["worktree"].as_str().unwrap());
    let p = wait_for_stage(&mut f, &id, "implementer");
    let pane = p["pane_id"].as_str().unwrap().to_string();
    // The agent's pane is an ordinary pane: listed, readable.
    let sessions = f.call("fugue_list_sessions", json!({}));
    let session = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == created["session"])
        .unwrap_or_else(|| panic!("no pipeline session in {sessions}"));
    assert!(session.to_string().contains(&pane));
    f.expect(&pane, "^waiting$");
    let pid = f.call("fugue_get_status", json!({"pane_id": pane}))["pid"].as_u64().unwrap() as u32;
    assert!(alive(pid));

    let err =
        f.call_err("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    assert_eq!(err["code"], "invalid_state");
    assert!(err["message"].as_str().unwrap().contains("only cancel"), "{err}");
    let after =
        f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
    let q = &after["pipelines"][0];
    assert_eq!(q["status"], "cancelled", "{after}");
    assert_eq!(q["allowed_actions"], json!([]));
    assert!(gone_within(pid, Duration::from_secs(5)), "the agent was killed");
    assert!(worktree.join("work.txt").exists(), "the worktree is kept");
    assert!(git_ok(
        &repo,
        &["rev-parse", "--verify", "--quiet", created["branch"].as_str().unwrap()]
    ));
    let err =
        f.call_err("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "retry"}));
    assert_eq!(err["code"], "invalid_state");
    // A waiting status returns at once for a pipeline that is not running.
    let s = f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "wait_ms": 60000}));
    assert_eq!(s["changed"], true);
}

#[test]
fn a_killed_fugue_resumes_the_pipeline_on_restart() {
    let dir = Dir::new("agent-restart");
    let repo = repo(&dir);
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
    let repo = repo(&dir);
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
    let repo = repo(&dir);
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
    let repo = repo(&dir);
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
    let other_repo = self::repo(&other);
    let s = f.call("fugue_agent_pipeline_status", json!({"repo": other_repo}));
    assert_eq!(s["pipelines"], json!([]));
    assert!(!other_repo.join(".state").exists());
}

#[test]
fn the_verdict_command_writes_valid_json_atomically() {
    let dir = Dir::new("agent-verdict");
    let file = dir.join("v/verdict.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let run = |args: &[&str], env: Option<&Path>| {
        let mut cmd = Command::new(BIN);
        cmd.arg("verdict").args(args).env_remove("FUGUE_VERDICT_FILE");
        if let Some(path) = env {
            cmd.env("FUGUE_VERDICT_FILE", path);
        }
        cmd.output().unwrap()
    };
    let out = run(
        &[
            "followup",
            "--reason",
            "needs \"tests\"",
            "--prompt",
            "add tests\nfor x",
            "--cost",
            "0.25",
        ],
        Some(&file),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"verdict": "followup", "reason": "needs \"tests\"", "followup_prompt": "add tests\nfor x", "cost_usd": 0.25})
    );
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["verdict.json"], "no temp file left");

    // Replacing it is atomic too; a bad call changes nothing and exits 2.
    let out = run(&["complete", "--reason", "ok", "--file", file.to_str().unwrap()], None);
    assert!(out.status.success());
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap()["verdict"],
        "complete"
    );
    for bad in [
        &["followup", "--reason", "r"][..],
        &["complete"],
        &["maybe", "--reason", "r"],
        &["failed", "--reason", "r", "--cost", "x"],
    ] {
        let out = run(bad, Some(&file));
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    }
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap()["verdict"],
        "complete"
    );
    let out = run(&["complete", "--reason", "r"], None);
    assert_eq!(out.status.code(), Some(2), "no file to write");
}

#[test]
fn the_duration_limit_stops_a_running_stage() {
    let dir = Dir::new("agent-duration");
    let repo = repo(&dir);
    let hang = script(&dir, "hang", "echo still working\nexec sleep 600\n");
    let mut f = start(&[]);
    let id = create(
        &mut f,
        // Long enough that even a loaded machine sees the stage start before the limit.
        json!({"repo": repo, "task": "t", "implementer": hang, "limits": {"max_duration_s": 5}}),
    );
    let p = wait_for_stage(&mut f, &id, "implementer");
    let pane = p["pane_id"].as_str().unwrap().to_string();
    let pid = f.call("fugue_get_status", json!({"pane_id": pane}))["pid"].as_u64().unwrap() as u32;
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert!(p["blocked_reason"].as_str().unwrap().contains("max_duration_s"), "{p}");
    assert!(p["duration_ms"].as_u64().unwrap() >= 5000);
    assert!(gone_within(pid, Duration::from_secs(5)), "the agent was stopped");
    // Its output stays readable: the pane of the stopped attempt is named in the stage.
    assert_eq!(stage(&p, "implementer")["pane_id"], pane);
    assert!(f.text(&pane).contains("still working"));
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
}

#[test]
fn two_pipelines_land_on_one_base_one_after_the_other() {
    let dir = Dir::new("agent-two");
    let repo = repo(&dir);
    let writer = script(&dir, "writer", "set -e\necho \"$WHAT\" > \"$WHAT.txt\"\n");
    let mut f = start(&[]);
    let ids: Vec<String> = ["one", "two"]
        .iter()
        .map(|what| {
            create(
                &mut f,
                json!({"repo": repo, "task": what, "implementer": writer, "env": {"WHAT": what}}),
            )
        })
        .collect();
    for id in &ids {
        let p = settle(&mut f, id);
        assert_eq!(p["status"], "complete", "{p}");
        assert!(event_types(&p).contains(&"committed".to_string()), "left changes are committed");
    }
    assert_eq!(git(&repo, &["show", "main:one.txt"]), "one");
    assert_eq!(git(&repo, &["show", "main:two.txt"]), "two");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let merges = git(&repo, &["rev-list", "--merges", "--count", "main"]);
    assert_eq!(merges, "1", "the second landed as a merge commit onto the first");
}

#[test]
fn another_fugue_only_reads_a_driven_pipeline() {
    let dir = Dir::new("agent-other");
    let repo = repo(&dir);
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
