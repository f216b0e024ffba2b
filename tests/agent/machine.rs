//! The agent pipeline's state machine end to end: the happy path, follow-ups, failed and malformed
//! verdicts, QA loops, merge conflicts, limits, cancel, and two pipelines on one base.

use super::*;
use crate::util::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_happy_path_merges_into_the_base_branch() {
    let dir = Dir::new("agent-happy");
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
    let repo = git_repo(&dir);
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
fn the_duration_limit_stops_a_running_stage() {
    let dir = Dir::new("agent-duration");
    let repo = git_repo(&dir);
    let hang = script(&dir, "hang", "echo still working\nexec sleep 600\n");
    let mut f = start(&[]);
    let id = create(
        &mut f,
        // Long enough that even a loaded machine sees the stage start before the limit.
        json!({"repo": repo, "task": "t", "implementer": hang, "limits": {"max_duration_s": 10}}),
    );
    let p = wait_for_stage(&mut f, &id, "implementer");
    let pane = p["pane_id"].as_str().unwrap().to_string();
    let pid = f.call("fugue_get_status", json!({"pane_id": pane}))["pid"].as_u64().unwrap() as u32;
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "blocked", "{p}");
    assert!(p["blocked_reason"].as_str().unwrap().contains("max_duration_s"), "{p}");
    assert!(p["duration_ms"].as_u64().unwrap() >= 10_000);
    assert!(gone_within(pid, Duration::from_secs(5)), "the agent was stopped");
    // Its output stays readable: the pane of the stopped attempt is named in the stage.
    assert_eq!(stage(&p, "implementer")["pane_id"], pane);
    assert!(f.text(&pane).contains("still working"));
    f.call("fugue_agent_pipeline_control", json!({"pipeline_id": id, "action": "cancel"}));
}

#[test]
fn two_pipelines_land_on_one_base_one_after_the_other() {
    let dir = Dir::new("agent-two");
    let repo = git_repo(&dir);
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
