//! A pane's mount namespace torn down by its layout holder, after the pane has ended, so that the
//! pane's end does not wait for it.
//!
//! The last process to leave a mount namespace unmounts its every mount and waits for an RCU grace
//! period before it may go on: in a pane's launcher, whose end is the pane's end in fugue's eyes,
//! that wait came between the program's end and fugue's answer. So the launcher, as it ends,
//! sends its namespace (and a pidfd of itself) to the holder of the template it copied
//! (`hand_over`), and the holder keeps the namespace until the launcher has ended, then lets it
//! go (`serve`). If the hand-over fails, the launcher ends as before, tearing down itself.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;

/// Room for the control message of two descriptors.
const CMSG_SPACE: usize = 32;

/// The holder's side: a socket pair whose sending end launchers take (by its number, with
/// `pidfd_getfd`), and a thread that holds what arrives until its sender has ended. Returns the
/// sending end's number.
pub(crate) fn serve() -> Result<RawFd, String> {
    let (receiving, sending) = UnixDatagram::pair().map_err(|e| format!("socketpair: {e}"))?;
    let number = sending.as_raw_fd();
    let thread = crate::threads::spawn(
        "teardown",
        None,
        Box::new(move || {
            let _open = sending;
            hold(&receiving);
        }),
    );
    thread.map_err(|e| format!("cannot start a thread: {e}"))?;
    Ok(number)
}

/// Receives (namespace, pidfd) pairs and drops each pair once its pidfd says the sender ended.
fn hold(receiving: &UnixDatagram) {
    let mut held: Vec<[OwnedFd; 2]> = Vec::new();
    loop {
        let mut fds =
            vec![libc::pollfd { fd: receiving.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        fds.extend(held.iter().map(|[_, pidfd]| libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        let n = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
        // SAFETY: poll writes only to `fds`, which outlives the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), n, -1) } < 0 {
            continue;
        }
        let ended: Vec<bool> = fds[1..].iter().map(|p| p.revents != 0).collect();
        let mut ended = ended.into_iter();
        held.retain(|_| !ended.next().unwrap_or(false));
        if fds[0].revents != 0
            && let Some(pair) = receive(receiving)
        {
            held.push(pair);
        }
    }
}

/// One message's two descriptors; `None` for anything else (what came is closed).
fn receive(receiving: &UnixDatagram) -> Option<[OwnedFd; 2]> {
    let flags = libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT;
    let (_, control) = super::cmsg::recv(receiving.as_raw_fd(), &mut [0u8; 1], flags)?;
    if control.kind != libc::SCM_RIGHTS {
        return None;
    }
    let numbers = control.payload.chunks_exact(4).filter_map(|b| b.try_into().ok());
    // SAFETY: each descriptor the kernel passed is new and ours.
    let fds: Vec<OwnedFd> =
        numbers.map(|b| unsafe { OwnedFd::from_raw_fd(RawFd::from_ne_bytes(b)) }).collect();
    <[OwnedFd; 2]>::try_from(fds).ok()
}

/// The launcher's side, as it ends: sends its mount namespace and a pidfd of itself to the holder
/// `holder` (a pidfd) on its socket numbered `sending`. `false` if it could not.
pub(crate) fn hand_over(holder: &OwnedFd, sending: RawFd) -> bool {
    // SAFETY: pidfd_getfd takes no pointers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, holder.as_raw_fd(), sending, 0) };
    let Ok(fd) = RawFd::try_from(fd) else { return false };
    if fd < 0 {
        return false;
    }
    // SAFETY: pidfd_getfd returned a new descriptor that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: the path is a valid C string; open returns a new descriptor or -1.
    let ns = unsafe { libc::open(c"/proc/self/ns/mnt".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: getpid has no preconditions; pidfd_open takes no pointers.
    let me = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    let me = RawFd::try_from(me).unwrap_or(-1);
    let sent = ns >= 0 && me >= 0 && send(&socket, [ns, me]);
    // SAFETY: closing this process's own copies; the holder has its own.
    unsafe {
        libc::close(ns);
        libc::close(me);
    }
    sent
}

fn send(socket: &OwnedFd, fds: [RawFd; 2]) -> bool {
    let byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_ptr().cast_mut().cast(), iov_len: 1 };
    let mut control = [0u64; CMSG_SPACE / 8];
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the sendmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE and CMSG_LEN only compute sizes.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(8) } as usize;
    // SAFETY: the control buffer holds one header and two descriptors (`CMSG_SPACE(8)`).
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(8) as usize;
        libc::CMSG_DATA(cmsg).cast::<[RawFd; 2]>().write_unaligned(fds);
    }
    // SAFETY: `msg` and everything it points to outlive the call.
    unsafe { libc::sendmsg(socket.as_raw_fd(), &raw const msg, libc::MSG_NOSIGNAL) == 1 }
}
