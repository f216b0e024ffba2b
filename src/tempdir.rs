//! The private temporary directories of `fugue_run_pipeline` and of live shells, the registry of
//! those in use (`TempDirs`), and the sweep of stale ones.
//!
//! Each directory is named `fugue-pipeline-<pid>-<start>-<uuid>`: the owning fugue's pid and its
//! start time in `/proc/<pid>/stat` (clock ticks since boot), so a later pid that happens to reuse
//! the number cannot pass for the owner. A directory is removed when its call ends and, for the
//! calls still running, when fugue stops (the runtime's `TempDirs`); one left by a fugue that was
//! killed (SIGKILL leaves no chance to clean up) is removed by the next fugue that starts, which
//! sweeps the directories of this user whose owner is gone and leaves every live fugue's alone.
//!
//! A leaf: live shells (below panes), panes, the mux, pipelines and the runtime all use it.

use crate::error::{Error, ErrorKind, Result};
use crate::files::{Existing, private_dir};
use crate::ids::new_id;
use crate::log;
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The name prefixes of the directories of `fugue_run_pipeline` calls, of live shells and of the
/// sandboxed panes' private temporary directories.
const PREFIXES: [&str; 3] = ["fugue-pipeline-", "fugue-shell-", "fugue-sandbox-"];

/// Removes the pipeline directories that fugues of this user left behind when they were killed;
/// called when fugue starts. Returns how many it removed.
pub(crate) fn sweep_stale() -> usize {
    let Ok(base) = base() else { return 0 };
    let Ok(entries) = std::fs::read_dir(&base) else { return 0 };
    let uid = crate::procfs::euid();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(owner) else { continue };
        // Not followed if it is a link: only a real directory of ours is a candidate.
        let ours =
            std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours && !owner.alive() && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        log::info(&format!(
            "removed {removed} pipeline directories left by fugues that were killed"
        ));
    }
    removed
}

/// Who made a directory, as its name says.
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// `None` when the name carries no start time (fugue could not read its own).
    start: Option<u64>,
}

impl Owner {
    fn alive(&self) -> bool {
        match (live_start(self.pid), self.start) {
            (None, _) => false,
            (Some(now), Some(start)) => now == start,
            // Without a start time a live process with that pid may be the owner: keep it.
            (Some(_), None) => true,
        }
    }
}

/// The start time of a live process (not a zombie) in `/proc/PID/stat`, in clock ticks since
/// boot; `None` when there is no such process. With the pid it names a process once and for all.
fn live_start(pid: u32) -> Option<u64> {
    crate::procfs::stat(pid).filter(|s| !s.ended()).map(|s| s.start)
}

/// The owner in a name `fugue-pipeline-<pid>-<start>-<uuid>`; `None` for any other name.
fn owner(name: &str) -> Option<Owner> {
    let rest = PREFIXES.iter().find_map(|prefix| name.strip_prefix(prefix))?;
    let mut parts = rest.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?;
    parts.next()?;
    Some(Owner { pid, start: start.parse().ok() })
}

/// This process's start time, or `unknown`, as it goes into the names.
fn own_start() -> &'static str {
    static START: OnceLock<String> = OnceLock::new();
    START.get_or_init(|| {
        live_start(std::process::id()).map_or_else(|| "unknown".to_string(), |s| s.to_string())
    })
}

/// Where a sandboxed fugue keeps its temporary directories: one private directory that its panes
/// cannot see, rather than the shared temporary directory they can write. Set when fugue starts.
static PRIVATE_BASE: OnceLock<PathBuf> = OnceLock::new();

/// `$TMPDIR/fugue-private-UID`, where a sandboxed fugue keeps its temporary directories; made
/// by `private_base`, or `made` here when `true` (for an unsandboxed fugue's per-call sandbox,
/// which uses it without moving fugue's own directories into it).
pub(crate) fn private_path(made: bool) -> Result<PathBuf> {
    let uid = crate::procfs::euid();
    let dir = temp_base()?.join(format!("fugue-private-{uid}"));
    if made {
        private_dir(&dir, Existing::Keep)?;
        let meta = std::fs::symlink_metadata(&dir)?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "{} is not a private directory of yours; refusing to use it",
                    dir.display()
                ),
            ));
        }
    }
    Ok(dir)
}

/// Makes (0700) and from now on uses `$TMPDIR/fugue-private-UID` for fugue's temporary
/// directories; returns it.
pub(crate) fn private_base() -> Result<PathBuf> {
    let dir = private_path(true)?;
    Ok(PRIVATE_BASE.get_or_init(|| dir).clone())
}

fn base() -> Result<PathBuf> {
    match PRIVATE_BASE.get() {
        Some(dir) => Ok(dir.clone()),
        None => temp_base(),
    }
}

fn temp_base() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    if base.is_relative() {
        return Ok(std::env::current_dir()?.join(base));
    }
    Ok(base)
}

/// A new private directory `fugue-sandbox-…` for the sandboxed panes' temporary directories
/// (`sandbox::shared_tmp`), swept like a pipeline's; its maker removes it.
pub(crate) fn sandbox_dir() -> Result<PathBuf> {
    let name = format!("{}{}-{}-{}", PREFIXES[2], std::process::id(), own_start(), new_id());
    let path = base()?.join(name);
    private_dir(&path, Existing::Refuse)?;
    Ok(path)
}

/// Temporary directories in use, so that fugue can remove them when it stops without waiting for
/// the calls that made them to unwind.
#[derive(Default)]
pub(crate) struct TempDirs {
    live: Mutex<Vec<PathBuf>>,
}

impl TempDirs {
    pub(crate) fn add(&self, path: PathBuf) {
        self.live.lock().push(path);
    }

    /// Removes `path` from the registry (its owner has removed it).
    pub(crate) fn forget(&self, path: &Path) {
        self.live.lock().retain(|p| p != path);
    }

    /// Removes every directory still registered.
    pub(crate) fn remove_all(&self) {
        for path in self.live.lock().drain(..) {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// A directory only the user can enter, removed on drop.
pub(crate) struct PrivateDir {
    pub(crate) path: PathBuf,
    /// Where it is registered, so that fugue removes it if it stops first.
    registry: Arc<TempDirs>,
}

impl PrivateDir {
    pub(crate) fn create(registry: &Arc<TempDirs>) -> Result<PrivateDir> {
        PrivateDir::create_named(registry, PREFIXES[0])
    }

    /// A live shell's directory: named `fugue-shell-…`, swept like a pipeline's.
    pub(crate) fn create_for_shell(registry: &Arc<TempDirs>) -> Result<PrivateDir> {
        PrivateDir::create_named(registry, PREFIXES[1])
    }

    fn create_named(registry: &Arc<TempDirs>, prefix: &str) -> Result<PrivateDir> {
        let name = format!("{prefix}{}-{}-{}", std::process::id(), own_start(), new_id());
        let path = base()?.join(name);
        private_dir(&path, Existing::Refuse)?;
        registry.add(path.clone());
        Ok(PrivateDir { path, registry: registry.clone() })
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> Result<()> {
        let path = self.path.join(name);
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(text.as_bytes())?;
        Ok(())
    }

    /// A FIFO opened for reading and writing: the open does not wait for the shell, reads never
    /// see end of file, and fugue can write its own `q` line to wake its reader.
    pub(crate) fn fifo(&self, name: &str) -> Result<File> {
        let path = self.path.join(name);
        make_fifo(&path)?;
        Ok(std::fs::OpenOptions::new().read(true).write(true).open(&path)?)
    }
}

fn make_fifo(path: &Path) -> Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::internal("the temporary directory's path holds NUL"))?;
    // SAFETY: mkfifo reads the NUL-terminated path, which outlives the call.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::new(ErrorKind::Io, format!("cannot create a FIFO: {e}")));
    }
    Ok(())
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        self.registry.forget(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_who_made_them() {
        assert_eq!(
            owner("fugue-pipeline-12-3456-a-b-c"),
            Some(Owner { pid: 12, start: Some(3456) })
        );
        assert_eq!(owner("fugue-pipeline-12-unknown-a"), Some(Owner { pid: 12, start: None }));
        assert_eq!(owner("fugue-shell-7-1-a"), Some(Owner { pid: 7, start: Some(1) }));
        for other in [
            "fugue-pipeline-x-1-a",
            "fugue-pipeline-12",
            "fugue-test-12-1-a",
            "fugue-pipeline-12-1",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn this_process_owns_its_directories_and_a_reused_pid_does_not() {
        let dir = PrivateDir::create(&Arc::default()).unwrap();
        let name = dir.path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(owner(&name).unwrap().alive(), "{name}");
        let me = std::process::id();
        let start = live_start(me).unwrap();
        assert!(!Owner { pid: me, start: Some(start + 1) }.alive());
        assert!(Owner { pid: me, start: None }.alive());
    }

    #[test]
    fn shutdown_removes_the_directories_still_registered() {
        let dirs = TempDirs::default();
        let kept = std::env::temp_dir().join(format!("fugue-runtime-test-{}", std::process::id()));
        std::fs::create_dir_all(kept.join("inside")).unwrap();
        dirs.add(kept.clone());
        dirs.remove_all();
        assert!(!kept.exists());
        assert!(dirs.live.lock().is_empty());
    }
}
