//! The seccomp filter every sandboxed pane runs under, written by hand in classic BPF: the system
//! calls that could undo the sandbox are refused, whatever the process's capabilities.
//!
//! Refused: the mount API (`mount`, `umount2`, `mount_setattr`, `open_tree`, `move_mount`,
//! `fsopen`, `fsconfig`, `fsmount`, `fspick`, `pivot_root`), `chroot`, new namespaces (`unshare`
//! or `clone` with a `CLONE_NEW*` flag, `setns`; `clone3`, whose flags sit behind a pointer,
//! answers ENOSYS so that libc falls back to `clone`), the keyring (`keyctl`, `add_key`,
//! `request_key`), `bpf`, `io_uring` (which opens sockets and files without the system calls
//! seen here), and system calls of another ABI (x32, i386), whose numbers the filter does not
//! know. Socket families: `AF_PACKET` and `AF_VSOCK` always; with `refuse_inet` (the fallback's
//! network off) everything but `AF_UNIX` and route netlink.
//!
//! With `notify`, `connect`, `sendto` with an address, `sendmsg` and `sendmmsg` are handed to the
//! launcher (a user notification, see `sockets`), which decides where a Unix socket may lead.

use std::os::fd::{FromRawFd, OwnedFd};

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// Offsets in `struct seccomp_data`: the call's number, the ABI, the arguments' words.
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_lo(i: u32) -> u32 {
    16 + 8 * i
}
const fn arg_hi(i: u32) -> u32 {
    20 + 8 * i
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// x32 calls share x86_64's ABI word and set this bit in the number.
const X32_BIT: u32 = 0x4000_0000;

/// `open_tree_attr` (Linux 6.15), the same on every architecture, not yet in libc.
const SYS_OPEN_TREE_ATTR: libc::c_long = 467;

/// Every `CLONE_NEW*` flag, time namespaces included.
const CLONE_NEW_ANY: u32 = 0x0000_0080 | 0x0002_0000 | 0x0200_0000 | 0x7c00_0000;

const SECCOMP_SET_MODE_FILTER: libc::c_ulong = 1;
const FLAG_NEW_LISTENER: libc::c_ulong = 1 << 3;
/// Once the launcher has the notification, only a fatal signal interrupts the call: else a
/// `SIGCHLD` would restart a `connect` the launcher already made.
const FLAG_WAIT_KILLABLE_RECV: libc::c_ulong = 1 << 5;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct Prog {
    len: u16,
    filter: *const Insn,
}

const fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

const fn ret(k: u32) -> Insn {
    insn(RET_K, 0, 0, k)
}

fn errno(e: i32) -> u32 {
    RET_ERRNO | e.unsigned_abs()
}

fn nr(n: libc::c_long) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What the filter refuses beyond what it always does.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Options {
    /// Every socket family but `AF_UNIX` and route netlink refused (the fallback, network off).
    pub(crate) refuse_inet: bool,
    /// Socket connections and addressed sends go to the launcher (see the module's comment).
    pub(crate) notify: bool,
}

/// A block that runs when the call is `n`: the number is loaded again, the body skipped when
/// it is another call. Every path through a body returns.
fn when(n: libc::c_long, body: &[Insn]) -> Vec<Insn> {
    let skip = u8::try_from(body.len()).expect("a block fits a jump");
    let mut out = vec![insn(LD_W_ABS, 0, 0, NR), insn(JEQ_K, 0, skip, nr(n))];
    out.extend_from_slice(body);
    out
}

/// The calls refused outright, and how.
fn refused() -> Vec<(libc::c_long, u32)> {
    let eperm = errno(libc::EPERM);
    let enosys = errno(libc::ENOSYS);
    let mut calls: Vec<(libc::c_long, u32)> = [
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_mount_setattr,
        libc::SYS_open_tree,
        SYS_OPEN_TREE_ATTR,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
    ]
    .iter()
    .map(|&n| (n, eperm))
    .collect();
    for n in [
        libc::SYS_clone3,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        calls.push((n, enosys));
    }
    calls
}

/// `socket(family, type, protocol)`: see the module's comment.
fn socket_rule(options: Options) -> Vec<Insn> {
    let refuse = errno(libc::EACCES);
    let family = |f: i32| f.unsigned_abs();
    let mut body = vec![insn(LD_W_ABS, 0, 0, arg_lo(0))];
    for f in [libc::AF_PACKET, libc::AF_VSOCK] {
        body.extend([insn(JEQ_K, 0, 1, family(f)), ret(refuse)]);
    }
    if options.refuse_inet {
        body.extend([insn(JEQ_K, 0, 1, family(libc::AF_UNIX)), ret(RET_ALLOW)]);
        body.extend([
            insn(JEQ_K, 0, 3, family(libc::AF_NETLINK)),
            insn(LD_W_ABS, 0, 0, arg_lo(2)),
            insn(JEQ_K, 0, 1, family(libc::NETLINK_ROUTE)),
            ret(RET_ALLOW),
        ]);
        body.push(ret(refuse));
    } else {
        body.push(ret(RET_ALLOW));
    }
    when(libc::SYS_socket, &body)
}

/// `unshare(flags)` and `clone(flags, ...)`: refused with any `CLONE_NEW*` flag.
fn namespace_rule(n: libc::c_long) -> Vec<Insn> {
    when(
        n,
        &[
            insn(LD_W_ABS, 0, 0, arg_lo(0)),
            insn(JSET_K, 0, 1, CLONE_NEW_ANY),
            ret(errno(libc::EPERM)),
            ret(RET_ALLOW),
        ],
    )
}

/// The calls that may name a socket's peer go to the launcher; `sendto` only with an address.
fn notify_rules() -> Vec<Insn> {
    let mut out = Vec::new();
    for n in [libc::SYS_connect, libc::SYS_sendmsg, libc::SYS_sendmmsg] {
        out.extend(when(n, &[ret(RET_USER_NOTIF)]));
    }
    out.extend(when(
        libc::SYS_sendto,
        &[
            insn(LD_W_ABS, 0, 0, arg_lo(4)),
            insn(JEQ_K, 0, 2, 0),
            insn(LD_W_ABS, 0, 0, arg_hi(4)),
            insn(JEQ_K, 1, 0, 0),
            ret(RET_USER_NOTIF),
            ret(RET_ALLOW),
        ],
    ));
    out
}

/// The filter: see the module's comment.
fn program(options: Options) -> Vec<Insn> {
    let mut out = vec![
        insn(LD_W_ABS, 0, 0, ARCH),
        insn(JEQ_K, 1, 0, AUDIT_ARCH),
        ret(errno(libc::EPERM)),
        insn(LD_W_ABS, 0, 0, NR),
        insn(JGE_K, 0, 1, X32_BIT),
        ret(errno(libc::EPERM)),
    ];
    for (n, action) in refused() {
        out.extend([insn(JEQ_K, 0, 1, nr(n)), ret(action)]);
    }
    out.extend(namespace_rule(libc::SYS_unshare));
    out.extend(namespace_rule(libc::SYS_clone));
    out.extend(socket_rule(options));
    if options.notify {
        out.extend(notify_rules());
    }
    out.push(ret(RET_ALLOW));
    out
}

/// Installs the filter on this process and everything it starts; `no_new_privs` is set. With
/// `notify`, returns the listener the launcher serves (see `sockets`).
pub(crate) fn install(options: Options) -> Result<Option<OwnedFd>, String> {
    let filter = program(options);
    let prog = Prog { len: u16::try_from(filter.len()).unwrap_or(0), filter: filter.as_ptr() };
    let mut flags = if options.notify { FLAG_NEW_LISTENER | FLAG_WAIT_KILLABLE_RECV } else { 0 };
    loop {
        // SAFETY: `prog` points at `filter`, which outlives the call; the kernel copies it.
        let r = unsafe {
            libc::syscall(libc::SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &raw const prog)
        };
        let e = std::io::Error::last_os_error();
        if r >= 0 {
            // SAFETY: with a listener asked for, the call returned a new descriptor that nothing
            // else owns.
            let fd = options.notify.then(|| unsafe { OwnedFd::from_raw_fd(r as i32) });
            return Ok(fd);
        }
        // Before Linux 5.19 the killable wait is unknown: the filter works without it.
        if e.raw_os_error() == Some(libc::EINVAL) && flags & FLAG_WAIT_KILLABLE_RECV != 0 {
            flags &= !FLAG_WAIT_KILLABLE_RECV;
            continue;
        }
        return Err(format!("seccomp: {e}"));
    }
}

#[cfg(test)]
mod tests;
