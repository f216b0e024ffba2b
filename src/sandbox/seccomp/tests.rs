//! The filter tried in forked children: what it refuses is refused with the error it says, and
//! what a pane needs (a fork, a Unix socket, `unshare` of no namespace) still works.

use super::*;

/// Runs `check` in a child under the filter of `options`; returns its exit code (0: all held,
/// 99: the filter could not be installed).
fn in_child(options: Options, check: fn() -> i32) -> i32 {
    // SAFETY: the child only makes system calls and exits; it touches no lock of the parent.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            let code = match install(options) {
                Err(_) => 99,
                Ok(_) => check(),
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waitpid writes only to `status`.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    libc::WEXITSTATUS(status)
}

/// The errno of a call that failed, 0 when it worked.
fn err_of(r: libc::c_long) -> i32 {
    if r >= 0 { 0 } else { std::io::Error::last_os_error().raw_os_error().unwrap_or(-1) }
}

fn socket(family: i32, protocol: i32) -> i32 {
    // SAFETY: socket takes no pointers; a descriptor made here dies with the child.
    err_of(libc::c_long::from(unsafe { libc::socket(family, libc::SOCK_DGRAM, protocol) }))
}

#[test]
fn every_jump_lands_inside_the_program() {
    for options in [Options::default(), Options { refuse_inet: true, notify: true }] {
        let prog = program(options);
        for (i, insn) in prog.iter().enumerate() {
            if [JEQ_K, JGE_K, JSET_K].contains(&insn.code) {
                assert!(i + 1 + usize::from(insn.jt.max(insn.jf)) < prog.len(), "insn {i}");
            }
        }
        assert_eq!(prog.last(), Some(&ret(RET_ALLOW)));
    }
}

#[test]
fn the_fallback_gets_unix_and_route_netlink_sockets_only() {
    let code = in_child(Options { refuse_inet: true, notify: false }, || {
        let refused = [
            socket(libc::AF_INET, 0),
            socket(libc::AF_INET6, 0),
            socket(libc::AF_PACKET, 0),
            socket(libc::AF_VSOCK, 0),
            socket(libc::AF_NETLINK, libc::NETLINK_AUDIT),
        ];
        let allowed = [socket(libc::AF_UNIX, 0), socket(libc::AF_NETLINK, libc::NETLINK_ROUTE)];
        let ok = refused.iter().all(|&e| e == libc::EACCES) && allowed.iter().all(|&e| e == 0);
        i32::from(!ok)
    });
    assert_eq!(code, 0, "inet, packet, vsock and audit refused; unix and route allowed");
}

#[test]
fn with_namespaces_inet_stays_but_packet_and_vsock_go() {
    let code = in_child(Options::default(), || {
        let ok = socket(libc::AF_INET, 0) == 0
            && socket(libc::AF_PACKET, 0) == libc::EACCES
            && socket(libc::AF_VSOCK, 0) == libc::EACCES;
        i32::from(!ok)
    });
    assert_eq!(code, 0);
}

/// Each call that could undo the sandbox, made with arguments that would work for root without
/// the filter, fails with the filter's error; a plain fork and `unshare(CLONE_FILES)` still work.
#[test]
fn the_mount_api_namespaces_and_the_keyring_are_refused() {
    let code = in_child(Options::default(), || {
        // SAFETY: every call gets valid C strings or null pointers; none writes to memory. Each
        // errno is read right after its call.
        let tries = unsafe {
            [
                (err_of(libc::syscall(libc::SYS_unshare, libc::CLONE_NEWNS)), libc::EPERM),
                (err_of(libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER)), libc::EPERM),
                (
                    err_of(libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c"/".as_ptr(), 1u32)),
                    libc::EPERM,
                ),
                (
                    err_of(libc::syscall(
                        libc::SYS_mount_setattr,
                        libc::AT_FDCWD,
                        c"/".as_ptr(),
                        0u32,
                        std::ptr::null::<u8>(),
                        0usize,
                    )),
                    libc::EPERM,
                ),
                (err_of(libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), 0u32)), libc::EPERM),
                (err_of(libc::syscall(libc::SYS_chroot, c"/".as_ptr())), libc::EPERM),
                (err_of(libc::syscall(libc::SYS_setns, 0, 0)), libc::EPERM),
                (err_of(libc::syscall(libc::SYS_keyctl, 0, -3, 0)), libc::EPERM),
                (
                    err_of(libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 0usize)),
                    libc::ENOSYS,
                ),
                (
                    err_of(libc::syscall(libc::SYS_io_uring_setup, 1u32, std::ptr::null::<u8>())),
                    libc::ENOSYS,
                ),
            ]
        };
        if tries.iter().any(|&(got, want)| got != want) {
            return 1;
        }
        // SAFETY: unshare of the descriptor table and fork take no pointers.
        let (files, pid) = unsafe { (libc::unshare(libc::CLONE_FILES), libc::fork()) };
        if pid == 0 {
            // SAFETY: the grandchild only exits.
            unsafe { libc::_exit(0) };
        }
        i32::from(files != 0 || pid < 0) * 2
    });
    assert_eq!(code, 0, "1: a call got past the filter; 2: fork or unshare(CLONE_FILES) broke");
}
