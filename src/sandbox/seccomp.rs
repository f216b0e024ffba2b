//! The network's fallback where the kernel allows no user namespaces (so no private network): a
//! seccomp filter, written by hand in classic BPF, that refuses every IPv4 and IPv6 socket, as
//! Codex's sandbox does. Unix sockets keep working. `io_uring`, which can open sockets without
//! the `socket` system call, is refused too, and so are system calls of another ABI (x32, i386),
//! whose numbers the filter does not know.

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets in `struct seccomp_data`: the call's number, the ABI, the first argument's low word.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
/// x32 calls share x86_64's ABI word and set this bit in the number.
const X32_BIT: u32 = 0x4000_0000;

#[repr(C)]
#[derive(Clone, Copy)]
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

fn errno(e: i32) -> u32 {
    RET_ERRNO | e.unsigned_abs()
}

/// The filter: see the module's comment.
fn program() -> Vec<Insn> {
    let nr = |n: libc::c_long| u32::try_from(n).unwrap_or(u32::MAX);
    vec![
        insn(LD_W_ABS, 0, 0, ARCH),
        insn(JEQ_K, 1, 0, AUDIT_ARCH),
        insn(RET_K, 0, 0, errno(libc::EPERM)),
        insn(LD_W_ABS, 0, 0, NR),
        insn(JGE_K, 0, 1, X32_BIT),
        insn(RET_K, 0, 0, errno(libc::EPERM)),
        insn(JEQ_K, 0, 1, nr(libc::SYS_io_uring_setup)),
        insn(RET_K, 0, 0, errno(libc::ENOSYS)),
        insn(JEQ_K, 0, 4, nr(libc::SYS_socket)),
        insn(LD_W_ABS, 0, 0, ARG0),
        insn(JEQ_K, 1, 0, libc::AF_INET.unsigned_abs()),
        insn(JEQ_K, 0, 1, libc::AF_INET6.unsigned_abs()),
        insn(RET_K, 0, 0, errno(libc::EACCES)),
        insn(RET_K, 0, 0, RET_ALLOW),
    ]
}

/// Installs the filter on this process and everything it starts. `no_new_privs` is set.
pub(crate) fn refuse_inet() -> Result<(), String> {
    let filter = program();
    let prog = Prog { len: u16::try_from(filter.len()).unwrap_or(0), filter: filter.as_ptr() };
    // SAFETY: `prog` points at `filter`, which outlives the call; the kernel copies it.
    let r = unsafe {
        libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &raw const prog, 0, 0)
    };
    if r != 0 {
        return Err(format!("seccomp: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let prog = program();
        for (i, insn) in prog.iter().enumerate() {
            if insn.code == JEQ_K || insn.code == JGE_K {
                assert!(i + 1 + usize::from(insn.jt.max(insn.jf)) < prog.len(), "insn {i}");
            }
        }
        assert_eq!(prog.last().map(|i| (i.code, i.k)), Some((RET_K, RET_ALLOW)));
    }

    #[test]
    fn a_child_under_the_filter_gets_no_inet_socket_but_a_unix_one() {
        // SAFETY: the child only makes system calls and exits; it touches no lock of the parent.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above; these calls take no pointers but the filter's.
            unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                let code = match refuse_inet() {
                    Err(_) => 3,
                    Ok(()) => {
                        let inet = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
                        let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                        i32::from(inet >= 0) + 2 * i32::from(unix < 0)
                    }
                };
                libc::_exit(code);
            }
        }
        let mut status = 0;
        // SAFETY: waitpid writes only to `status`.
        unsafe { libc::waitpid(pid, &raw mut status, 0) };
        assert_eq!(libc::WEXITSTATUS(status), 0, "inet refused, unix allowed");
    }
}
