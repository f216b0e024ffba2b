//! What the control socket shows of the registry: the tree, and one window as a person sees it.
//!
//! A `Target` names the window to show; parts left out mean "the newest", so an attach without
//! arguments follows the agent to each window it opens. The registry lock is held only to collect
//! the window's panes and their rects (from `layout::tile`); the grids are read after it is
//! released. A `fingerprint` sums up everything a view shows — the list of windows, the panes, how
//! far each pane's output has come and whether it has exited — so a watcher can tell, without
//! drawing anything, whether a view it sent is out of date.

use crate::layout::{self, Rect};
use crate::mux::{Mux, ORCHESTRATION_SESSION, Session};
use crate::pane::Pane;
use crate::pane::exit::{SignalField, write_exit};
use serde_json::{Value, json};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Which window to show: a session and a window, each by id or name; `None` means the newest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) session: Option<String>,
    pub(crate) window: Option<String>,
}

/// One window in the list of all windows.
#[derive(Hash)]
struct WindowRef {
    session_id: String,
    session: String,
    window_id: String,
    window: String,
    rows: u16,
    cols: u16,
    panes: usize,
}

/// The target window and its panes, collected under the registry lock.
struct Layout {
    windows: Vec<WindowRef>,
    /// Index in `windows` of the window shown.
    current: Option<usize>,
    /// The target no longer exists; `current` is the newest window instead.
    missing: bool,
    panes: Vec<(Arc<Pane>, Rect)>,
}

/// Every session with its windows and panes, as `fugue_list_sessions` gives them.
pub(crate) fn tree(mux: &Mux) -> Value {
    let sessions = mux.with_sessions(|sessions, pane| {
        sessions.iter().map(|s| crate::pane::tools::session_json(s, pane)).collect::<Vec<_>>()
    });
    json!({ "sessions": sessions })
}

/// The view of the target window, each pane's rows cut to fit a terminal body of `view` (rows,
/// cols), and the fingerprint of what it shows.
pub(crate) fn window(mux: &Mux, target: &Target, view: (u16, u16)) -> (Value, u64) {
    let layout = collect(mux, target);
    // Taken before the grids are read: a change in between makes the watcher send one more
    // `changed`, never one fewer.
    let print = fingerprint_of(&layout);
    let windows: Vec<Value> = layout
        .windows
        .iter()
        .map(|w| {
            json!({"session_id": w.session_id, "session": w.session, "window_id": w.window_id,
                   "window": w.window, "rows": w.rows, "cols": w.cols, "panes": w.panes})
        })
        .collect();
    let panes: Vec<Value> =
        layout.panes.iter().map(|(pane, rect)| pane_view(pane, *rect, view)).collect();
    let value = json!({
        "windows": windows,
        "current": layout.current,
        "missing": layout.missing,
        "view": {"rows": view.0, "cols": view.1},
        "panes": panes,
    });
    (value, print)
}

/// The fingerprint of the target's view, as `window` computes it.
pub(crate) fn fingerprint(mux: &Mux, target: &Target) -> u64 {
    fingerprint_of(&collect(mux, target))
}

/// The ids of the panes the target's view shows.
pub(crate) fn pane_ids(mux: &Mux, target: &Target) -> Vec<(String, Arc<Pane>)> {
    collect(mux, target).panes.into_iter().map(|(p, _)| (p.id.clone(), p)).collect()
}

fn collect(mux: &Mux, target: &Target) -> Layout {
    mux.with_sessions(|sessions, lookup| {
        let (place, missing) = resolve(sessions, target);
        let mut windows = Vec::new();
        let mut current = None;
        let mut panes = Vec::new();
        for (s, session) in sessions.iter().enumerate() {
            for (w, window) in session.windows.iter().enumerate() {
                if place == Some((s, w)) {
                    current = Some(windows.len());
                    let rects = layout::tile(window.panes.len(), window.rows, window.cols);
                    panes = window
                        .panes
                        .iter()
                        .zip(rects)
                        .filter_map(|(id, rect)| Some((lookup(id)?, rect)))
                        .collect();
                }
                windows.push(WindowRef {
                    session_id: session.id.clone(),
                    session: session.name.clone(),
                    window_id: window.id.clone(),
                    window: window.name.clone(),
                    rows: window.rows,
                    cols: window.cols,
                    panes: window.panes.len(),
                });
            }
        }
        Layout { windows, current, missing, panes }
    })
}

/// The (session, window) indexes the target names, and whether it named something gone.
fn resolve(sessions: &[Session], target: &Target) -> (Option<(usize, usize)>, bool) {
    let Some(key) = &target.session else { return (newest(sessions), false) };
    let by_id = sessions.iter().position(|s| s.id == *key);
    let Some(s) = by_id.or_else(|| sessions.iter().position(|s| s.name == *key)) else {
        return (newest(sessions), true);
    };
    let windows = &sessions[s].windows;
    match &target.window {
        // A session that has no window yet is shown empty until one comes.
        None => (windows.len().checked_sub(1).map(|w| (s, w)), false),
        Some(key) => {
            let by_id = windows.iter().position(|w| w.id == *key);
            match by_id.or_else(|| windows.iter().position(|w| w.name == *key)) {
                Some(w) => (Some((s, w)), false),
                None => (newest(sessions), true),
            }
        }
    }
}

/// The newest window of the newest session; the hidden orchestration session only when nothing
/// else has a window.
fn newest(sessions: &[Session]) -> Option<(usize, usize)> {
    let with_windows = |s: &&Session| !s.windows.is_empty();
    let pick = |s: &Session| s.windows.len() - 1;
    let visible = sessions
        .iter()
        .enumerate()
        .rev()
        .find(|(_, s)| s.name != ORCHESTRATION_SESSION && with_windows(s));
    let any = || sessions.iter().enumerate().rev().find(|(_, s)| with_windows(s));
    visible.or_else(any).map(|(i, s)| (i, pick(s)))
}

fn fingerprint_of(layout: &Layout) -> u64 {
    let mut hasher = DefaultHasher::new();
    layout.windows.hash(&mut hasher);
    (layout.current, layout.missing).hash(&mut hasher);
    for (pane, rect) in &layout.panes {
        pane.id.hash(&mut hasher);
        (rect.row, rect.col, rect.rows, rect.cols).hash(&mut hasher);
        pane.size().hash(&mut hasher);
        let (end, exit, closed) = pane.output().with(|s| (s.ring.end(), s.exit, s.closed));
        (end, exit.map(|e| (e.code, e.signal)), closed).hash(&mut hasher);
    }
    hasher.finish()
}

/// One pane of the view: what it is, where it goes, and its rows cut to the part of its rect that
/// lies inside the terminal body.
fn pane_view(pane: &Pane, rect: Rect, view: (u16, u16)) -> Value {
    let rows = rect.rows.min(view.0.saturating_sub(rect.row));
    let cols = rect.cols.min(view.1.saturating_sub(rect.col));
    let styled = pane.output().styled(rows, cols);
    let exit = pane.output().exit();
    let (row, col) = styled.cursor;
    let visible = !styled.hide_cursor && exit.is_none() && row < rows && col < cols;
    let mut value = json!({
        "id": pane.id,
        "name": pane.name,
        "command": pane.command,
        "status": if exit.is_some() { "exited" } else { "running" },
        "rect": {"row": rect.row, "col": rect.col, "rows": rect.rows, "cols": rect.cols},
        "cursor": {"row": row, "col": col, "visible": visible},
        "application_cursor": styled.application_cursor,
        "lines": if rows == 0 || cols == 0 { Vec::new() } else { styled.rows },
    });
    write_exit(&mut value, exit, SignalField::Always);
    crate::shell::status::add_live(&mut value, pane);
    value
}
