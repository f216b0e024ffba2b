//! The private `/tmp`, `/var/tmp` and `/dev/shm` of one fugue's sandboxed panes: one directory in
//! fugue's private directory (0700, so no one else reaches it), made with the first sandboxed
//! pane, holding one 1777 directory for each, which every pane's launcher binds in place of the
//! host's. The panes share them as they share the private loopback; fugue removes them when it
//! stops, and the next fugue sweeps those of a fugue that was killed (`tempdir::sweep_stale`).

use crate::error::Result;
use parking_lot::Mutex;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The directory, made if it is not.
pub(crate) fn dir() -> Result<PathBuf> {
    let mut dir = DIR.lock();
    if let Some(dir) = dir.as_ref() {
        return Ok(dir.clone());
    }
    let made = crate::tempdir::sandbox_dir()?;
    for (_, name) in super::mounts::PRIVATE_TMP {
        let sub = made.join(name);
        std::fs::create_dir(&sub)?;
        // Set after the mkdir, which the umask trims.
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o1777))?;
    }
    *dir = Some(made.clone());
    Ok(made)
}

/// Removes the directory (fugue is stopping).
pub(crate) fn remove() {
    if let Some(dir) = DIR.lock().take() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
