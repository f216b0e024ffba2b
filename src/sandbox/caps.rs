//! Every capability dropped before the pane's program runs, so that root inside the sandbox (a
//! user namespace's root, or the host's root where namespaces are made without one) can undo
//! nothing the launcher did: no mount, no `AF_PACKET`, no `chown` of another's file.
//!
//! The bounding set is emptied (a later exec of a setuid or file-capability binary gains nothing
//! beyond it), the ambient set cleared, effective, permitted and inheritable set to zero, and the
//! secure bits `NOROOT` and `NO_SETUID_FIXUP` locked so that uid 0 regains nothing at exec. The
//! result is read back from `/proc/self/status`: a capability left is an error, never a warning.

/// The secure bits: uid 0 gets no capabilities at exec, a uid change touches none, and neither
/// can be unset again.
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// `CAP_SETPCAP`, which changing the bounding set and the secure bits takes.
const CAP_SETPCAP: u32 = 8;

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability of this process for good; see the module's comment. Without
/// `CAP_SETPCAP` (an unprivileged user in the fallback) there is nothing in the bounding set to
/// fear under `no_new_privs`, so only the sets it holds are cleared.
pub(crate) fn drop_all() -> Result<(), String> {
    if has_effective(CAP_SETPCAP) {
        lock_secure_bits()?;
        empty_bounding_set()?;
    }
    // SAFETY: prctl with these arguments only clears this process's ambient set.
    let r = unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    if r != 0 {
        return Err(format!("clearing the ambient capabilities: {}", last_error()));
    }
    set_none()?;
    check_none()
}

fn lock_secure_bits() -> Result<(), String> {
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with these arguments only sets flags on this process.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 {
        return Err(format!("securebits: {}", last_error()));
    }
    Ok(())
}

fn empty_bounding_set() -> Result<(), String> {
    for cap in 0..=last_cap() {
        // SAFETY: prctl with these arguments only removes a capability from this process's set.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) } != 0 {
            return Err(format!(
                "dropping capability {cap} from the bounding set: {}",
                last_error()
            ));
        }
    }
    Ok(())
}

/// The highest capability this kernel knows: the last the bounding set answers for (a system call
/// a look, cheaper than a file of /proc in the pane's new /proc), found by halving: the kernel
/// answers for every capability up to it and none after.
fn last_cap() -> u32 {
    // SAFETY: prctl with these arguments only reads this process's bounding set.
    let known =
        |cap: u32| unsafe { libc::prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap)) } >= 0;
    let (mut low, mut high) = (0u32, 64u32);
    while high - low > 1 {
        let mid = u32::midpoint(low, high);
        if known(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

fn set_none() -> Result<(), String> {
    let mut header = Header { version: CAPABILITY_VERSION_3, pid: 0 };
    let data = [CapData::default(); 2];
    // SAFETY: the header and the two data words are what capset version 3 reads; both outlive
    // the call.
    let r = unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) };
    if r != 0 {
        return Err(format!("capset: {}", last_error()));
    }
    Ok(())
}

/// Reads the sets back: any capability left in the effective, permitted, inheritable or ambient
/// set fails the sandbox.
fn check_none() -> Result<(), String> {
    let sets = get()?;
    let left = |name: &str, low: u32, high: u32| {
        let set = u64::from(high) << 32 | u64::from(low);
        (set != 0).then(|| format!("capabilities left after the drop: {name} {set:016x}"))
    };
    let ambient = (0..=last_cap()).find(|cap| {
        // SAFETY: prctl with these arguments only reads this process's ambient set.
        let set =
            unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_IS_SET, *cap, 0, 0) };
        set != 0
    });
    let found = left("CapEff", sets[0].effective, sets[1].effective)
        .or_else(|| left("CapPrm", sets[0].permitted, sets[1].permitted))
        .or_else(|| left("CapInh", sets[0].inheritable, sets[1].inheritable))
        .or_else(|| ambient.map(|cap| format!("capabilities left after the drop: CapAmb {cap}")));
    found.map_or(Ok(()), Err)
}

/// This process's effective, permitted and inheritable sets (capget, version 3: two words each).
fn get() -> Result<[CapData; 2], String> {
    let mut header = Header { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: the header and the two data words are what capget version 3 reads and writes; both
    // outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", last_error()));
    }
    Ok(data)
}

fn has_effective(cap: u32) -> bool {
    let word = usize::try_from(cap / 32).unwrap_or(0).min(1);
    get().is_ok_and(|sets| sets[word].effective & (1 << (cap % 32)) != 0)
}

/// Whether this process holds `CAP_SYS_ADMIN` (root on the host, where namespaces can be made
/// without a user namespace).
pub(crate) fn has_sys_admin() -> bool {
    has_effective(21)
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capability set of `/proc/PID/status`, e.g. `CapEff:\t000001ffffffffff`.
    fn field(status: &str, name: &str) -> Option<u64> {
        let line = status.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
        u64::from_str_radix(line.trim(), 16).ok()
    }

    #[test]
    fn a_set_is_read_from_the_status_text() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(field(status, "CapEff"), Some(0x1ff_ffff_ffff));
        assert_eq!(field(status, "CapInh"), Some(0));
        assert_eq!(field(status, "CapBnd"), None);
    }

    /// In a child: after the drop nothing is left, not even in the bounding set when the test
    /// runs as root, and uid 0 running `cat` gains nothing back at exec.
    #[test]
    fn after_the_drop_an_exec_as_root_has_no_capability() {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into `fds`.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child makes system calls, execs or exits; it touches no lock of the parent.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above; the strings are NUL-terminated and outlive the exec.
            unsafe {
                libc::dup2(fds[1], 1);
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if drop_all().is_err() {
                    libc::_exit(3);
                }
                let argv = [c"/bin/cat".as_ptr(), c"/proc/self/status".as_ptr(), std::ptr::null()];
                libc::execv(argv[0], argv.as_ptr());
                libc::_exit(4);
            }
        }
        // SAFETY: the parent's copy of the write end is closed so that the read ends.
        unsafe { libc::close(fds[1]) };
        // SAFETY: `fds[0]` is the read end, owned here from now on.
        let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]) };
        let mut status = String::new();
        std::io::Read::read_to_string(&mut out, &mut status).unwrap();
        let mut code = 0;
        // SAFETY: waitpid writes only to `code`.
        unsafe { libc::waitpid(pid, &raw mut code, 0) };
        assert_eq!(libc::WEXITSTATUS(code), 0, "{status}");
        for set in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
            assert_eq!(field(&status, set), Some(0), "{set}: {status}");
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(field(&status, "CapBnd"), Some(0), "{status}");
        }
    }
}
