//! The well-known ways out of a sandboxed pane, each tried for real and each expected to fail:
//! links out of a root, `/proc/self/root`, renaming a root away, tracing or signalling fugue,
//! fugue's control socket and state, a setuid binary. The test checks the file system and fugue
//! itself afterwards, not only the command's status.

use crate::sandbox::{failed, host_pid, nobodys, outside, run, sandboxed, sandboxed_as_nobody};
use crate::util::{Dir, Fugue, alive, gone_within, path_str};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

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

/// A worktree root's `.git` file cannot be pointed elsewhere (at a gitdir of the pane's, whose
/// config git would run), rewritten, replaced or removed. As root and as nobody.
#[test]
fn a_worktree_roots_git_file_is_read_only() {
    let dir = outside("esc-wt");
    git_file_case(&dir, None, "root");
    let dir = nobodys("esc-wt-nobody");
    git_file_case(&dir, Some(()), "nobody");
}

fn git_file_case(dir: &Dir, nobody: Option<()>, who: &str) {
    let repo = crate::util::git_repo(dir);
    let wt = dir.join("wt");
    crate::util::git(&repo, &["worktree", "add", "-q", path_str(&wt), "-b", "wt"]);
    let args = ["--sandbox", "workspace-write"];
    let mut f = match nobody {
        None => sandboxed(&wt, &args, &[]),
        Some(()) => {
            let ok = Command::new("chown").args(["-R", "nobody:nogroup", dir.path_str()]).status();
            assert!(ok.is_ok_and(|s| s.success()));
            let Some(f) = sandboxed_as_nobody(&wt, &args) else { return };
            f
        }
    };
    let before = std::fs::read_to_string(wt.join(".git")).unwrap();
    let tries = [
        "echo 'gitdir: /elsewhere' > .git",
        "python3 -c \"open('g', 'w').write('gitdir: /elsewhere'); import os; os.replace('g', '.git')\"",
        "rm -f .git",
        "mv .git moved",
    ];
    for command in tries {
        let done = run(&mut f, command);
        assert!(failed(&done), "{who}: {command}: {done}");
    }
    assert_eq!(std::fs::read_to_string(wt.join(".git")).unwrap(), before, "{who}");
    assert_eq!(run(&mut f, "touch work")["exit_code"], 0, "{who}: the work tree is writable");
}

/// Nothing a pane starts outlives it: a process that left its session (`setsid`), made a user
/// namespace of its own and changed its root (`chroot`, which once hid the pane's mark) ends when
/// the pane is closed, and when fugue ends. As root and as nobody.
#[test]
fn nothing_outlives_its_pane_or_fugue() {
    let root = outside("esc-outlive");
    let f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    outlive_case(f, &root, "root", |dir| sandboxed(dir, &["--sandbox", "workspace-write"], &[]));
    let dir = nobodys("esc-outlive-nobody");
    let start = |dir: &std::path::Path| {
        sandboxed_as_nobody(dir, &["--sandbox", "workspace-write"]).expect("setpriv")
    };
    if crate::util::have("setpriv") {
        outlive_case(start(&dir.path), &dir, "nobody", start);
    }
}

fn outlive_case(mut f: Fugue, root: &Dir, who: &str, again: impl Fn(&std::path::Path) -> Fugue) {
    // Says its pid, then leaves what it can: its user namespace (so it may chroot as nobody),
    // its root.
    let script = root.write(
        "escape.py",
        "import ctypes, os, sys, time\nopen(sys.argv[1], 'w').write('%d\\n' % os.getpid())\n\
         ctypes.CDLL(None).unshare(0x10000000)\ntry:\n    os.chroot('/usr')\nexcept OSError:\n    \
         pass\ntime.sleep(1000)\n",
    );
    let s = path_str(&script).to_string();
    let escape = |f: &mut Fugue, name: &str| {
        let file = root.join(name);
        let command =
            format!("setsid python3 {s} {} & echo started; exec sleep 1000", path_str(&file));
        let created = f.call("fugue_create_session", json!({"command": command}));
        let pane = created["pane_id"].as_str().unwrap().to_string();
        f.expect(&pane, "started");
        let own = u32::try_from(created["pid"].as_u64().unwrap()).unwrap();
        (pane, host_pid(own, crate::util::pid_in(&file)))
    };
    let (pane, pid) = escape(&mut f, "closed.pid");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    assert!(gone_within(pid, Duration::from_secs(5)), "{who}: {pid} outlived its pane");
    drop(f);
    let mut f = again(&root.path);
    let (_, pid) = escape(&mut f, "ended.pid");
    drop(f);
    assert!(gone_within(pid, Duration::from_secs(5)), "{who}: {pid} outlived fugue");
    // Killed, fugue closes nothing: the terminal's hang-up ends the pane all the same.
    let mut f = again(&root.path);
    let (_, pid) = escape(&mut f, "killed.pid");
    crate::util::signal(f.pid(), libc::SIGKILL);
    assert!(gone_within(pid, Duration::from_secs(5)), "{who}: {pid} outlived fugue's kill");
}

/// Another fugue of the same user, started after a sandboxed pane, is out of the pane's reach: its
/// live shell's directory in the temporary directory (whose command file that fugue runs) and its
/// control socket (which types into its panes). As root and as nobody.
#[test]
fn another_fugues_files_are_out_of_reach() {
    let root = outside("esc-other");
    let mut a = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let other = Dir::new("esc-other-b");
    let mut cmd = Fugue::command(&[]);
    cmd.env_remove("XDG_RUNTIME_DIR").arg("serve").current_dir(&other.path);
    other_fugue_case(
        &mut a,
        || {
            let mut b = Fugue::spawn_command(cmd);
            b.handshake();
            b
        },
        "root",
    );
    drop(a);
    let dir = nobodys("esc-other-nobody");
    let Some(mut a) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) else {
        return;
    };
    let other = nobodys("esc-other-b-nobody");
    other_fugue_case(&mut a, || sandboxed_as_nobody(&other.path, &[]).unwrap(), "nobody");
}

fn other_fugue_case(a: &mut Fugue, start_b: impl FnOnce() -> Fugue, who: &str) {
    // The pane first, then the other fugue and its files.
    assert_eq!(run(a, "echo ready")["output"], "ready", "{who}");
    let mut b = start_b();
    assert_eq!(run(&mut b, "echo harmless")["output"], "harmless", "{who}");
    let (uid, bpid) = (uid_of(b.pid()), b.pid());
    let socket = format!("/tmp/fugue-{uid}/{bpid}.sock");
    crate::util::wait_until("the other fugue's socket", || std::path::Path::new(&socket).exists());
    let shell_dir = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&format!("fugue-shell-{bpid}-"))
        })
        .expect("the other fugue's shell directory");
    let d = path_str(&shell_dir);
    let tries = [
        format!("ls {d}"),
        format!("touch {d}/planted"),
        format!("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{socket}')\""),
    ];
    for command in &tries {
        let done = run(a, command);
        assert!(failed(&done), "{who}: {command}: {done}");
    }
    assert!(!shell_dir.join("planted").exists(), "{who}: planted in the other fugue's directory");
    assert_eq!(run(&mut b, "echo harmless")["output"], "harmless", "{who}");
}

fn uid_of(pid: u32) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}")).unwrap().uid()
}

/// Metadata outside the writable roots does not change: chmod, chown, `touch -d` and setxattr
/// fail (Landlock alone let them through). As root, on any file; as nobody, on its own.
#[test]
fn metadata_outside_the_roots_does_not_change() {
    let root = outside("esc-meta-root");
    let out = outside("esc-meta");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    metadata_case(&mut f, &out, "root");
    drop(f);
    let dir = nobodys("esc-meta-nobody");
    let out = outside("esc-meta-nobodys");
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", out.path_str()]).status();
    assert!(ok.is_ok_and(|s| s.success()));
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        metadata_case(&mut f, &out, "nobody");
    }
}

fn metadata_case(f: &mut Fugue, out: &Dir, who: &str) {
    use std::os::unix::fs::MetadataExt;
    let victim = out.write("victim", "x");
    if who == "nobody" {
        let ok = Command::new("chown").args(["nobody:nogroup", path_str(&victim)]).status();
        assert!(ok.is_ok_and(|s| s.success()));
    }
    let v = path_str(&victim);
    let before = std::fs::metadata(&victim).unwrap();
    let tries = [
        format!("chmod 0777 {v}"),
        format!("chown nobody {v}"),
        format!("touch -d 2001-01-01 {v}"),
        format!("python3 -c \"import os; os.setxattr('{v}', 'user.fugue', b'1')\""),
    ];
    for command in &tries {
        let done = run(f, command);
        assert!(failed(&done), "{who}: {command}: {done}");
    }
    let after = std::fs::metadata(&victim).unwrap();
    let seen = |m: &std::fs::Metadata| (m.mode(), m.uid(), m.gid(), m.mtime());
    assert_eq!(seen(&after), seen(&before), "{who}: the metadata changed");
    let name = std::ffi::CString::new(v).unwrap();
    // SAFETY: both strings are valid; a null buffer of size 0 asks only whether it exists.
    let got =
        unsafe { libc::getxattr(name.as_ptr(), c"user.fugue".as_ptr(), std::ptr::null_mut(), 0) };
    assert!(got < 0, "{who}: the extended attribute was set");
}

/// A pane sees its own processes only: `ps` lists neither fugue nor this test, `/proc` has no
/// entry of theirs, and the host's Unix sockets are not listed in `/proc/net/unix`. As root and
/// as nobody.
#[test]
fn a_pane_sees_only_its_own_processes() {
    let root = outside("esc-ps");
    let out = outside("esc-ps-sock");
    let _host = std::os::unix::net::UnixListener::bind(out.join("host-only.sock")).unwrap();
    crate::sandbox::as_root_and_nobody(&root.path, "esc-ps-nobody", processes_case);
}

fn processes_case(f: &mut Fugue, who: &str) {
    let ps = run(f, "ps -eo comm=");
    let names: Vec<&str> = ps["output"].as_str().unwrap().lines().map(str::trim).collect();
    assert!(names.contains(&"ps"), "{who}: {ps}");
    assert!(names.len() <= 6, "{who}: more than the pane's processes: {ps}");
    for name in ["fugue", "integration"] {
        // The pane's init is fugue's launcher: at most that one, as pid 1.
        let seen = names.iter().filter(|n| n.starts_with(name)).count();
        assert!(seen <= usize::from(name == "fugue"), "{who}: {name} in {ps}");
    }
    let first = run(f, "cat /proc/1/cmdline | tr '\\0' ' '");
    assert!(first["output"].as_str().unwrap().contains("__sandbox-exec"), "{who}: {first}");
    for pid in [f.pid(), std::process::id()] {
        let seen = run(f, &format!("test -e /proc/{pid}/cmdline"));
        assert!(pid < 100 || failed(&seen), "{who}: /proc/{pid} is there: {seen}");
    }
    let unix = run(f, "cat /proc/net/unix /proc/1/net/unix");
    assert!(!unix["output"].as_str().unwrap().contains("host-only.sock"), "{who}: {unix}");
}

/// `/run` is covered: a socket the host keeps there (an agent's, a bus, a docker socket) is
/// neither listed nor reached, though anyone may connect to it outside. As root and as nobody.
#[test]
fn run_is_covered() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::path::PathBuf::from(format!("/run/fugue-test-{}", std::process::id()));
    let Ok(()) = std::fs::create_dir_all(&dir) else {
        crate::util::skip("/run", "is not writable here");
        return;
    };
    let dir = Dir { path: dir };
    let socket = dir.join("host.sock");
    let _host = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    for path in [&dir.path, &socket] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let root = outside("esc-run");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    run_case(&mut f, &socket, "root");
    drop(f);
    let home = nobodys("esc-run-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&home.path, &["--sandbox", "workspace-write"]) {
        run_case(&mut f, &socket, "nobody");
    }
}

fn run_case(f: &mut Fugue, socket: &std::path::Path, who: &str) {
    let s = path_str(socket);
    let tries = [
        format!("ls {s}"),
        format!("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{s}')\""),
    ];
    for command in &tries {
        let done = run(f, command);
        assert!(failed(&done), "{who}: {command}: {done}");
    }
}
