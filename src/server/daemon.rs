//! `fugue __server NAME`: how a front's child becomes a detached shared server.
//!
//! The front runs this with its stdout on a pipe and waits for the first process, which forks and
//! exits at once. The child calls `setsid` and forks again, so the server leads no session and can
//! never gain a controlling terminal; it moves to `/`, closes every inherited descriptor, puts
//! stdin and stdout on /dev/null and stderr on its log file. All of this happens before any thread
//! exists. It then takes the pid lock, binds the socket and starts (`host`); the pipe (the "ready
//! pipe") gets one line — `ok`, or what went wrong — which the front reads.

use super::{FileLock, Paths, host};
use crate::error::{Error, ErrorKind, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long a new server waits for an ending one of the same name to let go of the pid lock.
const PID_LOCK_PATIENCE: Duration = Duration::from_secs(20);
/// The log is cut back to nothing when it grows past this.
pub(crate) const LOG_CAP: u64 = 1 << 20;

/// The shared server `name`, under the sandbox `policy` its front asked for; its log where
/// `state_dir` (the setting read at start) says.
pub(crate) fn main(
    name: &str,
    policy: Arc<crate::sandbox::Policy>,
    state_dir: Option<&std::path::Path>,
) -> ExitCode {
    let log = super::log_path(state_dir, name);
    let (paths, log) = match Paths::new(name).and_then(|p| Ok((log?, p))) {
        Ok((log, paths)) => (paths, log),
        Err(e) => {
            println!("error: {e}"); // stdout-ok: the ready pipe of the front that started us
            return ExitCode::FAILURE;
        }
    };
    let ready = match detach(&log) {
        Ok(ready) => ready,
        Err(e) => {
            println!("error: cannot detach: {e}"); // stdout-ok: the front's ready pipe
            return ExitCode::FAILURE;
        }
    };
    let mut ready = File::from(ready);
    crate::log::cap(LOG_CAP);
    crate::log::warn(&format!("server {name:?} starting, pid {}", std::process::id()));
    match bind(&paths) {
        Ok((pid_lock, listener)) => host::run(paths, listener, (pid_lock, policy), ready),
        Err(e) => {
            crate::log::error(&e.to_string());
            let _ = writeln!(ready, "error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Takes the pid lock (waiting out a server of this name that is ending), then binds a socket
/// that only we can use. Holding the lock, any socket file left is a dead server's.
fn bind(paths: &Paths) -> Result<(FileLock, UnixListener)> {
    let lock = FileLock::take_within(&paths.pid, PID_LOCK_PATIENCE)?.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidState,
            format!("another server named {:?} holds {}", paths.name, paths.pid.display()),
        )
    })?;
    let _ = std::fs::remove_file(&paths.sock);
    let listener = UnixListener::bind(&paths.sock).map_err(|e| super::io_error(&paths.sock, &e))?;
    std::fs::set_permissions(&paths.sock, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| super::io_error(&paths.sock, &e))?;
    lock.file.set_len(0).map_err(|e| super::io_error(&paths.pid, &e))?;
    (&lock.file)
        .write_all(format!("{}\n", std::process::id()).as_bytes())
        .map_err(|e| super::io_error(&paths.pid, &e))?;
    Ok((lock, listener))
}

/// Forks twice with a `setsid` between, returning (in the grandchild only) the ready pipe. The
/// parents leave with `_exit`, running nothing of ours.
fn detach(log: &std::path::Path) -> std::io::Result<OwnedFd> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(log)?;
    if log.metadata()?.len() > LOG_CAP {
        log.set_len(0)?;
    }
    let null = OpenOptions::new().read(true).write(true).open("/dev/null")?;
    // SAFETY: F_DUPFD_CLOEXEC duplicates our stdout (the ready pipe) to a new descriptor >= 3.
    let ready = check(unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) })?;
    // SAFETY: `ready` is a fresh descriptor that nothing else owns.
    let ready = unsafe { OwnedFd::from_raw_fd(ready) };
    fork_and_leave()?;
    // SAFETY: setsid takes no pointers; the child of a fork is never a group leader.
    check(unsafe { libc::setsid() })?;
    fork_and_leave()?;
    // SAFETY: chdir with a NUL-terminated literal; umask only sets the mask.
    unsafe {
        check(libc::chdir(c"/".as_ptr()))?;
        libc::umask(0o077);
    }
    for (from, to) in [(null.as_raw_fd(), 0), (null.as_raw_fd(), 1), (log.as_raw_fd(), 2)] {
        // SAFETY: dup2 onto the standard descriptors, from descriptors we hold open.
        check(unsafe { libc::dup2(from, to) })?;
    }
    close_inherited(&[ready.as_raw_fd(), null.as_raw_fd(), log.as_raw_fd()]);
    Ok(ready)
}

/// Forks; the parent exits at once and the child returns.
fn fork_and_leave() -> std::io::Result<()> {
    // SAFETY: no other thread exists yet (this runs first thing in `__server`), so the child
    // inherits a consistent process; the parent leaves through `_exit`.
    match check(unsafe { libc::fork() })? {
        0 => Ok(()),
        // SAFETY: _exit ends the parent at once, running no destructor or atexit handler of
        // ours, so nothing is flushed or freed twice.
        _ => unsafe { libc::_exit(0) },
    }
}

/// Closes every descriptor above stderr but `keep`: a front's pipes and sockets must not live on
/// in the server (a client waiting for EOF on them would wait forever).
fn close_inherited(keep: &[i32]) {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return };
    let fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2 && !keep.contains(fd))
        .collect();
    for fd in fds {
        // SAFETY: closing descriptors nobody in this fresh process owns a Rust handle to (the
        // directory listing's own descriptor is already closed, and closing it twice is harmless).
        unsafe { libc::close(fd) };
    }
}

fn check(r: libc::c_int) -> std::io::Result<libc::c_int> {
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r) }
}
