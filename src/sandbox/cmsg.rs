//! One `recvmsg` with room for a control message, the way the launcher receives the filter's
//! listener number with its sender's credentials (`lockdown`) and a layout holder receives a
//! launcher's namespace and pidfd (`teardown`).

use std::os::fd::RawFd;

/// Room for one control message: a `ucred`, or two descriptors.
const SPACE: usize = 32;

/// What one `recvmsg` brought besides its data: the control message's type and payload.
pub(super) struct ControlMessage {
    pub(super) kind: libc::c_int,
    pub(super) payload: Vec<u8>,
}

/// Receives into `data` (with `flags`, again after a signal); the bytes read and the first control
/// message, or `None` on an error or when none came.
pub(super) fn recv(
    fd: RawFd,
    data: &mut [u8],
    flags: libc::c_int,
) -> Option<(usize, ControlMessage)> {
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: data.len() };
    let mut control = [0u64; SPACE / 8];
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the recvmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = SPACE;
    let n = loop {
        // SAFETY: as above; the kernel writes only into the buffers `msg` names.
        let n = unsafe { libc::recvmsg(fd, &raw mut msg, flags) };
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break usize::try_from(n).ok()?;
        }
    };
    // SAFETY: the kernel filled the control buffer; the macros read inside it.
    let control = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        if cmsg.is_null() {
            return None;
        }
        let len = (*cmsg).cmsg_len.saturating_sub(libc::CMSG_LEN(0) as usize).min(SPACE);
        let payload = std::slice::from_raw_parts(libc::CMSG_DATA(cmsg), len).to_vec();
        ControlMessage { kind: (*cmsg).cmsg_type, payload }
    };
    Some((n, control))
}
