//! Where a sandboxed pane's Unix sockets may lead: the launcher's answers to the seccomp filter's
//! user notifications for `connect`, `sendto` with an address, `sendmsg` and `sendmmsg`.
//!
//! A socket on a read-only mount still accepts connections, so the mounts alone do not keep a
//! pane from driving a tmux server, an agent or a docker daemon outside. The launcher, which runs
//! outside the sandbox, makes each connection itself on the pane's own socket (`pidfd_getfd`),
//! with its own copy of the address: for a path, it resolves the path as the pane sees it, checks
//! that the socket reached lies under a writable root, the private `/tmp`, `/var/tmp`,
//! `/dev/shm` or a path passed with `--allow-unix-socket`, and connects through the descriptor it
//! checked, so that nothing the pane changes in between counts. Abstract addresses are allowed
//! only in the panes' private network namespace (elsewhere they would reach the host's, past
//! Landlock's scope, which does not hold for the launcher). Other families are connected as asked.
//!
//! Every `sendmsg` and `sendmmsg` is sent by the launcher too (`send`): one let through as it
//! was would have its header and socket read again by the kernel, after the check.

mod send;
mod target;

use super::launch_plan::Plan;
use send::{Address, Message, blocking};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use target::{Errno, Target};

/// What a pane's sockets may reach.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// Directories (and socket paths) under which a pathname socket may be reached, as the pane
    /// sees them.
    pub(crate) allowed: Vec<PathBuf>,
    /// Whether abstract addresses are allowed: only in the panes' private network.
    pub(crate) abstract_ok: bool,
}

impl Rules {
    pub(crate) fn of(plan: &Plan) -> Rules {
        let mut allowed = plan.write.clone();
        allowed.extend(plan.allow_unix.iter().cloned());
        allowed.extend(plan.tmp.iter().cloned());
        if !plan.fallback {
            // Private to the sandbox's panes (see `launch`), whatever the mode.
            allowed.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
        }
        Rules { allowed, abstract_ok: plan.net.is_some() }
    }

    fn allows(&self, path: &Path) -> bool {
        self.allowed.iter().any(|a| path.starts_with(a))
    }
}

/// The variables that lead a program to a socket or server outside (agents, buses, other
/// terminals and multiplexers, displays): withheld from sandboxed panes unless `--pass-env`.
pub(crate) const LEADING_OUT: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "WAYLAND_DISPLAY",
    "DISPLAY",
    "XAUTHORITY",
    "PULSE_SERVER",
    "PIPEWIRE_REMOTE",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "SWAYSOCK",
    "I3SOCK",
    "NOTIFY_SOCKET",
];

/// `seccomp_data` and the notification around it, as `SECCOMP_IOCTL_NOTIF_RECV` fills them.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct SeccompData {
    nr: i32,
    arch: u32,
    instruction_pointer: u64,
    args: [u64; 6],
}

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Notif {
    id: u64,
    pid: u32,
    flags: u32,
    data: SeccompData,
}

#[repr(C)]
struct Resp {
    id: u64,
    val: i64,
    error: i32,
    flags: u32,
}

const NOTIF_RECV: libc::c_ulong = 0xc050_2100;
const NOTIF_SEND: libc::c_ulong = 0xc018_2101;
const NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;

/// The most the launcher copies for one send: a stream socket takes the rest in the next call,
/// as after any short send; a datagram this large is `EMSGSIZE` anyway (above `wmem_max`).
const MAX_SEND: usize = 4 << 20;
/// `UIO_MAXIOV`, and the most messages of one `sendmmsg`.
const MAX_IOV: usize = 1024;
/// `sizeof(struct sockaddr_un)`, the longest address looked at.
const MAX_ADDR: usize = 128;

/// How the launcher answers one call.
enum Response {
    /// Made by the launcher: the call's return value.
    Done(i64),
    Refused(Errno),
    /// To be made in a thread of its own (see `serve_one`).
    Later(Box<dyn FnOnce() -> Response + Send>),
}

/// Answers the notification waiting on `listener` (its launcher's poll saw it readable): in
/// turn, but for a connection that may wait for a peer (a blocking socket of another family than
/// Unix), which is made in a thread of its own so that the pane's other calls do not wait for it.
/// `false` when the listener fails for good: serving stops, and the pane's calls fail.
pub(crate) fn serve_one(listener: &Arc<OwnedFd>, rules: &Rules) -> bool {
    let notif = match next(listener) {
        Ok(Some(notif)) => notif,
        Ok(None) => return true,
        Err(()) => return false,
    };
    match handle(listener, rules, &notif) {
        Response::Later(work) => {
            let shared = Arc::clone(listener);
            let spawned = crate::threads::spawn(
                "fugue-connect",
                None,
                Box::new(move || answer(&shared, &notif, &work())),
            );
            if spawned.is_err() {
                answer(listener, &notif, &Response::Refused(libc::EAGAIN));
            }
        }
        now => answer(listener, &notif, &now),
    }
    true
}

/// The notification waiting on the listener; `None` when its caller died before it was taken
/// (ENOENT) or a signal came first (EINTR): the launcher's next poll looks again. Any other error
/// would come back at once, forever.
fn next(listener: &OwnedFd) -> Result<Option<Notif>, ()> {
    let mut notif = Notif::default();
    // SAFETY: the ioctl writes one seccomp_notif into `notif`, zeroed as the kernel asks.
    if unsafe { libc::ioctl(listener.as_raw_fd(), NOTIF_RECV, &raw mut notif) } == 0 {
        return Ok(Some(notif));
    }
    let e = std::io::Error::last_os_error().raw_os_error();
    if e == Some(libc::ENOENT) || e == Some(libc::EINTR) { Ok(None) } else { Err(()) }
}

fn answer(listener: &OwnedFd, notif: &Notif, answer: &Response) {
    let (val, error) = match *answer {
        Response::Done(val) => (val, 0),
        Response::Refused(e) => (0, -e),
        Response::Later(_) => (0, -libc::EIO),
    };
    // Never SECCOMP_USER_NOTIF_FLAG_CONTINUE: the kernel would read the call's memory again.
    let mut resp = Resp { id: notif.id, val, error, flags: 0 };
    // SAFETY: the ioctl reads one seccomp_notif_resp from `resp`. It fails only when the caller
    // is gone, which leaves nothing to answer.
    unsafe { libc::ioctl(listener.as_raw_fd(), NOTIF_SEND, &raw mut resp) };
}

/// Whether the notification still stands: its thread has not died, so the pid still names it.
fn still_valid(listener: &OwnedFd, notif: &Notif) -> Result<(), Errno> {
    let mut id = notif.id;
    // SAFETY: the ioctl reads one u64 from `id`.
    if unsafe { libc::ioctl(listener.as_raw_fd(), NOTIF_ID_VALID, &raw mut id) } != 0 {
        return Err(libc::ENOENT);
    }
    Ok(())
}

fn handle(listener: &OwnedFd, rules: &Rules, notif: &Notif) -> Response {
    let made = Target::open(notif.pid).and_then(|target| {
        still_valid(listener, notif)?;
        let args = notif.data.args;
        match libc::c_long::from(notif.data.nr) {
            libc::SYS_connect => connect(&target, rules, args),
            libc::SYS_sendto => sendto(&target, rules, args),
            libc::SYS_sendmsg => sendmsg(&target, rules, args),
            libc::SYS_sendmmsg => sendmmsg(target, rules, args),
            _ => Err(libc::ENOSYS),
        }
    });
    made.unwrap_or_else(Response::Refused)
}

/// `connect(fd, addr, len)`, made by the launcher on the target's socket.
fn connect(target: &Target, rules: &Rules, args: [u64; 6]) -> Result<Response, Errno> {
    let socket = target.fd(args[0])?;
    let addr = address(target, rules, args[1], args[2])?;
    let later = addr.family() != libc::AF_UNIX as u16 && blocking(&socket);
    let make = move || {
        // SAFETY: `addr` holds a socket address of the length given.
        let r = unsafe { libc::connect(socket.as_raw_fd(), addr.as_ptr(), addr.len()) };
        result(r.into()).unwrap_or_else(Response::Refused)
    };
    if later {
        return Ok(Response::Later(Box::new(make)));
    }
    Ok(make())
}

/// `sendto(fd, buf, len, flags, addr, addrlen)` with an address, made by the launcher.
fn sendto(target: &Target, rules: &Rules, args: [u64; 6]) -> Result<Response, Errno> {
    let socket = target.fd(args[0])?;
    let addr = address(target, rules, args[4], args[5])?;
    let data = target.read(args[1], usize::try_from(args[2]).unwrap_or(MAX_SEND).min(MAX_SEND))?;
    let flags = flags(args[3]);
    // SAFETY: `data` and `addr` are valid for the lengths given.
    let n = unsafe {
        libc::sendto(
            socket.as_raw_fd(),
            data.as_ptr().cast(),
            data.len(),
            flags,
            addr.as_ptr(),
            addr.len(),
        )
    };
    result(n as i64)
}

/// `sendmsg(fd, msg, flags)`.
fn sendmsg(target: &Target, rules: &Rules, args: [u64; 6]) -> Result<Response, Errno> {
    let header = read_header(target, args[1])?;
    let message = message(target, rules, target.fd(args[0])?, &header, flags(args[2]))?;
    Ok(send(message, Response::Done))
}

/// `sendmmsg(fd, msgs, n, flags)`: the first message only (a short count, which callers take
/// as they take a short write), its length written back where the pane reads it.
fn sendmmsg(target: Target, rules: &Rules, args: [u64; 6]) -> Result<Response, Errno> {
    if args[2] == 0 {
        return Ok(Response::Done(0));
    }
    let first = target.read(args[1], std::mem::size_of::<libc::mmsghdr>())?;
    // SAFETY: the bytes are one mmsghdr's; read_unaligned copies them out. Its pointers are the
    // target's and are only ever passed to `Target::read`.
    let first: libc::mmsghdr = unsafe { std::ptr::read_unaligned(first.as_ptr().cast()) };
    let message = message(&target, rules, target.fd(args[0])?, &first.msg_hdr, flags(args[3]))?;
    let len_at = args[1] + std::mem::offset_of!(libc::mmsghdr, msg_len) as u64;
    Ok(send(message, move |n| {
        let sent = u32::try_from(n).unwrap_or(u32::MAX);
        match target.write(len_at, &sent.to_ne_bytes()) {
            Ok(()) => Response::Done(1),
            Err(e) => Response::Refused(e),
        }
    }))
}

/// The message `header` describes, read from the target and checked.
fn message(
    target: &Target,
    rules: &Rules,
    socket: OwnedFd,
    header: &libc::msghdr,
    flags: libc::c_int,
) -> Result<Message, Errno> {
    let address = if header.msg_name.is_null() || header.msg_namelen == 0 {
        None
    } else {
        Some(address(target, rules, header.msg_name as u64, header.msg_namelen.into())?)
    };
    let data = gather(target, header)?;
    let mut control =
        target.read(header.msg_control as u64, size(header.msg_controllen as u64, 1 << 16)?)?;
    let passed = send::take_rights(target, &mut control)?;
    Ok(Message { socket, address, data, control, _passed: passed, flags })
}

/// Sends `message` now when it need not wait, else in a thread of its own (as a blocking
/// connect is made): the launcher answers the pane's other calls meanwhile. `done` makes the
/// answer of the count sent.
fn send(message: Message, done: impl FnOnce(i64) -> Response + Send + 'static) -> Response {
    let waits = blocking(&message.socket) && message.flags & libc::MSG_DONTWAIT == 0;
    match send::send_now(&message, if waits { libc::MSG_DONTWAIT } else { 0 }) {
        Err(libc::EAGAIN) if waits => {
            Response::Later(Box::new(move || match send::send_now(&message, 0) {
                Ok(n) => done(n),
                Err(e) => Response::Refused(e),
            }))
        }
        Ok(n) => done(n),
        Err(e) => Response::Refused(e),
    }
}

/// A socket address of the target's, checked and made the launcher's own: a Unix path becomes
/// `self/fd/N` in the host's `/proc` of the socket the launcher resolved and checked (see the
/// module's comment).
fn address(target: &Target, rules: &Rules, ptr: u64, len: u64) -> Result<Address, Errno> {
    let len = usize::try_from(len).map_err(|_| libc::EINVAL)?;
    if len > MAX_ADDR || ptr == 0 {
        return Err(libc::EINVAL);
    }
    let bytes = target.read(ptr, len)?;
    let family = bytes.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    if family != Some(libc::AF_UNIX as u16) || len <= 2 {
        return Ok(Address::raw(&bytes));
    }
    let path = &bytes[2..];
    if path[0] == 0 {
        return if rules.abstract_ok { Ok(Address::raw(&bytes)) } else { Err(libc::EACCES) };
    }
    let path = path.split(|&b| b == 0).next().unwrap_or(path);
    let socket = target.resolve(path)?;
    if !rules.allows(&target::socket_path(&socket)?) {
        return Err(libc::EACCES);
    }
    Ok(Address::through(socket))
}

fn read_header(target: &Target, ptr: u64) -> Result<libc::msghdr, Errno> {
    let bytes = target.read(ptr, std::mem::size_of::<libc::msghdr>())?;
    // SAFETY: the bytes are one msghdr's; read_unaligned copies them out. Its pointers are the
    // target's and are only ever passed to `Target::read`.
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) })
}

/// The data of a message's iovecs, in one buffer.
fn gather(target: &Target, header: &libc::msghdr) -> Result<Vec<u8>, Errno> {
    let count = size(header.msg_iovlen as u64, MAX_IOV)?;
    let size_of = std::mem::size_of::<libc::iovec>();
    let iovs = target.read(header.msg_iov as u64, count * size_of)?;
    let mut data = Vec::new();
    for chunk in iovs.chunks_exact(size_of) {
        // SAFETY: each chunk is one iovec's bytes; read_unaligned copies it out.
        let iov: libc::iovec = unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast()) };
        let take = iov.iov_len.min(MAX_SEND - data.len());
        data.extend(target.read(iov.iov_base as u64, take)?);
        if data.len() == MAX_SEND {
            break;
        }
    }
    Ok(data)
}

/// A length the target gave, at most `max`.
fn size(len: u64, max: usize) -> Result<usize, Errno> {
    usize::try_from(len).ok().filter(|&n| n <= max).ok_or(libc::EMSGSIZE)
}

/// The target's send flags, without the signal a broken pipe would send to the launcher.
fn flags(raw: u64) -> libc::c_int {
    ((raw & 0xffff_ffff) as u32).cast_signed() | libc::MSG_NOSIGNAL
}

fn result(r: i64) -> Result<Response, Errno> {
    if r < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    Ok(Response::Done(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_allowed_under_the_plans_paths_only() {
        let plan = Plan {
            write: vec!["/work/project".into()],
            allow_unix: vec!["/run/user/1000/agent.sock".into()],
            ..Plan::default()
        };
        let rules = Rules::of(&plan);
        for yes in ["/work/project/s.sock", "/tmp/x.sock", "/run/user/1000/agent.sock"] {
            assert!(rules.allows(Path::new(yes)), "{yes}");
        }
        for no in ["/work/projectx/s.sock", "/run/user/1000/bus", "/var/run/docker.sock"] {
            assert!(!rules.allows(Path::new(no)), "{no}");
        }
        assert!(!rules.abstract_ok, "the host's network: no abstract sockets");
        let fallback = Rules::of(&Plan { fallback: true, ..plan });
        assert!(!fallback.allows(Path::new("/tmp/tmux-0/default")), "the host's /tmp");
    }
}
