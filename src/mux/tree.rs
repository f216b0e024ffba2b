//! The registry's data, under its one lock: sessions in creation order, each with its windows,
//! each window with its panes in tiling order; every pane by id; what reservations hold; and the
//! limits. A window's panes share it in tiles (`layout::tile`).

use crate::ids::{PaneId, SessionId, WindowId};
use crate::layout;
use crate::pane::Pane;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A session: its windows, in creation order.
pub(crate) struct Session {
    pub(crate) id: SessionId,
    pub(crate) name: String,
    pub(crate) created_at: SystemTime,
    pub(crate) windows: Vec<Window>,
    pub(super) next_window: u64,
}

/// A window: its size and its panes.
pub(crate) struct Window {
    pub(crate) id: WindowId,
    pub(crate) name: String,
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// The panes in tiling order, including reserved ones still starting (not yet in the
    /// registry's pane index): the tiling counts them, so nobody's tile changes when they arrive.
    pub(crate) panes: Vec<PaneId>,
}

/// How the registry is set up at start-up (from `Config`): its limits, and what each new window and
/// pane gets — the size, the shell, its integration, the scrollback and the quiet period.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    /// Panes alive at once, over all sessions (`FUGUE_MAX_PANES`).
    pub(crate) max_panes: usize,
    /// Sessions alive at once (`FUGUE_MAX_SESSIONS`).
    pub(crate) max_sessions: usize,
    /// Size of a new window (`FUGUE_ROWS`, `FUGUE_COLS`).
    pub(crate) rows: u16,
    pub(crate) cols: u16,
    /// The shell that runs pane commands and interactive panes (`FUGUE_SHELL`).
    pub(crate) shell: String,
    /// Interactive shells get a live shell above them (`FUGUE_SHELL_INTEGRATION`).
    pub(crate) integration: bool,
    /// How many bytes of output each pane keeps (`FUGUE_SCROLLBACK_BYTES`).
    pub(crate) scrollback: usize,
    /// How long a pane's silence makes a wait for the terminal a question
    /// (`FUGUE_INPUT_QUIET_MS`).
    pub(crate) quiet: Duration,
    /// The server's sandbox policy: a pane's unless its call asked for its own.
    pub(crate) sandbox: Arc<crate::sandbox::Policy>,
    /// The last scan of every process's group, shared by the panes' activity looks.
    pub(crate) processes: Arc<crate::pane::seen::ProcessTable>,
    /// What the runtime's sandboxed panes share (its network, templates, private `/tmp`).
    pub(crate) holders: Arc<crate::sandbox::Holders>,
}

impl Setup {
    /// The limits `config` sets, with no sandbox (the runtime sets the server's).
    pub(crate) fn of(config: &crate::config::Config) -> Setup {
        let (max_panes, max_sessions) = (config.max_panes, config.max_sessions);
        let (rows, cols, shell) = (config.rows, config.cols, config.shell.clone());
        let (integration, scrollback) = (config.shell_integration, config.scrollback_bytes);
        let quiet = Duration::from_millis(config.input_quiet_ms as u64);
        let (sandbox, processes, holders) = (Arc::default(), Arc::default(), Arc::default());
        Setup {
            max_panes,
            max_sessions,
            rows,
            cols,
            shell,
            integration,
            scrollback,
            quiet,
            sandbox,
            processes,
            holders,
        }
    }
}

/// The tree and its indexes, behind `Mux`'s lock.
pub(super) struct Inner {
    pub(super) limits: Setup,
    pub(super) sessions: Vec<Session>,
    pub(super) panes: HashMap<PaneId, Arc<Pane>>,
    /// Pane names and slots held by spawns in progress.
    pub(super) reserved_names: HashSet<String>,
    pub(super) reserved_panes: usize,
    pub(super) next_session: u64,
}

impl Inner {
    /// An empty registry held to `limits`.
    pub(super) fn new(limits: Setup) -> Inner {
        Inner {
            limits,
            sessions: Vec::new(),
            panes: HashMap::new(),
            reserved_names: HashSet::new(),
            reserved_panes: 0,
            next_session: 0,
        }
    }

    /// The window whose id is `id`.
    pub(super) fn window(&self, id: &str) -> Option<&Window> {
        self.sessions.iter().flat_map(|s| &s.windows).find(|w| w.id == id)
    }

    /// Sizes every running pane of a window to its tile. An exited pane keeps the size its
    /// program last had, so its final screen reads as the program left it (views cut it to its
    /// tile); it was created at its tile's size, so it fits unless the window shrank since.
    pub(super) fn retile(&self, ids: &[PaneId], rows: u16, cols: u16) {
        for (id, rect) in ids.iter().zip(layout::tile(ids.len(), rows, cols)) {
            if let Some(pane) = self.panes.get(id)
                && pane.size() != (rect.rows, rect.cols)
                && pane.is_running()
            {
                let _ = pane.resize(rect.rows, rect.cols);
            }
        }
    }
}
