//! `fugue verdict`: what it writes, what it refuses, and that the pipeline accepts what it writes.

use super::*;
use crate::util::*;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// An analyzer whose whole script is `fugue verdict complete`: no reason, no cost.
#[test]
fn a_bare_complete_verdict_is_accepted() {
    let dir = Dir::new("agent-bare");
    let repo = git_repo(&dir);
    let analyzer = script(&dir, "analyzer", &format!("{BIN} verdict complete\n"));
    let mut f = start(&[]);
    let id = create(
        &mut f,
        json!({"repo": repo, "task": "t", "implementer": implementer(&dir), "analyzer": analyzer}),
    );
    let p = settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(stage(&p, "analyzer")["verdict"], "complete");
    assert_eq!(stage(&p, "analyzer")["reason"], "no reason given");
    assert_eq!(git(&repo, &["show", "main:feature.txt"]), "line 1");
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
