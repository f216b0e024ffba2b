//! The layout template (`sandbox::template`): panes started from a copy of a file system laid
//! out once keep every promise a pane laid out in full keeps, see a root made again rather than
//! the one the template bound, and a template whose holder is gone, or whose pid another process
//! took, leads nowhere. As root and as nobody where it matters.

use crate::sandbox::{as_root_and_nobody, outside, sandboxed};
use crate::util::{Dir, Fugue, path_str};
use serde_json::{Value, json};

/// Runs `command` in a pane of its own (`fugue_run_parallel`: no live shell, so no directory of
/// its own to bind back, the template's case); its result.
fn job(f: &mut Fugue, command: &str) -> Value {
    let args = json!({"commands": [{"command": command}], "tails": "all", "timeout_ms": 20000});
    f.call("fugue_run_parallel", args)["results"][0].clone()
}

fn said(result: &Value) -> String {
    result["output_tail"].as_str().unwrap_or_default().to_string()
}

/// The layout holders of `fugue`: the processes it started as `fugue __sandbox-layout`.
fn holders(fugue: u32) -> Vec<u32> {
    children_running(fugue, b"__sandbox-layout")
}

/// The children of `parent` that run `fugue WORD ...`.
fn children_running(parent: u32, word: &[u8]) -> Vec<u32> {
    let parent_pid = parent.to_string();
    let dir = std::fs::read_dir("/proc").unwrap().flatten();
    let pids = dir.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
    pids.filter(|pid| {
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let parent = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1));
        line.split(|b| *b == 0).nth(1) == Some(word) && parent == Some(parent_pid.as_str())
    })
    .collect()
}

/// A pane started from the template is as confined as one laid out in full: writes and metadata
/// changes outside fail (EROFS, which Landlock alone would not give a `chmod`), `.git` is
/// read-only, the mount API is refused, its `/proc` and `/dev/pts` are its own, and what it
/// leaves behind dies with it. As root and as nobody.
#[test]
fn a_pane_from_the_template_keeps_every_promise() {
    let root = Dir::new("tpl-promises");
    as_root_and_nobody(&root.path, "tpl-promises-nobody", promises_case);
}

fn promises_case(f: &mut Fugue, who: &str) {
    let out = outside(&format!("tpl-{who}"));
    let file = out.write("file", "x");
    let owner = std::fs::metadata(&file).map(|m| std::os::unix::fs::MetadataExt::mode(&m));
    job(f, "true");
    assert_eq!(holders(f.pid()).len(), 1, "{who}: one holder for the server's plan");
    let target = out.join("new");
    let wrote = job(f, &format!("echo x > {}", path_str(&target)));
    assert_ne!(wrote["exit_code"], 0, "{who}: {wrote}");
    assert!(!target.exists(), "{who}: a file outside was written");
    let chmod = job(f, &format!("chmod 0777 {}", path_str(&file)));
    assert!(said(&chmod).contains("Read-only file system"), "{who}: {chmod}");
    let after = std::fs::metadata(&file).map(|m| std::os::unix::fs::MetadataExt::mode(&m));
    assert_eq!(owner.ok(), after.ok(), "{who}: the mode changed outside");
    let mount = job(f, "unshare -m true; echo $?");
    assert_ne!(said(&mount).trim(), "0", "{who}: a new mount namespace was made: {mount}");
    let procs = job(f, "ls /proc | grep -c '^[0-9]'");
    assert!(said(&procs).trim().parse::<u32>().is_ok_and(|n| n <= 4), "{who}: {procs}");
    let own = job(f, "ls /dev/pts");
    assert_eq!(said(&own).trim(), "ptmx", "{who}: {own}");
    // A daemon that left the pane's session, named so the host's /proc finds it: it must be gone
    // once the pane has ended (its pid namespace with it), not merely quiet for a while.
    let tag = format!("417.{}", std::process::id());
    let leave = format!("setsid sleep {tag} >/dev/null 2>&1 & sleep 0.2");
    assert_eq!(job(f, &leave)["exit_code"], 0, "{who}");
    let left = || sleeping(&tag);
    let gone = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !left().is_empty() && std::time::Instant::now() < gone {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(left().is_empty(), "{who}: {:?} outlived its pane", left());
}

/// The host's processes running `sleep TAG`.
fn sleeping(tag: &str) -> Vec<u32> {
    let dir = std::fs::read_dir("/proc").unwrap().flatten();
    let pids = dir.filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
    let wanted = format!("sleep\0{tag}\0");
    pids.filter(|pid| {
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        line.ends_with(wanted.as_bytes())
    })
    .collect()
}

/// A writable root moved away and made again between two panes: the second pane writes into the
/// new directory, as the name now says, not into the old one the template had bound (issue 30:
/// a template serves only while what it bound is what the paths name).
#[test]
fn a_root_made_again_is_the_one_the_next_pane_writes() {
    let dir = outside("tpl-again");
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    let mut f = sandboxed(&root, &["--sandbox", "workspace-write"], &[]);
    assert_eq!(job(&mut f, "echo one > first")["exit_code"], 0);
    let before = holders(f.pid());
    std::fs::rename(&root, dir.join("old")).unwrap();
    std::fs::create_dir(&root).unwrap();
    let second = job(&mut f, &format!("echo two > {}/second", path_str(&root)));
    assert_eq!(second["exit_code"], 0, "{second}");
    assert!(root.join("second").exists(), "the new root was not written");
    assert!(!dir.join("old/second").exists(), "the old root was written");
    let after = holders(f.pid());
    assert_eq!(after.len(), 1, "the stale template was ended: {after:?}");
    assert_ne!(before, after, "a new template was laid out");
}

/// The holder killed: the next pane starts (from a new template) and is as confined.
#[test]
fn a_killed_holder_is_replaced_and_the_pane_still_confined() {
    let root = Dir::new("tpl-killed");
    let out = outside("tpl-killed");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    job(&mut f, "true");
    let first = holders(f.pid());
    assert_eq!(first.len(), 1, "{first:?}");
    crate::util::signal(first[0], libc::SIGKILL);
    let gone = crate::util::gone_within(first[0], std::time::Duration::from_secs(5));
    assert!(gone, "the holder {} lives on", first[0]);
    let target = out.join("x");
    let wrote = job(&mut f, &format!("touch {}", path_str(&target)));
    assert_ne!(wrote["exit_code"], 0, "{wrote}");
    assert!(!target.exists());
    assert_eq!(job(&mut f, "touch inside")["exit_code"], 0);
    assert!(root.join("inside").exists());
    let now = holders(f.pid());
    assert!(now.len() == 1 && now != first, "a new holder: {first:?} -> {now:?}");
}

/// The launcher enters a template only if its mount namespace is the one the plan names: a plan
/// whose holder's pid now names another process (here the test itself, on the host's mounts)
/// is laid out in full, and a `chmod` outside still fails with EROFS. Without the check the pane
/// ran on the host's mounts, where Landlock does not stop a `chmod`.
#[test]
fn a_template_pid_taken_by_another_process_leads_nowhere() {
    let root = Dir::new("tpl-pid");
    let out = outside("tpl-pid");
    let file = out.write("file", "x");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    f.call("fugue_create_session", json!({"command": "sleep 30"}));
    let launchers = children_running(f.pid(), b"__sandbox-exec");
    assert_eq!(launchers.len(), 1, "one pane, one launcher: {launchers:?}");
    let pid = launchers[0];
    let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let words: Vec<&[u8]> = line.split(|b| *b == 0).collect();
    assert_eq!(words[1], b"__sandbox-exec", "the pane's process is the launcher");
    let mut plan: Value = serde_json::from_slice(words[2]).unwrap();
    assert!(plan["template"]["pid"].is_u64(), "the pane came from a template: {plan}");
    plan["template"]["pid"] = json!(std::process::id());
    let chmod = format!("chmod 0777 {} 2>&1; true", path_str(&file));
    let done = std::process::Command::new(crate::util::BIN)
        .args(["__sandbox-exec", &plan.to_string(), "--", "sh", "-c", &chmod])
        .current_dir(&root.path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(text.contains("Read-only file system"), "{text} {done:?}");
    let mode = std::fs::metadata(&file).map(|m| std::os::unix::fs::MetadataExt::mode(&m) & 0o777);
    assert_eq!(mode.ok(), Some(0o644), "the mode changed outside");
}

/// `.git` in the root is read-only in a pane from the template, as in one laid out in full.
#[test]
fn git_stays_read_only_in_a_pane_from_the_template() {
    let dir = outside("tpl-git");
    let repo = crate::util::git_repo(&dir);
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write"], &[]);
    let wrote = job(&mut f, "echo x >> .git/config; echo $?");
    assert!(said(&wrote).contains("Read-only file system"), "{wrote}");
    assert!(!std::fs::read_to_string(repo.join(".git/config")).unwrap().ends_with("x\n"));
    assert_eq!(holders(f.pid()).len(), 1, "the pane came from a template");
}

/// The holders end with fugue, whether it ends on its own (stdin closed) or is killed.
#[test]
fn the_holders_end_with_fugue() {
    for kill in [false, true] {
        let root = Dir::new("tpl-end");
        let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
        job(&mut f, "true");
        let held = holders(f.pid());
        assert_eq!(held.len(), 1, "{held:?}");
        if kill {
            crate::util::signal(f.pid(), libc::SIGKILL);
        }
        drop(f);
        let gone = crate::util::gone_within(held[0], std::time::Duration::from_secs(5));
        assert!(gone, "the holder {} outlived fugue (killed: {kill})", held[0]);
    }
}
