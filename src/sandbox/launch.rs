//! The launcher: `fugue __sandbox-exec PLAN -- PROGRAM ARGS...`, run as a pane's process. It
//! confines the program as `PLAN` says; if any step fails it prints why and exits 125 — it never
//! runs the program unconfined.
//!
//! The steps, in order: a user namespace (the person's own uid mapped to itself, so files keep
//! their owners) with a mount namespace, or the network holder's user and network namespace
//! joined and a mount namespace of its own; the pane's file system laid out (`mounts`: everything
//! read-only but the writable roots, private temporary directories, `/run` and fugue's private
//! directories covered, every `.git` read-only); a pid namespace with a small init that locks
//! itself and what it forks down (`lockdown`), and the program's process it forks, which drops its
//! capabilities and execs (`tree`). The launcher stays, as
//! the pane's process in fugue's eyes, and ends as the program ends. The fallback (no user
//! namespaces) has no namespaces and no mounts, only the lockdown.

use super::{landlock, template};
use std::process::ExitCode;

pub(crate) use super::launch_plan::Plan;

/// The argument vector that runs `argv` under `plan`: fugue's own binary as the launcher.
pub(crate) fn wrap(plan: &Plan, argv: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = vec![
        "/proc/self/exe".into(),
        "__sandbox-exec".into(),
        serde_json::to_string(plan).unwrap_or_default().into(),
        "--".into(),
    ];
    out.extend(argv.iter().cloned());
    out
}

/// `fugue __sandbox-exec PLAN -- PROGRAM ARGS...`: forks the server of the program's sockets
/// (`lockdown::serve`), then confines itself and execs the program in its place, so the pane's
/// pid is the program's.
pub(crate) fn main(plan: &str, program: &[String]) -> ExitCode {
    super::tree::ignore_signals();
    let plan: Plan = match serde_json::from_slice(plan.as_bytes()) {
        Ok(plan) => plan,
        Err(e) => return super::tree::fail(&format!("bad plan: {e}")),
    };
    match confine(&plan) {
        Ok(entered) => super::tree::run(&plan, program, entered.as_ref()),
        Err(why) => super::tree::fail(&why),
    }
}

/// A launcher's line that is not `PLAN -- PROGRAM [ARGS...]`: it fails as any launcher step does.
pub(crate) fn misuse() -> ExitCode {
    super::tree::fail("usage: fugue __sandbox-exec PLAN -- PROGRAM [ARGS...]")
}

/// Runs the launcher once with `plan` and a program that does nothing; `Err` says why the
/// sandbox cannot be made here.
pub(crate) fn probe(plan: &Plan) -> Result<(), String> {
    let argv = wrap(plan, &["/proc/self/exe".into(), "--version".into()]);
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = crate::inherit::spawn(&mut cmd)
        .and_then(std::process::Child::wait_with_output)
        .map_err(|e| format!("cannot start the sandbox launcher: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let why = text.trim().trim_start_matches("fugue: sandbox unavailable: ");
    Err(if why.is_empty() {
        format!("the sandbox launcher failed ({})", out.status)
    } else {
        why.to_string()
    })
}

/// The namespaces and the mounts (see `mounts`): copied from the plan's layout template when it
/// has one that is still there (`template`), else laid out in full; nothing in the fallback but
/// the check that Landlock is there. The pid namespace comes later (`tree::run`).
fn confine(plan: &Plan) -> Result<Option<template::Entered>, String> {
    let abi = landlock::abi();
    if abi < landlock::MIN_ABI {
        // Said before any namespace is made: Landlock is what the sandbox rests on.
        landlock::restrict(abi, &[])?;
    }
    if plan.fallback {
        return Ok(None);
    }
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    let template = plan.template.as_ref().and_then(|t| Some((t, template::open(t)?)));
    let entered = match template {
        Some((template, reached)) => {
            let entered = template::enter(template, plan, reached)?;
            super::mounts::per_pane(plan)?;
            Some(entered)
        }
        None => {
            super::anew::lay_out_in(plan, &cwd)?;
            None
        }
    };
    // The old directory is on the tree now read-only, under what was bound on it.
    std::env::set_current_dir(&cwd).map_err(|e| format!("cd {}: {e}", cwd.display()))?;
    Ok(entered)
}
