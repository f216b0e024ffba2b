//! Ways out found by attacking the merged sandbox: another terminal of the machine opened through
//! `/dev/pts`, and a nested repository moved from under its path so that a `.git` of the pane's
//! takes its place. As root and as nobody, with targets truly outside.

use crate::sandbox::{nobodys, outside, run, sandboxed, sandboxed_as_nobody};
use crate::util::{Dir, Fugue, path_str};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

/// A terminal outside the pane (the person's own, another fugue's pane) cannot be written to or
/// read from: the host's `/dev/pts` showed every terminal of the pane's owner, and a pane's
/// `echo > /dev/pts/N` appeared on it. The pane can still make terminals of its own.
#[test]
fn another_terminal_is_out_of_reach() {
    let root = outside("esc-pts-root");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    terminal_case(&mut f, None, "root");
    drop(f);
    let dir = nobodys("esc-pts-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        terminal_case(&mut f, Some(65534), "nobody");
    }
}

fn terminal_case(f: &mut Fugue, owner: Option<u32>, who: &str) {
    let (master, _slave, name) = open_terminal(owner);
    // What the person typed there, which a pane that could open the terminal would read.
    let typed = b"typed\n";
    // SAFETY: write reads `typed`, which outlives the call.
    let n = unsafe { libc::write(master.as_raw_fd(), typed.as_ptr().cast(), typed.len()) };
    assert_eq!(n, 6, "typing into the terminal");
    let tries = [
        format!("echo INJECTED > {name}"),
        format!("python3 -c \"import os; os.read(os.open('{name}', os.O_RDONLY), 1)\""),
    ];
    for command in &tries {
        let done = run(f, command);
        assert!(crate::sandbox::failed(&done), "{who}: {command}: {done}");
    }
    let mut buf = [0u8; 64];
    // SAFETY: read writes at most 64 bytes into `buf`; the master is non-blocking.
    let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), 64) };
    let shown = String::from_utf8_lossy(&buf[..usize::try_from(n).unwrap_or(0)]);
    assert!(n <= 0, "{who}: the terminal outside showed {shown:?}");
    let own = "python3 -c \"import pty, os; pid, fd = pty.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0); print('made')\"";
    assert_eq!(run(f, own)["output"], "made", "{who}: a pane makes terminals of its own");
}

/// A terminal of the host's `/dev/pts`, owned by `owner` (else root): its master, non-blocking,
/// its slave (kept open: else the master reads EIO, not what was written) and the slave's name.
fn open_terminal(owner: Option<u32>) -> (OwnedFd, OwnedFd, String) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors; the other pointers are null.
    let r = unsafe {
        libc::openpty(
            &raw mut master,
            &raw mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: openpty returned two new descriptors that nothing else owns.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let name = std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd())).unwrap();
    if let Some(uid) = owner {
        std::os::unix::fs::chown(&name, Some(uid), None).unwrap();
    }
    // SAFETY: an all-zero termios is valid; these calls only touch it and our descriptors.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        libc::tcgetattr(slave.as_raw_fd(), &raw mut t);
        // No echo: what the test types must not come back as if the pane had written it.
        t.c_lflag &= !libc::ECHO;
        libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &raw const t);
        libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
    }
    (master, slave, name.to_string_lossy().into_owned())
}

/// A nested repository (and each directory above it in the root) cannot be moved from under its
/// path: else the pane put a `.git` of its own there, with `core.fsmonitor` set, which the
/// person's next `git status` ran outside the sandbox.
#[test]
fn a_nested_repository_stays_where_it_is() {
    let dir = outside("esc-nested");
    nested_case(&dir, None, "root");
    let dir = nobodys("esc-nested-nobody");
    nested_case(&dir, Some(()), "nobody");
}

fn nested_case(dir: &Dir, nobody: Option<()>, who: &str) {
    let mark = outside(&format!("esc-nested-mark-{who}"));
    let sub = dir.join("a/sub");
    std::fs::create_dir_all(&sub).unwrap();
    crate::util::git_repo(dir);
    crate::util::git(&sub, &["init", "-q"]);
    let args = ["--sandbox", "workspace-write"];
    let mut f = match nobody {
        None => sandboxed(&dir.path, &args, &[]),
        Some(()) => {
            let ok = Command::new("chown").args(["-R", "nobody:nogroup", dir.path_str()]).status();
            assert!(ok.is_ok_and(|s| s.success()));
            let Some(f) = sandboxed_as_nobody(&dir.path, &args) else { return };
            f
        }
    };
    let pwned = mark.join("pwned");
    let plant = format!(
        "mkdir -p a/sub && git -C a/sub init -q && git -C a/sub config core.fsmonitor 'touch {}; false'",
        path_str(&pwned)
    );
    for moved in ["mv a/sub a/moved", "mv a moved"] {
        run(&mut f, &format!("{moved} && {plant}"));
    }
    let config = std::fs::read_to_string(sub.join(".git/config")).unwrap_or_default();
    assert!(!config.contains("fsmonitor"), "{who}: a/sub's .git is the pane's: {config}");
    let _ = Command::new("git").arg("-C").arg(&sub).arg("status").output();
    assert!(!pwned.exists(), "{who}: git status ran the pane's fsmonitor outside the sandbox");
    assert_eq!(run(&mut f, "touch a/sub/work && echo ok")["output"], "ok", "{who}: still writable");
}

/// A thread that writes an address into a `sendmsg` header while another sends cannot slip a
/// datagram out to a Unix socket outside: the launcher let a call without an address through as
/// it was, and the kernel read the header again (hundreds of datagrams arrived in seconds).
#[test]
fn a_datagram_cannot_slip_out_between_check_and_send() {
    let root = outside("esc-race-root");
    let mut f = sandboxed(&root.path, &["--sandbox", "workspace-write"], &[]);
    race_case(&mut f, &root, "root");
    drop(f);
    let dir = nobodys("esc-race-nobody");
    if let Some(mut f) = sandboxed_as_nobody(&dir.path, &["--sandbox", "workspace-write"]) {
        race_case(&mut f, &dir, "nobody");
    }
}

/// Two threads: one sends without an address, the other flips the header's address on and off.
const RACE: &str = r#"
import ctypes, socket, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
class Iov(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class Msg(ctypes.Structure): _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
    ("iov", ctypes.POINTER(Iov)), ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p),
    ("controllen", ctypes.c_size_t), ("flags", ctypes.c_int)]
path = sys.argv[1].encode()
addr = ctypes.create_string_buffer(b"\x01\x00" + path + b"\x00", 110)
data = ctypes.create_string_buffer(b"escaped")
iov = Iov(ctypes.cast(data, ctypes.c_void_p), 7)
msg = Msg(None, 0, ctypes.pointer(iov), 1, None, 0, 0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
stop = False
def flip():
    at, n = ctypes.cast(addr, ctypes.c_void_p).value, len(path) + 3
    while not stop:
        msg.name, msg.namelen = at, n
        msg.name, msg.namelen = None, 0
t = threading.Thread(target=flip)
t.start()
sent, end = 0, time.time() + 3
while time.time() < end:
    sent += libc.sendmsg(s.fileno(), ctypes.byref(msg), 0) == 7
stop = True
t.join()
print("sent", sent)
"#;

fn race_case(f: &mut Fugue, root: &Dir, who: &str) {
    use std::os::unix::fs::PermissionsExt;
    let out = outside(&format!("esc-race-out-{who}"));
    let target = out.join("d.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&target).unwrap();
    socket.set_nonblocking(true).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o777)).unwrap();
    root.write("race.py", RACE);
    if who == "nobody" {
        let script = root.join("race.py");
        let ok = Command::new("chown").args(["nobody:nogroup", path_str(&script)]).status();
        assert!(ok.is_ok_and(|s| s.success()));
    }
    let done = run(f, &format!("python3 race.py {}", path_str(&target)));
    let mut buf = [0u8; 16];
    let arrived = socket.recv(&mut buf).is_ok();
    assert!(!arrived, "{who}: a datagram reached the socket outside: {done}");
    assert_eq!(done["output"], "sent 0", "{who}");
}

/// A root whose `.git` is a link (to a gitdir outside, or to one beside it in the root) keeps
/// that link and what it leads to: the launcher left links alone, and the pane swapped it for a
/// link to a gitdir of its own, whose `core.fsmonitor` the person's next `git status` ran.
#[test]
fn a_git_link_cannot_be_swapped() {
    let dir = outside("esc-gitlink");
    link_case(&dir, None, "root");
    let dir = nobodys("esc-gitlink-nobody");
    link_case(&dir, Some(()), "nobody");
}

fn link_case(dir: &Dir, nobody: Option<()>, who: &str) {
    let gitdirs = outside(&format!("esc-gitlink-dirs-{who}"));
    let (root, inner) = (dir.join("root"), dir.join("root/in"));
    std::fs::create_dir_all(&inner).unwrap();
    for (gitdir, at) in [(gitdirs.join("repo.git"), &root), (inner.join(".realgit"), &inner)] {
        crate::util::git(&gitdirs.path, &["init", "-q", "--bare", path_str(&gitdir)]);
        std::os::unix::fs::symlink(&gitdir, at.join(".git")).unwrap();
        crate::util::git(at, &["config", "core.bare", "false"]);
    }
    let args = ["--sandbox", "workspace-write"];
    let mut f = match nobody {
        None => sandboxed(&root, &args, &[]),
        Some(()) => {
            for owned in [dir.path_str(), gitdirs.path_str()] {
                let ok = Command::new("chown").args(["-R", "nobody:nogroup", owned]).status();
                assert!(ok.is_ok_and(|s| s.success()));
            }
            let Some(f) = sandboxed_as_nobody(&root, &args) else { return };
            f
        }
    };
    let pwned = gitdirs.join("pwned");
    let evil = format!(
        "git init -q --bare .evil && git --git-dir=.evil config core.fsmonitor 'touch {}; false'",
        path_str(&pwned)
    );
    run(&mut f, &evil);
    let tries = [
        "ln -sfn .evil .git",
        "rm .git",
        "mv in/.realgit in/moved",
        "ln -sfn ../.evil in/.git",
        "echo '[core]' >> in/.realgit/config",
    ];
    for command in tries {
        let done = run(&mut f, command);
        assert!(crate::sandbox::failed(&done), "{who}: {command}: {done}");
    }
    for at in [&root, &inner] {
        let _ = Command::new("git").arg("-C").arg(at).arg("status").output();
    }
    assert!(!pwned.exists(), "{who}: git status ran the pane's fsmonitor outside the sandbox");
}

/// The pane's `/dev` holds the devices a program uses and nothing else of the host's: as root, a
/// pane read the virtual consoles' input and screens (`/dev/tty1`, `/dev/vcs1`). What programs
/// use there still works: the descriptor links, process substitution, new terminals.
#[test]
fn the_hosts_devices_are_out_of_reach() {
    let root = outside("esc-dev-root");
    crate::sandbox::as_root_and_nobody(&root.path, "esc-dev-nobody", devices_case);
}

fn devices_case(f: &mut Fugue, who: &str) {
    let listed = run(f, "ls /dev | tr '\\n' ' '");
    let want = "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero";
    assert_eq!(listed["output"], want, "{who}: {listed}");
    let works = "echo in | cat /dev/stdin; bash -c 'cat <(echo sub)'; echo out > /dev/stdout; \
                 echo term > /dev/tty; head -c 3 /dev/urandom | wc -c";
    assert_eq!(run(f, works)["output"], "in\nsub\nout\nterm\n3", "{who}");
}
