//! The well-known ways out of a sandboxed pane, each tried for real and each expected to fail:
//! links out of a root, `/proc/self/root`, renaming a root away, tracing or signalling fugue,
//! fugue's control socket and state, a setuid binary. The test checks the file system and fugue
//! itself afterwards, not only the command's status.

use crate::sandbox::{failed, nobodys, outside, run, sandboxed, sandboxed_as_nobody};
use crate::util::{alive, path_str};
use std::process::Command;

#[test]
fn links_and_proc_root_do_not_lead_out_of_a_root() {
    // Both outside the temporary directory, which a pane may write (and so rename in).
    let root = outside("esc-links-root");
    let out = outside("esc-links");
    let victim = out.write("victim", "original");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let (r, o, v) = (root.path_str(), out.path_str(), path_str(&victim));
    let tries = [
        format!("ln -s {o} {r}/dirlink && touch {r}/dirlink/new"),
        format!("ln {v} {r}/hard && cp /etc/hostname {r}/hard"),
        format!("cp /etc/hostname /proc/self/root{v}"),
        format!("mv {v} {r}/moved-in"),
        format!("mv {r} {r}.moved"),
        format!("python3 -c \"import os; os.rename('{r}', '{r}.py')\""),
    ];
    for command in &tries {
        let done = run(&mut f, command);
        assert!(failed(&done), "{command}: {done}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original");
    assert!(!out.join("new").exists(), "a file was made outside through a link");
    assert!(root.path.is_dir(), "the root was renamed away");
}

/// fugue's control socket and state are out of a pane's reach, and fugue cannot be signalled or
/// traced from it. Run as nobody, where fugue and the pane share a uid (root would be refused
/// by the user namespace alone).
#[test]
fn fugue_itself_is_out_of_reach() {
    let dir = nobodys("esc-fugue");
    let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) else {
        return;
    };
    let pid = f.pid();
    // setpriv execs fugue, so the child's pid is fugue's; its socket is /tmp/fugue-65534/PID.sock.
    let socket = format!("/tmp/fugue-65534/{pid}.sock");
    crate::util::wait_until("the control socket", || std::path::Path::new(&socket).exists());
    let tries = [
        format!("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{socket}')\""),
        format!("kill -TERM {pid}"),
        format!("kill -0 {pid}"),
        format!(
            "python3 -c \"import ctypes, sys; l = ctypes.CDLL(None, use_errno=True); \
             sys.exit(0 if l.ptrace(16, {pid}, 0, 0) == 0 else 1)\""
        ),
        format!("cat /proc/{pid}/environ > /dev/null"),
    ];
    for command in &tries {
        let done = run(&mut f, command);
        assert!(failed(&done), "{command}: {done}");
    }
    assert!(alive(pid), "fugue survived its pane's attempts");
    // Another pane's private directory (its command files are run by its shell) is hidden: the
    // pane sees its own directory only.
    f.call("fugue_create_session", serde_json::json!({}));
    let seen = run(&mut f, "ls /tmp/fugue-private-65534");
    assert_eq!(seen["output"].as_str().unwrap().lines().count(), 1, "{seen}");
    // And fugue still answers.
    assert_eq!(run(&mut f, "echo alive")["output"], "alive");
}

/// A setuid-root binary gives a sandboxed nobody no privilege (no_new_privs), where the same
/// binary outside the sandbox does: the control shows the test means something.
#[test]
fn a_setuid_binary_gains_nothing() {
    let bins = outside("esc-setuid");
    let id = bins.join("id");
    std::fs::copy("/usr/bin/id", &id).unwrap();
    let ok = Command::new("chmod").args(["4755", path_str(&id)]).status().unwrap();
    assert!(ok.success());
    let _ = Command::new("chmod").args(["755", bins.path_str()]).status();
    let control = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", path_str(&id), "-u"])
        .output();
    let Ok(control) = control else {
        crate::util::skip("setpriv", "not installed");
        return;
    };
    if String::from_utf8_lossy(&control.stdout).trim() != "0" {
        crate::util::skip(bins.path_str(), "is on a nosuid file system");
        return;
    }
    let dir = nobodys("esc-setuid-run");
    let mut f = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]).unwrap();
    let euid = run(&mut f, &format!("{} -u", path_str(&id)));
    assert_eq!(euid["output"], "65534", "{euid}");
}

/// fugue's state directory, even inside a writable root, is out of a pane's reach: what a pane
/// writes there lands in an empty file system of its own, never in fugue's files.
#[test]
fn fugues_state_is_out_of_reach_even_inside_a_root() {
    let root = outside("esc-state");
    let state = root.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("pipeline.json"), "fugue's own").unwrap();
    let s = path_str(&state).to_string();
    let mut f =
        sandboxed(&root.path, &["--sandbox", "workspace-write"], &[("FUGUE_STATE_DIR", &s)]);
    let seen =
        run(&mut f, &format!("ls -A {s}; echo forged > {s}/pipeline.json; echo x > {s}/new"));
    assert_eq!(seen["output"], "", "the state directory looks empty from the pane: {seen}");
    assert_eq!(std::fs::read_to_string(state.join("pipeline.json")).unwrap(), "fugue's own");
    assert!(!state.join("new").exists());
}
