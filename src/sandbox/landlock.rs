//! Landlock, through its three system calls: which version the kernel has, and a ruleset that
//! leaves reads alone and allows writes only beneath the paths given.
//!
//! Only write-like rights are "handled", so everything not handled — reading, listing, executing —
//! stays allowed everywhere. A rule on a directory covers everything beneath it; a rule cannot take
//! a right away from a subdirectory, which is why `.git` is kept read-only by a read-only bind
//! mount (see `launch`) rather than here. From ABI 6 the domain is also scoped: no signal to a
//! process outside it (fugue), no connection to an abstract Unix socket made outside it.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const WRITE_FILE: u64 = 1 << 1;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
/// ABI 2: linking or renaming a file into another directory.
const REFER: u64 = 1 << 13;
/// ABI 3: truncating a file.
const TRUNCATE: u64 = 1 << 14;

/// ABI 6 scopes.
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// The oldest ABI fugue uses: 2, so that a link or rename cannot carry a file out of a root.
pub(crate) const MIN_ABI: i64 = 2;

/// The test hook that makes fugue behave as on a kernel without Landlock (see the README).
pub(crate) const PRETEND_ABSENT: &str = "FUGUE_SANDBOX_TEST_NO_LANDLOCK";

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The kernel's Landlock ABI version; 0 when Landlock is absent or disabled.
pub(crate) fn abi() -> i64 {
    if std::env::var_os(PRETEND_ABSENT).is_some_and(|v| !v.is_empty()) {
        return 0;
    }
    // SAFETY: with a null attribute and the VERSION flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    v.max(0)
}

/// The write rights a kernel of ABI `abi` knows.
fn write_rights(abi: i64) -> u64 {
    let mut rights = WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM;
    if abi >= 2 {
        rights |= REFER;
    }
    if abi >= 3 {
        rights |= TRUNCATE;
    }
    rights
}

/// Rights that make sense on a file rather than a directory (a device, the terminal).
fn file_rights(abi: i64) -> u64 {
    write_rights(abi) & (WRITE_FILE | TRUNCATE)
}

/// Confines this process and everything it starts: writes only beneath `writable` (directories
/// or files; missing ones are skipped), signals and abstract sockets only within the domain.
/// The caller has set `no_new_privs`.
pub(crate) fn restrict(abi: i64, writable: &[&Path]) -> Result<(), String> {
    if abi < MIN_ABI {
        return Err(if abi == 0 {
            "the kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock)".into()
        } else {
            format!("the kernel's Landlock is ABI {abi}; fugue needs ABI {MIN_ABI} (Linux 5.19)")
        });
    }
    let handled = write_rights(abi);
    let attr = RulesetAttr {
        handled_access_fs: handled,
        handled_access_net: 0,
        scoped: if abi >= 6 { SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL } else { 0 },
    };
    // An older kernel refuses an attribute larger than it knows unless the rest is zero; the
    // scope field is zero below ABI 6, so the full size is always accepted.
    // SAFETY: `attr` is a valid ruleset_attr for the size given; the call only reads it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(format!("landlock_create_ruleset: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the call returned a new descriptor that nothing else owns.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    for path in writable {
        add_rule(&ruleset, path, handled, file_rights(abi))?;
    }
    // SAFETY: the descriptor is a Landlock ruleset; the call takes no pointers.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if r != 0 {
        return Err(format!("landlock_restrict_self: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Allows writes beneath `path`: every handled right on a directory, the file rights on a file.
fn add_rule(
    ruleset: &OwnedFd,
    path: &Path,
    dir_rights: u64,
    file_rights: u64,
) -> Result<(), String> {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return Ok(()) };
    // SAFETY: `c` is a valid C string; O_PATH opens without reading anything.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        // A path that is not there has nothing to allow.
        return Ok(());
    }
    // SAFETY: open returned a new descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let rule = PathBeneathAttr {
        allowed_access: if is_dir { dir_rights } else { file_rights },
        parent_fd: fd.as_raw_fd(),
    };
    // SAFETY: `rule` is a valid path_beneath_attr and outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &raw const rule,
            0u32,
        )
    };
    if r != 0 {
        return Err(format!(
            "landlock_add_rule {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_grow_with_the_abi() {
        assert_eq!(write_rights(1) & REFER, 0);
        assert_ne!(write_rights(2) & REFER, 0);
        assert_ne!(write_rights(3) & TRUNCATE, 0);
        assert_eq!(file_rights(3), WRITE_FILE | TRUNCATE);
    }

    #[test]
    fn an_old_or_absent_landlock_is_named() {
        assert!(restrict(0, &[]).unwrap_err().contains("no Landlock"));
        assert!(restrict(1, &[]).unwrap_err().contains("ABI 1"));
    }
}
