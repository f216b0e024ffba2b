//! Sandboxed panes (`fugue serve --sandbox MODE`): real programs try to write inside and outside
//! the writable roots, into `.git`, to the network; the test looks at the file system and at its
//! own listeners for what really happened. Each case that a shell could matter for runs in every
//! installed shell; the network and the unprivileged cases run as root and as `nobody`.

use crate::util::{Dir, Fugue, SHELLS, installed, path_str};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// A sandboxed fugue serving from `dir`, with `args` after `serve`.
pub fn sandboxed(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Fugue {
    let mut cmd = Fugue::command(env);
    cmd.arg("serve").args(args).current_dir(dir);
    let mut f = Fugue::spawn_command(cmd);
    f.handshake();
    f
}

/// The same, started as `nobody` through setpriv; `None` (with a skip message) without setpriv.
pub fn sandboxed_as_nobody(dir: &Path, args: &[&str]) -> Option<Fugue> {
    sandboxed_as_nobody_with(dir, args, &[])
}

/// `sandboxed_as_nobody` with variables `env` set for fugue.
pub fn sandboxed_as_nobody_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<Fugue> {
    if !crate::util::have("setpriv") {
        return None;
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]);
    cmd.arg(bin_for_nobody()).arg("serve");
    cmd.args(args).current_dir(dir);
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    cmd.env("SHELL", "/bin/sh").env("HOME", dir).env_remove("FUGUE_SHELL");
    cmd.env_remove("XDG_RUNTIME_DIR");
    cmd.envs(env.iter().copied());
    let mut f = Fugue::spawn_command(cmd);
    f.handshake();
    Some(f)
}

/// The fugue binary where `nobody` can run it: the one built, when every directory above it lets
/// others through; else (a clone in a 0700 home) a link or a copy beside `outside`'s directories,
/// made once per run of the tests, those of runs that are over removed.
pub fn bin_for_nobody() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let passable = |p: &Path| {
        p.ancestors()
            .skip(1)
            .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
    };
    BIN.get_or_init(|| {
        let built = Path::new(crate::util::BIN);
        if passable(built) {
            return built.to_path_buf();
        }
        let dir = outside("bin");
        let base = dir.path.parent().unwrap().to_path_buf();
        for entry in std::fs::read_dir(&base).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix("fugue-test-").and_then(|r| r.strip_suffix("-bin"));
            if pid.and_then(|p| p.parse().ok()).is_some_and(|p: u32| !crate::util::alive(p)) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let copy = dir.path.join("fugue");
        // A link costs nothing where the file system is the same.
        if std::fs::hard_link(built, &copy).is_err() {
            std::fs::copy(built, &copy).unwrap();
        }
        std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Kept for the run: removed by the next run's sweep above.
        std::mem::forget(dir);
        copy
    })
    .clone()
}

/// Runs `case` in a workspace-write fugue serving from `root` as root, then in one started as
/// nobody from a directory `nobody` owns (named `nobody`); `case` gets who it runs as.
pub fn as_root_and_nobody(root: &Path, nobody: &str, case: impl Fn(&mut Fugue, &str)) {
    let mut f = sandboxed(root, &["--sandbox", "workspace-write"], &[]);
    case(&mut f, "root");
    drop(f);
    let dir = nobodys(nobody);
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        case(&mut f, "nobody");
    }
}

/// A directory `nobody` owns, for an unprivileged fugue to work in.
pub fn nobodys(name: &str) -> Dir {
    let dir = Dir::new(name);
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", dir.path_str()]).status();
    assert!(ok.is_ok_and(|s| s.success()), "chown nobody {}", dir.path_str());
    dir
}

/// A directory truly outside: not under any writable root, the temporary directory (a pane's
/// private `/tmp` replaces it) nor the clone, and reachable by `nobody`. As root under
/// `/var/lib`, which every user may pass through; else under `$HOME/.cache`. Removed on drop.
pub fn outside(name: &str) -> Dir {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let base = match std::env::var_os("HOME") {
        _ if root && Path::new("/var/lib").is_dir() => std::path::PathBuf::from("/var/lib"),
        Some(home) => Path::new(&home).join(".cache"),
        None => panic!("no place outside the temporary directory: not root, and no HOME"),
    };
    let path = base.join(format!("fugue-test-{}-{name}", std::process::id()));
    for inside in [std::env::temp_dir(), env!("CARGO_MANIFEST_DIR").into()] {
        assert!(
            !path.starts_with(&inside),
            "{} is not outside {}",
            path.display(),
            inside.display()
        );
    }
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    Dir { path }
}

/// The host's pid of the process that a sandboxed pane, whose own process is `own`, knows as
/// `inner` (its `$$`, in the pane's pid namespace).
pub fn host_pid(own: u32, inner: u32) -> u32 {
    let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let pane_ns = ns(&own.to_string());
    assert!(pane_ns.is_some(), "pane process {own} is gone");
    let inner = inner.to_string();
    let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let nspid = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
        let last = nspid.split_whitespace().last()?;
        (last == inner && ns(&pid.to_string()) == pane_ns).then_some(pid)
    });
    found.unwrap_or_else(|| panic!("no process {inner} in the pane's pid namespace"))
}

/// Whether a command's answer says it ran and failed (an exit code, not 0): a command that never
/// finished has no exit code, and must not pass for a refused one.
pub fn failed(answer: &serde_json::Value) -> bool {
    answer["exit_code"].as_i64().is_some_and(|code| code != 0)
}

/// Runs `command` in fugue's own shell; returns the answer.
pub fn run(f: &mut Fugue, command: &str) -> Value {
    f.call("fugue_exec", json!({"command": command, "timeout_ms": 20000}))
}

/// Runs `command` in `pane`.
pub fn run_in(f: &mut Fugue, pane: &str, command: &str) -> Value {
    f.call("fugue_exec", json!({"pane_id": pane, "command": command, "timeout_ms": 20000}))
}

/// The writes a sandboxed command may try, each one shell-free: (command, where it would land).
fn attempts(outside: &Path) -> Vec<(String, std::path::PathBuf)> {
    let o = |name: &str| outside.join(name);
    let s = |p: &Path| path_str(p).to_string();
    vec![
        (format!("touch {}", s(&o("touched"))), o("touched")),
        (format!("cp /etc/hostname {}", s(&o("copied"))), o("copied")),
        (format!("python3 -c \"open('{}', 'w').write('x')\"", s(&o("python"))), o("python")),
    ]
}

/// Every write outside the roots fails and leaves nothing; every write inside works. Run in
/// every installed shell, through the shell's own pane (its integration stays reachable).
#[test]
fn writes_land_only_inside_the_writable_root_in_every_shell() {
    for (name, shell) in installed(&SHELLS) {
        let root = Dir::new(&format!("sbx-root-{name}"));
        let outside = outside(&format!("out-{name}"));
        let victim = outside.write("victim", "original");
        let mut f = sandboxed(
            root.path.as_path(),
            &["--sandbox", "workspace-write"],
            &[("FUGUE_SHELL", path_str(&shell)), ("HOME", root.path_str())],
        );
        let pane =
            f.call("fugue_create_session", json!({}))["pane_id"].as_str().unwrap().to_string();
        for (command, target) in attempts(&outside.path) {
            let done = run_in(&mut f, &pane, &command);
            assert!(failed(&done), "{name}: {command} succeeded: {done}");
            assert!(!target.exists(), "{name}: {command} wrote {}", target.display());
        }
        let over = format!("mv {}/new {}", root.path_str(), path_str(&victim));
        run_in(&mut f, &pane, &format!("echo new > {}/new", root.path_str()));
        let moved = run_in(&mut f, &pane, &over);
        assert!(failed(&moved), "{name}: mv over a file outside: {moved}");
        let link = format!("ln -s {} {}/link", path_str(&victim), root.path_str());
        assert_eq!(run_in(&mut f, &pane, &link)["exit_code"], 0, "{name}");
        // cp, not a redirection: fish answers a failed redirection with status 0.
        let through = run_in(&mut f, &pane, &format!("cp /etc/hostname {}/link", root.path_str()));
        assert!(failed(&through), "{name}: write through a link: {through}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original", "{name}");
        for command in ["touch inside", "cp /etc/hostname copied", "mkdir sub"] {
            let done = run_in(&mut f, &pane, command);
            assert_eq!(done["exit_code"], 0, "{name}: {command} inside the root: {done}");
        }
        let py = run_in(&mut f, &pane, "python3 -c \"open('py', 'w').write('x')\"");
        assert_eq!(py["exit_code"], 0, "{name}: {py}");
        for made in ["inside", "copied", "sub", "py", "new"] {
            assert!(root.join(made).exists(), "{name}: {made} was not made inside the root");
        }
        let tmp =
            run_in(&mut f, &pane, &format!("touch /tmp/fugue-sbx-{name}-{}", std::process::id()));
        assert_eq!(tmp["exit_code"], 0, "{name}: the temporary directory is writable: {tmp}");
        let _ = std::fs::remove_file(format!("/tmp/fugue-sbx-{name}-{}", std::process::id()));
    }
}

/// `.git/hooks` and `.git/config` stay read-only in a repository and in its worktree, while the
/// work tree itself is writable; `--writable-git` lifts that.
#[test]
fn git_stays_read_only_in_a_repository_and_a_worktree() {
    let dir = Dir::new("sbx-git");
    let repo = crate::util::git_repo(&dir);
    let wt = dir.join("wt");
    crate::util::git(&repo, &["worktree", "add", "-q", path_str(&wt), "-b", "wt"]);
    let (r, w) = (path_str(&repo).to_string(), path_str(&wt).to_string());
    let mut f = sandboxed(
        &repo,
        &["--sandbox", "workspace-write", "--writable", &r, "--writable", &w],
        &[],
    );
    let config_before = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    for command in [
        format!("echo '[x]' >> {r}/.git/config"),
        format!("touch {r}/.git/hooks/pre-commit"),
        format!("cd {w} && git config core.hooksPath /tmp"),
        format!("touch {r}/.git/worktrees/wt/hooks-here"),
    ] {
        let done = run(&mut f, &command);
        assert!(failed(&done), "{command}: {done}");
    }
    assert_eq!(std::fs::read_to_string(repo.join(".git/config")).unwrap(), config_before);
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert_eq!(run(&mut f, &format!("touch {r}/file {w}/file"))["exit_code"], 0);
    drop(f);
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write", "--writable-git"], &[]);
    assert_eq!(run(&mut f, &format!("touch {r}/.git/hooks/allowed"))["exit_code"], 0);
}

/// read-only: no write anywhere but the terminal, the devices and a private TMPDIR.
#[test]
fn read_only_writes_nothing_but_its_private_tmpdir() {
    let root = Dir::new("sbx-ro");
    let mut f = sandboxed(&root.path, &["--sandbox", "read-only"], &[]);
    let denied = run(&mut f, "touch here");
    assert!(failed(&denied), "{denied}");
    assert!(!root.join("here").exists());
    let name = format!("/tmp/fugue-sbx-ro-{}", std::process::id());
    assert!(failed(&run(&mut f, &format!("touch {name}"))));
    assert!(!Path::new(&name).exists());
    let tmp = run(&mut f, "echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo hi > /dev/null");
    assert_eq!((tmp["exit_code"].as_i64(), tmp["output"].as_str()), (Some(0), Some("x")), "{tmp}");
}

/// The network is off by default: TCP and UDP to a listener on the host's loopback are refused,
/// a server in one sandboxed pane answers a client in another, a Unix socket works. As root and
/// as nobody.
#[test]
fn network_off_keeps_the_panes_on_a_loopback_of_their_own() {
    let root = Dir::new("sbx-net");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    network_off_case(&mut f, &root, "root");
    drop(f);
    let dir = nobodys("sbx-net-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        network_off_case(&mut f, &dir, "nobody");
    }
}

fn network_off_case(f: &mut Fugue, root: &Dir, who: &str) {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tport, uport) = (tcp.local_addr().unwrap().port(), udp.local_addr().unwrap().port());
    let client = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {tport}), 3)\""
    );
    let done = run(f, &client);
    assert!(failed(&done), "{who}: TCP to the host's loopback: {done}");
    assert!(done["output"].as_str().unwrap().contains("refused"), "{who}: {done}");
    let udp_client = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
         s.connect(('127.0.0.1', {uport})); s.send(b'x'); s.settimeout(3); s.recv(1)\""
    );
    let done = run(f, &udp_client);
    assert!(done["output"].as_str().unwrap().contains("refused"), "{who}: UDP: {done}");
    let mut buf = [0u8; 4];
    // The datagram went to the pane's own loopback, which answered "refused" above: the host's
    // socket, on the same machine and delivered synchronously, has nothing.
    assert!(udp.recv(&mut buf).is_err(), "{who}: the host's UDP socket got a datagram");
    // A server in one pane, a client in another (fugue_exec's own shell), on port `port`.
    let port = 20000 + (std::process::id() % 20000);
    let serve = format!(
        "python3 -c \"import socket; s = socket.socket(); \
         s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', {port})); \
         s.listen(); print('listening'); c, _ = s.accept(); c.sendall(b'served')\""
    );
    let server = f.call("fugue_create_session", json!({"command": serve}));
    let server = server["pane_id"].as_str().unwrap().to_string();
    f.expect(&server, "listening");
    let got = run(
        f,
        &format!(
            "python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {port}), \
             3).recv(9).decode())\""
        ),
    );
    assert_eq!(got["output"], "served", "{who}: pane to pane: {got}");
    let sock = root.join("u.sock");
    let unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('{0}'); s.listen(); \
         c = socket.socket(socket.AF_UNIX); c.connect('{0}'); print('unix ok')\"",
        path_str(&sock)
    );
    assert_eq!(run(f, &unix)["output"], "unix ok", "{who}");
}

/// `--network on` reaches the host's loopback.
#[test]
fn network_on_reaches_the_host() {
    let root = Dir::new("sbx-net-on");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write", "--network", "on"], &[]);
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let client =
        format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\"");
    let done = run(&mut f, &client);
    assert_eq!(done["exit_code"], 0, "{done}");
    assert!(tcp.accept().is_ok());
}

/// Secret-looking variables stay out of sandboxed panes unless `--pass-env` names them or the
/// call sets them itself.
#[test]
fn secrets_stay_out_unless_passed() {
    let root = Dir::new("sbx-env");
    let env = [("MY_API_KEY", "k1"), ("GITHUB_TOKEN", "t1"), ("DB_Password", "p1"), ("PLAIN", "v")];
    let mut f = sandboxed(
        &root.path,
        &["--sandbox", "workspace-write", "--pass-env", "GITHUB_TOKEN"],
        &env,
    );
    let seen = run(&mut f, "env | grep -E '^(MY_API_KEY|GITHUB_TOKEN|DB_Password|PLAIN)=' | sort");
    assert_eq!(seen["output"], "GITHUB_TOKEN=t1\nPLAIN=v", "{seen}");
    let pane = f.call(
        "fugue_create_session",
        json!({"command": "echo \"key=$MY_API_KEY\"", "env": {"MY_API_KEY": "given"}}),
    );
    f.expect(pane["pane_id"].as_str().unwrap(), "key=given");
}

/// With the sandbox asked for and no Landlock (simulated by the documented test hook), no pane
/// starts: `sandbox_unavailable`, naming what is missing; nothing runs unsandboxed.
#[test]
fn no_landlock_fails_closed() {
    let root = Dir::new("sbx-closed");
    let mut f = sandboxed(
        &root.path,
        &["--sandbox", "workspace-write"],
        &[("FUGUE_SANDBOX_TEST_NO_LANDLOCK", "1")],
    );
    let marker = root.join("ran");
    let err = f.call_err(
        "fugue_create_session",
        json!({"command": format!("touch {}", path_str(&marker))}),
    );
    assert_eq!(err["code"], "sandbox_unavailable", "{err}");
    assert!(err["message"].as_str().unwrap().contains("Landlock"), "{err}");
    let err = f.call_err("fugue_exec", json!({"command": "true"}));
    assert_eq!(err["code"], "sandbox_unavailable", "{err}");
    assert!(!marker.exists(), "the command ran unsandboxed");
}

/// FUGUE_SANDBOX sets the mode for hosts that only take environment variables; a bad mode or a
/// sandbox detail without a sandbox is a usage error.
#[test]
fn the_mode_comes_from_the_environment_and_bad_flags_are_refused() {
    let root = Dir::new("sbx-envmode");
    let mut f = sandboxed(&root.path, &[], &[("FUGUE_SANDBOX", "read-only")]);
    assert!(failed(&run(&mut f, "touch x")));
    assert!(!root.join("x").exists());
    for args in [
        &["serve", "--sandbox", "loose"][..],
        &["serve", "--writable", "/tmp"][..],
        &["serve", "--sandbox", "workspace-write", "--writable", "/nonexistent-fugue"][..],
        &["serve", "--sandbox", "read-only", "--network", "maybe"][..],
    ] {
        let out = Command::new(crate::util::BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}

/// The default, off, is today's behaviour: a pane writes wherever the user can.
#[test]
fn off_changes_nothing() {
    let root = Dir::new("sbx-off");
    let outside = outside("off-out");
    let mut f = sandboxed(&root.path, &[], &[]);
    let target = outside.join("written");
    assert_eq!(run(&mut f, &format!("touch {}", path_str(&target)))["exit_code"], 0);
    assert!(target.exists());
}

/// As nobody (the unprivileged path most users have): writes outside the root fail, inside work.
#[test]
fn an_unprivileged_fugue_confines_its_panes() {
    let dir = nobodys("sbx-nobody");
    let outside = outside("nobody-out");
    let ok = Command::new("chown").args(["nobody:nogroup", outside.path_str()]).status();
    assert!(ok.is_ok_and(|s| s.success()));
    let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) else {
        return;
    };
    let target = outside.join("x");
    assert!(failed(&run(&mut f, &format!("touch {}", path_str(&target)))));
    assert!(!target.exists());
    assert_eq!(run(&mut f, "touch inside")["exit_code"], 0);
    assert!(dir.join("inside").exists());
    drop(f);
    // A repository of nobody's: its .git stays read-only.
    let repo = crate::util::git_repo(&dir);
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", path_str(&repo)]).status();
    assert!(ok.is_ok_and(|s| s.success()));
    let mut f = sandboxed_as_nobody(&repo, &["--sandbox", "workspace-write"]).unwrap();
    let hook = run(&mut f, "touch .git/hooks/pre-commit");
    assert!(failed(&hook), "{hook}");
    assert!(hook["sandbox_denied"].as_str().is_some_and(|l| l.contains("Read-only")), "{hook}");
    assert_eq!(run(&mut f, "touch work")["exit_code"], 0);
    drop(f);
    // read-only as nobody: nothing but the private TMPDIR.
    let mut f = sandboxed_as_nobody(&dir.path, &["--sandbox", "read-only"]).unwrap();
    assert!(failed(&run(&mut f, "touch ro")));
    assert!(!dir.join("ro").exists());
    assert_eq!(run(&mut f, "touch \"$TMPDIR/t\"")["exit_code"], 0);
}

/// A call can tighten the server's policy (read-only in a workspace-write server), never loosen
/// it; fugue's own shells are kept apart per policy, and every pane's status says its sandbox.
#[test]
fn calls_tighten_never_loosen_and_panes_say_their_sandbox() {
    let root = Dir::new("sbx-tighten");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let ro = f.call("fugue_exec", json!({"command": "touch ro", "sandbox": "read-only"}));
    assert!(failed(&ro), "{ro}");
    assert!(!root.join("ro").exists());
    // The next call without `sandbox` gets a shell of the server's policy, not the read-only one.
    let rw = run(&mut f, "touch rw");
    assert_eq!(rw["exit_code"], 0, "{rw}");
    assert_ne!(rw["pane_id"], ro["pane_id"]);
    let par = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": "touch par"}], "sandbox": "read-only"}),
    );
    assert!(failed(&par["results"][0]), "{par}");
    let pipe = f.call(
        "fugue_run_pipeline",
        json!({"commands": [{"command": "echo step"}, {"command": "touch pipe"}],
               "stop_on_error": false, "sandbox": "read-only"}),
    );
    // The pipeline's own machinery (its steps' files, the shell's records) works in the sandbox.
    assert_eq!(pipe["steps"][0]["exit_code"], 0, "{pipe}");
    assert!(failed(&pipe["steps"][1]), "{pipe}");
    assert!(pipe["sandbox_denied"].is_string(), "{pipe}");
    let served = f.call("fugue_run_pipeline", json!({"commands": [{"command": "touch pipe-rw"}]}));
    assert_eq!(served["steps"][0]["exit_code"], 0, "{served}");
    assert!(root.join("pipe-rw").exists());
    assert!(!root.join("par").exists() && !root.join("pipe").exists());
    let pane =
        f.call("fugue_create_session", json!({"command": "sleep 30", "sandbox": "read-only"}));
    let status = f.call("fugue_get_status", json!({"pane_id": pane["pane_id"]}));
    assert_eq!(status["sandbox"]["mode"], "read-only", "{status}");
    assert_eq!(status["sandbox"]["network"], "off", "{status}");
    let listed = crate::util::find_pane(&mut f, "sleep 30");
    assert_eq!(listed["sandbox"]["mode"], "read-only", "{listed}");
    // A read-only pane cannot run a workspace-write call.
    let err = f.call_err(
        "fugue_exec",
        json!({"command": "true", "pane_id": ro["pane_id"], "sandbox": "workspace-write"}),
    );
    assert_eq!(err["code"], "invalid_argument", "{err}");
    for tool in ["fugue_exec", "fugue_create_session"] {
        let err = f.call_err(tool, json!({"command": "true", "sandbox": "off"}));
        assert_eq!(err["code"], "invalid_argument", "{err}");
    }
    drop(f);
    let mut f = sandboxed(&root.path, &["--sandbox", "read-only"], &[]);
    let err = f.call_err("fugue_exec", json!({"command": "true", "sandbox": "workspace-write"}));
    assert_eq!(err["code"], "invalid_argument", "{err}");
    assert!(err["message"].as_str().unwrap().contains("read-only"), "names the server's: {err}");
}

/// initialize says the policy in one line; with the sandbox off nothing changes.
#[test]
fn initialize_says_the_policy() {
    let root = Dir::new("sbx-init");
    for (args, says) in [(&["--sandbox", "read-only"][..], "sandbox: read-only"), (&[][..], "")] {
        let mut cmd = Fugue::command(&[]);
        cmd.arg("serve").args(args).current_dir(&root.path);
        let mut f = Fugue::spawn_command(cmd);
        let init = f.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        );
        let text = init["result"]["instructions"].as_str().unwrap().to_string();
        if says.is_empty() {
            assert!(!text.contains("sandbox"), "{text}");
        } else {
            assert!(text.contains(says) && text.contains("network off"), "{text}");
        }
    }
    let mut f = sandboxed(&root.path, &[], &[]);
    let pane = f.pane("sleep 30");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert!(status.get("sandbox").is_none(), "off adds nothing: {status}");
}

/// A double-forked daemon and a `setsid` grandchild stay confined (their writes outside fail) and
/// end when their pane is closed, though they left its session. As root and as nobody.
#[test]
fn daemons_stay_confined_and_end_with_their_pane() {
    let root = Dir::new("sbx-daemons");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    daemons_case(&mut f, &root, "root");
    drop(f);
    let dir = nobodys("sbx-daemons-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        daemons_case(&mut f, &dir, "nobody");
    }
}

fn daemons_case(f: &mut Fugue, root: &Dir, who: &str) {
    let out = outside(&format!("daemons-{who}"));
    let _ = Command::new("chmod").args(["777", out.path_str()]).status();
    let (r, o) = (root.path_str(), out.path_str());
    // Each escapee first tries to write outside, then says its pid and lives on.
    let escapee = |name: &str| {
        format!("touch {o}/{name} 2>/dev/null; echo $$ > {r}/{name}.pid; exec sleep 1000")
    };
    let command = format!(
        "setsid sh -c '{}' & (sh -c '{}' &) ; echo started; exec sleep 1000",
        escapee("setsid"),
        escapee("double")
    );
    let created = f.call("fugue_create_session", json!({"command": command}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    f.expect(&pane, "started");
    let own = u32::try_from(created["pid"].as_u64().unwrap()).unwrap();
    let setsid = host_pid(own, crate::util::pid_in(&root.join("setsid.pid")));
    let double = host_pid(own, crate::util::pid_in(&root.join("double.pid")));
    assert!(!out.join("setsid").exists() && !out.join("double").exists(), "{who}: wrote outside");
    let sid = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit(')').next().unwrap().split_whitespace().nth(4).unwrap().to_string()
    };
    assert_ne!(sid(setsid), sid(double), "{who}: the setsid escapee left the pane's session");
    f.call("fugue_close_pane", json!({"pane_id": pane}));
    for pid in [setsid, double] {
        assert!(
            crate::util::gone_within(pid, std::time::Duration::from_secs(5)),
            "{who}: {pid} lives"
        );
    }
}

/// A command that failed on something the sandbox refused says so (`sandbox_denied`, the line);
/// a command that failed on its own does not.
#[test]
fn a_refused_command_answers_sandbox_denied() {
    let root = Dir::new("sbx-denied");
    let out = outside("denied");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let target = out.join("x");
    let done = run(&mut f, &format!("touch {}", path_str(&target)));
    let line = done["sandbox_denied"].as_str().unwrap_or_default();
    let refused = line.contains("Permission denied") || line.contains("Read-only file system");
    assert!(refused && line.contains(path_str(&target)), "{done}");
    let own = run(&mut f, "ls /nonexistent-fugue; touch inside; false");
    assert!(own.get("sandbox_denied").is_none(), "{own}");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let net = run(
        &mut f,
        &format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""),
    );
    assert!(net["sandbox_denied"].as_str().is_some_and(|l| l.contains("refused")), "{net}");
    let par = f.call(
        "fugue_run_parallel",
        json!({"commands": [{"command": format!("touch {}", path_str(&target))}]}),
    );
    assert!(par["results"][0]["sandbox_denied"].is_string(), "{par}");
}

/// A shared server's policy is fixed when it starts: a front with another policy is refused with
/// both named, and the server's panes stay confined for every front.
#[test]
fn a_shared_servers_policy_is_fixed_when_it_starts() {
    let server = crate::shared::Server::new("sandbox");
    let root = server.dir.path.clone();
    let out = outside("shared");
    let mut cmd = server.command(&[]);
    cmd.args(["serve", "--shared", &server.name, "--sandbox", "workspace-write"])
        .current_dir(&root);
    let mut front = Fugue::spawn_command(cmd);
    front.handshake();
    let target = out.join("x");
    assert!(failed(&run(&mut front, &format!("touch {}", path_str(&target)))));
    assert!(!target.exists());
    assert_eq!(run(&mut front, "touch inside")["exit_code"], 0);
    // A front without the sandbox: refused, naming both policies.
    let refused = server.first_answer();
    let message = refused["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains("runs with sandbox: workspace-write") && message.contains("sandbox: off"),
        "{refused}"
    );
    drop(front);
    let ended = server.run(&["kill-server", &server.name]);
    assert!(ended.status.success(), "{ended:?}");
}

/// An agent-pipeline stage in a sandboxed server writes its worktree only: not the repository
/// the server may write, not `.git`. fugue's own commit and merge still carry its work.
#[test]
fn an_agent_stage_is_confined_to_its_worktree() {
    let dir = outside("agent-stage");
    let repo = crate::util::git_repo(&dir);
    let r = path_str(&repo).to_string();
    let agent = crate::agent::script(
        &dir,
        "implementer",
        &format!(
            "echo done >> feature.txt\n\
             touch {r}/escaped 2>/dev/null && echo ESCAPED\n\
             touch {r}/.git/hooks/post-merge 2>/dev/null && echo HOOKED\n\
             echo implemented\n"
        ),
    );
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write"], &crate::util::GIT_ENV);
    // The analyzer's verdict goes to its run directory, under the hidden state: bound back for it.
    let analyzer = crate::agent::approving_analyzer(&dir);
    let id = crate::agent::create(
        &mut f,
        json!({"repo": r, "task": "t", "implementer": agent, "analyzer": analyzer}),
    );
    let p = crate::agent::settle(&mut f, &id);
    assert_eq!(p["status"], "complete", "{p}");
    assert_eq!(crate::agent::stage(&p, "analyzer")["verdict"], "complete", "{p}");
    assert!(!repo.join("escaped").exists(), "the stage wrote the repository outside its worktree");
    assert!(!repo.join(".git/hooks/post-merge").exists(), "the stage wrote .git/hooks");
    assert_eq!(crate::util::git(&repo, &["show", "main:feature.txt"]), "done");
}

/// Where the kernel allows no user namespaces (simulated by the documented test hook) and fugue
/// runs unprivileged (root makes the namespaces without a user namespace, see
/// `lockdown::root_without_user_namespaces_keeps_the_whole_sandbox`), the fallback still
/// confines writes, refuses inet sockets (Unix ones work), gives a private TMPDIR, guards fugue's
/// control socket with a peer check, and says so; a root with a `.git` needs `--writable-git`,
/// since the fallback cannot keep it read-only.
#[test]
fn without_user_namespaces_the_fallback_confines_and_says_so() {
    let root = outside("fallback-root");
    let out = outside("fallback-out");
    for dir in [&root, &out] {
        let ok = Command::new("chown").args(["-R", "nobody:nogroup", dir.path_str()]).status();
        assert!(ok.is_ok_and(|s| s.success()));
    }
    let hook = [("FUGUE_SANDBOX_TEST_NO_USERNS", "1")];
    let Some(mut f) =
        sandboxed_as_nobody_with(&root.path, &["--sandbox", "workspace-write"], &hook)
    else {
        return;
    };
    let target = out.join("x");
    assert!(failed(&run(&mut f, &format!("touch {}", path_str(&target)))));
    assert!(!target.exists());
    assert_eq!(run(&mut f, "touch inside")["exit_code"], 0);
    assert!(root.join("inside").exists());
    let tmp = run(&mut f, "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"");
    assert_eq!(tmp["output"], "t", "{tmp}");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let net = run(
        &mut f,
        &format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\""
        ),
    );
    assert!(failed(&net), "{net}");
    let sock = root.join("u.sock");
    let unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('{0}'); s.listen(); \
         c = socket.socket(socket.AF_UNIX); c.connect('{0}'); print('unix ok')\"",
        path_str(&sock)
    );
    assert_eq!(run(&mut f, &unix)["output"], "unix ok");
    // fugue's control socket is not hidden here: the launcher refuses the connection (a socket
    // outside the roots), and the peer check would refuse the pane.
    let control = format!("/tmp/fugue-65534/{}.sock", f.pid());
    let script = root.write(
        "dial.py",
        &format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    \
             s.connect('{control}')\n    s.sendall(b'{{}}\\n')\n    got = s.recv(100)\n\
             except OSError:\n    got = b''\nprint('answered' if got else 'refused')\n"
        ),
    );
    let dialed = run(&mut f, &format!("python3 {}", path_str(&script)));
    assert_eq!(dialed["output"], "refused", "{dialed}");
    // The instructions say what the fallback lacks.
    let found = f.request("server/discover", json!({}));
    let text = found["result"]["instructions"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("no user namespaces"), "{found}");
    drop(f);
    // A root with a .git: refused, naming --writable-git.
    let dir = outside("fallback-git");
    let repo = crate::util::git_repo(&dir);
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", dir.path_str()]).status();
    assert!(ok.is_ok_and(|s| s.success()));
    let mut f = sandboxed_as_nobody_with(&repo, &["--sandbox", "workspace-write"], &hook).unwrap();
    let err = f.call_err("fugue_exec", json!({"command": "true"}));
    assert_eq!(err["code"], "sandbox_unavailable", "{err}");
    assert!(err["message"].as_str().unwrap().contains("--writable-git"), "{err}");
}

/// fugue sees a sandboxed pane's program as the pane's own process, never the launcher or the
/// init of its pid namespace: the pid it gives is the program's, a question names the program,
/// and a shell's job and working directory are the shell's.
#[test]
fn a_sandboxed_panes_own_process_is_its_program() {
    let root = Dir::new("sbx-own");
    std::fs::create_dir(root.join("sub")).unwrap();
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let comm = |pid: &Value| {
        let pid = pid.as_u64().unwrap();
        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap().trim().to_string()
    };
    let created =
        f.call("fugue_create_session", json!({"command": "exec python3 -c \"input('name? ')\""}));
    let pane = created["pane_id"].as_str().unwrap().to_string();
    let asked = f.call("fugue_send_input", json!({"pane_id": pane, "wait_ms": 20000}));
    assert_eq!((&asked["status"], &asked["program"]), (&json!("input"), &json!("python3")));
    // Asked by the program, which runs by now: the pid is its own.
    let own = comm(&created["pid"]);
    assert!(own.starts_with("python3"), "{own}: {created}");
    let status = f.call("fugue_get_status", json!({"pane_id": pane}));
    assert_eq!(status["pid"], created["pid"], "{status}");
    let shell = f.call("fugue_create_session", json!({}));
    let shell_pane = shell["pane_id"].as_str().unwrap().to_string();
    let done = run_in(&mut f, &shell_pane, "cd sub");
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_eq!(comm(&shell["pid"]), "sh", "{shell}");
    let status = f.call("fugue_get_status", json!({"pane_id": shell_pane}));
    assert!(status["cwd"].as_str().unwrap().ends_with("/sub"), "{status}");
    let job = run_in(&mut f, &shell_pane, "sleep 0.2");
    assert_eq!(job["exit_code"], 0, "{job}");
}
