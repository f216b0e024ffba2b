//! Reservations: a pane's slot, held from `reserve` until `start`, that counts against the limits,
//! holds the pane's name and takes its place in its window, so the pane spawns outside the
//! registry lock at the size of its final tile; dropped without being started, it gives all of
//! that back.

use super::names::{name_taken, session_not_found, window_index, window_not_found};
use super::tree::Inner;
use crate::error::{Error, ErrorKind, Result};
use crate::layout;
use crate::pane::{Above, PaneSpec};
use crate::watch::Watch;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;

/// What stands a live shell above an interactive pane: given by whoever made the registry (the
/// runtime, which knows the shells), so that the registry places panes without choosing a shell.
pub(crate) trait StandsAbove: Send + Sync {
    /// Prepares what stands above the pane `spec` is about to start, adding the program's
    /// arguments and variables to the spec; nothing when its program is no shell fugue knows.
    fn stand_above(&self, spec: &mut PaneSpec) -> Result<()>;
}

/// Stands nothing above a pane: a registry of plain terminals (unit tests).
#[cfg(test)]
pub(crate) struct NoShell;

#[cfg(test)]
impl StandsAbove for NoShell {
    fn stand_above(&self, _: &mut PaneSpec) -> Result<()> {
        Ok(())
    }
}

/// What a new pane runs, where, and under what name.
#[derive(Clone)]
pub(crate) struct PaneArgs {
    pub(crate) name: Option<String>,
    pub(crate) command: Option<String>,
    /// The caller's choice made absolute against its own directory (`tool::Ctx::dir`): a pane
    /// always says where it starts, so a shared server never falls back to its own `/`.
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    /// An interactive shell gets fugue's shell integration (on unless `integration: false`).
    pub(crate) integration: bool,
    /// The call's own whole sandbox policy, stricter than the server's (`None`: the server's).
    pub(crate) sandbox: Option<Arc<crate::sandbox::Policy>>,
    /// In a sandbox, the only writable roots, in place of the server's (an agent stage's
    /// worktree).
    pub(crate) roots: Option<Vec<PathBuf>>,
}

impl PaneArgs {
    /// An interactive shell in `cwd`, with the integration.
    pub(crate) fn shell(cwd: PathBuf) -> PaneArgs {
        PaneArgs {
            name: None,
            command: None,
            cwd,
            env: Vec::new(),
            integration: true,
            sandbox: None,
            roots: None,
        }
    }
}

/// Where a new pane goes.
pub(crate) enum Place<'a> {
    /// A window of its own, made for it.
    NewWindow { session: &'a str, name: Option<String> },
    /// An existing window, beside the panes already there.
    Window { session: &'a str, window: &'a str },
}

/// A pane's slot, held in the registry from `reserve` until `start`: it counts against the limits,
/// holds its name and its tile, and knows its size. Dropped without being started, it gives all
/// of that back.
pub(crate) struct Reserved<'m> {
    inner: &'m Mutex<Inner>,
    changes: &'m Watch,
    /// `None` once started.
    pub(super) slot: Option<Slot>,
}

/// What a reservation holds: the pane's spec, sized to its tile, and whether its window is its own.
pub(super) struct Slot {
    pub(super) spec: PaneSpec,
    /// The window was made for this pane, so it goes if the pane cannot start.
    pub(super) own_window: bool,
    /// An interactive shell gets a live shell above it (see `StandsAbove`).
    pub(super) integration: bool,
    /// What stands above the pane, made beforehand (see `Reserved::with_above`).
    pub(super) above: Option<Arc<dyn Above>>,
}

impl<'m> Reserved<'m> {
    /// Holds `slot` in the registry `inner`, whose watchers hear of it on `changes` if it is given
    /// back.
    pub(super) fn new(inner: &'m Mutex<Inner>, changes: &'m Watch, slot: Slot) -> Reserved<'m> {
        Reserved { inner, changes, slot: Some(slot) }
    }

    /// Sets what the pane's `command` shows in place of the command it runs.
    pub(crate) fn show_as(&mut self, shown: String) {
        if let Some(slot) = &mut self.slot {
            slot.spec.shown = Some(shown);
        }
    }

    /// Gives the pane a live shell made beforehand, for a command that ends by starting an
    /// interactive shell with it (a kept pipeline pane's shell, which replaces the steps' one).
    pub(crate) fn with_above(&mut self, above: Arc<dyn Above>) {
        if let Some(slot) = &mut self.slot {
            slot.above = Some(above);
        }
    }
}

impl Reserved<'_> {
    /// Keeps the pane's own private directory `dir` reachable from inside its sandbox.
    pub(crate) fn keep(&mut self, dir: PathBuf) {
        if let Some(slot) = &mut self.slot {
            slot.spec.keep.push(dir);
        }
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let spec = &slot.spec;
            let name = spec.name.as_ref();
            self.inner.lock().release(&spec.id, &spec.window_id, name, slot.own_window);
            self.changes.notify();
        }
    }
}

impl Inner {
    /// Checks limits and names, creates the window if asked, and holds a slot for the pane at the
    /// end of its window. The size is set by `size` once every slot of a batch is taken.
    pub(super) fn reserve(&mut self, place: &Place<'_>, args: &PaneArgs) -> Result<Slot> {
        if self.panes.len() + self.reserved_panes >= self.limits.max_panes {
            return Err(Error::new(
                ErrorKind::LimitReached,
                format!(
                    "fugue already has {} panes (FUGUE_MAX_PANES); close some with fugue_close_pane",
                    self.panes.len() + self.reserved_panes
                ),
            ));
        }
        if let Some(name) = &args.name {
            super::names::check_name("pane", name)?;
        }
        if let Some(name) = &args.name
            && (self.panes.contains_key(name.as_str())
                || self.panes.values().any(|p| p.name.as_ref() == Some(name))
                || self.reserved_names.contains(name))
        {
            return Err(name_taken("pane", name));
        }
        let (s, w) = match place {
            Place::NewWindow { session, name } => self.new_window(session, name.clone())?,
            Place::Window { session, window } => {
                let s = self.session_index(session).ok_or_else(|| session_not_found(session))?;
                let w = window_index(&self.sessions[s], window)
                    .ok_or_else(|| window_not_found(window))?;
                (s, w)
            }
        };
        let id = self.new_pane_id();
        let session = &mut self.sessions[s];
        let window = &mut session.windows[w];
        window.panes.push(id.clone());
        let spec = PaneSpec {
            id,
            session_id: session.id.clone(),
            window_id: window.id.clone(),
            name: args.name.clone(),
            command: args.command.clone(),
            shown: None,
            program: self.limits.shell.clone(),
            args: args.command.iter().flat_map(|c| ["-c".to_string(), c.clone()]).collect(),
            cwd: args.cwd.clone(),
            env: args.env.clone(),
            rows: window.rows,
            cols: window.cols,
            scrollback: self.limits.scrollback,
            quiet: self.limits.quiet,
            above: None,
            sandbox: args.sandbox.clone().unwrap_or_else(|| self.limits.sandbox.clone()),
            processes: self.limits.processes.clone(),
            holders: self.limits.holders.clone(),
            roots: args.roots.clone(),
            keep: Vec::new(),
        };
        self.reserved_panes += 1;
        if let Some(name) = &args.name {
            self.reserved_names.insert(name.clone());
        }
        let own_window = matches!(place, Place::NewWindow { .. });
        let integration = args.integration && self.limits.integration;
        Ok(Slot { spec, own_window, integration, above: None })
    }

    /// Sets a reserved pane's size to its tile in its window as the window is now.
    pub(super) fn size(&self, spec: &mut PaneSpec) {
        let Some(window) = self.window(&spec.window_id) else { return };
        let rects = layout::tile(window.panes.len(), window.rows, window.cols);
        if let Some(at) = window.panes.iter().position(|id| *id == spec.id) {
            spec.rows = rects[at].rows;
            spec.cols = rects[at].cols;
        }
    }

    /// Ends a reservation's hold on the limits and the pane's name.
    pub(super) fn unreserve(&mut self, name: Option<&String>) {
        self.reserved_panes -= 1;
        if let Some(name) = name {
            self.reserved_names.remove(name);
        }
    }

    /// Gives up the slot of a pane that did not start; a window made for it goes too.
    pub(super) fn release(
        &mut self,
        id: &str,
        window_id: &str,
        name: Option<&String>,
        own_window: bool,
    ) {
        self.unreserve(name);
        let mut retile = None;
        for session in &mut self.sessions {
            if let Some(window) = session.windows.iter_mut().find(|w| w.id == window_id) {
                window.panes.retain(|pane| pane != id);
                retile = Some((window.panes.clone(), window.rows, window.cols));
                if own_window && window.panes.is_empty() {
                    session.windows.retain(|w| w.id != window_id);
                }
            }
        }
        if let Some((ids, rows, cols)) = retile {
            self.retile(&ids, rows, cols);
        }
    }
}
