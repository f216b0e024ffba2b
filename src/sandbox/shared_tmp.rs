//! The private `/tmp`, `/var/tmp` and `/dev/shm` of one fugue's sandboxed panes: one directory in
//! fugue's private directory (0700, so no one else reaches it), made with the first sandboxed
//! pane, holding one 1777 directory for each, which every pane's launcher binds in place of the
//! host's. The panes of one runtime share them as they share the private loopback; the runtime
//! removes them when it stops, and the next fugue sweeps those of a fugue that was killed
//! (`tempdir::sweep_stale`).

use crate::error::Result;
use parking_lot::Mutex;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// The directory of one runtime's panes, once made.
#[derive(Default)]
pub(crate) struct SharedTmp(Mutex<Option<PathBuf>>);

impl SharedTmp {
    /// The directory, made if it is not.
    pub(crate) fn dir(&self) -> Result<PathBuf> {
        let mut dir = self.0.lock();
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

    /// Removes the directory (the runtime is stopping).
    pub(crate) fn remove(&self) {
        if let Some(dir) = self.0.lock().take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
