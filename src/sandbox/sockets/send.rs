//! What the launcher sends for a pane's `sendmsg` and `sendmmsg` (see `sockets`): each message is sent by the launcher,
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
use std::os::fd::{AsRawFd, OwnedFd};

/// One message as the launcher sends it: everything it points to owned here.
pub(super) struct Message {
    pub(super) socket: OwnedFd,
    pub(super) address: Option<Address>,
    pub(super) data: Vec<u8>,
    pub(super) control: Vec<u8>,
    /// The pane's descriptors that `control` now names by the launcher's numbers.
    pub(super) _passed: Vec<OwnedFd>,
    pub(super) flags: libc::c_int,
}

/// Sends `m` with `extra` flags; the count sent.
pub(super) fn send_now(m: &Message, extra: libc::c_int) -> Result<i64, Errno> {
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
    if n < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    Ok(n as i64)
}

/// Rewrites the `SCM_RIGHTS` messages of `control` to name the launcher's copies of the pane's
/// descriptors, which are returned (kept open until the send). Any other message of the socket
/// level (credentials) is refused: it would be the launcher's.
pub(super) fn take_rights(target: &Target, control: &mut [u8]) -> Result<Vec<OwnedFd>, Errno> {
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

/// Whether a call on `socket` waits (no `O_NONBLOCK`).
pub(super) fn blocking(socket: &OwnedFd) -> bool {
    // SAFETY: F_GETFL takes no pointer.
    let flags = unsafe { libc::fcntl(socket.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_NONBLOCK == 0
}

/// A socket address the launcher passes to the kernel, with the descriptor a path goes through.
pub(super) struct Address {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
    _through: Option<OwnedFd>,
}

impl Address {
    pub(super) fn raw(bytes: &[u8]) -> Address {
        // SAFETY: an all-zero sockaddr_storage is valid.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let n = bytes.len().min(std::mem::size_of::<libc::sockaddr_storage>());
        // SAFETY: `n` bytes fit both the source and the storage.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (&raw mut storage).cast::<u8>(), n)
        };
        Address { storage, len: n as libc::socklen_t, _through: None }
    }

    pub(super) fn through(socket: OwnedFd) -> Address {
        let path = format!("{}/self/fd/{}", super::target::HOST_PROC, socket.as_raw_fd());
        let mut bytes = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        bytes.extend_from_slice(path.as_bytes());
        bytes.push(0);
        Address { _through: Some(socket), ..Address::raw(&bytes) }
    }

    pub(super) fn family(&self) -> u16 {
        self.storage.ss_family
    }

    pub(super) fn as_ptr(&self) -> *const libc::sockaddr {
        (&raw const self.storage).cast()
    }

    pub(super) fn len(&self) -> libc::socklen_t {
        self.len
    }
}
