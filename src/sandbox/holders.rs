//! What one runtime's sandboxed panes share, made as the first pane needs it and ended with the
//! runtime: the network holder (`net`), the layout templates' holders (`template`), the private
//! `/tmp` (`shared_tmp`), how this kernel gives the sandbox (found once, by a probe) and whether a
//! pane was ever sandboxed. The runtime owns one, the registry hands it to each pane's start in
//! its `PaneSpec`, and a shared server's panes share their runtime's.

use super::net::Holder;
use super::shared_tmp::SharedTmp;
use super::template::Templates;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// How this kernel gives the sandbox, decided once by starting the launcher for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Means {
    /// Mount and network namespaces (in a user namespace, or without one for root where user
    /// namespaces are not allowed) with Landlock, the capability drop and the seccomp filter:
    /// everything `sandbox` promises.
    Namespaces,
    /// No user namespaces allowed and no root: Landlock, `no_new_privs`, the capability drop and
    /// the seccomp filter, which also refuses IPv4 and IPv6 sockets; a private TMPDIR in place of
    /// /tmp; no `.git` protection (so it is refused unless `--writable-git`), no hidden
    /// directories, no pid namespace.
    Fallback,
}

/// One runtime's share of the sandbox (see the module's comment).
#[derive(Default)]
pub(crate) struct Holders {
    pub(super) net: Holder,
    pub(super) templates: Templates,
    pub(super) shared_tmp: SharedTmp,
    /// The kernel probe's answer (see `sandbox::means`).
    pub(super) means: OnceLock<std::result::Result<Means, String>>,
    /// Whether a pane was ever sandboxed here (a call's sandbox, on a server without one).
    sandboxed: AtomicBool,
}

impl Holders {
    /// Notes that a pane is sandboxed here.
    pub(super) fn sandboxing(&self) {
        self.sandboxed.store(true, Ordering::Relaxed);
    }

    /// Whether a pane was ever sandboxed here.
    pub(super) fn sandboxed(&self) -> bool {
        self.sandboxed.load(Ordering::Relaxed)
    }

    /// Ends the holders and removes the private `/tmp` (the runtime is stopping, its panes gone):
    /// the templates first, which joined the network holder's namespaces and bound the `/tmp`.
    pub(crate) fn stop(&self) {
        self.templates.stop();
        self.net.stop();
        self.shared_tmp.remove();
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Child processes and locks say nothing worth a debug print; `mux::Setup` prints.
impl std::fmt::Debug for Holders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holders").field("sandboxed", &self.sandboxed()).finish_non_exhaustive()
    }
}
