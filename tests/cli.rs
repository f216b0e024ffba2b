//! The command line: `fugue call`, `fugue tools`, `--help`, `--version` and usage errors.

use crate::util::*;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).env("SHELL", "/bin/sh").output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn version_and_help() {
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("fugue {}\n", env!("CARGO_PKG_VERSION")));
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    for word in ["fugue call TOOL", "fugue tools", "serve"] {
        assert!(out.contains(word), "{word} missing from help");
    }
}

#[test]
fn every_command_prints_its_usage_for_help() {
    for (command, usage) in [
        ("serve", "Usage: fugue [serve]"),
        ("call", "Usage: fugue call TOOL [JSON]"),
        ("tools", "Usage: fugue tools"),
        ("verdict", "Usage: fugue verdict complete|followup|failed"),
        ("ls", "Usage: fugue ls [--json]"),
        ("attach", "Usage: fugue attach"),
    ] {
        for flag in ["--help", "-h"] {
            let (code, out, err) = run(&[command, flag]);
            assert_eq!(code, 0, "fugue {command} {flag}: {err}");
            assert!(out.starts_with(usage), "fugue {command} {flag} printed: {out}");
            assert!(err.is_empty(), "fugue {command} {flag} wrote to stderr: {err}");
        }
    }
    // After other arguments too: `fugue verdict complete --help` explains instead of writing.
    let (code, out, _) = run(&["verdict", "complete", "--help"]);
    assert_eq!((code, out.starts_with("Usage: fugue verdict")), (0, true), "{out}");
}

#[test]
fn tools_lists_every_tool_once() {
    let (code, out, _) = run(&["tools"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = out.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert!(names.contains(&"fugue_list_sessions") && names.contains(&"fugue_expect"), "{out}");
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
}

#[test]
fn call_runs_a_tool_and_prints_its_json() {
    let (code, out, _) = run(&["call", "fugue_list_sessions"]);
    assert_eq!(code, 0);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value, serde_json::json!({"sessions": []}));
    let (code, out, _) = run(&["call", "fugue_create_session", r#"{"command":"echo hi"}"#]);
    assert_eq!(code, 0);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert!(value["pane_id"].is_string());
}

#[test]
fn call_exits_1_on_a_tool_error_with_the_error_json() {
    let (code, out, _) = run(&["call", "fugue_get_status", r#"{"pane_id":"nope"}"#]);
    assert_eq!(code, 1);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["error"]["code"], "pane_not_found");
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    for args in [
        &["bogus"][..],
        &["call"][..],
        &["call", "no_such_tool"][..],
        &["call", "fugue_list_sessions", "not json"][..],
        &["call", "fugue_list_sessions", "[1]"][..],
        &["call", "fugue_list_sessions", "{}", "extra"][..],
        &["tools", "extra"][..],
        &["serve", "extra"][..],
        &["bogus", "--help"][..],
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?} wrote to stdout: {out}");
        assert!(err.starts_with("fugue: "), "{args:?}: {err}");
    }
}

/// `make install` puts the binary and the manual page under `$(DESTDIR)$(PREFIX)`, and the
/// installed binary runs; `make uninstall` takes both away. It installs the binary under test
/// (`-o build`: no release build inside the test suite).
#[test]
fn make_install_and_uninstall_honour_destdir_and_prefix() {
    if crate::exec::find("make").is_none() {
        return;
    }
    let dest = Dir::new("install");
    let make = |target: &str| {
        let out = Command::new("make")
            .args(["-s", "-o", "build", target, "PREFIX=/usr"])
            .arg(format!("BIN={BIN}"))
            .arg(format!("DESTDIR={}", dest.path_str()))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .output()
            .unwrap();
        assert!(out.status.success(), "make {target}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let bin = dest.join("usr/bin/fugue");
    let page = dest.join("usr/share/man/man1/fugue.1");
    make("install");
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    assert_eq!((mode(&bin), mode(&page)), (0o755, 0o644));
    let man = std::fs::read_to_string(env!("CARGO_MANIFEST_DIR").to_string() + "/man/fugue.1");
    assert_eq!(std::fs::read_to_string(&page).ok(), man.ok());
    let version = Command::new(&bin).arg("--version").output().unwrap();
    let expected = format!("fugue {}\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8_lossy(&version.stdout), expected);
    make("uninstall");
    assert!(!bin.exists() && !page.exists(), "make uninstall left files behind");
}

/// `make check`'s last words: each test that skipped something counts once, each missing program
/// is named once with why; `require` (in `.ci/run`) fails on a program reported not installed.
#[test]
fn skips_are_summed_up_per_test_and_required_programs_fail_ci() {
    let dir = Dir::new("skips");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/skipped");
    let run = |args: &[&str]| {
        let out = Command::new(script).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let log = dir.write(
        "log",
        "a::one\tzsh\tnot installed\na::one\tfish\tnot installed\nb::two\tzsh\tnot installed\n\
         c::three\tsshd\twould not start\n",
    );
    let log = path_str(&log);
    let (code, out) = run(&["summary", log]);
    assert_eq!(code, Some(0));
    let expected = format!(
        "skipped: 3 tests — zsh, fish not installed; sshd would not start ({log} names them)\n"
    );
    assert_eq!(out, expected);
    assert_eq!(
        run(&["require", log, "bash", "sshd"]).0,
        Some(0),
        "a program that would not start is not missing"
    );
    assert_eq!(run(&["require", log, "bash", "fish"]).0, Some(1));
    let empty = dir.write("empty", "");
    assert_eq!(run(&["summary", path_str(&empty)]), (Some(0), "skipped: none\n".to_string()));
    assert_eq!(run(&["require", path_str(&empty), "zsh"]).0, Some(0));
}
