//! The launcher's plan for one pane (see `launch`), in a file of its own so that the lockdown,
//! which reads it, and the launcher, which runs the lockdown, do not import each other.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the launcher does for one pane, passed as JSON on its command line.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub(crate) struct Plan {
    /// Read-only mode: the pane's private temporary directory, made in the empty file system
    /// that hides fugue's own and set as `TMPDIR`.
    pub(crate) tmp: Option<PathBuf>,
    /// The pane's mark, the source name of every file system mounted (see `super::tag`).
    pub(crate) tag: String,
    /// Where writes are allowed (directories or files).
    pub(crate) write: Vec<PathBuf>,
    /// Directories bound read-only.
    pub(crate) git: Vec<PathBuf>,
    /// Directories covered by an empty file system.
    pub(crate) hide: Vec<PathBuf>,
    /// Directories bound back after hiding (the pane's own).
    pub(crate) keep: Vec<PathBuf>,
    /// The pid of the network holder whose namespaces to join; `None` keeps the host network.
    pub(crate) net: Option<u32>,
    /// No user namespaces here: no namespaces, no mounts (see `super::Means::Fallback`).
    #[serde(default)]
    pub(crate) fallback: bool,
    /// Refuse IPv4 and IPv6 sockets with seccomp (the fallback's network off).
    #[serde(default)]
    pub(crate) refuse_inet: bool,
    /// Unix sockets outside the roots a pane may reach all the same (`--allow-unix-socket`).
    #[serde(default)]
    pub(crate) allow_unix: Vec<PathBuf>,
}
