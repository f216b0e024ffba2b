//! The private directory that holds the control sockets, one per running `fugue serve`.
//!
//! The directory is `$XDG_RUNTIME_DIR/fugue/`, or `/tmp/fugue-UID/` without a runtime directory.
//! Whoever can connect to a socket can read every pane and, with `--input`, type into it, so the
//! directory must be a real directory (not a symlink), owned by us and closed to everyone else
//! (0700); anything else is refused rather than repaired. Sockets are named `PID.sock`: a name is
//! enough to tell a live server from one that died without cleaning up.

use crate::error::{Error, ErrorKind, Result};
use crate::files::{Existing, io_error, private_dir};
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where the sockets live; nothing is created or checked.
pub(crate) fn path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir.join("fugue"),
        _ => PathBuf::from(format!("/tmp/fugue-{}", crate::procfs::euid())),
    }
}

/// The directory, created 0700 if it is missing, and checked to be ours and private.
pub(crate) fn create() -> Result<PathBuf> {
    let dir = path();
    private_dir(&dir, Existing::Keep)?;
    check(&dir, crate::procfs::euid())?;
    Ok(dir)
}

/// The directory if it exists and is safe; for the commands that look for servers.
pub(crate) fn existing() -> Result<PathBuf> {
    let dir = path();
    match fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::new(
            ErrorKind::InvalidState,
            format!("no fugue server is running (there is no {})", dir.display()),
        )),
        _ => check(&dir, crate::procfs::euid()).map(|()| dir),
    }
}

/// Refuses a directory that is a symlink, not a directory, not owned by `uid`, or open to others.
pub(crate) fn check(dir: &Path, uid: u32) -> Result<()> {
    let meta = fs::symlink_metadata(dir).map_err(|e| io_error(dir, &e))?;
    let unsafe_dir = |why: String| {
        Error::new(ErrorKind::InvalidState, format!("{} {why}; refusing to use it", dir.display()))
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_dir("is a symbolic link".into()));
    }
    if !meta.is_dir() {
        return Err(unsafe_dir("is not a directory".into()));
    }
    if meta.uid() != uid {
        return Err(unsafe_dir(format!("is owned by uid {}, not by you (uid {uid})", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "has mode {:o}; it must be 700 (chmod 700 {})",
            meta.mode() & 0o777,
            dir.display()
        )));
    }
    Ok(())
}

/// The socket of the server with this pid.
pub(crate) fn socket(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// The sockets in the directory as (pid, path), lowest pid first, whether or not they are live.
pub(crate) fn sockets(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(u32, PathBuf)> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid = entry.file_name().to_str()?.strip_suffix(".sock")?.parse::<u32>().ok()?;
            entry.file_type().ok()?.is_socket().then(|| (pid, entry.path()))
        })
        .collect();
    crate::sort::sort(&mut found);
    found
}

/// Removes the sockets of servers that died without removing their own (killed with SIGKILL, say).
pub(crate) fn remove_stale(dir: &Path) {
    for (pid, path) in sockets(dir) {
        if pid != std::process::id() && !crate::procfs::alive(pid) {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fugue-dir-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_private_directory_of_ours_passes() {
        let dir = scratch("ok");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        check(&dir, crate::procfs::euid()).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_foreign_and_linked_directories_are_refused() {
        let dir = scratch("bad");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let open = check(&dir, crate::procfs::euid()).unwrap_err().to_string();
        assert!(open.contains("has mode 755"), "{open}");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        let foreign = check(&dir, crate::procfs::euid() + 1).unwrap_err().to_string();
        assert!(foreign.contains("is owned by uid"), "{foreign}");
        let link = dir.with_extension("link");
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let linked = check(&link, crate::procfs::euid()).unwrap_err().to_string();
        assert!(linked.contains("symbolic link"), "{linked}");
        let file = dir.join("file");
        fs::write(&file, "").unwrap();
        assert!(
            check(&file, crate::procfs::euid())
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
        fs::remove_file(&link).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_pid_sockets_are_listed_and_dead_ones_are_removed() {
        let dir = scratch("stale");
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            child.wait().unwrap();
            child.id()
        };
        let live = std::process::id();
        for pid in [dead, live] {
            drop(std::os::unix::net::UnixListener::bind(socket(&dir, pid)).unwrap());
        }
        fs::write(dir.join("7.sock"), "").unwrap(); // not a socket
        fs::write(dir.join("notes"), "").unwrap();
        let mut pids: Vec<u32> = sockets(&dir).into_iter().map(|(pid, _)| pid).collect();
        pids.sort();
        let mut want = vec![dead, live];
        want.sort();
        assert_eq!(pids, want);
        remove_stale(&dir);
        let left: Vec<u32> = sockets(&dir).into_iter().map(|(pid, _)| pid).collect();
        assert_eq!(left, vec![live]);
        assert!(dir.join("7.sock").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
