//! No way back from a sandboxed pane: each test attacks as a program in the pane would, as root
//! and as nobody, and then looks at what really happened outside (the file, the listener, the
//! key), not only at the command's status. The capabilities a pane holds, the mount API against
//! the read-only `.git`, root's fallback without user namespaces, Unix sockets outside the
//! roots, the variables that lead to them, the session keyring.

use crate::sandbox::{
    failed, nobodys, outside, run, sandboxed, sandboxed_as_nobody, sandboxed_as_nobody_with,
};
use crate::util::{Dir, Fugue, git_repo, path_str};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;
use std::process::Command;

const NO_USERNS: (&str, &str) = ("FUGUE_SANDBOX_TEST_NO_USERNS", "1");

fn chown_nobody(path: &Path) {
    let ok = Command::new("chown").args(["-R", "nobody:nogroup", path_str(path)]).status();
    assert!(ok.is_ok_and(|s| s.success()), "chown nobody {}", path.display());
}

/// A pane holds no capability at all, even as root in its user namespace: effective,
/// permitted, inheritable, ambient and bounding sets are empty.
#[test]
fn a_pane_holds_no_capability() {
    let root = Dir::new("lock-caps");
    crate::sandbox::as_root_and_nobody(&root.path, "lock-caps-nobody", no_capability_case);
}

fn no_capability_case(f: &mut Fugue, who: &str) {
    let caps = run(f, "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | cut -f2 | sort -u");
    assert_eq!(caps["output"], "0000000000000000", "{who}: {caps}");
}

/// The pane's init (pid 1 of its pid namespace), which locks the tree down and holds the
/// seccomp filter's listener until the launcher has taken it, is out of the program's reach: the
/// program can neither take its descriptors (`pidfd_getfd`: with the listener it would answer
/// its own socket calls) nor trace it. As root and as nobody.
#[test]
fn the_panes_init_is_out_of_the_programs_reach() {
    let root = Dir::new("lock-init");
    crate::sandbox::as_root_and_nobody(&root.path, "lock-init-nobody", init_case);
}

const REACH_INIT: &str = "python3 -c 'import ctypes, os; \
    libc = ctypes.CDLL(None, use_errno=True); \
    said = lambda r: \"taken\" if r >= 0 else os.strerror(ctypes.get_errno()); \
    print(\"getfd:\", said(libc.syscall(438, os.pidfd_open(1), 0, 0))); \
    print(\"trace:\", said(libc.ptrace(0x4206, 1, None, None)))'";

fn init_case(f: &mut Fugue, who: &str) {
    let done = run(f, REACH_INIT);
    let denied = "getfd: Operation not permitted\ntrace: Operation not permitted";
    assert_eq!(done["output"], denied, "{who}: {done}");
}

/// The mount API cannot make the read-only `.git` writable (issue 30, item 2): not by clearing
/// the bind's read-only flag (`mount_setattr`), not by a clone of the root's mount without the
/// bind (`open_tree`), not by a new mount namespace and a remount. As root and as nobody.
#[test]
fn the_mount_api_cannot_undo_the_read_only_git() {
    let dir = outside("lock-mountapi");
    let repo = git_repo(&dir);
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write"], &[]);
    mount_api_case(&mut f, &repo, "root");
    drop(f);
    let dir = outside("lock-mountapi-nobody");
    let repo = git_repo(&dir);
    chown_nobody(&dir.path);
    if let Some(mut f) = sandboxed_as_nobody(&repo, &["--sandbox", "workspace-write"]) {
        mount_api_case(&mut f, &repo, "nobody");
    }
}

const MOUNT_API: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]
def forge(config):
    with open(config, "a") as f:
        f.write("[core]\n\tfsmonitor = touch /pwned\n")
how = sys.argv[1]
if how == "mount_setattr":
    clear = Attr(0, 1, 0, 0)  # MOUNT_ATTR_RDONLY
    if libc.syscall(442, -100, b".git", 0, ctypes.byref(clear), 32) != 0:
        sys.exit("mount_setattr: " + os.strerror(ctypes.get_errno()))
    forge(".git/config")
elif how == "open_tree":
    fd = libc.syscall(428, -100, b".", 1 | 0o2000000)  # OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC
    if fd < 0:
        sys.exit("open_tree: " + os.strerror(ctypes.get_errno()))
    forge("/proc/self/fd/%d/.git/config" % fd)
"#;

fn mount_api_case(f: &mut Fugue, repo: &Path, who: &str) {
    let config = repo.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let script = outside(&format!("lock-mountapi-script-{who}"));
    let py = script.write("mount_api.py", MOUNT_API);
    let _ = Command::new("chmod").args(["-R", "a+rX", script.path_str()]).status();
    let tries = [
        format!("python3 {} mount_setattr", path_str(&py)),
        format!("python3 {} open_tree", path_str(&py)),
        "unshare -m sh -c 'mount -o remount,rw,bind .git && echo x >> .git/config'".to_string(),
        "unshare -Urm sh -c 'mount -o remount,rw,bind .git && echo x >> .git/config'".to_string(),
    ];
    for command in &tries {
        let done = run(f, command);
        assert!(failed(&done), "{who}: {command}: {done}");
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before, "{who}: .git/config changed");
}

/// Root where user namespaces are not allowed (issue 30, item 9): the panes still get the whole
/// sandbox — namespaces made without a user namespace, `.git` read-only, every capability
/// dropped, no `AF_PACKET` socket, no `chown` outside.
#[test]
fn root_without_user_namespaces_keeps_the_whole_sandbox() {
    let dir = outside("lock-nouserns");
    let repo = git_repo(&dir);
    let out = outside("lock-nouserns-out");
    let victim = out.write("victim", "mine");
    let mut f = sandboxed(&repo, &["--sandbox", "workspace-write"], &[NO_USERNS]);
    no_capability_case(&mut f, "root without user namespaces");
    let packet = "python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\"";
    let done = run(&mut f, packet);
    assert!(failed(&done), "AF_PACKET: {done}");
    let done = run(&mut f, &format!("chown nobody {}", path_str(&victim)));
    assert!(failed(&done), "chown outside: {done}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&victim).unwrap().uid(), 0, "the file changed owner");
    let config = repo.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    assert!(failed(&run(&mut f, "echo x >> .git/config")));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

/// Unix sockets outside the roots and the private temporary directories cannot be reached
/// (issue 30, item 10): not by path, not through a link in the root, not with a datagram; a
/// socket passed with `--allow-unix-socket` can. The listeners outside say what arrived. As root
/// and as nobody; for nobody the sockets are nobody's, so only the sandbox stands in the way.
#[test]
fn unix_sockets_outside_the_roots_are_out_of_reach() {
    let root = outside("lock-unix-root");
    let out = outside("lock-unix-out");
    let allowed = out.join("allowed.sock");
    let allow = format!("--allow-unix-socket={}", path_str(&allowed));
    let args = ["--sandbox", "workspace-write", allow.as_str()];
    let listeners = Listeners::bind(&out);
    let mut f = sandboxed(&root.path, &args, &[]);
    unix_case(&mut f, &root, &listeners, "root");
    drop(f);
    let root = outside("lock-unix-root-nobody");
    let out = outside("lock-unix-out-nobody");
    let allowed = out.join("allowed.sock");
    let allow = format!("--allow-unix-socket={}", path_str(&allowed));
    let args = ["--sandbox", "workspace-write", allow.as_str()];
    let listeners = Listeners::bind(&out);
    chown_nobody(&root.path);
    chown_nobody(&out.path);
    if let Some(mut f) = sandboxed_as_nobody(&root.path, &args) {
        unix_case(&mut f, &root, &listeners, "nobody");
    }
    // The fallback (nobody, no user namespaces) refuses them the same way.
    let hook = [NO_USERNS];
    if let Some(mut f) = sandboxed_as_nobody_with(&root.path, &args, &hook) {
        unix_case(&mut f, &root, &listeners, "nobody, fallback");
    }
}

/// A stream socket and a datagram socket outside, and a stream socket passed on purpose.
struct Listeners {
    stream: UnixListener,
    dgram: UnixDatagram,
    allowed: UnixListener,
    dir: std::path::PathBuf,
}

impl Listeners {
    fn bind(out: &Dir) -> Listeners {
        let stream = UnixListener::bind(out.join("host.sock")).unwrap();
        let dgram = UnixDatagram::bind(out.join("dgram.sock")).unwrap();
        let allowed = UnixListener::bind(out.join("allowed.sock")).unwrap();
        stream.set_nonblocking(true).unwrap();
        dgram.set_nonblocking(true).unwrap();
        allowed.set_nonblocking(true).unwrap();
        Listeners { stream, dgram, allowed, dir: out.path.clone() }
    }
}

fn unix_case(f: &mut Fugue, root: &Dir, sockets: &Listeners, who: &str) {
    let host = sockets.dir.join("host.sock");
    let connect = |path: &str| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); \
             s.sendall(b'pwned')\""
        )
    };
    let link = root.join("link.sock");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&host, &link).unwrap();
    let dgram = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
         s.sendto(b'pwned', '{}')\"",
        path_str(&sockets.dir.join("dgram.sock"))
    );
    let dgram_msg = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
         s.sendmsg([b'pwned'], [], 0, '{}')\"",
        path_str(&sockets.dir.join("dgram.sock"))
    );
    for command in [connect(path_str(&host)), connect("link.sock"), dgram, dgram_msg] {
        let done = run(f, &command);
        assert!(failed(&done), "{who}: {command}: {done}");
        assert!(done["output"].as_str().unwrap().contains("Permission denied"), "{who}: {done}");
    }
    assert!(sockets.stream.accept().is_err(), "{who}: a connection reached the host's socket");
    let mut buf = [0u8; 8];
    assert!(sockets.dgram.recv(&mut buf).is_err(), "{who}: a datagram reached the host's socket");
    let done = run(f, &connect(path_str(&sockets.dir.join("allowed.sock"))));
    assert_eq!(done["exit_code"], 0, "{who}: the allowed socket: {done}");
    assert!(sockets.allowed.accept().is_ok(), "{who}");
    // Datagrams to a socket in the root arrive, by sendto and by sendmsg.
    let inside = "python3 -c \"import socket; r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
         r.bind('d.sock'); s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
         s.sendto(b'to', 'd.sock'); s.sendmsg([b'ms', b'g'], [], 0, 'd.sock'); \
         print(r.recv(9).decode() + r.recv(9).decode())\"; rm -f d.sock";
    assert_eq!(run(f, inside)["output"], "tomsg", "{who}");
}

/// A tmux server outside (issue 30, item 10): a pane cannot drive it to run a command
/// unsandboxed through its socket (`run-shell` waits for the command, so its file would be there).
#[test]
fn a_tmux_server_outside_cannot_be_driven() {
    if !crate::util::have("tmux") {
        return;
    }
    let root = outside("lock-tmux-root");
    let out = outside("lock-tmux-out");
    let sock = out.join("tmux.sock");
    let pwned = out.join("pwned");
    let started = Command::new("tmux")
        .args(["-S", path_str(&sock), "new-session", "-d", "sleep 600"])
        .status();
    assert!(started.is_ok_and(|s| s.success()), "tmux would not start");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let done =
        run(&mut f, &format!("tmux -S {} run-shell 'touch {}'", path_str(&sock), path_str(&pwned)));
    let _ = Command::new("tmux").args(["-S", path_str(&sock), "kill-server"]).status();
    assert!(failed(&done), "{done}");
    assert!(!pwned.exists(), "tmux ran the pane's command outside the sandbox");
}

/// The variables that lead a program to a socket outside (an agent, a bus, tmux, docker) are
/// withheld from sandboxed panes unless `--pass-env` names them.
#[test]
fn variables_that_lead_outside_are_withheld() {
    let root = Dir::new("lock-env");
    let env = [
        ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("TMUX", "/tmp/tmux-0/default,1,0"),
        ("DOCKER_HOST", "unix:///var/run/docker.sock"),
        ("XDG_RUNTIME_DIR", "/run/user/0"),
    ];
    let args = ["--sandbox", "workspace-write", "--pass-env", "DOCKER_HOST"];
    let mut f = sandboxed(&root.path, &args, &env);
    let seen =
        run(&mut f, "env | grep -E '^(SSH_AUTH_SOCK|DBUS_SESSION|TMUX|DOCKER|XDG_RUN)' | sort");
    assert_eq!(seen["output"], "DOCKER_HOST=unix:///var/run/docker.sock", "{seen}");
}

/// A key in the session keyring that fugue was started with cannot be read from a pane (issue
/// 30, item 11). As root and as nobody.
#[test]
fn the_session_keyring_is_out_of_reach() {
    let name = format!("fugue-test-{}", std::process::id());
    let secret = "the-user's-secret";
    let c_name = std::ffi::CString::new(name.clone()).unwrap();
    // SAFETY: add_key reads the two C strings and `secret`'s bytes, all valid for the call.
    let key = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            c_name.as_ptr(),
            secret.as_ptr(),
            secret.len(),
            -3i32, // KEY_SPEC_SESSION_KEYRING
        )
    };
    if key < 0 {
        crate::util::skip("the session keyring", "is not available here");
        return;
    }
    let read = format!(
        "python3 -c \"import ctypes; l = ctypes.CDLL(None); buf = ctypes.create_string_buffer(64); \
         k = l.syscall(250, 10, -3, b'user', b'{name}', 0); n = l.syscall(250, 11, k, buf, 64); \
         print(buf.value.decode() if n > 0 else 'unreadable')\""
    );
    let root = Dir::new("lock-keyring");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let done = run(&mut f, &read);
    assert_eq!(done["output"], "unreadable", "root: {done}");
    drop(f);
    let dir = nobodys("lock-keyring-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        let done = run(&mut f, &read);
        assert_eq!(done["output"], "unreadable", "nobody: {done}");
    }
    // SAFETY: keyctl(KEYCTL_UNLINK, key, session keyring) takes no pointers.
    unsafe { libc::syscall(libc::SYS_keyctl, 9, key, -3i32) };
}

/// With the network off the panes' abstract sockets live in their private network, where the
/// launcher connects them: a server and a client in a pane meet; with the network on (the host's
/// abstract sockets) the launcher refuses them.
#[test]
fn abstract_sockets_meet_on_the_private_network_only() {
    let script = outside("lock-abstract");
    let py = script.write(
        "abstract.py",
        "import socket, threading\n\
         name = '\\0fugue-test-abstract'\n\
         s = socket.socket(socket.AF_UNIX); s.bind(name); s.listen()\n\
         threading.Thread(target=lambda: s.accept()[0].sendall(b'met'), daemon=True).start()\n\
         c = socket.socket(socket.AF_UNIX)\n\
         try:\n    c.connect(name); print(c.recv(3).decode())\n\
         except OSError as e:\n    print(e.strerror)\n",
    );
    let root = Dir::new("lock-abstract-off");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    let done = run(&mut f, &format!("python3 {}", path_str(&py)));
    assert_eq!(done["output"], "met", "network off: {done}");
    drop(f);
    let args = ["--sandbox", "workspace-write", "--network", "on"];
    let mut f = sandboxed(&root.path, &args, &[]);
    let done = run(&mut f, &format!("python3 {}", path_str(&py)));
    assert_eq!(done["output"], "Permission denied", "network on: {done}");
}
