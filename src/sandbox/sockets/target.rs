//! The process a notification is about, seen from the launcher: its memory read, its socket
//! taken (`pidfd_getfd`, the same open socket, not a copy), a path resolved as it sees it.

use crate::sandbox::mounts::{RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, openat2};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The host's `/proc`, where the launcher looks at the pane's processes: its working directory
/// (`tree::run`), since the pane's own `/proc` covers `/proc` in the namespace they share.
pub(super) const HOST_PROC: &str = ".";

/// `pidfd_open`'s flag for a thread's descriptor (Linux 6.9): notifications name threads.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// A failed step answers the target with this errno.
pub(super) type Errno = i32;

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn owned(fd: libc::c_long) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: the call returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

pub(super) struct Target {
    /// The thread that made the call, in the launcher's pid namespace.
    tid: i32,
    pidfd: OwnedFd,
}

impl Target {
    pub(super) fn open(tid: u32) -> Result<Target, Errno> {
        let tid = i32::try_from(tid).map_err(|_| libc::ESRCH)?;
        // SAFETY: pidfd_open takes no pointers.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
        let pidfd = match owned(fd) {
            Ok(fd) => fd,
            // An older kernel: the thread group's descriptor, whose file table is the same.
            Err(libc::EINVAL) => {
                // SAFETY: as above.
                owned(unsafe { libc::syscall(libc::SYS_pidfd_open, tgid(tid)?, 0) })?
            }
            Err(e) => return Err(e),
        };
        Ok(Target { tid, pidfd })
    }

    /// `len` bytes of the target's memory at `addr`.
    pub(super) fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
        let mut buf = vec![0u8; len];
        if len == 0 {
            return Ok(buf);
        }
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: len };
        let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: len };
        // SAFETY: `local` points at `buf`, which is `len` bytes; the remote side is only read.
        let n = unsafe {
            libc::process_vm_readv(self.tid, &raw const local, 1, &raw const remote, 1, 0)
        };
        if usize::try_from(n).ok() != Some(len) {
            return Err(libc::EFAULT);
        }
        Ok(buf)
    }

    /// Writes `bytes` into the target's memory at `addr` (a count it reads back).
    pub(super) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
        let local =
            libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
        let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: bytes.len() };
        // SAFETY: `local` points at `bytes`, which the kernel only reads.
        let n = unsafe {
            libc::process_vm_writev(self.tid, &raw const local, 1, &raw const remote, 1, 0)
        };
        if usize::try_from(n).ok() != Some(bytes.len()) {
            return Err(libc::EFAULT);
        }
        Ok(())
    }

    /// The target's descriptor `fd`: the same open file, shared.
    pub(super) fn fd(&self, fd: u64) -> Result<OwnedFd, Errno> {
        let fd = i32::try_from(fd).map_err(|_| libc::EBADF)?;
        // SAFETY: pidfd_getfd takes no pointers.
        owned(unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.pidfd.as_raw_fd(), fd, 0) })
    }

    /// Opens, with `O_PATH`, what `path` (as the target passed it) leads to as the target sees
    /// it: from its root, relative paths from its working directory, every link followed inside
    /// its root and none through `/proc`'s magic links.
    pub(super) fn resolve(&self, path: &[u8]) -> Result<OwnedFd, Errno> {
        let full = if path.first() == Some(&b'/') {
            PathBuf::from(std::ffi::OsStr::from_bytes(path))
        } else {
            let cwd = std::fs::read_link(format!("{HOST_PROC}/{}/cwd", self.tid))
                .map_err(|_| libc::ENOENT)?;
            cwd.join(std::ffi::OsStr::from_bytes(path))
        };
        let root = open_path(Path::new(&format!("{HOST_PROC}/{}/root", self.tid)))?;
        let c = CString::new(full.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
        let flags = libc::O_PATH | libc::O_CLOEXEC;
        owned(openat2(root.as_raw_fd(), &c, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS))
    }
}

fn open_path(path: &Path) -> Result<OwnedFd, Errno> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `c` is a valid C string; O_PATH opens without reading.
    owned(libc::c_long::from(unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) }))
}

fn tgid(tid: i32) -> Result<i32, Errno> {
    let status =
        std::fs::read_to_string(format!("{HOST_PROC}/{tid}/status")).map_err(|_| libc::ESRCH)?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")?.trim().parse().ok()).ok_or(libc::ESRCH)
}

/// Where an `O_PATH` descriptor leads, as the process it was resolved for sees it (the kernel
/// names a path of another mount namespace from that namespace's root), and whether it is a
/// socket.
pub(super) fn socket_path(fd: &OwnedFd) -> Result<PathBuf, Errno> {
    // SAFETY: an all-zero stat is valid; fstat writes only to it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` outlives the call.
    if unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } != 0 {
        return Err(errno());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(libc::ECONNREFUSED);
    }
    std::fs::read_link(format!("{HOST_PROC}/self/fd/{}", fd.as_raw_fd())).map_err(|_| libc::ENOENT)
}
