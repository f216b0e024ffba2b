//! The private network of one fugue's sandboxed panes, and the user namespaces the launcher makes.
//!
//! With the network off, each runtime starts one holder process (`fugue __sandbox-net`) that makes a
//! user namespace and a network namespace with only a loopback, brings the loopback up and then
//! waits for fugue to end (its stdin, a pipe from fugue, closes). Every sandboxed pane's launcher
//! joins the holder's two namespaces, so a server in one pane answers a client in another, while
//! nothing reaches the host's loopback or the outside. It works unprivileged: the holder's user
//! namespace is owned by fugue's own uid, which gives the launchers the right to join it.

use crate::error::Result;
use parking_lot::Mutex;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command};

/// What the launcher's error says when the kernel allows no user namespaces.
pub(crate) const NO_USERNS: &str = "user namespaces are not allowed";

/// The test hook that makes fugue behave as on a kernel without user namespaces.
pub(crate) const PRETEND_NO_USERNS: &str = "FUGUE_SANDBOX_TEST_NO_USERNS";

/// The exit status of a launcher or holder that could not make the sandbox.
pub(crate) const UNAVAILABLE: u8 = 125;

/// One runtime's holder, started with its first sandboxed pane of a network-off policy.
#[derive(Default)]
pub(crate) struct Holder(Mutex<Option<Child>>);

impl Holder {
    /// The pid of the running holder, started if it is not.
    pub(crate) fn pid(&self) -> Result<u32> {
        let mut holder = self.0.lock();
        if let Some(child) = holder.as_mut()
            && child.try_wait().ok().flatten().is_none()
        {
            return Ok(child.id());
        }
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg("__sandbox-net");
        let (child, _) = super::helper::start(&mut cmd, "no private network for the panes")?;
        let pid = child.id();
        *holder = Some(child);
        Ok(pid)
    }

    /// Ends the holder (the runtime is stopping): closing its stdin is its signal.
    pub(crate) fn stop(&self) {
        if let Some(child) = self.0.lock().take() {
            super::helper::end(child);
        }
    }
}

/// `fugue __sandbox-net`: makes the namespaces, says `ready`, and holds them until stdin closes.
pub(crate) fn holder_main() -> std::process::ExitCode {
    if let Err(why) = new_user_namespace(libc::CLONE_NEWNET).and_then(|()| loopback_up()) {
        eprintln!("fugue: sandbox unavailable: {why}");
        return std::process::ExitCode::from(UNAVAILABLE);
    }
    // The holder's stdout is a pipe to the fugue that started it, not the protocol.
    println!("ready"); // stdout-ok
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    std::process::ExitCode::SUCCESS
}

/// Joins the holder's user and network namespaces (its network one only when it made no user
/// namespace, see `new_user_namespace`).
pub(crate) fn join(holder: u32) -> std::result::Result<(), String> {
    join_user(holder)?;
    join_net(holder)
}

/// Joins the user namespace of process `pid`, unless it is ours already.
pub(crate) fn join_user(pid: u32) -> std::result::Result<(), String> {
    let path = format!("/proc/{pid}/ns/user");
    let ours = std::fs::read_link("/proc/self/ns/user").ok();
    if ours.is_some() && std::fs::read_link(&path).ok() == ours {
        return Ok(());
    }
    set_namespace(&path, "user", libc::CLONE_NEWUSER)
}

/// Joins the network namespace of process `pid`.
pub(crate) fn join_net(pid: u32) -> std::result::Result<(), String> {
    set_namespace(&format!("/proc/{pid}/ns/net"), "net", libc::CLONE_NEWNET)
}

fn set_namespace(path: &str, ns: &str, flag: libc::c_int) -> std::result::Result<(), String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("the panes' network ({path}): {e}"))?;
    // SAFETY: setns takes a namespace descriptor that lives across the call.
    if unsafe { libc::setns(file.as_raw_fd(), flag) } != 0 {
        return Err(format!("setns {ns}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Unshares a user namespace together with `others`, mapping our uid and gid to themselves. Only
/// our own ids: a wider map needs the right to set ids in the parent namespace, which a process
/// loses on entering its new one (so, for root too, other users' files show as `nobody`).
///
/// Where user namespaces are not allowed (a container, a hardened kernel) but this process holds
/// `CAP_SYS_ADMIN` (root), `others` are made without one: the same sandbox, root's capabilities
/// dropped before the program runs (see `caps`).
pub(crate) fn new_user_namespace(others: libc::c_int) -> std::result::Result<(), String> {
    // SAFETY: these calls have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let refused = |e: String| {
        format!(
            "{e}: {NO_USERNS} (see user.max_user_namespaces, kernel.unprivileged_userns_clone, \
             kernel.apparmor_restrict_unprivileged_userns)"
        )
    };
    let tried = if std::env::var_os(PRETEND_NO_USERNS).is_some_and(|v| !v.is_empty()) {
        Err(format!("unshare: pretended by {PRETEND_NO_USERNS}"))
    } else {
        unshare(libc::CLONE_NEWUSER | others)
    };
    if let Err(e) = tried {
        if super::caps::has_sys_admin() {
            return unshare(others).map_err(|e2| format!("{e}; without a user namespace: {e2}"));
        }
        return Err(refused(e));
    }
    let write = |file: &str, text: &str| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|e| format!("/proc/self/{file}: {e}"))
    };
    write("setgroups", "deny")?;
    write("uid_map", &format!("{uid} {uid} 1"))?;
    write("gid_map", &format!("{gid} {gid} 1"))
}

/// Brings up `lo` in this process's network namespace.
fn loopback_up() -> std::result::Result<(), String> {
    // SAFETY: socket takes no pointers.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: socket returned a new descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero ifreq is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = (*b).cast_signed();
    }
    // SAFETY: `req` is a valid ifreq that outlives both calls; the ioctls read and write only it.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &raw mut req) != 0 {
            return Err(format!("SIOCGIFFLAGS lo: {}", std::io::Error::last_os_error()));
        }
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &raw mut req) != 0 {
            return Err(format!("SIOCSIFFLAGS lo: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

pub(crate) fn unshare(flags: libc::c_int) -> std::result::Result<(), String> {
    // SAFETY: unshare takes no pointers; the caller is single-threaded.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!("unshare: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
