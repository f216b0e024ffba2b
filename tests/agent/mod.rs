//! The agent pipeline through the real binary: fake agents (small shell scripts) in real git
//! repositories in temp directories. Every wait is a `fugue_agent_pipeline_status` call with
//! `wait_ms`, so the tests follow the pipeline's own events and never sleep.
//!
//! This file holds the fixtures (agents as scripts, a fugue that keeps git to itself, waits on a
//! pipeline's events); `machine` drives the state machine end to end, `recovery` a pipeline across
//! restarts and beside other fugues, `verdict` the verdict command line and what the pipeline
//! accepts of it.

// The state machine end to end: happy path, follow-ups, failures, limits, cancel.
mod machine;
// Across fugue's end and beside other fugues: restarts, corrupt state, read-only peers, bad input.
mod recovery;
// The verdict command line, and a pipeline taking what it writes.
mod verdict;

use crate::util::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// Writes an executable script and returns its path, ready to be an agent's command.
#[track_caller]
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
/// An analyzer that approves, through fugue's own `verdict`: the binary where `nobody` can run it
/// too (a stage of a fugue started as nobody, from a clone in a 0700 home).
pub fn approving_analyzer(dir: &Dir) -> String {
    let bin = crate::sandbox::bin_for_nobody();
    let line = format!("exec {} verdict complete --reason 'looks right'\n", bin.display());
    script(dir, "analyzer", &line)
}

pub fn start(extra: &[(&str, &str)]) -> Fugue {
    let mut env: Vec<(&str, &str)> = GIT_ENV.to_vec();
    env.extend_from_slice(extra);
    Fugue::start_with(&env)
}

#[track_caller]
pub fn create(f: &mut Fugue, args: Value) -> String {
    let created = f.call("fugue_agent_pipeline_create", args);
    created["pipeline_id"].as_str().unwrap().to_string()
}

#[track_caller]
pub fn status(f: &mut Fugue, id: &str) -> Value {
    let s = f.call("fugue_agent_pipeline_status", json!({"pipeline_id": id, "events": 50}));
    s["pipelines"][0].clone()
}

/// Waits (with `until: settled`) until the pipeline is blocked, complete or cancelled.
#[track_caller]
pub fn settle(f: &mut Fugue, id: &str) -> Value {
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
#[track_caller]
pub fn wait_for_stage(f: &mut Fugue, id: &str, stage: &str) -> Value {
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

#[track_caller]
pub fn event_types(p: &Value) -> Vec<String> {
    p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

#[track_caller]
pub fn descriptions(p: &Value) -> String {
    p["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["description"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[track_caller]
pub fn stage<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name).unwrap()
}
