//! The launcher's plan for one pane: what `fugue __sandbox-exec` is told to do, as JSON on its
//! command line (built by `super::plan`, carried out by `launch`, `mounts`, `tree`, `lockdown`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the launcher does for one pane, passed as JSON on its command line.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub(crate) struct Plan {
    /// Read-only mode: the pane's private temporary directory, an empty file system of its own,
    /// set as `TMPDIR`.
    pub(crate) tmp: Option<PathBuf>,
    /// The pane's name in the file systems it mounts.
    pub(crate) tag: String,
    /// Where writes are allowed (directories or files).
    pub(crate) write: Vec<PathBuf>,
    /// The writable roots, bound back read-write on the read-only tree.
    #[serde(default)]
    pub(crate) rw: Vec<PathBuf>,
    /// Directories the pane sees though it may not write them, bound back read-only where a
    /// private or covered directory would hide them (a read-only pane's roots).
    #[serde(default)]
    pub(crate) ro: Vec<PathBuf>,
    /// `.git` directories and files, bound read-only.
    pub(crate) git: Vec<PathBuf>,
    /// Directories covered by an empty file system.
    pub(crate) hide: Vec<PathBuf>,
    /// Directories bound back after hiding (the pane's own).
    pub(crate) keep: Vec<PathBuf>,
    /// The directory of this fugue's private `/tmp`, `/var/tmp` and `/dev/shm`, shared by its
    /// sandboxed panes (see `mounts::PRIVATE_TMP`).
    #[serde(default)]
    pub(crate) shared_tmp: Option<PathBuf>,
    /// Unix sockets under `/run` passed on purpose (bound back over its cover).
    #[serde(default)]
    pub(crate) allow_unix: Vec<PathBuf>,
    /// The pid of the network holder whose namespaces to join; `None` keeps the host network.
    pub(crate) net: Option<u32>,
    /// No user namespaces here: no namespaces, no mounts (see `super::Means::Fallback`).
    #[serde(default)]
    pub(crate) fallback: bool,
    /// Refuse IPv4 and IPv6 sockets with seccomp (the fallback's network off).
    #[serde(default)]
    pub(crate) refuse_inet: bool,
    /// The layout template to copy instead of laying the pane out in full (see `template`).
    #[serde(default)]
    pub(crate) template: Option<Template>,
}

/// A layout holder: its pid, the inode of the mount namespace it holds, which the launcher
/// checks before it enters one by that pid, and its teardown socket.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Template {
    pub(crate) pid: u32,
    pub(crate) mnt: u64,
    /// The number, in the holder, of the socket a launcher sends its namespace on as it ends
    /// (`teardown`).
    pub(crate) drop: i32,
}
