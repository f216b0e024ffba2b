//! What fugue's own files on disk share: private 0700 directories, exclusive file locks and the
//! error that names the path an I/O call failed on.
//!
//! The control directory, shared servers' files, agent-pipeline state and the temporary
//! directories of pipelines and live shells all hold what only their user may read, and a shared
//! server's start and an agent pipeline's driver are both guarded by a lock the kernel releases
//! when its holder dies however it dies. One home each, so a fix to either (a mode, `EINTR`) is
//! made once. A leaf: it knows only the error type.

use crate::error::{Error, ErrorKind, Result};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// An I/O failure on `path`, as an error that names the path.
pub(crate) fn io_error(path: &Path, e: &std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))
}

/// What `private_dir` does with a directory that is already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Existing {
    /// It is an error: the caller wants a fresh directory that no one could have prepared.
    Refuse,
    /// It is kept as it is; the caller checks it (and refuses what is not private) itself.
    Keep,
    /// It is kept and made 0700, and missing parents are created (0700 too): for state that
    /// fugue owns outright, where repairing a loose mode is right.
    Repair,
}

/// Creates `dir` with mode 0700, so no one else can even list it; what happens when it exists
/// already is the caller's choice (`Existing`). Without `Repair` its parent must exist.
pub(crate) fn private_dir(dir: &Path, existing: Existing) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700).recursive(existing == Existing::Repair);
    match builder.create(dir) {
        Ok(()) if existing == Existing::Repair => {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io_error(dir, &e))
        }
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && existing == Existing::Keep => {
            Ok(())
        }
        Err(e) => Err(io_error(dir, &e)),
    }
}

/// An exclusive `flock` on a file (created 0600 if needed), released on drop or when the process
/// ends, however it ends.
#[derive(Debug)]
pub(crate) struct FileLock {
    /// The locked file, open for reading and writing: a shared server keeps its pid in it.
    pub(crate) file: File,
}

impl FileLock {
    fn open(path: &Path) -> Result<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| io_error(path, &e))
    }

    /// Blocks until the lock is ours.
    pub(crate) fn take(path: &Path) -> Result<FileLock> {
        let file = FileLock::open(path)?;
        loop {
            // SAFETY: flock on a descriptor we own; it touches no memory.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(FileLock { file });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(io_error(path, &e));
            }
        }
    }

    /// The lock if it is free now; `None` if someone holds it.
    pub(crate) fn try_take(path: &Path) -> Result<Option<FileLock>> {
        let file = FileLock::open(path)?;
        // SAFETY: flock on a descriptor we own; it touches no memory.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(FileLock { file }));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) { Ok(None) } else { Err(io_error(path, &e)) }
    }

    /// The lock once its holder lets go, or `None` at the deadline. Only used to wait out a server
    /// that is ending (it holds the lock until its last pane is gone), which flock cannot do with
    /// a timeout; the pause between tries is short and the wait rare.
    pub(crate) fn take_within(path: &Path, within: Duration) -> Result<Option<FileLock>> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(lock) = FileLock::try_take(path)? {
                return Ok(Some(lock));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::path::PathBuf;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fugue-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn a_private_dir_keeps_refuses_or_repairs_what_is_there() {
        let dir = temp("dir");
        private_dir(&dir, Existing::Refuse).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert!(private_dir(&dir, Existing::Refuse).is_err());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir, Existing::Keep).unwrap();
        assert_eq!(mode(&dir), 0o755, "kept as it was, for the caller to check");
        private_dir(&dir, Existing::Repair).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let deep = dir.join("a/b");
        assert!(private_dir(&deep, Existing::Keep).is_err(), "no parents without Repair");
        private_dir(&deep, Existing::Repair).unwrap();
        assert_eq!(mode(&dir.join("a")), 0o700);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lock_is_held_until_dropped() {
        let dir = temp("lock");
        private_dir(&dir, Existing::Refuse).unwrap();
        let path = dir.join("x.lock");
        let held = FileLock::take(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        // flock locks belong to the open file description, so a second open in this process
        // contends like another process would.
        assert!(FileLock::try_take(&path).unwrap().is_none());
        assert!(FileLock::take_within(&path, Duration::from_millis(50)).unwrap().is_none());
        drop(held);
        // Within a moment, not at once: a child another test forks holds a copy of the
        // descriptor (and so the lock) until it execs.
        assert!(FileLock::take_within(&path, Duration::from_secs(5)).unwrap().is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
