//! The launcher's own `sendmsg` and `sendmmsg` for a pane: each message is sent by the launcher,
//! on its copy of the pane's socket, with the data, the address and the descriptors it read once.
//!
//! Letting a call through as it was (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`) when it named no address
//! was not safe: the kernel then reads the message header and the descriptor number again, so a
//! second thread of the pane that wrote an address into the header (or put a datagram socket at
//! that number) in between sent datagrams to any Unix socket it could name, outside included
//! (hundreds in a few seconds). Descriptors passed with `SCM_RIGHTS` are the pane's, taken with
//! `pidfd_getfd` (the same open files); credentials (`SCM_CREDENTIALS`) would be the launcher's,
//! and are refused.

use super::target::{Errno, Target};
use super::{Answer, Rules, address, blocking, flags, gather, read_header, result, size};
use std::os::fd::{AsRawFd, OwnedFd};

/// One message as the launcher sends it: everything it points to owned here.
struct Message {
    socket: OwnedFd,
    address: Option<super::Address>,
    data: Vec<u8>,
    control: Vec<u8>,
    /// The pane's descriptors that `control` now names by the launcher's numbers.
    _passed: Vec<OwnedFd>,
    flags: libc::c_int,
}

/// `sendmsg(fd, msg, flags)`.
pub(super) fn sendmsg(target: &Target, rules: &Rules, args: [u64; 6]) -> Result<Answer, Errno> {
    let header = read_header(target, args[1])?;
    let message = message(target, rules, target.fd(args[0])?, &header, flags(args[2]))?;
    Ok(send(message, Answer::Done))
}

/// `sendmmsg(fd, msgs, n, flags)`: the first message only (a short count, which callers take
/// as they take a short write), its length written back where the pane reads it.
pub(super) fn sendmmsg(target: Target, rules: &Rules, args: [u64; 6]) -> Result<Answer, Errno> {
    if args[2] == 0 {
        return Ok(Answer::Done(0));
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
            Ok(()) => Answer::Done(1),
            Err(e) => Answer::Refused(e),
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
    let passed = take_rights(target, &mut control)?;
    Ok(Message { socket, address, data, control, _passed: passed, flags })
}

/// Sends `message` now when it need not wait, else in a thread of its own (as a blocking
/// connect is made): the launcher answers the pane's other calls meanwhile. `done` makes the
/// answer of the count sent.
fn send(message: Message, done: impl FnOnce(i64) -> Answer + Send + 'static) -> Answer {
    let waits = blocking(&message.socket) && message.flags & libc::MSG_DONTWAIT == 0;
    match send_now(&message, if waits { libc::MSG_DONTWAIT } else { 0 }) {
        Err(libc::EAGAIN) if waits => {
            Answer::Later(Box::new(move || match send_now(&message, 0) {
                Ok(n) => done(n),
                Err(e) => Answer::Refused(e),
            }))
        }
        Ok(n) => done(n),
        Err(e) => Answer::Refused(e),
    }
}

fn send_now(m: &Message, extra: libc::c_int) -> Result<i64, Errno> {
    let mut iov =
        libc::iovec { iov_base: m.data.as_ptr() as *mut libc::c_void, iov_len: m.data.len() };
    // SAFETY: an all-zero msghdr is valid; every pointer set below outlives the sendmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(addr) = &m.address {
        msg.msg_name = addr.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = addr.len();
    }
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !m.control.is_empty() {
        msg.msg_control = m.control.as_ptr() as *mut libc::c_void;
        msg.msg_controllen = m.control.len();
    }
    // SAFETY: `msg` and what it points to are valid for the call; the kernel only reads them.
    let n = unsafe { libc::sendmsg(m.socket.as_raw_fd(), &raw const msg, m.flags | extra) };
    match result(n as i64)? {
        Answer::Done(n) => Ok(n),
        _ => Err(libc::EIO),
    }
}

/// Rewrites the `SCM_RIGHTS` messages of `control` to name the launcher's copies of the pane's
/// descriptors, which are returned (kept open until the send). Any other message of the socket
/// level (credentials) is refused: it would be the launcher's.
fn take_rights(target: &Target, control: &mut [u8]) -> Result<Vec<OwnedFd>, Errno> {
    let header = std::mem::size_of::<libc::cmsghdr>();
    let (mut at, mut taken) = (0, Vec::new());
    while at + header <= control.len() {
        // SAFETY: `header` bytes from `at` are inside `control`; read_unaligned copies them out.
        let cmsg: libc::cmsghdr =
            unsafe { std::ptr::read_unaligned(control[at..].as_ptr().cast()) };
        let end = at
            .checked_add(cmsg.cmsg_len)
            .filter(|&e| cmsg.cmsg_len >= header && e <= control.len());
        let end = end.ok_or(libc::EINVAL)?;
        if cmsg.cmsg_level == libc::SOL_SOCKET {
            if cmsg.cmsg_type != libc::SCM_RIGHTS {
                return Err(libc::EPERM);
            }
            for fd in control[at + header..end].chunks_exact_mut(4) {
                let theirs = i32::from_ne_bytes([fd[0], fd[1], fd[2], fd[3]]);
                let mine = target.fd(u64::from(theirs.cast_unsigned()))?;
                fd.copy_from_slice(&mine.as_raw_fd().to_ne_bytes());
                taken.push(mine);
            }
        }
        at += cmsg.cmsg_len.next_multiple_of(std::mem::size_of::<usize>());
    }
    Ok(taken)
}
